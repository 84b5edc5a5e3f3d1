/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* An ordinary MPI-IO program, for running with a librfs-mpiio.so built for the other MPI
 * preloaded (mpiio/mismatch.c) and under `rfs run`:
 *
 *   t_wrongmpi FILE [RFSNAME]
 *
 * Every rank writes BLOCK bytes t_pat(i, 0) at rank * BLOCK of FILE collectively and reads them
 * back. With RFSNAME, it also opens that name and expects MPI_File_open to return an error
 * (the MPI library has no rfs), printing "rfs name refused: MESSAGE"; a crash fails the test. */
#include "t_common.h"

#define BLOCK 4096

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    MPI_File fh;
    unsigned char b[BLOCK], r[BLOCK];
    long long base = (long long)t_rank * BLOCK;
    for (int i = 0; i < BLOCK; i++)
        b[i] = t_pat(base + i, 0);
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                         &fh));
    MPI_OK(MPI_File_write_at_all(fh, base, b, BLOCK, MPI_BYTE, MPI_STATUS_IGNORE));
    MPI_OK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_read_at_all(fh, base, r, BLOCK, MPI_BYTE, MPI_STATUS_IGNORE));
    CHECK(memcmp(b, r, BLOCK) == 0, "read back differs");
    MPI_OK(MPI_File_close(&fh));
    if (argc > 2) {
        MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
        int rc = MPI_File_open(MPI_COMM_WORLD, argv[2], MPI_MODE_CREATE | MPI_MODE_WRONLY,
                               MPI_INFO_NULL, &fh);
        CHECK(rc != MPI_SUCCESS, "%s opened without rfs", argv[2]);
        if (rc == MPI_SUCCESS)
            MPI_File_close(&fh);
        else if (t_rank == 0)
            printf("rfs name refused: %s\n", t_errstr(rc));
    }
    return t_finish();
}
