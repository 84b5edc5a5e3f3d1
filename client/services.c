/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Services for the MPI-IO layer: shared counters, byte-range locks and file views. These are
 * plain requests on the file's first stream (views: on every stream, since each stream has its
 * own server handle); a server that lacks one answers RFS_E_UNSUPPORTED, which is passed on
 * so the caller can fall back. */
#include "client/client.h"

#include "common/debug.h"
#include "common/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int one_call(rfs_file *f, rfs_req *req, rfs_call *call, int extra_ms)
{
    rfs_call_init(call);
    int rc = rfs_wwin_settle(f, 0);
    if (rc)
        return rc;
    return rfs_conn_call(f->conn[0], call, req, f->io_timeout_ms + extra_ms, f->label);
}

static int counter_once(rfs_file *f, uint32_t key, int set, int64_t delta, int64_t *old)
{
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_COUNTER;
    req.u.counter.fh = f->fh[0];
    req.u.counter.key = key;
    req.u.counter.set = set ? 1 : 0;
    req.u.counter.delta = delta;
    rfs_call call;
    int rc = one_call(f, &req, &call, 0);
    if (!rc && old)
        *old = (int64_t)call.rep.u.u64.value;
    rfs_call_destroy(&call);
    return rc;
}

static int lock_once(rfs_file *f, uint64_t off, uint64_t len, unsigned mode, int wait_ms)
{
    if (mode != RFS_LOCK_SHARED && mode != RFS_LOCK_EXCL)
        return rfs_fail(RFS_E_INVAL, "%s: lock mode %u", f->label, mode);
    if (wait_ms < 0)
        return rfs_fail(RFS_E_INVAL, "%s: negative lock wait", f->label);
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_LOCK;
    req.u.lock.fh = f->fh[0];
    req.u.lock.off = off;
    req.u.lock.len = len;
    req.u.lock.mode = mode;
    req.u.lock.wait_ms = (uint32_t)wait_ms;
    rfs_call call;
    /* The server may legitimately hold the reply for wait_ms. */
    int rc = one_call(f, &req, &call, wait_ms);
    rfs_call_destroy(&call);
    return rc;
}

static int unlock_once(rfs_file *f, uint64_t off, uint64_t len)
{
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_UNLOCK;
    req.u.unlock.fh = f->fh[0];
    req.u.unlock.off = off;
    req.u.unlock.len = len;
    rfs_call call;
    int rc = one_call(f, &req, &call, 0);
    rfs_call_destroy(&call);
    return rc;
}

static int conn_views_ok(rfs_conn *c)
{
    pthread_mutex_lock(&c->lock);
    int ok = c->views_ok;
    pthread_mutex_unlock(&c->lock);
    return ok;
}

static void mark_views_ok(rfs_conn *c)
{
    pthread_mutex_lock(&c->lock);
    c->views_ok = 1;
    pthread_mutex_unlock(&c->lock);
}

/* Caller holds f->view_mu. */
static int settle_locked(rfs_file *f, int64_t view_id)
{
    RFS_ASSERT_HELD(&f->view_mu);
    if (!f->pending_view.active || (view_id >= 0 && f->pending_view.view_id != (uint32_t)view_id))
        return RFS_OK;
    rfs_status first = {RFS_OK, ""};
    for (int s = 0; s < f->nconn; s++) {
        rfs_call *call = &f->pending_view.calls[s];
        if (f->pending_view.started[s])
            rfs_status_first(&first, rfs_call_result(f->conn[s], call,
                                                     rfs_conn_wait(f->conn[s], call), f->label));
        rfs_call_destroy(call);
    }
    f->pending_view.active = 0;
    return first.rc ? rfs_status_raise(&first) : RFS_OK;
}

int rfs_file_settle_view(rfs_file *f, int64_t view_id)
{
    pthread_mutex_lock(&f->view_mu);
    int rc = settle_locked(f, view_id);
    pthread_mutex_unlock(&f->view_mu);
    return rc;
}

