/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "counting_io.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "common/err.h"

static counting_io *CI(rfs_io *io)
{
    return (counting_io *)io;
}

uint8_t byte_at(uint64_t i)
{
    return (uint8_t)((i * 131u + (i >> 11) * 7u + 1u) & 0xff);
}

/* mu held: one read of the bytes [lo, hi); RFS_OK or the failure it was told to give. */
static int admit(counting_io *c, uint64_t lo, uint64_t hi)
{
    if (lo >= c->gate_at) {
        c->blocked++;
        pthread_cond_broadcast(&c->cv);
        while (c->gate_closed)
            pthread_cond_wait(&c->cv, &c->mu);
        c->blocked--;
    }
    c->reads++;
    if (lo < c->watch_hi && c->watch_lo < hi)
        c->watch_reads++;
    if (lo < c->fail_hi && c->fail_lo < hi && c->fail_left != 0) {
        if (c->fail_left > 0)
            c->fail_left--;
        c->failures++;
        return rfs_fail(RFS_E_IO, "counting_io: read of %llu..%llu refused", (unsigned long long)lo,
                        (unsigned long long)hi);
    }
    return RFS_OK;
}

static size_t copy_out(counting_io *c, uint8_t *dst, uint64_t off, uint64_t len)
{
    if (off >= c->size)
        return 0;
    uint64_t n = c->size - off < len ? c->size - off : len;
    memcpy(dst, c->data + off, n);
    c->bytes_read += n;
    return (size_t)n;
}

static int c_pread(rfs_io *io, void *buf, size_t len, uint64_t off, size_t *done)
{
    counting_io *c = CI(io);
    pthread_mutex_lock(&c->mu);
    int rc = admit(c, off, off + len);
    size_t got = rc == RFS_OK ? copy_out(c, buf, off, len) : 0;
    pthread_mutex_unlock(&c->mu);
    if (done)
        *done = got;
    return rc;
}

static int c_preadv(rfs_io *io, const rfs_extent *ext, size_t n, void *buf, size_t *done)
{
    counting_io *c = CI(io);
    uint64_t lo, hi;
    rfs_extents_span(ext, n, &lo, &hi);
    pthread_mutex_lock(&c->mu);
    c->preadv_calls++;
    int rc = admit(c, lo, hi);
    size_t got = 0;
    for (size_t i = 0; rc == RFS_OK && i < n; i++) {
        size_t g = copy_out(c, (uint8_t *)buf + got, ext[i].offset, ext[i].length);
        got += g;
        if (g < ext[i].length)
            break;
    }
    pthread_mutex_unlock(&c->mu);
    if (done)
        *done = got;
    return rc;
}

static int grow(counting_io *c, uint64_t end)
{
    if (end <= c->size)
        return RFS_OK;
    uint8_t *d = realloc(c->data, end);
    if (!d)
        return RFS_E_NOMEM;
    memset(d + c->size, 0, end - c->size);
    c->data = d;
    c->size = end;
    return RFS_OK;
}

static int c_pwrite(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done)
{
    counting_io *c = CI(io);
    pthread_mutex_lock(&c->mu);
    int rc = grow(c, off + len);
    if (rc == RFS_OK) {
        memcpy(c->data + off, buf, len);
        c->writes++;
    }
    pthread_mutex_unlock(&c->mu);
    if (done)
        *done = rc == RFS_OK ? len : 0;
    return rc;
}

static int c_sync(rfs_io *io)
{
    counting_io *c = CI(io);
    pthread_mutex_lock(&c->mu);
    c->syncs++;
    pthread_mutex_unlock(&c->mu);
    return RFS_OK;
}

static int c_get_size(rfs_io *io, uint64_t *size)
{
    counting_io *c = CI(io);
    pthread_mutex_lock(&c->mu);
    *size = c->size;
    pthread_mutex_unlock(&c->mu);
    return RFS_OK;
}

static int c_set_size(rfs_io *io, uint64_t size)
{
    counting_io *c = CI(io);
    pthread_mutex_lock(&c->mu);
    int rc = grow(c, size);
    if (rc == RFS_OK)
        c->size = size;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int c_close(rfs_io *io)
{
    counting_io *c = CI(io);
    if (c->closed_flag)
        *c->closed_flag = 1;
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c->data);
    free(c);
    return RFS_OK;
}

/* What a fake needs not do itself it names with the generic ops (include/rfs/rfs_io.h):
 * no locks, counters, views or versions, writes answered when they return. */
static const rfs_io_ops counting_ops = {
    .pread = c_pread,
    .pwrite = c_pwrite,
    .preadv = c_preadv,
    .pwritev = rfs_io_gen_pwritev,
    .pwritev_gather = rfs_io_gen_pwritev_gather,
    .sync = c_sync,
    .flush = rfs_io_gen_flush,
    .write_mark = rfs_io_gen_write_mark,
    .mark_answered = rfs_io_gen_mark_answered,
    .get_size = c_get_size,
    .set_size = c_set_size,
    .preallocate = rfs_io_gen_preallocate,
    .counter = rfs_io_gen_counter,
    .lock = rfs_io_gen_lock,
    .unlock = rfs_io_gen_unlock,
    .set_view = rfs_io_gen_set_view,
    .view_read = rfs_io_gen_view_read,
    .view_write = rfs_io_gen_view_write,
    .close = c_close,
    .version = rfs_io_gen_version,
    .remove = rfs_io_gen_remove,
    .start = rfs_io_gen_start,
    .end = rfs_io_gen_end,
    .coll_join = rfs_io_gen_coll_join,
    .coll_listio = rfs_io_gen_coll_listio,
};

counting_io *counting_io_new(uint64_t size)
{
    counting_io *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->io.ops = &counting_ops;
    strcpy(c->io.server, "fake:0");
    strcpy(c->io.path, "/counted");
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->data = malloc(size ? size : 1);
    assert_non_null(c->data);
    for (uint64_t i = 0; i < size; i++)
        c->data[i] = byte_at(i);
    c->size = size;
    c->gate_at = UINT64_MAX;
    return c;
}

void counting_io_gate(counting_io *c, int closed)
{
    pthread_mutex_lock(&c->mu);
    c->gate_closed = closed;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void counting_io_wait_blocked(counting_io *c, int n)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 20;
    pthread_mutex_lock(&c->mu);
    int rc = 0;
    while (c->blocked < n && rc == 0)
        rc = pthread_cond_timedwait(&c->cv, &c->mu, &dl);
    int got = c->blocked;
    pthread_mutex_unlock(&c->mu);
    assert_true(got >= n);
}

uint64_t counting_io_get(counting_io *c, const uint64_t *field)
{
    pthread_mutex_lock(&c->mu);
    uint64_t v = *field;
    pthread_mutex_unlock(&c->mu);
    return v;
}
