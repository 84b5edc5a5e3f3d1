/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Nonblocking access: iwrite_at/iread_at, iwrite/iread (individual pointer), iwrite_shared,
 * iwrite_all/iread_at_all, completed with Wait, Waitall mixed with point-to-point requests,
 * Waitany, a bounded Testsome loop, Request_free. MPI_THREAD_SINGLE on purpose. */
#include "t_common.h"

enum { B = 4096, K = 6 };

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_size);
    MPI_File fh;
    MPI_Status st, sts[K + 2];
    int cnt;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                         &fh));

    /* K explicit-offset writes of B bytes per rank + a ring exchange in the same Waitall. */
    static unsigned char w[K][B], rd[K][B];
    MPI_Request req[K + 2];
    for (int k = 0; k < K; k++) {
        MPI_Offset off = ((MPI_Offset)k * t_size + t_rank) * B;
        for (int i = 0; i < B; i++)
            w[k][i] = t_pat(off + i, t_rank);
        MPI_OK(MPI_File_iwrite_at(fh, off, w[k], B, MPI_BYTE, &req[k]));
    }
    int token = t_rank, got = -1;
    MPI_Irecv(&got, 1, MPI_INT, (t_rank + t_size - 1) % t_size, 7, MPI_COMM_WORLD, &req[K]);
    MPI_Isend(&token, 1, MPI_INT, (t_rank + 1) % t_size, 7, MPI_COMM_WORLD, &req[K + 1]);
    MPI_OK(MPI_Waitall(K + 2, req, sts));
    CHECK(got == (t_rank + t_size - 1) % t_size, "ring token %d", got);
    for (int k = 0; k < K; k++) {
        MPI_Get_count(&sts[k], MPI_BYTE, &cnt);
        CHECK(cnt == B, "iwrite_at %d count %d", k, cnt);
        CHECK(req[k] == MPI_REQUEST_NULL, "request %d freed", k);
    }
    MPI_OK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_sync(fh));

    /* Read the neighbour's blocks with iread_at + Waitany. */
    int peer = (t_rank + 1) % t_size;
    for (int k = 0; k < K; k++)
        MPI_OK(MPI_File_iread_at(fh, ((MPI_Offset)k * t_size + peer) * B, rd[k], B, MPI_BYTE,
                                 &req[k]));
    for (int done = 0; done < K; done++) {
        int idx = -1;
        MPI_OK(MPI_Waitany(K, req, &idx, &st));
        CHECK(idx >= 0 && idx < K, "waitany index %d", idx);
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        CHECK(cnt == B, "iread_at count %d", cnt);
    }
    for (int k = 0; k < K; k++)
        for (int i = 0; i < B; i++)
            if (rd[k][i] != t_pat(((MPI_Offset)k * t_size + peer) * B + i, peer)) {
                CHECK(0, "iread_at block %d byte %d", k, i);
                break;
            }

    /* Testsome loop (bounded: the I/O threads finish long before). */
    for (int k = 0; k < K; k++)
        MPI_OK(MPI_File_iread_at(fh, ((MPI_Offset)k * t_size + t_rank) * B, rd[k], B, MPI_BYTE,
                                 &req[k]));
    int left = K, idxs[K];
    for (long spins = 0; left > 0 && spins < 100000000L; spins++) {
        int outc = 0;
        MPI_OK(MPI_Testsome(K, req, &outc, idxs, sts));
        if (outc == MPI_UNDEFINED)
            break;
        left -= outc;
    }
    CHECK(left == 0, "testsome left %d", left);
    CHECK(!memcmp(rd, w, sizeof w), "testsome data");

    /* Individual pointer: two iwrites after the explicit region; pointer moves at once. */
    MPI_Offset base = (MPI_Offset)K * t_size * B;
    MPI_OK(MPI_File_seek(fh, base + (MPI_Offset)t_rank * 2 * B, MPI_SEEK_SET));
    MPI_OK(MPI_File_iwrite(fh, w[0], B, MPI_BYTE, &req[0]));
    MPI_Offset pos;
    MPI_OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == base + (MPI_Offset)t_rank * 2 * B + B, "position after iwrite %lld",
          (long long)pos);
    MPI_OK(MPI_File_iwrite(fh, w[1], B, MPI_BYTE, &req[1]));
    MPI_OK(MPI_Wait(&req[0], &st));
    /* Request_free on rfs files; the local reference waits (Open MPI's OMPIO sometimes loses a
     * write whose request was freed). */
    if (!strncmp(argv[1], "rfs:", 4))
        MPI_OK(MPI_Request_free(&req[1]));
    else
        MPI_OK(MPI_Wait(&req[1], &st));
    CHECK(req[1] == MPI_REQUEST_NULL, "request_free");

    /* Shared pointer, nonblocking: records of 8 bytes after the pointer region; each rank checks
     * its record is where the status says it went, then the region is rewritten in order. */
    MPI_Offset sbase = base + (MPI_Offset)t_size * 2 * B;
    MPI_OK(MPI_File_seek_shared(fh, sbase, MPI_SEEK_SET));
    long long rec = 1000 + t_rank;
    MPI_OK(MPI_File_iwrite_shared(fh, &rec, 1, MPI_LONG_LONG, &req[0]));
    MPI_OK(MPI_Wait(&req[0], &st));
    MPI_Get_count(&st, MPI_LONG_LONG, &cnt);
    CHECK(cnt == 1, "iwrite_shared count %d", cnt);
    MPI_OK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_sync(fh));
    long long recs[64];
    MPI_OK(MPI_File_read_at(fh, sbase, recs, t_size, MPI_LONG_LONG, &st));
    int mine = 0;
    for (int i = 0; i < t_size; i++)
        mine += recs[i] == rec;
    CHECK(mine == 1, "my shared record appears %d times", mine);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_write_at(fh, sbase + 8 * t_rank, &rec, 1, MPI_LONG_LONG, &st));

    /* Collective nonblocking. */
    MPI_Offset cbase = sbase + 8 * t_size;
    MPI_OK(MPI_File_iwrite_at_all(fh, cbase + (MPI_Offset)t_rank * B, w[2], B, MPI_BYTE, &req[0]));
    MPI_OK(MPI_Wait(&req[0], &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == B, "iwrite_at_all count %d", cnt);
    MPI_OK(MPI_File_iread_at_all(fh, cbase + (MPI_Offset)t_rank * B, rd[2], B, MPI_BYTE, &req[0]));
    int flag = 0;
    for (long spins = 0; !flag && spins < 100000000L; spins++)
        MPI_OK(MPI_Test(&req[0], &flag, &st));
    CHECK(flag && !memcmp(rd[2], w[2], B), "iread_at_all data");

    MPI_OK(MPI_File_close(&fh));

    /* After close, the freed request's data is there. */
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    MPI_OK(MPI_File_read_at(fh, base + (MPI_Offset)t_rank * 2 * B + B, rd[0], B, MPI_BYTE, &st));
    CHECK(!memcmp(rd[0], w[1], B), "request_free'd write reached the file");
    MPI_OK(MPI_File_close(&fh));
    return t_finish();
}
