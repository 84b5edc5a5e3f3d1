/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Collective access: interleaved views with write_all/read_all (two-phase when enabled),
 * explicit-offset collectives with a zero-byte participant, split collectives, noncontiguous
 * memory, reads past EOF. Hints come from RFS_HINTS in the driver. */
#include "t_common.h"

enum { BLK = 8, N = 1200 };

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    MPI_File fh;
    MPI_Status st;
    int cnt;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                         &fh));

    /* Interleaved: blocks of 8 ints round-robin over the ranks. */
    MPI_Datatype blk, ft;
    MPI_Type_contiguous(BLK, MPI_INT, &blk);
    MPI_Type_create_resized(blk, 0, (MPI_Aint)(BLK * t_size * sizeof(int)), &ft);
    MPI_Type_commit(&ft);
    MPI_OK(MPI_File_set_view(fh, (MPI_Offset)t_rank * BLK * sizeof(int), MPI_INT, ft, "native",
                             MPI_INFO_NULL));
    int *w = malloc(sizeof(int) * N), *r = malloc(sizeof(int) * (N + 100));
    for (int i = 0; i < N; i++)
        w[i] = t_rank * 100000 + i;
    MPI_OK(MPI_File_write_all(fh, w, N / 2, MPI_INT, &st));
    MPI_OK(MPI_File_write_all(fh, w + N / 2, N / 2, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == N / 2, "write_all count %d", cnt);
    MPI_OK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    /* Read with a noncontiguous memory type: every other int of a 2N buffer. */
    MPI_Datatype every2;
    MPI_Type_vector(N, 1, 2, MPI_INT, &every2);
    MPI_Type_commit(&every2);
    int *r2 = malloc(sizeof(int) * 2 * N);
    for (int i = 0; i < 2 * N; i++)
        r2[i] = -7;
    MPI_OK(MPI_File_read_all(fh, r2, 1, every2, &st));
    MPI_Get_elements(&st, MPI_INT, &cnt);
    CHECK(cnt == N, "read_all elements %d", cnt);
    for (int i = 0; i < N; i++)
        if (r2[2 * i] != w[i] || r2[2 * i + 1] != -7) {
            CHECK(0, "read_all int %d: %d", i, r2[2 * i]);
            break;
        }

    /* Past EOF: ask for 100 more ints than exist in my part of the view. */
    MPI_OK(MPI_File_read_at_all(fh, 0, r, N + 100, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    /* ROMIO's two-phase read reports the requested count even past EOF: rfs files only. */
    CHECK(strncmp(argv[1], "rfs:", 4) || cnt == N, "read_at_all past EOF count %d", cnt);

    /* Explicit offsets after the interleaved region; rank 1 contributes nothing. */
    MPI_OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MPI_Offset base = (MPI_Offset)N * t_size * sizeof(int);
    unsigned char b[3000];
    for (int i = 0; i < 3000; i++)
        b[i] = t_pat(i, t_rank);
    /* Rank r starts at base + 2000r; even ranks write 3000 bytes (overlapping the next rank's
     * first 1000), odd ranks 2000; the last rank (when there are several) contributes nothing,
     * so nothing is left unwritten in the middle. The overlaps are rewritten by the even ranks
     * in a second (split) pass so the final bytes do not depend on write order. */
    int L = t_size - 1;
    int zero = t_size > 1 && t_rank == L;
    int n1 = zero ? 0 : (t_rank % 2 ? 2000 : 3000);
    MPI_OK(MPI_File_write_at_all(fh, base + (MPI_Offset)t_rank * 2000, b, n1, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    /* Open MPI's ROMIO 3.2.1 leaves the status of a zero-byte collective unset. */
    int is_rfs = !strncmp(argv[1], "rfs:", 4);
    CHECK(cnt == n1 || (!is_rfs && n1 == 0), "write_at_all count %d", cnt);
    MPI_Barrier(MPI_COMM_WORLD);
    int n2 = (t_rank % 2 || zero) ? 0 : 3000;
    MPI_OK(MPI_File_write_at_all_begin(fh, base + (MPI_Offset)t_rank * 2000, b, n2, MPI_BYTE));
    MPI_OK(MPI_File_write_at_all_end(fh, b, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == n2 || (!is_rfs && n2 == 0), "split write count %d", cnt);
    MPI_OK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_sync(fh));
    MPI_Offset fend = base;
    for (int q = 0; q < t_size; q++) {
        int nq = (t_size > 1 && q == L) ? 0 : (q % 2 ? 2000 : 3000);
        if (nq && base + (MPI_Offset)q * 2000 + nq > fend)
            fend = base + (MPI_Offset)q * 2000 + nq;
    }
    int n = 3000;
    MPI_Offset mystart = base + (MPI_Offset)t_rank * 2000;
    int want = mystart >= fend ? 0 : (int)(fend - mystart < n ? fend - mystart : n);
    MPI_OK(MPI_File_read_at_all_begin(fh, mystart, r, n, MPI_BYTE));
    MPI_OK(MPI_File_read_at_all_end(fh, r, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    /* ROMIO's collective reads report the requested count even past EOF: rfs files only. */
    CHECK(strncmp(argv[1], "rfs:", 4) || cnt == want, "split read count %d, want %d", cnt, want);
    if (t_rank % 2 == 0 && !zero)
        CHECK(!memcmp(r, b, 3000), "even rank reads back its bytes");

    MPI_Type_free(&ft);
    MPI_Type_free(&blk);
    MPI_Type_free(&every2);
    free(w);
    free(r);
    free(r2);
    MPI_OK(MPI_File_close(&fh));
    return t_finish();
}
