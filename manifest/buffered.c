/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Buffered (coalescing) writes (mpiio-logistical-networking sec. 4, Fig. 9; docs/manifest.md
 * "Small writes and noncontiguous reads"). Below this layer every write waits for its replies,
 * so a stream of small writes costs a round trip each. Here a small write is copied into a
 * buffer of at most `cap` bytes and returns; what the buffer holds goes down as one list write
 * (one request per object) when it is full, and wherever the MPI consistency rules let another
 * process look: sync, flush (MPI-IO flushes at MPI_Barrier and around collective calls), a
 * size change, a lock or unlock, and close. A read or size query by this process first sends
 * what it overlaps, so a process always reads its own writes.
 *
 * The held ranges never overlap (a write that would overlap them sends them first), so the
 * order in which they reach the objects cannot matter. Memory: cap bytes of data and at most
 * RFS_MANIFEST_MAX_HELD_RANGES range descriptors, allocated at the first held write.
 *
 * A failed send drops what was held (those bytes are not in the file) and is the error of the
 * call that sent: the write that found the buffer full, sync, close, or a reporting flush; a
 * flush that may not report keeps it for the next sync or close. */
#include "manifest/modes.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

typedef struct bf_file {
    rfs_io io;
    rfs_io *below;
    size_t cap;
    pthread_mutex_t mu; /* guards what follows; held while a send runs (writes wait for it) */
    uint8_t *data;      /* cap bytes once used: the held ranges' bytes, packed in order */
    size_t used;
    rfs_extent *held; /* RFS_MANIFEST_MAX_HELD_RANGES */
    size_t nheld;
    uint64_t lo, hi;     /* span of the held ranges */
    rfs_status deferred; /* a send's failure that a flush could not report */
} bf_file;

static bf_file *BF(rfs_io *io)
{
    return (bf_file *)io;
}

/* Sends what is held as one list write; mu held. The buffer is empty afterwards. */
static int send_held(bf_file *b)
{
    if (!b->nheld)
        return RFS_OK;
    size_t done = 0;
    int rc = b->below->ops->pwritev(b->below, b->held, b->nheld, b->data, &done);
    if (rc == RFS_OK && done != b->used)
        rc = rfs_fail(RFS_E_IO, "%s:%s: buffered write sent %zu of %zu bytes", b->io.server,
                      b->io.path, done, b->used);
    b->nheld = 0;
    b->used = 0;
    b->lo = UINT64_MAX;
    b->hi = 0;
    return rc;
}

/* Sends what is held if [off, off+len) overlaps its span; mu held. */
static int send_if_overlap(bf_file *b, uint64_t off, uint64_t len)
{
    if (b->nheld && len && off < b->hi && off + len > b->lo)
        return send_held(b);
    return RFS_OK;
}

/* One range of a write; mu held. */
static int put(bf_file *b, const uint8_t *src, size_t len, uint64_t off)
{
    if (!len)
        return RFS_OK;
    int rc = RFS_OK;
    /* Ranges that would overlap the held ones go after them (the held ones are unordered). */
    if (b->nheld && off < b->hi && off + len > b->lo)
        rc = send_held(b);
    if (rc != RFS_OK)
        return rc;
    rfs_extent *last = b->nheld ? &b->held[b->nheld - 1] : NULL;
    int joins = last && last->offset + last->length == off;
    if (b->used + len > b->cap || (!joins && b->nheld == RFS_MANIFEST_MAX_HELD_RANGES)) {
        if ((rc = send_held(b)) != RFS_OK)
            return rc;
        joins = 0;
    }
    if (len > b->cap / 2) { /* a large write gains nothing from a copy */
        size_t done = 0;
        rc = b->below->ops->pwrite(b->below, src, len, off, &done);
        if (rc == RFS_OK && done != len)
            rc = rfs_fail(RFS_E_IO, "%s:%s: short write", b->io.server, b->io.path);
        return rc;
    }
    if (!b->data) {
        b->data = malloc(b->cap);
        b->held = malloc(RFS_MANIFEST_MAX_HELD_RANGES * sizeof *b->held);
        if (!b->data || !b->held) {
            free(b->data);
            free(b->held);
            b->data = NULL;
            b->held = NULL;
            return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory for the write buffer (%zu bytes)",
                            b->io.server, b->io.path, b->cap);
        }
    }
    memcpy(b->data + b->used, src, len);
    b->used += len;
    if (joins)
        b->held[b->nheld - 1].length += len;
    else
        b->held[b->nheld++] = (rfs_extent){off, len};
    if (off < b->lo)
        b->lo = off;
    if (off + len > b->hi)
        b->hi = off + len;
    return RFS_OK;
}

