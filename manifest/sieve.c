/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Data-sieving reads (mpiio-logistical-networking sec. 4, Fig. 11; docs/manifest.md "Small
 * writes and noncontiguous reads"). A noncontiguous read (a list of ranges in ascending order,
 * as MPI-IO's views give them) is read as the contiguous spans that cover its ranges, each at
 * most `cap` bytes, into one window buffer, and the ranges are copied out of it: fewer, larger
 * requests (no per-range descriptors or per-range work on the servers) for the price of the
 * holes' bytes. A range of cap bytes or more is read on its own; a list out of order, or
 * overlapping, goes down as it is. Contiguous reads and every other call pass through.
 *
 * Memory: the window (cap bytes, allocated at the first sieved read, one per open file; reads
 * that sieve at the same time take turns). */
#include "manifest/modes.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

typedef struct sv_file {
    rfs_io io;
    rfs_io *below;
    size_t cap;
    pthread_mutex_t mu; /* guards win */
    uint8_t *win;
} sv_file;

static sv_file *SV(rfs_io *io)
{
    return (sv_file *)io;
}

static int ascending(const rfs_extent *ext, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (ext[i].offset < ext[i - 1].offset + ext[i - 1].length)
            return 0;
    return 1;
}

/* Reads ext[0..n) (ascending, n >= 2) into buf packed; *done as the layer below counts it: the
 * ranges' bytes up to the end of the file. mu held. */
static int sieve(sv_file *s, const rfs_extent *ext, size_t n, uint8_t *buf, size_t *done)
{
    size_t pos = 0;
    size_t i = 0;
    while (i < n) {
        if (ext[i].length >= s->cap) {
            size_t got = 0;
            int rc = s->below->ops->pread(s->below, buf + pos, (size_t)ext[i].length, ext[i].offset,
                                          &got);
            if (rc != RFS_OK)
                return rc;
            pos += got;
            if (got < ext[i].length)
                break; /* the end of the file */
            i++;
            continue;
        }
        /* The window: from this range's start to the end of the last range that fits. */
        uint64_t wlo = ext[i].offset, whi = wlo;
        size_t j = i;
        while (j < n && ext[j].length < s->cap && ext[j].offset + ext[j].length - wlo <= s->cap) {
            whi = ext[j].offset + ext[j].length;
            j++;
        }
        size_t got = 0;
        int rc = s->below->ops->pread(s->below, s->win, (size_t)(whi - wlo), wlo, &got);
        if (rc != RFS_OK)
            return rc;
        uint64_t end = wlo + got; /* bytes beyond it are past the end of the file */
        for (; i < j; i++) {
            uint64_t have = ext[i].offset >= end                   ? 0
                            : end - ext[i].offset >= ext[i].length ? ext[i].length
                                                                   : end - ext[i].offset;
            memcpy(buf + pos, s->win + (ext[i].offset - wlo), (size_t)have);
            pos += (size_t)have;
            if (have < ext[i].length)
                goto out;
        }
    }
out:
    if (done)
        *done = pos;
    return RFS_OK;
}

static int s_preadv(rfs_io *io, const rfs_extent *ext, size_t n, void *buf, size_t *done)
{
    sv_file *s = SV(io);
    if (n < 2 || !ascending(ext, n))
        return s->below->ops->preadv(s->below, ext, n, buf, done);
    pthread_mutex_lock(&s->mu);
    if (!s->win && !(s->win = malloc(s->cap))) {
        pthread_mutex_unlock(&s->mu);
        return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory for the sieve window (%zu bytes)",
                        io->server, io->path, s->cap);
    }
    int rc = sieve(s, ext, n, buf, done);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ---- everything else passes through ---- */

static int s_pread(rfs_io *io, void *buf, size_t len, uint64_t off, size_t *done)
{
    rfs_io *d = SV(io)->below;
    return d->ops->pread(d, buf, len, off, done);
}

static int s_pwrite(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done)
{
    rfs_io *d = SV(io)->below;
    return d->ops->pwrite(d, buf, len, off, done);
}

static int s_pwritev(rfs_io *io, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    rfs_io *d = SV(io)->below;
    return d->ops->pwritev(d, ext, n, buf, done);
}

static int s_sync(rfs_io *io)
{
    rfs_io *d = SV(io)->below;
    return d->ops->sync(d);
}

static int s_flush(rfs_io *io, int report)
{
    rfs_io *d = SV(io)->below;
    return d->ops->flush(d, report);
}

static int s_get_size(rfs_io *io, uint64_t *size)
{
    rfs_io *d = SV(io)->below;
    return d->ops->get_size(d, size);
}

static int s_set_size(rfs_io *io, uint64_t size)
{
    rfs_io *d = SV(io)->below;
    return d->ops->set_size(d, size);
}

static int s_counter(rfs_io *io, uint32_t key, int set, int64_t delta, int64_t *old)
{
    rfs_io *d = SV(io)->below;
    return d->ops->counter(d, key, set, delta, old);
}

static int s_lock(rfs_io *io, uint64_t off, uint64_t len, unsigned mode, int wait_ms)
{
    rfs_io *d = SV(io)->below;
    return d->ops->lock(d, off, len, mode, wait_ms);
}

static int s_unlock(rfs_io *io, uint64_t off, uint64_t len)
{
    rfs_io *d = SV(io)->below;
    return d->ops->unlock(d, off, len);
}

static int s_close(rfs_io *io)
{
    sv_file *s = SV(io);
    int rc = s->below->ops->close(s->below);
    free(s->win);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return rc;
}

static const rfs_io_ops ops = {
    .pread = s_pread,
    .pwrite = s_pwrite,
    .preadv = s_preadv,
    .pwritev = s_pwritev,
    .pwritev_gather = rfs_io_gen_pwritev_gather,
    .sync = s_sync,
    .flush = s_flush,
    .write_mark = rfs_io_gen_write_mark,
    .mark_answered = rfs_io_gen_mark_answered,
    .get_size = s_get_size,
    .set_size = s_set_size,
    .preallocate = rfs_io_gen_preallocate,
    .counter = s_counter,
    .lock = s_lock,
    .unlock = s_unlock,
    .set_view = rfs_io_gen_set_view,
    .view_read = rfs_io_gen_view_read,
    .view_write = rfs_io_gen_view_write,
    .close = s_close,
    .version = rfs_io_gen_version,
    .remove = rfs_io_gen_remove,
    .start = rfs_io_gen_start,
    .end = rfs_io_gen_end,
    .coll_join = rfs_io_gen_coll_join,
    .coll_listio = rfs_io_gen_coll_listio,
};

int mf_sieve_wrap(rfs_io *below, size_t cap, rfs_io **out)
{
    *out = NULL;
    if (cap < 1)
        return rfs_fail(RFS_E_INVAL, "%s:%s: a sieve window needs at least one byte", below->server,
                        below->path);
    sv_file *s = calloc(1, sizeof *s);
    if (!s)
        return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", below->server, below->path);
    s->io.ops = &ops;
    s->io.features = below->features & (RFS_IO_F_LOCKS | RFS_IO_F_COUNTERS);
    memcpy(s->io.server, below->server, sizeof s->io.server);
    memcpy(s->io.path, below->path, sizeof s->io.path);
    s->below = below;
    s->cap = cap;
    pthread_mutex_init(&s->mu, NULL);
    *out = &s->io;
    return RFS_OK;
}
