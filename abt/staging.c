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

static int ensure_journal(void)
{
    if (E.journal)
        return RFS_OK;
    return rfs_journal_open(E.staging_dir, &E.journal);
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

uint64_t abt_journal_end(void)
{
    pthread_mutex_lock(&E.journal->mu);
    uint64_t end = E.journal->end;
    pthread_mutex_unlock(&E.journal->mu);
    return end;
}

static int try_fallocate(uint64_t from, uint64_t to)
{
    return to > from && fallocate(E.journal->fd, FALLOC_FL_KEEP_SIZE, (off_t)from,
                                  (off_t)(to - from)) != 0 ? errno : 0;
}

/* Makes sure the journal has room for everything it may have to take, plus extra. mu held. */
int abt_reserve(uint64_t extra)
{
    int rc = ensure_journal();
    if (rc != RFS_OK || E.resv_unsupported)
        return rc;
    uint64_t end = abt_journal_end();
    uint64_t need = end + E.stage_claims + E.mem_need + extra;
    if (need <= E.resv_hi)
        return RFS_OK;
    uint64_t free_bufs = E.cap_bufs > E.used_bufs ? E.cap_bufs - E.used_bufs : 0;
    uint64_t ahead = need + (free_bufs < RESV_STEP_BUFS ? free_bufs : RESV_STEP_BUFS) * E.buf_size;
    int e = try_fallocate(end, ahead);
    if (e == ENOSPC || e == EDQUOT || e == EFBIG)
        e = try_fallocate(end, ahead = need);  /* a small disk may still hold what is needed */
    if (e == EOPNOTSUPP) {
        /* Cannot hold room ahead here: buffered data is then kept only if the disk has space
         * when a send fails (docs/abt.md). */
        RFS_LOGW("staging directory %s cannot preallocate; ABT keeps memory-held data in the "
                 "journal only while the disk has room", E.staging_dir);
        E.resv_unsupported = 1;
        return RFS_OK;
    }
    if (e)
        return rfs_fail(rfs_err_from_errno(e), "staging journal %s: no room for %" PRIu64
                        " more bytes: %s", E.journal->path, need - end, strerror(e));
    E.resv_hi = ahead;
    return RFS_OK;
}

/* Gives the room held past the journal's end back to the file system (mu held). */
void abt_release_reserve(void)
{
    uint64_t end = abt_journal_end();
    if (E.resv_hi > end)
        fallocate(E.journal->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)end,
                  (off_t)(E.resv_hi - end));
    E.resv_hi = 0;
}

/* Stages a chunk's data; called without mu, with the chunk marked busy. from_memory: the chunk
 * is held in a buffer and its reserved room pays for the record. */
int abt_stage_chunk(abt_chunk *c, const void *data, int sync, int from_memory)
{
    pthread_mutex_lock(&E.mu);
    uint64_t rec = from_memory ? c->resv : abt_rec_bytes(c->f, c->len, c->n_ext);
    int rc = from_memory ? ensure_journal() : abt_reserve(rec);
    if (rc == RFS_OK) {
        if (from_memory)
            E.mem_need -= rec;
        E.stage_claims += rec;
    }
    pthread_mutex_unlock(&E.mu);
    if (rc != RFS_OK)
        return rc;
    double t0 = rfs_abt_now();
    rc = rfs_journal_append(E.journal, c->seq, c->f->name, c->ext, c->n_ext, data, c->len, sync,
                            &c->rec_off, &c->data_off);
    double dt = rfs_abt_now() - t0;
    pthread_mutex_lock(&E.mu);
    E.stage_claims -= rec;
    if (from_memory && rc != RFS_OK)
        E.mem_need += rec;
    else if (from_memory)
        c->resv = 0;
    if (rc == RFS_OK && dt > 0 && c->len >= 65536) {
        E.bw = rfs_ewma(E.bw, (double)c->len / dt, 0.3);
        E.stats.staging_bw = E.bw;
    }
    pthread_mutex_unlock(&E.mu);
    return rc;
}
