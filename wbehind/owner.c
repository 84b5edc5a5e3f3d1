/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The owner side of write-behind: a background thread that takes the pieces other ranks (and
 * this one) posted for the pages this rank owns, keeps them in pages, and writes pages below.
 * Only this thread touches the pages; it never calls MPI. */
#include "wbehind/wb_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"

static uint64_t pad8(uint64_t n)
{
    return (n + 7) & ~(uint64_t)7;
}

/* Full pages go below together once they hold this many bytes (or at a flush): one list write
 * that the client spreads over the file's streams, where single page writes would all travel
 * on its first connection (the write window's). */
#define WB_BATCH_BYTES (8ull << 20)
/* Runs per list write (the MPI-IO layer's rfs_max_extents default). */
#define WB_BATCH_RUNS 16384

int wb_write_records(rfs_io *below, const uint8_t *rec, uint64_t len, uint64_t *bytes)
{
    int first = RFS_OK;
    for (uint64_t p = 0; p + WB_REC_HDR <= len;) {
        uint64_t off, n;
        memcpy(&off, rec + p, 8);
        memcpy(&n, rec + p + 8, 8);
        if (n > len - p - WB_REC_HDR)
            break; /* cannot happen: only this library writes records */
        size_t done = 0;
        int rc = below->ops->pwrite(below, rec + p + WB_REC_HDR, (size_t)n, off, &done);
        if (rc != RFS_OK && first == RFS_OK)
            first = rc;
        *bytes += n;
        p += WB_REC_HDR + pad8(n);
    }
    return first;
}

int wb_owner_init(wb *w, uint64_t max_memory)
{
    wb_owner *o = &w->own;
    o->nbuckets = 1024;
    o->hash = calloc(o->nbuckets, sizeof *o->hash);
    o->pend = calloc((size_t)w->n, 1);
    o->max_pages = max_memory / w->page;
    if (o->max_pages == 0)
        o->max_pages = 1;
    return o->hash && o->pend ? RFS_OK : RFS_E_NOMEM;
}

static void lru_unlink(wb_owner *o, wb_page *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        o->lru_head = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        o->lru_tail = p->prev;
    p->prev = p->next = NULL;
}

static void lru_front(wb_owner *o, wb_page *p)
{
    p->next = o->lru_head;
    p->prev = NULL;
    if (o->lru_head)
        o->lru_head->prev = p;
    o->lru_head = p;
    if (!o->lru_tail)
        o->lru_tail = p;
}

static void page_free(wb_page *p)
{
    free(p->data);
    free(p->lo);
    free(p->hi);
    free(p->srcs);
    free(p);
}

static void page_drop(wb *w, wb_page *p)
{
    wb_owner *o = &w->own;
    wb_page **pp = &o->hash[p->idx % o->nbuckets];
    while (*pp != p)
        pp = &(*pp)->hnext;
    *pp = p->hnext;
    lru_unlink(o, p);
    o->npages--;
    page_free(p);
}

void wb_owner_free(wb *w)
{
    wb_owner *o = &w->own;
    while (o->lru_head)
        page_drop(w, o->lru_head);
    free(o->hash);
    free(o->pend);
    free(o->iov);
    free(o->ext);
    free(o->batch);
    memset(o, 0, sizeof *o);
}

