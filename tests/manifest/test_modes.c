/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The logical file's optional modes (manifest/buffered.c, sieve.c) over an in-memory file
 * that records what reaches it: buffered writes give the same bytes as direct ones, reach the
 * file only at sync/flush/close or when the buffer is full (never more than its size at
 * once), are read back by the writer at once, and a failed send is reported where the rules
 * say; sieved reads give the same bytes as direct ones in reads of at most the window, stop at
 * the end of the file as the layer below does, and pass other lists through. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "manifest/modes.h"
#include "tests/client/io_slots.h"
#include "tests/manifest/memfile.h"

static uint32_t rnd_state = 12345;
static uint32_t rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return rnd_state >> 8;
}

/* ---- buffered writes ---- */

static void test_slots_named(void **state)
{
    (void)state;
    memfile *m = mem_new();
    rfs_io *b = NULL, *s = NULL;
    assert_int_equal(mf_buffered_wrap(&m->io, 4096, &b), RFS_OK);
    assert_io_slots_named(b->ops);
    assert_int_equal(mf_sieve_wrap(b, 4096, &s), RFS_OK);
    assert_io_slots_named(s->ops);
    assert_int_equal(s->ops->close(s), RFS_OK);
    assert_true(m->closed);
    free(m);
}

/* Random small writes, some overlapping, some reading back at once: after close the file holds
 * exactly what direct writes would have left, and every read saw the latest bytes. */
static void test_buffered_bytes_identical(void **state)
{
    (void)state;
    static uint8_t want[1 << 18], chunk[4096], got[4096];
    memfile *m = mem_new();
    rfs_io *b = NULL;
    assert_int_equal(mf_buffered_wrap(&m->io, 16384, &b), RFS_OK);
    m->size = sizeof want;     /* zeros, as want: reads anywhere in it are whole */
    uint64_t end = 0, cur = 0; /* cur: where the appends go on (from 0 again at the end) */
    for (int k = 0; k < 4000; k++) {
        size_t len = 1 + rnd() % 2048;
        if (cur + len > sizeof want)
            cur = 0;
        uint64_t off = k % 10 ? cur : rnd() % (sizeof want - len); /* mostly appends */
        if (k % 10)
            cur += len;
        for (size_t i = 0; i < len; i++)
            chunk[i] = (uint8_t)rnd();
        size_t done = 0;
        assert_int_equal(b->ops->pwrite(b, chunk, len, off, &done), RFS_OK);
        assert_int_equal(done, len);
        memcpy(want + off, chunk, len);
        if (off + len > end)
            end = off + len;
        if (k % 97 == 0) { /* the writer reads its own bytes back at once */
            uint64_t ro = rnd() % (sizeof want - sizeof got);
            size_t rl = 1 + rnd() % sizeof got;
            assert_int_equal(b->ops->pread(b, got, rl, ro, &done), RFS_OK);
            assert_int_equal(done, rl);
            assert_memory_equal(got, want + ro, rl);
        }
    }
    uint64_t size = 0;
    assert_int_equal(b->ops->get_size(b, &size), RFS_OK);
    assert_int_equal(size, sizeof want);
    assert_true(end > sizeof want / 2);
    assert_int_equal(b->ops->close(b), RFS_OK);
    assert_memory_equal(m->data, want, sizeof want);
    /* coalesced: far fewer calls than writes, none larger than the buffer */
    assert_true(m->writes < 4000 / 3);
    assert_true(m->max_write <= 16384);
    free(m);
}

/* 1 KiB writes reach the file only at sync, as one call; after it the file has them. */
static void test_buffered_visible_at_sync(void **state)
{
    (void)state;
    memfile *m = mem_new();
    rfs_io *b = NULL;
    assert_int_equal(mf_buffered_wrap(&m->io, 1 << 20, &b), RFS_OK);
    uint8_t kib[1024];
    for (int k = 0; k < 100; k++) {
        memset(kib, k, sizeof kib);
        assert_int_equal(b->ops->pwrite(b, kib, sizeof kib, (uint64_t)k * 1024, NULL), RFS_OK);
    }
    assert_int_equal(m->writes, 0);
    assert_int_equal(m->size, 0);
    assert_int_equal(b->ops->sync(b), RFS_OK);
    assert_int_equal(m->writes, 1);
    assert_int_equal(m->syncs, 1);
    assert_int_equal(m->size, 100 * 1024);
    for (int k = 0; k < 100; k++)
        assert_int_equal(m->data[k * 1024 + 1023], k);
    /* a barrier's flush sends them too (strided this time: one list write) */
    for (int k = 0; k < 10; k++)
        assert_int_equal(b->ops->pwrite(b, kib, 100, 200000 + (uint64_t)k * 1000, NULL), RFS_OK);
    assert_int_equal(m->writes, 1);
    assert_int_equal(b->ops->flush(b, 0), RFS_OK);
    assert_int_equal(m->writes, 2);
    assert_int_equal(m->flushes, 1);
    assert_int_equal(m->size, 200000 + 9 * 1000 + 100);
    assert_int_equal(b->ops->close(b), RFS_OK);
    assert_int_equal(m->writes, 2); /* nothing was left to send */
    free(m);
}

/* Never more than the buffer's bytes at once, however many writes: 1 MiB of 1 KiB writes in a
 * 8 KiB buffer reaches the file as 128 full buffers. A write larger than half the buffer goes
 * down on its own (after what it must follow). */
