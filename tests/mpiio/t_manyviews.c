/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Views without a lifetime limit: one handle, N set_view calls (default 100000), each followed
 * by an access through the new view, as HDF5 does for every dataset it touches. The views mix
 * plain bytes, strided vectors that come back again and again (a few distinct ones, as HDF5
 * re-sets the same selections) and views seen once (a new displacement every time), so the
 * server's view slots are reused, refilled and found again. Every rank keeps to its own lane of
 * the file (blocks of B bytes dealt round-robin to the ranks), so the final bytes do not depend
 * on the order of the ranks and the file can be compared with the MPI library's own run.
 * Every 16th access reads the block back through the same view and checks it.
 *
 * Usage: t_manyviews FILE [N] */
#include "t_common.h"

#define B 256      /* lane block, bytes */
#define NBLOCKS 64 /* blocks per lane */
#define NINTS 8    /* ints per access */

static unsigned lcg(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    long n = argc > 2 ? atol(argv[2]) : 100000;
    MPI_File fh;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                         &fh));
    long long row = (long long)t_size * B; /* bytes of one block of every lane */
    /* Strided filetypes: NINTS/k blocks of k ints, one per lane row, each resized to a row. */
    MPI_Datatype strided[4];
    for (int i = 0; i < 4; i++) {
        int k = 1 << (i % 3); /* 1, 2, 4 ints per block */
        MPI_Datatype v;
        MPI_OK(MPI_Type_vector(NINTS / k, k, (int)(row / (long long)sizeof(int)), MPI_INT, &v));
        MPI_OK(MPI_Type_create_resized(v, 0, (MPI_Aint)(row * (NINTS / k)), &strided[i]));
        MPI_OK(MPI_Type_commit(&strided[i]));
        MPI_Type_free(&v);
    }
    /* A background first: ROMIO's data sieving fills holes past the end of file with garbage,
     * so the reference would differ from us in bytes nobody wrote. */
    {
        size_t lane = (size_t)NBLOCKS * B;
        unsigned char *bg = malloc(lane);
        CHECK(bg != NULL, "out of memory");
        if (!bg)
            MPI_Abort(MPI_COMM_WORLD, 1);
        for (size_t i = 0; i < lane; i++)
            bg[i] = t_pat((long long)i, t_rank);
        MPI_Datatype lanet;
        MPI_OK(MPI_Type_vector(NBLOCKS, B, (int)row, MPI_BYTE, &lanet));
        MPI_OK(MPI_Type_commit(&lanet));
        MPI_OK(MPI_File_set_view(fh, (MPI_Offset)t_rank * B, MPI_BYTE, lanet, "native",
                                 MPI_INFO_NULL));
        MPI_OK(MPI_File_write_at_all(fh, 0, bg, (int)lane, MPI_BYTE, MPI_STATUS_IGNORE));
        MPI_Type_free(&lanet);
        free(bg);
    }
    unsigned seed = 12345; /* the same sequence on every rank: set_view is collective */
    int buf[NINTS], back[NINTS];
    long long reads = 0;
    for (long it = 0; it < n && !t_fail; it++) {
        unsigned r = lcg(&seed);
        unsigned kind = r % 8;
        long long blk = (long long)(lcg(&seed) % NBLOCKS);
        int inblk = (int)(lcg(&seed) % (B / sizeof(int) - NINTS)) * (int)sizeof(int);
        MPI_Offset disp;
        MPI_Datatype ftype;
        if (kind < 2) {
            /* plain bytes inside one block of this rank's lane */
            disp = blk * row + (long long)t_rank * B + inblk;
            ftype = MPI_BYTE;
        } else if (kind < 7) {
            /* a few recurring strided views: always the same displacement per type */
            int t = (int)(r / 8 % 4);
            disp = (long long)t_rank * B + t * (int)sizeof(int) * NINTS;
            ftype = strided[t];
        } else {
            /* a view seen once: a new displacement almost every time */
            int t = (int)(r / 8 % 4);
            disp = (blk % (NBLOCKS / 8)) * row + (long long)t_rank * B + inblk;
            ftype = strided[t];
        }
        MPI_OK(MPI_File_set_view(fh, disp, ftype == MPI_BYTE ? MPI_BYTE : MPI_INT, ftype, "native",
                                 MPI_INFO_NULL));
        for (int i = 0; i < NINTS; i++)
            buf[i] = (int)(it * 131 + i * 7 + t_rank * 1000003);
        MPI_Status st;
        int cnt = ftype == MPI_BYTE ? NINTS * (int)sizeof(int) : NINTS;
        MPI_OK(MPI_File_write_at(fh, 0, buf, cnt, ftype == MPI_BYTE ? MPI_BYTE : MPI_INT, &st));
        if (it % 16 == 0) {
            memset(back, 0, sizeof back);
            MPI_OK(MPI_File_read_at(fh, 0, back, cnt, ftype == MPI_BYTE ? MPI_BYTE : MPI_INT, &st));
            CHECK(memcmp(buf, back, sizeof buf) == 0,
                  "set_view %ld (kind %u, disp %lld): read "
                  "back differs",
                  it, kind, (long long)disp);
            reads++;
        }
    }
    for (int i = 0; i < 4; i++)
        MPI_Type_free(&strided[i]);
    MPI_OK(MPI_File_close(&fh));
    if (t_rank == 0)
        printf("t_manyviews: %ld set_view calls, %lld read back\n", n, reads);
    return t_finish();
}
