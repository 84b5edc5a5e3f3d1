/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Writes that return before the server has them (the write window, active buffering) are
 * there once the writer has passed MPI_Barrier: each rank in turn writes a block with
 * independent calls, all meet at MPI_Barrier, and every other rank reads it right away with no
 * sync in between (what HDF5 does with chunks it fills, and programs with headers). Then each
 * rank rewrites its neighbour's block after another barrier, so writes from two ranks to the
 * same bytes land in barrier order.
 *
 * Usage: t_barrier FILE [ROUNDS] */
#include "t_common.h"

#define BLK 4096

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    int rounds = argc > 2 ? atoi(argv[2]) : 50;
    MPI_File fh;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                         &fh));
    unsigned char buf[BLK], back[BLK];
    for (int r = 0; r < rounds && !t_fail; r++) {
        int w = r % t_size;
        MPI_Offset off = (MPI_Offset)(r % 8) * BLK;
        if (t_rank == w) {
            /* many small writes, as metadata goes out */
            for (int i = 0; i < BLK; i++)
                buf[i] = t_pat(off + i, r);
            for (int k = 0; k < BLK; k += 256)
                MPI_OK(MPI_File_write_at(fh, off + k, buf + k, 256, MPI_BYTE, MPI_STATUS_IGNORE));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        memset(back, 0, sizeof back);
        MPI_OK(MPI_File_read_at(fh, off, back, BLK, MPI_BYTE, MPI_STATUS_IGNORE));
        for (int i = 0; i < BLK; i++)
            if (back[i] != t_pat(off + i, r)) {
                CHECK(0,
                      "round %d: byte %d written by rank %d before the barrier reads %u, "
                      "not %u",
                      r, i, w, back[i], t_pat(off + i, r));
                break;
            }
        /* the next writer's bytes may overlap what everyone just read */
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_OK(MPI_File_close(&fh));
    return t_finish();
}
