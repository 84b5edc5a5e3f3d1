/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Which replica of a column a read tries first: the one whose server answers soonest, by the
 * round trip the kernel measured on its connection when the object was opened. A bounded
 * rule (mf_internal.h): the slot order stands unless a replica is clearly nearer, so reads
 * between equally near servers stay where they were and failover keeps its order. */
#include "manifest/mf_internal.h"

uint32_t mf_fastest_replica(const double *rtt_ms, uint32_t n)
{
    uint32_t best = UINT32_MAX;
    for (uint32_t r = 0; r < n; r++) {
        if (rtt_ms[r] == MF_NOT_CANDIDATE)
            continue;
        if (best == UINT32_MAX) {
            best = r;
            continue;
        }
        double b = rtt_ms[best], x = rtt_ms[r];
        /* an unknown round trip is never preferred; a known one beats an unknown one */
        if (x < 0)
            continue;
        if (b < 0 || (x * MF_RTT_MARGIN < b && b - x >= MF_RTT_MIN_GAP_MS))
            best = r;
    }
    return best == UINT32_MAX ? 0 : best;
}

uint32_t mf_read_start(mf_file *f, const rfsm_extent *e, uint32_t c)
{
    double rtt[RFSM_MAX_REPLICAS];
    uint32_t n = e->replicas < RFSM_MAX_REPLICAS ? e->replicas : RFSM_MAX_REPLICAS;
    pthread_mutex_lock(&f->mu);
    for (uint32_t r = 0; r < n; r++) {
        uint32_t oi = rfsm_object_of(e, c, r);
        int live = oi != RFSM_NO_OBJECT && !f->objs[oi].gone && f->objs[oi].io &&
                   !(f->m->objects[oi].flags & RFSM_OBJ_STALE);
        rtt[r] = !live                     ? MF_NOT_CANDIDATE
                 : f->objs[oi].rtt_ms >= 0 ? f->objs[oi].rtt_ms
                                           : MF_RTT_UNKNOWN;
    }
    pthread_mutex_unlock(&f->mu);
    return mf_fastest_replica(rtt, n);
}