static void fill_set_view(rfs_file *f, int s, rfs_req *req, uint32_t view_id, uint64_t disp,
                          const void *enc, size_t enc_len)
{
    memset(req, 0, sizeof *req);
    req->op = RFS_OP_SET_VIEW;
    req->u.set_view.fh = f->fh[s];
    req->u.set_view.view_id = view_id;
    req->u.set_view.disp = disp;
    req->data = enc;
    req->data_len = (uint32_t)enc_len;
}

static int set_view_once(rfs_file *f, uint32_t view_id, uint64_t disp, const void *ftype_enc,
                         size_t enc_len)
{
    if (view_id >= RFS_MAX_VIEWS)
        return rfs_fail(RFS_E_INVAL,
                        "%s: view id %u: ids run from 0 to %u (slots, reused by "
                        "setting a view again)",
                        f->label, view_id, RFS_MAX_VIEWS - 1);
    if (enc_len > f->chunk)
        return rfs_fail(RFS_E_TOOBIG,
                        "%s: datatype encoding of %zu bytes does not fit one frame "
                        "(%zu bytes)",
                        f->label, enc_len, f->chunk);
    pthread_mutex_lock(&f->view_mu);
    /* An earlier view's failure that no view op has collected yet is reported now. */
    int rc = settle_locked(f, -1);
    if (rc) {
        pthread_mutex_unlock(&f->view_mu);
        return rc;
    }
    int known = 1;
    for (int s = 0; s < f->nconn && known; s++)
        known = conn_views_ok(f->conn[s]);
    if (known) {
        /* The server has views: send and go on. A failure clears the view on the server, so
         * the view op that follows fails rather than use a stale view, and it reports this
         * SET_VIEW's error (rfs_file_settle_view). */
        f->pending_view.active = 1;
        f->pending_view.view_id = view_id;
        for (int s = 0; s < f->nconn; s++) {
            rfs_req req;
            fill_set_view(f, s, &req, view_id, disp, ftype_enc, enc_len);
            rfs_call_init(&f->pending_view.calls[s]);
            int src =
                rfs_conn_start(f->conn[s], &f->pending_view.calls[s], &req, NULL, f->io_timeout_ms);
            f->pending_view.started[s] = src == RFS_OK;
            if (src && !rc)
                rc = rfs_call_result(f->conn[s], &f->pending_view.calls[s], src, f->label);
        }
        if (rc) {
            rfs_status failed;
            rfs_status_save(&failed, rc);
            settle_locked(f, -1);
            rc = rfs_status_raise(&failed);
        }
        pthread_mutex_unlock(&f->view_mu);
        return rc;
    }
    /* First view on some connection: wait for the answer, so a server without views says
     * RFS_E_UNSUPPORTED here and the caller can map views itself. Every stream's handle gets
     * the view, all at once (one round trip in all). */
    rfs_req reqs[RFS_CLIENT_MAX_STREAMS];
    rfs_call calls[RFS_CLIENT_MAX_STREAMS];
    int ok[RFS_CLIENT_MAX_STREAMS];
    for (int s = 0; s < f->nconn; s++)
        fill_set_view(f, s, &reqs[s], view_id, disp, ftype_enc, enc_len);
    rc = rfs_file_fanout(f, 0, reqs, calls, ok);
    for (int s = 0; s < f->nconn; s++) {
        if (ok[s])
            mark_views_ok(f->conn[s]);
        rfs_call_destroy(&calls[s]);
    }
    pthread_mutex_unlock(&f->view_mu);
    return rc;
}

static int view_read_once(rfs_file *f, uint32_t view_id, uint64_t pos, void *buf, size_t len,
                          size_t *done)
{
    int rc = rfs_xfer_contig(f, RFS_OP_VIEW_READ, view_id, pos, buf, NULL, len, done);
    int vrc = rfs_file_settle_view(f, view_id);
    return vrc ? vrc : rc;
}

