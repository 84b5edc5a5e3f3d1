/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The read cache over a counting in-memory layer: what reaches the layer below (and what does
 * not) is the outcome each test asserts. */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "cache/cache.h"
#include "cache/cache_internal.h"
#include "common/err.h"
#include "counting_io.h"
#include "../client/io_slots.h"

#define KiB 1024ull
#define MiB (1024ull * 1024ull)

/* Each test has a runtime of its own, so its pool's cap is the one it asks for (wraps only
 * ever raise a pool's cap) and nothing of another test is cached there. */
static rfs_runtime *rt;
static cx_pool *G;

static int setup(void **state)
{
    (void)state;
    if (rfs_runtime_create(&rt) != RFS_OK || !(G = cx_pool_of(rt)))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    rfs_runtime_destroy(rt);
    rt = NULL;
    G = NULL;
    return 0;
}

static rfs_io *wrap_in(rfs_runtime *in, counting_io *c, uint64_t cap, int prefetch)
{
    rfs_cache_config cfg;
    rfs_cache_config_default(&cfg);
    cfg.max_memory = cap;
    cfg.prefetch = prefetch;
    cfg.rt = in;
    rfs_io *io = NULL;
    assert_int_equal(rfs_cache_wrap(&c->io, &cfg, &io), RFS_OK);
    return io;
}

static rfs_io *wrap(counting_io *c, uint64_t cap, int prefetch)
{
    return wrap_in(rt, c, cap, prefetch);
}

static void check_bytes(const uint8_t *buf, uint64_t off, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++)
        if (buf[i] != byte_at(off + i))
            fail_msg("byte %llu: %u, want %u", (unsigned long long)(off + i), buf[i],
                     byte_at(off + i));
}

static void read_ok(rfs_io *io, uint64_t off, uint64_t len, uint64_t want)
{
    uint8_t *buf = malloc(len ? len : 1);
    assert_non_null(buf);
    size_t got = 12345;
    assert_int_equal(io->ops->pread(io, buf, len, off, &got), RFS_OK);
    assert_int_equal(got, want);
    check_bytes(buf, off, got);
    free(buf);
}

/* Waits (a deadline fails the test) until no prefetch of io is queued or in flight. */
static void wait_prefetch_idle(rfs_io *io)
{
    cx_file *f = (cx_file *)io;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 20;
    pthread_mutex_lock(&G->mu);
    for (;;) {
        int busy = f->q_head != NULL;
        for (size_t i = 0; i < f->n && !busy; i++)
            busy = !f->v[i]->ready;
        if (!busy)
            break;
        int rc = pthread_cond_timedwait(&G->landed, &G->mu, &dl);
        if (rc != 0) {
            pthread_mutex_unlock(&G->mu);
            fail_msg("prefetches still in flight after 20 s");
        }
    }
    pthread_mutex_unlock(&G->mu);
}

static rfs_cache_stats stats(rfs_io *io)
{
    rfs_cache_stats s;
    rfs_cache_get_stats(io, &s);
    return s;
}

static void test_reread_costs_no_call(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(1 * MiB);
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_DISABLE);
    read_ok(io, 1000, 100 * KiB, 100 * KiB);
    uint64_t calls = counting_io_get(c, &c->reads);
    assert_int_equal(calls, 1);
    read_ok(io, 1000, 100 * KiB, 100 * KiB);
    read_ok(io, 5000, 10, 10);
    /* a list read inside the cached range */
    rfs_extent ext[3] = {{2000, 10}, {40000, 500}, {90000, 7}};
    uint8_t buf[517];
    size_t got = 0;
    assert_int_equal(io->ops->preadv(io, ext, 3, buf, &got), RFS_OK);
    assert_int_equal(got, 517);
    check_bytes(buf, 2000, 10);
    check_bytes(buf + 10, 40000, 500);
    check_bytes(buf + 510, 90000, 7);
    assert_int_equal(counting_io_get(c, &c->reads), calls);
    /* bytes just past the cached range cost one call, for the missing part only */
    read_ok(io, 100 * KiB, 10 * KiB, 10 * KiB);
    assert_int_equal(counting_io_get(c, &c->reads), calls + 1);
    assert_int_equal(counting_io_get(c, &c->bytes_read),
                     100 * KiB + (10 * KiB - (1000 + 100 * KiB - 100 * KiB)));
    rfs_cache_stats s = stats(io);
    assert_int_equal(s.reads, 5);
    assert_int_equal(s.reads_cached, 3);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

