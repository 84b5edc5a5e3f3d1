/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* ABT's sender threads: pick the next chunk that may go (FIFO, memory-held first, never
 * past an unanswered overlapping write of its file), wait until the application is out of
 * its write calls, send it to the layer below and measure the link's rate (Bx). */

#include "abt/engine_parts.h"

#include <inttypes.h>
#include <stdlib.h>

/* Memory-held chunks go first: sending one frees a buffer for the next output phase, sending
 * a staged one frees nothing. Eq. (1) counts every byte the link carries (I * Bx) as freed
 * buffer space, which only holds if staged chunks wait while memory-held ones are queued;
 * otherwise the staged backlog of earlier phases is sent first and the next phase finds the
 * buffers still full (foreground staging). The overlap rule below keeps program order where
 * it matters. */
static abt_chunk *pick_pass(abt_engine *e, int memory_only)
{
    for (abt_chunk *c = e->head; c; c = c->next) {
        if (c->inflight || c->busy || c->f->inflight >= c->f->threads)
            continue;
        if (memory_only && (c->staged || !c->buf))
            continue;
        int blocked = 0;
        /* An earlier write the server has answered is in the file: a later one on the same
         * bytes may go while the version after the earlier one is still being asked for
         * (finish_chunk); HDF5 fills a chunk and writes it right after, so this saves a round
         * trip per dataset. */
        for (abt_chunk *d = e->head; d != c; d = d->next)
            if (d->f == c->f && !d->answered && abt_overlaps(d, c->lo, c->hi)) {
                blocked = 1;
                break;
            }
        if (!blocked)
            return c;
    }
    return NULL;
}

static abt_chunk *pick(abt_engine *e)
{
    abt_chunk *c = pick_pass(e, 1);
    return c ? c : pick_pass(e, 0);
}

static int send_chunk(abt_chunk *c, rfs_status *st)
{
    uint8_t *data = c->buf, *tmp = NULL;
    int rc = RFS_OK;
    if (c->staged) {
        tmp = malloc(c->len ? c->len : 1);
        rc = tmp ? rfs_journal_read(c->f->stage->journal, c->data_off, tmp, c->len)
                 : rfs_fail(RFS_E_NOMEM, "out of memory reading back staged data");
        data = tmp;
    }
    rfs_io *b = c->f->below;
    size_t done = 0;
    if (rc == RFS_OK) {
        if (c->n_ext == 1)
            rc = b->ops->pwrite(b, data, c->len, c->ext[0].offset, &done);
        else
            rc = b->ops->pwritev(b, c->ext, c->n_ext, data, &done);
        if (rc == RFS_OK && done != c->len)
            rc = rfs_fail(RFS_E_IO, "short write (%zu of %" PRIu64 " bytes)", done, c->len);
    }
    st->rc = rc;
    if (rc != RFS_OK) /* its message goes with it to finish_chunk, past the version probe */
        rfs_status_save(st, rc);
    free(tmp);
    return rc;
}

/* Bx is measured between completions: bytes completed after a completion, over the time since
 * it. Several sends are in flight at once, so counting from the start of a busy period would
 * charge the first completion with the transfer time of every send in flight but only its own
 * bytes (up to threads x too low, which makes eq. (1) stage far too much); between two
 * completions the bytes that were already on their way cancel out. Called with mu held, before
 * n_inflight is decremented. */
static void note_bandwidth(abt_engine *e, uint64_t bytes, double now)
{
    e->bx_period_bytes += (double)bytes;
    if (e->bx_win_start < 0) {
        e->bx_win_start = now;
        e->bx_win_bytes = 0;
    } else {
        e->bx_win_bytes += (double)bytes;
        double dt = now - e->bx_win_start;
        int last = e->n_inflight == 1; /* this completion ends the busy period */
        /* A busy period's last window counts only if it is long enough: completions that
         * arrive in a burst (pipelined replies) would otherwise give any rate at all. */
        if (dt > 0 && e->bx_win_bytes > 0 &&
            (dt >= BX_WINDOW_S || (last && dt >= BX_WINDOW_S / 4))) {
            e->bx = rfs_ewma(e->bx, e->bx_win_bytes / dt, 0.3);
            e->stats.remote_bw = e->bx;
            e->bx_win_start = now;
            e->bx_win_bytes = 0;
        }
    }
    if (e->n_inflight == 1) {
        /* A busy period of one send gives no window: take its bytes over its whole time
         * (request latency included) until a better estimate exists. */
        if (e->bx <= 0 && now > e->busy_mark && e->bx_period_bytes > 0) {
            e->bx = e->bx_period_bytes / (now - e->busy_mark);
            e->stats.remote_bw = e->bx;
        }
        e->bx_win_start = -1;
        e->bx_period_bytes = 0;
    }
}

/* Senders yield to the application: while it is copying a write into the buffers, a sender
 * sending (copying into the socket, running the TCP stack) would take the CPU and memory
 * bandwidth that write is waiting for, on a node whose cores all compute. A chunk is started
 * once no write call has been in ABT for SEND_QUIET_S -- the link loses well under a
 * millisecond per output phase -- or once it has waited SEND_DEFER_MAX_S, so a program that
 * writes without pause still streams. Returns 1, or 0 and the time to look again. */
static int sendable(abt_engine *e, const abt_chunk *c, double now, double *retry)
{
    if (e->stop)
        return 1;
    double quiet_at = e->writing ? now + SEND_DEFER_MAX_S : e->last_write_end + SEND_QUIET_S;
    double due = c->born + SEND_DEFER_MAX_S;
    if (now >= quiet_at || now >= due)
        return 1;
    *retry = quiet_at < due ? quiet_at : due;
    return 0;
}

void *abt_sender_main(void *arg)
{
    abt_engine *e = arg;
    double cpu0 = abt_thread_cpu(); /* the worker may have run other jobs before */
    rfs_status sent;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        abt_chunk *c = pick(e);
        if (!c) {
            if (e->stop && !e->head)
                break;
            pthread_cond_wait(&e->work, &e->mu);
            continue;
        }
        double retry;
        if (!sendable(e, c, rfs_abt_now(), &retry)) {
            abt_wait_until(e, &e->work, retry);
            continue;
        }
        c->inflight = 1;
        c->f->inflight++;
        c->sealed = 1;
        if (e->n_inflight++ == 0)
            e->busy_mark = rfs_abt_now();
        pthread_mutex_unlock(&e->mu);
        int rc = send_chunk(c, &sent);
        /* Replay safety: the version the reply carried (no round trip), noted before the chunk
         * leaves the queue, so a sync of the file returns only once it is in the journal. */
        int noted = rfs_abt_note_version(c->f);
        pthread_mutex_lock(&e->mu);
        note_bandwidth(e, rc == RFS_OK ? c->len : 0, rfs_abt_now());
        e->n_inflight--;
        c->f->inflight--;
        abt_finish_chunk(c, rc, sent.msg, noted);
    }
    e->stats.thread_cpu_s += abt_thread_cpu() - cpu0;
    pthread_mutex_unlock(&e->mu);
    return NULL;
}
