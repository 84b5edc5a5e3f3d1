/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Worker pool with per-connection lanes (pool.h). One mutex guards the lanes and the list; the
 * list holds exactly the lanes with work ready and fewer than cap running. */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>

#include "common/debug.h"
#include "common/log.h"

struct rfsd_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rfsd_lane *first, *last; /* lanes a worker may take from, in round-robin order */
    unsigned queued;         /* items in all lanes */
    unsigned running;        /* items of all lanes running */
    unsigned cap;
    unsigned reserve; /* workers only a lane with nothing running may take */
    unsigned size;    /* threads asked for (nthreads grows while they start) */
    int stopping;
    int nthreads;
    pthread_t *threads;
};

static void unlist(rfsd_pool *p, rfsd_lane *l)
{
    if (l->prev)
        l->prev->next = l->next;
    else
        p->first = l->next;
    if (l->next)
        l->next->prev = l->prev;
    else
        p->last = l->prev;
    l->next = l->prev = NULL;
    l->listed = 0;
}

static void list_last(rfsd_pool *p, rfsd_lane *l)
{
    l->prev = p->last;
    l->next = NULL;
    if (p->last)
        p->last->next = l;
    else
        p->first = l;
    p->last = l;
    l->listed = 1;
}

/* Lists or unlists l after its queue or running count changed (caller holds mu). */
static void relist(rfsd_pool *p, rfsd_lane *l)
{
    RFS_ASSERT_HELD(&p->mu);
    int want = l->head && l->running < p->cap;
    if (want && !l->listed)
        list_last(p, l);
    else if (!want && l->listed)
        unlist(p, l);
}

/* The lane to serve next: fewest running, earliest in the list (caller holds mu). A lane with
 * nothing running is served before any lane already holding workers, which is what lets a
 * client that sends one request at a time through while others pipeline hundreds. */
static rfsd_lane *pick(rfsd_pool *p)
{
    RFS_ASSERT_HELD(&p->mu);
    /* The last `reserve` free workers are kept for lanes with nothing running: a newcomer
     * (an honest client's OPEN or SYNC) then finds a worker at once instead of waiting for
     * one of the busy clients' long requests to end. */
    int keep = p->running + p->reserve >= p->size;
    rfsd_lane *best = NULL;
    for (rfsd_lane *l = p->first; l; l = l->next) {
        if (keep && l->running > 0)
            continue;
        if (!best || l->running < best->running)
            best = l;
        if (best->running == 0)
            break;
    }
    return best;
}

static void *worker_main(void *arg)
{
    rfsd_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        rfsd_lane *l = pick(p);
        if (!l) {
            if (p->stopping && p->queued == 0)
                break;
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        rfsd_work *w = l->head;
        l->head = w->next;
        if (!l->head)
            l->tail = NULL;
        l->running++;
        p->running++;
        p->queued--;
        /* round robin: served lanes go to the back */
        unlist(p, l);
        relist(p, l);
        pthread_mutex_unlock(&p->mu);
        w->next = NULL;
        w->run(w);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int rfsd_pool_start(int nthreads, unsigned cap, rfsd_pool **out)
{
    rfsd_pool *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    p->threads = calloc((size_t)nthreads, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return -1;
    }
    p->cap = cap ? cap : 1;
    p->size = (unsigned)nthreads;
    p->reserve = nthreads >= 16 ? (unsigned)nthreads / 8 : 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker_main, p)) {
            RFS_LOGE("cannot start worker thread %d", i);
            p->nthreads = i;
            rfsd_pool_stop(p);
            return -1;
        }
        p->nthreads = i + 1;
    }
    *out = p;
    return 0;
}

void rfsd_pool_submit(rfsd_pool *p, rfsd_lane *l, rfsd_work *w)
{
    w->next = NULL;
    pthread_mutex_lock(&p->mu);
    if (l->tail)
        l->tail->next = w;
    else
        l->head = w;
    l->tail = w;
    p->queued++;
    relist(p, l);
    if (l->listed)
        pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void rfsd_pool_done(rfsd_pool *p, rfsd_lane *l)
{
    pthread_mutex_lock(&p->mu);
    l->running--;
    p->running--;
    relist(p, l);
    if (p->first)
        pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

int rfsd_pool_threads(const rfsd_pool *p)
{
    return p->nthreads;
}
unsigned rfsd_pool_cap(const rfsd_pool *p)
{
    return p->cap;
}

void rfsd_pool_stop(rfsd_pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->threads);
    free(p);
}
