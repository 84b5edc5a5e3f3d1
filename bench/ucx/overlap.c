/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Overlap of a compute loop with nonblocking writes, for bench/ucx (one rank):
 *   overlap FILE CHUNK ITERS
 * Three phases on FILE, each ITERS iterations: I/O alone (MPI_File_iwrite_at of CHUNK bytes,
 * then MPI_Wait), compute alone (a busy loop calibrated to take as long as one iteration of
 * the I/O phase), and both (iwrite, compute, wait). The reference is semplar's: the best a
 * perfect overlap can do is max(compute, I/O), so the most speedup there is to get is
 * (compute + I/O) / max(compute, I/O); "of_max" is the speedup reached over that.
 * Prints one JSON object. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile uint64_t sink;

/* The unit of work: integer arithmetic the compiler cannot drop, no memory traffic. */
static void compute(uint64_t units)
{
    uint64_t x = sink + 1;
    for (uint64_t i = 0; i < units; i++)
        x = x * 6364136223846793005u + 1442695040888963407u;
    sink = x;
}

static int io_phase(MPI_File f, const char *buf, int chunk, int iters, uint64_t units,
                    MPI_Offset base)
{
    for (int i = 0; i < iters; i++) {
        MPI_Request r;
        if (MPI_File_iwrite_at(f, base + (MPI_Offset)i * chunk, buf, chunk, MPI_BYTE, &r))
            return 1;
        if (units)
            compute(units);
        if (MPI_Wait(&r, MPI_STATUS_IGNORE))
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc != 4) {
        fprintf(stderr, "usage: overlap FILE CHUNK ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int chunk = atoi(argv[2]), iters = atoi(argv[3]);
    char *buf = malloc((size_t)chunk);
    if (!buf || chunk <= 0 || iters <= 0)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int i = 0; i < chunk; i++)
        buf[i] = (char)(i * 131 + 7);
    MPI_File f;
    if (MPI_File_open(MPI_COMM_SELF, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                      &f)) {
        fprintf(stderr, "overlap: cannot open %s\n", argv[1]);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Offset span = (MPI_Offset)chunk * iters;
    /* warm-up: connections, the I/O threads, the server's file */
    if (io_phase(f, buf, chunk, iters < 4 ? iters : 4, 0, 0))
        MPI_Abort(MPI_COMM_WORLD, 1);

    double t0 = MPI_Wtime();
    if (io_phase(f, buf, chunk, iters, 0, 0))
        MPI_Abort(MPI_COMM_WORLD, 1);
    double t_io = MPI_Wtime() - t0;

    /* units per second, from a loop long enough to time */
    uint64_t probe = 1u << 24;
    t0 = MPI_Wtime();
    compute(probe);
    double per_unit = (MPI_Wtime() - t0) / (double)probe;
    uint64_t units = (uint64_t)(t_io / iters / per_unit);

    t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
        compute(units);
    double t_c = MPI_Wtime() - t0;

    t0 = MPI_Wtime();
    if (io_phase(f, buf, chunk, iters, units, span))
        MPI_Abort(MPI_COMM_WORLD, 1);
    double t_both = MPI_Wtime() - t0;
    MPI_File_close(&f);

    double best = t_io > t_c ? t_io : t_c;
    double max_speedup = (t_io + t_c) / best, speedup = (t_io + t_c) / t_both;
    printf("{\"chunk\": %d, \"iters\": %d, \"io_s\": %.4f, \"compute_s\": %.4f, "
           "\"both_s\": %.4f, \"speedup\": %.4f, \"max_speedup\": %.4f, \"of_max\": %.4f}\n",
           chunk, iters, t_io, t_c, t_both, speedup, max_speedup, speedup / max_speedup);
    free(buf);
    MPI_Finalize();
    return 0;
}
