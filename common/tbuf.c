/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* See tbuf.h. */
#include "common/tbuf.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct tbufs {
    size_t cap[RFS_TBUF_SLOTS];
    uint8_t *p[RFS_TBUF_SLOTS];
} tbufs;

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void free_all(void *v)
{
    tbufs *b = v;
    for (int i = 0; i < RFS_TBUF_SLOTS; i++)
        free(b->p[i]);
    free(b);
}

static void make_key(void)
{
    pthread_key_create(&key, free_all);
}

uint8_t *rfs_tbuf(enum rfs_tbuf_slot slot, size_t need)
{
    pthread_once(&once, make_key);
    tbufs *b = pthread_getspecific(key);
    if (!b) {
        if (!(b = calloc(1, sizeof *b)))
            return NULL;
        if (pthread_setspecific(key, b)) {
            free(b);
            return NULL;
        }
    }
    if (b->cap[slot] < need || !b->p[slot]) {
        uint8_t *p = realloc(b->p[slot], need ? need : 1);
        if (!p)
            return NULL;
        b->p[slot] = p;
        b->cap[slot] = need;
    }
    return b->p[slot];
}
