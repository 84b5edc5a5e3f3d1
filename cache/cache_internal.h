/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The cache layer's shared state: one pool per runtime (its part, rfs_runtime_part), shared by
 * the runtime's cached files. The pool's mutex (cx_pool.mu) guards everything below: every
 * file's extents, the LRU list across files, the memory count and the prefetch queues.
 * It is never held across a call to the layer below, so a request in flight blocks nobody; the
 * copies to and from cached memory are done under it (they are short next to a round trip). */
#ifndef RFS_CACHE_INTERNAL_H
#define RFS_CACHE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "cache/cache.h"
#include "client/runtime.h"
#include "cache/pattern.h"

typedef struct cx_file cx_file;
typedef struct cx_pool cx_pool;

/* A cached byte range [off, off+len) of one file. Extents of a file never overlap. */
typedef struct cx_ext {
    cx_file *file;
    uint64_t off, len;          /* len: bytes held (ready) or asked for (in flight) */
    uint64_t alloc;             /* bytes counted against the cap */
    uint8_t *data;              /* the bytes at off: inside buf (a drop may cut the front off) */
    uint8_t *buf;               /* the allocation */
    int ready;                  /* 0: in flight (a read below is filling it) */
    int stale;                  /* in flight but dropped from the file: discarded when it lands */
    int unread;                 /* prefetched and not read yet (RFS_STATS "wasted" if dropped) */
    struct cx_ext *prev, *next; /* LRU (ready extents only); head: most recently used */
} cx_ext;

/* A prefetch: extents in flight, read with one request below. */
typedef struct cx_job {
    struct cx_job *next;
    size_t n;
    cx_ext *ext[];
} cx_job;

struct cx_file {
    rfs_io io; /* first member: what the layer above holds */
    rfs_io *below;
    int enabled;
    cx_ext **v; /* sorted by off */
    size_t n, cap;
    uint64_t eof; /* the file ends here as far as reads since the last drop saw;
                   * UINT64_MAX: not seen */
    /* Prefetch */
    int prefetch; /* RFS_PREFETCH_* */
    cx_pattern pat;
    uint64_t pf_next; /* where the next sequential or strided prefetch starts */
    uint64_t window, window_max;
    /* What sizes the window (prefetch.c): the time between the reader's reads and the
     * shortest recent prefetch round trip. */
    uint64_t last_note_ns, gap_ns, lat_min_ns;
    int gaps, lats;
    cx_job *q_head, *q_tail;
    int nthreads, threads_wanted, threads_failed;
    rfs_runtime *rt; /* its workers run the prefetch threads */
    cx_pool *pool;   /* rt's: the memory cap and the lock it shares */
    rfs_task th[RFS_CACHE_MAX_THREADS];
    pthread_cond_t q_cv;
    int stop;
    rfs_cache_stats st;
    char *stats_name;
};

struct cx_pool {
    pthread_mutex_t mu;
    pthread_cond_t landed; /* an extent became ready or went away: waiting readers look again */
    uint64_t used, cap, peak;
    cx_ext *lru_head, *lru_tail;
};
/* rt's pool (made on first use; NULL: out of memory). */
cx_pool *cx_pool_of(rfs_runtime *rt);

/* ---- store.c (the pool's mu held) ---- */
/* Index of the first extent of f whose end is beyond off (f->n if none). */
size_t cx_find(const cx_file *f, uint64_t off);
/* A new extent [off, off+len) in flight, with memory for it (evicting least recently used
 * ready extents, of any file, to stay under the cap); NULL when the cap cannot make room.
 * The caller has checked that nothing of f overlaps it. */
cx_ext *cx_ext_new(cx_file *f, uint64_t off, uint64_t len);
/* An in-flight extent landed with got bytes (got < len: the file ends there; 0: nothing). */
void cx_ext_landed(cx_ext *e, uint64_t got, int prefetched);
/* An in-flight extent whose read failed or that is no longer wanted: removed and freed. */
void cx_ext_abandon(cx_ext *e);
void cx_touch(cx_ext *e);
/* Drops the bytes of f in [lo, hi): a ready extent partly inside keeps its larger part
 * outside; in-flight ones are marked stale and dropped whole. */
void cx_drop(cx_file *f, uint64_t lo, uint64_t hi);
/* Start of the first byte at or after from, below to, that no extent of f covers; *gap_end
 * gets where that gap ends (at most to). Returns to when there is none. */
uint64_t cx_first_gap(const cx_file *f, uint64_t from, uint64_t to, uint64_t *gap_end);

/* ---- prefetch.c ---- */
/* Notes a read of f's extents and starts the prefetches it calls for (the pool's mu held). */
void cx_prefetch_note(cx_file *f, const rfs_extent *ext, size_t n);
/* Stops f's threads and drops its queued prefetches (the pool's mu not held). */
void cx_prefetch_stop(cx_file *f);
/* Drops f's queued prefetches that have not started (the pool's mu held). */
void cx_prefetch_cancel_queued(cx_file *f);

/* ---- config.c ---- */
uint64_t cx_default_cap(int local_ranks);

#endif
