/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The staging journal as ABT uses it: opened on first need, room held ahead for the data
 * only in memory, and chunks appended (foreground and background staging, and failed
 * deliveries kept for `rfs recover`). */

#include "abt/engine_parts.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>

#include "common/log.h"

static int ensure_journal(abt_stage *st)
{
    if (st->journal)
        return RFS_OK;
    return rfs_journal_open(st->dir, &st->journal);
}

/* Data held only in memory would be lost if its send failed while the staging disk is full:
 * it could then be neither delivered nor kept. So a write is taken into memory only once the
 * journal has room reserved for it: blocks allocated past the journal's end
 * (FALLOC_FL_KEEP_SIZE, invisible to recovery, which reads up to the file size), which an
 * append fills without needing new ones. Every append is reserved for first too, so one
 * never takes the room a buffered chunk counts on, and none is torn by a full disk. */

/* A record's header is 32 bytes today; the margin lets the format grow. */
#define REC_OVERHEAD 128u
/* Room is allocated ahead for up to this many more buffers, so most writes need no syscall;
 * never for more than the free buffers could hold: processes share the staging disk, and room
 * one holds for nothing is room another's writes fail for. */
#define RESV_STEP_BUFS 8u

uint64_t abt_rec_bytes(const abt_file *f, uint64_t len, uint32_t n_ext)
{
    return len + REC_OVERHEAD + strlen(f->name) + 16u * (uint64_t)n_ext;
}

uint64_t abt_journal_end(abt_stage *st)
{
    pthread_mutex_lock(&st->journal->mu);
    uint64_t end = st->journal->end;
    pthread_mutex_unlock(&st->journal->mu);
    return end;
}

static int try_fallocate(abt_stage *st, uint64_t from, uint64_t to)
{
    return to > from && fallocate(st->journal->fd, FALLOC_FL_KEEP_SIZE, (off_t)from,
                                  (off_t)(to - from)) != 0
               ? errno
               : 0;
}

/* Makes sure st's journal has room for everything it may have to take, plus extra. The step
 * ahead is counted in buffers of the largest size the engine's files use. mu held. */
int abt_reserve(abt_engine *e, abt_stage *st, uint64_t extra)
{
    int rc = ensure_journal(st);
    if (rc != RFS_OK || st->resv_unsupported)
        return rc;
    uint64_t end = abt_journal_end(st);
    uint64_t need = end + st->stage_claims + st->mem_need + extra;
    if (need <= st->resv_hi)
        return RFS_OK;
    uint64_t free_mem = e->cap_bytes > e->used_bytes ? e->cap_bytes - e->used_bytes : 0;
    uint64_t step = RESV_STEP_BUFS * e->buf_max;
    uint64_t ahead = need + (free_mem < step ? free_mem - free_mem % e->buf_max : step);
    int err = try_fallocate(st, end, ahead);
    if (err == ENOSPC || err == EDQUOT || err == EFBIG)
        err = try_fallocate(st, end, ahead = need); /* a small disk may hold what is needed */
    if (err == EOPNOTSUPP) {
        /* Cannot hold room ahead here: buffered data is then kept only if the disk has space
         * when a send fails (docs/abt.md). */
        RFS_LOGW("staging directory %s cannot preallocate; ABT keeps memory-held data in the "
                 "journal only while the disk has room",
                 st->dir);
        st->resv_unsupported = 1;
        return RFS_OK;
    }
    if (err)
        return rfs_fail(rfs_err_from_errno(err),
                        "staging journal %s: no room for %" PRIu64 " more bytes: %s",
                        st->journal->path, need - end, strerror(err));
    st->resv_hi = ahead;
    return RFS_OK;
}

/* Gives the room held past the journal's end back to the file system (mu held). */
void abt_release_reserve(abt_stage *st)
{
    uint64_t end = abt_journal_end(st);
    if (st->resv_hi > end)
        fallocate(st->journal->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)end,
                  (off_t)(st->resv_hi - end));
    st->resv_hi = 0;
}

/* Called when the engine's queue is empty (mu held): no memory-held chunk counts on the room
 * held ahead, so the truncation may free it too. It did free it, but the room was still
 * counted up to resv_hi: the next buffered writes then reserved nothing, and a failed send of
 * theirs could find the staging disk full. */
void abt_trim_journal(abt_stage *st)
{
    if (st->journal && rfs_journal_trim(st->journal))
        st->resv_hi = 0;
}

/* Stages a chunk's data; called without mu, with the chunk marked busy. from_memory: the chunk
 * is held in a buffer and its reserved room pays for the record. */
int abt_stage_chunk(abt_chunk *c, const void *data, int sync, int from_memory)
{
    abt_engine *e = c->f->e;
    abt_stage *st = c->f->stage;
    pthread_mutex_lock(&e->mu);
    uint64_t rec = from_memory ? c->resv : abt_rec_bytes(c->f, c->len, c->n_ext);
    int rc = from_memory ? ensure_journal(st) : abt_reserve(e, st, rec);
    if (rc == RFS_OK) {
        if (from_memory)
            st->mem_need -= rec;
        st->stage_claims += rec;
    }
    pthread_mutex_unlock(&e->mu);
    if (rc != RFS_OK)
        return rc;
    double t0 = rfs_abt_now();
    rc = rfs_journal_append(st->journal, c->seq, c->f->name, c->ext, c->n_ext, data, c->len, sync,
                            &c->rec_off, &c->data_off);
    double dt = rfs_abt_now() - t0;
    pthread_mutex_lock(&e->mu);
    st->stage_claims -= rec;
    if (from_memory && rc != RFS_OK)
        st->mem_need += rec;
    else if (from_memory)
        c->resv = 0;
    if (rc == RFS_OK && dt > 0 && c->len >= 65536) {
        e->bw = rfs_ewma(e->bw, (double)c->len / dt, 0.3);
        e->stats.staging_bw = e->bw;
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}
