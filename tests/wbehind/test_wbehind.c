/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Write-behind (wbehind/) between processes sharing memory, without MPI: each test forks the
 * "ranks", which share anonymous MAP_SHARED segments and open the same local file through
 * file_io (as the ranks of a job open the same remote file). The bytes on disk are compared
 * with what the writes meant; a killed rank's peers must report it at sync. */
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

#include "common/err.h"
#include "file_io.h"
#include "wbehind/wb_internal.h"
#include "wbehind/wbehind.h"

#define MAXR 4

typedef struct shared {
    int arrived; /* test barrier */
    int die;     /* test_dead_owner: rank 1 may die now */
    int pid1;    /* test_dead_owner: rank 1's pid */
    int hold;    /* test_rewrites_keep_order, test_flushes_share_a_write: writes below wait */
    int stage;   /* test_flushes_share_a_write: how far rank 0 saw its owner get */
    int result[MAXR];
    char msg[MAXR][256];
} shared;

static char path[256];
static shared *sh;
static void *segs[MAXR];

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

static void setup_group(int n, uint64_t bufsz)
{
    size_t sz = rfs_wb_segment_size(n, bufsz);
    for (int r = 0; r < n; r++) {
        segs[r] = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        assert_true(segs[r] != MAP_FAILED);
    }
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    snprintf(path, sizeof path, "/tmp/rfs-wbtest-%d.dat", (int)getpid());
    unlink(path);
}

static void teardown_group(int n, uint64_t bufsz)
{
    for (int r = 0; r < n; r++)
        munmap(segs[r], rfs_wb_segment_size(n, bufsz));
    munmap(sh, sizeof *sh);
    unlink(path);
}

