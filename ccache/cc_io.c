/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The collaborative cache's rfs_io ops: accesses through the shared pages, sync/close flushing
 * this rank's dirty pages (ccache.h says what and why). */
#include "ccache/cc_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"

static cc *C(rfs_io *io)
{
    return (cc *)io;
}

#define ADD(field, v) __atomic_add_fetch(&c->st.field, (uint64_t)(v), __ATOMIC_RELAXED)

static int caching(const cc *c)
{
    return __atomic_load_n(&c->enabled, __ATOMIC_ACQUIRE) &&
           !__atomic_load_n(&c->detached, __ATOMIC_ACQUIRE);
}

/* mu held: keeps the first failure for the next sync/close. */
__attribute__((format(printf, 3, 4))) static void note_fail(cc *c, int rc, const char *fmt, ...)
{
    if (c->sticky)
        return;
    c->sticky = rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->sticky_msg, sizeof c->sticky_msg, fmt, ap);
    va_end(ap);
}

static void grow_eof(cc *c, uint64_t end)
{
    uint64_t *eof = &cc_head_of(c, 0)->eof;
    uint64_t cur = __atomic_load_n(eof, __ATOMIC_ACQUIRE);
    while (cur < end &&
           !__atomic_compare_exchange_n(eof, &cur, end, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
}

static uint8_t *frame_data(cc *c, uint64_t idx, const cc_frame *f)
{
    int o = cc_owner(c, idx);
    return cc_data(c, o, cc_frame_no(c, o, f));
}

/* Page locked: its bytes that are not dirty become the server's. */
static int fill(cc *c, uint64_t idx, cc_frame *f)
{
    uint8_t *d = frame_data(c, idx, f);
    uint8_t *tmp = f->nruns ? malloc((size_t)c->page) : d;
    if (!tmp)
        return rfs_fail(RFS_E_NOMEM, "%s:%s: no memory to read a page", c->io.server, c->io.path);
    size_t done = 0;
    int rc = c->below->ops->pread(c->below, tmp, (size_t)c->page, idx * c->page, &done);
    if (rc == RFS_OK) {
        memset(tmp + done, 0, (size_t)(c->page - done));
        if (tmp != d) {
            uint32_t at = 0;
            for (uint32_t r = 0; r <= f->nruns; r++) {
                uint32_t end = r < f->nruns ? CC_LO(f, r) : (uint32_t)c->page;
                memcpy(d + at, tmp + at, end - at);
                if (r < f->nruns)
                    at = CC_HI(f, r);
            }
        }
        f->filled = 1;
        ADD(fills, 1);
        ADD(fill_bytes, done);
    }
    if (tmp != d)
        free(tmp);
    return rc;
}

/* Page locked, a free run slot: [lo, hi) joins the dirty runs, merging those it overlaps or
 * touches. */
static void add_run(cc_frame *f, uint32_t lo, uint32_t hi)
{
    uint32_t i = 0;
    while (i < f->nruns && CC_HI(f, i) < lo)
        i++;
    uint32_t j = i, nlo = lo, nhi = hi;
    while (j < f->nruns && CC_LO(f, j) <= hi) {
        if (CC_LO(f, j) < nlo)
            nlo = CC_LO(f, j);
        if (CC_HI(f, j) > nhi)
            nhi = CC_HI(f, j);
        j++;
    }
    /* runs i..j-1 become one run at i */
    uint32_t keep = f->nruns - j;
    memmove(&CC_LO(f, i + 1), &CC_LO(f, j), 2 * keep * sizeof *f->run);
    CC_LO(f, i) = nlo;
    CC_HI(f, i) = nhi;
    f->nruns = i + 1 + keep;
}

/* The page an access holds locked between two pieces that fall into it (a list access of many
 * small pieces takes each page's lock once, not once per piece). At most one at a time: it is
 * let go before another page is locked, so the one-lock-while-waiting rule holds. */
typedef struct cursor {
    uint64_t idx;
    cc_frame *f; /* NULL: none held */
} cursor;

static void let_go(cc *c, cursor *cur)
{
    if (cur->f)
        cc_unpin(c, cur->idx, cur->f);
    cur->f = NULL;
}

static int hold(cc *c, cursor *cur, uint64_t idx)
{
    if (cur->f && cur->idx == idx)
        return RFS_OK;
    let_go(c, cur);
    int rc = cc_pin(c, idx, 1, &cur->f);
    if (rc == RFS_OK)
        cur->idx = idx;
    return rc;
}

static int write_piece(cc *c, cursor *cur, uint64_t idx, uint32_t in, const uint8_t *src,
                       uint32_t k)
{
    int rc = hold(c, cur, idx);
    if (rc != RFS_OK)
        return rc;
    cc_frame *f = cur->f;
    if (f->nruns == c->max_runs && c->write_only) {
        /* No run left and no reading the server's bytes around them: the page goes below
         * early (answered, so a later fill elsewhere cannot overtake it). */
        rc = cc_write_pages(c, &f, &idx, 1, 0);
        if (rc != RFS_OK)
            return rc;
    } else if (f->nruns == c->max_runs) {
        /* No run left: with the server's bytes around them, the runs become one span. */
        if (!f->filled && (rc = fill(c, idx, f)) != RFS_OK)
            return rc;
        CC_HI(f, 0) = CC_HI(f, f->nruns - 1);
        f->nruns = 1;
    }
    memcpy(frame_data(c, idx, f) + in, src, k);
    add_run(f, in, in + k);
    f->writers[c->rank / 64] |= 1ull << (c->rank % 64);
    return RFS_OK;
}

/* [off, off+n) page by page, in increasing page order, one page lock at a time. */
static int pages_write(cc *c, cursor *cur, const uint8_t *src, uint64_t n, uint64_t off)
{
    uint64_t end = off + n;
    while (n) {
        uint64_t idx = off / c->page, in = off % c->page;
        uint64_t k = c->page - in < n ? c->page - in : n;
        int rc = write_piece(c, cur, idx, (uint32_t)in, src, (uint32_t)k);
        if (rc != RFS_OK)
            return rc;
        off += k, src += k, n -= k;
    }
    grow_eof(c, end);
    return RFS_OK;
}

/* Pages at most read from below by one request when a read needs several (16 MiB). */
#define FILL_BYTES (16ull << 20)
#define FILL_PAGES 64

/* Pages g[0..m) (numbers gi[], locked; g[0] may hold dirty runs, the others are new) read from
 * below with one list read: their bytes that are not dirty become the server's. */
static int fill_group(cc *c, cc_frame *const *g, const uint64_t *gi, size_t m)
{
    if (m == 1)
        return fill(c, gi[0], g[0]);
    uint8_t *tmp = malloc((size_t)(m * c->page));
    rfs_extent *ext = malloc(m * sizeof *ext);
    int rc = RFS_OK;
    size_t done = 0;
    if (!tmp || !ext)
        rc = rfs_fail(RFS_E_NOMEM, "%s:%s: no memory to read pages", c->io.server, c->io.path);
    for (size_t q = 0; rc == RFS_OK && q < m; q++)
        ext[q] = (rfs_extent){gi[q] * c->page, c->page};
    if (rc == RFS_OK)
        rc = c->below->ops->preadv(c->below, ext, m, tmp, &done);
    for (size_t q = 0; rc == RFS_OK && q < m; q++) {
        uint8_t *src = tmp + q * c->page, *d = frame_data(c, gi[q], g[q]);
        uint64_t at = q * c->page;
        uint64_t have = done > at ? (done - at < c->page ? done - at : c->page) : 0;
        memset(src + have, 0, (size_t)(c->page - have));
        uint32_t from = 0;
        for (uint32_t r = 0; r <= g[q]->nruns; r++) {
            uint32_t end = r < g[q]->nruns ? CC_LO(g[q], r) : (uint32_t)c->page;
            memcpy(d + from, src + from, end - from);
            if (r < g[q]->nruns)
                from = CC_HI(g[q], r);
        }
        g[q]->filled = 1;
    }
    if (rc == RFS_OK) {
        ADD(fills, m);
        ADD(fill_bytes, done);
    }
    free(tmp);
    free(ext);
    return rc;
}

/* [off, off+n) page by page, in increasing page order. A page that must be read from below
 * takes the next pages of the read that are not cached along (locked without waiting), so a
 * long read costs one request per FILL_BYTES instead of one per page. */
static int pages_read(cc *c, cursor *cur, uint8_t *dst, uint64_t n, uint64_t off)
{
    uint64_t max_group = FILL_BYTES / c->page;
    if (max_group < 1)
        max_group = 1;
    if (max_group > FILL_PAGES)
        max_group = FILL_PAGES;
    while (n) {
        uint64_t idx = off / c->page, in = off % c->page;
        uint64_t k = c->page - in < n ? c->page - in : n;
        cc_frame *g[FILL_PAGES];
        uint64_t gi[FILL_PAGES];
        int rc = hold(c, cur, idx);
        if (rc != RFS_OK)
            return rc;
        g[0] = cur->f;
        gi[0] = idx;
        size_t m = 1;
        int covered = g[0]->filled;
        for (uint32_t r = 0; !covered && r < g[0]->nruns; r++)
            covered = CC_LO(g[0], r) <= in && in + k <= CC_HI(g[0], r);
        if (covered) {
            ADD(hits, 1);
        } else {
            uint64_t last = (off + n - 1) / c->page;
            while (m < max_group && idx + m <= last && cc_pin_new(c, idx + m, &g[m]) == RFS_OK &&
                   g[m]) {
                gi[m] = idx + m;
                m++;
            }
            rc = fill_group(c, g, gi, m);
        }
        for (size_t q = 0; q < m; q++) {
            if (rc == RFS_OK) {
                in = off % c->page;
                k = c->page - in < n ? c->page - in : n;
                memcpy(dst, frame_data(c, gi[q], g[q]) + in, (size_t)k);
                off += k, dst += k, n -= k;
            }
            if (q + 1 < m) { /* the last one stays held: the next piece may be in it */
                if (q == 0)
                    cur->f = NULL; /* g[0] was the cursor's */
                cc_unpin(c, gi[q], g[q]);
            } else if (q > 0) {
                cur->idx = gi[q];
                cur->f = g[q];
            }
        }
        if (rc != RFS_OK)
            return rc;
    }
    return RFS_OK;
}

static int cc_pwrite(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done)
{
    cc *c = C(io);
    *done = 0;
    if (!caching(c)) {
        ADD(direct_bytes, len);
        int rc = c->below->ops->pwrite(c->below, buf, len, off, done);
        if (rc == RFS_OK && !__atomic_load_n(&c->detached, __ATOMIC_ACQUIRE))
            grow_eof(c, off + *done);
        return rc;
    }
    cursor cur = {0, NULL};
    int rc = pages_write(c, &cur, buf, len, off);
    let_go(c, &cur);
    ADD(writes, 1);
    ADD(write_bytes, len);
    if (rc == RFS_OK)
        *done = len;
    return rc;
}

static int cc_pwritev(rfs_io *io, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    cc *c = C(io);
    *done = 0;
    if (!caching(c)) {
        uint64_t lo, hi;
        rfs_extents_span(ext, n, &lo, &hi);
        for (size_t i = 0; i < n; i++)
            ADD(direct_bytes, ext[i].length);
        int rc = c->below->ops->pwritev(c->below, ext, n, buf, done);
        if (rc == RFS_OK && n && !__atomic_load_n(&c->detached, __ATOMIC_ACQUIRE))
            grow_eof(c, hi);
        return rc;
    }
    const uint8_t *p = buf;
    uint64_t total = 0;
    cursor cur = {0, NULL};
    for (size_t i = 0; i < n; i++) {
        int rc = pages_write(c, &cur, p, ext[i].length, ext[i].offset);
        if (rc != RFS_OK) {
            let_go(c, &cur);
            return rc;
        }
        p += ext[i].length;
        total += ext[i].length;
    }
    let_go(c, &cur);
    ADD(writes, 1);
    ADD(write_bytes, total);
    *done = (size_t)total;
    return RFS_OK;
}

static int cc_pread(rfs_io *io, void *buf, size_t len, uint64_t off, size_t *done)
{
    cc *c = C(io);
    *done = 0;
    if (!caching(c) || c->write_only) {
        ADD(direct_bytes, len);
        return c->below->ops->pread(c->below, buf, len, off, done);
    }
    uint64_t eof = __atomic_load_n(&cc_head_of(c, 0)->eof, __ATOMIC_ACQUIRE);
    uint64_t n = off >= eof ? 0 : eof - off < len ? eof - off : len;
    cursor cur = {0, NULL};
    int rc = pages_read(c, &cur, buf, n, off);
    let_go(c, &cur);
    ADD(reads, 1);
    ADD(read_bytes, n);
    if (rc == RFS_OK)
        *done = (size_t)n;
    return rc;
}

static int cc_preadv(rfs_io *io, const rfs_extent *ext, size_t n, void *buf, size_t *done)
{
    cc *c = C(io);
    *done = 0;
    if (!caching(c) || c->write_only) {
        for (size_t i = 0; i < n; i++)
            ADD(direct_bytes, ext[i].length);
        return c->below->ops->preadv(c->below, ext, n, buf, done);
    }
    /* As a list read of the server: the bytes before the end of file, in order. */
    uint64_t eof = __atomic_load_n(&cc_head_of(c, 0)->eof, __ATOMIC_ACQUIRE);
    uint8_t *p = buf;
    uint64_t total = 0;
    cursor cur = {0, NULL};
    for (size_t i = 0; i < n; i++) {
        uint64_t off = ext[i].offset, len = ext[i].length;
        uint64_t k = off >= eof ? 0 : eof - off < len ? eof - off : len;
        int rc = pages_read(c, &cur, p, k, off);
        if (rc != RFS_OK) {
            let_go(c, &cur);
            return rc;
        }
        p += k;
        total += k;
        if (k < len)
            break;
    }
    let_go(c, &cur);
    ADD(reads, 1);
    ADD(read_bytes, total);
    *done = (size_t)total;
    return RFS_OK;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Whether the dirty runs of f hold bytes of a rank in mask. */
static int holds(const cc_frame *f, const uint64_t *mask)
{
    for (int w = 0; w < CC_WORDS; w++)
        if (f->writers[w] & mask[w])
            return 1;
    return 0;
}

#define BATCH_PAGES 256
#define BATCH_BYTES (32ull << 20)

/* mu held. The dirty pages of segment `only` (-1: every segment) holding bytes of a rank in
 * mask, in increasing page order as list writes, each batch answered by the server before its
 * page locks go. Failures are kept for the report. */
static void write_dirty(cc *c, int only, const uint64_t *mask)
{
    /* The candidates, read without locks (each is checked again under its page lock). */
    size_t cap = 64, n = 0;
    uint64_t *cand = malloc(cap * sizeof *cand);
    for (int o = 0; cand && o < c->n; o++) {
        if (only >= 0 && o != only)
            continue;
        for (uint64_t i = 0; cand && i < c->nframes; i++) {
            cc_frame *f = cc_frame_at(c, o, i);
            if (!__atomic_load_n(&f->used, __ATOMIC_ACQUIRE) ||
                !__atomic_load_n(&f->nruns, __ATOMIC_ACQUIRE) || !holds(f, mask))
                continue;
            if (n == cap) {
                uint64_t *nc = realloc(cand, cap * 2 * sizeof *nc);
                if (!nc) {
                    free(cand);
                    cand = NULL;
                    break;
                }
                cand = nc, cap *= 2;
            }
            cand[n++] = __atomic_load_n(&f->idx, __ATOMIC_ACQUIRE);
        }
    }
    if (!cand)
        note_fail(c, RFS_E_NOMEM, "%s:%s: no memory to list the dirty pages", c->io.server,
                  c->io.path);
    else
        qsort(cand, n, sizeof *cand, cmp_u64);
    cc_frame *fr[BATCH_PAGES];
    uint64_t ids[BATCH_PAGES];
    size_t i = 0;
    while (cand && i < n) {
        /* Page locks in increasing page order, held until the server answered the batch. */
        size_t k = 0;
        uint64_t bytes = 0;
        for (; i < n && k < BATCH_PAGES && bytes < BATCH_BYTES; i++) {
            if (i && cand[i] == cand[i - 1])
                continue;
            cc_frame *f;
            int rc = cc_pin(c, cand[i], 0, &f);
            if (rc != RFS_OK) {
                note_fail(c, rc, "%s", rfs_last_error());
                continue;
            }
            if (!f)
                continue; /* written and dropped to make room meanwhile */
            if (!f->nruns || !holds(f, mask)) {
                cc_unpin(c, cand[i], f);
                continue;
            }
            fr[k] = f;
            ids[k++] = cand[i];
            bytes += c->page;
        }
        int rc = cc_write_pages(c, fr, ids, k, 0);
        if (rc != RFS_OK)
            note_fail(c, rc, "%s", rfs_last_error());
        for (size_t q = 0; q < k; q++)
            cc_unpin(c, ids[q], fr[q]);
    }
    free(cand);
}

/* mu held. The dirty pages holding bytes of this rank or of peers that died, in increasing page
 * order as list writes, each answered by the server; then the failures others handed to this
 * rank, and deaths of peers not yet reported. Returns (and forgets) the first failure. */
static int flush_mine(cc *c)
{
    if (c->detached)
        return RFS_OK;
    uint64_t mask[CC_WORDS] = {0};
    mask[c->rank / 64] |= 1ull << (c->rank % 64);
    for (int d = 0; d < c->n; d++) {
        cc_head *h = cc_head_of(c, d);
        if (d == c->rank || __atomic_load_n(&h->state, __ATOMIC_ACQUIRE) == CC_CLOSED ||
            !rfs_shm_pid_dead(__atomic_load_n(&h->pid, __ATOMIC_ACQUIRE)))
            continue;
        mask[d / 64] |= 1ull << (d % 64);
        if (!c->noted[d]) {
            c->noted[d] = 1;
            note_fail(c, RFS_E_IO,
                      "%s:%s: rank %d (pid %d) of this node ended without closing the file; "
                      "what it wrote since its last sync may not be in the file",
                      c->io.server, c->io.path, d, (int)h->pid);
        }
    }
    /* First the dirty pages this rank manages, whoever wrote them: when the ranks sync together
     * (MPI_File_sync and close are collective), each writes its own share, in parallel over its
     * own connection, instead of all of them queueing for the same pages. Then whatever still
     * holds this rank's bytes (pages of ranks that have not synced yet). */
    uint64_t any[CC_WORDS];
    memset(any, 0xff, sizeof any);
    write_dirty(c, c->rank, any);
    write_dirty(c, -1, mask);
    /* Bytes written straight below (atomic mode) are answered too. */
    int rc = c->below->ops->flush(c->below, 1);
    if (rc != RFS_OK)
        note_fail(c, rc, "%s", rfs_last_error());
    cc_head *me = cc_head_of(c, c->rank);
    int32_t e = __atomic_exchange_n(&me->err, 0, __ATOMIC_ACQ_REL);
    if (e) {
        int by = __atomic_load_n(&me->err_by, __ATOMIC_ACQUIRE);
        if (by >= 0 && by < c->n && rfs_shm_pid_dead(cc_head_of(c, by)->pid))
            note_fail(c, e,
                      "%s:%s: rank %d of this node died while it held a cached page with this "
                      "rank's unsynced bytes; they are lost",
                      c->io.server, c->io.path, by);
        else
            note_fail(c, e,
                      "%s:%s: rank %d's write of cached pages holding this rank's bytes failed: "
                      "%s",
                      c->io.server, c->io.path, by, rfs_strerror(e));
    }
    for (int o = 0; o < c->n; o++)
        if (__atomic_load_n(&cc_head_of(c, o)->broken, __ATOMIC_ACQUIRE))
            note_fail(c, RFS_E_IO,
                      "%s:%s: a process died while changing rank %d's page table of the "
                      "collaborative cache",
                      c->io.server, c->io.path, o);
    if (!c->sticky)
        return RFS_OK;
    rc = rfs_fail(c->sticky, "%s", c->sticky_msg);
    c->sticky = 0;
    return rc;
}

int rfs_cc_flush_mine(rfs_io *io)
{
    cc *c = C(io);
    pthread_mutex_lock(&c->mu);
    int rc = flush_mine(c);
    if (rc != RFS_OK) /* kept for the close or sync that reports */
        note_fail(c, rc, "%s", rfs_last_error());
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int cc_sync(rfs_io *io)
{
    cc *c = C(io);
    pthread_mutex_lock(&c->mu);
    int rc = flush_mine(c);
    pthread_mutex_unlock(&c->mu);
    if (rc != RFS_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", rfs_last_error());
        c->below->ops->sync(c->below);
        return rfs_fail(rc, "%s", msg);
    }
    return c->below->ops->sync(c->below);
}

/* The cached bytes are every rank's already (one copy): only what went straight below waits. */
static int cc_flush(rfs_io *io, int report)
{
    cc *c = C(io);
    return c->below->ops->flush(c->below, report);
}

static int cc_get_size(rfs_io *io, uint64_t *size)
{
    cc *c = C(io);
    int rc = c->below->ops->get_size(c->below, size);
    if (rc != RFS_OK || !caching(c))
        return rc;
    uint64_t eof = __atomic_load_n(&cc_head_of(c, 0)->eof, __ATOMIC_ACQUIRE);
    if (eof > *size)
        *size = eof;
    return RFS_OK;
}

/* Pages at or after `size` that nobody has dirtied are dropped (their cached bytes past the new
 * end are stale); dirty ones lose what they had cached of the server's bytes. */
static void forget_from(cc *c, uint64_t size)
{
    for (int o = 0; o < c->n; o++) {
        for (uint64_t i = 0; i < c->nframes; i++) {
            cc_frame *fi = cc_frame_at(c, o, i);
            if (!__atomic_load_n(&fi->used, __ATOMIC_ACQUIRE))
                continue;
            uint64_t idx = __atomic_load_n(&fi->idx, __ATOMIC_ACQUIRE);
            if ((idx + 1) * c->page <= size)
                continue;
            cc_frame *f;
            if (cc_pin(c, idx, 0, &f) != RFS_OK || !f) {
                rfs_clear_error();
                continue;
            }
            if (f->nruns == 0) {
                cc_free_frame(c, o, f);
            } else {
                f->filled = 0;
                cc_unpin(c, idx, f);
            }
        }
    }
}

static int cc_set_size(rfs_io *io, uint64_t size)
{
    cc *c = C(io);
    if (!caching(c))
        return c->below->ops->set_size(c->below, size);
    pthread_mutex_lock(&c->mu);
    int rc = flush_mine(c);
    if (rc != RFS_OK)
        note_fail(c, rc, "%s", rfs_last_error());
    pthread_mutex_unlock(&c->mu);
    rc = c->below->ops->set_size(c->below, size);
    if (rc != RFS_OK)
        return rc;
    __atomic_store_n(&cc_head_of(c, 0)->eof, size, __ATOMIC_RELEASE);
    forget_from(c, size);
    return RFS_OK;
}

static int cc_preallocate(rfs_io *io, uint64_t size)
{
    cc *c = C(io);
    int rc = c->below->ops->preallocate(c->below, size);
    if (rc == RFS_OK && caching(c))
        grow_eof(c, size);
    return rc;
}

static int cc_counter(rfs_io *io, uint32_t key, int set, int64_t delta, int64_t *old)
{
    cc *c = C(io);
    return c->below->ops->counter(c->below, key, set, delta, old);
}

static int cc_lock(rfs_io *io, uint64_t off, uint64_t len, unsigned mode, int wait_ms)
{
    cc *c = C(io);
    return c->below->ops->lock(c->below, off, len, mode, wait_ms);
}

static int cc_unlock(rfs_io *io, uint64_t off, uint64_t len)
{
    cc *c = C(io);
    return c->below->ops->unlock(c->below, off, len);
}

void rfs_cc_detach(rfs_io *io)
{
    cc *c = C(io);
    pthread_mutex_lock(&c->mu);
    if (!c->detached) {
        cc_head *h = cc_head_of(c, c->rank);
        __atomic_store_n(&h->state, CC_CLOSED, __ATOMIC_SEQ_CST);
        c->st.frames_peak = __atomic_load_n(&h->peak, __ATOMIC_ACQUIRE);
        __atomic_store_n(&c->detached, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&c->mu);
}

void rfs_cc_set_enabled(rfs_io *io, int on)
{
    cc *c = C(io);
    pthread_mutex_lock(&c->mu);
    if (!on && c->enabled) {
        int rc = flush_mine(c);
        if (rc != RFS_OK)
            note_fail(c, rc, "%s", rfs_last_error());
    } else if (on && !c->enabled) {
        c->below->ops->flush(c->below, 0); /* straight writes answered before pages are read */
    }
    __atomic_store_n(&c->enabled, on != 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&c->mu);
}

void rfs_cc_drop_own(rfs_io *io)
{
    cc *c = C(io);
    if (c->detached)
        return;
    for (uint64_t i = 0; i < c->nframes; i++) {
        cc_frame *fi = cc_frame_at(c, c->rank, i);
        if (!__atomic_load_n(&fi->used, __ATOMIC_ACQUIRE))
            continue;
        uint64_t idx = __atomic_load_n(&fi->idx, __ATOMIC_ACQUIRE);
        cc_frame *f;
        if (cc_pin(c, idx, 0, &f) != RFS_OK || !f) {
            rfs_clear_error();
            continue;
        }
        if (f->nruns == 0)
            cc_free_frame(c, c->rank, f);
        else
            cc_unpin(c, idx, f); /* a writer's flush failed: kept for its next sync */
    }
}

void rfs_cc_get_stats(rfs_io *io, rfs_cc_stats *s)
{
    cc *c = C(io);
    pthread_mutex_lock(&c->mu);
    *s = c->st;
    if (!c->detached)
        s->frames_peak = __atomic_load_n(&cc_head_of(c, c->rank)->peak, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&c->mu);
}

static int cc_close(rfs_io *io)
{
    cc *c = C(io);
    pthread_mutex_lock(&c->mu);
    int rc = flush_mine(c);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rc != RFS_OK ? rfs_last_error() : "");
    pthread_mutex_unlock(&c->mu);
    rfs_cc_detach(io);
    if (rc == RFS_OK && c->sticky) {
        rc = c->sticky;
        snprintf(msg, sizeof msg, "%s", c->sticky_msg);
    }
    if (c->stats_name) {
        rfs_cc_stats s;
        rfs_cc_get_stats(io, &s);
        fprintf(stderr,
                "rfs stats %s: collaborative cache: reads %llu (%llu bytes), writes %llu "
                "(%llu bytes), hits %llu, fills %llu (%llu bytes), evictions %llu, flushed pages "
                "%llu (%llu bytes), direct %llu bytes, frames peak %llu of %llu, page %llu\n",
                c->stats_name, (unsigned long long)s.reads, (unsigned long long)s.read_bytes,
                (unsigned long long)s.writes, (unsigned long long)s.write_bytes,
                (unsigned long long)s.hits, (unsigned long long)s.fills,
                (unsigned long long)s.fill_bytes, (unsigned long long)s.evictions,
                (unsigned long long)s.flushed_pages, (unsigned long long)s.flushed_bytes,
                (unsigned long long)s.direct_bytes, (unsigned long long)s.frames_peak,
                (unsigned long long)s.frames, (unsigned long long)s.page_size);
    }
    rfs_io *below = c->below;
    free(c->seg);
    free(c->noted);
    pthread_mutex_destroy(&c->mu);
    free(c);
    int brc = below->ops->close(below);
    if (rc != RFS_OK)
        return rfs_fail(rc, "%s", msg);
    return brc;
}

static const rfs_io_ops ops = {
    .pread = cc_pread,
    .pwrite = cc_pwrite,
    .preadv = cc_preadv,
    .pwritev = cc_pwritev,
    .pwritev_gather = rfs_io_gen_pwritev_gather,
    .sync = cc_sync,
    .flush = cc_flush,
    .write_mark = rfs_io_gen_write_mark,
    .mark_answered = rfs_io_gen_mark_answered,
    .get_size = cc_get_size,
    .set_size = cc_set_size,
    .preallocate = cc_preallocate,
    .counter = cc_counter,
    .lock = cc_lock,
    .unlock = cc_unlock,
    .set_view = rfs_io_gen_set_view,
    .view_read = rfs_io_gen_view_read,
    .view_write = rfs_io_gen_view_write,
    .close = cc_close,
    .version = rfs_io_gen_version,
    .remove = rfs_io_gen_remove,
    .start = rfs_io_gen_start,
    .end = rfs_io_gen_end,
    .coll_join = rfs_io_gen_coll_join,
    .coll_listio = rfs_io_gen_coll_listio,
};

const rfs_io_ops *rfs_cc_ops(void)
{
    return &ops;
}

int rfs_cc_wrap(rfs_io *below, const rfs_cc_config *cf, rfs_io **out)
{
    *out = NULL;
    if (!below || !cf || cf->nranks < 1 || cf->nranks > RFS_CC_MAX_RANKS || cf->rank < 0 ||
        cf->rank >= cf->nranks || !cf->segments || cf->page_size < RFS_CC_MIN_PAGE ||
        cf->page_size > RFS_CC_MAX_PAGE)
        return rfs_fail(RFS_E_INVAL, "collaborative cache: bad configuration");
    cc *c = calloc(1, sizeof *c);
    if (!c)
        return rfs_fail(RFS_E_NOMEM, "collaborative cache: no memory");
    c->io.ops = &ops;
    /* Views are mapped above (list I/O through the pages); locks and counters pass below. */
    c->io.features = below->features & (RFS_IO_F_LOCKS | RFS_IO_F_COUNTERS);
    memcpy(c->io.server, below->server, sizeof c->io.server);
    memcpy(c->io.path, below->path, sizeof c->io.path);
    c->below = below;
    c->rank = cf->rank;
    c->n = cf->nranks;
    c->pid = (int32_t)getpid();
    c->page = cf->page_size;
    size_t total;
    cc_layout(c, c->n, c->page, cf->max_memory, &total);
    c->timeout_ms = cf->timeout_ms;
    c->write_only = cf->write_only != 0;
    c->enabled = 1;
    c->stats_name = cf->stats_name;
    c->st.frames = c->nframes;
    c->st.page_size = c->page;
    pthread_mutex_init(&c->mu, NULL);
    c->seg = calloc((size_t)c->n, sizeof *c->seg);
    c->noted = calloc((size_t)c->n, 1);
    if (!c->seg || !c->noted) {
        free(c->seg);
        free(c->noted);
        pthread_mutex_destroy(&c->mu);
        free(c);
        return rfs_fail(RFS_E_NOMEM, "collaborative cache: no memory");
    }
    for (int r = 0; r < c->n; r++)
        c->seg[r] = cf->segments[r];
    cc_head *h = cc_head_of(c, c->rank);
    __atomic_store_n(&h->pid, c->pid, __ATOMIC_SEQ_CST);
    __atomic_store_n(&h->state, CC_OPEN, __ATOMIC_SEQ_CST);
    /* The group's end of file starts at the server's (every rank raises it to what it sees). */
    uint64_t size = 0;
    if (cf->size >= 0)
        grow_eof(c, (uint64_t)cf->size);
    else if (below->ops->get_size(below, &size) == RFS_OK)
        grow_eof(c, size);
    else
        rfs_clear_error();
    *out = &c->io;
    return RFS_OK;
}