static void test_buffered_memory_bound(void **state)
{
    (void)state;
    memfile *m = mem_new();
    rfs_io *b = NULL;
    assert_int_equal(mf_buffered_wrap(&m->io, 8192, &b), RFS_OK);
    uint8_t kib[1024];
    for (int k = 0; k < 1024; k++) {
        memset(kib, k & 0xff, sizeof kib);
        assert_int_equal(b->ops->pwrite(b, kib, sizeof kib, (uint64_t)k * 1024, NULL), RFS_OK);
        assert_true(m->size <= (uint64_t)k * 1024 + 1024); /* never beyond what was written */
    }
    assert_int_equal(b->ops->flush(b, 1), RFS_OK);
    assert_int_equal(m->writes, 128);
    assert_int_equal(m->max_write, 8192);
    static uint8_t big[6000];
    memset(big, 0xab, sizeof big);
    assert_int_equal(b->ops->pwrite(b, kib, 10, 0, NULL), RFS_OK);
    assert_int_equal(b->ops->pwrite(b, big, sizeof big, 5, NULL), RFS_OK); /* overlaps: after */
    assert_int_equal(m->writes, 130);
    assert_int_equal(m->data[4], kib[0]);
    assert_int_equal(m->data[5], 0xab);
    assert_int_equal(b->ops->close(b), RFS_OK);
    free(m);
}

/* A send that fails in a barrier's flush (which may not report) is the next sync's error,
 * once; one that fails when the buffer is full is that write's. */
static void test_buffered_failure_reported(void **state)
{
    (void)state;
    memfile *m = mem_new();
    rfs_io *b = NULL;
    assert_int_equal(mf_buffered_wrap(&m->io, 4096, &b), RFS_OK);
    uint8_t kib[1024] = {1};
    assert_int_equal(b->ops->pwrite(b, kib, sizeof kib, 0, NULL), RFS_OK);
    m->fail_writes = 1;
    assert_int_equal(b->ops->flush(b, 0), RFS_OK);
    assert_int_equal(b->ops->sync(b), RFS_E_IO);
    assert_non_null(strstr(rfs_last_error(), "write refused"));
    assert_int_equal(b->ops->sync(b), RFS_OK);
    for (int k = 0; k < 4; k++)
        assert_int_equal(b->ops->pwrite(b, kib, sizeof kib, (uint64_t)k * 1024, NULL), RFS_OK);
    m->fail_writes = 1;
    assert_int_equal(b->ops->pwrite(b, kib, sizeof kib, 4096, NULL), RFS_E_IO);
    assert_int_equal(b->ops->close(b), RFS_OK);
    free(m);
}

/* ---- sieved reads ---- */

static void fill(memfile *m, uint64_t size)
{
    for (uint64_t i = 0; i < size; i++)
        m->data[i] = (uint8_t)(i * 7 + (i >> 8));
    m->size = size;
}

/* 1000 ranges of 40 bytes every 100: the same bytes as a direct list read, in reads of at most
 * the window and no list read below. */
static void test_sieve_bytes_identical(void **state)
{
    (void)state;
    memfile *m = mem_new();
    fill(m, 200000);
    rfs_io *s = NULL;
    assert_int_equal(mf_sieve_wrap(&m->io, 8192, &s), RFS_OK);
    static rfs_extent ext[1000];
    static uint8_t got[40000], want[40000];
    for (int i = 0; i < 1000; i++)
        ext[i] = (rfs_extent){(uint64_t)i * 100 + 30, 40};
    size_t done = 0;
    assert_int_equal(s->ops->preadv(s, ext, 1000, got, &done), RFS_OK);
    assert_int_equal(done, 40000);
    assert_int_equal(m->listreads, 0);
    assert_int_equal(m->reads, 13); /* 100000 bytes spanned in windows of 8192 (81 ranges) */
    size_t wd = 0;
    assert_int_equal(m->io.ops->preadv(&m->io, ext, 1000, want, &wd), RFS_OK);
    assert_memory_equal(got, want, sizeof got);
    /* out of order: passed through as it is */
    rfs_extent rev[2] = {{500, 10}, {100, 10}};
    assert_int_equal(s->ops->preadv(s, rev, 2, got, &done), RFS_OK);
    assert_int_equal(m->listreads, 2);
    assert_int_equal(s->ops->close(s), RFS_OK);
    free(m);
}

/* Ranges past the end: the bytes up to the first byte beyond it, as the layer below counts. A
 * range as large as the window is read on its own. */
static void test_sieve_end_of_file(void **state)
{
    (void)state;
    memfile *m = mem_new();
    fill(m, 1050);
    rfs_io *s = NULL;
    assert_int_equal(mf_sieve_wrap(&m->io, 4096, &s), RFS_OK);
    rfs_extent ext[4] = {{0, 100}, {1000, 100}, {2000, 10}, {3000, 5000}};
    uint8_t got[5210];
    size_t done = 0;
    assert_int_equal(s->ops->preadv(s, ext, 4, got, &done), RFS_OK);
    assert_int_equal(done, 150);
    assert_memory_equal(got, m->data, 100);
    assert_memory_equal(got + 100, m->data + 1000, 50);
    fill(m, 9000);
    int before = m->reads;
    assert_int_equal(s->ops->preadv(s, ext, 4, got, &done), RFS_OK);
    assert_int_equal(done, 5210);
    assert_int_equal(m->reads - before, 2); /* one window, then the large range alone */
    assert_memory_equal(got + 210, m->data + 3000, 5000);
    assert_int_equal(s->ops->close(s), RFS_OK);
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slots_named),
        cmocka_unit_test(test_buffered_bytes_identical),
        cmocka_unit_test(test_buffered_visible_at_sync),
        cmocka_unit_test(test_buffered_memory_bound),
        cmocka_unit_test(test_buffered_failure_reported),
        cmocka_unit_test(test_sieve_bytes_identical),
        cmocka_unit_test(test_sieve_end_of_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
