/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs_file: open/close and the small per-file operations.
 *
 * A file holds one server handle per stream connection (handles belong to a connection on
 * the server). With several streams the file is opened once per connection: the first OPEN
 * carries CREAT/EXCL/TRUNC, the others (side by side) open the file that now exists.
 *
 * When a file's connection dies its handles are gone with it; every operation runs as an
 * attempt (recover.c) that reconnects, fences the old session, reopens the file and runs the
 * operation again, within the retry timeout. */
#include "client/client.h"

#include "common/err.h"
#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OPEN_FLAGS_KNOWN (RFS_O_ACCMODE | RFS_O_CREAT | RFS_O_EXCL | RFS_O_TRUNC | RFS_O_APPEND)

size_t rfs_chunk_for_frame(uint32_t max_frame)
{
    /* Leave 4 KiB for headers, fixed fields and extents' bookkeeping; keep 4 KiB alignment so
     * the server's disk I/O stays page aligned for aligned transfers. */
    return ((size_t)max_frame - 4096u) & ~(size_t)4095u;
}

int rfs_file_open_stream(rfs_file *f, int s, unsigned flags, unsigned mode)
{
    rfs_call call;
    rfs_call_init(&call);
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_OPEN;
    req.u.open.path.s = f->name.path;
    req.u.open.path.len = (uint16_t)strlen(f->name.path);
    req.u.open.flags = flags;
    req.u.open.mode = mode;
    req.want_ver = 1; /* dropped for a server without versions (rfs_conn_ver_request) */
    uint64_t epoch = rfs_verbox_epoch(&f->ver);
    int rc = rfs_conn_call(f->conn[s], &call, &req, f->io_timeout_ms, f->label);
    if (!rc) {
        f->fh[s] = call.rep.u.open.fh;
        if (call.rep.has_ver)
            rfs_verbox_note(&f->ver, epoch, call.rep.ver.size, call.rep.ver.mtime_ns);
        rfs_conn_track(f->conn[s], f->fh[s], &f->ver);
    }
    rfs_call_destroy(&call);
    return rc;
}

/* The first half of rfs_file_fanout: every request sent, none waited for. started[s]: whether
 * stream s's went out (a failure to send is in *first). */
static void fanout_start(rfs_file *f, int from, rfs_req *reqs, rfs_call *calls, int *started,
                         rfs_status *first)
{
    for (int s = from; s < f->nconn; s++) {
        rfs_call_init(&calls[s]);
        int rc = rfs_conn_start(f->conn[s], &calls[s], &reqs[s], NULL, f->io_timeout_ms);
        started[s] = rc == RFS_OK;
        if (rc)
            rfs_status_first(first, rfs_call_result(f->conn[s], &calls[s], rc, f->label));
    }
}

static void fanout_wait(rfs_file *f, int from, rfs_call *calls, const int *started, int *ok,
                        rfs_status *first)
{
    for (int s = from; s < f->nconn; s++) {
        ok[s] = 0;
        if (!started[s])
            continue;
        int rc =
            rfs_call_result(f->conn[s], &calls[s], rfs_conn_wait(f->conn[s], &calls[s]), f->label);
        ok[s] = rc == RFS_OK;
        rfs_status_first(first, rc);
    }
}

int rfs_file_fanout(rfs_file *f, int from, rfs_req *reqs, rfs_call *calls, int *ok)
{
    int started[RFS_CLIENT_MAX_STREAMS] = {0};
    rfs_status first = {RFS_OK, ""};
    fanout_start(f, from, reqs, calls, started, &first);
    fanout_wait(f, from, calls, started, ok, &first);
    return first.rc ? rfs_status_raise(&first) : RFS_OK;
}

static int close_one(rfs_file *f, int s)
{
    rfs_call call;
    rfs_call_init(&call);
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_CLOSE;
    req.u.fh.fh = f->fh[s];
    int rc = rfs_conn_call(f->conn[s], &call, &req, f->io_timeout_ms, f->label);
    rfs_call_destroy(&call);
    return rc;
}

