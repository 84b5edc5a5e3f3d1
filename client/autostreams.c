/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs_streams=auto: how many connections a file's large transfers use.
 *
 * One TCP connection cannot carry more than its window per round trip, and a host's default
 * socket buffer maxima (4 MiB on many) cap that window below a long fat pipe's bandwidth-delay
 * product; loss-based congestion control also recovers slowly on such a path. A second
 * connection then adds about what the first one carries (semplar sec. 7.2). On a short path
 * one connection fills the link and more only cost server resources.
 *
 * So: at open, a file whose first connection has a round-trip time under a threshold keeps
 * one stream. Otherwise it opens up to `cap` connections (side by side, pooled) and lets its
 * large transfers decide how many they use: a transfer starts with the count learnt so far,
 * measures the delivered rate over epochs of several round trips, and adds one more stream
 * while the last one raised the rate by at least RFS_AUTO_GAIN. The first epoch after a
 * change is not judged (the new connection is in slow start). What was learnt carries over
 * to the file's next transfers; probing stops at the first addition that did not pay and
 * resumes after RFS_AUTO_REPROBE large transfers, since the path's load changes.
 *
 * Transfers of a few frames (a collective buffer of 16 MiB is four) end before an epoch does.
 * A run of them probes as a series: each adds its bytes and time to the file's epoch, the full
 * epoch is judged by the same rule, and the next transfers start with the count it chose. */
#include "client/client.h"

#include "common/debug.h"
#include "common/log.h"

#include <stdlib.h>
#include <string.h>

/* An addition must raise the rate by this fraction to be kept probing past. */
#define RFS_AUTO_GAIN 0.10
/* Large transfers between re-probes once settled. */
#define RFS_AUTO_REPROBE 32
/* Below this round-trip time one connection fills any link we expect (a LAN, loopback). */
#define RFS_AUTO_MIN_RTT_US_DEFAULT 2000

int rfs_auto_min_rtt_us(void)
{
    /* $RFS_STREAMS_AUTO_MIN_RTT_US: for sites whose LAN has a large bandwidth-delay product,
     * and for tests on loopback (0 probes whatever the round-trip time). */
    const char *e = getenv("RFS_STREAMS_AUTO_MIN_RTT_US");
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end == '\0' && v >= 0 && v <= 10000000)
            return (int)v;
    }
    return RFS_AUTO_MIN_RTT_US_DEFAULT;
}

double rfs_conn_rtt_ms(rfs_conn *c)
{
    rfs_tcp_state st;
    if (!c || !c->t || rfs_tcp_describe(c->t, &st) != RFS_OK)
        return -1;
    return st.rtt_ms;
}

int rfs_auto_wants_streams(rfs_conn *first, const char *label, int cap)
{
    return rfs_auto_streams_for_rtt(rfs_conn_rtt_ms(first), label, cap);
}

int rfs_auto_streams_for_rtt(double rtt, const char *label, int cap)
{
    int min_us = rfs_auto_min_rtt_us();
    if (cap <= 1 || rtt < 0 || rtt * 1000.0 < (double)min_us) {
        RFS_LOGD("%s: streams auto: round trip %.3f ms under %.3f ms: one stream", label, rtt,
                 min_us / 1000.0);
        return 1;
    }
    RFS_LOGI("%s: streams auto: round trip %.1f ms: up to %d streams, measured while "
             "transferring",
             label, rtt, cap);
    return cap;
}

void rfs_auto_init(rfs_auto *a)
{
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    a->active = 1;
}

void rfs_auto_destroy(rfs_auto *a)
{
    pthread_mutex_destroy(&a->mu);
}

int rfs_auto_start(rfs_auto *a, int nconn, int *probing)
{
    pthread_mutex_lock(&a->mu);
    int k = a->active < nconn ? a->active : nconn;
    if (a->settled && ++a->since_settled >= RFS_AUTO_REPROBE) {
        a->settled = 0;
        a->since_settled = 0;
    }
    *probing = a->enabled && !a->settled && k < nconn;
    pthread_mutex_unlock(&a->mu);
    return k < 1 ? 1 : k;
}

int64_t rfs_auto_epoch_ns(rfs_conn *c)
{
    /* Long enough for a new connection to leave slow start and for the rate to be more than
     * noise: 8 round trips, at least 200 ms. */
    double rtt = rfs_conn_rtt_ms(c);
    int64_t e = rtt > 0 ? (int64_t)(rtt * 8e6) : 0;
    return e < 200000000 ? 200000000 : e;
}

void rfs_auto_probe_init(rfs_auto_probe *p, int k)
{
    memset(p, 0, sizeof *p);
    p->k = k;
    p->warming = 1;
}

/* rfs_auto_probe_epoch with a->mu held. */
static int judge_locked(rfs_auto *a, rfs_auto_probe *p, int nconn, double rate, const char *label)
{
    RFS_ASSERT_HELD(&a->mu);
    if (p->warming) { /* the epoch after a start or an addition is not judged */
        p->warming = 0;
        return 0;
    }
    if (p->base > 0 && rate < p->base * (1.0 + RFS_AUTO_GAIN)) {
        /* The last stream did not pay: settle on the count before it (this transfer keeps
         * what it has; the next ones use the settled count). */
        a->active = p->k - 1 > 0 ? p->k - 1 : 1;
        a->settled = 1;
        a->since_settled = 0;
        RFS_LOGI("%s: streams auto: %d streams %.1f MB/s, %d gave %.1f MB/s: settled on %d", label,
                 p->k - 1, p->base / 1e6, p->k, rate / 1e6, p->k - 1);
        p->done = 1;
        return 0;
    }
    if (p->base > 0)
        RFS_LOGI("%s: streams auto: %d streams %.1f MB/s (%d gave %.1f MB/s)", label, p->k,
                 rate / 1e6, p->k - 1, p->base / 1e6);
    a->active = p->k;
    if (p->k >= nconn) {
        a->settled = 1;
        a->since_settled = 0;
        RFS_LOGI("%s: streams auto: using all %d streams", label, p->k);
        p->done = 1;
        return 0;
    }
    p->base = rate;
    p->k++;
    p->warming = 1;
    return 1; /* caller starts stream k-1 */
}

int rfs_auto_probe_epoch(rfs_auto *a, rfs_auto_probe *p, int nconn, double rate, const char *label)
{
    pthread_mutex_lock(&a->mu);
    int more = judge_locked(a, p, nconn, rate, label);
    pthread_mutex_unlock(&a->mu);
    return more;
}

void rfs_auto_series(rfs_auto *a, int k, uint64_t bytes, int64_t ns, int64_t epoch_ns, int nconn,
                     const char *label)
{
    pthread_mutex_lock(&a->mu);
    if (!a->enabled || a->settled || ns <= 0) {
        pthread_mutex_unlock(&a->mu);
        return;
    }
    if (a->series.k != k || a->series.done) {
        /* a new series, or the count changed under it (a large transfer probed meanwhile) */
        rfs_auto_probe_init(&a->series, k);
        a->series_ns = 0;
        a->series_bytes = 0;
    }
    a->series_ns += ns;
    a->series_bytes += bytes;
    if (a->series_ns >= epoch_ns) {
        double rate = (double)a->series_bytes * 1e9 / (double)a->series_ns;
        a->series_ns = 0;
        a->series_bytes = 0;
        if (judge_locked(a, &a->series, nconn, rate, label))
            a->active = a->series.k; /* the next transfers try one stream more */
    }
    pthread_mutex_unlock(&a->mu);
}
