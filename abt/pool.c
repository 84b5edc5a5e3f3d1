/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* ABT's buffer pool: buffers allocated on demand in the sizes the files ask for, up to the
 * engine's memory cap; freed ones kept for reuse, the first ones touched ahead of use by the
 * stager thread. A file's buffers are all of its size, so with one size (the usual case) the
 * cap holds exactly cap / size buffers, as eq. (1) assumes. Called with the engine's mu held. */

#include "abt/engine_parts.h"

#include <stdlib.h>

#include "common/debug.h"

void abt_pool_set_cap(abt_engine *e, uint64_t cap_bytes)
{
    e->cap_bytes = cap_bytes;
    /* What buffers can use of it (with one size, whole buffers). */
    e->stats.memory_cap = cap_bytes - cap_bytes % e->buf_max;
}

static abt_bufclass *class_of(abt_engine *e, uint64_t size, int make)
{
    for (int i = 0; i < e->n_cls; i++)
        if (e->cls[i].size == size)
            return &e->cls[i];
    if (!make)
        return NULL;
    abt_bufclass *nc = realloc(e->cls, sizeof *nc * (size_t)(e->n_cls + 1));
    if (!nc)
        return NULL;
    e->cls = nc;
    nc[e->n_cls] = (abt_bufclass){.size = size};
    return &nc[e->n_cls++];
}

/* Keeps b on its size's free list (freed when the list cannot grow). */
static void keep_free(abt_engine *e, abt_bufclass *k, void *b)
{
    if (k && k->n_free == k->cap_free) {
        uint64_t cap = k->cap_free ? k->cap_free * 2 : 16;
        void **nf = realloc(k->free, sizeof *nf * cap);
        if (nf) {
            k->free = nf;
            k->cap_free = cap;
        }
    }
    if (!k || k->n_free == k->cap_free) {
        free(b);
        e->alloc_bytes -= k ? k->size : 0;
        return;
    }
    k->free[k->n_free++] = b;
    e->free_bytes += k->size;
}

/* Frees kept buffers of other sizes until size more bytes fit under the cap. */
static void make_room(abt_engine *e, uint64_t size)
{
    for (int i = 0; i < e->n_cls && e->alloc_bytes + size > e->cap_bytes; i++) {
        abt_bufclass *k = &e->cls[i];
        while (k->size != size && k->n_free > 0 && e->alloc_bytes + size > e->cap_bytes) {
            free(k->free[--k->n_free]);
            e->free_bytes -= k->size;
            e->alloc_bytes -= k->size;
        }
    }
}

void *abt_pool_get(abt_engine *e, uint64_t size)
{
    RFS_ASSERT_HELD(&e->mu);
    if (e->used_bytes + size > e->cap_bytes)
        return NULL;
    abt_bufclass *k = class_of(e, size, 1);
    void *b = NULL;
    if (k && k->n_free) {
        b = k->free[--k->n_free];
        e->free_bytes -= size;
    } else {
        /* Past the cap only by buffers the stager is touching: it frees them when they land. */
        make_room(e, size);
        if (!k || !(b = malloc(size)))
            return NULL;
        e->alloc_bytes += size;
    }
    e->used_bytes += size;
    if (e->used_bytes > e->stats.memory_peak)
        e->stats.memory_peak = e->used_bytes;
    return b;
}

void abt_pool_put(abt_engine *e, void *b, uint64_t size)
{
    e->used_bytes -= size;
    keep_free(e, class_of(e, size, 0), b);
}

void abt_pool_release_all(abt_engine *e)
{
    for (int i = 0; i < e->n_cls; i++) {
        for (uint64_t j = 0; j < e->cls[i].n_free; j++)
            free(e->cls[i].free[j]);
        free(e->cls[i].free);
    }
    free(e->cls);
    e->cls = NULL;
    e->n_cls = 0;
    e->used_bytes = e->free_bytes = e->alloc_bytes = 0;
}

/* Writes one byte per page so the kernel maps them now. Not memset(0): the compiler turns
 * malloc + memset(0) into calloc, which leaves fresh mmap'ed memory untouched, so the
 * application's first write took every page fault after all. */
static void touch_pages(void *b, size_t len)
{
    volatile char *p = b;
    for (size_t i = 0; i < len; i += 4096)
        p[i] = 1;
    p[len - 1] = 1;
}

/* Allocates and touches buffers up to prefault_bytes while the application computes, so its
 * first output phase copies into memory that is already mapped. Called by the stager with mu
 * held; drops it while touching. A buffer the pool no longer has room for is freed. */
void abt_pool_prefault(abt_engine *e)
{
    uint64_t size = e->prefault_size;
    while (!e->stop && size && e->alloc_bytes + size <= e->prefault_bytes &&
           e->alloc_bytes + size <= e->cap_bytes) {
        e->alloc_bytes += size;
        pthread_mutex_unlock(&e->mu);
        void *b = malloc(size);
        if (b)
            touch_pages(b, size);
        pthread_mutex_lock(&e->mu);
        abt_bufclass *k = b ? class_of(e, size, 1) : NULL;
        if (!k || e->used_bytes + e->free_bytes + size > e->cap_bytes) {
            free(b);
            e->alloc_bytes -= size;
            return;
        }
        keep_free(e, k, b);
        e->stats.bytes_prefaulted += size;
    }
}
