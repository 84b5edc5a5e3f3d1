/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* ABT's queue: a write is cut into pieces of at most one of the file's buffers, each appended
 * to the file's newest chunk when it fits there (small writes become one list I/O) or queued
 * as a new chunk in the engine's FIFO (place.c finds it a buffer or journal room). */

#include "abt/engine_parts.h"

#include <stdlib.h>
#include <string.h>

static void fifo_append(abt_engine *e, abt_chunk *c)
{
    c->prev = e->tail;
    c->next = NULL;
    if (e->tail)
        e->tail->next = c;
    else
        e->head = c;
    e->tail = c;
}

void abt_fifo_remove(abt_engine *e, abt_chunk *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        e->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        e->tail = c->prev;
}

static int add_extents(abt_chunk *c, const rfs_extent *ext, size_t n)
{
    if (c->n_ext + n > c->cap_ext) {
        uint32_t cap = c->cap_ext ? c->cap_ext : 4;
        while (cap < c->n_ext + n)
            cap *= 2;
        rfs_extent *ne = realloc(c->ext, sizeof *ne * cap);
        if (!ne)
            return RFS_E_NOMEM;
        c->ext = ne;
        c->cap_ext = cap;
    }
    for (size_t i = 0; i < n; i++) {
        if (ext[i].length == 0)
            continue;
        rfs_extent *last = c->n_ext ? &c->ext[c->n_ext - 1] : NULL;
        if (last && last->offset + last->length == ext[i].offset)
            last->length += ext[i].length;
        else
            c->ext[c->n_ext++] = ext[i];
        if (c->n_ext == 1 && c->len == 0) {
            c->lo = ext[i].offset;
            c->hi = ext[i].offset + ext[i].length;
        }
        if (ext[i].offset < c->lo)
            c->lo = ext[i].offset;
        if (ext[i].offset + ext[i].length > c->hi)
            c->hi = ext[i].offset + ext[i].length;
    }
    return RFS_OK;
}

static void range_of(const rfs_extent *ext, size_t n, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (ext[i].length == 0)
            continue;
        if (ext[i].offset < *lo)
            *lo = ext[i].offset;
        if (ext[i].offset + ext[i].length > *hi)
            *hi = ext[i].offset + ext[i].length;
    }
    if (*lo > *hi)
        *lo = *hi = 0;
}

/* Buffers are queued without waking the senders (the write call wakes them once when it
 * returns, see sendable()), except when the oldest chunk has waited longer than senders defer
 * to a write: a long write call (many buffers, foreground staging) then streams. mu held. */
static void wake_if_overdue(abt_engine *e)
{
    if (e->head && rfs_abt_now() - e->head->born >= SEND_DEFER_MAX_S)
        pthread_cond_broadcast(&e->work);
}

/* Appends the piece to f's newest chunk when it fits there (small writes become one list
 * I/O); its journal room grows with it. Returns 1 if done. mu held. */
static int coalesce(abt_file *f, const rfs_extent *ext, size_t n, abt_src *src, uint64_t len,
                    uint64_t lo, uint64_t hi)
{
    abt_engine *e = f->e;
    abt_chunk *c = f->last;
    if (!c || c->sealed || c->inflight || c->staged || !c->buf || c->busy != 0 ||
        c->len + len > f->buf_size || c->n_ext + n > CHUNK_MAX_EXT || abt_overlaps(c, lo, hi))
        return 0;
    uint64_t more = len + 16u * (uint64_t)n;
    if (abt_reserve(e, f->stage, more) != RFS_OK || add_extents(c, ext, n) != RFS_OK)
        return 0;
    c->resv += more;
    f->stage->mem_need += more;
    uint64_t at = c->len;
    c->len += len;
    c->busy++;
    e->stats.bytes_buffered += len;
    pthread_mutex_unlock(&e->mu);
    abt_src_copy(src, c->buf + at, len);
    pthread_mutex_lock(&e->mu);
    c->busy--;
    wake_if_overdue(e);
    return 1;
}

