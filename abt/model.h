/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The background staging model of rfs-abt.txt eq. (1), and the observation of output phases
 * it needs. Pure functions and plain state, so they can be tested without threads or clocks. */
#ifndef RFS_ABT_MODEL_H
#define RFS_ABT_MODEL_H

#include <stdint.h>

/* Bytes x to stage before the next output phase so that min(abs_max, n) bytes of buffer are
 * free when it starts:  x >= (min(ABSmax, N) - ABSnow - I*Bx) / (1 - Bx/Bw).
 * Returns 0 when nothing needs staging, or when staging cannot help (Bx >= Bw: sending frees
 * memory faster than staging would), and at most the bytes currently buffered. */
double rfs_abt_stage_bytes(double abs_max, double abs_now, double n, double i_rem, double bx,
                           double bw, double buffered);

/* Output phases: a write after at least `gap_s` seconds without writes starts a new phase. */
typedef struct rfs_abt_phases {
    double gap_s;
    double last_write;    /* time the last write returned; < 0 before any */
    double phase_start;   /* start of the current (or last) output phase */
    uint64_t phase_bytes; /* bytes in the current phase */
    uint64_t phases;
    double interval; /* learned I (start to start); 0 until two phases were seen */
    double output;   /* learned N (bytes per phase); 0 until one phase ended */
} rfs_abt_phases;

void rfs_abt_phases_init(rfs_abt_phases *p, double gap_s);
/* Records a write of len bytes at time now. */
void rfs_abt_phases_write(rfs_abt_phases *p, double now, uint64_t len);
/* 1 if the application is computing (no write for gap_s) at time now. Once a phase has ended
 * its size becomes an estimate of N, so the first computation phase can already be used. */
int rfs_abt_phases_computing(rfs_abt_phases *p, double now);
/* Seconds until the next output phase is expected (I minus time since the last phase
 * started), or -1 when I is not known yet. */
double rfs_abt_phases_remaining(const rfs_abt_phases *p, double now);

/* Exponentially weighted moving average; the first sample is taken as is. */
static inline double rfs_ewma(double avg, double sample, double alpha)
{
    return avg <= 0 ? sample : avg + alpha * (sample - avg);
}

#endif
