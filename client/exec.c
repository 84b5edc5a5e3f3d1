/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The runtime's executor: worker threads, all signals blocked, that run the library's
 * background jobs. A job goes to an idle worker, else to a new one: jobs are never queued
 * behind running ones, because many of them are loops that run for as long as their owner
 * (ABT's senders, the nonblocking I/O threads) and a job may wait for another. What it saves
 * is the thread made and torn down per call (a transfer's extra streams, a collective's write
 * pipe, parallel connects): a finished worker waits for the next job, up to IDLE_MAX of them.
 *
 * Locks: x_mu guards the queue and the counts; it is never held while a job runs, and a job
 * may start and join other jobs. */
#include "client/client.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

/* Idle workers kept for the next job; more end when their job is done. */
#define IDLE_MAX 32

static void *worker_main(void *arg)
{
    rfs_runtime *rt = arg;
    pthread_mutex_lock(&rt->x_mu);
    for (;;) {
        while (!rt->x_head && !rt->x_stopping) {
            rt->x_idle++;
            pthread_cond_wait(&rt->x_work, &rt->x_mu);
            rt->x_idle--;
        }
        if (!rt->x_head)
            break; /* stopping */
        rfs_task *t = rt->x_head;
        rt->x_head = t->next;
        if (!rt->x_head)
            rt->x_tail = NULL;
        rt->x_queued--;
        pthread_mutex_unlock(&rt->x_mu);
        void *ret = t->fn(t->arg);
        pthread_mutex_lock(&rt->x_mu);
        t->ret = ret;
        t->done = 1;
        pthread_cond_broadcast(&rt->x_done);
        if (rt->x_idle >= IDLE_MAX)
            break;
    }
    rt->x_threads--;
    pthread_cond_broadcast(&rt->x_gone);
    pthread_mutex_unlock(&rt->x_mu);
    return NULL;
}

/* A new worker, detached, with every signal blocked (the mask is inherited from the thread
 * that creates it, so it is set around pthread_create). x_mu held. */
static int add_worker(rfs_runtime *rt)
{
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return ENOMEM;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t th;
    int e = pthread_create(&th, &attr, worker_main, rt);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (e == 0) {
        rt->x_threads++;
        rt->x_started++;
    }
    return e;
}

int rfs_task_start(rfs_runtime *rt, rfs_task *t, void *(*fn)(void *), void *arg)
{
    *t = (rfs_task){.fn = fn, .arg = arg, .rt = rt};
    pthread_mutex_lock(&rt->x_mu);
    /* Idle workers not yet claimed by queued jobs take it; otherwise one more worker. */
    int e = rt->x_idle > rt->x_queued ? 0 : add_worker(rt);
    if (e == 0) {
        if (rt->x_tail)
            rt->x_tail->next = t;
        else
            rt->x_head = t;
        rt->x_tail = t;
        rt->x_queued++;
        pthread_cond_signal(&rt->x_work);
    }
    pthread_mutex_unlock(&rt->x_mu);
    return e;
}

void *rfs_task_join(rfs_task *t)
{
    rfs_runtime *rt = t->rt;
    pthread_mutex_lock(&rt->x_mu);
    while (!t->done)
        pthread_cond_wait(&rt->x_done, &rt->x_mu);
    pthread_mutex_unlock(&rt->x_mu);
    return t->ret;
}

void rfs_exec_init(rfs_runtime *rt)
{
    pthread_mutex_init(&rt->x_mu, NULL);
    pthread_cond_init(&rt->x_work, NULL);
    pthread_cond_init(&rt->x_done, NULL);
    pthread_cond_init(&rt->x_gone, NULL);
}

void rfs_exec_after_fork(rfs_runtime *rt)
{
    rt->x_head = rt->x_tail = NULL;
    rt->x_threads = rt->x_idle = rt->x_queued = 0;
    rfs_exec_init(rt);
}

void rfs_exec_stop(rfs_runtime *rt)
{
    pthread_mutex_lock(&rt->x_mu);
    rt->x_stopping = 1;
    pthread_cond_broadcast(&rt->x_work);
    while (rt->x_threads > 0)
        pthread_cond_wait(&rt->x_gone, &rt->x_mu);
    pthread_mutex_unlock(&rt->x_mu);
    pthread_cond_destroy(&rt->x_gone);
    pthread_cond_destroy(&rt->x_done);
    pthread_cond_destroy(&rt->x_work);
    pthread_mutex_destroy(&rt->x_mu);
}

void rfs_runtime_get_stats(rfs_runtime *rt, rfs_runtime_stats *s)
{
    pthread_mutex_lock(&rt->x_mu);
    s->workers = rt->x_threads;
    s->idle = rt->x_idle;
    s->started = rt->x_started;
    pthread_mutex_unlock(&rt->x_mu);
}
