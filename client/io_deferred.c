/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Deferred open (rfs-abt.txt sec. 3.1 and 5.2): an rfs_io that contacts the server only at its
 * first operation. A failed open is reported by that operation (and every later one), with the
 * open's own message. Stacked layers above (ABT) see an ordinary rfs_io. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/runtime.h"
#include "common/err.h"
#include "rfs/rfs_io.h"

typedef struct deferred {
    rfs_io io;
    pthread_mutex_t mu;
    rfs_io *real;
    rfs_status failed; /* the open's failure (rc RFS_OK: none yet): every op returns it */
    char *name, *token;
    unsigned flags, mode;
    rfs_options opts;
    rfs_runtime *rt; /* where the real open goes (NULL: the default runtime) */
    int track;       /* version was asked before the open: start tracking at it */
} deferred;

static int ready(rfs_io *io, rfs_io **real)
{
    deferred *d = (deferred *)io;
    pthread_mutex_lock(&d->mu);
    if (!d->real && d->failed.rc == RFS_OK) {
        int rc = rfs_io_open_remote_in(d->rt, d->name, d->flags, d->mode, &d->opts, &d->real);
        if (rc != RFS_OK) {
            d->failed.rc = rc;
            snprintf(d->failed.msg, sizeof d->failed.msg, "deferred open failed: %s",
                     rfs_last_error());
        } else if (d->track) {
            /* before the first write goes out, so that it reports its version */
            rfs_io_version v;
            d->real->ops->version(d->real, &v);
            rfs_clear_error();
        }
    }
    int err = d->failed.rc != RFS_OK ? rfs_status_raise(&d->failed) : RFS_OK;
    *real = d->real;
    pthread_mutex_unlock(&d->mu);
    return err;
}

#define FORWARD(op, ...)    \
    rfs_io *r;              \
    int rc = ready(io, &r); \
    if (rc != RFS_OK)       \
        return rc;          \
    return r->ops->op(r, __VA_ARGS__)

static int d_pread(rfs_io *io, void *b, size_t n, uint64_t off, size_t *done)
{
    FORWARD(pread, b, n, off, done);
}
static int d_pwrite(rfs_io *io, const void *b, size_t n, uint64_t off, size_t *done)
{
    FORWARD(pwrite, b, n, off, done);
}
static int d_preadv(rfs_io *io, const rfs_extent *e, size_t n, void *b, size_t *done)
{
    FORWARD(preadv, e, n, b, done);
}
static int d_pwritev(rfs_io *io, const rfs_extent *e, size_t n, const void *b, size_t *done)
{
    FORWARD(pwritev, e, n, b, done);
}
static int d_get_size(rfs_io *io, uint64_t *s)
{
    FORWARD(get_size, s);
}
static int d_set_size(rfs_io *io, uint64_t s)
{
    FORWARD(set_size, s);
}
static int d_preallocate(rfs_io *io, uint64_t s)
{
    FORWARD(preallocate, s);
}
static int d_counter(rfs_io *io, uint32_t k, int set, int64_t delta, int64_t *old)
{
    FORWARD(counter, k, set, delta, old);
}
static int d_lock(rfs_io *io, uint64_t off, uint64_t len, unsigned mode, int wait_ms)
{
    FORWARD(lock, off, len, mode, wait_ms);
}
static int d_unlock(rfs_io *io, uint64_t off, uint64_t len)
{
    FORWARD(unlock, off, len);
}
static int d_set_view(rfs_io *io, uint32_t id, uint64_t disp, const void *enc, size_t len)
{
    FORWARD(set_view, id, disp, enc, len);
}
static int d_view_read(rfs_io *io, uint32_t id, uint64_t pos, void *b, size_t n, size_t *done)
{
    FORWARD(view_read, id, pos, b, n, done);
}
static int d_view_write(rfs_io *io, uint32_t id, uint64_t pos, const void *b, size_t n,
                        size_t *done)
{
    FORWARD(view_write, id, pos, b, n, done);
}

static int d_sync(rfs_io *io)
{
    rfs_io *r;
    int rc = ready(io, &r);
    return rc != RFS_OK ? rc : r->ops->sync(r);
}

