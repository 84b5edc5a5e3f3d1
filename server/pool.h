/* A fixed pool of worker threads consuming a FIFO of work items. Items are intrusive (embedded
 * in the caller's struct), so submitting never allocates and never fails. The queue's length is
 * bounded by its producers: each connection has a cap on requests in flight. */
#ifndef RFSD_POOL_H
#define RFSD_POOL_H

typedef struct rfsd_work {
    struct rfsd_work *next;
    void (*run)(struct rfsd_work *w);
} rfsd_work;

typedef struct rfsd_pool rfsd_pool;

int rfsd_pool_start(int nthreads, rfsd_pool **out);
void rfsd_pool_submit(rfsd_pool *p, rfsd_work *w);
int rfsd_pool_threads(const rfsd_pool *p);
/* Runs every queued item, then joins the threads and frees the pool. */
void rfsd_pool_stop(rfsd_pool *p);

#endif
