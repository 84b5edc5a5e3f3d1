/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The generic rfs_io ops (rfs_io.h): what a layer names for the slots it does not specialise.
 * Each does its job with the layer's mandatory ops, or says the layer cannot do it, with the
 * same outcome the callers' own fallbacks had when such a slot was NULL. */
#include "rfs/rfs_io.h"

#include "common/err.h"

#include <stdlib.h>
#include <string.h>

/* One request per extent; like the list ops, stops at the first short transfer (end of file
 * for reads), *done counting the bytes moved up to it. */
int rfs_io_gen_preadv(rfs_io *io, const rfs_extent *ext, size_t n, void *buf, size_t *done)
{
    char *p = buf;
    size_t total = 0;
    int rc = RFS_OK;
    for (size_t i = 0; i < n && rc == RFS_OK; i++) {
        size_t g = 0;
        rc = io->ops->pread(io, p + total, (size_t)ext[i].length, ext[i].offset, &g);
        total += g;
        if (g < ext[i].length)
            break;
    }
    if (done)
        *done = total;
    return rc;
}

int rfs_io_gen_pwritev(rfs_io *io, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    const char *p = buf;
    size_t total = 0;
    int rc = RFS_OK;
    for (size_t i = 0; i < n && rc == RFS_OK; i++) {
        size_t g = 0;
        rc = io->ops->pwrite(io, p + total, (size_t)ext[i].length, ext[i].offset, &g);
        total += g;
        if (g < ext[i].length)
            break;
    }
    if (done)
        *done = total;
    return rc;
}

int rfs_io_gen_pwritev_gather(rfs_io *io, const rfs_extent *ext, size_t n, const struct iovec *mem,
                              size_t nmem, size_t *done)
{
    uint64_t total = 0, have = 0;
    for (size_t i = 0; i < n; i++)
        total += ext[i].length;
    for (size_t i = 0; i < nmem; i++)
        have += mem[i].iov_len;
    if (done)
        *done = 0;
    if (have != total)
        return rfs_fail(RFS_E_INVAL, "%s:%s: %llu bytes of memory for %llu bytes of extents",
                        io->server, io->path, (unsigned long long)have, (unsigned long long)total);
    if (total > SIZE_MAX)
        return rfs_fail(RFS_E_TOOBIG, "%s:%s: %llu bytes do not fit in memory", io->server,
                        io->path, (unsigned long long)total);
    char *packed = malloc(total ? (size_t)total : 1);
    if (!packed)
        return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory packing %llu bytes", io->server,
                        io->path, (unsigned long long)total);
    size_t at = 0;
    for (size_t i = 0; i < nmem; i++) {
        memcpy(packed + at, mem[i].iov_base, mem[i].iov_len);
        at += mem[i].iov_len;
    }
    int rc = io->ops->pwritev(io, ext, n, packed, done);
    free(packed);
    return rc;
}

int rfs_io_gen_flush(rfs_io *io, int report)
{
    (void)io;
    (void)report;
    return RFS_OK;
}

uint64_t rfs_io_gen_write_mark(rfs_io *io)
{
    (void)io;
    return 0;
}

int rfs_io_gen_mark_answered(rfs_io *io, uint64_t mark)
{
    (void)io;
    (void)mark;
    return 1;
}

/* At least makes the file that long; never shrinks it. */
int rfs_io_gen_preallocate(rfs_io *io, uint64_t size)
{
    uint64_t cur = 0;
    int rc = io->ops->get_size(io, &cur);
    return rc == RFS_OK && cur < size ? io->ops->set_size(io, size) : rc;
}

int rfs_io_gen_counter(rfs_io *io, uint32_t key, int set, int64_t delta, int64_t *old)
{
    (void)key, (void)set, (void)delta, (void)old;
    return rfs_fail(RFS_E_UNSUPPORTED, "%s: no shared counters", io->path);
}

