/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* romio_perf: ROMIO's "perf" pattern (semplar sec. 5): each rank writes its array to a shared
 * file at offset rank*size with independent calls, then reads it back and checks it.
 *
 * Phases, each timed on every rank after a barrier (max over ranks is reported):
 *   write       MPI_File_write_at of the array (no sync: what the application waits for)
 *   write_sync  the same write followed by MPI_File_sync (data durable on the target)
 *   read        MPI_File_read_at of the array, verified word by word against the pattern
 * Only "write" and "read" count in write_bw/read_bw; write_sync has its own bandwidth in
 * params-derived fields computed by the runner (bytes / time.write_sync).
 * --loops L repeats the three phases L times (times and bytes accumulate).
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    static const char *const known[] = {"--size", "--loops", NULL};
    static const char *const flags[] = {"--no-sync", NULL};
    bench_check_args(argc, argv, known, flags,
                     "[--size BYTES] [--loops L] [--no-sync] [--no-verify] [--seed S]");
    bench bb, *b = &bb;
    bench_begin(b, "romio_perf", argc, argv);
    if (b->peak)
        bench_die("romio_perf has no --peak mode: it is all I/O");
    long long size = bench_opt_size(argc, argv, "--size", 4LL << 20);
    int loops = (int)bench_opt_size(argc, argv, "--loops", 1);
    int do_sync = !bench_opt_flag(argc, argv, "--no-sync");
    if (size < 8 || size % 8 || size > 0x7fffffffLL || loops < 1)
        bench_die("--size must be a multiple of 8 in [8, 2 GiB); --loops >= 1");
    bench_param_int(b, "size", size);
    bench_param_int(b, "loops", loops);
    bench_param_int(b, "sync_phase", do_sync);

    long long nwords = size / 8;
    double *buf = bench_xmalloc((size_t)size);
    MPI_Offset off = (MPI_Offset)b->rank * size;
    long long first_word = (long long)b->rank * nwords;

    bench_remove(b, b->target);
    MPI_File fh;
    double t = bench_now();
    BCHK(MPI_File_open(MPI_COMM_WORLD, b->target, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                       &fh), "MPI_File_open");
    bench_add(b, "open", bench_now() - t);
    bench_add(b, "write", 0);
    bench_add(b, "write_sync", 0);
    bench_add(b, "read", 0);

    for (int l = 0; l < loops; l++) {
        bench_fill_pattern(buf, nwords, first_word, b->seed);
        MPI_Barrier(MPI_COMM_WORLD);
        t = bench_now();
        BCHK(MPI_File_write_at(fh, off, buf, (int)size, MPI_BYTE, MPI_STATUS_IGNORE),
             "MPI_File_write_at");
        bench_add(b, "write", bench_now() - t);
        b->bytes_written += size;

        if (do_sync) {
            MPI_Barrier(MPI_COMM_WORLD);
            t = bench_now();
            BCHK(MPI_File_write_at(fh, off, buf, (int)size, MPI_BYTE, MPI_STATUS_IGNORE),
                 "MPI_File_write_at (sync phase)");
            BCHK(MPI_File_sync(fh), "MPI_File_sync");
            bench_add(b, "write_sync", bench_now() - t);
        }

        /* Sync-barrier-sync: the MPI-IO way to make other ranks' writes visible; here each
         * rank reads what it wrote itself, but the barrier keeps the phases separate. */
        if (!do_sync)
            BCHK(MPI_File_sync(fh), "MPI_File_sync");
        MPI_Barrier(MPI_COMM_WORLD);
        memset(buf, 0, (size_t)size);
        t = bench_now();
        BCHK(MPI_File_read_at(fh, off, buf, (int)size, MPI_BYTE, MPI_STATUS_IGNORE),
             "MPI_File_read_at");
        bench_add(b, "read", bench_now() - t);
        b->bytes_read += size;
        if (b->verify)
            b->verify_errors += bench_check_pattern(buf, nwords, first_word, b->seed);
    }
    t = bench_now();
    BCHK(MPI_File_close(&fh), "MPI_File_close");
    bench_add(b, "close", bench_now() - t);
    int rc = bench_report(b);
    free(buf);
    MPI_Finalize();
    return rc;
}
