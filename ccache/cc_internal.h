/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Collaborative cache internals: one rank's shared segment and the process's state.
 *
 * Rank r's segment: a head, a hash of the pages it manages (bucket -> frame chain), the frames'
 * metadata, then the frames' bytes. Page i lives in rank i mod n's segment. The head's table lock
 * guards the hash, the frames' use and their LRU stamps; a frame's page lock (cc_frame.pin)
 * guards its bytes, dirty runs and writers. A page lock is only taken under the table lock (a
 * compare-and-swap from 0), and released without it. */
#ifndef RFS_CCACHE_INTERNAL_H
#define RFS_CCACHE_INTERNAL_H

#include "ccache/ccache.h"

#include <pthread.h>

#include "wbehind/shm.h"

/* Dirty runs a page tracks: page / 2 KiB, at least 16 and at most 512; past that the page is
 * filled and its runs become one (or, write-only, written early). */
#define CC_RUNS_MIN 16u
#define CC_RUNS_MAX 512u
#define CC_WORDS (RFS_CC_MAX_RANKS / 64)

enum { CC_NEW = 0, CC_OPEN = 1, CC_CLOSED = 2 }; /* cc_head.state */

typedef struct cc_head {
    uint32_t lock;   /* table lock: pid of the holder, 0 free (futex) */
    uint32_t freed;  /* futex: bumped when one of this segment's pages is unlocked */
    int32_t pid;     /* this segment's rank, for peers to notice it died */
    uint32_t state;  /* CC_*: CLOSED once it detached (a later death is no loss) */
    uint64_t eof;    /* rank 0's: the file's size as the group sees it */
    uint64_t clock;  /* LRU stamps */
    uint64_t used;   /* frames in use */
    uint64_t peak;   /* most frames in use at once */
    int32_t err;     /* a failure of another rank's write of pages with this rank's bytes, or */
    int32_t err_by;  /* the loss of such a page to a dead rank: reported by this rank's next */
                     /* sync/close (first one wins) */
    uint32_t broken; /* a table lock was taken over from a dead holder */
    uint32_t lock_waiters, pin_waiters, room_waiters; /* processes asleep on the table lock, a
                                                       * page lock of this segment, or room: a
                                                       * release wakes only when there are some */
    uint32_t pad[2];
} cc_head;

typedef struct cc_frame {
    uint64_t idx;    /* page number, when used */
    uint64_t stamp;  /* LRU: the owner's clock at the last use */
    uint32_t used;   /* table lock */
    uint32_t pin;    /* page lock: pid of the holder, 0 free (futex) */
    int32_t next;    /* hash chain: frame + 1, 0: end */
    uint32_t filled; /* every byte that is not dirty holds the server's bytes */
    uint32_t nruns;
    uint32_t pad;
    uint64_t writers[CC_WORDS]; /* ranks whose bytes the dirty runs hold */
    uint32_t run[];             /* dirty runs [CC_LO, CC_HI) in the page: sorted, disjoint, not
                                 * touching; cc.max_runs of them */
} cc_frame;
#define CC_LO(f, i) ((f)->run[2 * (i)])
#define CC_HI(f, i) ((f)->run[2 * (i) + 1])

typedef struct cc {
    rfs_io io; /* first member: the rfs_io handed to the layer above */
    rfs_io *below;
    int rank, n;
    int32_t pid;
    uint64_t page, nframes, nbuckets;
    uint32_t max_runs;
    size_t frame_size; /* stride of the frames' metadata */
    size_t off_buckets, off_frames, off_data;
    int timeout_ms;
    int write_only; /* no page is ever read from below */
    void **seg;
    int enabled, detached; /* atomics: read by every op */
    const char *stats_name;
    pthread_mutex_t mu; /* the fields below */
    int sticky;
    char sticky_msg[512];
    uint8_t *noted; /* peers whose death was reported */
    rfs_cc_stats st;
} cc;

static inline cc_head *cc_head_of(const cc *c, int r)
{
    return (cc_head *)c->seg[r];
}
static inline int32_t *cc_buckets(const cc *c, int r)
{
    return (int32_t *)((uint8_t *)c->seg[r] + c->off_buckets);
}
static inline cc_frame *cc_frame_at(const cc *c, int r, uint64_t i)
{
    return (cc_frame *)((uint8_t *)c->seg[r] + c->off_frames + (size_t)i * c->frame_size);
}
static inline uint64_t cc_frame_no(const cc *c, int r, const cc_frame *f)
{
    return (uint64_t)((const uint8_t *)f - ((const uint8_t *)c->seg[r] + c->off_frames)) /
           c->frame_size;
}
static inline uint8_t *cc_data(const cc *c, int r, uint64_t f)
{
    return (uint8_t *)c->seg[r] + c->off_data + (size_t)f * (size_t)c->page;
}
static inline int cc_owner(const cc *c, uint64_t idx)
{
    return (int)(idx % (uint64_t)c->n);
}

/* table.c: the layout, the locks and the page table. */
void cc_layout(cc *c, int nranks, uint64_t page, uint64_t max_memory, size_t *total);
/* Locks page idx, finding or making its frame (create; 0: NULL when the page is not cached).
 * RFS_OK with *fr (the frame in owner cc_owner(idx)'s segment) or a failure (timeout; a
 * dirty page written to make room failed below: reported to its writers, not here). */
int cc_pin(cc *c, uint64_t idx, int create, cc_frame **fr);
/* Locks page idx only when it is not cached and a frame is free or clean (nothing to write):
 * *fr, else *fr = NULL. Never waits for a page lock or for room, so a process that holds other
 * page locks may call it (a fill of several pages at once). */
int cc_pin_new(cc *c, uint64_t idx, cc_frame **fr);
void cc_unpin(cc *c, uint64_t idx, cc_frame *f);
/* Page lock of frame f (owner o's) that only this process holds: frees it (table lock). */
void cc_free_frame(cc *c, int o, cc_frame *f);
/* Writes the dirty runs of the locked frames fr[0..k) (pages idx[0..k)) below as one list write
 * and waits for the server's answer; their runs are clean after, whatever the outcome (a failure
 * is returned and handed to the pages' other writers, and to this rank too with hand_self). */
int cc_write_pages(cc *c, cc_frame *const *fr, const uint64_t *idx, size_t k, int hand_self);
/* Hands rc (a failure of a write holding rank r's bytes, or RFS_E_IO for a page lost to rank
 * `by`'s death) to rank r's next sync/close. */
void cc_hand_error(cc *c, int r, int rc, int by);
static inline int cc_writer(const cc_frame *f, int r)
{
    return (int)((f->writers[r / 64] >> (r % 64)) & 1u);
}

#endif
