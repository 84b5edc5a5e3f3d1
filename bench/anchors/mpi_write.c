/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* MPI-IO anchor workload: every rank writes its own contiguous block of one shared file with
 * a collective write, then the file is closed; rank 0 prints JSON with the elapsed time
 * (open to close, the part a remote file system pays for).
 *   mpi_write FILE MIB_PER_RANK */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 3) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_write FILE MIB_PER_RANK\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long mib = strtol(argv[2], NULL, 10);
    if (mib < 1 || mib > 4096)
        MPI_Abort(MPI_COMM_WORLD, 2);
    size_t block = (size_t)mib << 20;
    char *buf = malloc(block);
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    memset(buf, 'a' + rank % 26, block);

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_File fh;
    int rc = MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY,
                           MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, msg, &len);
        if (rank == 0)
            fprintf(stderr, "mpi_write: open %s: %s\n", argv[1], msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* 1 MiB pieces keep the count argument far from int overflow */
    MPI_Status st;
    for (size_t off = 0; off < block; off += 1 << 20) {
        rc = MPI_File_write_at_all(fh, (MPI_Offset)(rank * block + off), buf + off, 1 << 20,
                                   MPI_BYTE, &st);
        if (rc != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_File_close(&fh);
    double secs = MPI_Wtime() - t0;
    double max_secs;
    MPI_Reduce(&secs, &max_secs, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("{\"nprocs\": %d, \"bytes\": %zu, \"seconds\": %.3f, \"mbit_s\": %.1f}\n", nprocs,
               block * nprocs, max_secs, block * nprocs * 8 / max_secs / 1e6);
    free(buf);
    MPI_Finalize();
    return 0;
}
