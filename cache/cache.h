/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The read cache (rfs-abt.txt sec. 5.1) as a stacked rfs_io layer.
 *
 * Byte ranges read through the layer are kept in memory, per runtime (client/runtime.h),
 * under one memory cap shared by the runtime's cached files (least recently used ranges go
 * first), so reading them again costs no request. Sequential and constant-stride reads are
 * detected from the last reads of the file (or prefetch is forced by a hint) and the bytes
 * ahead are read in the background by a few threads of the file, in a window that doubles per
 * read up to a cap; a read that finds its bytes in flight waits for them instead of asking
 * again. Writes through the layer drop the cached ranges they overlap; sync, set_size and
 * preallocate drop everything, as does rfs_cache_invalidate (the MPI-IO layer calls it where
 * MPI says other processes' writes become visible). A failed prefetch is forgotten: the
 * application hears of it only when it reads those bytes and the read, retried once
 * synchronously, fails again.
 * Background threads never call MPI.
 */
#ifndef RFS_CACHE_H
#define RFS_CACHE_H

#include <stdint.h>

#include "rfs/rfs_io.h"

enum { RFS_PREFETCH_AUTO = 0, RFS_PREFETCH_ENABLE = 1, RFS_PREFETCH_DISABLE = 2 };

typedef struct rfs_cache_config {
    uint64_t max_memory;    /* cap on the runtime's cached bytes (hint rfs_cache_size);
                             * 0: default */
    int prefetch;           /* RFS_PREFETCH_*: auto detects the pattern (hint rfs_prefetch) */
    uint64_t prefetch_max;  /* cap on the window ahead of the reader (hint rfs_prefetch_max);
                             * 0: default; never more than half of max_memory */
    int threads;            /* background readers of the file (hint rfs_prefetch_threads) */
    int local_ranks;        /* processes sharing this node's memory (for the default cap) */
    const char *stats_name; /* non-NULL: close prints one line of stats naming the file */
    struct rfs_runtime *rt; /* whose pool the file shares, whose workers read ahead
                             * (client/runtime.h); NULL: the default runtime */
} rfs_cache_config;

/* Default cap: this share of MemAvailable divided among the node's ranks, at most
 * RFS_CACHE_DEFAULT_MEM_MAX and at least RFS_CACHE_MIN_MEM (docs/hints.md). */
#define RFS_CACHE_DEFAULT_MEM_SHARE 0.25
#define RFS_CACHE_DEFAULT_MEM_MAX (256ull << 20)
#define RFS_CACHE_MIN_MEM (1ull << 20)
#define RFS_CACHE_DEFAULT_PREFETCH_MAX (64ull << 20)
#define RFS_CACHE_DEFAULT_THREADS 4
#define RFS_CACHE_MAX_THREADS 16

void rfs_cache_config_default(rfs_cache_config *c);

/* Stacks the cache over `below` (takes ownership). The file joins its runtime's pool: the
 * first wrap in the runtime sets the memory cap; later wraps may only raise it. */
int rfs_cache_wrap(rfs_io *below, const rfs_cache_config *c, rfs_io **out);

/* The layer's op table (every slot named: tests). */
const rfs_io_ops *rfs_cache_ops(void);

/* io must be a cache layer (from rfs_cache_wrap). */
/* Drops every cached byte of the file; prefetches in flight are discarded when they land. */
void rfs_cache_invalidate(rfs_io *io);
/* 0: every op goes straight to the layer below (MPI atomic mode); 1: caching again. */
void rfs_cache_set_enabled(rfs_io *io, int on);

typedef struct rfs_cache_stats {
    uint64_t reads;            /* read calls (pread, preadv) while caching */
    uint64_t reads_cached;     /* of them served without a request below */
    uint64_t bytes_cached;     /* bytes served from memory (or from a prefetch they waited for) */
    uint64_t bytes_below;      /* bytes the reads themselves asked of the layer below */
    uint64_t bytes_prefetched; /* bytes prefetches brought in */
    uint64_t bytes_wasted;     /* prefetched bytes dropped before anyone read them */
    uint64_t prefetch_failed;  /* prefetch requests that failed (never reported) */
    uint64_t bytes_evicted;    /* bytes dropped for the memory cap */
    uint64_t memory_cap, memory_peak; /* the runtime's pool */
} rfs_cache_stats;
void rfs_cache_get_stats(rfs_io *io, rfs_cache_stats *s);

#endif
