/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "fake_io.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/err.h"

static fake_io *FI(rfs_io *io)
{
    return (fake_io *)io;
}

static int grow(fake_io *f, uint64_t end)
{
    if (end > f->cap) {
        uint64_t cap = f->cap ? f->cap : 4096;
        while (cap < end)
            cap *= 2;
        uint8_t *d = realloc(f->data, cap);
        if (!d)
            return RFS_E_NOMEM;
        memset(d + f->cap, 0, cap - f->cap);
        f->data = d;
        f->cap = cap;
    }
    if (end > f->size)
        f->size = end;
    return RFS_OK;
}

static int pass_gate(fake_io *f)
{
    f->writes_waiting++;
    pthread_cond_broadcast(&f->cv);
    while (f->gate_closed)
        pthread_cond_wait(&f->cv, &f->mu);
    f->writes_waiting--;
    return f->fail_writes ? rfs_fail(f->fail_writes, "fake: write refused") : RFS_OK;
}

static int f_pwrite(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done)
{
    fake_io *f = FI(io);
    pthread_mutex_lock(&f->mu);
    int rc = pass_gate(f);
    if (rc == RFS_OK && (rc = grow(f, off + len)) == RFS_OK) {
        memcpy(f->data + off, buf, len);
        f->writes++;
        f->bytes_written += len;
    }
    pthread_mutex_unlock(&f->mu);
    if (done)
        *done = rc == RFS_OK ? len : 0;
    return rc;
}

static int f_pwritev(rfs_io *io, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    fake_io *f = FI(io);
    const uint8_t *p = buf;
    pthread_mutex_lock(&f->mu);
    int rc = pass_gate(f);
    size_t total = 0;
    for (size_t i = 0; rc == RFS_OK && i < n; i++) {
        if ((rc = grow(f, ext[i].offset + ext[i].length)) != RFS_OK)
            break;
        memcpy(f->data + ext[i].offset, p, ext[i].length);
        p += ext[i].length;
        total += ext[i].length;
    }
    if (rc == RFS_OK) {
        f->writes++;
        f->bytes_written += total;
    }
    pthread_mutex_unlock(&f->mu);
    if (done)
        *done = rc == RFS_OK ? total : 0;
    return rc;
}

static int f_pread(rfs_io *io, void *buf, size_t len, uint64_t off, size_t *done)
{
    fake_io *f = FI(io);
    pthread_mutex_lock(&f->mu);
    size_t n = off >= f->size ? 0 : (f->size - off < len ? f->size - off : len);
    memcpy(buf, f->data + off, n);
    pthread_mutex_unlock(&f->mu);
    if (done)
        *done = n;
    return RFS_OK;
}

static int f_preadv(rfs_io *io, const rfs_extent *ext, size_t n, void *buf, size_t *done)
{
    uint8_t *p = buf;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t got;
        f_pread(io, p, ext[i].length, ext[i].offset, &got);
        p += got;
        total += got;
        if (got < ext[i].length)
            break;
    }
    if (done)
        *done = total;
    return RFS_OK;
}

static int f_sync(rfs_io *io)
{
    fake_io *f = FI(io);
    pthread_mutex_lock(&f->mu);
    f->syncs++;
    pthread_mutex_unlock(&f->mu);
    return RFS_OK;
}

static int f_get_size(rfs_io *io, uint64_t *size)
{
    fake_io *f = FI(io);
    pthread_mutex_lock(&f->mu);
    *size = f->size;
    pthread_mutex_unlock(&f->mu);
    return RFS_OK;
}

static int f_set_size(rfs_io *io, uint64_t size)
{
    fake_io *f = FI(io);
    pthread_mutex_lock(&f->mu);
    int rc = grow(f, size);
    f->size = size;
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static int f_close(rfs_io *io)
{
    fake_io *f = FI(io);
    if (f->closed_flag)
        *f->closed_flag = 1;
    /* The test keeps reading the data after close: the fake is freed by the test. */
    pthread_mutex_lock(&f->mu);
    f->closed = 1;
    pthread_mutex_unlock(&f->mu);
    return RFS_OK;
}

static int f_version(rfs_io *io, rfs_io_version *v)
{
    fake_io *f = FI(io);
    pthread_mutex_lock(&f->mu);
    int on = f->versions;
    v->size = f->size;
    v->mtime_ns = (int64_t)f->writes;
    pthread_mutex_unlock(&f->mu);
    return on ? RFS_OK : rfs_fail(RFS_E_UNSUPPORTED, "fake: no file versions");
}

static const rfs_io_ops fake_ops = {
    .pread = f_pread,
    .pwrite = f_pwrite,
    .preadv = f_preadv,
    .pwritev = f_pwritev,
    .pwritev_gather = rfs_io_gen_pwritev_gather,
    .sync = f_sync,
    .flush = rfs_io_gen_flush,
    .write_mark = rfs_io_gen_write_mark,
    .mark_answered = rfs_io_gen_mark_answered,
    .get_size = f_get_size,
    .set_size = f_set_size,
    .preallocate = f_set_size,
    .counter = rfs_io_gen_counter,
    .lock = rfs_io_gen_lock,
    .unlock = rfs_io_gen_unlock,
    .set_view = rfs_io_gen_set_view,
    .view_read = rfs_io_gen_view_read,
    .view_write = rfs_io_gen_view_write,
    .close = f_close,
    .version = f_version,
    .remove = rfs_io_gen_remove,
    .start = rfs_io_gen_start,
    .end = rfs_io_gen_end,
    .coll_join = rfs_io_gen_coll_join,
    .coll_listio = rfs_io_gen_coll_listio,
};

fake_io *fake_io_new(void)
{
    fake_io *f = calloc(1, sizeof *f);
    f->io.ops = &fake_ops;
    f->io.features = RFS_IO_F_VERSIONS;
    strcpy(f->io.server, "fake:0");
    strcpy(f->io.path, "/fake");
    pthread_mutex_init(&f->mu, NULL);
    rfs_cond_init_monotonic(&f->cv);
    return f;
}

void fake_io_gate(fake_io *f, int closed)
{
    pthread_mutex_lock(&f->mu);
    f->gate_closed = closed;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

int fake_io_wait_blocked(fake_io *f, int n)
{
    struct timespec dl = rfs_deadline_ms(30000);
    pthread_mutex_lock(&f->mu);
    int rc = 0;
    while (f->writes_waiting < n && rc == 0)
        rc = pthread_cond_timedwait(&f->cv, &f->mu, &dl);
    int ok = f->writes_waiting >= n;
    pthread_mutex_unlock(&f->mu);
    return ok;
}
