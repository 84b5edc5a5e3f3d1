/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The first connection of a multi-stream open tells the dials beside it what it learns while
 * it is set up: the path's round trip as soon as its transport is connected (the kernel has
 * it from the SYN exchange), and the server's features once its HELLO is answered. The other
 * streams then start their TCP connects one round trip after the first instead of after its
 * whole handshake, and send their HELLO (marked EXTRA where the server takes the mark) as
 * soon as the first one's reply is in: on a 50 ms path a first open of a file with several
 * streams saves one to three round trips (docs/client.md "Opening several streams"). */
#include "client/client.h"

#include <string.h>

void rfs_gate_init(rfs_dial_gate *g)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->rtt_ms = -1;
}

void rfs_gate_destroy(rfs_dial_gate *g)
{
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
}

void rfs_gate_tell_rtt(rfs_dial_gate *g, double rtt_ms)
{
    pthread_mutex_lock(&g->mu);
    if (!g->rtt_known) {
        g->rtt_known = 1;
        g->rtt_ms = rtt_ms;
        pthread_cond_broadcast(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
}

void rfs_gate_tell_hello(rfs_dial_gate *g, uint32_t features, int failed)
{
    pthread_mutex_lock(&g->mu);
    if (!g->rtt_known) { /* failed before its transport was up */
        g->rtt_known = 1;
        g->rtt_ms = -1;
    }
    if (!g->hello_known) {
        g->hello_known = 1;
        g->features = failed ? 0 : features;
        g->failed = failed;
    }
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

void rfs_gate_tell_done(rfs_dial_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->done = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

double rfs_gate_wait_rtt(rfs_dial_gate *g)
{
    pthread_mutex_lock(&g->mu);
    while (!g->rtt_known && !g->done)
        pthread_cond_wait(&g->cv, &g->mu);
    double rtt = g->rtt_known ? g->rtt_ms : -1;
    pthread_mutex_unlock(&g->mu);
    return rtt;
}

int rfs_gate_wait_hello(rfs_dial_gate *g, uint32_t *features)
{
    pthread_mutex_lock(&g->mu);
    while (!g->hello_known && !g->done)
        pthread_cond_wait(&g->cv, &g->mu);
    int ok = g->hello_known && !g->failed;
    *features = ok ? g->features : 0;
    pthread_mutex_unlock(&g->mu);
    return ok ? 0 : -1;
}

void rfs_gate_decide(rfs_dial_gate *g, int admit)
{
    pthread_mutex_lock(&g->mu);
    if (!g->decided) {
        g->decided = 1;
        g->admit = admit;
        pthread_cond_broadcast(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
}

int rfs_gate_admit(rfs_dial_gate *g)
{
    pthread_mutex_lock(&g->mu);
    while (!g->decided)
        pthread_cond_wait(&g->cv, &g->mu);
    int ok = g->tickets < g->admit;
    if (ok)
        g->tickets++;
    pthread_mutex_unlock(&g->mu);
    return ok;
}