static int view_write_once(rfs_file *f, uint32_t view_id, uint64_t pos, const void *buf, size_t len,
                           size_t *done)
{
    /* Windowed, the SET_VIEW before it is collected later too (next set_view, sync, close):
     * waiting for its reply here would cost the round trip the window saves. */
    int rc = rfs_wwin_write(f, RFS_OP_VIEW_WRITE, view_id, buf, len, pos, done);
    if (rc != RFS_WWIN_DECLINED)
        return rc;
    rc = rfs_xfer_contig(f, RFS_OP_VIEW_WRITE, view_id, pos, NULL, buf, len, done);
    int vrc = rfs_file_settle_view(f, view_id);
    return vrc ? vrc : rc;
}

/* ---- the public calls: each an attempt that survives a lost connection (recover.c) ---- */

static int run_attempts(rfs_file *f, unsigned how, int (*op)(rfs_file *, void *), void *ctx)
{
    rfs_attempt a;
    int rc;
    rfs_attempt_begin(f, &a, how);
    do
        rc = op(f, ctx);
    while (rfs_attempt_again(f, &a, &rc));
    return rc;
}

typedef struct counter_args {
    uint32_t key;
    int set;
    int64_t delta;
    int64_t *old;
} counter_args;

static int counter_op(rfs_file *f, void *p)
{
    counter_args *a = p;
    return counter_once(f, a->key, a->set, a->delta, a->old);
}

int rfs_counter(rfs_file *f, uint32_t key, int set, int64_t delta, int64_t *old)
{
    if (!f)
        return rfs_fail(RFS_E_INVAL, "rfs_counter: NULL file");
    counter_args a = {key, set, delta, old};
    /* A fetch-and-add whose reply was lost may have happened: it is not repeated. Setting the
     * value is. */
    return run_attempts(f, set ? RFS_ATTEMPT_RETRY : rfs_attempt_how(RFS_OP_COUNTER), counter_op,
                        &a);
}

typedef struct lock_args {
    uint64_t off, len;
    unsigned mode;
    int wait_ms;
} lock_args;

/* Held locks are remembered so that recovery can take them again on the new session. */
static int remember_lock(rfs_file *f, const lock_args *a)
{
    if (f->nlocks == f->locks_cap) {
        size_t cap = f->locks_cap ? 2 * f->locks_cap : 8;
        void *p = realloc(f->locks, cap * sizeof *f->locks);
        if (!p)
            return rfs_fail(RFS_E_NOMEM, "%s: out of memory", f->label);
        f->locks = p;
        f->locks_cap = cap;
    }
    f->locks[f->nlocks].off = a->off;
    f->locks[f->nlocks].len = a->len;
    f->locks[f->nlocks].mode = a->mode;
    f->nlocks++;
    return RFS_OK;
}

/* An unlock ends the remembered locks inside its range (the server does the same). */
static void forget_locks(rfs_file *f, uint64_t off, uint64_t len)
{
    size_t k = 0;
    for (size_t i = 0; i < f->nlocks; i++) {
        int inside =
            f->locks[i].off >= off &&
            (len == 0 || (f->locks[i].len && f->locks[i].off + f->locks[i].len <= off + len));
        if (!inside)
            f->locks[k++] = f->locks[i];
    }
    f->nlocks = k;
}

static int lock_op(rfs_file *f, void *p)
{
    lock_args *a = p;
    int rc = lock_once(f, a->off, a->len, a->mode, a->wait_ms);
    if (!rc) {
        pthread_mutex_lock(&f->view_mu);
        rc = remember_lock(f, a);
        pthread_mutex_unlock(&f->view_mu);
    }
    return rc;
}

int rfs_lock(rfs_file *f, uint64_t off, uint64_t len, unsigned mode, int wait_ms)
{
    if (!f)
        return rfs_fail(RFS_E_INVAL, "rfs_lock: NULL file");
    lock_args a = {off, len, mode, wait_ms};
    return run_attempts(f, rfs_attempt_how(RFS_OP_LOCK), lock_op, &a);
}

static int unlock_op(rfs_file *f, void *p)
{
    lock_args *a = p;
    int rc = unlock_once(f, a->off, a->len);
    if (!rc) {
        pthread_mutex_lock(&f->view_mu);
        forget_locks(f, a->off, a->len);
        pthread_mutex_unlock(&f->view_mu);
    }
    return rc;
}

