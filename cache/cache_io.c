/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The cache as an rfs_io: reads are served from cached extents where they can be and the rest
 * is asked of the layer below in one request (and kept); writes, size changes and sync go
 * below and then drop what they make stale. Every op is filled: where the cache has nothing
 * to do it forwards, and where the layer below lacks an op it does what a caller does for a
 * missing op (cache/cache.h). */
#include "cache/cache_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

static cx_file *CF(rfs_io *io)
{
    return (cx_file *)io;
}
static rfs_io *B(rfs_io *io)
{
    return CF(io)->below;
}
static int on(cx_file *f)
{
    return __atomic_load_n(&f->enabled, __ATOMIC_ACQUIRE);
}

/* Demand reads are kept in extents of at most this size, so eviction frees memory in steps a
 * reader can afford to lose. */
#define CX_EXT_MAX (8ull << 20)

typedef struct run {
    uint64_t off, len;
    uint64_t pos; /* where its bytes go in the caller's buffer */
} run;

typedef struct run_vec {
    run *r;
    size_t n, cap;
} run_vec;

static int push(run_vec *v, uint64_t off, uint64_t len, uint64_t pos)
{
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 16;
        run *nr = realloc(v->r, nc * sizeof *nr);
        if (!nr)
            return RFS_E_NOMEM;
        v->r = nr;
        v->cap = nc;
    }
    v->r[v->n++] = (run){off, len, pos};
    return RFS_OK;
}

/* One pass over the runs still wanted (the pool's mu held): copies what is cached, lists what is in
 * flight (to wait for) and what nobody has (to read); *eofpos: the first buffer position the
 * file has no bytes for, as far as is known. */
static int walk(cx_file *f, const run_vec *want, uint8_t *buf, run_vec *wait, run_vec *miss,
                uint64_t *eofpos)
{
    for (size_t k = 0; k < want->n; k++) {
        const run *r = &want->r[k];
        uint64_t c = r->off, end = r->off + r->len;
        size_t i = cx_find(f, c);
        while (c < end) {
            if (c >= f->eof) {
                uint64_t p = r->pos + (c - r->off);
                if (p < *eofpos)
                    *eofpos = p;
                break;
            }
            cx_ext *e = i < f->n ? f->v[i] : NULL;
            if (e && e->off <= c) {
                uint64_t se = e->off + e->len < end ? e->off + e->len : end;
                if (e->ready) {
                    memcpy(buf + r->pos + (c - r->off), e->data + (c - e->off), se - c);
                    f->st.bytes_cached += se - c;
                    e->unread = 0;
                    cx_touch(e);
                } else if (push(wait, c, se - c, r->pos + (c - r->off)) != RFS_OK) {
                    return RFS_E_NOMEM;
                }
                c = se;
                i++;
            } else {
                uint64_t ge = e && e->off < end ? e->off : end;
                if (ge > f->eof)
                    ge = f->eof;
                if (push(miss, c, ge - c, r->pos + (c - r->off)) != RFS_OK)
                    return RFS_E_NOMEM;
                c = ge;
            }
        }
    }
    return RFS_OK;
}

/* Reads the missing runs from below in one request into the caller's buffer, keeping them in
 * new extents where the cap allows (the pool's mu held on entry and exit, not during the read). */
