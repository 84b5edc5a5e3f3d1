/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Collaborative page cache (mpiio-caching-write-behind.txt, "collaborative caching") as a
 * stacked rfs_io layer for files that ranks of one node both read and write; docs/design.md
 * "Collaborative cache" says where it sits and why.
 *
 * The file is cut into pages of page_size bytes aligned at 0. Page i's metadata and its one
 * cached copy live in the shared segment of rank i mod nranks of the group of processes that
 * share this node's memory, so every rank of the group reads and writes the same copy: there is
 * nothing to keep coherent between ranks. An access works on one page at a time, in increasing
 * page order, under that page's lock (a word in shared memory holding the pid of the process
 * that has it): a process holds at most one page lock while it waits for another, so no two can
 * wait for each other. Writes only mark byte ranges of the page dirty; a read of bytes that are
 * neither dirty nor cached yet reads the whole page from the layer below first. Each rank's
 * segment holds at most max_memory bytes of pages: a page that needs room takes the least
 * recently used unlocked page of its owner's segment, written below first when dirty.
 *
 * sync (and close) write, in increasing page order as list writes, the dirty pages that hold
 * bytes this rank wrote (and those of ranks that died), and return once the server has answered
 * them: after sync-barrier-sync the server has every rank's bytes, and a page is written once,
 * by the first of its writers that reaches it. A rank that dies while it holds a page's lock
 * leaves that page unknown: its peers drop the page (the server keeps what was synced before)
 * and the next sync or close of every rank whose unsynced bytes it held fails naming the dead
 * rank; a rank that dies without closing makes every peer's next sync or close fail too.
 *
 * No MPI and no background thread here: the caller (mpiio/ccache.c) allocates the segments with
 * MPI in the application's thread, so it works in MPI_THREAD_SINGLE programs.
 */
#ifndef RFS_CCACHE_H
#define RFS_CCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "rfs/rfs_io.h"

#define RFS_CC_DEFAULT_PAGE (1ull << 20)
#define RFS_CC_DEFAULT_MEMORY (32ull << 20)
#define RFS_CC_MIN_PAGE 4096ull
#define RFS_CC_MAX_PAGE (64ull << 20)
#define RFS_CC_MAX_RANKS 256 /* ranks of one node in one group (a bitmap per page) */

typedef struct rfs_cc_config {
    int rank, nranks;       /* this process and the group sharing the segments */
    void *const *segments;  /* nranks segments of rfs_cc_segment_size() bytes, the first
                             * rfs_cc_meta_size() of each zeroed by its rank before any rank
                             * wraps; segments[r] is rank r's */
    uint64_t page_size;     /* hint rfs_cache_page_size */
    uint64_t max_memory;    /* bytes of pages in one rank's segment (rfs_cache_max_memory) */
    int timeout_ms;         /* bound on a wait for a live peer's page lock; 0: none */
    int write_only;         /* the file cannot be read (MPI_MODE_WRONLY): a page whose dirty
                             * runs are too many to track is written below early instead of
                             * being read to fill its gaps; reads pass below */
    int64_t size;           /* the file's size as the open reported it; -1: unknown (the
                             * wrap asks the layer below) */
    const char *stats_name; /* non-NULL: close prints one line of stats naming the file */
} rfs_cc_config;

/* Pages one rank's segment holds for this cap: max_memory / page_size, at least nranks + 2 (each
 * process of the group may hold one page locked while another looks for room). */
uint64_t rfs_cc_frames(int nranks, uint64_t page_size, uint64_t max_memory);
/* Bytes of one rank's shared segment. */
size_t rfs_cc_segment_size(int nranks, uint64_t page_size, uint64_t max_memory);
/* How many of its first bytes must be zeroed before any rank wraps (the metadata; the pages'
 * bytes are never read before they are written). */
size_t rfs_cc_meta_size(int nranks, uint64_t page_size, uint64_t max_memory);

/* Stacks the cache over `below` (takes ownership). Collective in effect: every rank of the group
 * wraps with the same page_size, max_memory and nranks. */
int rfs_cc_wrap(rfs_io *below, const rfs_cc_config *c, rfs_io **out);

/* io must come from rfs_cc_wrap. */
/* This rank's dirty bytes to the server (as sync without the server's fsync); failures stay for
 * the next sync/close. For close, before the ranks meet and detach. */
int rfs_cc_flush_mine(rfs_io *io);
/* After every rank of the group has flushed for the last time (a barrier): from then on the
 * layer passes every op below and no longer touches the segments (they may be freed). */
void rfs_cc_detach(rfs_io *io);
/* 0 (atomic mode): this rank's dirty bytes go to the server and every access passes straight
 * below until 1; rfs_cc_drop_own then empties this rank's segment (after every rank of the group
 * has switched off, so nothing dirty is left). 1: caching again, once the accesses that went
 * straight below are answered. */
void rfs_cc_set_enabled(rfs_io *io, int on);
void rfs_cc_drop_own(rfs_io *io);

typedef struct rfs_cc_stats {
    uint64_t reads, writes; /* accesses through the cache */
    uint64_t read_bytes, write_bytes;
    uint64_t hits;                         /* page pieces read without a fill */
    uint64_t fills, fill_bytes;            /* pages read from below */
    uint64_t evictions;                    /* pages this rank wrote below to make room */
    uint64_t flushed_pages, flushed_bytes; /* written below by sync/close/eviction */
    uint64_t direct_bytes; /* accesses passed straight below (atomic mode, detached) */
    uint64_t frames;       /* pages this rank's segment holds at most */
    uint64_t frames_peak;  /* most of them in use at once */
    uint64_t page_size;
} rfs_cc_stats;
void rfs_cc_get_stats(rfs_io *io, rfs_cc_stats *s);

const rfs_io_ops *rfs_cc_ops(void);

#endif
