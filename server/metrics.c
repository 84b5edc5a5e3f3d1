/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Counters kept with relaxed atomics (a request adds to a few of them), read by one writer
 * thread that renders the Prometheus text exposition format into a file every interval. A file
 * rather than an HTTP endpoint: rfsd then opens no second port to secure, and sites already
 * scrape files with node_exporter's textfile collector. docs/operations.md lists the series. */
#include "metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "proto/proto.h"
#include "server.h"

#define OPS 64
/* Latency bucket bounds in seconds (Prometheus "le"), the last +Inf. */
static const double bounds[] = {1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10};
#define NB (sizeof bounds / sizeof bounds[0])

static _Atomic uint64_t requests[OPS], errors[OPS];
static _Atomic uint64_t bytes_in, bytes_out, accepted, lat_count, lat_sum_ns;
static _Atomic uint64_t lat_bucket[NB + 1];

static pthread_t writer;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static int running, stopping, interval;
static char *out_path;
static rfsd_server *server;
static int64_t started_ns;

void rfsd_metrics_request(uint16_t op, int rc, uint64_t in, uint64_t out, int64_t ns)
{
    unsigned i = op < OPS ? op : OPS - 1;
    atomic_fetch_add_explicit(&requests[i], 1, memory_order_relaxed);
    if (rc)
        atomic_fetch_add_explicit(&errors[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&bytes_in, in, memory_order_relaxed);
    atomic_fetch_add_explicit(&bytes_out, out, memory_order_relaxed);
    double s = (double)(ns > 0 ? ns : 0) / 1e9;
    size_t b = 0;
    while (b < NB && s > bounds[b])
        b++;
    atomic_fetch_add_explicit(&lat_bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&lat_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&lat_sum_ns, (uint64_t)(ns > 0 ? ns : 0), memory_order_relaxed);
}

void rfsd_metrics_connection(void)
{
    atomic_fetch_add_explicit(&accepted, 1, memory_order_relaxed);
}

static uint64_t get(_Atomic uint64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

static void render(FILE *f)
{
    fprintf(f, "# HELP rfsd_requests_total Requests executed, by operation.\n"
               "# TYPE rfsd_requests_total counter\n");
    for (unsigned op = 0; op < OPS; op++)
        if (get(&requests[op]))
            fprintf(f, "rfsd_requests_total{op=\"%s\"} %llu\n", rfs_op_name((uint16_t)op),
                    (unsigned long long)get(&requests[op]));
    fprintf(f, "# HELP rfsd_request_errors_total Requests answered with an error, by operation.\n"
               "# TYPE rfsd_request_errors_total counter\n");
    for (unsigned op = 0; op < OPS; op++)
        if (get(&errors[op]))
            fprintf(f, "rfsd_request_errors_total{op=\"%s\"} %llu\n", rfs_op_name((uint16_t)op),
                    (unsigned long long)get(&errors[op]));
    fprintf(f,
            "# HELP rfsd_received_bytes_total Payload bytes of requests (data written).\n"
            "# TYPE rfsd_received_bytes_total counter\n"
            "rfsd_received_bytes_total %llu\n"
            "# HELP rfsd_sent_bytes_total Payload bytes of replies (data read).\n"
            "# TYPE rfsd_sent_bytes_total counter\n"
            "rfsd_sent_bytes_total %llu\n",
            (unsigned long long)get(&bytes_in), (unsigned long long)get(&bytes_out));
    unsigned nconns = 0;
    pthread_mutex_lock(&server->mu);
    nconns = server->nconns;
    pthread_mutex_unlock(&server->mu);
    fprintf(f,
            "# HELP rfsd_connections Client connections open now.\n"
            "# TYPE rfsd_connections gauge\n"
            "rfsd_connections %u\n"
            "# HELP rfsd_connections_accepted_total Client connections accepted.\n"
            "# TYPE rfsd_connections_accepted_total counter\n"
            "rfsd_connections_accepted_total %llu\n",
            nconns, (unsigned long long)get(&accepted));
    fprintf(f, "# HELP rfsd_request_duration_seconds Time executing a request (after queueing).\n"
               "# TYPE rfsd_request_duration_seconds histogram\n");
    uint64_t cum = 0;
    for (size_t b = 0; b <= NB; b++) {
        cum += get(&lat_bucket[b]);
        if (b < NB)
            fprintf(f, "rfsd_request_duration_seconds_bucket{le=\"%g\"} %llu\n", bounds[b],
                    (unsigned long long)cum);
        else
            fprintf(f, "rfsd_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
                    (unsigned long long)cum);
    }
    fprintf(f,
            "rfsd_request_duration_seconds_sum %.9f\n"
            "rfsd_request_duration_seconds_count %llu\n"
            "# HELP rfsd_uptime_seconds Seconds since rfsd started serving.\n"
            "# TYPE rfsd_uptime_seconds gauge\n"
            "rfsd_uptime_seconds %.3f\n",
            (double)get(&lat_sum_ns) / 1e9, (unsigned long long)get(&lat_count),
            (double)(rfs_now_ns() - started_ns) / 1e9);
}

/* Temporary file beside the target, then rename: a scraper never reads half a file. */
static void write_file(void)
{
    size_t n = strlen(out_path) + 16;
    char *tmp = malloc(n);
    if (!tmp)
        return;
    snprintf(tmp, n, "%s.tmp", out_path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        RFS_LOGW("metrics: cannot write %s: %s", tmp, strerror(errno));
        free(tmp);
        return;
    }
    render(f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, out_path) != 0) {
        RFS_LOGW("metrics: cannot write %s: %s", out_path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
}

static void *writer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!stopping) {
        pthread_mutex_unlock(&mu);
        write_file();
        pthread_mutex_lock(&mu);
        struct timespec ts = rfs_deadline_ms(interval);
        while (!stopping && pthread_cond_timedwait(&cv, &mu, &ts) == 0)
            ;
    }
    pthread_mutex_unlock(&mu);
    write_file(); /* the final counts */
    return NULL;
}

int rfsd_metrics_start(rfsd_server *srv, const char *path, int interval_ms)
{
    started_ns = rfs_now_ns();
    if (!path)
        return 0;
    server = srv;
    interval = interval_ms;
    if (!(out_path = strdup(path)))
        return -1;
    rfs_cond_init_monotonic(&cv);
    if (pthread_create(&writer, NULL, writer_main, NULL) != 0) {
        free(out_path);
        out_path = NULL;
        return -1;
    }
    running = 1;
    return 0;
}

void rfsd_metrics_stop(void)
{
    if (!running)
        return;
    pthread_mutex_lock(&mu);
    stopping = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(writer, NULL);
    running = 0;
    free(out_path);
    out_path = NULL;
}