static int fetch(cx_file *f, const run_vec *miss, uint8_t *buf, uint64_t *eofpos)
{
    size_t nph = 0, cap_ph = 0;
    cx_ext **ph = NULL;
    size_t *ph_run = NULL;
    for (size_t k = 0; k < miss->n; k++) {
        /* Runs of one request may overlap (a read-only file's view may repeat bytes): only
         * what no earlier run claimed is claimed, in pieces of at most CX_EXT_MAX. */
        uint64_t x = miss->r[k].off, end = miss->r[k].off + miss->r[k].len;
        while (x < end) {
            uint64_t ge = end, gs = cx_first_gap(f, x, end, &ge);
            if (gs >= end)
                break;
            if (ge - gs > CX_EXT_MAX)
                ge = gs + CX_EXT_MAX;
            x = ge;
            if (nph == cap_ph) {
                size_t nc = cap_ph ? cap_ph * 2 : 8;
                cx_ext **np = realloc(ph, nc * sizeof *np);
                size_t *nr = np ? realloc(ph_run, nc * sizeof *nr) : NULL;
                if (np)
                    ph = np;
                if (!nr)
                    goto read; /* what is claimed so far is kept; the rest just not cached */
                ph_run = nr;
                cap_ph = nc;
            }
            cx_ext *e = cx_ext_new(f, gs, ge - gs);
            if (e) {
                ph[nph] = e;
                ph_run[nph++] = k;
            }
        }
    }
read:
    pthread_mutex_unlock(&f->pool->mu);
    rfs_io *b = f->below;
    size_t got = 0;
    int rc;
    uint8_t *tmp = NULL;
    if (miss->n == 1) {
        rc = b->ops->pread(b, buf + miss->r[0].pos, miss->r[0].len, miss->r[0].off, &got);
    } else {
        uint64_t total = 0;
        rfs_extent *ext = malloc(miss->n * sizeof *ext);
        for (size_t k = 0; ext && k < miss->n; k++) {
            ext[k] = (rfs_extent){miss->r[k].off, miss->r[k].len};
            total += miss->r[k].len;
        }
        tmp = ext ? malloc(total) : NULL;
        if (!tmp) {
            rc = rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory for a read of %zu runs", f->io.server,
                          f->io.path, miss->n);
        } else if (b->ops->preadv) {
            rc = b->ops->preadv(b, ext, miss->n, tmp, &got);
        } else {
            rc = RFS_OK;
            for (size_t k = 0; k < miss->n && rc == RFS_OK; k++) {
                size_t g = 0;
                rc = b->ops->pread(b, tmp + got, ext[k].length, ext[k].offset, &g);
                got += g;
                if (g < ext[k].length)
                    break;
            }
        }
        uint64_t p = 0;
        for (size_t k = 0; rc == RFS_OK && k < miss->n && p < got; k++) {
            uint64_t l = got - p < miss->r[k].len ? got - p : miss->r[k].len;
            memcpy(buf + miss->r[k].pos, tmp + p, l);
            p += miss->r[k].len;
        }
        free(ext);
        free(tmp);
    }
    pthread_mutex_lock(&f->pool->mu);
    /* Run k got the bytes of the packed result from its start on (short only at the end). */
    uint64_t p = 0;
    for (size_t k = 0, j = 0; k < miss->n; k++) {
        const run *r = &miss->r[k];
        uint64_t rgot = rc == RFS_OK && got > p ? got - p : 0;
        if (rgot > r->len)
            rgot = r->len;
        if (rc == RFS_OK && rgot < r->len && r->pos + rgot < *eofpos)
            *eofpos = r->pos + rgot;
        for (; j < nph && ph_run[j] == k; j++) {
            cx_ext *e = ph[j];
            uint64_t at = e->off - r->off;
            uint64_t egot = rgot > at ? rgot - at : 0;
            if (egot > e->len)
                egot = e->len;
            if (rc != RFS_OK) {
                cx_ext_abandon(e);
                continue;
            }
            if (egot && !e->stale)
                memcpy(e->data, buf + r->pos + at, egot);
            cx_ext_landed(e, egot, 0);
        }
        p += r->len;
    }
    if (rc == RFS_OK)
        f->st.bytes_below += got;
    pthread_cond_broadcast(&f->pool->landed);
    free(ph);
    free(ph_run);
    return rc;
}