static void test_cap_respected(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(8 * MiB);
    rfs_io *io = wrap(c, 1 * MiB, RFS_PREFETCH_DISABLE);
    for (uint64_t off = 0; off < 8 * MiB; off += 64 * KiB) {
        read_ok(io, off, 64 * KiB, 64 * KiB);
        pthread_mutex_lock(&G->mu);
        uint64_t used = G->used;
        pthread_mutex_unlock(&G->mu);
        assert_true(used <= 1 * MiB);
    }
    rfs_cache_stats s = stats(io);
    assert_true(s.memory_peak <= 1 * MiB);
    assert_int_equal(s.bytes_evicted, 7 * MiB);
    uint64_t calls = counting_io_get(c, &c->reads);
    read_ok(io, 8 * MiB - 64 * KiB, 64 * KiB, 64 * KiB); /* most recent: still cached */
    assert_int_equal(counting_io_get(c, &c->reads), calls);
    read_ok(io, 0, 64 * KiB, 64 * KiB); /* oldest: evicted */
    assert_int_equal(counting_io_get(c, &c->reads), calls + 1);
    /* a read larger than the cap is served, and not cached */
    read_ok(io, 0, 4 * MiB, 4 * MiB);
    pthread_mutex_lock(&G->mu);
    assert_true(G->used <= 1 * MiB);
    pthread_mutex_unlock(&G->mu);
    assert_int_equal(io->ops->close(io), RFS_OK);
    pthread_mutex_lock(&G->mu);
    assert_int_equal(G->used, 0);
    pthread_mutex_unlock(&G->mu);
}

static void test_sequential_prefetches(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(16 * MiB);
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_AUTO);
    uint64_t piece = 256 * KiB;
    for (uint64_t off = 0; off < 16 * MiB; off += piece)
        read_ok(io, off, piece, piece);
    wait_prefetch_idle(io);
    rfs_cache_stats s = stats(io);
    /* three reads to see the pattern; the rest came (at least partly) from read-ahead */
    assert_true(s.bytes_prefetched >= 8 * MiB);
    assert_true(s.bytes_below <= 16 * MiB - s.bytes_prefetched);
    /* read-ahead costs no more requests than the reads would have */
    assert_true(counting_io_get(c, &c->reads) <= 16 * MiB / piece);
    /* nothing is read twice from below, and the end of file stops read-ahead */
    assert_int_equal(counting_io_get(c, &c->bytes_read), 16 * MiB);
    assert_int_equal(s.bytes_wasted, 0);
    read_ok(io, 16 * MiB - 100, 1000, 100);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

/* Reads larger than a prefetch request (4 MiB against 1 MiB requests while the window is
 * small): each read is assembled from several prefetched extents, none read twice below. */
static void test_large_reads_span_prefetches(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(48 * MiB);
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_AUTO);
    uint64_t piece = 4 * MiB;
    for (uint64_t off = 0; off < 48 * MiB; off += piece)
        read_ok(io, off, piece, piece);
    wait_prefetch_idle(io);
    rfs_cache_stats s = stats(io);
    assert_true(s.bytes_prefetched >= 24 * MiB);
    assert_int_equal(counting_io_get(c, &c->bytes_read), 48 * MiB);
    assert_int_equal(s.bytes_wasted, 0);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

static void test_strided_prefetches(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(32 * MiB);
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_AUTO);
    uint64_t block = 4 * KiB, stride = 64 * KiB, n = 32 * MiB / stride;
    for (uint64_t k = 0; k < n; k++)
        read_ok(io, k * stride + 100, block, block);
    wait_prefetch_idle(io);
    rfs_cache_stats s = stats(io);
    assert_int_equal(s.bytes_below, 3 * block); /* only the reads that found it */
    assert_true(s.bytes_prefetched >= (n - 3) * block);
    assert_true(counting_io_get(c, &c->preadv_calls) > 0);
    /* only the blocks crossed from below, never the holes between them (the last stride's
     * prefetch may reach past the last block read) */
    assert_true(counting_io_get(c, &c->bytes_read) <= (n + s.bytes_wasted / block) * block);
    assert_true(counting_io_get(c, &c->reads) < n / 4);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

