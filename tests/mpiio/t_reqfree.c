/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Request_free on nonblocking file requests: the call returns at once and the I/O completes
 * in the background; sync and close still wait for it.
 *
 *   t_reqfree FILE          iwrite_at/iwrite/iread_at requests freed at once, mixed with waited
 *                           ones, a Waitall of other requests, sync, a freed write just before
 *                           close; then everything is read back and checked.
 *   t_reqfree FILE stopped  (one rank, with a driver) prints READY and reads a line from stdin
 *                           (the driver stops the server meanwhile), then iwrite_at + Request_free
 *                           and prints FREED: it can only get there if Request_free did not wait
 *                           for the I/O. Close then waits for it (after the driver resumes the
 *                           server), and the bytes are checked after reopening.
 *
 * On a local file (the reference run) requests are waited for instead of freed: Open MPI's OMPIO
 * sometimes loses a write whose request was freed. */
#include "t_common.h"

enum { B = 8192, K = 8 };

static int is_rfs;

static void release(MPI_Request *req)
{
    if (is_rfs)
        MPI_OK(MPI_Request_free(req));
    else
        MPI_OK(MPI_Wait(req, MPI_STATUS_IGNORE));
    CHECK(*req == MPI_REQUEST_NULL, "request not set to MPI_REQUEST_NULL");
}

static void fill(unsigned char *b, MPI_Offset off, int n)
{
    for (int i = 0; i < n; i++)
        b[i] = t_pat(off + i, 3);
}

static void check_range(MPI_File fh, MPI_Offset off, int n, const char *what)
{
    static unsigned char got[B], want[B];
    MPI_Status st;
    int cnt = -1;
    fill(want, off, n);
    MPI_OK(MPI_File_read_at(fh, off, got, n, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == n && !memcmp(got, want, (size_t)n), "%s at %lld: count %d or bytes differ", what,
          (long long)off, cnt);
}

static int stopped_server(const char *name)
{
    MPI_File fh;
    static unsigned char w[4 * B];
    MPI_OK(
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    /* One access first, so the connection and view are set up before the server stops. */
    check_range(fh, 0, 0, "empty read");
    printf("READY\n");
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin))
        CHECK(0, "no go line on stdin");
    MPI_Request req;
    fill(w, 0, 4 * B);
    MPI_OK(MPI_File_iwrite_at(fh, 0, w, 4 * B, MPI_BYTE, &req));
    MPI_OK(MPI_Request_free(&req));
    CHECK(req == MPI_REQUEST_NULL, "request_free");
    printf("FREED\n");
    fflush(stdout);
    MPI_OK(MPI_File_close(&fh)); /* waits for the write */
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    for (int k = 0; k < 4; k++)
        check_range(fh, (MPI_Offset)k * B, B, "freed write after close");
    MPI_OK(MPI_File_close(&fh));
    return t_finish();
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    const char *name = argv[1];
    is_rfs = !strncmp(name, "rfs:", 4);
    if (argc > 2 && !strcmp(argv[2], "stopped"))
        return stopped_server(name);

    static unsigned char w[K][B], r[B];
    MPI_File fh;
    MPI_Request req[K], other[2];
    MPI_Status st;
    MPI_OK(
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
#define OFF(k) (((MPI_Offset)(k)*t_size + t_rank) * B)

    /* Freed explicit-offset writes, one waited write among them. */
    for (int k = 0; k < K / 2; k++) {
        fill(w[k], OFF(k), B);
        MPI_OK(MPI_File_iwrite_at(fh, OFF(k), w[k], B, MPI_BYTE, &req[k]));
        if (k == 1)
            MPI_OK(MPI_Wait(&req[k], &st));
        else
            release(&req[k]);
    }
    /* Individual file pointer: it moves when the call is made, freed or not. */
    MPI_OK(MPI_File_seek(fh, OFF(K / 2), MPI_SEEK_SET));
    fill(w[K / 2], OFF(K / 2), B);
    MPI_OK(MPI_File_iwrite(fh, w[K / 2], B, MPI_BYTE, &req[K / 2]));
    release(&req[K / 2]);
    MPI_Offset pos = -1;
    MPI_OK(MPI_File_get_position(fh, &pos));
    CHECK(pos == OFF(K / 2) + B, "position after a freed iwrite %lld", (long long)pos);

    /* A Waitall over other requests (file and point-to-point) completes the freed ones too. */
    fill(w[K / 2 + 1], OFF(K / 2 + 1), B);
    MPI_OK(MPI_File_iwrite_at(fh, OFF(K / 2 + 1), w[K / 2 + 1], B, MPI_BYTE, &other[0]));
    int token = t_rank, got = -1;
    MPI_Request p2p[2];
    MPI_Irecv(&got, 1, MPI_INT, (t_rank + t_size - 1) % t_size, 5, MPI_COMM_WORLD, &p2p[0]);
    MPI_Isend(&token, 1, MPI_INT, (t_rank + 1) % t_size, 5, MPI_COMM_WORLD, &p2p[1]);
    MPI_Request all[3] = {other[0], p2p[0], p2p[1]};
    MPI_Status sts[3];
    MPI_OK(MPI_Waitall(3, all, sts));
    CHECK(got == (t_rank + t_size - 1) % t_size, "ring token %d", got);

    /* sync waits for freed requests: afterwards every rank sees every block. */
    MPI_OK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_sync(fh));
    for (int k = 0; k <= K / 2 + 1; k++)
        for (int j = 0; j < t_size; j++)
            check_range(fh, ((MPI_Offset)k * t_size + j) * B, B, "after sync");

    /* A freed read: its buffer is filled by the time the file is synced. */
    memset(r, 0, sizeof r);
    MPI_OK(MPI_File_iread_at(fh, OFF(0), r, B, MPI_BYTE, &req[0]));
    release(&req[0]);
    MPI_OK(MPI_File_sync(fh));
    CHECK(!memcmp(r, w[0], B), "freed read's buffer after sync");

    /* Freed writes right before close: close waits for them. */
    for (int k = K / 2 + 2; k < K; k++) {
        fill(w[k], OFF(k), B);
        MPI_OK(MPI_File_iwrite_at(fh, OFF(k), w[k], B, MPI_BYTE, &req[k]));
        release(&req[k]);
    }
    MPI_OK(MPI_File_close(&fh));

    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    for (int k = 0; k < K; k++)
        check_range(fh, OFF(k), B, "after close");
    MPI_OK(MPI_File_close(&fh));
    return t_finish();
}