int rfs_unlock(rfs_file *f, uint64_t off, uint64_t len)
{
    if (!f)
        return rfs_fail(RFS_E_INVAL, "rfs_unlock: NULL file");
    lock_args a = {off, len, 0, 0};
    return run_attempts(f, rfs_attempt_how(RFS_OP_UNLOCK), unlock_op, &a);
}

int rfs_file_save_view(rfs_file *f, uint32_t view_id, uint64_t disp, const void *enc, size_t len)
{
    if (view_id >= RFS_MAX_VIEWS)
        return RFS_OK;
    uint8_t *copy = malloc(len);
    if (!copy)
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", f->label);
    memcpy(copy, enc, len);
    pthread_mutex_lock(&f->view_mu);
    free(f->saved_views[view_id].enc);
    f->saved_views[view_id].enc = copy;
    f->saved_views[view_id].len = len;
    f->saved_views[view_id].disp = disp;
    pthread_mutex_unlock(&f->view_mu);
    return RFS_OK;
}

void rfs_file_free_saved(rfs_file *f)
{
    for (unsigned v = 0; v < RFS_MAX_VIEWS; v++) {
        free(f->saved_views[v].enc);
        f->saved_views[v].enc = NULL;
    }
    free(f->locks);
    f->locks = NULL;
    f->nlocks = f->locks_cap = 0;
}

typedef struct view_args {
    uint32_t view_id;
    uint64_t pos;
    const void *enc;
    size_t len;
    void *rbuf;
    const void *wbuf;
    size_t *done;
} view_args;

static int set_view_op(rfs_file *f, void *p)
{
    view_args *a = p;
    return set_view_once(f, a->view_id, a->pos, a->enc, a->len);
}

int rfs_set_view(rfs_file *f, uint32_t view_id, uint64_t disp, const void *ftype_enc,
                 size_t enc_len)
{
    if (!f || !ftype_enc || enc_len == 0)
        return rfs_fail(RFS_E_INVAL, "rfs_set_view: NULL or empty argument");
    view_args a = {.view_id = view_id, .pos = disp, .enc = ftype_enc, .len = enc_len};
    int rc = run_attempts(f, rfs_attempt_how(RFS_OP_SET_VIEW), set_view_op, &a);
    /* Saved even when its reply is pending: a recovery before the reply sets it again. */
    if (!rc && f->retry_ms > 0)
        rc = rfs_file_save_view(f, view_id, disp, ftype_enc, enc_len);
    return rc;
}

static int view_read_op(rfs_file *f, void *p)
{
    view_args *a = p;
    return view_read_once(f, a->view_id, a->pos, a->rbuf, a->len, a->done);
}

int rfs_view_read(rfs_file *f, uint32_t view_id, uint64_t pos, void *buf, size_t len, size_t *done)
{
    if (done)
        *done = 0;
    if (!f || (!buf && len))
        return rfs_fail(RFS_E_INVAL, "rfs_view_read: NULL argument");
    view_args a = {.view_id = view_id, .pos = pos, .rbuf = buf, .len = len, .done = done};
    return run_attempts(f, rfs_attempt_how(RFS_OP_VIEW_READ), view_read_op, &a);
}

static int view_write_op(rfs_file *f, void *p)
{
    view_args *a = p;
    return view_write_once(f, a->view_id, a->pos, a->wbuf, a->len, a->done);
}

int rfs_view_write(rfs_file *f, uint32_t view_id, uint64_t pos, const void *buf, size_t len,
                   size_t *done)
{
    if (done)
        *done = 0;
    if (!f || (!buf && len))
        return rfs_fail(RFS_E_INVAL, "rfs_view_write: NULL argument");
    if ((f->flags & RFS_O_ACCMODE) == RFS_O_RDONLY)
        return rfs_fail(RFS_E_ROFS, "%s: file was opened read-only", f->label);
    view_args a = {.view_id = view_id, .pos = pos, .wbuf = buf, .len = len, .done = done};
    return run_attempts(f, rfs_attempt_how(RFS_OP_VIEW_WRITE), view_write_op, &a);
}
