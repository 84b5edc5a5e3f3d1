/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* A fixed pool of worker threads shared fairly by the connections (docs/design.md "Fair
 * scheduling"). Each connection has a lane: a FIFO of its requests that are ready to run.
 * A free worker takes the next request of the lane with the fewest requests running (ties in
 * round-robin order), and no lane runs more than `cap` requests at once, so a client that
 * pipelines many requests, or many slow ones, holds at most its share of the workers while
 * others wait for one turn at most. The last free workers (an eighth of the pool, at least
 * one) are kept for lanes with nothing running, so a client sending one request at a time
 * finds a worker at once even while others keep the rest busy. Items are intrusive (embedded in the caller's struct), so
 * submitting never allocates and never fails; each lane's length is bounded by its
 * connection's in-flight budget. */
#ifndef RFSD_POOL_H
#define RFSD_POOL_H

typedef struct rfsd_work {
    struct rfsd_work *next;
    void (*run)(struct rfsd_work *w);
} rfsd_work;

typedef struct rfsd_lane {
    rfsd_work *head, *tail; /* ready, not started */
    unsigned running;       /* started on a worker, rfsd_pool_done not called yet */
    int listed;             /* in the pool's list of lanes a worker may take from */
    struct rfsd_lane *next, *prev;
} rfsd_lane;

typedef struct rfsd_pool rfsd_pool;

/* cap: requests of one lane running at once (at least 1). */
int rfsd_pool_start(int nthreads, unsigned cap, rfsd_pool **out);
/* Queues w on lane l (zero-initialised before first use). */
void rfsd_pool_submit(rfsd_pool *p, rfsd_lane *l, rfsd_work *w);
/* Called by w->run once the item of l no longer needs its worker's slot: the lane may start
 * another. After this the pool never touches l for that item. */
void rfsd_pool_done(rfsd_pool *p, rfsd_lane *l);
int rfsd_pool_threads(const rfsd_pool *p);
unsigned rfsd_pool_cap(const rfsd_pool *p);
/* Runs every queued item, then joins the threads and frees the pool. */
void rfsd_pool_stop(rfsd_pool *p);

#endif