static int b_pwritev(rfs_io *io, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    bf_file *b = BF(io);
    if (done)
        *done = 0;
    size_t pos = 0;
    int rc = RFS_OK;
    pthread_mutex_lock(&b->mu);
    for (size_t i = 0; i < n && rc == RFS_OK; i++) {
        if (ext[i].offset > UINT64_MAX - ext[i].length) {
            rc = rfs_fail(RFS_E_INVAL, "%s:%s: range beyond 2^64", io->server, io->path);
            break;
        }
        rc = put(b, (const uint8_t *)buf + pos, (size_t)ext[i].length, ext[i].offset);
        pos += (size_t)ext[i].length;
    }
    pthread_mutex_unlock(&b->mu);
    if (rc == RFS_OK && done)
        *done = pos;
    return rc;
}

static int b_pwrite(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done)
{
    rfs_extent e = {off, len};
    return b_pwritev(io, &e, 1, buf, done);
}

static int b_preadv(rfs_io *io, const rfs_extent *ext, size_t n, void *buf, size_t *done)
{
    bf_file *b = BF(io);
    uint64_t lo, hi;
    rfs_extents_span(ext, n, &lo, &hi);
    pthread_mutex_lock(&b->mu);
    int rc = n ? send_if_overlap(b, lo, hi - lo) : RFS_OK;
    pthread_mutex_unlock(&b->mu);
    if (rc != RFS_OK)
        return rc;
    return b->below->ops->preadv(b->below, ext, n, buf, done);
}

static int b_pread(rfs_io *io, void *buf, size_t len, uint64_t off, size_t *done)
{
    bf_file *b = BF(io);
    pthread_mutex_lock(&b->mu);
    int rc = send_if_overlap(b, off, len);
    pthread_mutex_unlock(&b->mu);
    if (rc != RFS_OK)
        return rc;
    return b->below->ops->pread(b->below, buf, len, off, done);
}

/* Sends what is held, then reports a kept failure (once) if nothing failed now. */
static int send_all(bf_file *b, int take_deferred)
{
    pthread_mutex_lock(&b->mu);
    int rc = send_held(b);
    rfs_status kept = {RFS_OK, ""};
    if (take_deferred && b->deferred.rc != RFS_OK) {
        kept = b->deferred;
        b->deferred.rc = RFS_OK;
    }
    pthread_mutex_unlock(&b->mu);
    if (rc == RFS_OK && kept.rc != RFS_OK)
        rc = rfs_status_raise(&kept);
    return rc;
}

static int b_sync(rfs_io *io)
{
    bf_file *b = BF(io);
    rfs_status st = {RFS_OK, ""};
    rfs_status_first(&st, send_all(b, 1));
    rfs_status_first(&st, b->below->ops->sync(b->below));
    return st.rc == RFS_OK ? RFS_OK : rfs_status_raise(&st);
}

static int b_flush(rfs_io *io, int report)
{
    bf_file *b = BF(io);
    pthread_mutex_lock(&b->mu);
    int rc = send_held(b);
    if (rc != RFS_OK && !report) {
        rfs_status_first(&b->deferred, rc);
        rc = RFS_OK;
    }
    rfs_status kept = {RFS_OK, ""};
    if (rc == RFS_OK && report && b->deferred.rc != RFS_OK) {
        kept = b->deferred;
        b->deferred.rc = RFS_OK;
    }
    pthread_mutex_unlock(&b->mu);
    if (rc != RFS_OK)
        return rc;
    if (kept.rc != RFS_OK)
        return rfs_status_raise(&kept);
    return b->below->ops->flush(b->below, report);
}

