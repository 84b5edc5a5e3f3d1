/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Where a new chunk's data goes: a buffer (with journal room reserved for it) or, when the
 * memory cap is reached, the journal itself (foreground staging); and how long a write that
 * finds room in neither may wait. */

#include "abt/engine_parts.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

/* Copies the next len bytes of the source to dst. */
void abt_src_copy(abt_src *s, uint8_t *dst, size_t len)
{
    while (len > 0 && s->i < s->n) {
        size_t left = s->iov[s->i].iov_len - s->at;
        size_t k = left < len ? left : len;
        memcpy(dst, (const uint8_t *)s->iov[s->i].iov_base + s->at, k);
        dst += k;
        len -= k;
        s->at += k;
        if (s->at == s->iov[s->i].iov_len) {
            s->i++;
            s->at = 0;
        }
    }
}

/* The next len bytes of the source as one contiguous block: in place when one run holds them,
 * else gathered into *bounce (the caller frees it). NULL when out of memory. */
static const uint8_t *src_take(abt_src *s, size_t len, uint8_t **bounce)
{
    *bounce = NULL;
    while (s->i < s->n && s->at == s->iov[s->i].iov_len) {
        s->i++;
        s->at = 0;
    }
    if (s->i < s->n && s->iov[s->i].iov_len - s->at >= len) {
        const uint8_t *p = (const uint8_t *)s->iov[s->i].iov_base + s->at;
        s->at += len;
        return p;
    }
    if (!(*bounce = malloc(len ? len : 1)))
        return NULL;
    abt_src_copy(s, *bounce, len);
    return *bounce;
}

/* A buffer for c, with journal room reserved for its record. mu held. */
static int take_buffer(abt_engine *e, abt_chunk *c, uint64_t rec)
{
    abt_file *f = c->f;
    void *b = abt_pool_get(e, f->buf_size);
    if (!b)
        return RFS_E_NOSPC;
    int rc = abt_reserve(e, f->stage, rec);
    if (rc != RFS_OK) {
        abt_pool_put(e, b, f->buf_size);
        return rc;
    }
    c->buf = b;
    c->resv = rec;
    f->stage->mem_need += rec;
    return RFS_OK;
}

/* Why a write that found no room must not wait any longer, or NULL. Waiting helps only while
 * writes are being delivered: that frees buffers and, once a queue is empty, its journal. mu
 * held. */
static const char *no_use_waiting(abt_engine *e, const abt_chunk *c, int rc, uint64_t failures0,
                                  double deadline)
{
    if (e->failures != failures0 || e->last_failed)
        return "the server is not taking writes";
    int space = rc == RFS_E_NOSPC || rc == RFS_E_DQUOT || rc == RFS_E_FBIG;
    if (!space && e->head == c && !c->next)
        return "nothing is queued whose delivery could free room";
    if (rfs_abt_now() >= deadline)
        return "nothing was delivered within rfs_abt_wait_timeout_ms";
    return NULL;
}

/* The staging disk may be full of other processes' journals, whose deliveries free room
 * without telling this one: a waiting write looks again now and then. */
#define ROOM_POLL_S 0.05

static int placement_failed(abt_engine *e, abt_chunk *c, int rc, const char *why,
                            const rfs_status *cause)
{
    char srv[600] = "";
    if (e->last_failed)
        snprintf(srv, sizeof srv, " (last failure: %s)", e->last_fail);
    /* The reason first: MPI error strings may be cut at 256 characters (Open MPI). */
    return rfs_fail(rc,
                    "%s:%s: write of %" PRIu64 " bytes at offset %" PRIu64 " not accepted "
                    "(nothing of it buffered): no buffer or staging room and %s%s; staging in "
                    "%s: %s",
                    c->f->io.server, c->f->io.path, c->len, c->lo, why, srv, c->f->stage->dir,
                    cause->msg);
}

/* Puts a new chunk's data in a buffer (with journal room reserved) or in the journal. When
 * neither has room it waits, but only while writes are being delivered and for at most the
 * file's wait timeout without a delivery: a write that cannot be kept fails here, at the call,
 * instead of being acknowledged and lost later. mu held; the chunk is busy. */
int abt_place_piece(abt_chunk *c, abt_src *src)
{
    abt_file *f = c->f;
    abt_engine *e = f->e;
    uint64_t rec = abt_rec_bytes(f, c->len, c->n_ext), failures0 = e->failures;
    uint64_t delivered = e->delivered;
    double deadline = rfs_abt_now() + f->wait_timeout_s;
    uint8_t *bounce = NULL;
    const uint8_t *data = NULL; /* the bytes, once taken from src for staging */
    rfs_status cause;           /* why staging failed, past the waits */
    int rc;
    for (;;) {
        if (take_buffer(e, c, rec) == RFS_OK) {
            pthread_mutex_unlock(&e->mu);
            if (data)
                memcpy(c->buf, data, c->len);
            else
                abt_src_copy(src, c->buf, c->len);
            pthread_mutex_lock(&e->mu);
            e->stats.bytes_buffered += c->len;
            rc = RFS_OK;
            break;
        }
        pthread_mutex_unlock(&e->mu);
        if (!data)
            data = src_take(src, c->len, &bounce);
        rc = data ? abt_stage_chunk(c, data, f->sync_staging, 0)
                  : rfs_fail(RFS_E_NOMEM, "out of memory gathering a write");
        pthread_mutex_lock(&e->mu);
        if (rc == RFS_OK) {
            c->staged = 1; /* foreground staging */
            e->stats.bytes_staged_fg += c->len;
            break;
        }
        rfs_status_save(&cause, rc);
        if (e->delivered != delivered) {
            delivered = e->delivered;
            deadline = rfs_abt_now() + f->wait_timeout_s;
        }
        const char *why = no_use_waiting(e, c, rc, failures0, deadline);
        if (why) {
            rc = placement_failed(e, c, rc, why, &cause);
            break;
        }
        RFS_LOGD("%s: no room for %" PRIu64 " bytes (%s); waiting for deliveries", f->name, c->len,
                 cause.msg);
        double poll = rfs_abt_now() + ROOM_POLL_S;
        abt_wait_until(e, &e->done, poll < deadline ? poll : deadline);
    }
    free(bounce);
    return rc;
}
