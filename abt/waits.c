/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* What the rfs_io ops wait for: queued writes of a range, of a file, of a name; write marks;
 * the pending end of a file; its unreported background error. */

#include "abt/engine_parts.h"

#include <string.h>

#include "common/clock.h"

/* Waits on cv until woken or until the monotonic time `until` (mu held). */
void abt_wait_until(abt_engine *e, pthread_cond_t *cv, double until)
{
    if (until <= rfs_abt_now())
        return;
    /* rfs_abt_now is CLOCK_MONOTONIC in seconds; 1 us late rather than early */
    struct timespec ts = rfs_deadline_at((int64_t)(until * 1e9) + 1000);
    pthread_cond_timedwait(cv, &e->mu, &ts);
}

void rfs_abt_wait_file(abt_file *f, uint64_t lo, uint64_t hi, int answered_enough)
{
    abt_engine *e = f->e;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        int busy = 0;
        if (f->pending > 0)
            for (abt_chunk *c = e->head; c && !busy; c = c->next)
                busy = c->f == f && abt_overlaps(c, lo, hi) && !(answered_enough && c->answered);
        if (!busy)
            break;
        pthread_cond_wait(&e->done, &e->mu);
    }
    pthread_mutex_unlock(&e->mu);
}

void rfs_abt_wait_queued(abt_file *f)
{
    abt_engine *e = f->e;
    pthread_mutex_lock(&e->mu);
    uint64_t mark = e->next_seq;
    for (;;) {
        int busy = 0;
        /* Until they left the queue: answered and the file version after them noted, so a
         * waiting barrier ends a burst for replay safety too (docs/abt.md). */
        if (f->pending > 0)
            for (abt_chunk *c = e->head; c && !busy; c = c->next)
                busy = c->f == f && c->seq < mark;
        if (!busy)
            break;
        pthread_cond_wait(&e->done, &e->mu);
    }
    pthread_mutex_unlock(&e->mu);
}

/* 1 if name and the parsed want name the same file (spellings of a name may differ). */
static int same_file(const char *name, const rfs_name *want)
{
    rfs_name n;
    return rfs_parse_name(name, &n) == RFS_OK && n.port == want->port &&
           strcmp(n.host, want->host) == 0 && strcmp(n.path, want->path) == 0;
}

void rfs_abt_wait_name(abt_engine *e, const char *name)
{
    rfs_name want;
    if (rfs_parse_name(name, &want) != RFS_OK)
        return;
    pthread_mutex_lock(&e->mu);
    while (e->started) {
        int busy = 0;
        for (abt_file *f = e->open_files; f && !busy; f = f->next_open)
            busy = f->pending > 0 && same_file(f->name, &want);
        if (!busy)
            break;
        pthread_cond_wait(&e->done, &e->mu);
    }
    pthread_mutex_unlock(&e->mu);
}

uint64_t rfs_abt_write_mark(abt_engine *e)
{
    pthread_mutex_lock(&e->mu);
    uint64_t m = e->next_seq;
    pthread_mutex_unlock(&e->mu);
    return m;
}

int rfs_abt_mark_answered(abt_file *f, uint64_t mark)
{
    abt_engine *e = f->e;
    int busy = 0;
    pthread_mutex_lock(&e->mu);
    if (f->pending > 0)
        for (abt_chunk *c = e->head; c && !busy; c = c->next)
            busy = c->f == f && c->seq < mark && !c->answered;
    pthread_mutex_unlock(&e->mu);
    return !busy;
}

uint64_t rfs_abt_pending_end(abt_file *f)
{
    abt_engine *e = f->e;
    uint64_t end = 0;
    pthread_mutex_lock(&e->mu);
    if (f->pending > 0)
        for (abt_chunk *c = e->head; c; c = c->next)
            if (c->f == f && c->len > 0 && c->hi > end)
                end = c->hi;
    pthread_mutex_unlock(&e->mu);
    return end;
}

int rfs_abt_take_error(abt_file *f)
{
    abt_engine *e = f->e;
    pthread_mutex_lock(&e->mu);
    int err = f->err;
    if (err != RFS_OK)
        rfs_fail(err, "%s: %s", f->name, f->errmsg);
    f->err = RFS_OK;
    pthread_mutex_unlock(&e->mu);
    return err;
}