/* The server host's boot id as the session reported it (it arrives before OPEN's reply). */
static void note_boot(rfs_file *f)
{
    rfs_conn *c = f->conn[0];
    pthread_mutex_lock(&c->lock);
    if (c->session_known && c->lease_ms) {
        memcpy(f->boot, c->boot, RFS_SESSION_LEN);
        f->boot_known = 1;
    }
    pthread_mutex_unlock(&c->lock);
}

/* The OPEN on stream 0. A pooled connection may die under it (its server restarting): the
 * OPEN is sent again on fresh connections, within the retry timeout, unless it was exclusive
 * (an EXCL create that went through would now fail with EXIST). Repeating CREAT or TRUNC
 * acts as one open made a moment later. */
static int open_first(rfs_file *f, const rfs_copts *o, unsigned flags, unsigned mode)
{
    int64_t deadline = rfs_now_ns() + (int64_t)o->retry_timeout_ms * 1000000;
    for (;;) {
        int rc = rfs_file_open_stream(f, 0, flags, mode);
        if (!rc || (flags & RFS_O_EXCL) || !o->retry_timeout_ms || !rfs_conn_lost(f->conn[0]) ||
            rfs_now_ns() > deadline)
            return rc;
        rfs_status lost; /* the open's failure, if no connection comes back */
        rfs_status_save(&lost, rc);
        for (int s = 0; s < f->nconn; s++)
            rfs_pool_put(f->conn[s]);
        rfs_copts left = *o;
        left.retry_timeout_ms = (int)((deadline - rfs_now_ns()) / 1000000);
        if (left.retry_timeout_ms < 0)
            left.retry_timeout_ms = 0;
        int grc = rfs_pool_get_retry(&f->name, &left, f->nconn, f->conn, f->label);
        explicit_bzero(left.token, sizeof left.token);
        if (grc) {
            f->nconn = 0; /* nothing left to release */
            return rfs_status_raise(&lost);
        }
    }
}

static void release_conns(rfs_file *f)
{
    for (int s = 0; s < f->nconn; s++) {
        rfs_conn_untrack(f->conn[s], f->fh[s], &f->ver); /* a pooled connection lives on */
        rfs_pool_put(f->conn[s]);
    }
    f->nconn = 0;
}

/* OPEN on streams from..nconn-1, without CREAT's companions EXCL and TRUNC: sent, not waited
 * for (open_others_wait collects them). */
static void open_others_start(rfs_file *f, int from, unsigned flags, unsigned mode, rfs_req *reqs,
                              rfs_call *calls, int *started)
{
    for (int s = from; s < f->nconn; s++) {
        memset(&reqs[s], 0, sizeof reqs[s]);
        reqs[s].op = RFS_OP_OPEN;
        reqs[s].u.open.path.s = f->name.path;
        reqs[s].u.open.path.len = (uint16_t)strlen(f->name.path);
        reqs[s].u.open.flags = flags & ~(RFS_O_EXCL | RFS_O_TRUNC);
        reqs[s].u.open.mode = mode;
        rfs_call_init(&calls[s]);
        started[s] = rfs_conn_start(f->conn[s], &calls[s], &reqs[s], NULL, f->io_timeout_ms);
    }
}

/* Collects what open_others_start sent: the handles that opened are tracked (ok[s] = 1); the
 * first failure is returned with its message. */