static int cached_read(cx_file *f, const rfs_extent *ext, size_t n, uint8_t *buf, size_t *done)
{
    run_vec want = {0}, wait = {0}, miss = {0};
    uint64_t total = 0;
    int rc = RFS_OK;
    for (size_t i = 0; i < n && rc == RFS_OK; i++) {
        if (ext[i].length)
            rc = push(&want, ext[i].offset, ext[i].length, total);
        total += ext[i].length;
    }
    uint64_t eofpos = total;
    int went_below = 0;
    pthread_mutex_lock(&f->pool->mu);
    f->st.reads++;
    cx_prefetch_note(f, ext, n);
    while (rc == RFS_OK && want.n) {
        wait.n = miss.n = 0;
        rc = walk(f, &want, buf, &wait, &miss, &eofpos);
        if (rc == RFS_OK && miss.n) {
            rc = fetch(f, &miss, buf, &eofpos);
            went_below = 1;
        } else if (rc == RFS_OK && wait.n) {
            /* In flight (a prefetch, or another thread's read): wait for it to land or go;
             * if it failed, the next pass finds a gap and reads it here. */
            pthread_cond_wait(&f->pool->landed, &f->pool->mu);
        }
        run_vec t = want;
        want = wait;
        wait = t;
    }
    if (rc == RFS_OK && !went_below)
        f->st.reads_cached++;
    pthread_mutex_unlock(&f->pool->mu);
    free(want.r);
    free(wait.r);
    free(miss.r);
    if (rc == RFS_E_NOMEM && !rfs_last_error()[0])
        rfs_fail(rc, "%s:%s: out of memory", f->io.server, f->io.path);
    if (done)
        *done = rc == RFS_OK ? (size_t)eofpos : 0;
    return rc;
}

static int c_pread(rfs_io *io, void *buf, size_t len, uint64_t off, size_t *done)
{
    cx_file *f = CF(io);
    if (!on(f))
        return B(io)->ops->pread(B(io), buf, len, off, done);
    rfs_extent e = {off, len};
    return cached_read(f, &e, 1, buf, done);
}

static int c_preadv(rfs_io *io, const rfs_extent *ext, size_t n, void *buf, size_t *done)
{
    cx_file *f = CF(io);
    if (on(f))
        return cached_read(f, ext, n, buf, done);
    if (B(io)->ops->preadv)
        return B(io)->ops->preadv(B(io), ext, n, buf, done);
    size_t total = 0;
    int rc = RFS_OK;
    for (size_t i = 0; i < n && rc == RFS_OK; i++) {
        size_t g = 0;
        rc = B(io)->ops->pread(B(io), (uint8_t *)buf + total, ext[i].length, ext[i].offset, &g);
        total += g;
        if (g < ext[i].length)
            break;
    }
    if (done)
        *done = rc == RFS_OK ? total : 0;
    return rc;
}

/* ---- what makes cached bytes stale ---- */

/* After the write returned: a read that landed before it, or is still in flight, held the old
 * bytes; one sent after it sees the new ones (the layer below orders them). */
static void drop_extents(cx_file *f, const rfs_extent *ext, size_t n)
{
    if (!on(f) || n == 0)
        return;
    pthread_mutex_lock(&f->pool->mu);
    if (n <= 64) {
        for (size_t i = 0; i < n; i++)
            cx_drop(f, ext[i].offset, ext[i].offset + ext[i].length);
    } else {
        uint64_t lo, hi;
        rfs_extents_span(ext, n, &lo, &hi);
        cx_drop(f, lo, hi);
    }
    pthread_mutex_unlock(&f->pool->mu);
}

/* Everything goes: the file changed in ways the cache cannot follow, or MPI says other
 * processes' writes must be visible from here on. */
static void drop_all(cx_file *f)
{
    pthread_mutex_lock(&f->pool->mu);
    cx_prefetch_cancel_queued(f);
    cx_drop(f, 0, UINT64_MAX);
    pthread_mutex_unlock(&f->pool->mu);
}

static int c_pwrite(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done)
{
    int rc = B(io)->ops->pwrite(B(io), buf, len, off, done);
    rfs_extent e = {off, len};
    drop_extents(CF(io), &e, 1);
    return rc;
}

