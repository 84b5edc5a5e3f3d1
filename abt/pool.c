/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* ABT's buffer pool: equal-sized buffers allocated on demand up to the memory cap, freed ones
 * kept for reuse, the first ones touched ahead of use by the stager thread. Called with the
 * engine's mu held. */

#include "abt/engine_parts.h"

#include <stdlib.h>

int abt_pool_set_cap(uint64_t cap_bufs)
{
    void **nf = realloc(E.free_bufs, sizeof *nf * (cap_bufs ? cap_bufs : 1));
    if (!nf)
        return RFS_E_NOMEM;
    E.free_bufs = nf;
    E.cap_bufs = cap_bufs;
    E.stats.memory_cap = cap_bufs * E.buf_size;
    return RFS_OK;
}

void *abt_pool_get(void)
{
    if (E.used_bufs >= E.cap_bufs)
        return NULL;
    void *b = NULL;
    if (E.n_free) {
        b = E.free_bufs[--E.n_free];
    } else if ((b = malloc(E.buf_size)) != NULL) {
        E.n_alloc++;
    }
    if (!b)
        return NULL;
    E.used_bufs++;
    if (E.used_bufs * E.buf_size > E.stats.memory_peak)
        E.stats.memory_peak = E.used_bufs * E.buf_size;
    return b;
}

void abt_pool_put(void *b)
{
    E.used_bufs--;
    E.free_bufs[E.n_free++] = b;
}

void abt_pool_release_all(void)
{
    for (uint64_t i = 0; i < E.n_free; i++)
        free(E.free_bufs[i]);
    free(E.free_bufs);
    E.free_bufs = NULL;
    E.n_free = E.used_bufs = E.n_alloc = 0;
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

/* Allocates and touches buffers up to prefault_bufs while the application computes, so its
 * first output phase copies into memory that is already mapped. Called by the stager with mu
 * held; drops it while touching. A buffer the pool no longer has room for is freed. */
void abt_pool_prefault(void)
{
    while (!E.stop && E.n_alloc < E.prefault_bufs && E.n_alloc < E.cap_bufs) {
        E.n_alloc++;
        pthread_mutex_unlock(&E.mu);
        void *b = malloc(E.buf_size);
        if (b)
            touch_pages(b, E.buf_size);
        pthread_mutex_lock(&E.mu);
        if (!b) {
            E.n_alloc--;
            return;
        }
        if (E.n_free + E.used_bufs >= E.cap_bufs) {
            free(b);
            E.n_alloc--;
            return;
        }
        E.free_bufs[E.n_free++] = b;
        E.stats.bytes_prefaulted += E.buf_size;
    }
}
