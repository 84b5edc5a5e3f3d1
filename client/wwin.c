/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The write window: small writes sent without waiting for their replies.
 *
 * A PWRITE or VIEW_WRITE that fits one frame is written into the socket and the call returns;
 * its reply is collected later. On a long link this turns a run of small writes (HDF5's metadata and
 * dataset writes: a few per dataset) from one round trip each into one stream. It is safe to
 * go on without the reply because
 *  - the frame is in the socket before the call returns, so the caller's buffer is free;
 *  - rfsd applies requests of one handle that touch the same bytes in the order they arrive
 *    (docs/design.md, rule 3), and barriers (SYNC, GET_SIZE, SET_SIZE, CLOSE, SET_VIEW) after
 *    every earlier request, so later reads, writes and size queries see these writes; windowed
 *    writes all travel on the file's first connection, where every single-frame request goes
 *    too, and a request spread over several connections first collects every windowed reply
 *    (xfer.c), so no request can overtake a windowed write on another connection;
 *  - sync and close wait for every reply and report any failure, so nothing is called durable
 *    before the server confirmed it.
 * A failure of a windowed write is reported by the next call on the file (any call), naming
 * the write; rfs.h and docs/mpiio.md say so. With recovery on (retry timeout), each write keeps a
 * copy of its bytes until its reply: a write whose connection was lost is not an error but is
 * sent again, in order, once the file is recovered (rfs_wwin_replay). The window is bounded in bytes (the option) and in
 * writes (WWIN_MAX_WRITES): a full window waits for its oldest reply. */
#include "client/client.h"

#include "common/debug.h"
#include "common/err.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WWIN_MAX_WRITES 4096u

struct rfs_wwrite {
    rfs_call call;
    uint16_t op;
    uint32_t view_id;
    uint64_t off; /* PWRITEV: its first piece's offset (for messages) */
    size_t len;
    uint8_t *copy;    /* the bytes, kept to send again after a lost connection */
    uint64_t *pieces; /* PWRITEV: its (offset, length) pairs, kept likewise */
    uint32_t npieces;
    struct rfs_wwrite *next;
};

static void lost_push(rfs_file *f, struct rfs_wwrite *w)
{
    w->next = NULL;
    if (f->ww_lost_tail)
        f->ww_lost_tail->next = w;
    else
        f->ww_lost_head = w;
    f->ww_lost_tail = w;
}

static void wwrite_free(struct rfs_wwrite *w)
{
    rfs_call_destroy(&w->call);
    free(w->copy);
    free(w->pieces);
    free(w);
}

/* Collects the oldest write's reply (waiting for it); caller holds ww_mu. */
static void collect_head(rfs_file *f)
{
    RFS_ASSERT_HELD(&f->ww_mu);
    struct rfs_wwrite *w = f->ww_head;
    int wrc = rfs_conn_wait(f->conn[0], &w->call);
    if ((wrc == RFS_E_CONN || wrc == RFS_E_TIMEOUT) && w->copy) {
        /* no reply because the connection was lost: recovery sends it again */
        f->ww_head = w->next;
        if (!f->ww_head)
            f->ww_tail = NULL;
        f->ww_bytes -= w->len;
        f->ww_count--;
        f->ww_collected++;
        lost_push(f, w);
        return;
    }
    int rc = rfs_call_result(f->conn[0], &w->call, wrc, f->label);
    if (rc && !f->ww_failed.rc) {
        f->ww_failed.rc = rc;
        snprintf(f->ww_failed.msg, sizeof f->ww_failed.msg,
                 "write of %zu bytes at %s %llu (reported late: "
                 "the write call had returned): %s",
                 w->len,
                 w->op == RFS_OP_VIEW_WRITE ? "view position"
                 : w->op == RFS_OP_PWRITEV  ? "offset (a list write from)"
                                            : "offset",
                 (unsigned long long)w->off, rfs_last_error());
    }
    f->ww_head = w->next;
    if (!f->ww_head)
        f->ww_tail = NULL;
    f->ww_bytes -= w->len;
    f->ww_count--;
    f->ww_collected++;
    wwrite_free(w);
}

