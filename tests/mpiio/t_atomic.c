/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Overlapping writers in atomic mode (tests/faults/test_atomic_fault.py).
 *
 *   t_atomic FILE REGION NREG ROUNDS
 *
 * MPI_File_set_atomicity(true); then every rank writes every region j (REGION bytes at
 * j * REGION) ROUNDS times with independent MPI_File_write_at, all ranks the same regions in
 * the same order, so their writes overlap completely and run concurrently. The test restarts
 * the server or resets the link meanwhile. Atomic mode promises sequential consistency (MPI 4.1
 * sec. 14.6.1): concurrent overlapping writes end as if they ran one after the other, so each
 * region must hold exactly one write's data, never a mix.
 * Each 4 KiB block of a write holds its block number in the file (u64), the writer's rank (u32)
 * and round (u32), then bytes derived from all three, so the test can tell whose write each
 * block came from and that every block of a region came from the same one.
 * Prints "ACK rank round region" after each write that returned success, "ERR rank call msg"
 * on a failure (then aborts), "DONE rank" after sync and close succeeded. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLK 4096u

static void fill(unsigned char *b, size_t n, uint64_t off, uint32_t rank, uint32_t round)
{
    for (size_t at = 0; at < n; at += BLK) {
        uint64_t blk = (off + at) / BLK;
        unsigned char *p = b + at;
        memcpy(p, &blk, 8);
        memcpy(p + 8, &rank, 4);
        memcpy(p + 12, &round, 4);
        for (size_t i = 16; i < BLK && at + i < n; i++)
            p[i] = (unsigned char)(blk * 13u + rank * 101u + round * 7u + i);
    }
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
    if (argc != 5) {
        if (rank == 0)
            fprintf(stderr, "usage: t_atomic FILE REGION NREG ROUNDS\n");
        MPI_Finalize();
        return 2;
    }
    size_t region = (size_t)atoll(argv[2]);
    int nreg = atoi(argv[3]), rounds = atoi(argv[4]);
    if (region == 0 || region % BLK) {
        fprintf(stderr, "t_atomic: REGION must be a multiple of %u\n", BLK);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned char *buf = malloc(region);
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_File fh;
    int rc =
        MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS)
        return fail(rank, "open", rc);
    MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
    if ((rc = MPI_File_set_atomicity(fh, 1)) != MPI_SUCCESS)
        return fail(rank, "set_atomicity", rc);
    for (int r = 0; r < rounds; r++) {
        for (int j = 0; j < nreg; j++) {
            uint64_t off = (uint64_t)j * region;
            fill(buf, region, off, (uint32_t)rank, (uint32_t)r);
            rc = MPI_File_write_at(fh, (MPI_Offset)off, buf, (int)region, MPI_BYTE,
                                   MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS)
                return fail(rank, "write_at", rc);
            printf("ACK %d %d %d\n", rank, r, j);
            fflush(stdout);
        }
    }
    if ((rc = MPI_File_sync(fh)) != MPI_SUCCESS)
        return fail(rank, "sync", rc);
    if ((rc = MPI_File_close(&fh)) != MPI_SUCCESS)
        return fail(rank, "close", rc);
    printf("DONE %d\n", rank);
    fflush(stdout);
    free(buf);
    MPI_Finalize();
    return 0;
}