static int d_flush(rfs_io *io, int report)
{
    deferred *d = (deferred *)io;
    pthread_mutex_lock(&d->mu);
    rfs_io *r = d->real; /* not opened yet: nothing was written */
    pthread_mutex_unlock(&d->mu);
    return r ? r->ops->flush(r, report) : RFS_OK;
}

/* Before the open there is no version to give: the caller asks again after a write (which
 * opened the file and, with tracking started here, reported its version). */
static int d_version(rfs_io *io, rfs_io_version *v)
{
    deferred *d = (deferred *)io;
    pthread_mutex_lock(&d->mu);
    rfs_io *r = d->real;
    if (!r)
        d->track = 1;
    pthread_mutex_unlock(&d->mu);
    if (!r)
        return rfs_fail(RFS_E_BUSY, "%s: not opened yet (deferred open)", io->path);
    return r->ops->version(r, v);
}

static int d_close(rfs_io *io)
{
    deferred *d = (deferred *)io;
    /* A file never used is still opened (and closed) here, so a failing open is reported
     * at the latest by close, and MPI_MODE_CREATE creates the file as promised. */
    rfs_io *r;
    int rc = ready(io, &r);
    if (rc == RFS_OK)
        rc = r->ops->close(r);
    pthread_mutex_destroy(&d->mu);
    free(d->name);
    free(d->token);
    free(d);
    return rc;
}

/* A name op needs no open: the same delete as the remote client's. */
static int d_remove(const rfs_io_ops *const *below, const char *name, const rfs_options *opts)
{
    (void)below;
    return rfs_delete(name, opts);
}

/* No write marks: the layer above (mpiio/fence.c) keeps barriers waiting for a file opened
 * this way (RFS_IO_F_MARKS is not in its features). */
static const rfs_io_ops deferred_ops = {
    .pread = d_pread,
    .pwrite = d_pwrite,
    .preadv = d_preadv,
    .pwritev = d_pwritev,
    .pwritev_gather = rfs_io_gen_pwritev_gather,
    .sync = d_sync,
    .flush = d_flush,
    .write_mark = rfs_io_gen_write_mark,
    .mark_answered = rfs_io_gen_mark_answered,
    .get_size = d_get_size,
    .set_size = d_set_size,
    .preallocate = d_preallocate,
    .counter = d_counter,
    .lock = d_lock,
    .unlock = d_unlock,
    .set_view = d_set_view,
    .view_read = d_view_read,
    .view_write = d_view_write,
    .close = d_close,
    .version = d_version,
    .remove = d_remove,
    .start = rfs_io_gen_start,
    .end = rfs_io_gen_end,
    .coll_join = rfs_io_gen_coll_join,
    .coll_listio = rfs_io_gen_coll_listio,
};

int rfs_io_open_deferred(const char *name, unsigned flags, unsigned mode, const rfs_options *opts,
                         rfs_io **out)
{
    return rfs_io_open_deferred_in(NULL, name, flags, mode, opts, out);
}

int rfs_io_open_deferred_in(rfs_runtime *rt, const char *name, unsigned flags, unsigned mode,
                            const rfs_options *opts, rfs_io **out)
{
    rfs_name parsed;
    int rc = rfs_parse_name(name, &parsed);
    if (rc != RFS_OK)
        return rc;
    deferred *d = calloc(1, sizeof *d);
    char *nm = strdup(name);
    if (!d || !nm) {
        free(d);
        free(nm);
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", name);
    }
    d->io.ops = &deferred_ops;
    d->io.features = RFS_IO_F_VIEWS | RFS_IO_F_LOCKS | RFS_IO_F_COUNTERS | RFS_IO_F_VERSIONS;
    snprintf(d->io.server, sizeof d->io.server, "%s:%u", parsed.host, parsed.port);
    snprintf(d->io.path, sizeof d->io.path, "%s", parsed.path);
    pthread_mutex_init(&d->mu, NULL);
    d->name = nm;
    d->rt = rt;
    d->flags = flags;
    d->mode = mode;
    if (opts)
        d->opts = *opts;
    /* The caller's token string need not outlive this call. */
    if (opts && opts->token && !(d->token = strdup(opts->token))) {
        free(nm);
        free(d);
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", name);
    }
    d->opts.token = d->token;
    *out = &d->io;
    return RFS_OK;
}
