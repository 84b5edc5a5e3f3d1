/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* A client killed with data not yet on the server (tests/faults/test_client_kill.py).
 *
 *   t_abtkill FILE CHUNK N1 N2 GO
 *
 * Every rank prints "PID rank pid", writes N1 chunks (independent MPI_File_write_at), calls
 * MPI_File_sync ("SYNCED rank"), then waits (bounded) for the file GO to exist: the test cuts
 * the link or kills the server meanwhile. Then it writes N2 more chunks, printing
 * "WRITING rank off" before each call and "ACK rank off len" after each that returned success,
 * and finally "WROTE rank" and waits for a kill that the test sends (SIGKILL, bounded: after
 * 600 s it exits 3). Rank r's chunk i lies at ((i * size + r) * CHUNK); the bytes are
 * position-dependent (fill() below) so misplaced or stale bytes show.
 * With ABT every write that returned is in the rank's journal by then (the test stages every
 * write), without it on the server: the test checks exactly the ACK lines after `rfs recover`. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void fill(unsigned char *b, size_t n, uint64_t off)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t o = off + i;
        b[i] = (unsigned char)((o >> 12) * 31u + o * 7u + 1u);
    }
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int fail(int rank, const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(rc, msg, &n);
    printf("ERR %d %s %s\n", rank, what, msg);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 6) {
        if (rank == 0)
            fprintf(stderr, "usage: t_abtkill FILE CHUNK N1 N2 GO\n");
        MPI_Finalize();
        return 2;
    }
    size_t chunk = (size_t)atoll(argv[2]);
    int n1 = atoi(argv[3]), n2 = atoi(argv[4]);
    const char *go = argv[5];
    unsigned char *buf = malloc(chunk);
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 2);
    printf("PID %d %ld\n", rank, (long)getpid());
    fflush(stdout);
    MPI_File fh;
    int rc =
        MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS)
        return fail(rank, "open", rc);
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    for (int i = 0; i < n1 + n2; i++) {
        if (i == n1) {
            if ((rc = MPI_File_sync(fh)) != MPI_SUCCESS)
                return fail(rank, "sync", rc);
            printf("SYNCED %d\n", rank);
            fflush(stdout);
            /* the test breaks the path to the server now; bounded wait for its signal */
            struct stat st;
            for (int t = 0; t < 6000 && stat(go, &st) != 0; t++)
                nap_ms(20);
        }
        uint64_t off = ((uint64_t)i * (uint64_t)size + (uint64_t)rank) * chunk;
        fill(buf, chunk, off);
        if (i >= n1) {
            printf("WRITING %d %llu\n", rank, (unsigned long long)off);
            fflush(stdout);
        }
        rc = MPI_File_write_at(fh, (MPI_Offset)off, buf, (int)chunk, MPI_BYTE, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return fail(rank, "write_at", rc);
        printf("ACK %d %llu %zu\n", rank, (unsigned long long)off, chunk);
        fflush(stdout);
    }
    printf("WROTE %d\n", rank);
    fflush(stdout);
    /* The test SIGKILLs this process now: nothing after this point is reached normally. */
    for (int t = 0; t < 600; t++)
        nap_ms(1000);
    free(buf);
    return 3;
}
