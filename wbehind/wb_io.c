/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The writer side of write-behind and the layer's rfs_io ops (wbehind.h says what and why). */
#include "wbehind/wb_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"

static wb *W(rfs_io *io)
{
    return (wb *)io;
}

static uint64_t pad8(uint64_t n)
{
    return (n + 7) & ~(uint64_t)7;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

size_t rfs_wb_segment_size(int nranks, uint64_t buffer_size)
{
    return 64 + (size_t)nranks * wb_chan_stride(buffer_size);
}

/* mu held: keeps the first failure for the next flush that reports. */
__attribute__((format(printf, 3, 4))) static void note_fail(wb *w, int rc, const char *fmt, ...)
{
    if (w->sticky)
        return;
    w->sticky = rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->sticky_msg, sizeof w->sticky_msg, fmt, ap);
    va_end(ap);
}

/* 0: owner d is running; 1: it stopped after writing everything it took; 2: it died. */
static int owner_status(const wb *w, int d)
{
    wb_head *h = wb_head_of(w, d);
    if (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE) == WB_GONE)
        return 1;
    int32_t pid = __atomic_load_n(&h->pid, __ATOMIC_ACQUIRE);
    if (d == w->rank)
        return 0;
    return rfs_shm_pid_dead(pid) ? 2 : 0;
}

static void collect_err(wb *w, int d)
{
    wb_chan *c = wb_chan_of(w, w->rank, d);
    int32_t e = __atomic_exchange_n(&c->err, 0, __ATOMIC_ACQ_REL);
    if (e)
        note_fail(w, e,
                  "%s:%s: rank %d's write-behind write of pages holding this rank's bytes "
                  "failed: %s",
                  w->io.server, w->io.path, d, rfs_strerror(e));
}

/* Owner d is gone or dead: what it never took, this rank writes itself from now on. */
static void owner_lost(wb *w, int d, int dead)
{
    wb_chan *c = wb_chan_of(w, w->rank, d);
    w->gone[d] = 1;
    int lost = 0;
    uint32_t s = WB_POSTED;
    if (__atomic_compare_exchange_n(&c->state, &s, WB_EMPTY, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        int rc = wb_write_records(w->below, wb_chan_data(c), c->used, &w->st.direct_bytes);
        if (rc != RFS_OK)
            note_fail(w, rc, "%s", rfs_last_error());
    } else if (s == WB_TAKEN && dead) {
        __atomic_store_n(&c->state, WB_EMPTY, __ATOMIC_RELEASE);
        lost = 1;
    }
    if (dead && (w->handed[d] || lost)) {
        int32_t pid = wb_head_of(w, d)->pid;
        note_fail(w, RFS_E_IO,
                  "%s:%s: rank %d (pid %d) ended holding write-behind pages with this rank's "
                  "bytes, which may not be in the file",
                  w->io.server, w->io.path, d, (int)pid);
    }
    collect_err(w, d);
    w->handed[d] = 0;
}

static void ring(wb *w, int d)
{
    wb_head *h = wb_head_of(w, d);
    __atomic_add_fetch(&h->bell, 1, __ATOMIC_RELEASE);
    rfs_shm_wake(&h->bell);
}

static int timed_out(const wb *w, uint64_t t0)
{
    return w->timeout_ms > 0 && now_ms() - t0 > (uint64_t)w->timeout_ms;
}

/* mu held: waits until this rank's mailbox for d is free. RFS_OK (or d is lost: gone[d]). */
static int wait_empty(wb *w, int d)
{
    wb_chan *c = wb_chan_of(w, w->rank, d);
    uint64_t t0 = now_ms();
    for (;;) {
        uint32_t s = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE);
        if (s == WB_EMPTY)
            return RFS_OK;
        int os = owner_status(w, d);
        if (os) {
            owner_lost(w, d, os == 2);
            return RFS_OK;
        }
        if (timed_out(w, t0))
            return rfs_fail(RFS_E_TIMEOUT,
                            "%s:%s: rank %d did not take write-behind data within %d ms",
                            w->io.server, w->io.path, d, w->timeout_ms);
        rfs_shm_wait(&c->state, s, 100);
    }
}

