/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* An in-memory rfs_io for the manifest layer's tests: a file of up to MEM_CAP bytes that counts
 * every call that reaches it (reads, writes, size calls, locks by mode) so that a test can
 * assert what a layer above sent down and when. Include after cmocka.h. */
#ifndef RFS_TEST_MANIFEST_MEMFILE_H
#define RFS_TEST_MANIFEST_MEMFILE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "rfs/rfs.h"
#include "rfs/rfs_io.h"

#define MEM_CAP (1u << 20)

typedef struct memfile {
    rfs_io io;
    uint8_t data[MEM_CAP];
    uint64_t size;
    int writes, reads, listreads, syncs, flushes; /* calls that reached it */
    int sizes, set_sizes, shared_locks, excl_locks, unlocks;
    uint64_t max_write; /* bytes of the largest write call */
    int fail_writes;    /* this many next writes fail */
    int closed;
} memfile;

static memfile *MEM(rfs_io *io)
{
    return (memfile *)io;
}

static int m_pwritev(rfs_io *io, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    memfile *m = MEM(io);
    m->writes++;
    if (m->fail_writes) {
        m->fail_writes--;
        return rfs_fail(RFS_E_IO, "memfile: write refused");
    }
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(ext[i].offset + ext[i].length <= MEM_CAP);
        memcpy(m->data + ext[i].offset, (const uint8_t *)buf + pos, (size_t)ext[i].length);
        pos += (size_t)ext[i].length;
        if (ext[i].offset + ext[i].length > m->size)
            m->size = ext[i].offset + ext[i].length;
    }
    if (pos > m->max_write)
        m->max_write = pos;
    if (done)
        *done = pos;
    return RFS_OK;
}

static int m_pwrite(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done)
{
    rfs_extent e = {off, len};
    return m_pwritev(io, &e, 1, buf, done);
}

/* Reads stop at the end of the file: ranges up to the first byte beyond it. */
static size_t read_ranges(memfile *m, const rfs_extent *ext, size_t n, uint8_t *buf)
{
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t have = ext[i].offset >= m->size                  ? 0
                        : m->size - ext[i].offset < ext[i].length ? m->size - ext[i].offset
                                                                  : ext[i].length;
        memcpy(buf + pos, m->data + ext[i].offset, (size_t)have);
        pos += (size_t)have;
        if (have < ext[i].length)
            break;
    }
    return pos;
}

static int m_pread(rfs_io *io, void *buf, size_t len, uint64_t off, size_t *done)
{
    MEM(io)->reads++;
    rfs_extent e = {off, len};
    *done = read_ranges(MEM(io), &e, 1, buf);
    return RFS_OK;
}

static int m_preadv(rfs_io *io, const rfs_extent *ext, size_t n, void *buf, size_t *done)
{
    MEM(io)->listreads++;
    *done = read_ranges(MEM(io), ext, n, buf);
    return RFS_OK;
}

static int m_sync(rfs_io *io)
{
    MEM(io)->syncs++;
    return RFS_OK;
}

static int m_flush(rfs_io *io, int report)
{
    (void)report;
    MEM(io)->flushes++;
    return RFS_OK;
}

static int m_get_size(rfs_io *io, uint64_t *size)
{
    MEM(io)->sizes++;
    *size = MEM(io)->size;
    return RFS_OK;
}

static int m_set_size(rfs_io *io, uint64_t size)
{
    MEM(io)->set_sizes++;
    MEM(io)->size = size;
    return RFS_OK;
}

static int m_lock(rfs_io *io, uint64_t off, uint64_t len, unsigned mode, int wait_ms)
{
    (void)off, (void)len, (void)wait_ms;
    if (mode == RFS_LOCK_SHARED)
        MEM(io)->shared_locks++;
    else
        MEM(io)->excl_locks++;
    return RFS_OK;
}

static int m_unlock(rfs_io *io, uint64_t off, uint64_t len)
{
    (void)off, (void)len;
    MEM(io)->unlocks++;
    return RFS_OK;
}

static int m_close(rfs_io *io)
{
    MEM(io)->closed = 1; /* the test frees it after looking at it */
    return RFS_OK;
}

static const rfs_io_ops mem_ops = {
    .pread = m_pread,
    .pwrite = m_pwrite,
    .preadv = m_preadv,
    .pwritev = m_pwritev,
    .pwritev_gather = rfs_io_gen_pwritev_gather,
    .sync = m_sync,
    .flush = m_flush,
    .write_mark = rfs_io_gen_write_mark,
    .mark_answered = rfs_io_gen_mark_answered,
    .get_size = m_get_size,
    .set_size = m_set_size,
    .preallocate = rfs_io_gen_preallocate,
    .counter = rfs_io_gen_counter,
    .lock = m_lock,
    .unlock = m_unlock,
    .set_view = rfs_io_gen_set_view,
    .view_read = rfs_io_gen_view_read,
    .view_write = rfs_io_gen_view_write,
    .close = m_close,
    .version = rfs_io_gen_version,
    .remove = rfs_io_gen_remove,
    .start = rfs_io_gen_start,
    .end = rfs_io_gen_end,
    .coll_join = rfs_io_gen_coll_join,
    .coll_listio = rfs_io_gen_coll_listio,
};

static memfile *mem_new(void)
{
    memfile *m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->io.ops = &mem_ops;
    snprintf(m->io.server, sizeof m->io.server, "mem:0");
    snprintf(m->io.path, sizeof m->io.path, "/f");
    return m;
}

#endif
