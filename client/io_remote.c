/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The remote client as an rfs_io: the bottom of every layer stack (docs/design.md). Each op
 * is the matching rfs_* call on the wrapped rfs_file. */
#include "rfs/rfs_io.h"

#include "client/client.h"
#include "common/err.h"
#include "proto/proto.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct io_remote {
    rfs_io io; /* first: an rfs_io * is an io_remote * */
    rfs_file *f;
} io_remote;

static rfs_file *file_of(rfs_io *io)
{
    return ((io_remote *)io)->f;
}

static int r_pread(rfs_io *io, void *buf, size_t len, uint64_t off, size_t *done)
{
    return rfs_pread(file_of(io), buf, len, off, done);
}
static int r_pwrite(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done)
{
    return rfs_pwrite(file_of(io), buf, len, off, done);
}
static int r_preadv(rfs_io *io, const rfs_extent *ext, size_t n, void *buf, size_t *done)
{
    return rfs_preadv(file_of(io), ext, n, buf, done);
}
static int r_pwritev(rfs_io *io, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    return rfs_pwritev(file_of(io), ext, n, buf, done);
}
static int r_sync(rfs_io *io)
{
    return rfs_sync(file_of(io));
}
static int r_flush(rfs_io *io, int report)
{
    if (report)
        return rfs_flush(file_of(io));
    rfs_flush_quiet(file_of(io));
    return RFS_OK;
}
static uint64_t r_write_mark(rfs_io *io)
{
    return rfs_wwin_mark(file_of(io));
}
static int r_mark_answered(rfs_io *io, uint64_t mark)
{
    return rfs_wwin_answered(file_of(io), mark);
}
static int r_get_size(rfs_io *io, uint64_t *size)
{
    return rfs_get_size(file_of(io), size);
}
static int r_set_size(rfs_io *io, uint64_t size)
{
    return rfs_set_size(file_of(io), size);
}
static int r_preallocate(rfs_io *io, uint64_t size)
{
    return rfs_preallocate(file_of(io), size);
}
static int r_counter(rfs_io *io, uint32_t key, int set, int64_t delta, int64_t *old)
{
    return rfs_counter(file_of(io), key, set, delta, old);
}
static int r_lock(rfs_io *io, uint64_t off, uint64_t len, unsigned mode, int wait_ms)
{
    return rfs_lock(file_of(io), off, len, mode, wait_ms);
}
static int r_unlock(rfs_io *io, uint64_t off, uint64_t len)
{
    return rfs_unlock(file_of(io), off, len);
}
_Static_assert(RFS_IO_VIEW_SLOTS == RFS_MAX_VIEWS, "rfs_io view slots are the protocol's view ids");

static int r_set_view(rfs_io *io, uint32_t view_id, uint64_t disp, const void *enc, size_t enc_len)
{
    return rfs_set_view(file_of(io), view_id, disp, enc, enc_len);
}
static int r_view_read(rfs_io *io, uint32_t view_id, uint64_t pos, void *buf, size_t len,
                       size_t *done)
{
    return rfs_view_read(file_of(io), view_id, pos, buf, len, done);
}
static int r_view_write(rfs_io *io, uint32_t view_id, uint64_t pos, const void *buf, size_t len,
                        size_t *done)
{
    return rfs_view_write(file_of(io), view_id, pos, buf, len, done);
}

static int r_version(rfs_io *io, rfs_io_version *v)
{
    return rfs_file_version(file_of(io), &v->size, &v->mtime_ns);
}

static int r_remove(const rfs_io_ops *const *below, const char *name, const rfs_options *opts)
{
    (void)below; /* the bottom of every stack */
    return rfs_delete(name, opts);
}

static void r_async_done(void *arg)
{
    rfs_io_async *a = arg;
    a->on_done(a);
}

static int r_start(rfs_io *io, unsigned how_io, void *buf, size_t len, uint64_t off,
                   rfs_io_async *a)
{
    unsigned how = (how_io & RFS_IO_ASYNC_WRITE) ? RFS_ASYNC_WRITE : 0u;
    if (how_io & RFS_IO_ASYNC_STREAMS)
        how |= RFS_ASYNC_STREAMS;
    return rfs_async_start(file_of(io), how, buf, len, off, r_async_done, a,
                           (rfs_async **)&a->impl);
}

static int r_end(rfs_io *io, rfs_io_async *a, size_t *done)
{
    int rc = rfs_async_end(file_of(io), a->impl, done);
    a->impl = NULL;
    return rc;
}

static int r_close(rfs_io *io)
{
    int rc = rfs_close(file_of(io));
    free(io);
    return rc;
}

static int r_coll_join(rfs_io *io, const unsigned char id[16], unsigned nranks, const char *hints,
                       size_t *max_part)
{
    return rfs_coll_join(file_of(io), id, nranks, hints, max_part);
}
static int r_coll_listio(rfs_io *io, int is_write, const rfs_extent *ext, size_t n, void *buf,
                         size_t *done)
{
    return rfs_coll_listio(file_of(io), is_write, ext, n, buf, done);
}

static const rfs_io_ops remote_ops = {
    .pread = r_pread,
    .pwrite = r_pwrite,
    .preadv = r_preadv,
    .pwritev = r_pwritev,
    .pwritev_gather = rfs_io_gen_pwritev_gather,
    .sync = r_sync,
    .flush = r_flush,
    .write_mark = r_write_mark,
    .mark_answered = r_mark_answered,
    .get_size = r_get_size,
    .set_size = r_set_size,
    .preallocate = r_preallocate,
    .counter = r_counter,
    .lock = r_lock,
    .unlock = r_unlock,
    .set_view = r_set_view,
    .view_read = r_view_read,
    .view_write = r_view_write,
    .close = r_close,
    .version = r_version,
    .remove = r_remove,
    .start = r_start,
    .end = r_end,
    .coll_join = r_coll_join,
    .coll_listio = r_coll_listio,
};

const rfs_io_ops *rfs_io_remote_ops(void)
{
    return &remote_ops;
}

double rfs_io_remote_rtt_ms(rfs_io *io)
{
    if (!io || io->ops != &remote_ops)
        return -1;
    rfs_file *f = file_of(io);
    return f->nconn > 0 ? rfs_conn_rtt_ms(f->conn[0]) : -1;
}

int rfs_io_open_remote(const char *name, unsigned flags, unsigned mode, const rfs_options *opts,
                       rfs_io **out)
{
    return rfs_io_open_remote_in(NULL, name, flags, mode, opts, out);
}

int rfs_io_open_remote_in(rfs_runtime *rt, const char *name, unsigned flags, unsigned mode,
                          const rfs_options *opts, rfs_io **out)
{
    if (!out)
        return rfs_fail(RFS_E_INVAL, "rfs_io_open_remote: NULL output pointer");
    *out = NULL;
    io_remote *r = calloc(1, sizeof *r);
    if (!r)
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", name ? name : "(null)");
    int rc = rfs_open_in(rt, name, flags, mode, opts, &r->f);
    if (rc) {
        free(r);
        return rc;
    }
    r->io.ops = &remote_ops;
    r->io.features = RFS_IO_F_VIEWS | RFS_IO_F_LOCKS | RFS_IO_F_COUNTERS | RFS_IO_F_MARKS |
                     RFS_IO_F_VERSIONS | RFS_IO_F_ASYNC;
    snprintf(r->io.server, sizeof r->io.server, "%s", rfs_file_server(r->f));
    snprintf(r->io.path, sizeof r->io.path, "%s", rfs_file_path(r->f));
    *out = &r->io;
    return RFS_OK;
}
