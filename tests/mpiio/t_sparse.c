/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Interleaved sparse writes from every rank, for the manifest's missing ranges
 * (tests/e2e/test_manifest_ops.py): in step k, rank r writes BLOCK bytes at
 * (k * size + r) * STRIDE * BLOCK (MPI_File_write_at, independent), so the ranks' blocks
 * interleave and leave gaps. After step PAUSE, rank 0 prints "paused" and waits for a line on
 * stdin (the test kills a server meanwhile), then every rank goes on. MPI_File_sync and
 * MPI_File_close are called on every rank whatever they return (each prints its error, and
 * no rank aborts: every rank's merge into the manifest must happen), then rank 0 prints
 * "done". Bytes: byte i of the file is (i * 131 + 7) & 0xff where written.
 * usage: t_sparse FILE STEPS BLOCK STRIDE PAUSE */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void report(int rank, const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(rc, msg, &n);
    printf("rank %d error %s: %s\n", rank, what, msg);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 6) {
        if (rank == 0)
            fprintf(stderr, "usage: t_sparse FILE STEPS BLOCK STRIDE PAUSE\n");
        MPI_Finalize();
        return 2;
    }
    int steps = atoi(argv[2]), stride = atoi(argv[4]), pause = atoi(argv[5]);
    long long block = atoll(argv[3]);
    unsigned char *buf = malloc((size_t)block);
    MPI_File fh;
    int rc =
        MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS) {
        report(rank, "open", rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    int failed = 0;
    for (int k = 0; k < steps; k++) {
        long long off = ((long long)k * size + rank) * stride * block;
        for (long long i = 0; i < block; i++)
            buf[i] = (unsigned char)(((off + i) * 131 + 7) & 0xff);
        rc = MPI_File_write_at(fh, off, buf, (int)block, MPI_BYTE, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            report(rank, "write_at", rc);
            failed = 1;
        }
        if (k == pause) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                char line[64];
                printf("paused\n");
                fflush(stdout);
                if (!fgets(line, sizeof line, stdin))
                    line[0] = 0;
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    if ((rc = MPI_File_sync(fh)) != MPI_SUCCESS) {
        report(rank, "sync", rc);
        failed = 1;
    }
    if ((rc = MPI_File_close(&fh)) != MPI_SUCCESS) {
        report(rank, "close", rc);
        failed = 1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("done\n");
        fflush(stdout);
    }
    free(buf);
    MPI_Finalize();
    return failed;
}
