/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* See envflag.h. */
#include "common/envflag.h"

#include <stdlib.h>
#include <string.h>

int rfs_env_flag(atomic_int *cache, const char *name)
{
    int v = atomic_load_explicit(cache, memory_order_relaxed);
    if (v < 0) {
        const char *e = getenv(name);
        v = e && *e && strcmp(e, "0") != 0;
        atomic_store_explicit(cache, v, memory_order_relaxed);
    }
    return v;
}