static rfs_io *open_rank(int rank, int n, uint64_t page, uint64_t bufsz, uint64_t mem,
                         uint64_t fail_lo, uint64_t fail_hi)
{
    rfs_io *f, *w;
    if (file_io_open(path, fail_lo, fail_hi, &f) != RFS_OK)
        return NULL;
    rfs_wb_config c = {.rank = rank,
                       .nranks = n,
                       .segments = segs,
                       .page_size = page,
                       .buffer_size = bufsz,
                       .max_memory = mem,
                       .timeout_ms = 20000};
    if (rfs_wb_wrap(f, &c, &w) != RFS_OK)
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

/* FLASH-IO-like: rank r writes pieces (i * n + r) of `piece` bytes, some as list I/O. */
#define PIECES 600
#define PIECE 1000u
/* A rank's orderly end: its own pages flushed, everyone past that point, then detach and close;
 * result 1 unless the close fails. */
static void close_rank(rfs_io *w, int r, int n, int *gen)
{
    rfs_wb_flush_mine(w);
    test_barrier(n, gen);
    rfs_wb_detach(w);
    if (w->ops->close(w) != RFS_OK)
        FAIL(r, "close: %s", rfs_last_error());
    sh->result[r] = 1;
}

static uint64_t g_page = 16384, g_buf = 4096, g_mem = 1 << 20;

static void interleaved_rank(int r, int n)
{
    int gen = 0;
    rfs_io *w = open_rank(r, n, g_page, g_buf, g_mem, 0, 0);
    if (!w)
        FAIL(r, "open: %s", rfs_last_error());
    uint8_t buf[2 * PIECE];
    for (int i = 0; i < PIECES; i += 2) {
        uint64_t a = ((uint64_t)i * (uint64_t)n + (uint64_t)r) * PIECE;
        uint64_t b = ((uint64_t)(i + 1) * (uint64_t)n + (uint64_t)r) * PIECE;
        for (unsigned k = 0; k < PIECE; k++) {
            buf[k] = byte_at(a + k, 0);
            buf[PIECE + k] = byte_at(b + k, 0);
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
    /* A read sees this rank's own bytes at once. */
    uint8_t got[PIECE];
    size_t done = 0;
    uint64_t a = (uint64_t)r * PIECE;
    if (w->ops->pread(w, got, PIECE, a, &done) != RFS_OK || done != PIECE)
        FAIL(r, "read back: %s", rfs_last_error());
    for (unsigned k = 0; k < PIECE; k++)
        if (got[k] != byte_at(a + k, 0))
            FAIL(r, "own byte %llu differs", (unsigned long long)(a + k));
    if (w->ops->sync(w) != RFS_OK)
        FAIL(r, "sync: %s", rfs_last_error());
    test_barrier(n, &gen);
    /* sync-barrier-sync: every other rank's bytes are in the file now. */
    for (int q = 0; q < n; q++) {
        uint64_t off = (uint64_t)(PIECES - 1) * (uint64_t)n * PIECE + (uint64_t)q * PIECE;
        if (w->ops->pread(w, got, PIECE, off, &done) != RFS_OK || done != PIECE)
            FAIL(r, "read of rank %d: %s", q, rfs_last_error());
        for (unsigned k = 0; k < PIECE; k++)
            if (got[k] != byte_at(off + k, 0))
                FAIL(r, "rank %d's byte %llu not visible after sync-barrier-sync", q,
                     (unsigned long long)(off + k));
    }
    rfs_wb_stats st;
    rfs_wb_get_stats(w, &st);
    if (st.pages_peak * g_page > st.memory_cap)
        FAIL(r, "pages peak %llu over the cap %llu", (unsigned long long)st.pages_peak,
             (unsigned long long)st.memory_cap);
    if (n > 1 && st.posts == 0)
        FAIL(r, "nothing posted");
    close_rank(w, r, n, &gen);
}

static void check_file(int n)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    uint64_t total = (uint64_t)PIECES * (uint64_t)n * PIECE;
    uint8_t *d = malloc(total + 1);
    size_t got = fread(d, 1, total + 1, fp);
    fclose(fp);
    assert_int_equal(got, total);
    for (uint64_t i = 0; i < total; i++)
        if (d[i] != byte_at(i, 0)) {
            print_error("byte %llu: %u != %u\n", (unsigned long long)i, d[i], byte_at(i, 0));
            fail();
        }
    free(d);
}

static void interleaved(int n, uint64_t mem)
{
    g_mem = mem;
    setup_group(n, g_buf);
    run_ranks(n, interleaved_rank);
    check_file(n);
    teardown_group(n, g_buf);
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

/* Two pages per owner: pages go below before they fill, the file is the same. */
static void test_memory_cap(void **state)
{
    (void)state;
    interleaved(4, 2 * 16384);
}

/* Every rank writes its pieces again and again (generations 0..GENS-1) with no flush in
 * between, while writes below are held (a link that fell behind): pages are whole, handed to
 * the sender, and written again, so older copies of them wait in its queue and share its next
 * take. The file must hold the last generation of every byte: no older copy of a page
 * overtakes a newer one. */
#define GENS 6
static void rewrite_rank(int r, int n)
{
    int gen = 0;
    file_io_hold(&sh->hold);
    rfs_io *w = open_rank(r, n, g_page, g_buf, g_mem, 0, 0);
    if (!w)
        FAIL(r, "open: %s", rfs_last_error());
    uint8_t buf[PIECE];
    for (int g = 0; g < GENS; g++)
        for (int i = 0; i < PIECES; i++) {
            uint64_t a = ((uint64_t)i * (uint64_t)n + (uint64_t)r) * PIECE;
            for (unsigned k = 0; k < PIECE; k++)
                buf[k] = byte_at(a + k, g);
            size_t done = 0;
            if (w->ops->pwrite(w, buf, PIECE, a, &done) != RFS_OK)
                FAIL(r, "write: %s", rfs_last_error());
        }
    test_barrier(n, &gen); /* every generation handed over: let the writes go */
    __atomic_store_n(&sh->hold, 0, __ATOMIC_RELEASE);
    if (w->ops->sync(w) != RFS_OK)
        FAIL(r, "sync: %s", rfs_last_error());
    close_rank(w, r, n, &gen);
}

static void test_rewrites_keep_order(void **state)
{
    (void)state;
    int ns[] = {1, 3};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        int n = ns[t];
        g_mem = 16 << 20; /* every copy of every page fits while the writes are held */
        setup_group(n, g_buf);
        sh->hold = 1;
        run_ranks(n, rewrite_rank);
        FILE *fp = fopen(path, "rb");
        assert_non_null(fp);
        uint64_t total = (uint64_t)PIECES * (uint64_t)n * PIECE;
        uint8_t *d = malloc(total + 1);
        assert_non_null(d);
        size_t got = fread(d, 1, total + 1, fp);
        fclose(fp);
        assert_int_equal(got, total);
        for (uint64_t i = 0; i < total; i++)
            if (d[i] != byte_at(i, GENS - 1)) {
                print_error("%d ranks: byte %llu: %u != %u (last generation)\n", n,
                            (unsigned long long)i, d[i], byte_at(i, GENS - 1));
                fail();
            }
        free(d);
        teardown_group(n, g_buf);
    }
}

/* Flush markers not answered yet at rank 0's owner (this process's). */
static uint64_t marks_waiting(rfs_io *io)
{
    wb *w = (wb *)io;
    pthread_mutex_lock(&w->own.qmu);
    uint64_t m = w->own.q_marks;
    pthread_mutex_unlock(&w->own.qmu);
    return m;
}

static int wait_for(int (*cond)(rfs_io *, int), rfs_io *io, int arg)
{
    for (int i = 0; i < 20000; i++) {
        if (cond(io, arg))
            return 1;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static int sender_held(rfs_io *io, int k)
{
    (void)io;
    return file_io_held() >= k;
}

static int marks_at_least(rfs_io *io, int k)
{
    return marks_waiting(io) >= (uint64_t)k;
}

static int stage_at_least(rfs_io *io, int k)
{
    (void)io;
    return __atomic_load_n(&sh->stage, __ATOMIC_ACQUIRE) >= k;
}

/* Ranks 1, 2 and 3 flush one after the other, each with a few bytes of page 0 (rank 0's),
 * while rank 0's sender is held writing rank 1's copy: the queue then holds rank 2's copy,
 * its flush marker, rank 3's copy and its marker. They go in one write below, not one write
 * (and a wait for the answers below) per flush: as at a close, where the ranks' flushes come
 * one after another and the link would otherwise wait a round trip for each. */
static void staggered_rank(int r, int n)
{
    int gen = 0;
    file_io_hold(&sh->hold);
    rfs_io *w = open_rank(r, n, g_page, g_buf, g_mem, 0, 0);
    if (!w)
        FAIL(r, "open: %s", rfs_last_error());
    if (r == 0) {
        /* rank 1's copy is being written (held); then each flush's marker is queued */
        if (!wait_for(sender_held, w, 1))
            FAIL(r, "the sender never wrote rank 1's copy");
        int calls0 = file_io_write_calls();
        __atomic_store_n(&sh->stage, 1, __ATOMIC_RELEASE);
        if (!wait_for(marks_at_least, w, 2))
            FAIL(r, "rank 2's flush never reached the owner");
        __atomic_store_n(&sh->stage, 2, __ATOMIC_RELEASE);
        if (!wait_for(marks_at_least, w, 3))
            FAIL(r, "rank 3's flush never reached the owner");
        __atomic_store_n(&sh->hold, 0, __ATOMIC_RELEASE);
        test_barrier(n, &gen); /* every flush answered */
        int calls = file_io_write_calls() - calls0;
        if (calls != 1)
            FAIL(r, "ranks 2 and 3's copies took %d writes below, not 1", calls);
    } else {
        if (r > 1 && !wait_for(stage_at_least, w, r - 1))
            FAIL(r, "rank 0 never saw the earlier flush queued");
        uint8_t buf[PIECE];
        uint64_t off = (uint64_t)r * 3000; /* disjoint pieces of page 0 */
        for (unsigned k = 0; k < PIECE; k++)
            buf[k] = byte_at(off + k, 0);
        size_t done = 0;
        if (w->ops->pwrite(w, buf, PIECE, off, &done) != RFS_OK)
            FAIL(r, "write: %s", rfs_last_error());
        if (w->ops->sync(w) != RFS_OK)
            FAIL(r, "sync: %s", rfs_last_error());
        test_barrier(n, &gen);
    }
    close_rank(w, r, n, &gen);
}

static void test_flushes_share_a_write(void **state)
{
    (void)state;
    g_mem = 1 << 20;
    setup_group(4, g_buf);
    sh->hold = 1;
    run_ranks(4, staggered_rank);
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    uint8_t d[4 * 3000];
    size_t got = fread(d, 1, sizeof d, fp);
    fclose(fp);
    assert_int_equal(got, 3 * 3000 + PIECE);
    for (uint64_t r = 1; r < 4; r++)
        for (uint64_t k = 0; k < PIECE; k++)
            assert_int_equal(d[r * 3000 + k], byte_at(r * 3000 + k, 0));
    teardown_group(4, g_buf);
}

/* The owner's write of a page fails: the rank whose bytes it held hears of it at sync; the
 * owner's own bytes, elsewhere, are fine. */
static void failing_rank(int r, int n)
{
    int gen = 0;
    /* page 1 ([16K, 32K)) belongs to rank 1; its writes of [20000, 20100) fail */
    rfs_io *w = open_rank(r, n, g_page, g_buf, g_mem, 20000, 20100);
    if (!w)
        FAIL(r, "open: %s", rfs_last_error());
    uint8_t buf[200];
    memset(buf, 7, sizeof buf);
    size_t done;
    uint64_t off = r == 0 ? 20000 : 40000; /* rank 1 writes into its own page 2... of rank 0 */
    if (w->ops->pwrite(w, buf, sizeof buf, off, &done) != RFS_OK)
        FAIL(r, "write: %s", rfs_last_error());
    int rc = w->ops->sync(w);
    if (r == 0 && (rc != RFS_E_IO || !strstr(rfs_last_error(), "rank 1")))
        FAIL(r, "sync gave %d (%s), not RFS_E_IO naming rank 1", rc, rfs_last_error());
    if (r == 1 && rc != RFS_OK)
        FAIL(r, "sync of rank 1: %s", rfs_last_error());
    /* reported once */
    if (w->ops->sync(w) != RFS_OK)
        FAIL(r, "second sync: %s", rfs_last_error());
    rfs_wb_flush_mine(w);
    test_barrier(n, &gen);
    rfs_wb_detach(w);
    w->ops->close(w);
    sh->result[r] = 1;
}

static void test_owner_write_fails(void **state)
{
    (void)state;
    g_mem = 1 << 20;
    setup_group(2, g_buf);
    run_ranks(2, failing_rank);
    teardown_group(2, g_buf);
}

/* The close's flush (rfs_wb_flush_closing): owners answer once a rank's bytes are sent,
 * without waiting for the layer below's answers (no flush below before the close), and a
 * failure only the owner's close learns (a write that returned before its reply, as through
 * the write window) still reaches the rank whose bytes it held: rfs_wb_closing_error names
 * the owner once every rank has closed. */
static void closing_rank(int r, int n)
{
    int gen = 0;
    file_io_fail_late(1);
    /* page 1 ([16K, 32K)) belongs to rank 1; its writes of [20000, 20100) fail late */
    rfs_io *w = open_rank(r, n, g_page, g_buf, g_mem, 20000, 20100);
    if (!w)
        FAIL(r, "open: %s", rfs_last_error());
    uint8_t buf[200];
    memset(buf, 9, sizeof buf);
    size_t done;
    uint64_t off = r == 0 ? 20000 : 40000; /* rank 0 into rank 1's page, rank 1 into rank 0's */
    if (w->ops->pwrite(w, buf, sizeof buf, off, &done) != RFS_OK)
        FAIL(r, "write: %s", rfs_last_error());
    rfs_wb_flush_closing(w);
    test_barrier(n, &gen);
    rfs_wb_detach(w);
    test_barrier(n, &gen);
    int flushes = file_io_flush_calls();
    if (flushes != 0)
        FAIL(r, "%d flushes below before the close", flushes);
    int rc = w->ops->close(w);
    if (r == 1 && (rc != RFS_E_IO || !strstr(rfs_last_error(), "reported late")))
        FAIL(r, "owner's close gave %d (%s), not its page's late failure", rc, rfs_last_error());
    if (r == 0 && rc != RFS_OK)
        FAIL(r, "close: %s", rfs_last_error());
    test_barrier(n, &gen); /* every owner has closed */
    int owner = -1;
    int e = rfs_wb_closing_error(segs, r, n, g_buf, &owner);
    if (r == 0 && (e != RFS_E_IO || owner != 1))
        FAIL(r, "closing error %d from rank %d, not RFS_E_IO from rank 1", e, owner);
    if (r == 1 && e != RFS_OK)
        FAIL(r, "closing error %d from rank %d: rank 1's bytes went well", e, owner);
    FILE *fp = fopen(path, "rb");
    uint8_t got[200];
    if (!fp || fseek(fp, 40000, SEEK_SET) != 0 || fread(got, 1, sizeof got, fp) != sizeof got)
        FAIL(r, "cannot read back");
    fclose(fp);
    if (memcmp(got, buf, sizeof got))
        FAIL(r, "rank 1's bytes (in rank 0's page) are not in the file");
    sh->result[r] = 1;
}

static void test_closing_flush(void **state)
{
    (void)state;
    g_mem = 1 << 20;
    setup_group(2, g_buf);
    run_ranks(2, closing_rank);
    teardown_group(2, g_buf);
}

/* A close's last pages follow one another through the layer below's write window instead of
 * going as one list write that returns only once answered: each rank writes the first half of
 * three pages of every owner (partial pages, so its closing flush hands them over together,
 * one take per owner), and every rank's closing flush is answered while the layer below
 * still holds the answers of every list write. Against a sender that wrote the take as one
 * list write, the flush waits for those answers (20 s here) and the owner counts a held write.
 * The bytes are all in the file after the close. */
static void flowing_rank(int r, int n)
{
    int gen = 0;
    file_io_window(&sh->hold);
    rfs_io *w = open_rank(r, n, g_page, g_buf, g_mem, 0, 0);
    if (!w)
        FAIL(r, "open: %s", rfs_last_error());
    uint8_t buf[PIECE];
    for (uint64_t pg = 0; pg < 3 * (uint64_t)n; pg++) {
        uint64_t off = pg * g_page + (uint64_t)r * PIECE; /* disjoint halves per rank */
        for (unsigned k = 0; k < PIECE; k++)
            buf[k] = byte_at(off + k, 2);
        size_t done = 0;
        if (w->ops->pwrite(w, buf, PIECE, off, &done) != RFS_OK)
            FAIL(r, "write: %s", rfs_last_error());
    }
    rfs_wb_flush_closing(w);
    int held = file_io_held();
    test_barrier(n, &gen); /* every rank's closing flush answered */
    if (held)
        FAIL(r, "the closing pages waited for the answers of %d list write(s)", held);
    __atomic_store_n(&sh->hold, 0, __ATOMIC_RELEASE);
    rfs_wb_detach(w);
    test_barrier(n, &gen);
    if (w->ops->close(w) != RFS_OK)
        FAIL(r, "close: %s", rfs_last_error());
    test_barrier(n, &gen);
    int owner = -1;
    if (rfs_wb_closing_error(segs, r, n, g_buf, &owner) != RFS_OK)
        FAIL(r, "closing error from rank %d", owner);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        FAIL(r, "cannot read back");
    for (uint64_t pg = 0; pg < 3 * (uint64_t)n; pg++)
        for (int q = 0; q < n; q++) {
            uint64_t off = pg * g_page + (uint64_t)q * PIECE;
            if (fseek(fp, (long)off, SEEK_SET) != 0 || fread(buf, 1, PIECE, fp) != PIECE) {
                fclose(fp);
                FAIL(r, "cannot read back page %llu", (unsigned long long)pg);
            }
            for (unsigned k = 0; k < PIECE; k++)
                if (buf[k] != byte_at(off + k, 2)) {
                    fclose(fp);
                    FAIL(r, "rank %d's byte %llu lost", q, (unsigned long long)(off + k));
                }
        }
    fclose(fp);
    sh->result[r] = 1;
}

static void test_closing_pages_flow(void **state)
{
    (void)state;
    g_mem = 1 << 20;
    setup_group(2, g_buf);
    sh->hold = 1;
    run_ranks(2, flowing_rank);
    teardown_group(2, g_buf);
}

/* 1 once pid is a zombie (its parent, the test, reaps it only at the end). */
static int wait_dead(int pid)
{
    char p[64], st[256];
    snprintf(p, sizeof p, "/proc/%d/stat", pid);
    for (int i = 0; i < 30000 && pid > 0; i++) {
        FILE *fp = fopen(p, "r");
        if (!fp)
            return 1;
        size_t n = fread(st, 1, sizeof st - 1, fp);
        fclose(fp);
        st[n] = '\0';
        const char *rp = strrchr(st, ')');
        if (rp && rp[2] == 'Z')
            return 1;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* Rank 1 dies holding rank 0's bytes in a page: rank 0's sync fails naming it; what rank 0
 * synced before is in the file, and its later writes go straight below. */
static void dead_rank(int r, int n)
{
    rfs_io *w = open_rank(r, n, g_page, g_buf, g_mem, 0, 0);
    if (!w)
        FAIL(r, "open: %s", rfs_last_error());
    if (r == 1) {
        sh->result[1] = 1;
        __atomic_store_n(&sh->pid1, (int)getpid(), __ATOMIC_SEQ_CST);
        for (int i = 0; i < 60000 && !__atomic_load_n(&sh->die, __ATOMIC_SEQ_CST); i++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        raise(SIGKILL);
    }
    uint8_t buf[3 * 4096];
    size_t done;
    for (unsigned k = 0; k < sizeof buf; k++)
        buf[k] = byte_at(16384 + k, 1);
    /* acknowledged: in page 1 (rank 1's), then synced */
    if (w->ops->pwrite(w, buf, 1000, 16384, &done) != RFS_OK || w->ops->sync(w) != RFS_OK)
        FAIL(r, "first write: %s", rfs_last_error());
    /* three sub-buffers' worth into page 1: the second post waits until rank 1 took the
     * first, so rank 1 holds some of these bytes when it dies */
    if (w->ops->pwrite(w, buf, sizeof buf, 16384 + 1000, &done) != RFS_OK)
        FAIL(r, "second write: %s", rfs_last_error());
    __atomic_store_n(&sh->die, 1, __ATOMIC_SEQ_CST);
    if (!wait_dead(__atomic_load_n(&sh->pid1, __ATOMIC_SEQ_CST)))
        FAIL(r, "rank 1 did not die");
    int rc = w->ops->sync(w);
    if (rc != RFS_E_IO || !strstr(rfs_last_error(), "rank 1"))
        FAIL(r, "sync after rank 1 died gave %d (%s)", rc, rfs_last_error());
    /* from now on rank 0 writes page 1 itself */
    if (w->ops->pwrite(w, buf, 500, 16384 + 5000, &done) != RFS_OK || w->ops->sync(w) != RFS_OK)
        FAIL(r, "write after: %s", rfs_last_error());
    rfs_wb_detach(w);
    w->ops->close(w);
    FILE *fp = fopen(path, "rb");
    uint8_t got[1000];
    if (!fp || fseek(fp, 16384, SEEK_SET) != 0 || fread(got, 1, 1000, fp) != 1000)
        FAIL(r, "cannot read back");
    fclose(fp);
    for (unsigned k = 0; k < 1000; k++)
        if (got[k] != buf[k])
            FAIL(r, "acknowledged byte %u lost", k);
    sh->result[r] = 1;
}

static void test_dead_owner(void **state)
{
    (void)state;
    g_mem = 1 << 20;
    setup_group(2, g_buf);
    run_ranks(2, dead_rank);
    teardown_group(2, g_buf);
}

/* Switched off (atomic mode), writes go straight below: the file has them without a flush. */
static void test_disabled_passes_through(void **state)
{
    (void)state;
    setup_group(1, g_buf);
    rfs_io *w = open_rank(0, 1, g_page, g_buf, g_mem, 0, 0);
    assert_non_null(w);
    uint8_t b[100];
    memset(b, 9, sizeof b);
    size_t done;
    assert_int_equal(w->ops->pwrite(w, b, 100, 0, &done), RFS_OK);
    rfs_wb_set_enabled(w, 0); /* flushes the buffered bytes */
    assert_int_equal(w->ops->pwrite(w, b, 100, 100, &done), RFS_OK);
    FILE *fp = fopen(path, "rb");
    uint8_t got[200];
    assert_int_equal(fread(got, 1, 200, fp), 200);
    fclose(fp);
    for (int i = 0; i < 200; i++)
        assert_int_equal(got[i], 9);
    rfs_wb_stats st;
    rfs_wb_get_stats(w, &st);
    assert_int_equal(st.direct_bytes, 100);
    assert_int_equal(w->ops->close(w), RFS_OK);
    teardown_group(1, g_buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank),
        cmocka_unit_test(test_two_ranks),
        cmocka_unit_test(test_four_ranks),
        cmocka_unit_test(test_memory_cap),
        cmocka_unit_test(test_rewrites_keep_order),
        cmocka_unit_test(test_flushes_share_a_write),
        cmocka_unit_test(test_closing_flush),
        cmocka_unit_test(test_closing_pages_flow),
        cmocka_unit_test(test_owner_write_fails),
        cmocka_unit_test(test_dead_owner),
        cmocka_unit_test(test_disabled_passes_through),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
