/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Storage errors at a defined call: writes chunks until one fails (disk full, quota, permission)
 * and prints, line by line, what each call was told, so the driver can check that every byte
 * the program was told is written is on the server (or in an ABT journal) and that the error
 * has the right MPI class at the right call. tests/faults/test_disk_full.py and
 * test_abt_bounded.py run it.
 *
 *   t_nospc FILE CHUNK NCHUNKS [coll] [go=PATH] [pause=K] [mode=create|rdonly] [nosync]
 *
 * Rank r writes chunk i at ((i * size + r) * CHUNK) with the pattern below; coll: with
 * MPI_File_write_at_all (ranks agree after each call whether to go on). After a failed write,
 * go=PATH: wait (bounded) for PATH to exist, then retry that write once and carry on.
 * pause=K: after K chunks print PAUSED and wait for the go file before writing on.
 * nosync: straight from the writes to the close (no sync, no size), so that only the close
 * can report what the writes did.
 * Output: "ACK rank off len", "ERR rank call off class=NAME secs=T msg", "SYNC ok|class=..",
 * "SIZE rank bytes" (get_size after sync), "CLOSE ok|class=..", "FINALIZE rc", "DONE". Exits 0 whatever the calls returned. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank, nprocs, nosync;

static const char *class_name(int c)
{
    switch (c) {
    case MPI_SUCCESS: return "SUCCESS";
    case MPI_ERR_NO_SPACE: return "NO_SPACE";
    case MPI_ERR_QUOTA: return "QUOTA";
    case MPI_ERR_ACCESS: return "ACCESS";
    case MPI_ERR_READ_ONLY: return "READ_ONLY";
    case MPI_ERR_IO: return "IO";
    case MPI_ERR_NO_SUCH_FILE: return "NO_SUCH_FILE";
    case MPI_ERR_FILE: return "FILE";
    case MPI_ERR_BAD_FILE: return "BAD_FILE";
    case MPI_ERR_ARG: return "ARG";
    default: return "OTHER";
    }
}

static void report(const char *call, uint64_t off, int rc, double secs)
{
    int cls = rc, len = 0;
    char msg[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    printf("ERR %d %s %llu class=%s secs=%.3f %s\n", rank, call, (unsigned long long)off,
           class_name(cls), secs, msg);
    fflush(stdout);
}

/* The byte at file offset o: position-dependent, so misplaced or stale bytes show. */
static void fill(unsigned char *b, size_t n, uint64_t off)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t o = off + i;
        b[i] = (unsigned char)((o >> 12) * 31u + o * 7u + 1u);
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waits until the driver creates path (it frees space or kills the server first). */
static void wait_go(const char *path)
{
    double until = now() + 120;
    while (access(path, F_OK) != 0 && now() < until)
        usleep(20000);
}

static int write_chunk(MPI_File fh, int coll, uint64_t off, const unsigned char *b, int n)
{
    MPI_Status st;
    double t0 = now();
    int rc = coll ? MPI_File_write_at_all(fh, (MPI_Offset)off, b, n, MPI_BYTE, &st)
                  : MPI_File_write_at(fh, (MPI_Offset)off, b, n, MPI_BYTE, &st);
    if (rc == MPI_SUCCESS) {
        int got = -1;
        MPI_Get_count(&st, MPI_BYTE, &got);
        printf("ACK %d %llu %d\n", rank, (unsigned long long)off, got);
    } else {
        report("write", off, rc, now() - t0);
    }
    fflush(stdout);
    return rc;
}

static void finish(MPI_File fh, int opened)
{
    if (opened && !nosync) {
        int rc = MPI_File_sync(fh);
        if (rc == MPI_SUCCESS)
            printf("SYNC %d ok\n", rank);
        else
            report("sync", 0, rc, 0);
        /* after every rank's sync: the size the server has, failed writes not counted */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Offset size = -1;
        if (MPI_File_get_size(fh, &size) == MPI_SUCCESS)
            printf("SIZE %d %lld\n", rank, (long long)size);
    }
    if (opened) {
        int rc = MPI_File_close(&fh);
        if (rc == MPI_SUCCESS)
            printf("CLOSE %d ok\n", rank);
        else
            report("close", 0, rc, 0);
        fflush(stdout);
    }
    int rc = MPI_Finalize();
    printf("FINALIZE %d %d\nDONE\n", rank, rc);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 4) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: %s FILE CHUNK NCHUNKS [coll] [go=PATH] [pause=K] "
                    "[mode=create|rdonly]\n",
                    argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int chunk = atoi(argv[2]), nchunks = atoi(argv[3]), coll = 0, pause = -1;
    int amode = MPI_MODE_CREATE | MPI_MODE_WRONLY;
    const char *go = NULL;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "coll"))
            coll = 1;
        else if (!strncmp(argv[i], "go=", 3))
            go = argv[i] + 3;
        else if (!strncmp(argv[i], "pause=", 6))
            pause = atoi(argv[i] + 6);
        else if (!strcmp(argv[i], "mode=rdonly"))
            amode = MPI_MODE_RDONLY;
        else if (!strcmp(argv[i], "nosync"))
            nosync = 1;
    }
    MPI_File fh;
    int rc = MPI_File_open(MPI_COMM_WORLD, argv[1], amode, MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS) {
        report("open", 0, rc, 0);
        finish(fh, 0);
        return 0;
    }
    unsigned char *b = malloc((size_t)chunk);
    for (int i = 0; i < nchunks; i++) {
        if (i == pause) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                printf("PAUSED\n");
                fflush(stdout);
            }
            wait_go(go);
        }
        uint64_t off = ((uint64_t)i * (uint64_t)nprocs + (uint64_t)rank) * (uint64_t)chunk;
        fill(b, (size_t)chunk, off);
        int failed = write_chunk(fh, coll, off, b, chunk) != MPI_SUCCESS, any = failed;
        /* Ranks agree, so collective calls stay matched and all stop at the same chunk. */
        MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (!any)
            continue;
        if (!go || pause >= 0)
            break;
        if (rank == 0) {
            printf("WAITING\n");
            fflush(stdout);
        }
        wait_go(go);
        /* The retry: the same chunk once more (every rank, for the collective), now that the
         * driver has freed space. */
        failed = write_chunk(fh, coll, off, b, chunk) != MPI_SUCCESS;
        MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any)
            break;
    }
    free(b);
    finish(fh, 1);
    return 0;
}
