/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Two-phase collective writes of many rounds (rfs pipelines the aggregators' round writes,
 * docs/mpiio.md "Round trips"): every rank writes interleaved 4 KiB blocks through a vector
 * filetype, twice (the second pass over half of the first), then reads it all back with
 * read_all. Run with small cb_buffer_size hints for many rounds; the driver compares the bytes
 * with the MPI library's own result.
 *
 *   t_pipeline FILE            the test above
 *   t_pipeline FILE loop N     rewrites the same region up to N times, rank 0 printing
 *                              "WROTE k" after each; the first failing write_all ends the loop
 *                              with "ERROR class=C: message" on rank 0 (the driver kills the
 *                              server meanwhile and checks that the error comes, and no hang) */
#include "t_common.h"

#define BLK 4096
#define NBLK 96 /* blocks per rank per pass */

static MPI_Datatype filetype(void)
{
    MPI_Datatype v, t;
    MPI_Type_vector(NBLK, BLK, BLK * t_size, MPI_BYTE, &v);
    /* extent: the whole interleaved region, so pass 2 could tile after it */
    MPI_Type_create_resized(v, 0, (MPI_Aint)BLK * NBLK * t_size, &t);
    MPI_Type_commit(&t);
    MPI_Type_free(&v);
    return t;
}

static void fill(unsigned char *b, int pass)
{
    for (long long i = 0; i < (long long)BLK * NBLK; i++)
        b[i] = t_pat(i + pass * 977, t_rank + 8 * pass);
}

static int loop(const char *name, int n)
{
    MPI_File fh;
    MPI_OK(
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
    MPI_Datatype ft = filetype();
    MPI_OK(MPI_File_set_view(fh, (MPI_Offset)t_rank * BLK, MPI_BYTE, ft, "native", MPI_INFO_NULL));
    unsigned char *b = malloc((size_t)BLK * NBLK);
    fill(b, 0);
    int failed = 0;
    for (int k = 1; k <= n && !failed; k++) {
        int rc = MPI_File_write_at_all(fh, 0, b, BLK * NBLK, MPI_BYTE, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            failed = 1;
            if (t_rank == 0)
                printf("ERROR class=%d: %s\n", t_class(rc), t_errstr(rc));
        } else if (t_rank == 0) {
            printf("WROTE %d\n", k);
        }
        fflush(stdout);
        /* every rank must see the same outcome */
        int all = 0;
        MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        CHECK(all == failed, "ranks disagree on the outcome of write %d", k);
    }
    if (!failed && t_rank == 0)
        printf("NO ERROR\n");
    MPI_File_close(&fh); /* may fail too: the server is gone */
    MPI_Type_free(&ft);
    free(b);
    return t_finish();
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    if (argc >= 4 && !strcmp(argv[2], "loop"))
        return loop(argv[1], atoi(argv[3]));
    MPI_File fh;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                         &fh));
    MPI_Datatype ft = filetype();
    MPI_OK(MPI_File_set_view(fh, (MPI_Offset)t_rank * BLK, MPI_BYTE, ft, "native", MPI_INFO_NULL));
    size_t n = (size_t)BLK * NBLK;
    unsigned char *b = malloc(n), *back = malloc(n), *want = malloc(n);
    fill(b, 0);
    MPI_Status st;
    int cnt = -1;
    MPI_OK(MPI_File_write_at_all(fh, 0, b, (int)n, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == (int)n, "pass 1 count %d", cnt);
    /* pass 2 rewrites the second half of every rank's stream */
    fill(b, 1);
    MPI_OK(MPI_File_write_at_all(fh, (MPI_Offset)n / 2, b, (int)n / 2, MPI_BYTE, &st));
    MPI_OK(MPI_File_read_at_all(fh, 0, back, (int)n, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == (int)n, "read count %d", cnt);
    fill(want, 0);
    memcpy(want + n / 2, b, n / 2);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += back[i] != want[i];
    CHECK(bad == 0, "%zu bytes differ after read back", bad);
    MPI_OK(MPI_File_close(&fh));
    MPI_Type_free(&ft);
    free(b);
    free(back);
    free(want);
    return t_finish();
}
