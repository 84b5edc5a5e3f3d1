/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* RFS_TRACE=1: marks where each MPI_File call on an rfs file begins and ends, on stderr, in the
 * same format and on the same clock (CLOCK_MONOTONIC, shared by all processes of a machine) as
 * the client's per-request trace (client/conn.c). bench/mpiio/rtt_count.py uses the marks to
 * tell which requests, and how many sequential round trips, each MPI-IO call costs. */
#include "common/envflag.h"
#include "mpiio/mpiio_internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int mp_trace_enabled(void)
{
    static atomic_int on = RFS_ENV_FLAG_INIT; /* the I/O threads ask too */
    return rfs_env_flag(&on, "RFS_TRACE");
}

void mp_trace_mark(const char *call, int begin)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    fprintf(stderr, "rfs trace %.6f mpi %s %s\n", (double)ts.tv_sec + (double)ts.tv_nsec / 1e9,
            begin ? "begin" : "end", call);
}

/* RFS_STATS=1: one line per rfs file at close with what the view slots saved (engine.c). */
int mp_stats_enabled(void)
{
    static atomic_int on = RFS_ENV_FLAG_INIT;
    return rfs_env_flag(&on, "RFS_STATS");
}
