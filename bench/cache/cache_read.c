/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The read workloads of bench/cache/run.py: every rank opens FILE read-only and reads
 *   seq BLOCK            its contiguous share of the file, BLOCK bytes per MPI_File_read_at;
 *   strided BLOCK STRIDE blocks of BLOCK bytes at (k * ranks + rank) * STRIDE.
 * Rank 0 prints one JSON line: seconds from before the open to after the close (all ranks,
 * between barriers), bytes read by all ranks, and an XOR of the data's 64-bit words (the same
 * for every MPI-IO that reads the same bytes). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4 || (strcmp(argv[2], "seq") && (strcmp(argv[2], "strided") || argc < 5))) {
        if (rank == 0)
            fprintf(stderr, "usage: cache_read FILE seq BLOCK | FILE strided BLOCK STRIDE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int strided = !strcmp(argv[2], "strided");
    long long block = atoll(argv[3]), stride = strided ? atoll(argv[4]) : block;
    char *buf = malloc((size_t)block);
    uint64_t x = 0;
    long long bytes = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Offset fsize = 0;
    MPI_File_get_size(fh, &fsize);
    MPI_Offset share = (fsize + size - 1) / size, from = strided ? 0 : share * rank;
    MPI_Offset to = strided ? fsize : (from + share < fsize ? from + share : fsize);
    for (MPI_Offset k = 0;; k++) {
        MPI_Offset off = strided ? (k * size + rank) * stride : from + k * block;
        if (off >= to)
            break;
        int want = (int)(to - off < block ? to - off : block);
        MPI_Status st;
        if (MPI_File_read_at(fh, off, buf, want, MPI_BYTE, &st) != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 1);
        int n = 0;
        MPI_Get_count(&st, MPI_BYTE, &n);
        bytes += n;
        for (int i = 0; i + 8 <= n; i += 8) {
            uint64_t w;
            memcpy(&w, buf + i, 8);
            x ^= w ^ (uint64_t)(off + i);
        }
        if (n < want)
            break;
    }
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    double secs = MPI_Wtime() - t0;
    long long total = 0;
    uint64_t xall = 0;
    MPI_Reduce(&bytes, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&x, &xall, 1, MPI_UINT64_T, MPI_BXOR, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("{\"seconds\": %.4f, \"bytes\": %lld, \"xor\": \"%016llx\"}\n", secs, total,
               (unsigned long long)xall);
    free(buf);
    MPI_Finalize();
    return 0;
}
