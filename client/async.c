/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Asynchronous contiguous accesses (MPI-IO on DAFS's native nonblocking I/O): every frame of
 * the access is sent from the caller's thread on the file's first connection and the call
 * returns; the connection's receiver, which reads replies anyway (and on UCX drives the
 * worker's progress), counts them in and calls the owner's done() after the last one. No thread
 * waits for the access while it runs, so any number can be in flight at the cost of a few
 * words each. On UCX a large payload goes by rendezvous from the caller's buffer: the post
 * returns before the peer fetched it, and end() makes sure it has before the buffer is given
 * back. Over TCP the send itself waits for the socket's buffer, which on a slow link is most
 * of the transfer: there the thread pool overlaps better (RFS_ASYNC_STREAMS says "anyway").
 *
 * With recovery on (rfs_retry_timeout), an access whose connection was lost is done again at
 * end(), the blocking way (rfs_pwrite/rfs_pread recover the file first); the same bytes at the
 * same offsets, so a partly applied first try does no harm. Not taken (RFS_E_UNSUPPORTED, the
 * caller uses a thread): writes that compression wants to see (a named codec; rfs_compress=auto
 * while it compresses or samples: the packed copy would have to outlive the call, and auto's
 * choice must keep its samples), accesses of several frames on a file with several streams
 * (xfer.c stripes them), a connection being replaced, and accesses of more than MAX_FRAMES
 * frames. */
#include "client/client.h"

#include "common/err.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FRAMES 4096

typedef struct aframe {
    rfs_call call;
    size_t len;
    size_t pending; /* bytes UCX has still to take from the caller's buffer or hold */
    void *hold;     /* the frame's encoded header (rfs_conn_post) */
    int started;
} aframe;

struct rfs_async {
    rfs_conn *c; /* held (rfs_pool_hold) until end: recovery may replace it in the file */
    unsigned how;
    uint8_t *buf;
    size_t len;
    uint64_t off;
    size_t nframes;
    aframe *fr;
    /* Frames not yet finished, plus one while start still sends: whoever brings it to 0
     * calls done(). */
    atomic_size_t left;
    void (*done)(void *arg);
    void *arg;
    rfs_status start_err; /* the send that failed (later frames were not sent) */
};

static void drop(rfs_async *a)
{
    if (atomic_fetch_sub(&a->left, 1) == 1)
        a->done(a->arg);
}

static void frame_done(rfs_call *call, void *arg)
{
    (void)call;
    drop(arg);
}

static int send_frame(rfs_file *f, rfs_async *a, size_t j, uint8_t *buf)
{
    aframe *fr = &a->fr[j];
    uint64_t off = a->off + (uint64_t)j * f->chunk;
    rfs_req req;
    memset(&req, 0, sizeof req);
    if (a->how & RFS_ASYNC_WRITE) {
        req.op = RFS_OP_PWRITE;
        req.u.pwrite.fh = f->fh[0];
        req.u.pwrite.off = off;
        req.data = buf + j * f->chunk;
        req.data_len = (uint32_t)fr->len;
    } else {
        req.op = RFS_OP_PREAD;
        req.u.pread.fh = f->fh[0];
        req.u.pread.off = off;
        req.u.pread.len = (uint32_t)fr->len;
        fr->call.dst = buf + j * f->chunk;
        fr->call.dst_cap = fr->len;
    }
    fr->call.on_done = frame_done;
    fr->call.on_done_arg = a;
    int rc = rfs_conn_post(a->c, &fr->call, &req, f->io_timeout_ms, &fr->pending, &fr->hold);
    if (rc)
        return rfs_fail_cause(rc, "%s", f->label);
    fr->started = 1;
    return RFS_OK;
}

int rfs_async_start(rfs_file *f, unsigned how, void *buf, size_t len, uint64_t off,
                    void (*done)(void *arg), void *arg, rfs_async **out)
{
    *out = NULL;
    if (!f || !buf || !len || !done || f->nconn < 1 || !f->chunk)
        return rfs_fail(RFS_E_INVAL, "rfs_async_start: bad argument");
    if ((how & RFS_ASYNC_WRITE) && (f->flags & RFS_O_ACCMODE) == RFS_O_RDONLY)
        return rfs_fail(RFS_E_ROFS, "%s: file was opened read-only", f->label);
    size_t n = (len + f->chunk - 1) / f->chunk;
    pthread_rwlock_rdlock(&f->rw); /* recovery does not swap connections while we send */
    rfs_conn *c = f->conn[0];
    /* A write compression would look at (a named codec; under auto, while the codec is on or a
     * sample is due) goes the threads' way, which packs it into a copy and so keeps auto's
     * choice working; the others go raw from the caller's buffer (skip, below). */
    int packs = (how & RFS_ASYNC_WRITE) && f->z && rfs_zstate_wants(f->z, len);
    /* An access of several frames on a file with several streams is striped by xfer.c's
     * stream threads, which a single connection's posts would not beat on a long fat link. */
    int striped = f->nconn > 1 && n > 1;
    if (packs || striped || n > MAX_FRAMES || f->stale[0] || rfs_conn_is_dead(c) ||
        (!c->ucx && !(how & RFS_ASYNC_STREAMS))) {
        pthread_rwlock_unlock(&f->rw);
        return rfs_fail(RFS_E_UNSUPPORTED, "%s: no native nonblocking access here", f->label);
    }
    /* A failure of an earlier windowed write belongs to the next call: this one. */
    int rc = rfs_wwin_settle(f, 0);
    rfs_async *a = rc ? NULL : calloc(1, sizeof *a);
    aframe *fr = a ? calloc(n, sizeof *fr) : NULL;
    if (!fr) {
        pthread_rwlock_unlock(&f->rw);
        free(a);
        return rc ? rc
                  : rfs_fail(RFS_E_NOMEM, "%s: out of memory for a nonblocking access", f->label);
    }
    rfs_pool_hold(c);
    a->c = c;
    a->how = how;
    a->buf = buf;
    a->len = len;
    a->off = off;
    a->nframes = n;
    a->fr = fr;
    a->done = done;
    a->arg = arg;
    atomic_init(&a->left, n + 1);
    for (size_t j = 0; j < n; j++) {
        rfs_call_init(&fr[j].call);
        fr[j].len = j + 1 < n ? f->chunk : len - j * f->chunk;
    }
    if (how & RFS_ASYNC_WRITE) {
        atomic_fetch_add(&f->writes, 1);
        rfs_zstate_skip(f->z, len); /* raw, unseen: counts toward the next sample */
    }
    *out = a;
    size_t j = 0;
    for (; j < n; j++) {
        if ((rc = send_frame(f, a, j, buf)) != RFS_OK) {
            rfs_status_save(&a->start_err, rc);
            break;
        }
    }
    pthread_rwlock_unlock(&f->rw);
    for (; j < n; j++) /* not sent: nobody will finish them */
        drop(a);
    drop(a); /* start's own count; done() may run here */
    return RFS_OK;
}

int rfs_async_end(rfs_file *f, rfs_async *a, size_t *done)
{
    rfs_status st = {RFS_OK, ""};
    size_t moved = 0;
    int short_read = 0;
    for (size_t j = 0; j < a->nframes; j++) {
        aframe *fr = &a->fr[j];
        if (!fr->started)
            continue;
        int wrc = rfs_conn_wait(a->c, &fr->call);
        /* The reply (or the connection's end) is in; a direct send may still hold the buffer
         * for a moment (its completion can follow the peer's reply). */
        int prc = rfs_conn_post_end(a->c, &fr->pending, &fr->hold);
        int rc = rfs_call_result(a->c, &fr->call, wrc, f->label);
        if (rc == RFS_OK && prc)
            rc = prc;
        if (rc == RFS_OK && (a->how & RFS_ASYNC_WRITE)) {
            uint64_t wrote = fr->call.rep.u.u64.value;
            if (wrote != fr->len)
                rc = rfs_fail(RFS_E_IO, "%s: server wrote %llu of %zu bytes", f->label,
                              (unsigned long long)wrote, fr->len);
        }
        if (rfs_status_first(&st, rc) == RFS_OK && !short_read) {
            size_t got = (a->how & RFS_ASYNC_WRITE) ? fr->len : fr->call.data_len;
            moved += got;
            short_read = got < fr->len; /* end of file: later frames add nothing */
        }
        rfs_call_destroy(&fr->call);
    }
    for (size_t j = 0; j < a->nframes; j++)
        if (!a->fr[j].started)
            rfs_call_destroy(&a->fr[j].call);
    if (st.rc == RFS_OK && a->start_err.rc)
        st = a->start_err;
    if (st.rc != RFS_OK && f->retry_ms > 0 && rfs_conn_lost(a->c)) {
        /* Lost with its connection: again, the way that recovers the file first. */
        moved = 0;
        int rc = (a->how & RFS_ASYNC_WRITE) ? rfs_pwrite(f, a->buf, a->len, a->off, &moved)
                                            : rfs_pread(f, a->buf, a->len, a->off, &moved);
        rfs_status_save(&st, rc);
    }
    rfs_pool_put(a->c);
    free(a->fr);
    free(a);
    if (done)
        *done = st.rc == RFS_OK ? moved : 0;
    return st.rc == RFS_OK ? RFS_OK : rfs_status_raise(&st);
}
