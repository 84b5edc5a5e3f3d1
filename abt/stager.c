/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Background staging by eq. (1) of rfs-abt.txt: during a computation phase the stager moves
 * the newest memory-held chunks to the journal, spread over the phase, so the next output
 * phase finds free buffers. */

#include "abt/engine_parts.h"

#include "common/clock.h"

static abt_chunk *newest_in_memory(void)
{
    for (abt_chunk *c = E.tail; c; c = c->prev)
        if (c->buf && !c->inflight && !c->busy && !c->staged && c->f->bg_staging)
            return c;
    return NULL;
}

static void stage_one_step(double now)
{
    if (!rfs_abt_phases_computing(&E.phases, now)) {
        E.staged_this_phase = 0;
        E.computing_since = -1;
        return;
    }
    if (E.computing_since < 0)
        E.computing_since = now;
    double i_rem = E.hint_interval > 0 ? E.phases.phase_start + E.hint_interval - now
                                       : rfs_abt_phases_remaining(&E.phases, now);
    if (E.hint_interval > 0 && i_rem < 0)
        i_rem = 0;  /* overdue: the next output phase may start any moment */
    double n = E.hint_output ? (double)E.hint_output : E.phases.output;
    E.stats.interval_s = E.hint_interval > 0 ? E.hint_interval : E.phases.interval;
    E.stats.output_bytes = (uint64_t)n;
    if (i_rem < 0 || n <= 0 || E.bx <= 0)
        return;
    if (i_rem < 0)
        i_rem = 0;
    double abs_max = (double)(E.cap_bufs * E.buf_size);
    double abs_now = (double)((E.cap_bufs - E.used_bufs) * E.buf_size);
    double buffered = (double)(E.used_bufs * E.buf_size);
    /* Until the first staging measures Bw, assume the local disk is far faster than the link. */
    double bw = E.bw > 0 ? E.bw : 100.0 * E.bx;
    double x = rfs_abt_stage_bytes(abs_max, abs_now, n, i_rem, E.bx, bw, buffered);
    if (x <= 0)
        return;
    /* Spread the staging over the computation phase rather than doing it all at once. */
    double elapsed = now - E.computing_since, total = elapsed + i_rem;
    double target = (x + (double)E.staged_this_phase) * (total > 0 ? elapsed / total : 1.0) +
                    (double)E.buf_size;
    if ((double)E.staged_this_phase >= target)
        return;
    abt_chunk *c = newest_in_memory();
    if (!c)
        return;
    c->busy++;
    c->sealed = 1;
    pthread_mutex_unlock(&E.mu);
    int rc = abt_stage_chunk(c, c->buf, c->f->sync_staging, 1);
    pthread_mutex_lock(&E.mu);
    c->busy--;
    if (rc == RFS_OK) {
        c->staged = 1;
        abt_pool_put(c->buf);
        c->buf = NULL;
        E.stats.bytes_staged_bg += c->len;
        E.staged_this_phase += c->len;
    }
    pthread_cond_broadcast(&E.work);
}

void *abt_stager_main(void *arg)
{
    (void)arg;
    double cpu0 = abt_thread_cpu();  /* the worker may have run other jobs before */
    pthread_mutex_lock(&E.mu);
    abt_pool_prefault();
    while (!E.stop) {
        if (!E.head) {
            /* Nothing buffered, nothing to stage: sleep until a write queues a chunk (no
             * 10 ms polling that would preempt the computation for nothing). */
            pthread_cond_wait(&E.work, &E.mu);
            continue;
        }
        struct timespec ts = rfs_deadline_ms(10);
        pthread_cond_timedwait(&E.work, &E.mu, &ts);
        if (!E.stop && E.bg_files > 0)
            stage_one_step(rfs_abt_now());
    }
    E.stats.thread_cpu_s += abt_thread_cpu() - cpu0;
    pthread_mutex_unlock(&E.mu);
    return NULL;
}