static void test_random_does_not_prefetch(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(64 * MiB);
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_AUTO);
    uint64_t x = 12345;
    for (int i = 0; i < 40; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t off = (x >> 20) % (64 * MiB - 8 * KiB);
        read_ok(io, off, 8 * KiB, 8 * KiB);
    }
    wait_prefetch_idle(io);
    rfs_cache_stats s = stats(io);
    assert_int_equal(s.bytes_prefetched, 0);
    assert_int_equal(counting_io_get(c, &c->reads), 40);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

static void test_prefetch_enable_forces(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(4 * MiB);
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_ENABLE);
    read_ok(io, 0, 64 * KiB, 64 * KiB); /* one read is enough when forced */
    wait_prefetch_idle(io);
    assert_true(stats(io).bytes_prefetched > 0);
    read_ok(io, 64 * KiB, 64 * KiB, 64 * KiB);
    /* served by the read-ahead: the only bytes read on demand are the first read's */
    assert_int_equal(stats(io).bytes_below, 64 * KiB);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

static void test_write_through_drops(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(1 * MiB);
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_DISABLE);
    read_ok(io, 0, 256 * KiB, 256 * KiB);
    uint8_t w[100];
    memset(w, 0xEE, sizeof w);
    size_t done = 0;
    assert_int_equal(io->ops->pwrite(io, w, sizeof w, 1000, &done), RFS_OK);
    /* outside the written range: still cached */
    uint64_t calls = counting_io_get(c, &c->reads);
    read_ok(io, 200 * KiB, 10 * KiB, 10 * KiB);
    assert_int_equal(counting_io_get(c, &c->reads), calls);
    /* the written bytes come from below, new */
    uint8_t buf[300];
    assert_int_equal(io->ops->pread(io, buf, sizeof buf, 900, &done), RFS_OK);
    assert_int_equal(done, sizeof buf);
    assert_true(counting_io_get(c, &c->reads) > calls);
    check_bytes(buf, 900, 100);
    for (int i = 100; i < 200; i++)
        assert_int_equal(buf[i], 0xEE);
    check_bytes(buf + 200, 1100, 100);
    /* a list write through the gathering op (packed here: the layer below has none) */
    rfs_extent ext[2] = {{2000, 4}, {3000, 4}};
    struct iovec mem[1] = {{(void *)"abcdefgh", 8}};
    assert_int_equal(io->ops->pwritev_gather(io, ext, 2, mem, 1, &done), RFS_OK);
    assert_int_equal(done, 8);
    assert_int_equal(io->ops->pread(io, buf, 4, 3000, &done), RFS_OK);
    assert_memory_equal(buf, "efgh", 4);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

static void test_sync_drops(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(1 * MiB);
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_DISABLE);
    read_ok(io, 0, 64 * KiB, 64 * KiB);
    /* another process writes the file on the server */
    pthread_mutex_lock(&c->mu);
    memset(c->data + 100, 0x5A, 10);
    pthread_mutex_unlock(&c->mu);
    uint8_t buf[10];
    size_t done;
    assert_int_equal(io->ops->pread(io, buf, 10, 100, &done), RFS_OK);
    check_bytes(buf, 100, 10); /* not visible before a sync: the cached bytes */
    assert_int_equal(io->ops->sync(io), RFS_OK);
    assert_int_equal(counting_io_get(c, &c->syncs), 1);
    assert_int_equal(io->ops->pread(io, buf, 10, 100, &done), RFS_OK);
    for (int i = 0; i < 10; i++)
        assert_int_equal(buf[i], 0x5A);
    /* rfs_cache_invalidate (MPI_Barrier on a file open for writing) does the same */
    pthread_mutex_lock(&c->mu);
    memset(c->data + 100, 0x6B, 10);
    pthread_mutex_unlock(&c->mu);
    rfs_cache_invalidate(io);
    assert_int_equal(io->ops->pread(io, buf, 10, 100, &done), RFS_OK);
    assert_int_equal(buf[0], 0x6B);
    /* and so does a size change */
    assert_int_equal(io->ops->set_size(io, 50), RFS_OK);
    assert_int_equal(io->ops->pread(io, buf, 10, 45, &done), RFS_OK);
    assert_int_equal(done, 5);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

