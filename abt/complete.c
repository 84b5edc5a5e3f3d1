/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* What happens when a chunk's send is over: its file's version is noted for replay safety,
 * a failed one is kept in the journal and its error kept for the file's next sync or close,
 * and the chunk leaves the queue (a deferred close then closes below). */

#include "abt/engine_parts.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void close_below_locked(abt_file *f)
{
    abt_engine *e = f->e;
    rfs_abt_unregister_file(f);
    pthread_mutex_unlock(&e->mu);
    rfs_status closed;
    rfs_status_save(&closed, f->below->ops->close(f->below));
    pthread_mutex_lock(&e->mu);
    int err = f->err ? f->err : closed.rc;
    if (err != RFS_OK && e->final_err == RFS_OK) {
        e->final_err = err;
        snprintf(e->final_msg, sizeof e->final_msg, "%s: %s", f->name,
                 f->err ? f->errmsg : closed.msg);
    }
    free(f->name);
    free(f);
    pthread_cond_broadcast(&e->done);
}

/* 1 if a chunk of c's file other than c is being sent. */
static int file_busy_besides(const abt_chunk *c)
{
    for (abt_chunk *d = c->f->e->head; d; d = d->next)
        if (d != c && d->f == c->f && d->inflight)
            return 1;
    return 0;
}

/* 1 if a chunk of c's file other than c is queued and not answered yet. A chunk answered
 * and having its version asked for does not count: a write sent meanwhile (on other bytes, or
 * on its bytes once answered) must ask again, or the version noted last could predate it. */
static int unanswered_besides(const abt_chunk *c)
{
    for (abt_chunk *d = c->f->e->head; d; d = d->next)
        if (d != c && d->f == c->f && !d->answered)
            return 1;
    return 0;
}

/* What writes waiting for space go by: deliveries free room, failures mean waiting is
 * pointless (mu held). */
static void note_outcome(abt_engine *e, int rc, const char *msg)
{
    e->last_failed = rc != RFS_OK;
    if (rc == RFS_OK) {
        e->delivered++;
        return;
    }
    e->failures++;
    snprintf(e->last_fail, sizeof e->last_fail, "%s", msg);
}

/* Replay safety: with no other write of the file in flight, what the server reports now is
 * the version `rfs recover` must find before it replays this file (abt/journal.h). Asked while
 * c is still queued, so a sync of the file returns only once it is known. A write the server
 * refused (disk full, quota) may still have landed in part: the version after it is ours too.
 * After a lost connection nothing can be asked. */
static void probe_version(abt_engine *e, abt_chunk *c, int rc, int noted)
{
    int server_answered = rc != RFS_E_CONN && rc != RFS_E_TIMEOUT && rc != RFS_E_PROTO;
    char *probe = !noted && server_answered && !file_busy_besides(c) &&
                          (!unanswered_besides(c) || rfs_journal_track_due(c->f->name))
                      ? strdup(c->f->name)
                      : NULL;
    if (probe) {
        pthread_mutex_unlock(&e->mu);
        rfs_journal_track(probe);
        pthread_mutex_lock(&e->mu);
        free(probe);
    }
}

/* A failed send: the data is kept in the journal for `rfs recover` (a staged chunk is there
 * already) and the first failure is kept for the file's next sync or close. */
static void keep_failed(abt_engine *e, abt_chunk *c, int rc, const char *msg)
{
    abt_file *f = c->f;
    e->stats.bytes_failed += c->len;
    char kept[160] = "";
    if (!c->staged) {
        c->busy++;
        pthread_mutex_unlock(&e->mu);
        int src = abt_stage_chunk(c, c->buf, 1, 1);
        pthread_mutex_lock(&e->mu);
        c->busy--;
        if (src != RFS_OK)
            snprintf(kept, sizeof kept,
                     "; could not keep the data in the staging journal, "
                     "%" PRIu64 " bytes are lost",
                     c->len);
    }
    if (f->err == RFS_OK) {
        f->err = rc;
        snprintf(f->errmsg, sizeof f->errmsg,
                 "background write of %" PRIu64 " bytes at offset %" PRIu64 " failed: %s%s%s%s",
                 c->len, c->lo, msg, kept, kept[0] ? "" : "; the data is kept in ",
                 kept[0] ? "" : f->stage->dir);
    }
}

/* Takes c out of the queue and frees it; an empty queue lets the journals be truncated. */
static void leave_queue(abt_engine *e, abt_chunk *c)
{
    abt_file *f = c->f;
    abt_fifo_remove(e, c);
    if (f->last == c)
        f->last = NULL;
    if (c->buf)
        abt_pool_put(e, c->buf, f->buf_size);
    f->stage->mem_need -= c->resv;
    f->pending--;
    free(c->ext);
    free(c);
    if (!e->head)
        for (abt_stage *st = e->stages; st; st = st->next)
            abt_trim_journal(st);
    pthread_cond_broadcast(&e->done);
}

void abt_finish_chunk(abt_chunk *c, int rc, const char *msg, int noted)
{
    abt_file *f = c->f;
    abt_engine *e = f->e;
    /* Its send is over: it must not count as in flight for another completion of the file
     * while mu is let go below (the version probe, the journal mark of a staged chunk). It
     * did: a completion that skipped its probe because the other was in flight then made the
     * other skip too, while it marked its record done, and the journal kept the version of
     * before both (1 run in 4 of test_writer_records_version_after_its_deliveries). Busy until
     * it leaves the queue, so nobody picks it and sends it again meanwhile. */
    c->inflight = 0;
    c->busy++;
    /* Barriers and reads wait only for this (rfs_abt_wait_file): the bytes are in the file. */
    if (rc == RFS_OK) {
        c->answered = 1;
        pthread_cond_broadcast(&e->done);
        pthread_cond_broadcast(&e->work); /* later writes on its bytes may go now */
    }
    probe_version(e, c, rc, noted);
    note_outcome(e, rc, msg);
    if (rc == RFS_OK) {
        e->stats.bytes_sent += c->len;
        if (c->staged) {
            pthread_mutex_unlock(&e->mu);
            rfs_journal_mark_done(f->stage->journal, c->rec_off);
            pthread_mutex_lock(&e->mu);
        }
    } else {
        keep_failed(e, c, rc, msg);
    }
    leave_queue(e, c);
    if (f->closing && f->pending == 0)
        close_below_locked(f);
}
