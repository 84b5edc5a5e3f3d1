/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The collaborative cache seen from MPI-IO when a rank is killed (tests/e2e/test_ccache_mpi.py).
 *
 *   t_ccache FILE kill   Every rank writes its interleaved 1000-byte pieces of a region with
 *                        writer id 1, then sync-barrier-sync: rank 0 prints "SYNCED" (every
 *                        rank's bytes are acknowledged). Then every rank writes the same pieces
 *                        with writer id 2 (cached, not synced), a barrier, and rank 1 kills
 *                        itself with SIGKILL. The process manager ends the job; the test checks
 *                        that every byte of the region on the server is writer 1's or 2's:
 *                        nothing acknowledged was lost.
 */
#include "t_common.h"

#include <signal.h>

#define PIECE 1000
#define PIECES 64 /* per rank */

static void write_pieces(MPI_File fh, int k)
{
    unsigned char buf[PIECE];
    for (int i = 0; i < PIECES; i++) {
        MPI_Offset off = ((MPI_Offset)i * t_size + t_rank) * PIECE;
        for (int b = 0; b < PIECE; b++)
            buf[b] = t_pat(off + b, k);
        MPI_OK(MPI_File_write_at(fh, off, buf, PIECE, MPI_BYTE, MPI_STATUS_IGNORE));
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    const char *mode = argc > 2 ? argv[2] : "kill";
    CHECK(!strcmp(mode, "kill"), "unknown mode %s", mode);
    CHECK(t_size >= 2, "needs 2 ranks");
    MPI_File fh;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                         &fh));
    write_pieces(fh, 1);
    MPI_OK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_sync(fh));
    if (t_rank == 0) {
        printf("SYNCED\n");
        fflush(stdout);
    }
    write_pieces(fh, 2);
    MPI_Barrier(MPI_COMM_WORLD);
    if (t_rank == 1)
        raise(SIGKILL);
    /* The others may or may not get this far before the process manager ends them. */
    int rc = MPI_File_sync(fh);
    printf("rank %d: sync after the kill: %d\n", t_rank, rc);
    fflush(stdout);
    MPI_File_close(&fh);
    return t_finish();
}
