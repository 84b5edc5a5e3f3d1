/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Open and the shared file pointer, where rfs saves round trips (docs/mpiio.md "Round trips"):
 *  - MPI_MODE_CREATE without EXCL: all ranks create at once; one file holds everybody's bytes.
 *  - MPI_MODE_EXCL on an existing file: every rank fails with MPI_ERR_FILE_EXISTS; on a new
 *    file exactly one open wins and all ranks get a handle.
 *  - MPI_MODE_APPEND: both file pointers start at the end of file.
 *  - set_view puts the shared pointer back to 0, whether or not it was moved, many times over
 *    (more views than rfs has fresh counter keys per open: the fallback reset is exercised).
 * FILE is the main file; FILE.excl is made and removed here. The main file ends up holding:
 * 64 bytes per rank (the create test), then 8 bytes per rank appended with write_shared, then
 * the shared-pointer test's ints. */
#include "t_common.h"

#define BLOCK 64
/* Views 1..59 that follow a moved pointer: 40, more than the 32 fresh keys rfs takes per open,
 * so its fallback (rank 0 resets the counter) runs too. */
#define VIEWS 60

/* ROMIO may report a stale shared pointer on other ranks after an ordered access
 * (docs/mpiio.md): those checks are for rfs files only. */
static int is_rfs;

static void create_all(const char *name)
{
    MPI_File fh;
    /* every rank creates the same new file at once */
    MPI_OK(
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
    unsigned char b[BLOCK];
    for (int i = 0; i < BLOCK; i++)
        b[i] = t_pat((long long)t_rank * BLOCK + i, t_rank);
    MPI_OK(
        MPI_File_write_at(fh, (MPI_Offset)t_rank * BLOCK, b, BLOCK, MPI_BYTE, MPI_STATUS_IGNORE));
    MPI_OK(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    /* one file with everybody's block */
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    MPI_Offset size = -1;
    MPI_OK(MPI_File_get_size(fh, &size));
    CHECK(size == (MPI_Offset)t_size * BLOCK, "size after concurrent create %lld", (long long)size);
    unsigned char *all = malloc((size_t)t_size * BLOCK);
    MPI_OK(MPI_File_read_at(fh, 0, all, t_size * BLOCK, MPI_BYTE, MPI_STATUS_IGNORE));
    for (int w = 0; w < t_size; w++)
        for (int i = 0; i < BLOCK; i++)
            CHECK(all[w * BLOCK + i] == t_pat((long long)w * BLOCK + i, w), "block %d byte %d", w,
                  i);
    free(all);
    MPI_OK(MPI_File_close(&fh));
}

static void exclusive(const char *name)
{
    char ex[4200];
    snprintf(ex, sizeof ex, "%s.excl", name);
    MPI_File fh;
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    if (t_rank == 0)
        MPI_File_delete(ex, MPI_INFO_NULL); /* may not exist */
    MPI_Barrier(MPI_COMM_WORLD);
    /* a new file: exactly one create wins, everybody gets a handle */
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, ex, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY,
                         MPI_INFO_NULL, &fh));
    MPI_OK(MPI_File_write_at(fh, t_rank, "x", 1, MPI_BYTE, MPI_STATUS_IGNORE));
    MPI_OK(MPI_File_close(&fh));
    /* it exists now: every rank fails with MPI_ERR_FILE_EXISTS, and gets no handle */
    fh = MPI_FILE_NULL;
    int rc = MPI_File_open(MPI_COMM_WORLD, ex, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY,
                           MPI_INFO_NULL, &fh);
    CHECK(rc != MPI_SUCCESS && t_class(rc) == MPI_ERR_FILE_EXISTS, "EXCL on an existing file: %s",
          rc == MPI_SUCCESS ? "success" : t_errstr(rc));
    CHECK(rc == MPI_SUCCESS || fh == MPI_FILE_NULL, "failed open left a handle");
    if (rc == MPI_SUCCESS)
        MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    if (t_rank == 0)
        MPI_OK(MPI_File_delete(ex, MPI_INFO_NULL));
}

