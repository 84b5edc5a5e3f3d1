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
 * resumes after RFS_AUTO_REPROBE large transfers, since the path's load changes. */
#include "client/client.h"

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
    double rtt = rfs_conn_rtt_ms(first);
    int min_us = rfs_auto_min_rtt_us();
    if (cap <= 1 || rtt < 0 || rtt * 1000.0 < (double)min_us) {
        RFS_LOGD("%s: streams auto: round trip %.3f ms under %.3f ms: one stream", label, rtt,
                 min_us / 1000.0);
        return 1;
    }
    RFS_LOGI("%s: streams auto: round trip %.1f ms: up to %d streams, measured while "
             "transferring", label, rtt, cap);
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

int rfs_auto_probe_epoch(rfs_auto *a, rfs_auto_probe *p, int nconn, double rate,
                         const char *label)
{
    if (p->warming) {       /* the epoch after a start or an addition is not judged */
        p->warming = 0;
        return 0;
    }
    if (p->base > 0 && rate < p->base * (1.0 + RFS_AUTO_GAIN)) {
        /* The last stream did not pay: settle on the count before it (this transfer keeps
         * what it has; the next ones use the settled count). */
        pthread_mutex_lock(&a->mu);
        a->active = p->k - 1 > 0 ? p->k - 1 : 1;
        a->settled = 1;
        a->since_settled = 0;
        pthread_mutex_unlock(&a->mu);
        RFS_LOGI("%s: streams auto: %d streams %.1f MB/s, %d gave %.1f MB/s: settled on %d",
                 label, p->k - 1, p->base / 1e6, p->k, rate / 1e6, p->k - 1);
        p->done = 1;
        return 0;
    }
    if (p->base > 0)
        RFS_LOGI("%s: streams auto: %d streams %.1f MB/s (%d gave %.1f MB/s)", label, p->k,
                 rate / 1e6, p->k - 1, p->base / 1e6);
    pthread_mutex_lock(&a->mu);
    a->active = p->k;
    pthread_mutex_unlock(&a->mu);
    if (p->k >= nconn) {
        pthread_mutex_lock(&a->mu);
        a->settled = 1;
        a->since_settled = 0;
        pthread_mutex_unlock(&a->mu);
        RFS_LOGI("%s: streams auto: using all %d streams", label, p->k);
        p->done = 1;
        return 0;
    }
    p->base = rate;
    p->k++;
    p->warming = 1;
    return 1;               /* caller starts stream k-1 */
}
