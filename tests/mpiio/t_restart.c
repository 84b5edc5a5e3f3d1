/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* A checkpoint loop for the fault matrix (tests/faults/test_reconnect.py): STEPS collective
 * writes of BLOCK bytes per rank (MPI_File_write_at_all), rank 0 printing "step K" after each
 * returns, then MPI_File_sync and MPI_File_close ("done"). The test restarts or cuts the server
 * while this runs; every call must still succeed and the file must hold the pattern.
 * Pattern: as tests/faults/rfs_writer.c (each 4 KiB block k holds k, then seed + k).
 * With PAUSE, rank 0 prints "paused" after that step and waits for a line on stdin (the test
 * restarts the server meanwhile, the file open and idle), then every rank goes on.
 * With "sync" after PAUSE, every rank calls MPI_File_sync before the pause (with ABT: everything
 * so far is delivered and its file version known before the test breaks the link).
 * usage: t_restart FILE STEPS BLOCK [PAUSE [sync]] */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void fill(unsigned char *buf, long long off, long long len)
{
    for (long long i = 0; i < len; i++) {
        unsigned long long at = (unsigned long long)(off + i), k = at / 4096, in = at % 4096;
        buf[i] = in < 8 ? (unsigned char)(k >> (8 * in)) : (unsigned char)(7 + k);
    }
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int fail(const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(rc, msg, &n);
    printf("error %s: %s\n", what, msg);
    fflush(stdout);
    /* MPICH's launcher tears everything down at MPI_Abort and may drop output it has not
     * forwarded yet, the line above included; let it read the pipe first. A line lost anyway
     * only makes a test fail, never pass. */
    nap_ms(500);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4) {
        if (rank == 0)
            fprintf(stderr, "usage: t_restart FILE STEPS BLOCK\n");
        MPI_Finalize();
        return 2;
    }
    int steps = atoi(argv[2]);
    int pause = argc > 4 ? atoi(argv[4]) : -1;
    long long block = atoll(argv[3]);
    unsigned char *buf = malloc((size_t)block);
    MPI_File fh;
    int rc =
        MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS)
        return fail("open", rc);
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    for (int k = 0; k < steps; k++) {
        long long off = ((long long)k * size + rank) * block;
        fill(buf, off, block);
        rc = MPI_File_write_at_all(fh, off, buf, (int)block, MPI_BYTE, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return fail("write_at_all", rc);
        if (rank == 0) {
            printf("step %d\n", k);
            fflush(stdout);
        }
        if (k == pause) {
            if (argc > 5 && !strcmp(argv[5], "sync") && (rc = MPI_File_sync(fh)) != MPI_SUCCESS)
                return fail("sync", rc);
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
    if ((rc = MPI_File_sync(fh)) != MPI_SUCCESS)
        return fail("sync", rc);
    if ((rc = MPI_File_close(&fh)) != MPI_SUCCESS)
        return fail("close", rc);
    if (rank == 0) {
        printf("done\n");
        fflush(stdout);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