/* The writer src hears of rc at its next flush (the first failure wins). */
static void hand_error(wb *w, int src, int rc)
{
    wb_chan *c = wb_chan_of(w, src, w->rank);
    int32_t zero = 0;
    __atomic_compare_exchange_n(&c->err, &zero, (int32_t)rc, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/* A failure below may be this write's or an earlier one's that returned early (the write
 * window): everyone whose bytes went below since the last flush below hears of it. */
static void below_failed(wb *w, const uint8_t *srcs, int rc)
{
    for (int r = 0; r < w->n; r++)
        if ((srcs && srcs[r]) || w->own.pend[r])
            hand_error(w, r, rc);
}

static int scratch(wb *w, size_t n)
{
    wb_owner *o = &w->own;
    if (n <= o->scratch_cap)
        return RFS_OK;
    struct iovec *iov = realloc(o->iov, n * sizeof *iov);
    if (iov)
        o->iov = iov;
    rfs_extent *ext = realloc(o->ext, n * sizeof *ext);
    if (ext)
        o->ext = ext;
    if (!iov || !ext)
        return RFS_E_NOMEM;
    o->scratch_cap = n;
    return RFS_OK;
}

static void written(wb *w, wb_page *p, int rc)
{
    __atomic_add_fetch(&w->st.pages_written, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&w->st.page_bytes, p->dirty, __ATOMIC_RELAXED);
    if (rc != RFS_OK)
        below_failed(w, p->srcs, rc);
    for (int r = 0; r < w->n; r++)
        if (p->srcs[r])
            w->own.pend[r] = 1;
}

/* (the owner's counters are read by the application thread: atomics) */
static int page_write(wb *w, wb_page *p)
{
    wb_owner *o = &w->own;
    rfs_io *b = w->below;
    uint64_t base = p->idx * w->page;
    size_t done = 0;
    int rc;
    if (p->nr == 1) {
        rc = b->ops->pwrite(b, p->data + p->lo[0], (size_t)(p->hi[0] - p->lo[0]), base + p->lo[0],
                            &done);
    } else if ((rc = scratch(w, (size_t)p->nr)) == RFS_OK) {
        for (int i = 0; i < p->nr; i++) {
            o->ext[i] = (rfs_extent){base + p->lo[i], p->hi[i] - p->lo[i]};
            o->iov[i] = (struct iovec){p->data + p->lo[i], (size_t)(p->hi[i] - p->lo[i])};
        }
        rc = b->ops->pwritev_gather(b, o->ext, (size_t)p->nr, o->iov, (size_t)p->nr, &done);
    }
    written(w, p, rc);
    return rc;
}

/* The pages p[0..n), their dirty runs in as few list writes as WB_BATCH_RUNS allows. */
static void pages_write(wb *w, wb_page **p, size_t n)
{
    wb_owner *o = &w->own;
    size_t i = 0;
    while (i < n) {
        size_t k = 0, j = i;
        for (; j < n && (k == 0 || k + (size_t)p[j]->nr <= WB_BATCH_RUNS); j++)
            k += (size_t)p[j]->nr;
        int rc = scratch(w, k);
        if (rc == RFS_OK) {
            size_t e = 0;
            for (size_t q = i; q < j; q++) {
                uint64_t base = p[q]->idx * w->page;
                for (int r = 0; r < p[q]->nr; r++, e++) {
                    o->ext[e] = (rfs_extent){base + p[q]->lo[r], p[q]->hi[r] - p[q]->lo[r]};
                    o->iov[e] = (struct iovec){p[q]->data + p[q]->lo[r],
                                               (size_t)(p[q]->hi[r] - p[q]->lo[r])};
                }
            }
            size_t done = 0;
            rc = w->below->ops->pwritev_gather(w->below, o->ext, k, o->iov, k, &done);
        }
        for (size_t q = i; q < j; q++)
            written(w, p[q], rc);
        i = j;
    }
}

static void batch_write(wb *w)
{
    wb_owner *o = &w->own;
    pages_write(w, o->batch, o->nbatch);
    for (size_t i = 0; i < o->nbatch; i++)
        page_drop(w, o->batch[i]);
    o->nbatch = 0;
}

/* A page just became full: into the batch, which goes below once it is large enough. */
static void page_full(wb *w, wb_page *p)
{
    wb_owner *o = &w->own;
    if (!p->full && o->nbatch == o->batch_cap) {
        size_t nc = o->batch_cap ? o->batch_cap * 2 : 16;
        wb_page **nb = realloc(o->batch, nc * sizeof *nb);
        if (!nb) {
            page_write(w, p);
            page_drop(w, p);
            return;
        }
        o->batch = nb;
        o->batch_cap = nc;
    }
    if (!p->full) {
        p->full = 1;
        o->batch[o->nbatch++] = p;
    }
    if ((uint64_t)o->nbatch * w->page >= WB_BATCH_BYTES)
        batch_write(w);
}

static wb_page *page_get(wb *w, uint64_t idx)
{
    wb_owner *o = &w->own;
    for (wb_page *p = o->hash[idx % o->nbuckets]; p; p = p->hnext)
        if (p->idx == idx) {
            lru_unlink(o, p);
            lru_front(o, p);
            return p;
        }
    if (o->npages >= o->max_pages && o->lru_tail) {
        if (o->nbatch)
            batch_write(w); /* full pages first: they go below anyway */
    }
    if (o->npages >= o->max_pages && o->lru_tail) {
        wb_page *old = o->lru_tail;
        page_write(w, old);
        page_drop(w, old);
        __atomic_add_fetch(&w->st.evictions, 1, __ATOMIC_RELAXED);
    }
    wb_page *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->idx = idx;
    p->data = malloc((size_t)w->page);
    p->srcs = calloc((size_t)w->n, 1);
    p->cap = 8;
    p->lo = malloc((size_t)p->cap * sizeof *p->lo);
    p->hi = malloc((size_t)p->cap * sizeof *p->hi);
    if (!p->data || !p->srcs || !p->lo || !p->hi) {
        page_free(p);
        return NULL;
    }
    p->hnext = o->hash[idx % o->nbuckets];
    o->hash[idx % o->nbuckets] = p;
    lru_front(o, p);
    if (++o->npages > __atomic_load_n(&w->st.pages_peak, __ATOMIC_RELAXED))
        __atomic_store_n(&w->st.pages_peak, o->npages, __ATOMIC_RELAXED);
    return p;
}

/* Adds [lo, hi) to the page's dirty runs, merging the runs it overlaps or touches. */
static int add_run(wb_page *p, uint64_t lo, uint64_t hi)
{
    int i = 0;
    while (i < p->nr && p->hi[i] < lo)
        i++;
    int j = i;
    uint64_t nlo = lo, nhi = hi, removed = 0;
    while (j < p->nr && p->lo[j] <= hi) {
        if (p->lo[j] < nlo)
            nlo = p->lo[j];
        if (p->hi[j] > nhi)
            nhi = p->hi[j];
        removed += p->hi[j] - p->lo[j];
        j++;
    }
    if (i == j && p->nr == p->cap) {
        int nc = p->cap * 2;
        uint64_t *l2 = realloc(p->lo, (size_t)nc * sizeof *l2);
        if (l2)
            p->lo = l2;
        uint64_t *h2 = realloc(p->hi, (size_t)nc * sizeof *h2);
        if (h2)
            p->hi = h2;
        if (!l2 || !h2)
            return RFS_E_NOMEM;
        p->cap = nc;
    }
    /* runs i..j-1 become one run at i */
    int shift = 1 - (j - i);
    if (shift != 0)
        memmove(p->lo + i + 1, p->lo + j, (size_t)(p->nr - j) * sizeof *p->lo),
            memmove(p->hi + i + 1, p->hi + j, (size_t)(p->nr - j) * sizeof *p->hi);
    p->nr += shift;
    p->lo[i] = nlo;
    p->hi[i] = nhi;
    p->dirty = p->dirty - removed + (nhi - nlo);
    return RFS_OK;
}

static void apply(wb *w, int src, uint64_t off, const uint8_t *d, uint64_t n)
{
    while (n) {
        uint64_t idx = off / w->page, in = off % w->page;
        uint64_t k = w->page - in < n ? w->page - in : n;
        wb_page *p = page_get(w, idx);
        int rc = RFS_OK;
        if (p) {
            memcpy(p->data + in, d, (size_t)k);
            p->srcs[src] = 1;
            rc = add_run(p, in, in + k);
            if (rc == RFS_OK && p->dirty == w->page)
                page_full(w, p); /* a whole page: the unit the server prefers */
        }
        if (!p || rc != RFS_OK) {
            /* No memory for the page: these bytes go below at once. */
            size_t done = 0;
            if (p && !p->full) {
                page_write(w, p);
                page_drop(w, p);
            }
            w->own.pend[src] = 1;
            int wrc = w->below->ops->pwrite(w->below, d, (size_t)k, off, &done);
            if (wrc != RFS_OK)
                below_failed(w, NULL, wrc), hand_error(w, src, wrc);
        }
        off += k;
        d += k;
        n -= k;
    }
}

static void drain(wb *w, int src, wb_chan *c)
{
    const uint8_t *rec = wb_chan_data(c);
    uint64_t len = __atomic_load_n(&c->used, __ATOMIC_ACQUIRE);
    if (len > w->bufsz)
        len = w->bufsz;
    for (uint64_t p = 0; p + WB_REC_HDR <= len;) {
        uint64_t off, n;
        memcpy(&off, rec + p, 8);
        memcpy(&n, rec + p + 8, 8);
        if (n > len - p - WB_REC_HDR)
            break;
        apply(w, src, off, rec + p + WB_REC_HDR, n);
        p += WB_REC_HDR + pad8(n);
    }
}

/* Every page below, then waits for the answers. */
static void flush_all(wb *w)
{
    wb_owner *o = &w->own;
    /* Every page, full or not, in list writes (the batch's pages are in the LRU list too). */
    wb_page **all = o->npages ? malloc((size_t)o->npages * sizeof *all) : NULL;
    size_t k = 0;
    if (all) {
        for (wb_page *p = o->lru_head; p; p = p->next)
            all[k++] = p;
        pages_write(w, all, k);
        for (size_t i = 0; i < k; i++)
            page_drop(w, all[i]);
        free(all);
    }
    while (o->lru_tail) { /* (no memory for the list: one page at a time) */
        wb_page *p = o->lru_tail;
        page_write(w, p);
        page_drop(w, p);
    }
    o->nbatch = 0;
    int any = 0;
    for (int r = 0; r < w->n; r++)
        any |= o->pend[r];
    if (!any)
        return;
    int rc = w->below->ops->flush(w->below, 1);
    if (rc != RFS_OK)
        below_failed(w, NULL, rc);
    memset(o->pend, 0, (size_t)w->n);
}

void *wb_owner_main(void *arg)
{
    wb *w = arg;
    wb_head *h = wb_head_of(w, w->rank);
    int closing = 0;
    uint64_t *req = calloc((size_t)w->n, sizeof *req);
    for (;;) {
        uint32_t bell = __atomic_load_n(&h->bell, __ATOMIC_ACQUIRE);
        if (!closing && __atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
            /* Writers that see CLOSED no longer wait for this thread; posts that raced with
             * it are taken by the pass below or, after GONE, back by their writers. */
            __atomic_store_n(&h->state, WB_CLOSED, __ATOMIC_SEQ_CST);
            closing = 1;
        }
        int work = 0, want_flush = 0;
        for (int src = 0; src < w->n; src++) {
            wb_chan *c = wb_chan_of(w, src, w->rank);
            uint64_t r = __atomic_load_n(&c->flush_req, __ATOMIC_ACQUIRE);
            if (req)
                req[src] = r;
            if (r > __atomic_load_n(&c->flush_done, __ATOMIC_ACQUIRE))
                want_flush = 1;
            uint32_t s = WB_POSTED;
            if (__atomic_compare_exchange_n(&c->state, &s, WB_TAKEN, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                drain(w, src, c);
                __atomic_store_n(&c->state, WB_EMPTY, __ATOMIC_RELEASE);
                rfs_shm_wake(&c->state);
                work = 1;
            }
        }
        if (want_flush || closing) {
            flush_all(w);
            for (int src = 0; src < w->n; src++) {
                wb_chan *c = wb_chan_of(w, src, w->rank);
                uint64_t r = req ? req[src] : __atomic_load_n(&c->flush_req, __ATOMIC_ACQUIRE);
                if (r > __atomic_load_n(&c->flush_done, __ATOMIC_ACQUIRE)) {
                    __atomic_store_n(&c->flush_done, r, __ATOMIC_RELEASE);
                    __atomic_add_fetch(&c->done_word, 1, __ATOMIC_RELEASE);
                    rfs_shm_wake(&c->done_word);
                }
            }
        }
        if (closing) {
            __atomic_store_n(&h->state, WB_GONE, __ATOMIC_SEQ_CST);
            for (int src = 0; src < w->n; src++) {
                wb_chan *c = wb_chan_of(w, src, w->rank);
                __atomic_add_fetch(&c->done_word, 1, __ATOMIC_RELEASE);
                rfs_shm_wake(&c->done_word);
                rfs_shm_wake(&c->state);
            }
            break;
        }
        if (!work && !want_flush)
            rfs_shm_wait(&h->bell, bell, 200);
    }
    free(req);
    return NULL;
}