/* Takes a chunk that could not be placed out of the queue again (mu held). */
static void drop_chunk(abt_engine *e, abt_chunk *c)
{
    abt_file *f = c->f;
    abt_fifo_remove(e, c);
    if (f->last == c)
        f->last = NULL;
    f->pending--;
    free(c->ext);
    free(c);
    pthread_cond_broadcast(&e->done);
}

/* Queues one piece of at most buf_size bytes, taken from src. */
static int put_piece(abt_file *f, const rfs_extent *ext, size_t n, abt_src *src, uint64_t len)
{
    abt_engine *e = f->e;
    uint64_t lo, hi;
    range_of(ext, n, &lo, &hi);
    pthread_mutex_lock(&e->mu);
    if (coalesce(f, ext, n, src, len, lo, hi)) {
        pthread_mutex_unlock(&e->mu);
        return RFS_OK;
    }
    abt_chunk *c = calloc(1, sizeof *c);
    if (!c || add_extents(c, ext, n) != RFS_OK) {
        free(c);
        pthread_mutex_unlock(&e->mu);
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory buffering a write", f->name);
    }
    c->f = f;
    c->seq = e->next_seq++;
    c->born = rfs_abt_now();
    c->len = len;
    c->busy = 1;
    if (f->last)
        f->last->sealed = 1;
    f->last = c;
    f->pending++;
    fifo_append(e, c);
    int rc = abt_place_piece(c, src);
    if (rc != RFS_OK) {
        drop_chunk(e, c);
    } else {
        c->busy--;
        wake_if_overdue(e);
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int rfs_abt_enqueue(abt_file *f, const rfs_extent *ext, size_t n, abt_src *src, uint64_t len)
{
    abt_engine *e = f->e;
    uint64_t bsz = f->buf_size;
    double t_enter = rfs_abt_now();
    pthread_mutex_lock(&e->mu);
    rfs_abt_phases_write(&e->phases, t_enter, len);
    e->writing++;
    pthread_mutex_unlock(&e->mu);

    /* Cut the write into pieces of at most one buffer, each with the extents it covers. */
    size_t i = 0;
    uint64_t used_in_ext = 0;
    rfs_extent stackbuf[64];
    rfs_extent *pext = stackbuf;
    size_t pcap = 64;
    int rc = RFS_OK;
    while (rc == RFS_OK && len > 0) {
        size_t pn = 0;
        uint64_t plen = 0;
        while (i < n && plen < bsz) {
            uint64_t avail = ext[i].length - used_in_ext;
            uint64_t take = avail < bsz - plen ? avail : bsz - plen;
            if (pn == pcap) {
                rfs_extent *ne = malloc(sizeof *ne * pcap * 2);
                if (!ne) {
                    rc = rfs_fail(RFS_E_NOMEM, "%s: out of memory buffering a write", f->name);
                    break;
                }
                memcpy(ne, pext, sizeof *ne * pn);
                if (pext != stackbuf)
                    free(pext);
                pext = ne;
                pcap *= 2;
            }
            if (take > 0)
                pext[pn++] = (rfs_extent){ext[i].offset + used_in_ext, take};
            plen += take;
            used_in_ext += take;
            if (used_in_ext == ext[i].length) {
                i++;
                used_in_ext = 0;
            }
        }
        if (rc != RFS_OK || plen == 0)
            break;
        rc = put_piece(f, pext, pn, src, plen);
        len -= plen;
    }
    if (pext != stackbuf)
        free(pext);
    double t_leave = rfs_abt_now();
    pthread_mutex_lock(&e->mu);
    e->stats.enqueue_s += t_leave - t_enter;
    e->writing--;
    e->last_write_end = t_leave;
    /* One wake-up per write call, not per buffer: the senders wait for the write to end. */
    pthread_cond_broadcast(&e->work);
    pthread_mutex_unlock(&e->mu);
    return rc;
}
