/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* chunkread: reads back what romio_perf wrote (each rank its own --size bytes at rank*size, same
 * --seed) in --chunk pieces with MPI_File_read_at, checks every word against the pattern, and
 * records when each piece arrived. bench/manifest/wan.py kills a server while this runs: the
 * arrival times show how long the readers stalled while the layer failed over to the other
 * replica, and the check shows whether the bytes they got were right.
 *
 * Rank 0 prints "reading" (flushed) when the timed reads start, then one line
 * {"app": "chunkread", "chunk": C, "bytes_read": B, "errors": E, "times": [[...], ...]}: per
 * rank, the seconds from the start at which each of its pieces had arrived.
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    static const char *const known[] = {"--size", "--chunk", NULL};
    static const char *const flags[] = {NULL};
    bench_check_args(argc, argv, known, flags, "[--size BYTES] [--chunk BYTES] [--seed S]");
    bench bb, *b = &bb;
    bench_begin(b, "chunkread", argc, argv);
    long long size = bench_opt_size(argc, argv, "--size", 64LL << 20);
    long long chunk = bench_opt_size(argc, argv, "--chunk", 4LL << 20);
    if (size < 8 || size % 8 || chunk < 8 || chunk % 8 || size % chunk || chunk > (1LL << 30))
        bench_die("--size and --chunk must be multiples of 8, --chunk dividing --size");
    int n = (int)(size / chunk);
    double *buf = bench_xmalloc((size_t)chunk);
    double *times = bench_xmalloc((size_t)n * sizeof *times);
    MPI_File fh;
    BCHK(MPI_File_open(MPI_COMM_WORLD, b->target, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
         "MPI_File_open");
    long long errors = 0, done = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (b->rank == 0) {
        printf("reading\n");
        fflush(stdout);
    }
    double t0 = bench_now();
    for (int i = 0; i < n; i++) {
        MPI_Offset off = (MPI_Offset)b->rank * size + (MPI_Offset)i * chunk;
        MPI_Status st;
        BCHK(MPI_File_read_at(fh, off, buf, (int)chunk, MPI_BYTE, &st), "MPI_File_read_at");
        int got = 0;
        MPI_Get_count(&st, MPI_BYTE, &got);
        done += got;
        times[i] = bench_now() - t0;
        errors += got == chunk ? bench_check_pattern(buf, chunk / 8, off / 8, b->seed) : chunk / 8;
    }
    BCHK(MPI_File_close(&fh), "MPI_File_close");
    double *all = b->rank == 0 ? bench_xmalloc((size_t)n * b->nprocs * sizeof *all) : NULL;
    MPI_Gather(times, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    long long tot_err = 0, tot_done = 0;
    MPI_Reduce(&errors, &tot_err, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&done, &tot_done, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (b->rank == 0) {
        printf("{\"app\": \"chunkread\", \"chunk\": %lld, \"bytes_read\": %lld, \"errors\": %lld, "
               "\"times\": [",
               chunk, tot_done, tot_err);
        for (int r = 0; r < b->nprocs; r++) {
            printf("%s[", r ? ", " : "");
            for (int i = 0; i < n; i++)
                printf("%s%.4f", i ? ", " : "", all[(size_t)r * n + i]);
            printf("]");
        }
        printf("]}\n");
        free(all);
    }
    free(times);
    free(buf);
    MPI_Finalize();
    return tot_err || (b->rank == 0 && tot_done != size * b->nprocs) ? 1 : 0;
}