/* mu held: hands sub-buffer d to its owner (or writes it below when the owner is lost). */
static int post(wb *w, int d)
{
    if (!w->used[d])
        return RFS_OK;
    if (!w->gone[d]) {
        int rc = wait_empty(w, d);
        if (rc != RFS_OK)
            return rc;
    }
    if (w->gone[d]) {
        int rc = wb_write_records(w->below, w->buf[d], w->used[d], &w->st.direct_bytes);
        w->used[d] = 0;
        return rc;
    }
    wb_chan *c = wb_chan_of(w, w->rank, d);
    memcpy(wb_chan_data(c), w->buf[d], (size_t)w->used[d]);
    c->used = w->used[d];
    __atomic_store_n(&c->state, WB_POSTED, __ATOMIC_RELEASE);
    w->handed[d] = 1;
    w->used[d] = 0;
    w->last[d] = UINT64_MAX;
    w->st.posts++;
    ring(w, d);
    return RFS_OK;
}

/* mu held: cuts [off, off+n) at page boundaries into the owners' sub-buffers. */
static int append(wb *w, uint64_t off, const uint8_t *src, uint64_t n)
{
    while (n) {
        uint64_t idx = off / w->page;
        uint64_t k = w->page - off % w->page;
        if (k > n)
            k = n;
        int d = (int)(idx % (uint64_t)w->n);
        if (w->gone[d]) {
            size_t done = 0;
            int rc = w->below->ops->pwrite(w->below, src, (size_t)k, off, &done);
            if (rc != RFS_OK)
                return rc;
            w->st.direct_bytes += k;
            off += k, src += k, n -= k;
            continue;
        }
        uint8_t *b = w->buf[d];
        uint64_t last = w->last[d];
        uint64_t lo, ln;
        if (last != UINT64_MAX) {
            memcpy(&lo, b + last, 8);
            memcpy(&ln, b + last + 8, 8);
        }
        if (last != UINT64_MAX && lo + ln == off) {
            /* Continues the last piece: grows it in place. */
            uint64_t room = w->bufsz - last - WB_REC_HDR - ln;
            uint64_t take = k < room ? k : room;
            if (take) {
                memcpy(b + last + WB_REC_HDR + ln, src, (size_t)take);
                ln += take;
                memcpy(b + last + 8, &ln, 8);
                w->used[d] = last + WB_REC_HDR + pad8(ln);
                off += take, src += take, n -= take;
                continue;
            }
        }
        if (w->used[d] + WB_REC_HDR + 8 > w->bufsz) {
            int rc = post(w, d);
            if (rc != RFS_OK)
                return rc;
            continue;
        }
        uint64_t room = w->bufsz - w->used[d] - WB_REC_HDR;
        uint64_t take = k < room ? k : room;
        uint64_t at = w->used[d];
        memcpy(b + at, &off, 8);
        memcpy(b + at + 8, &take, 8);
        memcpy(b + at + WB_REC_HDR, src, (size_t)take);
        w->used[d] = at + WB_REC_HDR + pad8(take);
        w->last[d] = at;
        off += take, src += take, n -= take;
    }
    return RFS_OK;
}

/* mu held: this rank's bytes reach the server; report: returns (and forgets) the first
 * failure, else it stays for the next call that reports. */
