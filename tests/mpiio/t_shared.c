/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Shared file pointer: write_ordered / read_ordered (+ split forms), write_shared /
 * read_shared, seek_shared, get_position_shared. The file holds ints whose value is their
 * index, so any chunk read through the shared pointer shows where it came from. */
#include "t_common.h"

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    MPI_File fh;
    MPI_Status st;
    int cnt;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                         &fh));
    MPI_OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));

    /* Ordered: rank r writes (r+1)*10 ints after ranks 0..r-1. */
    int mine = (t_rank + 1) * 10, start = 10 * t_rank * (t_rank + 1) / 2;
    int total = 10 * t_size * (t_size + 1) / 2;
    int *w = malloc(sizeof(int) * (size_t)(mine + total)),
        *r = malloc(sizeof(int) * (size_t)(mine + total));
    for (int i = 0; i < mine; i++)
        w[i] = start + i;
    MPI_OK(MPI_File_write_ordered(fh, w, mine, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == mine, "ordered count %d", cnt);
    MPI_Offset sp = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_get_position_shared(fh, &sp));
    /* ROMIO leaves other ranks' view of the shared pointer stale here: rfs files only. */
    int is_rfs = !strncmp(argv[1], "rfs:", 4);
    CHECK(!is_rfs || sp == total, "shared position after ordered %lld, want %d", (long long)sp,
          total);

    /* read_ordered from 0 gives each rank back its own block. */
    MPI_OK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    MPI_OK(MPI_File_read_ordered(fh, r, mine, MPI_INT, &st));
    for (int i = 0; i < mine; i++)
        CHECK(r[i] == start + i, "read_ordered %d: %d", i, r[i]);

    /* read_shared in chunks of 5: each chunk is consecutive values; all chunks distinct. */
    MPI_OK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    int nchunks = total / 5 / t_size, firsts[64];
    for (int c = 0; c < nchunks && c < 64; c++) {
        MPI_OK(MPI_File_read_shared(fh, r, 5, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(cnt == 5, "read_shared count %d", cnt);
        CHECK(r[0] % 5 == 0, "chunk start %d", r[0]);
        for (int i = 1; i < 5; i++)
            CHECK(r[i] == r[0] + i, "chunk value %d", r[i]);
        firsts[c] = r[0];
    }
    int *allf = malloc(sizeof(int) * (size_t)(nchunks * t_size + 1));
    MPI_Allgather(firsts, nchunks, MPI_INT, allf, nchunks, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < nchunks * t_size; i++)
        for (int j = i + 1; j < nchunks * t_size; j++)
            CHECK(allf[i] != allf[j], "chunk %d read twice", allf[i]);
    free(allf);

    /* write_shared: each rank appends 8 records; then check every record exists once, then
     * rewrite the region in a fixed order so the file's bytes are deterministic. */
    MPI_OK(MPI_File_seek_shared(fh, 0, MPI_SEEK_END));
    MPI_OK(MPI_File_get_position_shared(fh, &sp));
    CHECK(sp == total, "seek_shared END %lld", (long long)sp);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < 8; k++) {
        int rec[2] = {1000 + t_rank, k};
        MPI_OK(MPI_File_write_shared(fh, rec, 2, MPI_INT, &st));
    }
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    int nrec = 8 * t_size;
    int *recs = malloc(sizeof(int) * 2 * (size_t)nrec);
    MPI_OK(MPI_File_read_at(fh, total, recs, 2 * nrec, MPI_INT, &st));
    int seen[8] = {0};
    for (int i = 0; i < nrec; i++)
        if (recs[2 * i] == 1000 + t_rank && recs[2 * i + 1] >= 0 && recs[2 * i + 1] < 8)
            seen[recs[2 * i + 1]]++;
    for (int k = 0; k < 8; k++)
        CHECK(seen[k] == 1, "my record %d seen %d times", k, seen[k]);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < 8; k++) {
        int rec[2] = {1000 + t_rank, k};
        MPI_OK(MPI_File_write_at(fh, total + 2 * (t_rank * 8 + k), rec, 2, MPI_INT, &st));
    }
    free(recs);

    /* Split ordered write after the records. */
    MPI_OK(MPI_File_seek_shared(fh, total + 2 * nrec, MPI_SEEK_SET));
    for (int i = 0; i < mine; i++)
        w[i] = 5000 + start + i;
    MPI_OK(MPI_File_write_ordered_begin(fh, w, mine, MPI_INT));
    MPI_OK(MPI_File_write_ordered_end(fh, w, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == mine, "split ordered count %d", cnt);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_read_at(fh, total + 2 * nrec + start, r, mine, MPI_INT, &st));
    for (int i = 0; i < mine; i++)
        CHECK(r[i] == 5000 + start + i, "split ordered value %d", r[i]);
    free(w);
    free(r);
    MPI_OK(MPI_File_close(&fh));
    return t_finish();
}
