/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The collaborative cache (ccache/) between processes sharing memory, without MPI: each test
 * forks the "ranks", which share anonymous MAP_SHARED segments and open the same local file
 * through tests/wbehind's file_io (as the ranks of a job open the same remote file). What the
 * file holds is compared with what the writes meant: after sync-barrier-sync, under a small
 * memory cap, in LRU order, with a rank killed holding dirty pages or a page lock. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "ccache/cc_internal.h"
#include "common/err.h"
#include "file_io.h"

#define MAXR 4

typedef struct shared {
    int arrived; /* test barrier */
    int die;     /* rank 1 may die now */
    int pid1;    /* rank 1's pid */
    int result[MAXR];
    char msg[MAXR][256];
} shared;

static char path[256];
static shared *sh;
static void *segs[MAXR];
static size_t seg_size;
static uint64_t g_page = 16384, g_mem = 1 << 20;
static int g_write_only;

static uint8_t byte_at(uint64_t i, int gen)
{
    return (uint8_t)((i * 131u + (i >> 9) * 7u + (unsigned)gen * 29u + 1u) & 0xff);
}

static void test_barrier(int n, int *gen)
{
    int want = n * ++*gen;
    __atomic_add_fetch(&sh->arrived, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 60000 && __atomic_load_n(&sh->arrived, __ATOMIC_SEQ_CST) < want; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static void setup_group(int n)
{
    seg_size = rfs_cc_segment_size(n, g_page, g_mem);
    for (int r = 0; r < n; r++) {
        segs[r] = mmap(NULL, seg_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        assert_true(segs[r] != MAP_FAILED);
    }
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    snprintf(path, sizeof path, "/tmp/rfs-cctest-%d.dat", (int)getpid());
    unlink(path);
}

static void teardown_group(int n)
{
    for (int r = 0; r < n; r++)
        munmap(segs[r], seg_size);
    munmap(sh, sizeof *sh);
    unlink(path);
}

static rfs_io *open_rank(int rank, int n, uint64_t fail_lo, uint64_t fail_hi)
{
    rfs_io *f, *w;
    if (file_io_open(path, fail_lo, fail_hi, &f) != RFS_OK)
        return NULL;
    rfs_cc_config c = {.rank = rank,
                       .nranks = n,
                       .segments = segs,
                       .page_size = g_page,
                       .max_memory = g_mem,
                       .timeout_ms = 20000,
                       .write_only = g_write_only,
                       .size = -1};
    if (rfs_cc_wrap(f, &c, &w) != RFS_OK)
        return NULL;
    return w;
}

typedef void (*rank_fn)(int rank, int n);

/* Forks n ranks running fn; each must leave sh->result[rank] == 1. */
static void run_ranks(int n, rank_fn fn)
{
    pid_t pid[MAXR];
    for (int r = 0; r < n; r++) {
        pid[r] = fork();
        assert_true(pid[r] >= 0);
        if (pid[r] == 0) {
            fn(r, n);
            _exit(0);
        }
    }
    for (int r = 0; r < n; r++) {
        int st;
        waitpid(pid[r], &st, 0);
    }
    for (int r = 0; r < n; r++) {
        if (sh->result[r] != 1)
            print_error("rank %d: %s\n", r, sh->msg[r]);
        assert_int_equal(sh->result[r], 1);
    }
}

#define FAIL(r, ...)                                          \
    do {                                                      \
        snprintf(sh->msg[r], sizeof sh->msg[r], __VA_ARGS__); \
        sh->result[r] = -1;                                   \
        return;                                               \
    } while (0)

static int file_bytes(uint64_t off, uint8_t *out, size_t n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return 0;
    size_t got = 0;
    if (fseek(fp, (long)off, SEEK_SET) == 0)
        got = fread(out, 1, n, fp);
    fclose(fp);
    return (int)got;
}

/* FLASH-IO-like: rank r writes pieces (i * n + r) of PIECE bytes (some as list I/O), reads its
 * own back at once, syncs; after a barrier and a sync every rank reads every piece. */
#define PIECES 300
#define PIECE 1000u

static void interleaved_rank(int r, int n)
{
    int gen = 0;
    rfs_io *w = open_rank(r, n, 0, 0);
    if (!w)
        FAIL(r, "open: %s", rfs_last_error());
    uint8_t buf[2 * PIECE];
    for (int round = 1; round <= 2; round++) {
        for (int i = 0; i < PIECES; i += 2) {
            uint64_t a = ((uint64_t)i * (uint64_t)n + (uint64_t)r) * PIECE;
            uint64_t b = ((uint64_t)(i + 1) * (uint64_t)n + (uint64_t)r) * PIECE;
            for (unsigned k = 0; k < PIECE; k++) {
                buf[k] = byte_at(a + k, round);
                buf[PIECE + k] = byte_at(b + k, round);
            }
            size_t done = 0;
            int rc;
            if (i % 4 == 0) {
                rfs_extent e[2] = {{a, PIECE}, {b, PIECE}};
                rc = w->ops->pwritev(w, e, 2, buf, &done);
            } else {
                rc = w->ops->pwrite(w, buf, PIECE, a, &done);
                if (rc == RFS_OK)
                    rc = w->ops->pwrite(w, buf + PIECE, PIECE, b, &done);
            }
            if (rc != RFS_OK)
                FAIL(r, "write: %s", rfs_last_error());
        }
        uint8_t got[PIECE];
        size_t done = 0;
        uint64_t a = (uint64_t)r * PIECE;
        if (w->ops->pread(w, got, PIECE, a, &done) != RFS_OK || done != PIECE)
            FAIL(r, "read back: %s", rfs_last_error());
        for (unsigned k = 0; k < PIECE; k++)
            if (got[k] != byte_at(a + k, round))
                FAIL(r, "own byte %llu differs", (unsigned long long)(a + k));
        if (w->ops->sync(w) != RFS_OK)
            FAIL(r, "sync: %s", rfs_last_error());
        test_barrier(n, &gen);
        if (w->ops->sync(w) != RFS_OK)
            FAIL(r, "sync: %s", rfs_last_error());
        /* sync-barrier-sync: every rank's bytes through the cache, and in the file. */
        uint64_t total = (uint64_t)PIECES * (uint64_t)n * PIECE;
        uint8_t *all = malloc(total + 10);
        if (w->ops->pread(w, all, total + 10, 0, &done) != RFS_OK || done != total)
            FAIL(r, "read all: %s (%zu of %llu)", rfs_last_error(), done,
                 (unsigned long long)total);
        for (uint64_t i = 0; i < total; i++)
            if (all[i] != byte_at(i, round))
                FAIL(r, "round %d: byte %llu not visible after sync-barrier-sync", round,
                     (unsigned long long)i);
        if ((uint64_t)file_bytes(0, all, total) != total)
            FAIL(r, "round %d: the file is short after sync-barrier-sync", round);
        for (uint64_t i = 0; i < total; i++)
            if (all[i] != byte_at(i, round))
                FAIL(r, "round %d: file byte %llu stale after sync-barrier-sync", round,
                     (unsigned long long)i);
        free(all);
        uint64_t size = 0;
        if (w->ops->get_size(w, &size) != RFS_OK || size != total)
            FAIL(r, "size %llu", (unsigned long long)size);
        test_barrier(n, &gen); /* nobody writes round 2 while others check round 1 */
    }
    rfs_cc_stats st;
    rfs_cc_get_stats(w, &st);
    if (st.frames_peak > st.frames)
        FAIL(r, "frames peak %llu over %llu", (unsigned long long)st.frames_peak,
             (unsigned long long)st.frames);
    if (st.writes == 0 || st.flushed_pages == 0)
        FAIL(r, "nothing went through the cache");
    if (rfs_cc_flush_mine(w) != RFS_OK)
        FAIL(r, "flush: %s", rfs_last_error());
    test_barrier(n, &gen);
    rfs_cc_detach(w);
    if (w->ops->close(w) != RFS_OK)
        FAIL(r, "close: %s", rfs_last_error());
    sh->result[r] = 1;
}

static void interleaved(int n, uint64_t mem)
{
    g_mem = mem;
    setup_group(n);
    run_ranks(n, interleaved_rank);
    teardown_group(n);
}

static void test_one_rank(void **state)
{
    (void)state;
    interleaved(1, 1 << 20);
}

static void test_two_ranks(void **state)
{
    (void)state;
    interleaved(2, 1 << 20);
}

static void test_four_ranks(void **state)
{
    (void)state;
    interleaved(4, 1 << 20);
}

/* The smallest cap (ranks + 2 pages per rank): pages are written early to make room; the
 * results are the same. */
static void test_memory_cap(void **state)
{
    (void)state;
    interleaved(4, 1);
    assert_int_equal(rfs_cc_frames(4, g_page, 1), 6);
}

/* One process, 4 frames of 4 KiB: page 1, least recently used, is the one written to make room
 * for page 4 (page 0 was read after it); the others are not in the file until sync. */
static void test_lru_order(void **state)
{
    (void)state;
    uint64_t page = g_page, mem = g_mem;
    g_page = 4096;
    g_mem = 4 * 4096;
    setup_group(1);
    rfs_io *w = open_rank(0, 1, 0, 0);
    assert_non_null(w);
    uint8_t b[4096], got[4096];
    size_t done;
    for (int p = 0; p < 4; p++) {
        memset(b, 'a' + p, sizeof b);
        assert_int_equal(w->ops->pwrite(w, b, sizeof b, (uint64_t)p * 4096, &done), RFS_OK);
    }
    assert_int_equal(w->ops->pread(w, got, 100, 0, &done), RFS_OK);
    assert_int_equal(done, 100);
    assert_int_equal(got[0], 'a');
    memset(b, 'e', sizeof b);
    assert_int_equal(w->ops->pwrite(w, b, sizeof b, 4 * 4096, &done), RFS_OK);
    assert_int_equal(file_bytes(4096, got, 4096), 4096);
    for (int i = 0; i < 4096; i++)
        assert_int_equal(got[i], 'b');
    /* pages 0, 2, 3 and 4 not written yet: the file holds zeros (a hole) or nothing there */
    int n0 = file_bytes(0, got, 1);
    assert_true(n0 == 0 || got[0] == 0);
    rfs_cc_stats st;
    rfs_cc_get_stats(w, &st);
    assert_int_equal(st.evictions, 1);
    assert_int_equal(st.frames, 4);
    assert_int_equal(st.frames_peak, 4);
    assert_int_equal(w->ops->sync(w), RFS_OK);
    uint8_t all[5 * 4096];
    assert_int_equal(file_bytes(0, all, sizeof all), sizeof all);
    for (int i = 0; i < 5 * 4096; i++)
        assert_int_equal(all[i], 'a' + i / 4096);
    assert_int_equal(w->ops->close(w), RFS_OK);
    teardown_group(1);
    g_page = page;
    g_mem = mem;
}

/* Four ranks write the same three pages over and over, each its own byte, and read them back:
 * under the page lock a page is never seen half one rank's and half another's. */
static void same_bytes_rank(int r, int n)
{
    int gen = 0;
    rfs_io *w = open_rank(r, n, 0, 0);
    if (!w)
        FAIL(r, "open: %s", rfs_last_error());
    size_t len = 3 * (size_t)g_page;
    uint8_t *b = malloc(len), *got = malloc(len);
    memset(b, 'A' + r, len);
    for (int it = 0; it < 200; it++) {
        size_t done;
        if (w->ops->pwrite(w, b, len, 0, &done) != RFS_OK)
            FAIL(r, "write: %s", rfs_last_error());
        if (w->ops->pread(w, got, len, 0, &done) != RFS_OK || done != len)
            FAIL(r, "read: %s", rfs_last_error());
        for (size_t p = 0; p < 3; p++)
            for (size_t i = 1; i < g_page; i++)
                if (got[p * g_page + i] != got[p * g_page])
                    FAIL(r, "page %zu torn at %zu: %c then %c", p, i, got[p * g_page],
                         got[p * g_page + i]);
    }
    free(b);
    free(got);
    if (w->ops->sync(w) != RFS_OK)
        FAIL(r, "sync: %s", rfs_last_error());
    test_barrier(n, &gen);
    rfs_cc_detach(w);
    if (w->ops->close(w) != RFS_OK)
        FAIL(r, "close: %s", rfs_last_error());
    sh->result[r] = 1;
}

static void test_page_locks(void **state)
{
    (void)state;
    g_mem = 1 << 20;
    setup_group(4);
    run_ranks(4, same_bytes_rank);
    uint8_t got[3 * 16384];
    assert_int_equal(file_bytes(0, got, sizeof got), sizeof got);
    for (int p = 0; p < 3; p++)
        for (int i = 1; i < 16384; i++)
            assert_int_equal(got[p * 16384 + i], got[p * 16384]);
    teardown_group(4);
}

/* 1 once pid is a zombie (its parent, the test, reaps it only at the end). */
static int wait_dead(int pid)
{
    for (int i = 0; i < 30000 && pid > 0; i++) {
        if (rfs_shm_pid_dead(pid))
            return 1;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static int g_hold_lock; /* dead_rank: rank 1 dies holding page 1's lock */

/* Rank 1 writes into pages 0 and 1, syncs (acknowledged), writes more, and is killed (holding
 * page 1's lock with g_hold_lock). Rank 0, whose own unsynced bytes share page 1, hears of it at
 * its next sync, naming rank 1; everything rank 1 synced is in the file. */
static void dead_rank(int r, int n)
{
    rfs_io *w = open_rank(r, n, 0, 0);
    if (!w)
        FAIL(r, "open: %s", rfs_last_error());
    uint8_t b[2000];
    size_t done;
    if (r == 1) {
        for (unsigned k = 0; k < sizeof b; k++)
            b[k] = byte_at(16000 + k, 1);
        if (w->ops->pwrite(w, b, sizeof b, 16000, &done) != RFS_OK || w->ops->sync(w) != RFS_OK)
            FAIL(r, "synced write: %s", rfs_last_error());
        memset(b, 0xEE, sizeof b);
        if (w->ops->pwrite(w, b, 500, 17000, &done) != RFS_OK)
            FAIL(r, "unsynced write: %s", rfs_last_error());
        sh->result[1] = 1;
        __atomic_store_n(&sh->pid1, (int)getpid(), __ATOMIC_SEQ_CST);
        for (int i = 0; i < 60000 && !__atomic_load_n(&sh->die, __ATOMIC_SEQ_CST); i++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        if (g_hold_lock) {
            cc_frame *f;
            if (cc_pin((cc *)w, 1, 1, &f) != RFS_OK)
                sh->result[1] = -1;
        }
        raise(SIGKILL);
    }
    for (int i = 0; i < 60000 && !__atomic_load_n(&sh->pid1, __ATOMIC_SEQ_CST); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    /* rank 0's own unsynced bytes in page 1, next to rank 1's */
    memset(b, 0x55, sizeof b);
    if (w->ops->pwrite(w, b, 100, 20000, &done) != RFS_OK)
        FAIL(r, "write: %s", rfs_last_error());
    __atomic_store_n(&sh->die, 1, __ATOMIC_SEQ_CST);
    if (!wait_dead(__atomic_load_n(&sh->pid1, __ATOMIC_SEQ_CST)))
        FAIL(r, "rank 1 did not die");
    int rc = w->ops->sync(w);
    if (rc != RFS_E_IO || !strstr(rfs_last_error(), "rank 1"))
        FAIL(r, "sync after rank 1 died gave %d (%s)", rc, rfs_last_error());
    /* reported once; the file goes on working */
    memset(b, 0x66, sizeof b);
    if (w->ops->pwrite(w, b, 100, 30000, &done) != RFS_OK || w->ops->sync(w) != RFS_OK)
        FAIL(r, "write after: %s", rfs_last_error());
    uint8_t got[2000];
    if (file_bytes(16000, got, sizeof got) != (int)sizeof got)
        FAIL(r, "cannot read back");
    for (unsigned k = 0; k < sizeof got; k++) {
        uint8_t want = byte_at(16000 + k, 1);
        if (!g_hold_lock && k >= 1000 && k < 1500)
            want = 0xEE; /* the dead rank's unsynced page was not torn: written by rank 0 */
        if (got[k] != want)
            FAIL(r, "byte %u: %u, not %u (acknowledged bytes lost?)", 16000 + k, got[k], want);
    }
    if (file_bytes(30000, got, 100) != 100 || got[0] != 0x66 || got[99] != 0x66)
        FAIL(r, "write after the death not in the file");
    rfs_cc_detach(w);
    if (w->ops->close(w) != RFS_OK)
        FAIL(r, "close: %s", rfs_last_error());
    sh->result[r] = 1;
}

static void test_dead_rank_dirty(void **state)
{
    (void)state;
    g_mem = 1 << 20;
    g_hold_lock = 0;
    setup_group(2);
    run_ranks(2, dead_rank);
    teardown_group(2);
}

static void test_dead_rank_holding_lock(void **state)
{
    (void)state;
    g_mem = 1 << 20;
    g_hold_lock = 1;
    setup_group(2);
    run_ranks(2, dead_rank);
    teardown_group(2);
}

/* A write below that fails: the writer's sync reports it; the other rank whose bytes were in
 * the same page hears of it too. */
static void failing_rank(int r, int n)
{
    int gen = 0;
    rfs_io *w = open_rank(r, n, 20000, 20100);
    if (!w)
        FAIL(r, "open: %s", rfs_last_error());
    uint8_t b[100];
    memset(b, 1 + r, sizeof b);
    size_t done;
    if (w->ops->pwrite(w, b, 100, r == 0 ? 20000 : 24000, &done) != RFS_OK)
        FAIL(r, "write: %s", rfs_last_error());
    test_barrier(n, &gen);
    int rc = w->ops->sync(w);
    if (rc == RFS_OK)
        FAIL(r, "sync did not report the failed write");
    test_barrier(n, &gen);
    rfs_cc_detach(w);
    w->ops->close(w);
    sh->result[r] = 1;
}

static void test_write_fails(void **state)
{
    (void)state;
    g_mem = 1 << 20;
    setup_group(2);
    run_ranks(2, failing_rank);
    teardown_group(2);
}

/* Switched off (atomic mode), accesses go straight below: the file has the bytes at once. */
static void test_disabled_passes_through(void **state)
{
    (void)state;
    g_mem = 1 << 20;
    setup_group(1);
    rfs_io *w = open_rank(0, 1, 0, 0);
    assert_non_null(w);
    uint8_t b[100], got[200];
    memset(b, 9, sizeof b);
    size_t done;
    assert_int_equal(w->ops->pwrite(w, b, 100, 0, &done), RFS_OK);
    assert_int_equal(file_bytes(0, got, 1), 0); /* cached only */
    rfs_cc_set_enabled(w, 0);                   /* flushes it */
    rfs_cc_drop_own(w);
    assert_int_equal(w->ops->pwrite(w, b, 100, 100, &done), RFS_OK);
    assert_int_equal(file_bytes(0, got, 200), 200);
    for (int i = 0; i < 200; i++)
        assert_int_equal(got[i], 9);
    rfs_cc_stats st;
    rfs_cc_get_stats(w, &st);
    assert_int_equal(st.direct_bytes, 100);
    assert_int_equal(st.write_bytes, 100);
    rfs_cc_set_enabled(w, 1);
    assert_int_equal(w->ops->pread(w, got, 200, 0, &done), RFS_OK);
    assert_int_equal(done, 200);
    assert_int_equal(got[150], 9);
    assert_int_equal(w->ops->close(w), RFS_OK);
    teardown_group(1);
}

/* Truncation: cached pages past the new end are forgotten, the size follows. */
static void test_set_size(void **state)
{
    (void)state;
    g_mem = 1 << 20;
    setup_group(1);
    rfs_io *w = open_rank(0, 1, 0, 0);
    assert_non_null(w);
    uint8_t b[40000], got[40000];
    memset(b, 7, sizeof b);
    size_t done;
    uint64_t size;
    assert_int_equal(w->ops->pwrite(w, b, sizeof b, 0, &done), RFS_OK);
    assert_int_equal(w->ops->get_size(w, &size), RFS_OK);
    assert_int_equal(size, 40000);
    assert_int_equal(w->ops->set_size(w, 10000), RFS_OK);
    assert_int_equal(w->ops->get_size(w, &size), RFS_OK);
    assert_int_equal(size, 10000);
    assert_int_equal(w->ops->set_size(w, 30000), RFS_OK);
    assert_int_equal(w->ops->pread(w, got, sizeof got, 0, &done), RFS_OK);
    assert_int_equal(done, 30000);
    assert_int_equal(got[9999], 7);
    assert_int_equal(got[10000], 0);
    assert_int_equal(got[29999], 0);
    assert_int_equal(w->ops->close(w), RFS_OK);
    teardown_group(1);
}

/* Write-only: a page with more dirty pieces than it tracks is written early (the server's bytes
 * around them cannot be read); nothing is read from below. */
static void test_write_only(void **state)
{
    (void)state;
    g_mem = 1 << 20;
    g_write_only = 1;
    setup_group(1);
    rfs_io *w = open_rank(0, 1, 0, 0);
    g_write_only = 0;
    assert_non_null(w);
    uint8_t b[100], got[100];
    memset(b, 3, sizeof b);
    size_t done;
    uint32_t runs = ((cc *)w)->max_runs;
    assert_int_equal(runs, 16);             /* 16 KiB pages: the least */
    for (uint32_t i = 0; i < runs + 1; i++) /* disjoint pieces of page 0 */
        assert_int_equal(w->ops->pwrite(w, b, 10, (uint64_t)i * 100, &done), RFS_OK);
    assert_int_equal(file_bytes(0, got, 10), 10); /* the first 16 went early */
    assert_int_equal(got[0], 3);
    assert_int_equal(file_bytes((uint64_t)runs * 100, got, 10), 0); /* the 17th is cached */
    rfs_cc_stats st;
    rfs_cc_get_stats(w, &st);
    assert_int_equal(st.fills, 0);
    assert_int_equal(st.flushed_pages, 1);
    assert_int_equal(w->ops->sync(w), RFS_OK);
    assert_int_equal(file_bytes((uint64_t)runs * 100, got, 10), 10);
    assert_int_equal(got[9], 3);
    assert_int_equal(w->ops->close(w), RFS_OK);
    teardown_group(1);
}

/* A read over pages nobody caches reads them together (one list read), and a cached dirty page
 * in the middle keeps its bytes over the server's. */
static void test_group_fill(void **state)
{
    (void)state;
    g_mem = 1 << 20;
    setup_group(2);
    rfs_io *w = open_rank(0, 2, 0, 0);
    assert_non_null(w);
    size_t len = 10 * (size_t)g_page + 500;
    uint8_t *b = malloc(len), *got = malloc(len);
    for (size_t i = 0; i < len; i++)
        b[i] = byte_at(i, 3);
    size_t done;
    assert_int_equal(w->ops->pwrite(w, b, len, 0, &done), RFS_OK);
    assert_int_equal(w->ops->sync(w), RFS_OK);
    rfs_cc_set_enabled(w, 0);
    rfs_cc_drop_own(w); /* rank 0's pages; rank 1's segment: dropped below by hand */
    for (uint64_t p = 1; p < 11; p += 2) {
        cc_frame *f;
        assert_int_equal(cc_pin((cc *)w, p, 0, &f), RFS_OK);
        if (f)
            cc_free_frame((cc *)w, 1, f);
    }
    rfs_cc_set_enabled(w, 1);
    uint8_t mid[10];
    memset(mid, 0xAB, sizeof mid);
    assert_int_equal(w->ops->pwrite(w, mid, sizeof mid, 3 * g_page + 7, &done), RFS_OK);
    memcpy(b + 3 * g_page + 7, mid, sizeof mid);
    rfs_cc_stats before, after;
    rfs_cc_get_stats(w, &before);
    assert_int_equal(w->ops->pread(w, got, len + 100, 0, &done), RFS_OK);
    assert_int_equal(done, len);
    assert_memory_equal(got, b, len);
    rfs_cc_get_stats(w, &after);
    assert_int_equal(after.fills - before.fills, 11);
    free(b);
    free(got);
    assert_int_equal(w->ops->close(w), RFS_OK);
    teardown_group(2);
}

static void test_bad_config(void **state)
{
    (void)state;
    rfs_io *f, *w = NULL;
    setup_group(1);
    assert_int_equal(file_io_open(path, 0, 0, &f), RFS_OK);
    rfs_cc_config c = {.rank = 0, .nranks = 1, .segments = segs, .page_size = 100};
    assert_int_equal(rfs_cc_wrap(f, &c, &w), RFS_E_INVAL);
    assert_null(w);
    f->ops->close(f);
    teardown_group(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank),        cmocka_unit_test(test_two_ranks),
        cmocka_unit_test(test_four_ranks),      cmocka_unit_test(test_memory_cap),
        cmocka_unit_test(test_lru_order),       cmocka_unit_test(test_page_locks),
        cmocka_unit_test(test_dead_rank_dirty), cmocka_unit_test(test_dead_rank_holding_lock),
        cmocka_unit_test(test_write_fails),     cmocka_unit_test(test_disabled_passes_through),
        cmocka_unit_test(test_set_size),        cmocka_unit_test(test_write_only),
        cmocka_unit_test(test_group_fill),      cmocka_unit_test(test_bad_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