static int open_others_wait(rfs_file *f, int from, rfs_call *calls, const int *started, int *ok)
{
    rfs_status first = {RFS_OK, ""};
    for (int s = from; s < f->nconn; s++) {
        int rc = started[s] == RFS_OK ? rfs_conn_wait(f->conn[s], &calls[s]) : started[s];
        rc = rfs_call_result(f->conn[s], &calls[s], rc, f->label);
        ok[s] = rc == RFS_OK;
        if (ok[s]) {
            f->fh[s] = calls[s].rep.u.open.fh;
            rfs_conn_track(f->conn[s], f->fh[s], &f->ver);
        } else {
            rfs_status_first(&first, rc);
        }
        rfs_call_destroy(&calls[s]);
    }
    return first.rc ? rfs_status_raise(&first) : RFS_OK;
}

/* Opens the file on every stream. Stream 0 carries the caller's flags. Unless the open is
 * exclusive, the other streams' OPENs (with CREAT, so whichever arrives first creates the
 * file) go out before stream 0's and the whole open costs one round trip; on any failure
 * the handles that opened are closed and the open is made again in order (stream 0 first,
 * then the rest side by side), which also retries a connection lost under it. An exclusive
 * open must create the file on stream 0 before the others may open it. */
static int open_all_streams(rfs_file *f, rfs_copts *o, unsigned flags, unsigned mode)
{
    rfs_req reqs[RFS_CLIENT_MAX_STREAMS];
    rfs_call calls[RFS_CLIENT_MAX_STREAMS];
    int started[RFS_CLIENT_MAX_STREAMS] = {0};
    int ok[RFS_CLIENT_MAX_STREAMS] = {0};
    if (f->nconn > 1 && !(flags & RFS_O_EXCL)) {
        open_others_start(f, 1, flags, mode, reqs, calls, started);
        rfs_status failed = {RFS_OK, ""};
        int rc0 = rfs_status_first(&failed, rfs_file_open_stream(f, 0, flags, mode));
        rfs_status_first(&failed, open_others_wait(f, 1, calls, started, ok));
        if (!failed.rc)
            return RFS_OK;
        RFS_LOGD("%s: open side by side failed (%s); opening in order", f->label, failed.msg);
        rfs_clear_error();
        for (int s = 0; s < f->nconn; s++)
            if (s == 0 ? !rc0 : ok[s]) {
                close_one(f, s);
                /* the connection outlives this attempt (pooled): it must not keep the handle */
                rfs_conn_untrack(f->conn[s], f->fh[s], &f->ver);
            }
    }
    int rc = open_first(f, o, flags, mode);
    if (rc || f->nconn == 1)
        return rc;
    open_others_start(f, 1, flags & ~RFS_O_CREAT, mode, reqs, calls, started);
    rc = open_others_wait(f, 1, calls, started, ok);
    if (rc) {
        rfs_status failed;
        rfs_status_save(&failed, rc);
        for (int s = 0; s < f->nconn; s++)
            if (s == 0 || ok[s])
                close_one(f, s);
        return rfs_status_raise(&failed);
    }
    return RFS_OK;
}

typedef struct auto_ask {
    const char *label;
    int cap;
} auto_ask;

static int auto_decide(double rtt_ms, void *ctx)
{
    auto_ask *a = ctx;
    return rfs_auto_streams_for_rtt(rtt_ms, a->label, a->cap);
}

/* The file's connections. With rfs_streams=auto, the first one's round trip says whether more
 * can pay (autostreams.c); they are dialled as soon as it is known, beside the first one's
 * handshake (dialgate.c). When the server will not take them all (its per-address limits),
 * the file makes do with those it got. */
static int open_conns(rfs_file *f, rfs_copts *o)
{
    if (o->streams_auto && o->streams > 1) {
        auto_ask a = {f->label, o->streams};
        int got = 0;
        int rc = rfs_pool_get_auto(&f->name, o, auto_decide, &a, 1, f->conn, &got, f->label);
        if (rc)
            return rc;
        f->nconn = got;
    } else {
        int want = o->streams_auto ? 1 : o->streams;
        int rc = rfs_pool_get_retry(&f->name, o, want, f->conn, f->label);
        if (rc)
            return rc;
        f->nconn = want;
    }
    f->autos.enabled = o->streams_auto && f->nconn > 1;
    return RFS_OK;
}

