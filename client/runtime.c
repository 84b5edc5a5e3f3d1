/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The client runtime's lifecycle (runtime.h) and the process's default runtime. */
#include "client/client.h"

#include <stdlib.h>

static rfs_runtime *make(void)
{
    rfs_runtime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return NULL;
    rfs_exec_init(rt);
    pthread_mutex_init(&rt->pool_lock, NULL);
    pthread_mutex_init(&rt->parts_mu, NULL);
    return rt;
}

int rfs_runtime_create(rfs_runtime **out)
{
    *out = make();
    return *out ? RFS_OK : rfs_fail(RFS_E_NOMEM, "out of memory for a client runtime");
}

void rfs_runtime_destroy(rfs_runtime *rt)
{
    if (!rt)
        return;
    /* Newest first: a part may use an older one (MPI-IO's queue runs I/O through ABT). */
    while (rt->n_parts > 0) {
        int i = --rt->n_parts;
        rt->parts[i].desc->destroy(rt->parts[i].part);
    }
    rfs_pool_close_all(rt);
    rfs_exec_stop(rt);
    pthread_mutex_destroy(&rt->parts_mu);
    pthread_mutex_destroy(&rt->pool_lock);
    free(rt);
}

/* parts_mu held. */
static void *find_part(rfs_runtime *rt, const rfs_runtime_part_desc *desc)
{
    for (int i = 0; i < rt->n_parts; i++)
        if (rt->parts[i].desc == desc)
            return rt->parts[i].part;
    return NULL;
}

void *rfs_runtime_part(rfs_runtime *rt, const rfs_runtime_part_desc *desc)
{
    pthread_mutex_lock(&rt->parts_mu);
    void *p = find_part(rt, desc);
    if (!p && rt->n_parts < RFS_RUNTIME_MAX_PARTS && (p = desc->make(rt)) != NULL) {
        rt->parts[rt->n_parts].desc = desc;
        rt->parts[rt->n_parts].part = p;
        rt->n_parts++;
    }
    pthread_mutex_unlock(&rt->parts_mu);
    return p;
}

void *rfs_runtime_part_peek(rfs_runtime *rt, const rfs_runtime_part_desc *desc)
{
    pthread_mutex_lock(&rt->parts_mu);
    void *p = find_part(rt, desc);
    pthread_mutex_unlock(&rt->parts_mu);
    return p;
}

static rfs_runtime *default_rt;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

/* A child forked by a program that used the library (Python's multiprocessing, say) must not
 * hand jobs to the parent's workers, which it does not have. */
static void default_after_fork(void)
{
    rfs_exec_after_fork(default_rt);
    pthread_mutex_init(&default_rt->parts_mu, NULL);
}

static void make_default(void)
{
    default_rt = make();
    if (default_rt)
        pthread_atfork(NULL, NULL, default_after_fork);
}

rfs_runtime *rfs_runtime_default(void)
{
    pthread_once(&default_once, make_default);
    return default_rt;
}