static int c_pwritev(rfs_io *io, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    int rc;
    if (B(io)->ops->pwritev) {
        rc = B(io)->ops->pwritev(B(io), ext, n, buf, done);
    } else {
        size_t total = 0;
        rc = RFS_OK;
        for (size_t i = 0; i < n && rc == RFS_OK; i++) {
            size_t g = 0;
            rc = B(io)->ops->pwrite(B(io), (const uint8_t *)buf + total, ext[i].length,
                                    ext[i].offset, &g);
            total += g;
        }
        if (done)
            *done = rc == RFS_OK ? total : 0;
    }
    drop_extents(CF(io), ext, n);
    return rc;
}

/* Without a gathering layer below: pack, as the layer above would. */
static int c_pwritev_gather(rfs_io *io, const rfs_extent *ext, size_t n, const struct iovec *mem,
                            size_t nmem, size_t *done)
{
    int rc;
    if (B(io)->ops->pwritev_gather) {
        rc = B(io)->ops->pwritev_gather(B(io), ext, n, mem, nmem, done);
    } else {
        size_t total = 0;
        for (size_t i = 0; i < nmem; i++)
            total += mem[i].iov_len;
        uint8_t *packed = malloc(total ? total : 1);
        if (!packed)
            return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory packing a write of %zu bytes",
                            io->server, io->path, total);
        for (size_t i = 0, p = 0; i < nmem; p += mem[i].iov_len, i++)
            memcpy(packed + p, mem[i].iov_base, mem[i].iov_len);
        rc = c_pwritev(io, ext, n, packed, done);
        free(packed);
        return rc;
    }
    drop_extents(CF(io), ext, n);
    return rc;
}

static int c_sync(rfs_io *io)
{
    int rc = B(io)->ops->sync(B(io));
    drop_all(CF(io));
    return rc;
}

static int c_flush(rfs_io *io, int report)
{
    return B(io)->ops->flush ? B(io)->ops->flush(B(io), report) : RFS_OK;
}

static uint64_t c_write_mark(rfs_io *io)
{
    return B(io)->ops->write_mark ? B(io)->ops->write_mark(B(io)) : 0;
}

static int c_mark_answered(rfs_io *io, uint64_t mark)
{
    return B(io)->ops->mark_answered ? B(io)->ops->mark_answered(B(io), mark) : 1;
}

static int c_get_size(rfs_io *io, uint64_t *size)
{
    if (!B(io)->ops->get_size)
        return rfs_fail(RFS_E_UNSUPPORTED, "%s: no size query", io->path);
    return B(io)->ops->get_size(B(io), size);
}

static int c_set_size(rfs_io *io, uint64_t size)
{
    if (!B(io)->ops->set_size)
        return rfs_fail(RFS_E_UNSUPPORTED, "%s: no size change", io->path);
    int rc = B(io)->ops->set_size(B(io), size);
    drop_all(CF(io));
    return rc;
}

static int c_preallocate(rfs_io *io, uint64_t size)
{
    int rc;
    if (B(io)->ops->preallocate) {
        rc = B(io)->ops->preallocate(B(io), size);
    } else {
        uint64_t cur = 0;
        rc = c_get_size(io, &cur);
        if (rc == RFS_OK && cur < size)
            rc = c_set_size(io, size);
    }
    drop_all(CF(io));
    return rc;
}

static int c_counter(rfs_io *io, uint32_t key, int set, int64_t delta, int64_t *old)
{
    if (!B(io)->ops->counter)
        return rfs_fail(RFS_E_UNSUPPORTED, "%s: no shared counters", io->path);
    return B(io)->ops->counter(B(io), key, set, delta, old);
}

static int c_lock(rfs_io *io, uint64_t off, uint64_t len, unsigned mode, int wait_ms)
{
    if (!B(io)->ops->lock)
        return rfs_fail(RFS_E_UNSUPPORTED, "%s: no byte-range locks", io->path);
    return B(io)->ops->lock(B(io), off, len, mode, wait_ms);
}