static void test_disabled_passes_through(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(1 * MiB);
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_AUTO);
    read_ok(io, 0, 64 * KiB, 64 * KiB);
    rfs_cache_set_enabled(io, 0); /* atomic mode */
    uint64_t calls = counting_io_get(c, &c->reads);
    for (int i = 0; i < 5; i++)
        read_ok(io, (uint64_t)i * 64 * KiB, 64 * KiB, 64 * KiB);
    read_ok(io, 0, 64 * KiB, 64 * KiB);
    assert_int_equal(counting_io_get(c, &c->reads), calls + 6);
    rfs_cache_set_enabled(io, 1);
    read_ok(io, 0, 64 * KiB, 64 * KiB);
    read_ok(io, 0, 64 * KiB, 64 * KiB);
    assert_int_equal(counting_io_get(c, &c->reads), calls + 7);
    /* ops the layer below lacks answer as a missing op would */
    int64_t old;
    assert_int_equal(io->ops->counter(io, 1, 0, 1, &old), RFS_E_UNSUPPORTED);
    assert_int_equal(io->ops->lock(io, 0, 1, RFS_LOCK_EXCL, 0), RFS_E_UNSUPPORTED);
    assert_int_equal(io->ops->set_view(io, 0, 0, "x", 1), RFS_E_UNSUPPORTED);
    assert_int_equal(io->ops->flush(io, 1), RFS_OK);
    assert_int_equal(io->ops->mark_answered(io, io->ops->write_mark(io)), 1);
    rfs_io_version v;
    assert_int_equal(io->ops->version(io, &v), RFS_E_UNSUPPORTED);
    assert_int_equal(io->ops->preallocate(io, 2 * MiB), RFS_OK);
    uint64_t size = 0;
    assert_int_equal(io->ops->get_size(io, &size), RFS_OK);
    assert_int_equal(size, 2 * MiB);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

/* Sequential reads up to just before a range whose reads fail: the prefetch into it fails and
 * nobody hears of it. */
static void test_prefetch_error_unreported(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(16 * MiB);
    c->fail_lo = 4 * MiB;
    c->fail_hi = 16 * MiB;
    c->fail_left = -1;
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_AUTO);
    for (uint64_t off = 0; off < 4 * MiB; off += 128 * KiB)
        read_ok(io, off, 128 * KiB, 128 * KiB);
    wait_prefetch_idle(io);
    rfs_cache_stats s = stats(io);
    assert_true(s.prefetch_failed > 0);
    assert_true(counting_io_get(c, &c->failures) > 0);
    /* Reading the failed bytes: one synchronous try, and its error is the read's. */
    uint64_t fails = counting_io_get(c, &c->failures);
    uint8_t buf[16];
    size_t done = 99;
    assert_int_equal(io->ops->pread(io, buf, sizeof buf, 5 * MiB, &done), RFS_E_IO);
    assert_int_equal(done, 0);
    assert_int_equal(counting_io_get(c, &c->failures), fails + 1);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

/* A prefetch that failed once: the read of its bytes retries and succeeds. */
static void test_prefetch_error_retried(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(16 * MiB);
    c->fail_lo = 1 * MiB;
    c->fail_hi = 2 * MiB;
    c->fail_left = 1;
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_AUTO);
    for (uint64_t off = 0; off < 1 * MiB; off += 128 * KiB)
        read_ok(io, off, 128 * KiB, 128 * KiB);
    wait_prefetch_idle(io);
    assert_int_equal(counting_io_get(c, &c->failures), 1);
    assert_int_equal(stats(io).prefetch_failed, 1);
    for (uint64_t off = 1 * MiB; off < 4 * MiB; off += 128 * KiB)
        read_ok(io, off, 128 * KiB, 128 * KiB);
    assert_int_equal(counting_io_get(c, &c->failures), 1);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

typedef struct reader_arg {
    rfs_io *io;
    uint64_t off, len;
    int rc;
    size_t got;
    uint8_t *buf;
} reader_arg;

static void *reader(void *p)
{
    reader_arg *a = p;
    a->rc = a->io->ops->pread(a->io, a->buf, a->len, a->off, &a->got);
    return NULL;
}

