/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Pipelined two-phase writes: an aggregator hands each round's list write to a few background
 * threads and goes on with the next round's exchange, so round k+1's data is already on the
 * wire while round k's replies are still coming back. With synchronous rounds every round
 * ends with the link idle for a round trip (the last frame's reply), and the next exchange only
 * starts after that.
 *
 * At most `depth` writes are in flight; submit blocks until one finishes. Rounds of one
 * aggregator cover disjoint file windows, so their writes may complete in any order. After the
 * first failure the remaining jobs are dropped (the collective fails anyway) and the failure is
 * reported by mp_wpipe_finish. The threads call only rfs_io ops (mp_listio), never MPI. */
#include "mpiio/wpipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/debug.h"

typedef struct job {
    struct job *next;
    rfs_extent *ext;
    size_t n;
    char *buf;
    size_t cap;
} job;

struct mp_wpipe {
    mp_file *f;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a job was queued, finished, or the pipe stops */
    job *head, *tail;
    int queued, running;
    int stopping;
    int nthreads;
    rfs_task th[MP_WPIPE_MAX_DEPTH]; /* workers of the file's runtime */
    int depth;
    rfs_status failed; /* first failure, rc RFS_OK if none */
    /* Data buffers of finished writes, for mp_wpipe_reuse: at most depth of them. */
    char *spare[MP_WPIPE_MAX_DEPTH];
    size_t spare_cap[MP_WPIPE_MAX_DEPTH];
    int nspare;
};

static void free_job(job *j)
{
    free(j->ext);
    free(j->buf);
    free(j);
}

/* Keeps a finished job's buffer for reuse (caller holds mu), else frees it; frees the rest. */
static void retire_job(mp_wpipe *p, job *j)
{
    RFS_ASSERT_HELD(&p->mu);
    if (p->nspare < p->depth) {
        p->spare[p->nspare] = j->buf;
        p->spare_cap[p->nspare] = j->cap;
        p->nspare++;
        j->buf = NULL;
    }
    free_job(j);
}

static void *worker(void *arg)
{
    mp_wpipe *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->cv, &p->mu);
        if (!p->head)
            break; /* stopping and nothing left */
        job *j = p->head;
        p->head = j->next;
        if (!p->head)
            p->tail = NULL;
        p->queued--;
        p->running++;
        int skip = p->failed.rc != RFS_OK;
        pthread_mutex_unlock(&p->mu);
        int rc = RFS_OK;
        if (!skip) {
            size_t done = 0;
            rc = mp_listio(p->f, 1, j->ext, j->n, j->buf, &done);
        }
        rfs_status mine; /* saved before the lock: only this thread's message is its cause */
        if (rc != RFS_OK)
            rfs_status_save(&mine, rc);
        pthread_mutex_lock(&p->mu);
        retire_job(p, j);
        if (rc != RFS_OK && p->failed.rc == RFS_OK)
            p->failed = mine;
        p->running--;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

mp_wpipe *mp_wpipe_start(mp_file *f, int depth)
{
    if (depth < 1)
        depth = 1;
    if (depth > MP_WPIPE_MAX_DEPTH)
        depth = MP_WPIPE_MAX_DEPTH;
    mp_wpipe *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->f = f;
    p->depth = depth;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (int i = 0; i < depth; i++) {
        if (rfs_task_start(f->rt, &p->th[i], worker, p) != 0)
            break;
        p->nthreads++;
    }
    if (p->nthreads == 0) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL; /* the caller writes synchronously */
    }
    p->depth = p->nthreads;
    return p;
}

char *mp_wpipe_reuse(mp_wpipe *p, size_t need, size_t *cap)
{
    char *buf = NULL;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->nspare; i++)
        if (p->spare_cap[i] >= need) {
            buf = p->spare[i];
            *cap = p->spare_cap[i];
            p->nspare--;
            p->spare[i] = p->spare[p->nspare];
            p->spare_cap[i] = p->spare_cap[p->nspare];
            break;
        }
    pthread_mutex_unlock(&p->mu);
    return buf;
}

int mp_wpipe_submit(mp_wpipe *p, rfs_extent *ext, size_t n, char *buf, size_t cap)
{
    job *j = malloc(sizeof *j);
    if (!j) {
        free(ext);
        free(buf);
        return RFS_E_NOMEM;
    }
    *j = (job){NULL, ext, n, buf, cap};
    pthread_mutex_lock(&p->mu);
    /* Bounded memory: at most depth rounds' buffers are held by the pipe. */
    while (p->queued + p->running >= p->depth && p->failed.rc == RFS_OK)
        pthread_cond_wait(&p->cv, &p->mu);
    int err = p->failed.rc;
    if (err == RFS_OK) {
        if (p->tail)
            p->tail->next = j;
        else
            p->head = j;
        p->tail = j;
        p->queued++;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    if (err != RFS_OK)
        free_job(j);
    return err;
}

int mp_wpipe_finish(mp_wpipe *p, rfs_status *st)
{
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++)
        rfs_task_join(&p->th[i]);
    int err = p->failed.rc;
    if (st)
        *st = p->failed;
    for (int i = 0; i < p->nspare; i++)
        free(p->spare[i]);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
    return err;
}
