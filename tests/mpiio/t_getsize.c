/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* MPI_File_get_size where HDF5 asks for it: as the first call after open (rfs answers from the
 * OPEN reply when writes return early, mpiio/manage.c), after every rank wrote and met at
 * MPI_Barrier, after another rank extended the file behind a barrier that came before any
 * other call on the file, after set_size, preallocate and a truncate() by name (the POSIX
 * interposer), and through MPI_MODE_APPEND's starting position. Every answer must
 * be the one the MPI library's own MPI-IO gives on a local file.
 *
 * Usage: t_getsize FILE */
#include "t_common.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define BLK 4096

static MPI_Offset size_of(MPI_File fh)
{
    MPI_Offset s = -1;
    MPI_OK(MPI_File_get_size(fh, &s));
    return s;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    (void)argc;
    const char *name = argv[1];
    MPI_File fh;
    unsigned char buf[BLK];
    for (int i = 0; i < BLK; i++)
        buf[i] = t_pat(i, t_rank);

    /* a new file: empty, asked first thing */
    MPI_OK(
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_Offset s = size_of(fh);
    CHECK(s == 0, "new file: get_size right after open is %lld, not 0", (long long)s);
    /* every rank has asked before anyone writes (a reduction, not a barrier: MPI_Barrier would
     * make rfs ask the server) */
    int one = 1, all = 0;
    MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_OK(MPI_File_write_at(fh, (MPI_Offset)t_rank * BLK, buf, BLK, MPI_BYTE, MPI_STATUS_IGNORE));
    MPI_Barrier(MPI_COMM_WORLD);
    s = size_of(fh);
    CHECK(s == (MPI_Offset)t_size * BLK, "after every rank wrote and the barrier: %lld, not %lld",
          (long long)s, (long long)t_size * BLK);
    /* size changes: a shrink forgets the writes before it, later writes grow the file again,
     * preallocate grows it and never shrinks it */
    MPI_OK(MPI_File_set_size(fh, BLK / 2));
    s = size_of(fh);
    CHECK(s == BLK / 2, "after set_size(%d): %lld", BLK / 2, (long long)s);
    MPI_Barrier(MPI_COMM_WORLD);
    if (t_rank == t_size - 1)
        MPI_OK(MPI_File_write_at(fh, 3 * BLK, buf, 10, MPI_BYTE, MPI_STATUS_IGNORE));
    MPI_Barrier(MPI_COMM_WORLD);
    s = size_of(fh);
    CHECK(s == 3 * BLK + 10, "written after set_size: %lld, not %d", (long long)s, 3 * BLK + 10);
    MPI_OK(MPI_File_preallocate(fh, 2 * BLK));
    s = size_of(fh);
    CHECK(s == 3 * BLK + 10, "preallocate below the size: %lld, not %d", (long long)s,
          3 * BLK + 10);
    MPI_OK(MPI_File_preallocate(fh, (MPI_Offset)t_size * BLK + 5 * BLK));
    s = size_of(fh);
    CHECK(s == (MPI_Offset)t_size * BLK + 5 * BLK, "preallocate above the size: %lld",
          (long long)s);
    /* a truncate() by name while the file is open (the POSIX interposer serves rfs names) */
    MPI_Barrier(MPI_COMM_WORLD);
    if (t_rank == 0)
        CHECK(truncate(name, BLK) == 0, "truncate(%s): %s", name, strerror(errno));
    MPI_Barrier(MPI_COMM_WORLD);
    s = size_of(fh);
    CHECK(s == BLK, "after truncate() by name: %lld, not %d", (long long)s, BLK);
    MPI_OK(MPI_File_set_size(fh, (MPI_Offset)t_size * BLK));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_write_at(fh, (MPI_Offset)t_rank * BLK, buf, BLK, MPI_BYTE, MPI_STATUS_IGNORE));
    MPI_OK(MPI_File_close(&fh));

    /* an existing file, extended by the last rank before a barrier: rank 0's first call
     * after open comes after that barrier, so it sees the extension */
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_Offset grown = (MPI_Offset)(t_size + 1) * BLK;
    if (t_rank == t_size - 1)
        MPI_OK(MPI_File_write_at(fh, grown - 100, buf, 100, MPI_BYTE, MPI_STATUS_IGNORE));
    MPI_Barrier(MPI_COMM_WORLD);
    if (t_rank == 0) {
        s = size_of(fh);
        CHECK(s == grown, "extended behind a barrier: get_size %lld, not %lld", (long long)s,
              (long long)grown);
    }
    MPI_OK(MPI_File_close(&fh));

    /* an existing file asked first thing, then appended to */
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    s = size_of(fh);
    CHECK(s == grown, "existing file: get_size right after open is %lld, not %lld", (long long)s,
          (long long)grown);
    MPI_OK(MPI_File_close(&fh));
    MPI_OK(
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_WRONLY | MPI_MODE_APPEND, MPI_INFO_NULL, &fh));
    MPI_Offset pos = -1;
    MPI_OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == grown, "MPI_MODE_APPEND starts at %lld, not %lld", (long long)pos,
          (long long)grown);
    MPI_OK(MPI_File_close(&fh));
    return t_finish();
}
