/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Forgets to close: MPI_Finalize must close the file and the data must be on disk. */
#include "t_common.h"

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    MPI_File fh;
    MPI_Status st;
    unsigned char w[1000];
    for (int i = 0; i < 1000; i++)
        w[i] = t_pat((MPI_Offset)t_rank * 1000 + i, t_rank);
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                         &fh));
    MPI_Request req;
    MPI_OK(MPI_File_iwrite_at(fh, (MPI_Offset)t_rank * 1000, w, 500, MPI_BYTE, &req));
    MPI_OK(MPI_Wait(&req, &st));
    MPI_OK(MPI_File_write_at(fh, (MPI_Offset)t_rank * 1000 + 500, w + 500, 500, MPI_BYTE, &st));
    return t_finish(); /* no MPI_File_close */
}
