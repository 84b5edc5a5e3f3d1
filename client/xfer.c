/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Pipelined transfers: a large or list access is cut into frame-sized jobs; each stream (one
 * connection of the file) keeps up to `window` of its jobs in flight, so one stream fills the
 * link's bandwidth-delay product instead of paying a round trip per frame, and several
 * streams run side by side (one thread each) to beat per-connection limits (SEMPLAR).
 *
 * Streams take the next job from a shared counter, so a faster connection carries more and a
 * stream can join a transfer under way (rfs_streams=auto, autostreams.c: the caller's thread
 * then measures the delivered rate and starts streams instead of running one). Results are
 * kept per job, so the byte count reported is exact: the bytes of the leading jobs that
 * completed in full (a short read is end of file; after an error, done covers only the bytes
 * known to be transferred). */
#include "client/client.h"

#include "common/clock.h"
#include "common/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Transfers of fewer frames than this do not probe for more streams (too short to measure). */
#define AUTO_PROBE_MIN_JOBS 8

typedef struct xjob {
    uint64_t off;   /* file offset (PREAD/PWRITE) or view position (VIEW_*) */
    size_t len;     /* data bytes of this frame */
    size_t buf_off; /* where they sit in the caller's buffer */
    size_t piece;   /* list I/O: first (offset, length) pair in pieces */
    uint32_t npieces;
} xjob;

typedef struct xfer {
    rfs_file *f;
    uint16_t op;
    uint32_t view_id;
    uint8_t *rbuf;
    const uint8_t *wbuf;
    rfs_sink_fn sink; /* reads: deliver here instead of rbuf (rbuf offsets become file offsets) */
    void *sink_ctx;
    xjob *jobs;
    size_t njobs;
    uint64_t *pieces;        /* list I/O: host-order pairs, frame by frame */
    size_t *got;             /* bytes done per job; SIZE_MAX while unknown or failed */
    atomic_size_t next_job;  /* the next job a stream takes */
    atomic_ullong delivered; /* bytes of completed jobs, for the auto rate */
    pthread_mutex_t run_mu;  /* running, and the controller's wait */
    pthread_cond_t run_cv;
    int running;           /* stream threads not finished */
    size_t share;          /* the most jobs one stream keeps in flight (see run) */
    atomic_int stop;       /* an error happened: issue nothing more */
    atomic_size_t eof_job; /* reads: lowest job that came back short */
    pthread_mutex_t lock;
    rfs_status err; /* the failure of the lowest failed job */
    size_t err_job;
} xfer;

static int is_read(uint16_t op)
{
    return rfs_op_has(op, RFS_OPF_REP_DATA);
}

static void record_error(xfer *x, size_t job, int rc)
{
    pthread_mutex_lock(&x->lock);
    if (!x->err.rc || job < x->err_job) {
        rfs_status_save(&x->err, rc);
        x->err_job = job;
    }
    pthread_mutex_unlock(&x->lock);
    atomic_store(&x->stop, 1);
}

static int issue(xfer *x, int s, size_t j, rfs_call *call)
{
    rfs_file *f = x->f;
    const xjob *jb = &x->jobs[j];
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = x->op;
    const uint64_t *ext = NULL;
    switch (x->op) {
    case RFS_OP_PREAD:
        req.u.pread.fh = f->fh[s];
        req.u.pread.off = jb->off;
        req.u.pread.len = (uint32_t)jb->len;
        break;
    case RFS_OP_PWRITE:
        req.u.pwrite.fh = f->fh[s];
        req.u.pwrite.off = jb->off;
        break;
    case RFS_OP_PREADV:
    case RFS_OP_PWRITEV:
        req.u.iov.fh = f->fh[s];
        req.u.iov.count = jb->npieces;
        req.u.iov.total = jb->len;
        ext = &x->pieces[2 * jb->piece];
        break;
    case RFS_OP_VIEW_READ:
        req.u.view_read.fh = f->fh[s];
        req.u.view_read.view_id = x->view_id;
        req.u.view_read.pos = jb->off;
        req.u.view_read.len = (uint32_t)jb->len;
        break;
    case RFS_OP_VIEW_WRITE:
        req.u.view_write.fh = f->fh[s];
        req.u.view_write.view_id = x->view_id;
        req.u.view_write.pos = jb->off;
        break;
    }
    if (x->sink) {
        call->sink = x->sink;
        call->sink_ctx = x->sink_ctx;
        call->sink_off = jb->off;
        call->dst_cap = jb->len;
    } else if (is_read(x->op)) {
        call->dst = x->rbuf + jb->buf_off;
        call->dst_cap = jb->len;
    } else {
        req.data = x->wbuf + jb->buf_off;
        req.data_len = (uint32_t)jb->len;
    }
    /* A file that compresses its writes takes compressed read replies too (rfsd decides,
     * by the same rule, whether they pay on this link). */
    req.zok = f->z != NULL && rfs_op_has(req.op, RFS_OPF_REP_PACK);
    /* Writes are compressed here, on this stream's thread, while its earlier frames are still
     * on the wire (compress_pipe.h). */
    rfs_packed pk = {0};
    if (req.data_len && rfs_op_has(req.op, RFS_OPF_PACK))
        rfs_zpack(f->z, f->conn[s], req.data, req.data_len, &pk);
    int rc = rfs_conn_start_packed(f->conn[s], call, &req, ext, f->io_timeout_ms, &pk);
    if (rc)
        return rfs_fail_cause(rc, "%s", f->label);
    return RFS_OK;
}

