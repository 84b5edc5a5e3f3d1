/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* ABT as an rfs_io: writes are queued in the engine; everything that must observe them (reads of
 * the same bytes, sync, size changes, locks) first waits for the overlapping queued writes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abt/engine.h"
#include "common/err.h"

static abt_file *F(rfs_io *io)
{
    return (abt_file *)io;
}
static rfs_io *B(rfs_io *io)
{
    return F(io)->below;
}

/* A write no server could ever accept fails now, not later from the background (and is not
 * kept in the journal for a recovery that could never deliver it). */
static int check_range(rfs_io *io, uint64_t off, uint64_t len)
{
    if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
        return rfs_fail(RFS_E_FBIG, "%s:%s: range %llu+%llu beyond the largest file offset",
                        io->server, io->path, (unsigned long long)off, (unsigned long long)len);
    return RFS_OK;
}

static int abt_pwritev_gather(rfs_io *io, const rfs_extent *ext, size_t n, const struct iovec *mem,
                              size_t nmem, size_t *done)
{
    uint64_t total = 0, have = 0;
    int rc = RFS_OK;
    for (size_t i = 0; i < n && rc == RFS_OK; i++) {
        rc = check_range(io, ext[i].offset, ext[i].length);
        total += ext[i].length;
    }
    for (size_t i = 0; i < nmem; i++)
        have += mem[i].iov_len;
    if (rc == RFS_OK && have != total)
        rc = rfs_fail(RFS_E_INVAL, "%s:%s: %llu bytes of memory for %llu bytes of extents",
                      io->server, io->path, (unsigned long long)have, (unsigned long long)total);
    if (rc == RFS_OK && total) {
        abt_src src = {.iov = mem, .n = nmem};
        rc = rfs_abt_enqueue(F(io), ext, n, &src, total);
    }
    if (done)
        *done = rc == RFS_OK ? total : 0;
    return rc;
}

static int abt_pwrite(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done)
{
    rfs_extent e = {off, len};
    struct iovec m = {(void *)buf, len};
    return abt_pwritev_gather(io, &e, 1, &m, 1, done);
}

static int abt_pwritev(rfs_io *io, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += ext[i].length;
    struct iovec m = {(void *)buf, (size_t)total};
    return abt_pwritev_gather(io, ext, n, &m, 1, done);
}

static int abt_pread(rfs_io *io, void *buf, size_t len, uint64_t off, size_t *done)
{
    rfs_abt_wait_file(F(io), off, off + len, 1);
    return B(io)->ops->pread(B(io), buf, len, off, done);
}

static int abt_preadv(rfs_io *io, const rfs_extent *ext, size_t n, void *buf, size_t *done)
{
    uint64_t lo, hi;
    rfs_extents_span(ext, n, &lo, &hi);
    if (n)
        rfs_abt_wait_file(F(io), lo, hi, 1);
    return B(io)->ops->preadv(B(io), ext, n, buf, done);
}

static void drain(rfs_io *io)
{
    rfs_abt_wait_file(F(io), 0, UINT64_MAX, 0);
}

static int abt_sync(rfs_io *io)
{
    drain(io);
    /* The background failure is what the caller must hear (it says where the data is kept),
     * as close does: the sync below usually fails too, of the same lost connection, and its
     * message would replace it. */
    rfs_status background;
    rfs_status_save(&background, rfs_abt_take_error(F(io)));
    int rc = B(io)->ops->sync(B(io));
    return background.rc != RFS_OK ? rfs_status_raise(&background) : rc;
}

/* Buffered writes queued so far are delivered (MPI_Barrier: other ranks may use the bytes
 * next; a helper thread waits so while the application writes on, mpiio/fence.c). Their
 * failures stay for sync and close, as rfs-abt.txt sec. 5.2 has it. */
static int abt_flush(rfs_io *io, int report)
{
    (void)report;
    rfs_abt_wait_queued(F(io));
    return RFS_OK;
}

static uint64_t abt_write_mark(rfs_io *io)
{
    return rfs_abt_write_mark(F(io)->e);
}

static int abt_mark_answered(rfs_io *io, uint64_t mark)
{
    return rfs_abt_mark_answered(F(io), mark);
}

/* The server's size, at least the end of this process's queued writes, without waiting for
 * them: writes only extend a file, and size changes wait for every queued write (below), so
 * the file is that long once they land. The queued end is taken first: a write answered
 * between the two looks is in what the server reports. HDF5 asks at open and at every flush
 * and close; waiting there for the buffered data made a deferred close wait after all. */
static int abt_get_size(rfs_io *io, uint64_t *size)
{
    uint64_t queued = rfs_abt_pending_end(F(io));
    int rc = B(io)->ops->get_size(B(io), size);
    if (rc == RFS_OK && *size < queued)
        *size = queued;
    return rc;
}

/* A size change makes a new version of the file: the journal must expect it, or a recovery
 * after it would refuse (the server's reply carries it; an older server is asked). */
static void note_version(abt_file *f)
{
    if (!rfs_abt_note_version(f))
        rfs_journal_track(f->name);
}

static int abt_set_size(rfs_io *io, uint64_t size)
{
    drain(io);
    int rc = B(io)->ops->set_size(B(io), size);
    note_version(F(io));
    return rc;
}

static int abt_preallocate(rfs_io *io, uint64_t size)
{
    drain(io);
    int rc = B(io)->ops->preallocate(B(io), size);
    note_version(F(io));
    return rc;
}