/* Caller holds ww_mu. Returns the first failure not yet reported, once. */
static int take_error(rfs_file *f)
{
    RFS_ASSERT_HELD(&f->ww_mu);
    if (f->ww_lost_head)
        return rfs_fail(RFS_E_CONN, "%s: connection lost with writes to send again", f->label);
    if (!f->ww_failed.rc)
        return RFS_OK;
    int rc = rfs_status_raise(&f->ww_failed);
    f->ww_failed.rc = RFS_OK;
    return rc;
}

int rfs_wwin_settle(rfs_file *f, int all)
{
    if (!f->ww_cap)
        return RFS_OK;
    pthread_mutex_lock(&f->ww_mu);
    while (f->ww_head && (all || __atomic_load_n(&f->ww_head->call.done, __ATOMIC_ACQUIRE)))
        collect_head(f);
    int rc = take_error(f);
    pthread_mutex_unlock(&f->ww_mu);
    return rc;
}

void rfs_wwin_wait(rfs_file *f)
{
    if (!f->ww_cap)
        return;
    pthread_mutex_lock(&f->ww_mu);
    while (f->ww_head)
        collect_head(f);
    pthread_mutex_unlock(&f->ww_mu);
}

void rfs_wwin_wait_queued(rfs_file *f)
{
    if (!f->ww_cap)
        return;
    long sleep_ns = 20000;
    pthread_mutex_lock(&f->ww_mu);
    uint64_t target = f->ww_queued;
    while (f->ww_collected < target && f->ww_head) {
        if (__atomic_load_n(&f->ww_head->call.done, __ATOMIC_ACQUIRE)) {
            collect_head(f); /* answered: does not block */
            continue;
        }
        /* The receiver thread marks the reply; look again soon, without the lock. */
        pthread_mutex_unlock(&f->ww_mu);
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 1000000)
            sleep_ns *= 2;
        pthread_mutex_lock(&f->ww_mu);
    }
    pthread_mutex_unlock(&f->ww_mu);
}

uint64_t rfs_wwin_mark(rfs_file *f)
{
    if (!f->ww_cap)
        return 0;
    pthread_mutex_lock(&f->ww_mu);
    uint64_t m = f->ww_queued;
    pthread_mutex_unlock(&f->ww_mu);
    return m;
}

int rfs_wwin_answered(rfs_file *f, uint64_t mark)
{
    if (!f->ww_cap)
        return 1;
    pthread_mutex_lock(&f->ww_mu);
    while (f->ww_collected < mark && f->ww_head &&
           __atomic_load_n(&f->ww_head->call.done, __ATOMIC_ACQUIRE))
        collect_head(f);
    /* Writes lost with a connection are not in the file until recovery sends them again. */
    int ok = f->ww_collected >= mark && !f->ww_lost_head;
    pthread_mutex_unlock(&f->ww_mu);
    return ok;
}

/* Queues one frame (a PWRITE, VIEW_WRITE or PWRITEV) in the window; see rfs_wwin_write. */
static int wwin_send(rfs_file *f, uint16_t op, uint32_t view_id, const uint64_t *pieces,
                     uint32_t npieces, const void *buf, size_t len, uint64_t off, size_t *done)
{
    /* Offsets out of range are refused by the ordinary path, at the call. */
    if (!f->ww_cap || len > f->chunk || len > f->ww_cap || off > (uint64_t)INT64_MAX - len)
        return RFS_WWIN_DECLINED;
    struct rfs_wwrite *w = calloc(1, sizeof *w);
    if (!w)
        return RFS_WWIN_DECLINED; /* the ordinary path reports memory trouble itself */
    pthread_mutex_lock(&f->ww_mu);
    while (f->ww_head && (__atomic_load_n(&f->ww_head->call.done, __ATOMIC_ACQUIRE) ||
                          f->ww_bytes + len > f->ww_cap || f->ww_count >= WWIN_MAX_WRITES))
        collect_head(f);
    int rc = take_error(f);
    if (rc) {
        pthread_mutex_unlock(&f->ww_mu);
        free(w);
        return rc;
    }
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = op;
    if (op == RFS_OP_VIEW_WRITE) {
        req.u.view_write.fh = f->fh[0];
        req.u.view_write.view_id = view_id;
        req.u.view_write.pos = off;
    } else if (op == RFS_OP_PWRITEV) {
        req.u.iov.fh = f->fh[0];
        req.u.iov.count = npieces;
        req.u.iov.total = len;
    } else {
        req.u.pwrite.fh = f->fh[0];
        req.u.pwrite.off = off;
    }
    req.data = buf;
    req.data_len = (uint32_t)len;
    rfs_call_init(&w->call);
    w->op = op;
    w->view_id = view_id;
    w->off = off;
    w->len = len;
    w->npieces = npieces;
    if (f->retry_ms > 0 &&
        (!(w->copy = malloc(len ? len : 1)) ||
         (npieces && !(w->pieces = malloc((size_t)npieces * 2 * sizeof *w->pieces))))) {
        pthread_mutex_unlock(&f->ww_mu);
        wwrite_free(w);
        return RFS_WWIN_DECLINED;
    }
    if (w->copy)
        memcpy(w->copy, buf, len);
    if (w->pieces)
        memcpy(w->pieces, pieces, (size_t)npieces * 2 * sizeof *w->pieces);
    /* Started under ww_mu: writes enter the socket in the order they are queued here. */
    rfs_packed pk = {0};
    rfs_zpack(f->z, f->conn[0], buf, len, &pk);
    rc = rfs_conn_start_packed(f->conn[0], &w->call, &req, op == RFS_OP_PWRITEV ? pieces : NULL,
                               f->io_timeout_ms, &pk);
    if (rc) {
        rc = rfs_call_result(f->conn[0], &w->call, rc, f->label);
        pthread_mutex_unlock(&f->ww_mu);
        wwrite_free(w);
        return rc;
    }
    if (f->ww_tail)
        f->ww_tail->next = w;
    else
        f->ww_head = w;
    f->ww_tail = w;
    f->ww_bytes += len;
    f->ww_count++;
    f->ww_queued++;
    pthread_mutex_unlock(&f->ww_mu);
    if (done)
        *done = len;
    return RFS_OK;
}