int rfs_io_gen_lock(rfs_io *io, uint64_t off, uint64_t len, unsigned mode, int wait_ms)
{
    (void)off, (void)len, (void)mode, (void)wait_ms;
    return rfs_fail(RFS_E_UNSUPPORTED, "%s: no byte-range locks", io->path);
}

int rfs_io_gen_unlock(rfs_io *io, uint64_t off, uint64_t len)
{
    (void)off, (void)len;
    return rfs_fail(RFS_E_UNSUPPORTED, "%s: no byte-range locks", io->path);
}

static int no_views(rfs_io *io, size_t *done)
{
    if (done)
        *done = 0;
    return rfs_fail(RFS_E_UNSUPPORTED, "%s: no server-side file views", io->path);
}

int rfs_io_gen_set_view(rfs_io *io, uint32_t view_id, uint64_t disp, const void *enc,
                        size_t enc_len)
{
    (void)view_id, (void)disp, (void)enc, (void)enc_len;
    return no_views(io, NULL);
}

int rfs_io_gen_view_read(rfs_io *io, uint32_t view_id, uint64_t pos, void *buf, size_t len,
                         size_t *done)
{
    (void)view_id, (void)pos, (void)buf, (void)len;
    return no_views(io, done);
}

int rfs_io_gen_view_write(rfs_io *io, uint32_t view_id, uint64_t pos, const void *buf, size_t len,
                          size_t *done)
{
    (void)view_id, (void)pos, (void)buf, (void)len;
    return no_views(io, done);
}

int rfs_io_gen_version(rfs_io *io, rfs_io_version *v)
{
    (void)v;
    return rfs_fail(RFS_E_UNSUPPORTED, "%s: no file versions", io->path);
}

int rfs_io_gen_start(rfs_io *io, unsigned how, void *buf, size_t len, uint64_t off, rfs_io_async *a)
{
    (void)how;
    (void)buf;
    (void)len;
    (void)off;
    (void)a;
    return rfs_fail(RFS_E_UNSUPPORTED, "%s: no asynchronous access in this layer", io->path);
}

int rfs_io_gen_end(rfs_io *io, rfs_io_async *a, size_t *done)
{
    (void)a;
    if (done)
        *done = 0;
    return rfs_fail(RFS_E_INVAL, "%s: no asynchronous access was started", io->path);
}

int rfs_io_gen_coll_join(rfs_io *io, const unsigned char id[16], unsigned nranks, const char *hints,
                         size_t *max_part)
{
    (void)id, (void)nranks, (void)hints;
    *max_part = 0;
    return rfs_fail(RFS_E_UNSUPPORTED,
                    "%s: collective calls go through the server only from "
                    "the remote layer",
                    io->path);
}

int rfs_io_gen_coll_listio(rfs_io *io, int is_write, const rfs_extent *ext, size_t n, void *buf,
                           size_t *done)
{
    (void)is_write, (void)ext, (void)n, (void)buf;
    *done = 0;
    return rfs_fail(RFS_E_UNSUPPORTED,
                    "%s: collective calls go through the server only from "
                    "the remote layer",
                    io->path);
}

int rfs_io_gen_remove(const rfs_io_ops *const *below, const char *name, const rfs_options *opts)
{
    return rfs_io_remove(below, name, opts);
}

int rfs_io_remove(const rfs_io_ops *const *stack, const char *name, const rfs_options *opts)
{
    if (!stack || !stack[0])
        return rfs_fail(RFS_E_UNSUPPORTED, "%s: no layer that deletes files",
                        name ? name : "(null)");
    return stack[0]->remove(stack + 1, name, opts);
}

void rfs_extents_span(const rfs_extent *ext, size_t n, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (ext[i].offset < *lo)
            *lo = ext[i].offset;
        if (ext[i].offset + ext[i].length > *hi)
            *hi = ext[i].offset + ext[i].length;
    }
}