static int c_unlock(rfs_io *io, uint64_t off, uint64_t len)
{
    if (!B(io)->ops->unlock)
        return rfs_fail(RFS_E_UNSUPPORTED, "%s: no byte-range locks", io->path);
    return B(io)->ops->unlock(B(io), off, len);
}

/* Server-side views would carry reads past the cache: while it is on they are declined, and
 * the layer above maps views itself and sends list reads (the fallback for RFS_E_UNSUPPORTED).
 * Views set while it was off (atomic mode) keep working: their reads go below, their writes
 * drop the whole cache (their file ranges are not known here). */
static int c_set_view(rfs_io *io, uint32_t view_id, uint64_t disp, const void *enc, size_t enc_len)
{
    if (on(CF(io)) || !B(io)->ops->set_view)
        return rfs_fail(RFS_E_UNSUPPORTED, "%s:%s: no server-side views %s", io->server, io->path,
                        on(CF(io)) ? "while the read cache is on" : "below");
    return B(io)->ops->set_view(B(io), view_id, disp, enc, enc_len);
}

static int c_view_read(rfs_io *io, uint32_t view_id, uint64_t pos, void *buf, size_t len,
                       size_t *done)
{
    if (!B(io)->ops->view_read)
        return rfs_fail(RFS_E_UNSUPPORTED, "%s:%s: no server-side views", io->server, io->path);
    return B(io)->ops->view_read(B(io), view_id, pos, buf, len, done);
}

static int c_view_write(rfs_io *io, uint32_t view_id, uint64_t pos, const void *buf, size_t len,
                        size_t *done)
{
    if (!B(io)->ops->view_write)
        return rfs_fail(RFS_E_UNSUPPORTED, "%s:%s: no server-side views", io->server, io->path);
    int rc = B(io)->ops->view_write(B(io), view_id, pos, buf, len, done);
    drop_all(CF(io));
    return rc;
}

static int c_version(rfs_io *io, rfs_io_version *v)
{
    if (!B(io)->ops->version)
        return rfs_fail(RFS_E_UNSUPPORTED, "%s:%s: no file versions", io->server, io->path);
    return B(io)->ops->version(B(io), v);
}

static void print_stats(const cx_file *f)
{
    const rfs_cache_stats *s = &f->st;
    fprintf(stderr,
            "rfs stats %s: read cache: reads %llu, served from cache %llu (%llu bytes), "
            "read on demand %llu bytes, prefetched %llu bytes, prefetched never read %llu "
            "bytes, prefetch failures %llu, evicted %llu bytes, cap %llu, peak %llu\n",
            f->stats_name, (unsigned long long)s->reads, (unsigned long long)s->reads_cached,
            (unsigned long long)s->bytes_cached, (unsigned long long)s->bytes_below,
            (unsigned long long)s->bytes_prefetched, (unsigned long long)s->bytes_wasted,
            (unsigned long long)s->prefetch_failed, (unsigned long long)s->bytes_evicted,
            (unsigned long long)f->pool->cap, (unsigned long long)f->pool->peak);
}

static int c_close(rfs_io *io)
{
    cx_file *f = CF(io);
    cx_prefetch_stop(f);
    pthread_mutex_lock(&f->pool->mu);
    cx_drop(f, 0, UINT64_MAX);
    if (f->stats_name)
        print_stats(f);
    pthread_mutex_unlock(&f->pool->mu);
    rfs_io *below = f->below;
    pthread_cond_destroy(&f->q_cv);
    free(f->v);
    free(f->stats_name);
    free(f);
    return below->ops->close(below);
}