int rfs_open(const char *name, unsigned flags, unsigned mode, const rfs_options *opts,
             rfs_file **out)
{
    return rfs_open_in(NULL, name, flags, mode, opts, out);
}

int rfs_open_in(rfs_runtime *rt, const char *name, unsigned flags, unsigned mode,
                const rfs_options *opts, rfs_file **out)
{
    if (!out)
        return rfs_fail(RFS_E_INVAL, "rfs_open: NULL output pointer");
    *out = NULL;
    if (!name)
        return rfs_fail(RFS_E_INVAL, "rfs_open: NULL name");
    rfs_file *f = calloc(1, sizeof *f);
    if (!f)
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", name);
    pthread_mutex_init(&f->view_mu, NULL);
    pthread_mutex_init(&f->ww_mu, NULL);
    pthread_rwlock_init(&f->rw, NULL);
    rfs_auto_init(&f->autos);
    rfs_verbox_init(&f->ver);
    int rc = rfs_parse_name(name, &f->name);
    if (rc)
        goto fail;
    rfs_name_server(&f->name, f->server, sizeof f->server);
    rfs_name_label(&f->name, f->label, sizeof f->label);
    if ((flags & ~OPEN_FLAGS_KNOWN) || (flags & RFS_O_ACCMODE) == 0) {
        rc = rfs_fail(RFS_E_INVAL,
                      "%s: bad open flags 0x%x (need exactly one of RFS_O_RDONLY, "
                      "RFS_O_WRONLY, RFS_O_RDWR)",
                      f->label, flags);
        goto fail;
    }
    if (mode & ~07777u) {
        rc = rfs_fail(RFS_E_INVAL, "%s: bad mode 0%o", f->label, mode);
        goto fail;
    }
    if ((flags & RFS_O_ACCMODE) == RFS_O_RDONLY && (flags & RFS_O_TRUNC)) {
        rc = rfs_fail(RFS_E_INVAL, "%s: RFS_O_TRUNC needs write access", f->label);
        goto fail;
    }
    rfs_copts o;
    if ((rc = rfs_copts_resolve(opts, f->label, &o)))
        goto fail;
    if (rt)
        o.rt = rt;
    f->flags = flags;
    f->io_timeout_ms = o.io_timeout_ms;
    f->window = o.window;
    f->ww_cap = o.write_window;
    f->retry_ms = o.retry_timeout_ms;
    if ((rc = open_conns(f, &o)))
        goto fail;
    uint32_t mf = UINT32_MAX;
    for (int s = 0; s < f->nconn; s++) {
        uint32_t m = rfs_conn_max_frame(f->conn[s]);
        mf = m < mf ? m : mf;
    }
    f->chunk = rfs_chunk_for_frame(mf);
    if (o.zmode != RFS_Z_NONE && !(f->z = rfs_zstate_new(o.zmode, o.zlevel))) {
        release_conns(f);
        rc = rfs_fail(RFS_E_NOMEM, "%s: out of memory", f->label);
        goto fail;
    }

    if ((rc = open_all_streams(f, &o, flags, mode))) {
        release_conns(f);
        goto fail;
    }
    f->copts = o;
    explicit_bzero(o.token, sizeof o.token);
    note_boot(f);
    *out = f;
    return RFS_OK;
fail:
    explicit_bzero(o.token, sizeof o.token);
    rfs_zstate_free(f->z);
    pthread_mutex_destroy(&f->view_mu);
    pthread_mutex_destroy(&f->ww_mu);
    pthread_rwlock_destroy(&f->rw);
    rfs_auto_destroy(&f->autos);
    rfs_verbox_destroy(&f->ver);
    free(f);
    return rc;
}

