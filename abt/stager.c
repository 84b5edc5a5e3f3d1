/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Background staging by eq. (1) of rfs-abt.txt: during a computation phase the stager moves
 * the newest memory-held chunks to the journal, spread over the phase, so the next output
 * phase finds free buffers. */

#include "abt/engine_parts.h"

#include "common/clock.h"

static abt_chunk *newest_in_memory(abt_engine *e)
{
    for (abt_chunk *c = e->tail; c; c = c->prev)
        if (c->buf && !c->inflight && !c->busy && !c->staged && c->f->bg_staging)
            return c;
    return NULL;
}

static void stage_one_step(abt_engine *e, double now)
{
    if (!rfs_abt_phases_computing(&e->phases, now)) {
        e->staged_this_phase = 0;
        e->computing_since = -1;
        return;
    }
    if (e->computing_since < 0)
        e->computing_since = now;
    double i_rem = e->hint_interval > 0 ? e->phases.phase_start + e->hint_interval - now
                                        : rfs_abt_phases_remaining(&e->phases, now);
    if (e->hint_interval > 0 && i_rem < 0)
        i_rem = 0; /* overdue: the next output phase may start any moment */
    double n = e->hint_output ? (double)e->hint_output : e->phases.output;
    e->stats.interval_s = e->hint_interval > 0 ? e->hint_interval : e->phases.interval;
    e->stats.output_bytes = (uint64_t)n;
    if (i_rem < 0 || n <= 0 || e->bx <= 0)
        return;
    if (i_rem < 0)
        i_rem = 0;
    /* In whole buffers, as the pool hands them out (the largest size of the files). */
    uint64_t cap = e->cap_bytes - e->cap_bytes % e->buf_max;
    double abs_max = (double)cap;
    double abs_now = (double)(cap > e->used_bytes ? cap - e->used_bytes : 0);
    double buffered = (double)e->used_bytes;
    /* Until the first staging measures Bw, assume the local disk is far faster than the link. */
    double bw = e->bw > 0 ? e->bw : 100.0 * e->bx;
    double x = rfs_abt_stage_bytes(abs_max, abs_now, n, i_rem, e->bx, bw, buffered);
    if (x <= 0)
        return;
    /* Spread the staging over the computation phase rather than doing it all at once. */
    double elapsed = now - e->computing_since, total = elapsed + i_rem;
    double target = (x + (double)e->staged_this_phase) * (total > 0 ? elapsed / total : 1.0) +
                    (double)e->buf_max;
    if ((double)e->staged_this_phase >= target)
        return;
    abt_chunk *c = newest_in_memory(e);
    if (!c)
        return;
    c->busy++;
    c->sealed = 1;
    pthread_mutex_unlock(&e->mu);
    int rc = abt_stage_chunk(c, c->buf, c->f->sync_staging, 1);
    pthread_mutex_lock(&e->mu);
    c->busy--;
    if (rc == RFS_OK) {
        c->staged = 1;
        abt_pool_put(e, c->buf, c->f->buf_size);
        c->buf = NULL;
        e->stats.bytes_staged_bg += c->len;
        e->staged_this_phase += c->len;
    }
    pthread_cond_broadcast(&e->work);
}

void *abt_stager_main(void *arg)
{
    abt_engine *e = arg;
    double cpu0 = abt_thread_cpu(); /* the worker may have run other jobs before */
    pthread_mutex_lock(&e->mu);
    abt_pool_prefault(e);
    while (!e->stop) {
        if (!e->head) {
            /* Nothing buffered, nothing to stage: sleep until a write queues a chunk (no
             * 10 ms polling that would preempt the computation for nothing). */
            pthread_cond_wait(&e->work, &e->mu);
            continue;
        }
        struct timespec ts = rfs_deadline_ms(10);
        pthread_cond_timedwait(&e->work, &e->mu, &ts);
        if (!e->stop && e->bg_files > 0)
            stage_one_step(e, rfs_abt_now());
    }
    e->stats.thread_cpu_s += abt_thread_cpu() - cpu0;
    pthread_mutex_unlock(&e->mu);
    return NULL;
}
