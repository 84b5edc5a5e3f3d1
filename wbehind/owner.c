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
    pthread_mutex_init(&o->qmu, NULL);
    pthread_cond_init(&o->q_cv, NULL);
    pthread_cond_init(&o->room_cv, NULL);
    o->q_init = 1;
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

void wb_page_free(wb_page *p)
{
    free(p->data);
    free(p->lo);
    free(p->hi);
    free(p->srcs);
    free(p);
}

/* Takes the page out of the owner's table (it then belongs to the caller). */
static void page_unhash(wb *w, wb_page *p)
{
    wb_owner *o = &w->own;
    wb_page **pp = &o->hash[p->idx % o->nbuckets];
    while (*pp != p)
        pp = &(*pp)->hnext;
    *pp = p->hnext;
    lru_unlink(o, p);
    o->npages--;
}

/* The page goes below, after every page handed over before it. */
static void page_send(wb *w, wb_page *p)
{
    page_unhash(w, p);
    wb_send(w, p);
}

void wb_owner_free(wb *w)
{
    wb_owner *o = &w->own;
    wb_sender_stop(w); /* (it writes what it was handed first) */
    while (o->lru_head) {
        wb_page *p = o->lru_head;
        page_unhash(w, p);
        wb_page_free(p);
    }
    free(o->hash);
    if (w->closing && o->pend && !w->close_pend) {
        w->close_pend = o->pend; /* what the close must vouch for (wb_close) */
        o->pend = NULL;
    }
    free(o->pend);
    free(o->iov);
    free(o->ext);
    if (o->q_init) {
        pthread_mutex_destroy(&o->qmu);
        pthread_cond_destroy(&o->q_cv);
        pthread_cond_destroy(&o->room_cv);
    }
    memset(o, 0, sizeof *o);
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
    /* Room: the pages in the table and those handed over but not written yet stay within
     * the cap. Handed-over pages go below anyway, so they are waited for first; only a table
     * that fills the cap alone gives up its least recently used page early. */
    if (o->npages >= o->max_pages && o->lru_tail) {
        page_send(w, o->lru_tail);
        __atomic_add_fetch(&w->st.evictions, 1, __ATOMIC_RELAXED);
    }
    wb_send_wait(w, o->max_pages - 1 - o->npages);
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
        wb_page_free(p);
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
                page_send(w, p); /* a whole page, the unit the server prefers: it goes now */
        }
        if (!p || rc != RFS_OK) {
            /* No memory for the page: these bytes go below at once, after every page handed
             * over before (which may hold older bytes of the same range). */
            size_t done = 0;
            if (p)
                page_send(w, p);
            wb_send_wait(w, 0);
            int wrc = w->below->ops->pwrite(w->below, d, (size_t)k, off, &done);
            pthread_mutex_lock(&w->own.qmu);
            w->own.pend[src] = 1;
            if (wrc != RFS_OK)
                wb_below_failed(w, NULL, wrc);
            pthread_mutex_unlock(&w->own.qmu);
            if (wrc != RFS_OK)
                wb_hand_error(w, src, wrc);
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

/* A flush: every page, full or not, to the sender (which writes them in file order), then a
 * marker that answers the flush requests reqs[] once they are written. The owner goes on
 * taking mailboxes meanwhile: a rank that reached its close early does not stop the others'
 * writes while the pages go. Without memory for the marker: waits here, then answers. */
static void flush_all(wb *w, const uint64_t *reqs)
{
    wb_owner *o = &w->own;
    while (o->lru_tail)
        page_send(w, o->lru_tail);
    if (reqs && wb_send_flush(w, reqs) == RFS_OK)
        return;
    wb_send_wait(w, 0);
    wb_flush_answer(w, reqs);
}

void *wb_owner_main(void *arg)
{
    wb *w = arg;
    wb_head *h = wb_head_of(w, w->rank);
    int closing = 0;
    uint64_t *req = calloc((size_t)w->n, sizeof *req);
    uint64_t *asked = calloc((size_t)w->n, sizeof *asked); /* in a flush handed over */
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
            if (r > __atomic_load_n(&c->flush_done, __ATOMIC_ACQUIRE) && (!asked || r > asked[src]))
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
            flush_all(w, req);
            if (asked && req)
                memcpy(asked, req, (size_t)w->n * sizeof *asked);
        }
        if (closing) {
            wb_send_wait(w, 0); /* pages and flush markers: all answered */
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
    free(asked);
    return NULL;
}
