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
    rfs_pool_close_all(rt);
    rfs_exec_stop(rt);
    pthread_mutex_destroy(&rt->pool_lock);
    free(rt);
}

static rfs_runtime *default_rt;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

/* A child forked by a program that used the library (Python's multiprocessing, say) must not
 * hand jobs to the parent's workers, which it does not have. */
static void default_after_fork(void) { rfs_exec_after_fork(default_rt); }

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
