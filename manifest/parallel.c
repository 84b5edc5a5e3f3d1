/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Running one request's per-object jobs at once, so that a striped or replicated access costs
 * one round trip, not one per object: the jobs go to the runtime's workers (client/exec.c),
 * whose threads are kept between requests. */
#include "manifest/mf_internal.h"

#include <stdlib.h>

void mf_parallel(rfs_runtime *rt, void *(*fn)(void *), void *arg, size_t size, size_t n)
{
    if (n == 0)
        return;
    rfs_task stack_tasks[8];
    rfs_task *t = n - 1 <= 8 ? stack_tasks : malloc((n - 1) * sizeof *t);
    char *base = arg;
    size_t started = 0;
    for (size_t k = 1; t && k < n; k++) {
        if (rfs_task_start(rt, &t[k - 1], fn, base + k * size) != 0)
            break;
        started = k;
    }
    /* What could not be handed to a worker (none could be made) runs here, in turn. */
    fn(base);
    for (size_t k = started + 1; k < n; k++)
        fn(base + k * size);
    for (size_t k = 1; k <= started; k++)
        rfs_task_join(&t[k - 1]);
    if (t != stack_tasks)
        free(t);
}
