/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Write-behind seen from MPI-IO (tests/e2e/test_wbehind_mpi.py).
 *
 *   t_wbehind FILE sbs ROUNDS   Round k: every rank writes its interleaved 1000-byte pieces of
 *                               a region (FLASH-IO-like, explicit offsets, some through a
 *                               strided view) with writer id k, reads one of its own pieces
 *                               back at once, then sync-barrier-sync, and every rank checks
 *                               every byte of the region: each round overwrites the last, so a
 *                               byte not yet written through would show the older round.
 *   t_wbehind FILE badopen      Three opens of FILE.nodir/x (a missing directory) for writing
 *                               fail on every rank with MPI_ERR_NO_SUCH_FILE and the server's
 *                               message (write-behind's segments are made during the network
 *                               open, and freed again), then one sbs round on FILE.
 *   t_wbehind FILE atomic       Atomic mode: each rank writes its piece and, after a barrier,
 *                               every rank reads every piece without any sync; then atomic
 *                               mode off and one more buffered round with sync-barrier-sync.
 */
#include "t_common.h"

#define PIECE 1000
#define PIECES 64 /* per rank */

static void write_round(MPI_File fh, int k, unsigned char *buf)
{
    /* Half at explicit offsets, half through a view of every size-th piece. */
    for (int i = 0; i < PIECES / 2; i++) {
        MPI_Offset off = ((MPI_Offset)i * t_size + t_rank) * PIECE;
        for (int b = 0; b < PIECE; b++)
            buf[b] = t_pat(off + b, k);
        MPI_OK(MPI_File_write_at(fh, off, buf, PIECE, MPI_BYTE, MPI_STATUS_IGNORE));
    }
    MPI_Datatype piece, ft;
    MPI_Type_contiguous(PIECE, MPI_BYTE, &piece);
    MPI_Type_create_resized(piece, 0, (MPI_Aint)t_size * PIECE, &ft);
    MPI_Type_commit(&ft);
    MPI_Offset disp = ((MPI_Offset)(PIECES / 2) * t_size + t_rank) * PIECE;
    MPI_OK(MPI_File_set_view(fh, disp, MPI_BYTE, ft, "native", MPI_INFO_NULL));
    unsigned char *all = malloc((size_t)PIECE * PIECES / 2);
    for (int i = 0; i < PIECES / 2; i++) {
        MPI_Offset off = disp + (MPI_Offset)i * t_size * PIECE;
        for (int b = 0; b < PIECE; b++)
            all[(size_t)i * PIECE + (size_t)b] = t_pat(off + b, k);
    }
    MPI_OK(MPI_File_write_at(fh, 0, all, PIECE * PIECES / 2, MPI_BYTE, MPI_STATUS_IGNORE));
    free(all);
    MPI_OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MPI_Type_free(&ft);
    MPI_Type_free(&piece);
}

static void check_region(MPI_File fh, int k, const char *when)
{
    size_t n = (size_t)PIECE * PIECES * (size_t)t_size;
    unsigned char *got = malloc(n);
    MPI_Status st;
    MPI_OK(MPI_File_read_at(fh, 0, got, (int)n, MPI_BYTE, &st));
    int cnt = 0;
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == (int)n, "%s: read %d of %zu bytes", when, cnt, n);
    long long bad = 0, first = -1;
    for (size_t i = 0; i < (size_t)cnt; i++)
        if (got[i] != t_pat((long long)i, k) && bad++ == 0)
            first = (long long)i;
    CHECK(bad == 0, "%s: round %d: %lld stale bytes, first at %lld", when, k, bad, first);
    free(got);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    const char *mode = argc > 2 ? argv[2] : "sbs";
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    MPI_File fh;
    if (!strcmp(mode, "badopen")) {
        char missing[4200];
        snprintf(missing, sizeof missing, "%s.nodir/x", argv[1]);
        for (int i = 0; i < 3; i++) {
            int rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                                   MPI_INFO_NULL, &fh);
            CHECK(t_class(rc) == MPI_ERR_NO_SUCH_FILE && strstr(t_errstr(rc), ".nodir/x"),
                  "open in a missing directory: %s", t_errstr(rc));
        }
        mode = "sbs";
        rounds = 1;
    }
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                         &fh));
    unsigned char buf[PIECE];
    if (!strcmp(mode, "sbs")) {
        for (int k = 1; k <= rounds; k++) {
            write_round(fh, k, buf);
            /* this rank's own bytes are visible to it at once */
            MPI_Offset off = (MPI_Offset)t_rank * PIECE;
            MPI_OK(MPI_File_read_at(fh, off, buf, PIECE, MPI_BYTE, MPI_STATUS_IGNORE));
            int own_bad = 0;
            for (int b = 0; b < PIECE; b++)
                own_bad += buf[b] != t_pat(off + b, k);
            CHECK(own_bad == 0, "round %d: %d of this rank's own bytes not read back", k, own_bad);
            MPI_OK(MPI_File_sync(fh));
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_OK(MPI_File_sync(fh));
            check_region(fh, k, "after sync-barrier-sync");
            MPI_Barrier(MPI_COMM_WORLD); /* nobody writes round k+1 while others check k */
        }
    } else if (!strcmp(mode, "atomic")) {
        MPI_OK(MPI_File_set_atomicity(fh, 1));
        for (int i = 0; i < PIECES; i++) {
            MPI_Offset off = ((MPI_Offset)i * t_size + t_rank) * PIECE;
            for (int b = 0; b < PIECE; b++)
                buf[b] = t_pat(off + b, 1);
            MPI_OK(MPI_File_write_at(fh, off, buf, PIECE, MPI_BYTE, MPI_STATUS_IGNORE));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        check_region(fh, 1, "atomic mode, no sync");
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_OK(MPI_File_set_atomicity(fh, 0));
        write_round(fh, 2, buf);
        MPI_OK(MPI_File_sync(fh));
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_OK(MPI_File_sync(fh));
        check_region(fh, 2, "after atomic mode, sync-barrier-sync");
    } else {
        CHECK(0, "unknown mode %s", mode);
    }
    MPI_OK(MPI_File_close(&fh));
    return t_finish();
}