/* A read of bytes a prefetch is fetching waits for it instead of asking again. */
static void test_read_waits_for_inflight(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(8 * MiB);
    c->gate_at = 1 * MiB;
    c->gate_closed = 1;
    c->watch_lo = 1 * MiB;
    c->watch_hi = 1 * MiB + 64 * KiB;
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_AUTO);
    for (uint64_t off = 1 * MiB - 3 * 64 * KiB; off < 1 * MiB; off += 64 * KiB)
        read_ok(io, off, 64 * KiB, 64 * KiB);
    counting_io_wait_blocked(c, 1); /* the prefetch of [1 MiB, ...) is at the gate */
    reader_arg a = {io, 1 * MiB, 64 * KiB, -1, 0, malloc(64 * KiB)};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, reader, &a), 0);
    counting_io_gate(c, 0);
    pthread_join(t, NULL);
    assert_int_equal(a.rc, RFS_OK);
    assert_int_equal(a.got, 64 * KiB);
    check_bytes(a.buf, 1 * MiB, 64 * KiB);
    free(a.buf);
    wait_prefetch_idle(io);
    assert_int_equal(counting_io_get(c, &c->watch_reads), 1);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

/* A write while a prefetch of the same bytes is in flight: the prefetch's (old) bytes are not
 * kept. */
static void test_write_discards_inflight(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(8 * MiB);
    c->gate_at = 1 * MiB;
    c->gate_closed = 1;
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_AUTO);
    for (uint64_t off = 1 * MiB - 3 * 64 * KiB; off < 1 * MiB; off += 64 * KiB)
        read_ok(io, off, 64 * KiB, 64 * KiB);
    counting_io_wait_blocked(c, 1);
    /* the old bytes are what the held prefetch will return: take them now */
    uint8_t w[8] = "NEWBYTES";
    size_t done;
    pthread_mutex_lock(&c->mu);
    uint8_t *snap = malloc(c->size);
    memcpy(snap, c->data, c->size);
    pthread_mutex_unlock(&c->mu);
    free(snap);
    assert_int_equal(io->ops->pwrite(io, w, 8, 1 * MiB + 10, &done), RFS_OK);
    counting_io_gate(c, 0);
    wait_prefetch_idle(io);
    uint8_t buf[8];
    assert_int_equal(io->ops->pread(io, buf, 8, 1 * MiB + 10, &done), RFS_OK);
    assert_memory_equal(buf, "NEWBYTES", 8);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

static void test_end_of_file(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(300 * KiB + 7);
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_AUTO);
    uint64_t size = 300 * KiB + 7;
    for (uint64_t off = 0; off < 400 * KiB; off += 32 * KiB) {
        uint64_t want = off >= size ? 0 : size - off < 32 * KiB ? size - off : 32 * KiB;
        read_ok(io, off, 32 * KiB, want);
    }
    wait_prefetch_idle(io);
    /* a list read running off the end stops at the first missing byte */
    rfs_extent ext[2] = {{100, 10}, {size - 5, 10}};
    uint8_t buf[20];
    size_t got = 0;
    assert_int_equal(io->ops->preadv(io, ext, 2, buf, &got), RFS_OK);
    assert_int_equal(got, 15);
    check_bytes(buf, 100, 10);
    check_bytes(buf + 10, size - 5, 5);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

/* A list read whose runs overlap and go backwards (a read-only file's view may do that): the
 * bytes of each run, once each in the cache. */
static void test_overlapping_runs(void **state)
{
    (void)state;
    counting_io *c = counting_io_new(1 * MiB);
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_DISABLE);
    rfs_extent ext[4] = {{5000, 3000}, {6000, 3000}, {1000, 500}, {5500, 100}};
    uint8_t buf[6600];
    for (int pass = 0; pass < 2; pass++) {
        size_t got = 0;
        memset(buf, 0, sizeof buf);
        assert_int_equal(io->ops->preadv(io, ext, 4, buf, &got), RFS_OK);
        assert_int_equal(got, 6600);
        check_bytes(buf, 5000, 3000);
        check_bytes(buf + 3000, 6000, 3000);
        check_bytes(buf + 6000, 1000, 500);
        check_bytes(buf + 6500, 5500, 100);
    }
    assert_int_equal(counting_io_get(c, &c->reads), 1);
    pthread_mutex_lock(&G->mu);
    cx_file *f = (cx_file *)io;
    for (size_t i = 1; i < f->n; i++)
        assert_true(f->v[i - 1]->off + f->v[i - 1]->len <= f->v[i]->off);
    pthread_mutex_unlock(&G->mu);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