static int abt_counter(rfs_io *io, uint32_t key, int set, int64_t delta, int64_t *old)
{
    return B(io)->ops->counter(B(io), key, set, delta, old);
}

/* Without locks below there is nothing to make visible first: its op only says so. */
static int abt_lock(rfs_io *io, uint64_t off, uint64_t len, unsigned mode, int wait_ms)
{
    if (B(io)->features & RFS_IO_F_LOCKS)
        drain(io);
    return B(io)->ops->lock(B(io), off, len, mode, wait_ms);
}

static int abt_unlock(rfs_io *io, uint64_t off, uint64_t len)
{
    /* Atomic mode: the writes done under the lock must be visible before it is released. */
    if (B(io)->features & RFS_IO_F_LOCKS)
        drain(io);
    return B(io)->ops->unlock(B(io), off, len);
}

/* A delete comes after this process's queued writes of the file, so none of them lands in the
 * deleted file or (a deferred open) creates it again; a failed one stays in the journal and is
 * reported by close or MPI_Finalize as before. A delete names no runtime: it waits in every
 * runtime's engine. */
static int abt_remove(const rfs_io_ops *const *below, const char *name, const rfs_options *opts)
{
    rfs_abt_wait_name_all(name);
    return rfs_io_remove(below, name, opts);
}

static int abt_close(rfs_io *io)
{
    abt_file *f = F(io);
    abt_engine *e = f->e;
    if (f->defer_close) {
        pthread_mutex_lock(&e->mu);
        if (f->pending > 0) {
            /* The engine closes below once the queued writes are sent; errors go to finalize. */
            f->closing = 1;
            pthread_mutex_unlock(&e->mu);
            return RFS_OK;
        }
        pthread_mutex_unlock(&e->mu);
    }
    drain(io);
    rfs_status background;
    rfs_status_save(&background, rfs_abt_take_error(f));
    pthread_mutex_lock(&e->mu);
    rfs_abt_unregister_file(f);
    pthread_mutex_unlock(&e->mu);
    int rc = f->below->ops->close(f->below);
    free(f->name);
    free(f);
    return background.rc != RFS_OK ? rfs_status_raise(&background) : rc;
}

/* Views are flattened by the layer above when ABT is on: buffered writes are extent lists.
 * Versions are the journal's business here, asked of the layer below. */
static const rfs_io_ops abt_ops = {
    .pread = abt_pread,
    .pwrite = abt_pwrite,
    .preadv = abt_preadv,
    .pwritev = abt_pwritev,
    .pwritev_gather = abt_pwritev_gather,
    .sync = abt_sync,
    .flush = abt_flush,
    .write_mark = abt_write_mark,
    .mark_answered = abt_mark_answered,
    .get_size = abt_get_size,
    .set_size = abt_set_size,
    .preallocate = abt_preallocate,
    .counter = abt_counter,
    .lock = abt_lock,
    .unlock = abt_unlock,
    .set_view = rfs_io_gen_set_view,
    .view_read = rfs_io_gen_view_read,
    .view_write = rfs_io_gen_view_write,
    .close = abt_close,
    .version = rfs_io_gen_version,
    .remove = abt_remove,
    .start = rfs_io_gen_start,
    .end = rfs_io_gen_end,
    .coll_join = rfs_io_gen_coll_join,
    .coll_listio = rfs_io_gen_coll_listio,
};

const rfs_io_ops *rfs_abt_ops(void)
{
    return &abt_ops;
}

int rfs_abt_wrap(rfs_io *below, const char *name, const rfs_abt_config *c, rfs_io **out)
{
    rfs_abt_config def;
    if (!c) {
        rfs_abt_config_default(&def);
        c = &def;
    }
    abt_engine *e = rfs_abt_engine_of(c);
    if (!e)
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", name);
    abt_stage *stage;
    int rc = rfs_abt_engine_start(e, c, &stage);
    if (rc != RFS_OK)
        return rc;
    abt_file *f = calloc(1, sizeof *f);
    char *nm = strdup(name);
    if (!f || !nm) {
        free(f);
        free(nm);
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", name);
    }
    f->io.ops = &abt_ops;
    f->io.features =
        RFS_IO_F_GATHER | RFS_IO_F_MARKS | (below->features & (RFS_IO_F_LOCKS | RFS_IO_F_COUNTERS));
    memcpy(f->io.server, below->server, sizeof f->io.server);
    memcpy(f->io.path, below->path, sizeof f->io.path);
    f->below = below;
    f->name = nm;
    f->e = e;
    f->stage = stage;
    f->buf_size = rfs_abt_buffer_size(c);
    /* The version recovery expects if nothing gets delivered: the OPEN reply's, or (an older
     * server, a deferred open) a STAT's. */
    note_version(f);
    f->sync_staging = c->sync_staging;
    f->wait_timeout_s = c->wait_timeout_s >= 0 ? c->wait_timeout_s : 0;
    f->defer_close = c->defer_close;
    f->threads = c->threads < 1 ? 1 : c->threads > 16 ? 16 : c->threads;
    f->bg_staging = c->background_staging != 0;
    pthread_mutex_lock(&e->mu);
    rfs_abt_register_file(f);
    pthread_mutex_unlock(&e->mu);
    *out = &f->io;
    return RFS_OK;
}