static int b_get_size(rfs_io *io, uint64_t *size)
{
    bf_file *b = BF(io);
    int rc = send_all(b, 0);
    return rc != RFS_OK ? rc : b->below->ops->get_size(b->below, size);
}

static int b_set_size(rfs_io *io, uint64_t size)
{
    bf_file *b = BF(io);
    int rc = send_all(b, 0);
    return rc != RFS_OK ? rc : b->below->ops->set_size(b->below, size);
}

static int b_counter(rfs_io *io, uint32_t key, int set, int64_t delta, int64_t *old)
{
    rfs_io *d = BF(io)->below;
    return d->ops->counter(d, key, set, delta, old);
}

/* Atomic mode takes locks around each access: the bytes must be in the file before the lock
 * is released, and a locked read must not be overtaken by older held writes. */
static int b_lock(rfs_io *io, uint64_t off, uint64_t len, unsigned mode, int wait_ms)
{
    bf_file *b = BF(io);
    int rc = send_all(b, 0);
    return rc != RFS_OK ? rc : b->below->ops->lock(b->below, off, len, mode, wait_ms);
}

static int b_unlock(rfs_io *io, uint64_t off, uint64_t len)
{
    bf_file *b = BF(io);
    int rc = send_all(b, 0);
    int urc = b->below->ops->unlock(b->below, off, len);
    return rc != RFS_OK ? rc : urc;
}

static int b_close(rfs_io *io)
{
    bf_file *b = BF(io);
    rfs_status st = {RFS_OK, ""};
    rfs_status_first(&st, send_all(b, 1));
    rfs_status_first(&st, b->below->ops->close(b->below));
    free(b->data);
    free(b->held);
    pthread_mutex_destroy(&b->mu);
    free(b);
    return st.rc == RFS_OK ? RFS_OK : rfs_status_raise(&st);
}

static const rfs_io_ops ops = {
    .pread = b_pread,
    .pwrite = b_pwrite,
    .preadv = b_preadv,
    .pwritev = b_pwritev,
    .pwritev_gather = rfs_io_gen_pwritev_gather,
    .sync = b_sync,
    .flush = b_flush,
    .write_mark = rfs_io_gen_write_mark,
    .mark_answered = rfs_io_gen_mark_answered,
    .get_size = b_get_size,
    .set_size = b_set_size,
    .preallocate = rfs_io_gen_preallocate,
    .counter = b_counter,
    .lock = b_lock,
    .unlock = b_unlock,
    .set_view = rfs_io_gen_set_view,
    .view_read = rfs_io_gen_view_read,
    .view_write = rfs_io_gen_view_write,
    .close = b_close,
    .version = rfs_io_gen_version,
    .remove = rfs_io_gen_remove,
    .start = rfs_io_gen_start,
    .end = rfs_io_gen_end,
    .coll_join = rfs_io_gen_coll_join,
    .coll_listio = rfs_io_gen_coll_listio,
};

int mf_buffered_wrap(rfs_io *below, size_t cap, rfs_io **out)
{
    *out = NULL;
    if (cap < 1)
        return rfs_fail(RFS_E_INVAL, "%s:%s: a write buffer needs at least one byte", below->server,
                        below->path);
    bf_file *b = calloc(1, sizeof *b);
    if (!b)
        return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", below->server, below->path);
    b->io.ops = &ops;
    b->io.features = below->features & (RFS_IO_F_LOCKS | RFS_IO_F_COUNTERS);
    memcpy(b->io.server, below->server, sizeof b->io.server);
    memcpy(b->io.path, below->path, sizeof b->io.path);
    b->below = below;
    b->cap = cap;
    b->lo = UINT64_MAX;
    pthread_mutex_init(&b->mu, NULL);
    *out = &b->io;
    return RFS_OK;
}