/* Two files share the runtime's cap: one's reads evict the other's least recently used bytes. */
static void test_cap_shared_by_files(void **state)
{
    (void)state;
    counting_io *a = counting_io_new(2 * MiB), *b = counting_io_new(2 * MiB);
    rfs_io *ia = wrap(a, 2 * MiB, RFS_PREFETCH_DISABLE);
    rfs_io *ib = wrap(b, 2 * MiB, RFS_PREFETCH_DISABLE);
    read_ok(ia, 0, 2 * MiB, 2 * MiB);
    read_ok(ib, 0, 1 * MiB, 1 * MiB);
    pthread_mutex_lock(&G->mu);
    assert_true(G->used <= 2 * MiB);
    pthread_mutex_unlock(&G->mu);
    assert_true(stats(ia).bytes_evicted >= 1 * MiB);
    uint64_t calls = counting_io_get(b, &b->reads);
    read_ok(ib, 0, 1 * MiB, 1 * MiB);
    assert_int_equal(counting_io_get(b, &b->reads), calls);
    assert_int_equal(ia->ops->close(ia), RFS_OK);
    assert_int_equal(ib->ops->close(ib), RFS_OK);
}

/* Runtimes have pools of their own: a file of another runtime neither evicts this one's bytes
 * nor counts against its cap. */
static void test_runtimes_have_pools_of_their_own(void **state)
{
    (void)state;
    rfs_runtime *other;
    assert_int_equal(rfs_runtime_create(&other), RFS_OK);
    counting_io *a = counting_io_new(2 * MiB), *b = counting_io_new(2 * MiB);
    rfs_io *ia = wrap(a, 2 * MiB, RFS_PREFETCH_DISABLE);
    rfs_io *ib = wrap_in(other, b, 2 * MiB, RFS_PREFETCH_DISABLE);
    read_ok(ia, 0, 2 * MiB, 2 * MiB);
    read_ok(ib, 0, 2 * MiB, 2 * MiB);
    assert_int_equal(stats(ia).bytes_evicted, 0);
    assert_int_equal(stats(ib).bytes_evicted, 0);
    pthread_mutex_lock(&G->mu);
    assert_int_equal(G->used, 2 * MiB);
    pthread_mutex_unlock(&G->mu);
    uint64_t calls = counting_io_get(a, &a->reads);
    read_ok(ia, 0, 2 * MiB, 2 * MiB);
    assert_int_equal(counting_io_get(a, &a->reads), calls);
    assert_int_equal(ia->ops->close(ia), RFS_OK);
    assert_int_equal(ib->ops->close(ib), RFS_OK);
    rfs_runtime_destroy(other);
}

/* Every slot is named; the features are the layer below's, less server-side views. */
static void test_slots_and_features(void **state)
{
    (void)state;
    assert_io_slots_named(rfs_cache_ops());
    counting_io *c = counting_io_new(4096);
    assert_io_slots_named(c->io.ops);
    c->io.features = RFS_IO_F_VIEWS | RFS_IO_F_LOCKS | RFS_IO_F_COUNTERS | RFS_IO_F_GATHER;
    rfs_io *io = wrap(c, 64 * MiB, RFS_PREFETCH_AUTO);
    assert_int_equal(io->features, RFS_IO_F_LOCKS | RFS_IO_F_COUNTERS | RFS_IO_F_GATHER);
    assert_int_equal(io->ops->close(io), RFS_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_slots_and_features, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reread_costs_no_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap_respected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sequential_prefetches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_reads_span_prefetches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strided_prefetches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_does_not_prefetch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prefetch_enable_forces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_through_drops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_drops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disabled_passes_through, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prefetch_error_unreported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prefetch_error_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_waits_for_inflight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_discards_inflight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_end_of_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlapping_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap_shared_by_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runtimes_have_pools_of_their_own, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
