/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Filetypes whose data lies outside [0, extent) of their tile, as HDF5 builds them for chunked
 * datasets (a struct of chunk types at their file addresses, lb > 0 or an explicit lb above the
 * first data). MPI only asks for nonnegative, nondecreasing displacements; tile k of the
 * filetype starts at disp + k * extent and every typemap entry moves with it.
 *
 *  A1  hindexed {10 B at 100, 10 B at 200} (lb 100, extent 110); rank r at disp 10r: one tile
 *      each, interleaved over the ranks, write_all/read_all.
 *  A2  the same type, disp 1000 + 400r, three tiles per rank (tile k data at 110k + 100 and
 *      110k + 200, beyond the extent of the tile).
 *  B1  struct {4 B at 0; resized(4 B, lb 0, extent 8) at 8} resized to lb 8, extent 16 (data at
 *      0 lies before lb); disp 3000 + 48r, three tiles per rank.
 *  B2  struct {4 B at 0; resized(4 B, lb 0, extent 8) at 4P} resized to lb 4P, extent 8P
 *      (P ranks); disp 4r: the ranks' tiles interleave and cover the region completely.
 *
 * The region is prefilled first (holes keep those bytes). After each collective write the
 * program reads the raw bytes through a byte view and checks every data byte landed where MPI's
 * tiling rule puts it; then it reads back through the view with read_all and independently. */
#include "t_common.h"

enum { REGION = 4096 };

static unsigned char val(int region, int rank, int i)
{
    return (unsigned char)(region * 40 + rank * 7 + i + 1);
}

/* File offsets of the data bytes of `ntiles` tiles: typemap blocks (off[j], len[j]) repeated
 * every `extent` from disp. Fills out[] with one offset per data byte, in stream order. */
static int expected_offsets(MPI_Offset disp, MPI_Aint extent, int ntiles, int nb,
                            const MPI_Aint *off, const int *len, MPI_Offset *out)
{
    int n = 0;
    for (int k = 0; k < ntiles; k++)
        for (int j = 0; j < nb; j++)
            for (int b = 0; b < len[j]; b++)
                out[n++] = disp + (MPI_Offset)k * extent + off[j] + b;
    return n;
}