static void append(const char *name)
{
    MPI_File fh;
    MPI_OK(
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_WRONLY | MPI_MODE_APPEND, MPI_INFO_NULL, &fh));
    MPI_Offset end = (MPI_Offset)t_size * BLOCK, pos = -1, spos = -1;
    MPI_OK(MPI_File_get_position(fh, &pos));
    MPI_OK(MPI_File_get_position_shared(fh, &spos));
    CHECK(pos == end, "APPEND individual pointer %lld, want %lld", (long long)pos, (long long)end);
    CHECK(spos == end, "APPEND shared pointer %lld, want %lld", (long long)spos, (long long)end);
    MPI_Barrier(MPI_COMM_WORLD); /* everyone has looked before anyone moves it */
    /* ordered so the bytes are the same on every MPI: rank r's 8 bytes at end + 8r */
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(0xA0 + t_rank);
    MPI_OK(MPI_File_write_ordered(fh, b, 8, MPI_BYTE, MPI_STATUS_IGNORE));
    MPI_OK(MPI_File_get_position_shared(fh, &spos));
    CHECK(!is_rfs || spos == end + 8LL * t_size, "shared pointer after append %lld",
          (long long)spos);
    MPI_OK(MPI_File_close(&fh));
}

static void shared_after_views(const char *name)
{
    MPI_File fh;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_Offset base = (MPI_Offset)t_size * (BLOCK + 8), sp = -1;
    for (int v = 0; v < VIEWS; v++) {
        /* a view whose origin moves: ints after everything written so far */
        MPI_Offset disp = base + (MPI_Offset)v * t_size * (MPI_Offset)sizeof(int);
        /* ROMIO's ordered access may still update the pointer after another rank entered
         * set_view: the barrier keeps the local reference run valid */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_OK(MPI_File_set_view(fh, disp, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
        MPI_OK(MPI_File_get_position_shared(fh, &sp));
        CHECK(sp == 0, "view %d: shared pointer %lld after set_view", v, (long long)sp);
        MPI_Barrier(MPI_COMM_WORLD);
        if (v % 3 == 2)
            continue; /* a view where nobody moves the pointer */
        /* every rank takes one int through the shared pointer; ordered, so the bytes are
         * deterministic: rank r's value at index r */
        int val = v * 1000 + t_rank;
        MPI_OK(MPI_File_write_ordered(fh, &val, 1, MPI_INT, MPI_STATUS_IGNORE));
        MPI_OK(MPI_File_get_position_shared(fh, &sp));
        CHECK(!is_rfs || sp == t_size, "view %d: shared pointer %lld after write_ordered", v,
              (long long)sp);
    }
    /* seek_shared and then set_view: back to 0 again */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_seek_shared(fh, 5, MPI_SEEK_SET));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_set_view(fh, base, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    MPI_OK(MPI_File_get_position_shared(fh, &sp));
    CHECK(sp == 0, "shared pointer %lld after seek_shared + set_view", (long long)sp);
    /* the ints landed where each view put them */
    int got[VIEWS * 64];
    int n = VIEWS * t_size;
    if (n <= VIEWS * 64) {
        MPI_OK(MPI_File_read_at(fh, 0, got, n, MPI_INT, MPI_STATUS_IGNORE));
        for (int v = 0; v < VIEWS; v++)
            for (int r = 0; r < t_size; r++)
                if (v % 3 != 2)
                    CHECK(got[v * t_size + r] == v * 1000 + r, "view %d rank %d: %d", v, r,
                          got[v * t_size + r]);
    }
    MPI_OK(MPI_File_close(&fh));
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    is_rfs = !strncmp(argv[1], "rfs:", 4);
    if (t_rank == 0) {
        MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
        MPI_File_delete(argv[1], MPI_INFO_NULL); /* start from no file */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    create_all(argv[1]);
    exclusive(argv[1]);
    append(argv[1]);
    shared_after_views(argv[1]);
    return t_finish();
}