static int flush_mine(wb *w, int report)
{
    if (!w->detached) {
        for (int d = 0; d < w->n; d++) {
            int rc = post(w, d);
            if (rc != RFS_OK)
                note_fail(w, rc, "%s", rfs_last_error());
        }
        uint64_t t0 = now_ms();
        for (int d = 0; d < w->n; d++) {
            w->req[d] = 0;
            if (!w->handed[d] || w->gone[d])
                continue;
            wb_chan *c = wb_chan_of(w, w->rank, d);
            w->req[d] = __atomic_add_fetch(&c->flush_req, 1, __ATOMIC_ACQ_REL);
            ring(w, d);
        }
        for (int d = 0; d < w->n; d++) {
            if (!w->req[d])
                continue;
            wb_chan *c = wb_chan_of(w, w->rank, d);
            for (;;) {
                uint32_t dw = __atomic_load_n(&c->done_word, __ATOMIC_ACQUIRE);
                if (__atomic_load_n(&c->flush_done, __ATOMIC_ACQUIRE) >= w->req[d]) {
                    collect_err(w, d);
                    w->handed[d] = 0;
                    break;
                }
                int os = owner_status(w, d);
                if (os) {
                    owner_lost(w, d, os == 2);
                    break;
                }
                if (timed_out(w, t0)) {
                    note_fail(w, RFS_E_TIMEOUT,
                              "%s:%s: rank %d did not write this rank's write-behind bytes "
                              "within %d ms",
                              w->io.server, w->io.path, d, w->timeout_ms);
                    break;
                }
                rfs_shm_wait(&c->done_word, dw, 100);
            }
        }
        w->st.flushes++;
    }
    /* Bytes this rank wrote below itself (auto, off, lost owners) are answered too; a closing
     * rank's close collects those answers instead (rfs_wb_flush_closing). */
    int rc = w->closing ? RFS_OK : w->below->ops->flush(w->below, 1);
    if (rc != RFS_OK)
        note_fail(w, rc, "%s", rfs_last_error());
    if (!report || !w->sticky)
        return RFS_OK;
    rc = rfs_fail(w->sticky, "%s", w->sticky_msg);
    w->sticky = 0;
    return rc;
}

static int dirty(const wb *w)
{
    if (w->detached)
        return 0;
    for (int d = 0; d < w->n; d++)
        if (w->used[d] || w->handed[d])
            return 1;
    return 0;
}

/* mu held: whether a write of pieces averaging `avg` bytes is buffered. */
static int buffering(wb *w, uint64_t avg)
{
    if (w->detached || !w->enabled)
        return 0;
    if (!w->automatic || w->active)
        return 1;
    if (avg >= w->page)
        return 0;
    /* From the first small write on: the earlier direct writes are answered first, so an
     * owner's later write of the same bytes over its own connection cannot overtake them. */
    int rc = w->below->ops->flush(w->below, 0);
    (void)rc;
    w->active = 1;
    return 1;
}

static int wb_pwrite(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done)
{
    wb *w = W(io);
    *done = 0;
    pthread_mutex_lock(&w->mu);
    if (!buffering(w, len)) {
        w->st.direct_bytes += len;
        pthread_mutex_unlock(&w->mu);
        return w->below->ops->pwrite(w->below, buf, len, off, done);
    }
    int rc = append(w, off, buf, len);
    w->st.writes++;
    w->st.bytes += len;
    pthread_mutex_unlock(&w->mu);
    if (rc == RFS_OK)
        *done = len;
    return rc;
}

static int wb_pwritev(rfs_io *io, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    wb *w = W(io);
    *done = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += ext[i].length;
    pthread_mutex_lock(&w->mu);
    if (!buffering(w, n ? total / n : 0)) {
        w->st.direct_bytes += total;
        pthread_mutex_unlock(&w->mu);
        return w->below->ops->pwritev(w->below, ext, n, buf, done);
    }
    const uint8_t *p = buf;
    int rc = RFS_OK;
    for (size_t i = 0; i < n && rc == RFS_OK; i++) {
        rc = append(w, ext[i].offset, p, ext[i].length);
        p += ext[i].length;
    }
    w->st.writes++;
    w->st.bytes += total;
    pthread_mutex_unlock(&w->mu);
    if (rc == RFS_OK)
        *done = (size_t)total;
    return rc;
}

/* Before anything that must see this rank's bytes on the server. */
static void settle(wb *w)
{
    pthread_mutex_lock(&w->mu);
    if (dirty(w))
        flush_mine(w, 0);
    pthread_mutex_unlock(&w->mu);
}

static int wb_pread(rfs_io *io, void *buf, size_t len, uint64_t off, size_t *done)
{
    wb *w = W(io);
    settle(w);
    return w->below->ops->pread(w->below, buf, len, off, done);
}

