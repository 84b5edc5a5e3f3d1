/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* A local file and the given file at once: the local one passes through to the MPI library
 * untouched while rfs handles go to rfs; requests of both kinds in one Waitall. argv[2]: a
 * local scratch path. */
#include "t_common.h"

enum { B = 2048 };

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    if (argc < 3) {
        fprintf(stderr, "usage: t_mixed FILE LOCALSCRATCH\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_File out, loc;
    MPI_Status st[2];
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[2], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                         &loc));
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                         &out));
    CHECK(loc != out, "distinct handles");
    unsigned char w[B], r[B];
    for (int i = 0; i < B; i++)
        w[i] = t_pat((MPI_Offset)t_rank * B + i, t_rank);
    /* Local: collective write; then copy through memory into the target with nonblocking I/O on
     * both files in one Waitall. */
    MPI_OK(MPI_File_write_at_all(loc, (MPI_Offset)t_rank * B, w, B, MPI_BYTE, &st[0]));
    MPI_OK(MPI_File_read_at(loc, (MPI_Offset)t_rank * B, r, B, MPI_BYTE, &st[0]));
    CHECK(!memcmp(r, w, B), "local read back");
    MPI_Request req[2];
    unsigned char again[B];
    MPI_OK(MPI_File_iwrite_at(out, (MPI_Offset)t_rank * B, r, B, MPI_BYTE, &req[0]));
    MPI_OK(MPI_File_iread_at(loc, (MPI_Offset)t_rank * B, again, B, MPI_BYTE, &req[1]));
    MPI_OK(MPI_Waitall(2, req, st));
    int c0, c1;
    MPI_Get_count(&st[0], MPI_BYTE, &c0);
    MPI_Get_count(&st[1], MPI_BYTE, &c1);
    CHECK(c0 == B && c1 == B, "counts %d %d", c0, c1);
    CHECK(!memcmp(again, w, B), "local iread");
    MPI_Offset ls, os;
    MPI_OK(MPI_File_sync(out));
    MPI_OK(MPI_File_sync(loc));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_get_size(loc, &ls));
    MPI_OK(MPI_File_get_size(out, &os));
    CHECK(ls == (MPI_Offset)t_size * B && os == ls, "sizes %lld %lld", (long long)ls,
          (long long)os);
    int amode;
    MPI_OK(MPI_File_get_amode(loc, &amode));
    CHECK(amode == (MPI_MODE_CREATE | MPI_MODE_RDWR), "local amode");
    MPI_OK(MPI_File_close(&loc));
    MPI_OK(MPI_File_close(&out));
    return t_finish();
}