/* Writes `nbytes` through the view (collectively), then checks the placement and reads back. */
static void exercise(MPI_File fh, int region, MPI_Offset disp, MPI_Datatype ft, int nbytes,
                     const MPI_Offset *where)
{
    MPI_Status st;
    int cnt = -1;
    unsigned char w[64], r[64], raw;
    for (int i = 0; i < nbytes; i++)
        w[i] = val(region, t_rank, i);
    MPI_OK(MPI_File_set_view(fh, disp, MPI_BYTE, ft, "native", MPI_INFO_NULL));
    MPI_OK(MPI_File_write_at_all(fh, 0, w, nbytes, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == nbytes, "region %d: write_all count %d", region, cnt);
    MPI_OK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_sync(fh));

    memset(r, 0, sizeof r);
    MPI_OK(MPI_File_read_at_all(fh, 0, r, nbytes, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == nbytes, "region %d: read_all count %d", region, cnt);
    CHECK(!memcmp(r, w, (size_t)nbytes), "region %d: read_all bytes differ", region);
    /* Independent read from the middle of the stream (crosses a tile boundary). */
    int half = nbytes / 2;
    memset(r, 0, sizeof r);
    MPI_OK(MPI_File_read_at(fh, half - 1, r, nbytes - half + 1, MPI_BYTE, &st));
    CHECK(!memcmp(r, w + half - 1, (size_t)(nbytes - half + 1)), "region %d: read_at bytes differ",
          region);

    /* Where did the bytes go? A byte view shows the file as it is. */
    MPI_OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    for (int i = 0; i < nbytes; i++) {
        raw = 0;
        MPI_OK(MPI_File_read_at(fh, where[i], &raw, 1, MPI_BYTE, &st));
        if (raw != w[i]) {
            CHECK(0, "region %d: data byte %d expected at file offset %lld, found 0x%02x", region,
                  i, (long long)where[i], raw);
            break;
        }
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    MPI_File fh;
    MPI_Status st;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                         &fh));

    /* Prefill: rank 0 writes a known pattern over everything the regions touch. */
    MPI_Offset total = 4 * (MPI_Offset)REGION;
    if (t_rank == 0) {
        unsigned char *fill = malloc((size_t)total);
        for (MPI_Offset i = 0; i < total; i++)
            fill[i] = (unsigned char)(0x80 | (i % 61));
        MPI_OK(MPI_File_write_at(fh, 0, fill, (int)total, MPI_BYTE, &st));
        free(fill);
    }
    MPI_OK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_sync(fh));

    MPI_Offset where[64];
    MPI_Aint lb = -1, ext = -1;

    /* A: hindexed with lb 100 > 0. */
    int hl[2] = {10, 10};
    MPI_Aint hd[2] = {100, 200};
    MPI_Datatype hind;
    MPI_Type_create_hindexed(2, hl, hd, MPI_BYTE, &hind);
    MPI_Type_commit(&hind);
    MPI_Type_get_extent(hind, &lb, &ext);
    CHECK(lb == 100 && ext == 110, "hindexed lb %ld extent %ld", (long)lb, (long)ext);
    if (t_size <= 10) {
        expected_offsets(10 * t_rank, ext, 1, 2, hd, hl, where);
        exercise(fh, 1, 10 * t_rank, hind, 20, where);
    }
    MPI_Offset d2 = REGION + 400 * (MPI_Offset)t_rank;
    expected_offsets(d2, ext, 3, 2, hd, hl, where);
    exercise(fh, 2, d2, hind, 60, where);

    /* B1: struct with an explicit lb above its first data. */
    MPI_Datatype four, four8, st1, b1;
    MPI_Type_contiguous(4, MPI_BYTE, &four);
    MPI_Type_create_resized(four, 0, 8, &four8);
    int sl[2] = {4, 1};
    MPI_Aint sd[2] = {0, 8};
    MPI_Datatype stypes[2] = {MPI_BYTE, four8};
    MPI_Type_create_struct(2, sl, sd, stypes, &st1);
    MPI_Type_create_resized(st1, 8, 16, &b1);
    MPI_Type_commit(&b1);
    MPI_Type_get_extent(b1, &lb, &ext);
    CHECK(lb == 8 && ext == 16, "struct lb %ld extent %ld", (long)lb, (long)ext);
    int bl4[2] = {4, 4};
    MPI_Offset d3 = 2 * REGION + 48 * (MPI_Offset)t_rank;
    expected_offsets(d3, ext, 3, 2, sd, bl4, where);
    exercise(fh, 3, d3, b1, 24, where);

    /* B2: the same shape scaled by the number of ranks, so the ranks interleave. */
    MPI_Datatype st2, b2;
    MPI_Aint sd2[2] = {0, 4 * (MPI_Aint)t_size};
    MPI_Type_create_struct(2, sl, sd2, stypes, &st2);
    MPI_Type_create_resized(st2, 4 * (MPI_Aint)t_size, 8 * (MPI_Aint)t_size, &b2);
    MPI_Type_commit(&b2);
    MPI_Offset d4 = 3 * REGION + 4 * (MPI_Offset)t_rank;
    expected_offsets(d4, 8 * (MPI_Aint)t_size, 4, 2, sd2, bl4, where);
    exercise(fh, 4, d4, b2, 32, where);

    MPI_OK(MPI_File_close(&fh));
    MPI_Type_free(&hind);
    MPI_Type_free(&four);
    MPI_Type_free(&four8);
    MPI_Type_free(&st1);
    MPI_Type_free(&b1);
    MPI_Type_free(&st2);
    MPI_Type_free(&b2);
    return t_finish();
}