int rfs_wwin_write(rfs_file *f, uint16_t op, uint32_t view_id, const void *buf, size_t len,
                   uint64_t off, size_t *done)
{
    return wwin_send(f, op, view_id, NULL, 0, buf, len, off, done);
}

int rfs_wwin_writev(rfs_file *f, const uint64_t *pieces, uint32_t npieces, const void *buf,
                    size_t len, size_t *done)
{
    if (!npieces)
        return RFS_WWIN_DECLINED;
    return wwin_send(f, RFS_OP_PWRITEV, 0, pieces, npieces, buf, len, pieces[0], done);
}

int rfs_wwin_replay(rfs_file *f)
{
    pthread_mutex_lock(&f->ww_mu);
    struct rfs_wwrite *w = f->ww_lost_head;
    f->ww_lost_head = f->ww_lost_tail = NULL;
    pthread_mutex_unlock(&f->ww_mu);
    while (w) {
        size_t done = 0;
        int rc = w->op == RFS_OP_PWRITEV
                     ? rfs_xfer_list(f, RFS_OP_PWRITEV, (const rfs_extent *)w->pieces, w->npieces,
                                     NULL, w->copy, &done)
                     : rfs_xfer_contig(f, w->op, w->view_id, w->off, NULL, w->copy, w->len, &done);
        if (rc) {
            /* the rest goes back, ahead of anything lost since, for the next recovery */
            rfs_status failed;
            rfs_status_save(&failed, rc);
            pthread_mutex_lock(&f->ww_mu);
            struct rfs_wwrite *last = w;
            while (last->next)
                last = last->next;
            last->next = f->ww_lost_head;
            if (!f->ww_lost_head)
                f->ww_lost_tail = last;
            f->ww_lost_head = w;
            pthread_mutex_unlock(&f->ww_mu);
            return rfs_status_raise(&failed);
        }
        struct rfs_wwrite *next = w->next;
        wwrite_free(w);
        w = next;
        f->ww_replayed++;
    }
    return RFS_OK;
}

void rfs_wwin_report(const rfs_file *f)
{
    if (f->ww_queued || f->ww_replayed)
        fprintf(stderr,
                "rfs stats %s: write window: %llu writes returned before their reply, "
                "%llu sent again after a lost connection\n",
                f->label, (unsigned long long)f->ww_queued, (unsigned long long)f->ww_replayed);
}

void rfs_wwin_replay_drop(rfs_file *f)
{
    struct rfs_wwrite *w = f->ww_lost_head;
    f->ww_lost_head = f->ww_lost_tail = NULL;
    while (w) {
        struct rfs_wwrite *next = w->next;
        wwrite_free(w);
        w = next;
    }
}
