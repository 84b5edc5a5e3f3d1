/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "file_io.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"

typedef struct file_io {
    rfs_io io;
    int fd;
    uint64_t fail_lo, fail_hi;
} file_io;

static file_io *FI(rfs_io *io)
{
    return (file_io *)io;
}

static int *hold_word;

void file_io_hold(int *word)
{
    hold_word = word;
}

static int held_count;  /* writes that waited so far */
static int write_calls; /* pwrite and pwritev calls */

int file_io_held(void)
{
    return __atomic_load_n(&held_count, __ATOMIC_ACQUIRE);
}

int file_io_write_calls(void)
{
    return __atomic_load_n(&write_calls, __ATOMIC_ACQUIRE);
}

/* While *hold_word is set, writes wait (bounded: 20 s), as on a link that fell behind. Once
 * it clears, the writes that waited go in the reverse of the order they came (each waits 2 ms
 * per later one, at most 100 ms): writes in flight at once may be answered in any order, so a
 * layer above that let two writes of the same bytes be in flight together fails here. */
static void held(void)
{
    int my = -1;
    for (int i = 0; hold_word && i < 20000 && __atomic_load_n(hold_word, __ATOMIC_ACQUIRE); i++) {
        if (my < 0)
            my = __atomic_fetch_add(&held_count, 1, __ATOMIC_ACQ_REL);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (my >= 0) {
        int later = __atomic_load_n(&held_count, __ATOMIC_ACQUIRE) - 1 - my;
        struct timespec ts = {0, (long)(later < 50 ? later : 50) * 2000000L};
        nanosleep(&ts, NULL);
    }
}

/* file_io_window: plain writes return once "sent" (counted as window marks), list writes
 * wait for their answers, which are held while *answers_held. */
static int window_on;
static int *answers_held;
static uint64_t window_sent;

void file_io_window(int *word)
{
    window_on = 1;
    answers_held = word;
}

static uint64_t fi_write_mark(rfs_io *io)
{
    (void)io;
    return window_on ? __atomic_load_n(&window_sent, __ATOMIC_ACQUIRE) : 0;
}

/* A list write waits (bounded: 20 s) while its answers are held. */
static void list_answer(void)
{
    int counted = 0;
    for (int i = 0; answers_held && i < 20000 && __atomic_load_n(answers_held, __ATOMIC_ACQUIRE);
         i++) {
        if (!counted++)
            __atomic_add_fetch(&held_count, 1, __ATOMIC_ACQ_REL);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static int fail_late;     /* refused writes fail at the next flush or close */
static uint64_t late_off; /* the first of them + 1 (0: none) */
static int flush_calls;

void file_io_fail_late(int on)
{
    fail_late = on;
}

int file_io_flush_calls(void)
{
    return __atomic_load_n(&flush_calls, __ATOMIC_ACQUIRE);
}

/* RFS_E_IO naming the first late failure, which is then forgotten; RFS_OK without one. */
static int late_error(void)
{
    uint64_t off = __atomic_exchange_n(&late_off, 0, __ATOMIC_ACQ_REL);
    if (!off)
        return RFS_OK;
    return rfs_fail(RFS_E_IO, "file_io: write at %llu refused (reported late)",
                    (unsigned long long)(off - 1));
}

/* RFS_OK: write; 1: pretend it went (fail_late); else the failure. */
static int refuse(file_io *f, uint64_t off, uint64_t len)
{
    held();
    if (off < f->fail_hi && f->fail_lo < off + len) {
        if (fail_late) {
            uint64_t none = 0;
            __atomic_compare_exchange_n(&late_off, &none, off + 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE);
            return 1;
        }
        return rfs_fail(RFS_E_IO, "file_io: write at %llu refused", (unsigned long long)off);
    }
    return RFS_OK;
}

static int fi_flush(rfs_io *io, int report)
{
    (void)io;
    __atomic_add_fetch(&flush_calls, 1, __ATOMIC_ACQ_REL);
    return report ? late_error() : RFS_OK;
}

static int fi_pread(rfs_io *io, void *buf, size_t len, uint64_t off, size_t *done)
{
    ssize_t n = pread(FI(io)->fd, buf, len, (off_t)off);
    *done = n > 0 ? (size_t)n : 0;
    return n < 0 ? rfs_fail(RFS_E_IO, "file_io: pread") : RFS_OK;
}

static int put(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done)
{
    file_io *f = FI(io);
    *done = 0;
    int rc = refuse(f, off, len);
    if (rc == 1) { /* (fail_late) as if it went: the file does not get the bytes */
        *done = len;
        return RFS_OK;
    }
    if (rc != RFS_OK)
        return rc;
    ssize_t n = pwrite(f->fd, buf, len, (off_t)off);
    if (n != (ssize_t)len)
        return rfs_fail(RFS_E_IO, "file_io: pwrite");
    *done = len;
    return RFS_OK;
}

static int fi_pwrite(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done)
{
    __atomic_add_fetch(&write_calls, 1, __ATOMIC_ACQ_REL);
    int rc = put(io, buf, len, off, done);
    if (window_on && rc == RFS_OK)
        __atomic_add_fetch(&window_sent, 1, __ATOMIC_ACQ_REL);
    return rc;
}

/* Last extent first: the frames of a list write over several streams may land in any order,
 * so a layer above that relied on the order of its extents fails here. */
static int fi_pwritev(rfs_io *io, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    const char *p = buf;
    uint64_t total = 0;
    *done = 0;
    __atomic_add_fetch(&write_calls, 1, __ATOMIC_ACQ_REL);
    for (size_t i = 0; i < n; i++)
        total += ext[i].length;
    for (size_t i = n; i-- > 0;) {
        size_t d = 0;
        total -= ext[i].length;
        int rc = put(io, p + total, (size_t)ext[i].length, ext[i].offset, &d);
        if (rc != RFS_OK)
            return rc;
    }
    for (size_t i = 0; i < n; i++)
        *done += (size_t)ext[i].length;
    if (window_on)
        list_answer();
    return RFS_OK;
}

static int fi_sync(rfs_io *io)
{
    (void)io;
    return late_error();
}

static int fi_get_size(rfs_io *io, uint64_t *size)
{
    struct stat st;
    if (fstat(FI(io)->fd, &st) != 0)
        return rfs_fail(RFS_E_IO, "file_io: fstat");
    *size = (uint64_t)st.st_size;
    return RFS_OK;
}

static int fi_set_size(rfs_io *io, uint64_t size)
{
    return ftruncate(FI(io)->fd, (off_t)size) == 0 ? RFS_OK : rfs_fail(RFS_E_IO, "ftruncate");
}

static int fi_close(rfs_io *io)
{
    close(FI(io)->fd);
    free(io);
    return late_error();
}

static const rfs_io_ops fi_ops = {
    .pread = fi_pread,
    .pwrite = fi_pwrite,
    .preadv = rfs_io_gen_preadv,
    .pwritev = fi_pwritev,
    .pwritev_gather = rfs_io_gen_pwritev_gather,
    .sync = fi_sync,
    .flush = fi_flush,
    .write_mark = fi_write_mark,
    .mark_answered = rfs_io_gen_mark_answered,
    .get_size = fi_get_size,
    .set_size = fi_set_size,
    .preallocate = rfs_io_gen_preallocate,
    .counter = rfs_io_gen_counter,
    .lock = rfs_io_gen_lock,
    .unlock = rfs_io_gen_unlock,
    .set_view = rfs_io_gen_set_view,
    .view_read = rfs_io_gen_view_read,
    .view_write = rfs_io_gen_view_write,
    .close = fi_close,
    .version = rfs_io_gen_version,
    .remove = rfs_io_gen_remove,
    .start = rfs_io_gen_start,
    .end = rfs_io_gen_end,
    .coll_join = rfs_io_gen_coll_join,
    .coll_listio = rfs_io_gen_coll_listio,
};

int file_io_open(const char *path, uint64_t fail_lo, uint64_t fail_hi, rfs_io **out)
{
    file_io *f = calloc(1, sizeof *f);
    if (!f)
        return RFS_E_NOMEM;
    f->fd = open(path, O_RDWR | O_CREAT, 0600);
    if (f->fd < 0) {
        free(f);
        return rfs_fail(RFS_E_IO, "file_io: open %s", path);
    }
    f->fail_lo = fail_lo;
    f->fail_hi = fail_hi;
    f->io.ops = &fi_ops;
    strcpy(f->io.server, "local");
    strncpy(f->io.path, path, sizeof f->io.path - 1);
    *out = &f->io;
    return RFS_OK;
}