static int finish(xfer *x, int s, size_t j, rfs_call *call, int wait_rc)
{
    rfs_file *f = x->f;
    int rc = rfs_call_result(f->conn[s], call, wait_rc, f->label);
    if (rc)
        return rc;
    size_t want = x->jobs[j].len;
    if (call->sink_err)
        return rfs_fail(RFS_E_IO, "%s: delivering the data read at offset %llu failed: %s",
                        f->label, (unsigned long long)x->jobs[j].off, strerror(call->sink_err));
    if (is_read(x->op)) {
        x->got[j] = call->data_len;
        atomic_fetch_add(&x->delivered, (unsigned long long)call->data_len);
        if (call->data_len < want) {
            size_t cur = atomic_load(&x->eof_job);
            while (j < cur && !atomic_compare_exchange_weak(&x->eof_job, &cur, j))
                ;
        }
        return RFS_OK;
    }
    uint64_t wrote = call->rep.u.u64.value;
    if (wrote > want)
        return rfs_fail(RFS_E_PROTO, "%s: server claims %llu bytes written of %zu sent", f->label,
                        (unsigned long long)wrote, want);
    x->got[j] = (size_t)wrote;
    atomic_fetch_add(&x->delivered, (unsigned long long)wrote);
    if (wrote < want)
        return rfs_fail(RFS_E_IO, "%s: server wrote only %llu of %zu bytes", f->label,
                        (unsigned long long)wrote, want);
    return RFS_OK;
}

/* Runs jobs on stream s, taking each from the shared counter, with up to `window` in flight. */
static void run_stream(xfer *x, int s)
{
    rfs_file *f = x->f;
    size_t window = (size_t)f->window < x->share ? (size_t)f->window : x->share;
    rfs_call calls[RFS_CLIENT_MAX_WINDOW];
    size_t slot_job[RFS_CLIENT_MAX_WINDOW];
    for (size_t i = 0; i < window; i++)
        rfs_call_init(&calls[i]);
    size_t issued = 0, completed = 0;
    int more = 1;
    for (;;) {
        while (more && issued - completed < window && !atomic_load(&x->stop)) {
            size_t next = atomic_fetch_add(&x->next_job, 1);
            /* Past the end, or past a short read (end of file): nothing more for anyone. */
            if (next >= x->njobs || next > atomic_load(&x->eof_job)) {
                more = 0;
                break;
            }
            rfs_call *call = &calls[issued % window];
            rfs_call_reset(call);
            int rc = issue(x, s, next, call);
            if (rc) {
                record_error(x, next, rc);
                break;
            }
            slot_job[issued % window] = next;
            issued++;
        }
        if (completed == issued)
            break;
        rfs_call *call = &calls[completed % window];
        size_t j = slot_job[completed % window];
        int rc = finish(x, s, j, call, rfs_conn_wait(f->conn[s], call));
        if (rc)
            record_error(x, j, rc);
        completed++;
    }
    for (size_t i = 0; i < window; i++)
        rfs_call_destroy(&calls[i]);
}

typedef struct stream_arg {
    xfer *x;
    int s;
} stream_arg;

