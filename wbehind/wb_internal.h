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
    uint32_t closing;    /* the writer's flushes from now on are its close's (flush_closing) */
    uint32_t pad[6];     /* to 64 bytes: the records start on a cache line */
} wb_chan;

#define WB_REC_HDR 16u /* offset, length */

/* ---- the owner's pages (owner.c; touched by the owner thread only) ---- */
typedef struct wb_page {
    uint64_t idx;
    uint8_t *data;
    uint64_t *lo, *hi; /* dirty runs, sorted, disjoint, not touching */
    int nr, cap;
    uint64_t dirty;
    uint8_t *srcs;                       /* ranks whose bytes it holds */
    uint64_t seq;                        /* hand-over order to the sender */
    struct wb_page *hnext, *prev, *next; /* the owner's table and LRU list */
    struct wb_page *qnext;               /* the sender's queue */
    uint64_t *reqs; /* non-NULL: not a page but a flush marker (reqs[src] to answer) */
} wb_page;

typedef struct wb_owner {
    /* the owner thread's table of the pages it fills */
    wb_page **hash;
    size_t nbuckets;
    wb_page *lru_head, *lru_tail; /* head: most recently used */
    uint64_t npages, max_pages;   /* npages + q_pages <= max_pages */
    /* the sender (sender.c): pages handed over, written below in that order */
    pthread_mutex_t qmu;
    pthread_cond_t q_cv;    /* the sender's: pages or stop */
    pthread_cond_t room_cv; /* the owner's: pages were written */
    wb_page *q_head, *q_tail;
    uint64_t q_pages; /* handed over and not written yet (queued or being written) */
    uint64_t q_marks; /* flush markers not answered yet */
    uint64_t q_seq;
    int q_stop, sender_running, q_init;
    rfs_task sth;
    uint8_t *pend; /* (qmu) ranks whose bytes were written below since the last flush below */
    /* (sender only) a page write of one frame was answered before it returned: the layer
     * below has no write window, so page-by-page writes would each cost a round trip */
    int below_unwindowed;
    struct iovec *iov; /* the sender's scratch for list writes */
    rfs_extent *ext;
    size_t scratch_cap;
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
    /* rfs_wb_flush_closing was called: the close hands a failure to the ranks in close_pend,
     * whose bytes went below since the owner's last confirmed flush (kept past detach) */
    int closing;
    uint8_t *close_pend;
} wb;

static inline wb_head *wb_head_of(const wb *w, int r)
{
    return (wb_head *)w->seg[r];
}

/* A segment: a 64-byte head, then one channel per destination, each a wb_chan and its
 * sub-buffer's records (buffer_size rounded down to a multiple of 64). */
static inline size_t wb_chan_stride(uint64_t buffer_size)
{
    return sizeof(wb_chan) + (size_t)(buffer_size & ~(uint64_t)63);
}

/* The channel to dst in a segment. */
static inline wb_chan *wb_chan_in(void *seg, uint64_t buffer_size, int dst)
{
    return (wb_chan *)((uint8_t *)seg + 64 + (size_t)dst * wb_chan_stride(buffer_size));
}

/* The channel src -> dst (in src's segment). */
static inline wb_chan *wb_chan_of(const wb *w, int src, int dst)
{
    return wb_chan_in(w->seg[src], w->bufsz, dst);
}

static inline uint8_t *wb_chan_data(wb_chan *c)
{
    return (uint8_t *)(c + 1);
}

/* owner.c */
int wb_owner_init(wb *w, uint64_t max_memory);
void wb_owner_free(wb *w);
void *wb_owner_main(void *arg);
void wb_page_free(wb_page *p);

/* sender.c */
int wb_sender_start(wb *w, rfs_runtime *rt);
/* Writes what is still queued, then ends the sender. */
void wb_sender_stop(wb *w);
/* Hands a page (out of the owner's table) to the sender, which frees it once written. */
void wb_send(wb *w, wb_page *p);
/* Waits until at most `room` handed-over pages are not written yet (0: every one written and
 * every flush marker answered). */
void wb_send_wait(wb *w, uint64_t room);
/* Queues a flush marker: once the pages handed over before it are written, the layer below
 * answered them, and the flush requests reqs[src] are answered (wb_flush_answer).
 * RFS_E_NOMEM: nothing queued. */
int wb_send_flush(wb *w, const uint64_t *reqs);
/* Every page handed over is written: waits for the layer below's answers (failures go to the
 * ranks whose bytes went below) and answers the flush requests reqs[src] (NULL: every one
 * pending). Requests of closing writers only (wb_chan.closing) are answered without waiting:
 * the owner's close collects those answers and hands a failure on (rfs_wb_flush_closing). */
void wb_flush_answer(wb *w, const uint64_t *reqs);
/* The writer src hears of rc at its next flush (the first failure wins). */
void wb_hand_error(wb *w, int src, int rc);
/* qmu held: a failure below reaches srcs[] and every rank whose bytes went below since the
 * last flush below. */
void wb_below_failed(wb *w, const uint8_t *srcs, int rc);

/* Writes the records rec[0..len) below, one by one (a mailbox or sub-buffer taken back).
 * RFS_OK or the first failure. */
int wb_write_records(rfs_io *below, const uint8_t *rec, uint64_t len, uint64_t *bytes);

#endif
