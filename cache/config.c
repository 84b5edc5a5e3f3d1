/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "cache/cache_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void rfs_cache_config_default(rfs_cache_config *c)
{
    memset(c, 0, sizeof *c);
    c->prefetch = RFS_PREFETCH_AUTO;
    c->threads = RFS_CACHE_DEFAULT_THREADS;
    c->local_ranks = 1;
}

/* The share of MemAvailable (the same rule as ABT's buffers: the cache must not take memory
 * the application will want). */
uint64_t cx_default_cap(int local_ranks)
{
    uint64_t kb = 0;
    FILE *fp = fopen("/proc/meminfo", "r");
    if (fp) {
        char line[256];
        while (fgets(line, sizeof line, fp))
            if (sscanf(line, "MemAvailable: %" SCNu64, &kb) == 1)
                break;
        fclose(fp);
    }
    uint64_t cap = RFS_CACHE_DEFAULT_MEM_MAX;
    if (kb) {
        double share =
            (double)kb * 1024.0 * RFS_CACHE_DEFAULT_MEM_SHARE / (local_ranks > 0 ? local_ranks : 1);
        if (share < (double)cap)
            cap = (uint64_t)share;
    }
    return cap < RFS_CACHE_MIN_MEM ? RFS_CACHE_MIN_MEM : cap;
}