static int close_once(rfs_file *f)
{
    /* Every stream's handle is closed side by side (one round trip, not one per stream), and
     * the CLOSEs go out before the windowed writes and a SET_VIEW still in flight are
     * collected: rfsd applies a CLOSE only after every earlier request on its handle
     * (docs/design.md, "barriers"), and those travel on the connections their CLOSEs follow
     * them on, so the close's round trip overlaps theirs instead of coming after it (one
     * round trip fewer for a close after writes that returned early). Their failure is still
     * the close's error, before the CLOSE's own. A connection lost meanwhile leaves the
     * windowed writes to replay: rfs_close recovers and closes again, the CLOSE then behind
     * the replayed writes. */
    rfs_req reqs[RFS_CLIENT_MAX_STREAMS];
    rfs_call calls[RFS_CLIENT_MAX_STREAMS];
    int started[RFS_CLIENT_MAX_STREAMS] = {0}, ok[RFS_CLIENT_MAX_STREAMS];
    for (int s = 0; s < f->nconn; s++) {
        memset(&reqs[s], 0, sizeof reqs[s]);
        reqs[s].op = RFS_OP_CLOSE;
        reqs[s].u.fh.fh = f->fh[s];
    }
    rfs_status closed = {RFS_OK, ""};
    fanout_start(f, 0, reqs, calls, started, &closed);
    int vrc = rfs_wwin_settle(f, 1);
    if (!vrc)
        vrc = rfs_file_settle_view(f, -1);
    else
        rfs_file_settle_view(f, -1);
    rfs_status settled = {RFS_OK, ""};
    rfs_status_first(&settled, vrc);
    fanout_wait(f, 0, calls, started, ok, &closed);
    for (int s = 0; s < f->nconn; s++)
        rfs_call_destroy(&calls[s]);
    if (settled.rc)
        return rfs_status_raise(&settled);
    if (closed.rc)
        return rfs_status_raise(&closed);
    if (atomic_load(&f->lost_unsynced))
        return rfs_fail(RFS_E_IO,
                        "%s: the server's host restarted (its boot id changed) after "
                        "writes that were never synced: they may be lost",
                        f->label);
    return RFS_OK;
}

/* A close that failed only because its connections are gone: the server dropped the handles
 * with them, and every write had its reply (none waits to be sent again, none is unsynced on a
 * rebooted host), so there is nothing to reopen the file for. (After a put renamed its
 * temporary file, reopening it to close it would even fail.) */
static int closed_with_connection(rfs_file *f)
{
    /* Without recovery a lost connection fails every call, close too, as it always did. */
    if (f->retry_ms <= 0 || f->ww_lost_head || f->ww_head || atomic_load(&f->lost_unsynced))
        return 0;
    for (int s = 0; s < f->nconn; s++)
        if (!rfs_conn_lost(f->conn[s]))
            return 0;
    return 1;
}

int rfs_close(rfs_file *f)
{
    if (!f)
        return RFS_OK;
    rfs_attempt a;
    int rc;
    rfs_attempt_begin(f, &a, rfs_attempt_how(RFS_OP_CLOSE));
    do {
        rc = close_once(f);
        if (rc && closed_with_connection(f))
            rc = RFS_OK;
    } while (rfs_attempt_again(f, &a, &rc));
    rfs_status closed = {RFS_OK, ""}; /* reported after the file's memory is gone */
    rfs_status_first(&closed, rc);
    if (rfs_stats_enabled()) {
        rfs_wwin_report(f);
        rfs_zpack_report(f->z, f->label);
    }
    release_conns(f);
    rfs_wwin_replay_drop(f);
    rfs_file_free_saved(f);
    rfs_zstate_free(f->z);
    explicit_bzero(&f->copts, sizeof f->copts);
    pthread_mutex_destroy(&f->view_mu);
    pthread_mutex_destroy(&f->ww_mu);
    pthread_rwlock_destroy(&f->rw);
    rfs_auto_destroy(&f->autos);
    rfs_verbox_destroy(&f->ver);
    free(f);
    if (rc)
        return rfs_status_raise(&closed);
    rfs_clear_error();
    return RFS_OK;
}

