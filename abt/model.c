/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "abt/model.h"

double rfs_abt_stage_bytes(double abs_max, double abs_now, double n, double i_rem, double bx,
                           double bw, double buffered)
{
    if (bx <= 0 || bw <= 0 || bx >= bw)
        return 0;
    if (i_rem < 0)
        i_rem = 0;
    double need = abs_max < n ? abs_max : n;
    double x = (need - abs_now - i_rem * bx) / (1.0 - bx / bw);
    if (x <= 0)
        return 0;
    return x < buffered ? x : buffered;
}

void rfs_abt_phases_init(rfs_abt_phases *p, double gap_s)
{
    *p = (rfs_abt_phases){.gap_s = gap_s, .last_write = -1};
}

static void end_phase(rfs_abt_phases *p)
{
    /* N follows the latest phases, smoothing out one-off outputs. */
    p->output = rfs_ewma(p->output, (double)p->phase_bytes, 0.5);
}

void rfs_abt_phases_write(rfs_abt_phases *p, double now, uint64_t len)
{
    if (p->last_write < 0 || now - p->last_write >= p->gap_s) {
        if (p->phases > 0) {
            if (p->phase_bytes > 0) /* not yet ended by rfs_abt_phases_computing */
                end_phase(p);
            p->interval = rfs_ewma(p->interval, now - p->phase_start, 0.5);
        }
        p->phases++;
        p->phase_start = now;
        p->phase_bytes = 0;
    }
    p->phase_bytes += len;
    p->last_write = now;
}

int rfs_abt_phases_computing(rfs_abt_phases *p, double now)
{
    if (p->last_write < 0 || now - p->last_write < p->gap_s)
        return 0;
    if (p->phase_bytes > 0) {
        end_phase(p);
        p->phase_bytes = 0;
    }
    return 1;
}

double rfs_abt_phases_remaining(const rfs_abt_phases *p, double now)
{
    if (p->interval <= 0)
        return -1;
    double r = p->phase_start + p->interval - now;
    return r < 0 ? 0 : r;
}