static void *stream_main(void *arg)
{
    stream_arg *a = arg;
    run_stream(a->x, a->s);
    pthread_mutex_lock(&a->x->run_mu);
    a->x->running--;
    pthread_cond_signal(&a->x->run_cv);
    pthread_mutex_unlock(&a->x->run_mu);
    return NULL;
}

typedef struct streams {
    rfs_task th[RFS_CLIENT_MAX_STREAMS];
    stream_arg args[RFS_CLIENT_MAX_STREAMS];
    int spawned[RFS_CLIENT_MAX_STREAMS];
} streams;

/* Starts stream s on a worker of the file's runtime. If none can be had, the streams already running take its
 * jobs (they come from the shared counter). */
static void spawn(xfer *x, streams *st, int s)
{
    st->args[s].x = x;
    st->args[s].s = s;
    pthread_mutex_lock(&x->run_mu);
    x->running++;
    pthread_mutex_unlock(&x->run_mu);
    st->spawned[s] = rfs_task_start(x->f->copts.rt, &st->th[s], stream_main, &st->args[s]) == 0;
    if (!st->spawned[s]) {
        pthread_mutex_lock(&x->run_mu);
        x->running--;
        pthread_mutex_unlock(&x->run_mu);
    }
}

/* rfs_streams=auto: the caller's thread measures the delivered rate epoch by epoch and starts
 * one more stream while the last one paid (autostreams.c), until every job is taken. */
static void control(xfer *x, streams *st, int k)
{
    rfs_file *f = x->f;
    rfs_auto_probe p;
    rfs_auto_probe_init(&p, k);
    int64_t epoch = rfs_auto_epoch_ns(f->conn[0]);
    int64_t t0 = rfs_now_ns();
    unsigned long long b0 = atomic_load(&x->delivered);
    pthread_mutex_lock(&x->run_mu);
    while (x->running > 0 && !p.done) {
        int64_t until = t0 + epoch;
        struct timespec ts = rfs_deadline_at(until);
        while (x->running > 0 && rfs_now_ns() < until)
            pthread_cond_timedwait(&x->run_cv, &x->run_mu, &ts);
        if (x->running == 0 || atomic_load(&x->stop) || atomic_load(&x->next_job) >= x->njobs)
            break;
        int64_t t1 = rfs_now_ns();
        unsigned long long b1 = atomic_load(&x->delivered);
        double rate = (double)(b1 - b0) * 1e9 / (double)(t1 - t0);
        t0 = t1;
        b0 = b1;
        pthread_mutex_unlock(&x->run_mu);
        if (rfs_auto_probe_epoch(&f->autos, &p, f->nconn, rate, f->label))
            spawn(x, st, p.k - 1);
        pthread_mutex_lock(&x->run_mu);
    }
    while (x->running > 0)
        pthread_cond_wait(&x->run_cv, &x->run_mu);
    pthread_mutex_unlock(&x->run_mu);
}