const char *rfs_file_server(const rfs_file *f)
{
    return f ? f->server : "";
}
const char *rfs_file_path(const rfs_file *f)
{
    return f ? f->name.path : "";
}

int rfs_file_streams(const rfs_file *f)
{
    return f ? f->nconn : 0;
}

static int read_only(rfs_file *f)
{
    return (f->flags & RFS_O_ACCMODE) == RFS_O_RDONLY;
}

static int fail_ro(rfs_file *f)
{
    return rfs_fail(RFS_E_ROFS, "%s: file was opened read-only", f->label);
}

/* The run-again loop of every data operation below (recover.c). */
#define ATTEMPT(f, how, call)                      \
    do {                                           \
        rfs_attempt a_;                            \
        int rc_;                                   \
        rfs_attempt_begin((f), &a_, (how));        \
        do                                         \
            rc_ = (call);                          \
        while (rfs_attempt_again((f), &a_, &rc_)); \
        return rc_;                                \
    } while (0)

int rfs_pread(rfs_file *f, void *buf, size_t len, uint64_t off, size_t *done)
{
    if (done)
        *done = 0;
    if (!f || (!buf && len))
        return rfs_fail(RFS_E_INVAL, "rfs_pread: NULL argument");
    ATTEMPT(f, rfs_attempt_how(RFS_OP_PREAD),
            rfs_xfer_contig(f, RFS_OP_PREAD, 0, off, buf, NULL, len, done));
}

int rfs_pread_sink(rfs_file *f, rfs_sink_fn sink, void *ctx, size_t len, uint64_t off, size_t *done)
{
    if (done)
        *done = 0;
    if (!f || !sink)
        return rfs_fail(RFS_E_INVAL, "rfs_pread_sink: NULL argument");
    ATTEMPT(f, rfs_attempt_how(RFS_OP_PREAD), rfs_xfer_sink(f, off, len, sink, ctx, done));
}

static int pwrite_once(rfs_file *f, const void *buf, size_t len, uint64_t off, size_t *done)
{
    int rc = rfs_wwin_write(f, RFS_OP_PWRITE, 0, buf, len, off, done);
    if (rc != RFS_WWIN_DECLINED)
        return rc;
    return rfs_xfer_contig(f, RFS_OP_PWRITE, 0, off, NULL, buf, len, done);
}

int rfs_pwrite(rfs_file *f, const void *buf, size_t len, uint64_t off, size_t *done)
{
    if (done)
        *done = 0;
    if (!f || (!buf && len))
        return rfs_fail(RFS_E_INVAL, "rfs_pwrite: NULL argument");
    if (read_only(f))
        return fail_ro(f);
    ATTEMPT(f, rfs_attempt_how(RFS_OP_PWRITE), pwrite_once(f, buf, len, off, done));
}

int rfs_preadv(rfs_file *f, const rfs_extent *ext, size_t n, void *buf, size_t *done)
{
    if (done)
        *done = 0;
    if (!f || (n && (!ext || !buf)))
        return rfs_fail(RFS_E_INVAL, "rfs_preadv: NULL argument");
    ATTEMPT(f, rfs_attempt_how(RFS_OP_PREADV),
            rfs_xfer_list(f, RFS_OP_PREADV, ext, n, buf, NULL, done));
}

int rfs_pwritev(rfs_file *f, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    if (done)
        *done = 0;
    if (!f || (n && (!ext || !buf)))
        return rfs_fail(RFS_E_INVAL, "rfs_pwritev: NULL argument");
    if (read_only(f))
        return fail_ro(f);
    ATTEMPT(f, rfs_attempt_how(RFS_OP_PWRITEV), rfs_xfer_writev_windowed(f, ext, n, buf, done));
}

