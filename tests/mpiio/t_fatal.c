/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* MPI_ERRORS_ARE_FATAL on rfs files: the failing call must print the rfs message (server, path,
 * cause) on stderr and abort the job, on MPICH and Open MPI alike.
 *
 *   t_fatal FILE open    MPI_FILE_NULL's handler is fatal; opening FILE.missing read-only fails.
 *   t_fatal FILE write   FILE is opened, its handler set to fatal, then a write ending past the
 *                        largest possible file offset fails.
 *   t_fatal FILE abort   like write, with MPI_ERRORS_ABORT where the MPI library has it (MPI 4).
 * Prints REACHED after the failing call, which the driver must never see. */
#include "t_common.h"

#include <stdint.h>

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    const char *mode = argc > 2 ? argv[2] : "write";
    MPI_File fh;
    MPI_Status st;
    char missing[4200];
    if (!strcmp(mode, "open")) {
        MPI_OK(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_ARE_FATAL));
        snprintf(missing, sizeof missing, "%s.missing", argv[1]);
        MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    } else {
        MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR,
                             MPI_INFO_NULL, &fh));
        MPI_Errhandler eh = MPI_ERRORS_ARE_FATAL;
#ifdef MPI_ERRORS_ABORT
        if (!strcmp(mode, "abort"))
            eh = MPI_ERRORS_ABORT;
#endif
        MPI_OK(MPI_File_set_errhandler(fh, eh));
        char c = 'x';
        /* Ending past 2^63 - 1: beyond the largest file any file system can hold. */
        MPI_File_write_at(fh, (MPI_Offset)INT64_MAX - 1, &c, 2, MPI_BYTE, &st);
    }
    printf("REACHED rank %d\n", t_rank);
    fflush(stdout);
    return t_finish();
}