/* Runs every job over the file's streams and computes the exact byte count. */
static int run(xfer *x, size_t *done)
{
    rfs_file *f = x->f;
    x->got = malloc((x->njobs ? x->njobs : 1) * sizeof *x->got);
    if (!x->got)
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", f->label);
    for (size_t j = 0; j < x->njobs; j++)
        x->got[j] = SIZE_MAX;
    atomic_init(&x->stop, 0);
    atomic_init(&x->eof_job, SIZE_MAX);
    atomic_init(&x->next_job, 0);
    atomic_init(&x->delivered, 0);
    pthread_mutex_init(&x->lock, NULL);
    pthread_mutex_init(&x->run_mu, NULL);
    rfs_cond_init_monotonic(&x->run_cv);
    x->running = 0;
    x->err.rc = RFS_OK;

    int k = f->nconn, probing = 0;
    if (f->autos.enabled)
        k = rfs_auto_start(&f->autos, f->nconn, &probing);
    int k_auto = k;
    /* a transfer too short to probe within, but long enough to spread, probes as a series */
    int series = probing && x->njobs > 1 && x->njobs < AUTO_PROBE_MIN_JOBS;
    if (k > (int)x->njobs)
        k = (int)x->njobs;
    if (k < 1)
        k = 1;
    probing = probing && x->njobs >= AUTO_PROBE_MIN_JOBS;
    /* A stream takes at most its share of a short transfer: requests cost nothing to issue, so
     * the calling thread's stream would otherwise take every job of, say, a 4-frame read
     * before the other streams' threads have started, and one connection's window would
     * carry what four should (a 1 GiB rfs get on 4 streams moved 211, 163, 54 and 4 MB in its
     * first 5 s). A stream that finishes its share takes more from the counter as before. */
    x->share = (x->njobs + (size_t)k - 1) / (size_t)k;
    int64_t t0 = rfs_now_ns();

    streams st;
    memset(&st, 0, sizeof st);
    if (probing) {
        for (int s = 0; s < k; s++)
            spawn(x, &st, s);
        control(x, &st, k);
        if (!st.spawned[0])
            run_stream(x, 0); /* no thread at all: this one does the work, just slower */
    } else {
        for (int s = 1; s < k; s++)
            spawn(x, &st, s);
        run_stream(x, 0);
    }
    for (int s = 0; s < RFS_CLIENT_MAX_STREAMS; s++)
        if (st.spawned[s])
            rfs_task_join(&st.th[s]);
    if (series && !atomic_load(&x->stop))
        rfs_auto_series(&f->autos, k_auto, atomic_load(&x->delivered), rfs_now_ns() - t0,
                        rfs_auto_epoch_ns(f->conn[0]), f->nconn, f->label);

    size_t total = 0;
    for (size_t j = 0; j < x->njobs; j++) {
        if (x->got[j] == SIZE_MAX)
            break;
        total += x->got[j];
        if (x->got[j] < x->jobs[j].len)
            break;
    }
    if (done)
        *done = total;
    free(x->got);
    pthread_mutex_destroy(&x->lock);
    pthread_mutex_destroy(&x->run_mu);
    pthread_cond_destroy(&x->run_cv);
    if (x->err.rc)
        return rfs_status_raise(&x->err);
    rfs_clear_error();
    return RFS_OK;
}

/* Whether a transfer of njobs frames may use more than the first connection. The write
 * window's writes all travel on the first one (wwin.c), in order with every single-frame
 * request; a transfer spread over several must first collect their replies, or its frames on
 * another connection could overtake a windowed write to the same bytes. */
static int spreads(const rfs_file *f, size_t njobs)
{
    return f->nconn > 1 && njobs > 1;
}

/* Cuts [off, off+len) into frame-sized jobs and runs them; x's op and buffers are set. */
static int run_contig(xfer *x0, uint64_t off, size_t len, size_t *done)
{
    rfs_file *f = x0->f;
    if (done)
        *done = 0;
    if (off > (uint64_t)INT64_MAX || (uint64_t)len > (uint64_t)INT64_MAX - off)
        return rfs_fail(RFS_E_FBIG, "%s: range %llu+%zu beyond the largest file offset", f->label,
                        (unsigned long long)off, len);
    if (len == 0)
        return RFS_OK;
    xfer x = *x0;
    x.njobs = (len + f->chunk - 1) / f->chunk;
    int wrc = rfs_wwin_settle(f, spreads(f, x.njobs));
    if (wrc)
        return wrc;
    x.jobs = malloc(x.njobs * sizeof *x.jobs);
    if (!x.jobs)
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", f->label);
    for (size_t j = 0; j < x.njobs; j++) {
        size_t at = j * f->chunk;
        x.jobs[j].off = off + at;
        x.jobs[j].buf_off = at;
        x.jobs[j].len = len - at < f->chunk ? len - at : f->chunk;
    }
    int rc = run(&x, done);
    free(x.jobs);
    return rc;
}

int rfs_xfer_contig(rfs_file *f, uint16_t op, uint32_t view_id, uint64_t off, void *rbuf,
                    const void *wbuf, size_t len, size_t *done)
{
    xfer x = {.f = f, .op = op, .view_id = view_id, .rbuf = rbuf, .wbuf = wbuf};
    return run_contig(&x, off, len, done);
}

int rfs_xfer_sink(rfs_file *f, uint64_t off, size_t len, rfs_sink_fn sink, void *ctx, size_t *done)
{
    xfer x = {.f = f, .op = RFS_OP_PREAD, .sink = sink, .sink_ctx = ctx};
    return run_contig(&x, off, len, done);
}

/* ---- list I/O planning ---- */

typedef struct plan {
    xjob *jobs;
    size_t njobs, jcap;
    uint64_t *pieces;
    size_t npieces, pcap;
} plan;

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Cuts the extents into frames. Writes: 16 bytes per extent + data <= chunk. Reads: the
 * reply's data <= chunk, and the request's extents <= chunk. An extent longer than what is
 * left in a frame is split; zero-length extents are dropped. */
