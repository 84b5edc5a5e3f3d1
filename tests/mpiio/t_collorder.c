/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Collective writes that return before the server answered the aggregator (lazy barriers):
 * each round every rank writes its blocks, interleaved with the other ranks' (so two-phase
 * aggregation carries them over an aggregator's connection), then at once, with no sync or
 * barrier,
 *  - reads its own blocks back independently: its collective write comes first (a process sees
 *    its own writes in program order, MPI's sequential consistency for one file handle);
 *  - rewrites its first block independently and reads it back: the aggregator's write of the
 *    same bytes, possibly still unanswered, must not land after it;
 * and the next round's collective write covers the rewritten block again, so an independent
 * write must not land after a later collective one either. At the end, after
 * sync-barrier-sync, every rank checks every other rank's blocks. The pattern of each round
 * differs, so any reordering leaves a wrong byte.
 *
 * Usage: t_collorder FILE [ROUNDS] */
#include "t_common.h"

#define BLK 16384
#define PER_RANK 4

static unsigned char val(long long off, int round, int indep)
{
    return t_pat(off, round * 2 + indep);
}

static void fill(unsigned char *p, long long off, int round, int indep)
{
    for (int i = 0; i < BLK; i++)
        p[i] = val(off + i, round, indep);
}

/* The first wrong byte of a block at off, or -1. */
static int first_wrong(const unsigned char *p, long long off, int round, int indep)
{
    for (int i = 0; i < BLK; i++)
        if (p[i] != val(off + i, round, indep))
            return i;
    return -1;
}

static MPI_Offset block_off(int rank, int k)
{
    return ((MPI_Offset)k * t_size + rank) * BLK;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    int rounds = argc > 2 ? atoi(argv[2]) : 40;
    MPI_File fh;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                         &fh));
    /* the view: this rank's PER_RANK blocks, every t_size-th block of the file */
    MPI_Datatype blocks;
    MPI_Type_vector(PER_RANK, BLK, BLK * t_size, MPI_BYTE, &blocks);
    MPI_Type_commit(&blocks);
    MPI_Datatype filetype;
    MPI_Type_create_resized(blocks, 0, (MPI_Aint)BLK * t_size * PER_RANK, &filetype);
    MPI_Type_commit(&filetype);
    MPI_OK(MPI_File_set_view(fh, (MPI_Offset)t_rank * BLK, MPI_BYTE, filetype, "native",
                             MPI_INFO_NULL));
    unsigned char *mine = malloc((size_t)BLK * PER_RANK), *back = malloc(BLK);
    for (int r = 0; r < rounds && !t_fail; r++) {
        for (int k = 0; k < PER_RANK; k++)
            fill(mine + (size_t)k * BLK, block_off(t_rank, k), r, 0);
        MPI_OK(MPI_File_write_at_all(fh, 0, mine, BLK * PER_RANK, MPI_BYTE, MPI_STATUS_IGNORE));
        /* its own blocks, right away, through the byte view of the whole file */
        MPI_OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
        for (int k = 1; k < PER_RANK; k++) {
            MPI_OK(
                MPI_File_read_at(fh, block_off(t_rank, k), back, BLK, MPI_BYTE, MPI_STATUS_IGNORE));
            int at = first_wrong(back, block_off(t_rank, k), r, 0);
            CHECK(at < 0, "round %d: block %d read right after the collective write: byte %d", r, k,
                  at);
        }
        fill(back, block_off(t_rank, 0), r, 1);
        MPI_OK(MPI_File_write_at(fh, block_off(t_rank, 0), back, BLK, MPI_BYTE, MPI_STATUS_IGNORE));
        memset(back, 0, BLK);
        MPI_OK(MPI_File_read_at(fh, block_off(t_rank, 0), back, BLK, MPI_BYTE, MPI_STATUS_IGNORE));
        int at = first_wrong(back, block_off(t_rank, 0), r, 1);
        CHECK(at < 0, "round %d: block 0 rewritten after the collective write reads wrong at %d", r,
              at);
        MPI_OK(MPI_File_set_view(fh, (MPI_Offset)t_rank * BLK, MPI_BYTE, filetype, "native",
                                 MPI_INFO_NULL));
    }
    /* sync-barrier-sync, then every block of every rank */
    MPI_OK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_sync(fh));
    MPI_OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    for (int w = 0; w < t_size && !t_fail; w++)
        for (int k = 0; k < PER_RANK; k++) {
            MPI_OK(MPI_File_read_at(fh, block_off(w, k), back, BLK, MPI_BYTE, MPI_STATUS_IGNORE));
            int wrong = first_wrong(back, block_off(w, k), rounds - 1, k == 0);
            CHECK(wrong < 0, "rank %d's block %d reads wrong at byte %d after sync-barrier-sync", w,
                  k, wrong);
        }
    MPI_OK(MPI_File_close(&fh));
    MPI_Type_free(&filetype);
    MPI_Type_free(&blocks);
    free(mine);
    free(back);
    return t_finish();
}