/* One request with a handle on stream 0; the reply lands in *call. */
static int fh_call(rfs_file *f, rfs_req *req, rfs_call *call)
{
    int rc = rfs_wwin_settle(f, 0);
    if (rc)
        return rc;
    return rfs_conn_call(f->conn[0], call, req, f->io_timeout_ms, f->label);
}

static int sync_once(rfs_file *f)
{
    /* What this sync covers is counted before its SYNCs go out: a write that completes
     * meanwhile (on another thread) stays unsynced. */
    uint_fast64_t covers = atomic_load(&f->writes);
    /* Every stream's handle is synced (in parallel): a server may buffer per handle. */
    rfs_call calls[RFS_CLIENT_MAX_STREAMS];
    int started[RFS_CLIENT_MAX_STREAMS];
    rfs_status first = {RFS_OK, ""};
    /* Windowed writes and a SET_VIEW still in flight: their failure is reported here at the
     * latest. */
    if (!rfs_status_first(&first, rfs_wwin_settle(f, 1)))
        rfs_status_first(&first, rfs_file_settle_view(f, -1));
    for (int s = 0; s < f->nconn; s++) {
        rfs_call_init(&calls[s]);
        rfs_req req;
        memset(&req, 0, sizeof req);
        req.op = RFS_OP_SYNC;
        req.u.fh.fh = f->fh[s];
        int rc = rfs_conn_start(f->conn[s], &calls[s], &req, NULL, f->io_timeout_ms);
        started[s] = rc == RFS_OK;
        if (rc && !first.rc)
            rfs_status_first(&first, rfs_call_result(f->conn[s], &calls[s], rc, f->label));
    }
    for (int s = 0; s < f->nconn; s++) {
        if (started[s])
            rfs_status_first(&first,
                             rfs_call_result(f->conn[s], &calls[s],
                                             rfs_conn_wait(f->conn[s], &calls[s]), f->label));
        rfs_call_destroy(&calls[s]);
    }
    if (first.rc)
        return rfs_status_raise(&first);
    /* Never backwards: a sync that began earlier may end later. */
    uint_fast64_t was = atomic_load(&f->synced);
    while (was < covers && !atomic_compare_exchange_weak(&f->synced, &was, covers))
        ;
    if (atomic_exchange(&f->lost_unsynced, 0)) {
        /* Reported once, like any deferred error; what is written from now on is safe. */
        return rfs_fail(RFS_E_IO,
                        "%s: the server's host restarted (its boot id changed) after "
                        "writes that were never synced: they may be lost",
                        f->label);
    }
    return RFS_OK;
}

int rfs_sync(rfs_file *f)
{
    if (!f)
        return rfs_fail(RFS_E_INVAL, "rfs_sync: NULL file");
    ATTEMPT(f, rfs_attempt_how(RFS_OP_SYNC), sync_once(f));
}

int rfs_flush(rfs_file *f)
{
    if (!f)
        return rfs_fail(RFS_E_INVAL, "rfs_flush: NULL file");
    ATTEMPT(f, RFS_ATTEMPT_RETRY, rfs_wwin_settle(f, 1));
}

void rfs_flush_quiet(rfs_file *f)
{
    if (f)
        rfs_wwin_wait_queued(f);
}

static int get_size_once(rfs_file *f, uint64_t *size)
{
    rfs_call call;
    rfs_call_init(&call);
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_GET_SIZE;
    req.u.fh.fh = f->fh[0];
    int rc = fh_call(f, &req, &call);
    if (!rc)
        *size = call.rep.u.u64.value;
    rfs_call_destroy(&call);
    return rc;
}

int rfs_get_size(rfs_file *f, uint64_t *size)
{
    if (!f || !size)
        return rfs_fail(RFS_E_INVAL, "rfs_get_size: NULL argument");
    ATTEMPT(f, rfs_attempt_how(RFS_OP_GET_SIZE), get_size_once(f, size));
}