static int plan_list(const rfs_extent *ext, size_t n, size_t chunk, int write, plan *p)
{
    size_t max_count = (chunk - 64) / RFS_EXTENT_WIRE;
    if (max_count > RFS_MAX_EXTENTS)
        max_count = RFS_MAX_EXTENTS;
    size_t i = 0, pos = 0, buf_off = 0;
    for (;;) {
        while (i < n && ext[i].length == pos) {
            i++;
            pos = 0;
        }
        if (i == n)
            return 0;
        if (grow((void **)&p->jobs, &p->jcap, p->njobs + 1, sizeof *p->jobs))
            return -1;
        xjob *jb = &p->jobs[p->njobs++];
        memset(jb, 0, sizeof *jb);
        jb->piece = p->npieces;
        jb->buf_off = buf_off;
        size_t data = 0;
        while (i < n && jb->npieces < max_count) {
            uint64_t rem = ext[i].length - pos;
            if (rem == 0) {
                i++;
                pos = 0;
                continue;
            }
            size_t used = write ? (jb->npieces + 1) * RFS_EXTENT_WIRE + data : data;
            if (used >= chunk)
                break;
            size_t avail = chunk - used;
            size_t take = rem < avail ? (size_t)rem : avail;
            if (grow((void **)&p->pieces, &p->pcap, 2 * (p->npieces + 1), sizeof *p->pieces))
                return -1;
            p->pieces[2 * p->npieces] = ext[i].offset + pos;
            p->pieces[2 * p->npieces + 1] = take;
            p->npieces++;
            jb->npieces++;
            data += take;
            pos += take;
        }
        jb->len = data;
        buf_off += data;
    }
}

/* window: a list write that makes one frame may go through the write window (wwin.c). */
static int xfer_list(rfs_file *f, uint16_t op, const rfs_extent *ext, size_t n, void *rbuf,
                     const void *wbuf, size_t *done, int window)
{
    if (done)
        *done = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ext[i].offset > (uint64_t)INT64_MAX ||
            ext[i].length > (uint64_t)INT64_MAX - ext[i].offset)
            return rfs_fail(RFS_E_FBIG, "%s: extent %zu (%llu+%llu) beyond the largest file offset",
                            f->label, i, (unsigned long long)ext[i].offset,
                            (unsigned long long)ext[i].length);
        if (ext[i].length > SIZE_MAX - total)
            return rfs_fail(RFS_E_INVAL, "%s: extents total more than the address space", f->label);
        total += (size_t)ext[i].length;
    }
    if (total == 0)
        return RFS_OK;
    plan p;
    memset(&p, 0, sizeof p);
    int rc;
    if (plan_list(ext, n, f->chunk, op == RFS_OP_PWRITEV, &p)) {
        rc = rfs_fail(RFS_E_NOMEM, "%s: out of memory planning %zu extents", f->label, n);
    } else if (window && op == RFS_OP_PWRITEV && p.njobs == 1 &&
               (rc = rfs_wwin_writev(f, p.pieces, (uint32_t)p.npieces, wbuf, total, done)) !=
                   RFS_WWIN_DECLINED) {
        /* one frame: it returned once sent, as a small write does (wwin.c) */
    } else if ((rc = rfs_wwin_settle(f, spreads(f, p.njobs))) == RFS_OK) {
        xfer x;
        memset(&x, 0, sizeof x);
        x.f = f;
        x.op = op;
        x.rbuf = rbuf;
        x.wbuf = wbuf;
        x.jobs = p.jobs;
        x.njobs = p.njobs;
        x.pieces = p.pieces;
        rc = run(&x, done);
    }
    free(p.jobs);
    free(p.pieces);
    return rc;
}

int rfs_xfer_list(rfs_file *f, uint16_t op, const rfs_extent *ext, size_t n, void *rbuf,
                  const void *wbuf, size_t *done)
{
    return xfer_list(f, op, ext, n, rbuf, wbuf, done, 0);
}

int rfs_xfer_writev_windowed(rfs_file *f, const rfs_extent *ext, size_t n, const void *wbuf,
                             size_t *done)
{
    return xfer_list(f, RFS_OP_PWRITEV, ext, n, NULL, wbuf, done, 1);
}
