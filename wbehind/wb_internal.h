/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Write-behind internals: the shared segments, the writer's state and the owner's pages.
 *
 * Rank r's segment: a head (its owner thread's doorbell, its state and pid), then one mailbox
 * per destination rank d (the channel r -> d: r writes into it, d's owner thread takes from
 * it). A mailbox holds records {offset, length, bytes} padded to 8 bytes. */
#ifndef RFS_WBEHIND_INTERNAL_H
#define RFS_WBEHIND_INTERNAL_H

#include "wbehind/wbehind.h"

#include <pthread.h>

#include "client/runtime.h"
#include "wbehind/shm.h"

enum { WB_EMPTY = 0, WB_POSTED = 1, WB_TAKEN = 2 };           /* wb_chan.state */
enum { WB_NEW = 0, WB_OPEN = 1, WB_CLOSED = 2, WB_GONE = 3 }; /* wb_head.state */

typedef struct wb_head {
    uint32_t bell;  /* futex: bumped by a writer that posted or asked for a flush */
    uint32_t state; /* WB_*: GONE once the owner wrote everything it took and stopped */
    int32_t pid;    /* for peers to notice a dead owner */
    uint32_t pad;
} wb_head;

typedef struct wb_chan {
    uint32_t state;      /* futex: WB_EMPTY (the writer's), POSTED, TAKEN (the owner's) */
    uint32_t done_word;  /* futex: bumped when flush_done moves */
    uint64_t used;       /* bytes of records posted */
    uint64_t flush_req;  /* the writer's flush requests so far */
    uint64_t flush_done; /* the last one the owner answered */
    int32_t err;         /* first failure writing pages with the writer's bytes (rfs_err) */
    uint32_t pad[7];     /* to 64 bytes: the records start on a cache line */
} wb_chan;

#define WB_REC_HDR 16u /* offset, length */

/* ---- the owner's pages (owner.c; touched by the owner thread only) ---- */
typedef struct wb_page {
    uint64_t idx;
    uint8_t *data;
    uint64_t *lo, *hi; /* dirty runs, sorted, disjoint, not touching */
    int nr, cap;
    uint64_t dirty;
    uint8_t *srcs; /* ranks whose bytes it holds */
    int full;      /* in the batch of full pages waiting to go below together */
    struct wb_page *hnext, *prev, *next;
} wb_page;

typedef struct wb_owner {
    wb_page **hash;
    size_t nbuckets;
    wb_page *lru_head, *lru_tail; /* head: most recently used */
    uint64_t npages, max_pages;
    uint8_t *pend; /* ranks whose bytes were written below since the last flush below */
    struct iovec *iov;
    rfs_extent *ext;
    size_t scratch_cap;
    wb_page **batch; /* full pages, written below as one list write (over the file's streams) */
    size_t nbatch, batch_cap;
} wb_owner;

typedef struct wb {
    rfs_io io; /* first member: the rfs_io handed to the layer above */
    rfs_io *below;
    int rank, n;
    uint64_t page, bufsz;
    int timeout_ms;
    int automatic, active, enabled, detached;
    void **seg;
    const char *stats_name;
    /* writer side (mu) */
    pthread_mutex_t mu;
    uint8_t **buf;   /* local sub-buffers, one per owner */
    uint64_t *used;  /* bytes in them */
    uint64_t *last;  /* where the last record of each starts (UINT64_MAX: none) */
    uint64_t *req;   /* flush requests in flight (flush_mine) */
    uint8_t *handed; /* posted to that owner since its last answered flush */
    uint8_t *gone;   /* that owner stopped or died: write its pages straight below */
    int sticky;      /* first failure not yet reported */
    char sticky_msg[512];
    /* owner side */
    wb_owner own;
    rfs_task th;
    int stop; /* atomic */
    int thread_running;
    rfs_wb_stats st;
} wb;

static inline wb_head *wb_head_of(const wb *w, int r)
{
    return (wb_head *)w->seg[r];
}

/* The channel src -> dst (in src's segment). */
static inline wb_chan *wb_chan_of(const wb *w, int src, int dst)
{
    size_t stride = sizeof(wb_chan) + (size_t)w->bufsz;
    return (wb_chan *)((uint8_t *)w->seg[src] + 64 + (size_t)dst * stride);
}

static inline uint8_t *wb_chan_data(wb_chan *c)
{
    return (uint8_t *)(c + 1);
}

/* owner.c */
int wb_owner_init(wb *w, uint64_t max_memory);
void wb_owner_free(wb *w);
void *wb_owner_main(void *arg);

/* Writes the records rec[0..len) below, one by one (a mailbox or sub-buffer taken back).
 * RFS_OK or the first failure. */
int wb_write_records(rfs_io *below, const uint8_t *rec, uint64_t len, uint64_t *bytes);

#endif