static int size_op_once(rfs_file *f, uint16_t op, uint64_t size)
{
    if (read_only(f))
        return fail_ro(f);
    if (size > (uint64_t)INT64_MAX)
        return rfs_fail(RFS_E_FBIG, "%s: size %llu beyond the largest file offset", f->label,
                        (unsigned long long)size);
    rfs_call call;
    rfs_call_init(&call);
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = op;
    req.u.size.fh = f->fh[0];
    req.u.size.size = size;
    int rc = fh_call(f, &req, &call);
    rfs_call_destroy(&call);
    return rc;
}

static int size_op(rfs_file *f, uint16_t op, uint64_t size)
{
    if (!f)
        return rfs_fail(RFS_E_INVAL, "%s: NULL file", rfs_op_name(op));
    ATTEMPT(f, rfs_attempt_how(op), size_op_once(f, op, size));
}

int rfs_set_size(rfs_file *f, uint64_t size)
{
    return size_op(f, RFS_OP_SET_SIZE, size);
}
int rfs_preallocate(rfs_file *f, uint64_t size)
{
    return size_op(f, RFS_OP_PREALLOCATE, size);
}

/* Bytes per CHECKSUM request: well under the protocol's 1 GiB so that one request's disk read
 * stays far inside the I/O timeout even on a slow server disk, yet large enough that round
 * trips do not matter next to it. */
#define CHECKSUM_PIECE ((uint64_t)256 << 20)

/* One CHECKSUM request: crc of [off, off+len) continued from *crc; *got = bytes covered. */
static int checksum_piece(rfs_file *f, uint64_t off, uint64_t len, uint32_t *crc, uint64_t *got)
{
    rfs_call call;
    rfs_call_init(&call);
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_CHECKSUM;
    req.u.checksum.fh = f->fh[0];
    req.u.checksum.algo = RFS_SUM_CRC32C;
    req.u.checksum.off = off;
    req.u.checksum.len = len;
    req.u.checksum.seed = *crc;
    int rc = fh_call(f, &req, &call);
    if (!rc && call.rep.u.checksum.len > len)
        rc = rfs_fail(RFS_E_PROTO, "%s: CHECKSUM reply covers %llu bytes, %llu asked", f->label,
                      (unsigned long long)call.rep.u.checksum.len, (unsigned long long)len);
    if (!rc) {
        *crc = (uint32_t)call.rep.u.checksum.value;
        *got = call.rep.u.checksum.len;
    }
    rfs_call_destroy(&call);
    return rc;
}

/* The whole range, piece by piece; run again from the start after a lost connection. */
static int checksum_once(rfs_file *f, uint64_t off, uint64_t len, uint32_t *crc, uint64_t *done)
{
    *crc = 0;
    uint64_t covered = 0;
    while (covered < len) {
        uint64_t piece = len - covered < CHECKSUM_PIECE ? len - covered : CHECKSUM_PIECE;
        uint64_t got = 0;
        int rc = checksum_piece(f, off + covered, piece, crc, &got);
        if (rc)
            return rc;
        covered += got;
        if (got < piece)
            break; /* end of file */
    }
    if (done)
        *done = covered;
    return RFS_OK;
}

int rfs_checksum(rfs_file *f, uint64_t off, uint64_t len, uint32_t *crc, uint64_t *done)
{
    if (done)
        *done = 0;
    if (!f || !crc)
        return rfs_fail(RFS_E_INVAL, "rfs_checksum: NULL argument");
    if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
        return rfs_fail(RFS_E_FBIG, "%s: checksum range %llu+%llu beyond the largest file offset",
                        f->label, (unsigned long long)off, (unsigned long long)len);
    ATTEMPT(f, rfs_attempt_how(RFS_OP_CHECKSUM), checksum_once(f, off, len, crc, done));
}
