/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The extents of each file (a sorted array: reads and prefetches walk it in file order) and the
 * pool's LRU list and memory count. Everything here runs under the pool's mu. */
#include "cache/cache_internal.h"

#include <stdlib.h>
#include <string.h>

static void *pool_make(rfs_runtime *rt)
{
    (void)rt;
    cx_pool *g = calloc(1, sizeof *g);
    if (g) {
        pthread_mutex_init(&g->mu, NULL);
        pthread_cond_init(&g->landed, NULL);
    }
    return g;
}

/* Every cached file of the runtime is closed by then: nothing is left in the pool. */
static void pool_destroy(void *part)
{
    cx_pool *g = part;
    pthread_cond_destroy(&g->landed);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

static const rfs_runtime_part_desc pool_desc = {
    .name = "read cache pool",
    .make = pool_make,
    .destroy = pool_destroy,
};

cx_pool *cx_pool_of(rfs_runtime *rt)
{
    return rfs_runtime_part(rt, &pool_desc);
}

size_t cx_find(const cx_file *f, uint64_t off)
{
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->v[mid]->off + f->v[mid]->len <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void lru_unlink(cx_ext *e)
{
    cx_pool *g = e->file->pool;
    if (e->prev)
        e->prev->next = e->next;
    else
        g->lru_head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        g->lru_tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push(cx_ext *e)
{
    cx_pool *g = e->file->pool;
    e->prev = NULL;
    e->next = g->lru_head;
    if (g->lru_head)
        g->lru_head->prev = e;
    g->lru_head = e;
    if (!g->lru_tail)
        g->lru_tail = e;
}

void cx_touch(cx_ext *e)
{
    cx_pool *g = e->file->pool;
    if (!e->ready || g->lru_head == e)
        return;
    lru_unlink(e);
    lru_push(e);
}

/* Takes e out of its file's array (it must be there). */
static void unlist(cx_ext *e)
{
    cx_file *f = e->file;
    size_t i = cx_find(f, e->off);
    while (i < f->n && f->v[i] != e)
        i++;
    if (i == f->n)
        return;
    memmove(&f->v[i], &f->v[i + 1], (f->n - i - 1) * sizeof *f->v);
    f->n--;
}

static void release(cx_ext *e)
{
    cx_pool *g = e->file->pool;
    if (e->unread)
        e->file->st.bytes_wasted += e->len;
    g->used -= e->alloc;
    free(e->buf);
    free(e);
}

/* A ready extent leaves the cache. */
static void evict(cx_ext *e)
{
    lru_unlink(e);
    unlist(e);
    release(e);
}

/* Frees ready extents, least recently used first, until `need` more bytes fit under the cap.
 * Prefetched bytes nobody has read yet go last: they are what the reader comes to next. */
static int make_room(cx_pool *g, uint64_t need)
{
    if (need > g->cap)
        return 0;
    while (g->used + need > g->cap) {
        cx_ext *victim = NULL;
        for (cx_ext *e = g->lru_tail; e; e = e->prev)
            if (!e->unread) {
                victim = e;
                break;
            }
        if (!victim)
            victim = g->lru_tail;
        if (!victim)
            return 0;
        victim->file->st.bytes_evicted += victim->len;
        evict(victim);
    }
    return 1;
}

cx_ext *cx_ext_new(cx_file *f, uint64_t off, uint64_t len)
{
    cx_pool *g = f->pool;
    if (len == 0 || !make_room(g, len))
        return NULL;
    if (f->n == f->cap) {
        size_t nc = f->cap ? f->cap * 2 : 64;
        cx_ext **nv = realloc(f->v, nc * sizeof *nv);
        if (!nv)
            return NULL;
        f->v = nv;
        f->cap = nc;
    }
    cx_ext *e = calloc(1, sizeof *e);
    uint8_t *d = malloc(len);
    if (!e || !d) {
        free(e);
        free(d);
        return NULL;
    }
    e->file = f;
    e->off = off;
    e->len = len;
    e->alloc = len;
    e->data = e->buf = d;
    g->used += len;
    if (g->used > g->peak)
        g->peak = g->used;
    size_t i = cx_find(f, off);
    memmove(&f->v[i + 1], &f->v[i], (f->n - i) * sizeof *f->v);
    f->v[i] = e;
    f->n++;
    return e;
}

void cx_ext_landed(cx_ext *e, uint64_t got, int prefetched)
{
    cx_file *f = e->file;
    if (e->stale) {
        release(e);
        return;
    }
    if (got < e->len && e->off + got < f->eof)
        f->eof = e->off + got;
    if (got == 0) {
        unlist(e);
        release(e);
        return;
    }
    e->len = got;
    e->ready = 1;
    e->unread = prefetched;
    if (prefetched)
        f->st.bytes_prefetched += got;
    lru_push(e);
}

void cx_ext_abandon(cx_ext *e)
{
    if (!e->stale)
        unlist(e);
    e->unread = 0;
    release(e);
}

void cx_drop(cx_file *f, uint64_t lo, uint64_t hi)
{
    size_t i = cx_find(f, lo), k = i;
    for (size_t j = i; j < f->n; j++) {
        cx_ext *e = f->v[j];
        if (e->off >= hi) {
            f->v[k++] = e;
            continue;
        }
        if (e->ready) {
            uint64_t end = e->off + e->len;
            uint64_t head = lo > e->off ? lo - e->off : 0, tail = end > hi ? end - hi : 0;
            if (head == 0 && tail == 0) {
                lru_unlink(e);
                release(e);
                continue;
            }
            /* Both sides left (a write inside): the larger stays, so memory never grows. */
            if (head >= tail) {
                e->len = head;
            } else {
                e->data += hi - e->off;
                e->off = hi;
                e->len = tail;
            }
            f->v[k++] = e;
        } else {
            e->stale = 1; /* its reader frees it */
        }
    }
    f->n = k;
    /* The file may have grown or shrunk: what reads saw of its end is forgotten too. */
    f->eof = UINT64_MAX;
    pthread_cond_broadcast(&f->pool->landed);
}

uint64_t cx_first_gap(const cx_file *f, uint64_t from, uint64_t to, uint64_t *gap_end)
{
    uint64_t x = from;
    for (size_t i = cx_find(f, from); i < f->n && x < to; i++) {
        const cx_ext *e = f->v[i];
        if (e->off > x) {
            *gap_end = e->off < to ? e->off : to;
            return x;
        }
        x = e->off + e->len;
    }
    if (x >= to)
        return to;
    *gap_end = to;
    return x;
}