static int wb_preadv(rfs_io *io, const rfs_extent *ext, size_t n, void *buf, size_t *done)
{
    wb *w = W(io);
    settle(w);
    return w->below->ops->preadv(w->below, ext, n, buf, done);
}

static int wb_sync(rfs_io *io)
{
    wb *w = W(io);
    pthread_mutex_lock(&w->mu);
    int rc = flush_mine(w, 1);
    pthread_mutex_unlock(&w->mu);
    if (rc != RFS_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", rfs_last_error());
        w->below->ops->sync(w->below);
        return rfs_fail(rc, "%s", msg);
    }
    return w->below->ops->sync(w->below);
}

static int wb_flush(rfs_io *io, int report)
{
    wb *w = W(io);
    pthread_mutex_lock(&w->mu);
    int rc = flush_mine(w, report);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

static int wb_get_size(rfs_io *io, uint64_t *size)
{
    wb *w = W(io);
    settle(w);
    return w->below->ops->get_size(w->below, size);
}

static int wb_set_size(rfs_io *io, uint64_t size)
{
    wb *w = W(io);
    settle(w);
    return w->below->ops->set_size(w->below, size);
}

static int wb_preallocate(rfs_io *io, uint64_t size)
{
    wb *w = W(io);
    settle(w);
    return w->below->ops->preallocate(w->below, size);
}

static int wb_counter(rfs_io *io, uint32_t key, int set, int64_t delta, int64_t *old)
{
    wb *w = W(io);
    return w->below->ops->counter(w->below, key, set, delta, old);
}

static int wb_lock(rfs_io *io, uint64_t off, uint64_t len, unsigned mode, int wait_ms)
{
    wb *w = W(io);
    return w->below->ops->lock(w->below, off, len, mode, wait_ms);
}

static int wb_unlock(rfs_io *io, uint64_t off, uint64_t len)
{
    wb *w = W(io);
    return w->below->ops->unlock(w->below, off, len);
}

static void stop_owner(wb *w)
{
    if (!w->thread_running)
        return;
    __atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
    ring(w, w->rank);
    rfs_task_join(&w->th);
    w->thread_running = 0;
}

void rfs_wb_flush_mine(rfs_io *io)
{
    wb *w = W(io);
    pthread_mutex_lock(&w->mu);
    flush_mine(w, 0);
    pthread_mutex_unlock(&w->mu);
}

void rfs_wb_flush_closing(rfs_io *io)
{
    wb *w = W(io);
    pthread_mutex_lock(&w->mu);
    if (!w->detached) {
        /* before the requests below: an owner that sees one sees this too */
        for (int d = 0; d < w->n; d++)
            __atomic_store_n(&wb_chan_of(w, w->rank, d)->closing, 1, __ATOMIC_RELEASE);
        w->closing = 1;
    }
    flush_mine(w, 0);
    pthread_mutex_unlock(&w->mu);
}

int rfs_wb_closing_error(void *const *segments, int rank, int nranks, uint64_t buffer_size,
                         int *owner)
{
    for (int d = 0; d < nranks; d++) {
        const wb_chan *c = wb_chan_in(segments[rank], buffer_size, d);
        int32_t e = __atomic_load_n(&c->err, __ATOMIC_ACQUIRE);
        if (e) {
            *owner = d;
            return e;
        }
    }
    return RFS_OK;
}

void rfs_wb_detach(rfs_io *io)
{
    wb *w = W(io);
    pthread_mutex_lock(&w->mu);
    if (!w->detached) {
        stop_owner(w);
        /* Anything written since the last flush goes below now (nobody takes it any more). */
        for (int d = 0; d < w->n; d++) {
            w->gone[d] = 1;
            if (w->used[d]) {
                int rc = post(w, d);
                if (rc != RFS_OK)
                    note_fail(w, rc, "%s", rfs_last_error());
            }
            collect_err(w, d);
        }
        wb_owner_free(w);
        w->detached = 1;
    }
    pthread_mutex_unlock(&w->mu);
}

void rfs_wb_set_enabled(rfs_io *io, int on)
{
    wb *w = W(io);
    pthread_mutex_lock(&w->mu);
    if (!on && w->enabled)
        flush_mine(w, 0);
    else if (on && !w->enabled)
        w->below->ops->flush(w->below, 0); /* direct writes answered before owners write */
    w->enabled = on != 0;
    pthread_mutex_unlock(&w->mu);
}

void rfs_wb_get_stats(rfs_io *io, rfs_wb_stats *s)
{
    wb *w = W(io);
    pthread_mutex_lock(&w->mu);
    memset(s, 0, sizeof *s);
    s->writes = w->st.writes;
    s->bytes = w->st.bytes;
    s->posts = w->st.posts;
    s->flushes = w->st.flushes;
    s->direct_bytes = w->st.direct_bytes;
    s->memory_cap = w->st.memory_cap;
    s->pages_written = __atomic_load_n(&w->st.pages_written, __ATOMIC_RELAXED);
    s->page_bytes = __atomic_load_n(&w->st.page_bytes, __ATOMIC_RELAXED);
    s->evictions = __atomic_load_n(&w->st.evictions, __ATOMIC_RELAXED);
    s->pages_peak = __atomic_load_n(&w->st.pages_peak, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&w->mu);
}

static void free_wb(wb *w)
{
    if (w->buf)
        for (int d = 0; d < w->n; d++)
            free(w->buf[d]);
    free(w->buf);
    free(w->used);
    free(w->last);
    free(w->req);
    free(w->handed);
    free(w->gone);
    free(w->seg);
    wb_owner_free(w);
    free(w->close_pend);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

static int wb_close(rfs_io *io)
{
    wb *w = W(io);
    pthread_mutex_lock(&w->mu);
    int rc = flush_mine(w, 1);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rc != RFS_OK ? rfs_last_error() : "");
    pthread_mutex_unlock(&w->mu);
    /* Without the caller's barrier (tests, a close at finalize) the owner stops here, after
     * writing what it holds; writers that find it gone write their bytes themselves. */
    rfs_wb_detach(io);
    if (rc == RFS_OK && w->sticky) {
        rc = w->sticky;
        snprintf(msg, sizeof msg, "%s", w->sticky_msg);
    }
    if (w->stats_name)
        fprintf(stderr,
                "rfs stats %s: write-behind: writes %llu (%llu bytes), posts %llu, flushes %llu, "
                "direct %llu bytes, pages written %llu (%llu bytes), evictions %llu, "
                "pages peak %llu, cap %llu\n",
                w->stats_name, (unsigned long long)w->st.writes, (unsigned long long)w->st.bytes,
                (unsigned long long)w->st.posts, (unsigned long long)w->st.flushes,
                (unsigned long long)w->st.direct_bytes, (unsigned long long)w->st.pages_written,
                (unsigned long long)w->st.page_bytes, (unsigned long long)w->st.evictions,
                (unsigned long long)w->st.pages_peak, (unsigned long long)w->st.memory_cap);
    rfs_io *below = w->below;
    int brc = below->ops->close(below);
    /* A closing owner's pages were answered once sent: the close below collected their
     * replies, and its failure goes to every rank whose bytes went below since the last
     * confirmation (the caller keeps the segments until every rank has closed). */
    if (brc != RFS_OK && w->close_pend)
        for (int r = 0; r < w->n; r++)
            if (w->close_pend[r])
                wb_hand_error(w, r, brc);
    free_wb(w);
    if (rc != RFS_OK)
        return rfs_fail(rc, "%s", msg);
    return brc;
}

static const rfs_io_ops wb_ops = {
    .pread = wb_pread,
    .pwrite = wb_pwrite,
    .preadv = wb_preadv,
    .pwritev = wb_pwritev,
    .pwritev_gather = rfs_io_gen_pwritev_gather,
    .sync = wb_sync,
    .flush = wb_flush,
    .write_mark = rfs_io_gen_write_mark,
    .mark_answered = rfs_io_gen_mark_answered,
    .get_size = wb_get_size,
    .set_size = wb_set_size,
    .preallocate = wb_preallocate,
    .counter = wb_counter,
    .lock = wb_lock,
    .unlock = wb_unlock,
    .set_view = rfs_io_gen_set_view,
    .view_read = rfs_io_gen_view_read,
    .view_write = rfs_io_gen_view_write,
    .close = wb_close,
    .version = rfs_io_gen_version,
    .remove = rfs_io_gen_remove,
    .start = rfs_io_gen_start,
    .end = rfs_io_gen_end,
    .coll_join = rfs_io_gen_coll_join,
    .coll_listio = rfs_io_gen_coll_listio,
};

const rfs_io_ops *rfs_wb_ops(void)
{
    return &wb_ops;
}

int rfs_wb_wrap(rfs_io *below, const rfs_wb_config *c, rfs_io **out)
{
    if (!c || c->nranks < 1 || c->rank < 0 || c->rank >= c->nranks || !c->segments ||
        c->page_size < RFS_WB_MIN_UNIT || c->buffer_size < RFS_WB_MIN_UNIT)
        return rfs_fail(RFS_E_INVAL, "write-behind: invalid configuration");
    wb *w = calloc(1, sizeof *w);
    if (!w)
        return rfs_fail(RFS_E_NOMEM, "write-behind: out of memory");
    pthread_mutex_init(&w->mu, NULL);
    w->below = below;
    w->rank = c->rank;
    w->n = c->nranks;
    w->page = c->page_size;
    w->bufsz = c->buffer_size & ~(uint64_t)63;
    w->timeout_ms = c->timeout_ms;
    w->automatic = c->automatic;
    w->enabled = 1;
    w->stats_name = c->stats_name;
    size_t n = (size_t)w->n;
    w->seg = calloc(n, sizeof *w->seg);
    w->buf = calloc(n, sizeof *w->buf);
    w->used = calloc(n, sizeof *w->used);
    w->last = calloc(n, sizeof *w->last);
    w->req = calloc(n, sizeof *w->req);
    w->handed = calloc(n, 1);
    w->gone = calloc(n, 1);
    int ok = w->seg && w->buf && w->used && w->last && w->req && w->handed && w->gone;
    for (size_t d = 0; ok && d < n; d++) {
        w->seg[d] = c->segments[d];
        w->last[d] = UINT64_MAX;
        ok = (w->buf[d] = malloc((size_t)w->bufsz)) != NULL;
    }
    uint64_t cap = c->max_memory ? c->max_memory : RFS_WB_DEFAULT_MEMORY;
    if (!ok || wb_owner_init(w, cap) != RFS_OK) {
        free_wb(w);
        return rfs_fail(RFS_E_NOMEM, "write-behind: out of memory");
    }
    w->st.memory_cap = w->own.max_pages * w->page;
    w->io.ops = &wb_ops;
    /* No views (the layer above maps them, so every byte's offset is known here), no marks
     * (a write returns once it is buffered, and flush is what waits). */
    w->io.features = below->features & (RFS_IO_F_LOCKS | RFS_IO_F_COUNTERS);
    memcpy(w->io.server, below->server, sizeof w->io.server);
    memcpy(w->io.path, below->path, sizeof w->io.path);
    wb_head *h = wb_head_of(w, w->rank);
    __atomic_store_n(&h->pid, (int32_t)getpid(), __ATOMIC_RELEASE);
    __atomic_store_n(&h->state, WB_OPEN, __ATOMIC_RELEASE);
    rfs_runtime *rt = c->rt ? c->rt : rfs_runtime_default();
    if (!rt || wb_sender_start(w, rt) != RFS_OK ||
        rfs_task_start(rt, &w->th, wb_owner_main, w) != 0) {
        __atomic_store_n(&h->state, WB_GONE, __ATOMIC_RELEASE);
        free_wb(w);
        return rfs_fail(RFS_E_NOMEM, "write-behind: cannot start the owner thread");
    }
    w->thread_running = 1;
    *out = &w->io;
    return RFS_OK;
}
