/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* MPI-IO with active buffering (run by tests/e2e/test_abt_mpi.py with RFS_HINTS enabling ABT).
 *   t_abt FILE write      each rank writes its blocks (independent, collective, noncontiguous
 *                         in the file and in memory: ABT gathers those from the memory runs),
 *                         rewrites part of them, reads its buffered bytes back at once and
 *                         checks them, closes; the driver compares the file with a local run
 *   t_abt FILE sync       writes, MPI_File_sync, then rank 0 prints SYNCED and waits for a line
 *                         on stdin (the driver checks the server's disk meanwhile), then closes
 *   t_abt FILE kill       opens, rank 0 prints OPENED and waits for a line (the driver kills the
 *                         server), writes, then expects sync to fail; prints the classes seen
 *   t_abt FILE deferfail  FILE's directory does not exist; with rfs_defer_open the open succeeds
 *                         and the failure is reported later (first access, or sync with ABT) */
#include "../mpiio/t_common.h"

#define BLOCK 300000

static void fill(unsigned char *b, long long off, long long n, int w)
{
    for (long long i = 0; i < n; i++)
        b[i] = t_pat(off + i, w);
}

static void wait_line(const char *tag)
{
    if (t_rank == 0) {
        printf("%s\n", tag);
        fflush(stdout);
        char line[64];
        if (!fgets(line, sizeof line, stdin))
            t_fail = 1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Writes from noncontiguous memory, each rank in its own REGION from base: with ABT these are
 * gathered from the memory runs instead of packed (mpiio/engine.c mp_gather_write). Covers
 * count > 1 (elements tiled by extent), runs out of address order (a negative displacement),
 * a file view that is noncontiguous too, and a collective write. */
#define REGION 65536
static void write_noncontig_memory(MPI_File fh, long long base)
{
    long long at = base + (long long)t_rank * REGION;
    static unsigned char m[32768];
    for (size_t i = 0; i < sizeof m; i++)
        m[i] = (unsigned char)(i * 7 + (size_t)t_rank * 13 + 1);
    /* The region is written whole first: ROMIO's data sieving fills never-written holes with
     * whatever its buffer held (docs/mpiio.md), so the reference run needs defined bytes. */
    MPI_OK(MPI_File_write_at(fh, at, m, REGION / 2, MPI_BYTE, MPI_STATUS_IGNORE));
    MPI_OK(MPI_File_write_at(fh, at + REGION / 2, m, REGION / 2, MPI_BYTE, MPI_STATUS_IGNORE));

    /* a. vector with gaps, 3 elements: 3 x 40 x 100 bytes */
    MPI_Datatype vec;
    MPI_Type_vector(40, 100, 150, MPI_BYTE, &vec);
    MPI_Type_commit(&vec);
    MPI_OK(MPI_File_write_at(fh, at, m, 3, vec, MPI_STATUS_IGNORE));
    MPI_Type_free(&vec);

    /* b. two blocks, the second before the first in memory (negative displacement), 2 elements */
    MPI_Datatype back;
    int bl[2] = {8, 8};
    MPI_Aint dp[2] = {16, -16};
    MPI_Type_create_hindexed(2, bl, dp, MPI_BYTE, &back);
    MPI_Type_commit(&back);
    MPI_OK(MPI_File_write_at(fh, at + 12000, m + 4096, 2, back, MPI_STATUS_IGNORE));
    MPI_Type_free(&back);

    /* c. collective: a 3-D subarray of memory through a strided file view */
    MPI_Datatype sub, ft;
    int full[3] = {10, 20, 30}, part[3] = {6, 10, 12}, start[3] = {2, 5, 9};
    MPI_Type_create_subarray(3, full, part, start, MPI_ORDER_C, MPI_BYTE, &sub);
    MPI_Type_commit(&sub);
    MPI_Type_vector(20, 64, 128, MPI_BYTE, &ft);
    MPI_Type_commit(&ft);
    MPI_OK(MPI_File_set_view(fh, at + 16384, MPI_BYTE, ft, "native", MPI_INFO_NULL));
    MPI_OK(MPI_File_write_all(fh, m + 8192, 1, sub, MPI_STATUS_IGNORE));
    MPI_OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MPI_Type_free(&sub);
    MPI_Type_free(&ft);
}

/* with_view = 0: the interleaved part is written block by block at explicit offsets, which
 * needs no server round trip (set_view resets the shared file pointer on the server). */
static int write_all_kinds(MPI_File fh, int with_view)
{
    unsigned char *b = malloc(BLOCK);
    /* 1. independent contiguous at rank*BLOCK */
    long long off = (long long)t_rank * BLOCK;
    fill(b, off, BLOCK, 1);
    MPI_OK(MPI_File_write_at(fh, off, b, BLOCK, MPI_BYTE, MPI_STATUS_IGNORE));
    /* 2. collective interleaved: 1000-byte blocks round-robin over ranks after all blocks */
    long long base = (long long)t_size * BLOCK;
    unsigned char v[50000];
    for (int k = 0; k < 50; k++)
        fill(v + 1000 * k, base + 1000LL * t_rank + 1000LL * t_size * k, 1000, 2);
    if (!with_view) {
        for (int k = 0; k < 50; k++)
            MPI_OK(MPI_File_write_at(fh, base + 1000LL * t_rank + 1000LL * t_size * k, v + 1000 * k,
                                     1000, MPI_BYTE, MPI_STATUS_IGNORE));
        goto rewrite;
    }
    MPI_Datatype ft;
    MPI_Type_vector(50, 1000, 1000 * t_size, MPI_BYTE, &ft);
    MPI_Type_commit(&ft);
    MPI_OK(MPI_File_set_view(fh, base + 1000LL * t_rank, MPI_BYTE, ft, "native", MPI_INFO_NULL));
    MPI_OK(MPI_File_write_all(fh, v, 50000, MPI_BYTE, MPI_STATUS_IGNORE));
    MPI_OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MPI_Type_free(&ft);
rewrite:
    /* 3. overlapping rewrite of the middle of this rank's block: order must be kept */
    fill(b, off + 1000, 5000, 3);
    MPI_OK(MPI_File_write_at(fh, off + 1000, b, 5000, MPI_BYTE, MPI_STATUS_IGNORE));
    free(b);
    /* 4. from noncontiguous memory, after everything above */
    write_noncontig_memory(fh, base + 50000LL * t_size);
    return 0;
}

static void check_readback(MPI_File fh)
{
    /* Read while the writes may still be buffered: the new data must be seen. */
    unsigned char *r = malloc(BLOCK), *e = malloc(BLOCK);
    long long off = (long long)t_rank * BLOCK;
    fill(e, off, BLOCK, 1);
    fill(e + 1000, off + 1000, 5000, 3);
    MPI_Status st;
    MPI_OK(MPI_File_read_at(fh, off, r, BLOCK, MPI_BYTE, &st));
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    CHECK(n == BLOCK && memcmp(r, e, BLOCK) == 0, "read back of buffered writes differs (n=%d)", n);
    free(r);
    free(e);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    const char *mode = argc > 2 ? argv[2] : "write";
    MPI_File fh;
    int amode = MPI_MODE_CREATE | MPI_MODE_RDWR;

    if (!strcmp(mode, "deferfail")) {
        int rc = MPI_File_open(MPI_COMM_WORLD, argv[1], amode, MPI_INFO_NULL, &fh);
        CHECK(rc == MPI_SUCCESS, "deferred open should succeed: %s", t_errstr(rc));
        if (rc == MPI_SUCCESS) {
            unsigned char b[100] = {0};
            int w = MPI_File_write_at(fh, 0, b, 100, MPI_BYTE, MPI_STATUS_IGNORE);
            int s = MPI_File_sync(fh);
            int c = MPI_File_close(&fh);
            int first = w != MPI_SUCCESS ? w : s != MPI_SUCCESS ? s : c;
            if (t_rank == 0)
                printf("write=%d sync=%d close=%d class=%d no_such_file=%d msg=%s\n", t_class(w),
                       t_class(s), t_class(c), t_class(first),
                       t_class(first) == MPI_ERR_NO_SUCH_FILE, t_errstr(first));
            CHECK(first != MPI_SUCCESS, "the failed open was never reported");
        }
        return t_finish();
    }

    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], amode, MPI_INFO_NULL, &fh));
    if (!strcmp(mode, "kill")) {
        wait_line("OPENED");
        write_all_kinds(fh, 0);
        int s = MPI_File_sync(fh);
        int c = MPI_File_close(&fh);
        if (t_rank == 0)
            printf("sync_class=%d close_class=%d io=%d msg=%s\n", t_class(s), t_class(c),
                   t_class(s) == MPI_ERR_IO, t_errstr(s));
        CHECK(s != MPI_SUCCESS || c != MPI_SUCCESS, "a dead server went unreported");
        int any = 0;
        MPI_Allreduce(&t_fail, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        int frc = MPI_Finalize();
        if (t_rank == 0)
            printf("finalize=%d\n%s\n", frc, any ? "FAILED" : "OK");
        return any;
    }
    write_all_kinds(fh, 1);
    check_readback(fh);
    if (!strcmp(mode, "sync")) {
        MPI_OK(MPI_File_sync(fh));
        MPI_Barrier(MPI_COMM_WORLD);
        wait_line("SYNCED");
    }
    MPI_OK(MPI_File_close(&fh));
    return t_finish();
}