static const rfs_io_ops cache_ops = {
    .pread = c_pread,
    .pwrite = c_pwrite,
    .preadv = c_preadv,
    .pwritev = c_pwritev,
    .pwritev_gather = c_pwritev_gather,
    .sync = c_sync,
    .flush = c_flush,
    .write_mark = c_write_mark,
    .mark_answered = c_mark_answered,
    .get_size = c_get_size,
    .set_size = c_set_size,
    .preallocate = c_preallocate,
    .counter = c_counter,
    .lock = c_lock,
    .unlock = c_unlock,
    .set_view = c_set_view,
    .view_read = c_view_read,
    .view_write = c_view_write,
    .close = c_close,
    .version = c_version,
    /* A delete has nothing to drop here that outlives the file: passed on. */
    .remove = rfs_io_gen_remove,
    .start = rfs_io_gen_start,
    .end = rfs_io_gen_end,
    .coll_join = rfs_io_gen_coll_join,
    .coll_listio = rfs_io_gen_coll_listio,
};

const rfs_io_ops *rfs_cache_ops(void)
{
    return &cache_ops;
}

int rfs_cache_wrap(rfs_io *below, const rfs_cache_config *c, rfs_io **out)
{
    rfs_cache_config def;
    if (!c) {
        rfs_cache_config_default(&def);
        c = &def;
    }
    cx_file *f = calloc(1, sizeof *f);
    char *sn = c->stats_name ? strdup(c->stats_name) : NULL;
    rfs_runtime *rt = c->rt ? c->rt : rfs_runtime_default();
    cx_pool *pool = rt ? cx_pool_of(rt) : NULL;
    if (!f || (c->stats_name && !sn) || !pool) {
        free(f);
        free(sn);
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", below->path);
    }
    f->io.ops = &cache_ops;
    /* Everything the layer below does, but server-side views: their reads would pass the
     * cache, so set_view declines them while it is on (the layer above maps views itself). */
    f->io.features = below->features & (RFS_IO_F_LOCKS | RFS_IO_F_COUNTERS | RFS_IO_F_MARKS |
                                        RFS_IO_F_VERSIONS | RFS_IO_F_GATHER);
    memcpy(f->io.server, below->server, sizeof f->io.server);
    memcpy(f->io.path, below->path, sizeof f->io.path);
    f->below = below;
    f->enabled = 1;
    f->eof = UINT64_MAX;
    f->prefetch = c->prefetch;
    f->rt = rt;
    f->pool = pool;
    f->threads_wanted = c->threads < 1                       ? 1
                        : c->threads > RFS_CACHE_MAX_THREADS ? RFS_CACHE_MAX_THREADS
                                                             : c->threads;
    f->stats_name = sn;
    pthread_cond_init(&f->q_cv, NULL);
    uint64_t cap = c->max_memory ? c->max_memory : cx_default_cap(c->local_ranks);
    if (cap < RFS_CACHE_MIN_MEM)
        cap = RFS_CACHE_MIN_MEM;
    pthread_mutex_lock(&f->pool->mu);
    if (cap > f->pool->cap)
        f->pool->cap = cap;
    /* A window over half the cap would evict its own prefetches before they are read. */
    uint64_t wmax = c->prefetch_max ? c->prefetch_max : RFS_CACHE_DEFAULT_PREFETCH_MAX;
    f->window_max = wmax < f->pool->cap / 2 ? wmax : f->pool->cap / 2;
    pthread_mutex_unlock(&f->pool->mu);
    *out = &f->io;
    return RFS_OK;
}

void rfs_cache_invalidate(rfs_io *io)
{
    drop_all(CF(io));
}

void rfs_cache_set_enabled(rfs_io *io, int enable)
{
    cx_file *f = CF(io);
    pthread_mutex_lock(&f->pool->mu);
    __atomic_store_n(&f->enabled, enable != 0, __ATOMIC_RELEASE);
    cx_prefetch_cancel_queued(f);
    cx_drop(f, 0, UINT64_MAX);
    f->pat = (cx_pattern){0};
    f->window = 0;
    pthread_mutex_unlock(&f->pool->mu);
}

void rfs_cache_get_stats(rfs_io *io, rfs_cache_stats *s)
{
    cx_file *f = CF(io);
    pthread_mutex_lock(&f->pool->mu);
    *s = f->st;
    s->memory_cap = f->pool->cap;
    s->memory_peak = f->pool->peak;
    pthread_mutex_unlock(&f->pool->mu);
}
