/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* End-to-end checks of the public client API (include/rfs/rfs.h) against a real rfsd. Driven
 * by tests/e2e/test_client_api.py, which starts the server and checks the bytes on its disk.
 *
 *   client_api_e2e TEST BASE [ARGS...]
 * BASE is "rfs:HOST:PORT:" (paths are appended). Every test prints "OK" and exits 0, or
 * prints what went wrong and exits 1. Tests that produce file content also write the
 * expected bytes to a local reference file for the Python side to compare with the server's. */
#include "rfs/rfs.h"
#include "rfs/rfs_io.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *base;

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, \
                    #cond, rfs_last_error());                                                 \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)
#define CHECK_RC(expr, want)                                                                   \
    do {                                                                                       \
        int rc_ = (expr);                                                                      \
        if (rc_ != (want)) {                                                                   \
            fprintf(stderr, "%s:%d: %s returned %d (%s), wanted %d: %s\n", __FILE__, __LINE__, \
                    #expr, rc_, rfs_strerror(rc_), (want), rfs_last_error());                  \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static const char *url(const char *path)
{
    static _Thread_local char buf[8][512];
    static _Thread_local int i;
    char *b = buf[i++ % 8];
    snprintf(b, 512, "%s%s", base, path);
    return b;
}

/* Deterministic bytes, different for every (seed, offset). */
static void fill(uint8_t *p, size_t n, uint64_t off, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t x = (off + i) * 0x9E3779B97F4A7C15ull ^ seed;
        x ^= x >> 29;
        p[i] = (uint8_t)(x ^ (x >> 17));
    }
}

static void write_ref(const char *path, const void *p, size_t n)
{
    FILE *fp = fopen(path, "wb");
    CHECK(fp);
    CHECK(fwrite(p, 1, n, fp) == n);
    CHECK(fclose(fp) == 0);
}

static rfs_file *must_open(const char *path, unsigned flags, const rfs_options *o)
{
    rfs_file *f = NULL;
    CHECK_RC(rfs_open(url(path), flags, 0644, o, &f), RFS_OK);
    return f;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- open flags: BASE [streams] (several streams open side by side unless exclusive) ---- */
static int t_flags(int argc, char **argv)
{
    rfs_options opts = {.streams = argc > 3 ? atoi(argv[3]) : 1};
    const rfs_options *o = &opts;
    size_t done;
    rfs_file *f = NULL;
    CHECK_RC(rfs_open(url("/f1"), RFS_O_RDWR | RFS_O_CREAT | RFS_O_EXCL, 0640, o, &f), RFS_OK);
    CHECK_RC(rfs_pwrite(f, "hello world", 11, 0, &done), RFS_OK);
    CHECK(done == 11);
    CHECK_RC(rfs_close(f), RFS_OK);

    f = NULL;
    CHECK_RC(rfs_open(url("/f1"), RFS_O_RDWR | RFS_O_CREAT | RFS_O_EXCL, 0640, o, &f), RFS_E_EXIST);
    CHECK(f == NULL);
    CHECK_RC(rfs_open(url("/nope"), RFS_O_RDONLY, 0, o, &f), RFS_E_NOENT);
    CHECK(strstr(rfs_last_error(), url("/nope")));

    /* read-only: writes refused locally, reads fine */
    f = must_open("/f1", RFS_O_RDONLY, o);
    CHECK_RC(rfs_pwrite(f, "x", 1, 0, &done), RFS_E_ROFS);
    CHECK(strstr(rfs_last_error(), "/f1"));
    CHECK_RC(rfs_set_size(f, 0), RFS_E_ROFS);
    char buf[32] = {0};
    CHECK_RC(rfs_pread(f, buf, sizeof buf, 0, &done), RFS_OK);
    CHECK(done == 11 && memcmp(buf, "hello world", 11) == 0);
    CHECK(strcmp(rfs_file_path(f), "/f1") == 0);
    CHECK(strchr(rfs_file_server(f), ':'));
    CHECK_RC(rfs_close(f), RFS_OK);

    /* write-only: reads are the server's to refuse */
    f = must_open("/f1", RFS_O_WRONLY, o);
    int rc = rfs_pread(f, buf, 4, 0, &done);
    CHECK(rc < 0);
    CHECK(strstr(rfs_last_error(), "/f1"));
    CHECK_RC(rfs_close(f), RFS_OK);

    /* trunc */
    f = must_open("/f1", RFS_O_WRONLY | RFS_O_TRUNC, o);
    uint64_t size = 99;
    CHECK_RC(rfs_get_size(f, &size), RFS_OK);
    CHECK(size == 0);
    CHECK_RC(rfs_close(f), RFS_OK);

    /* append: every write lands at the end, whatever the offset */
    f = must_open("/f2", RFS_O_WRONLY | RFS_O_CREAT | RFS_O_APPEND, o);
    CHECK_RC(rfs_pwrite(f, "abc", 3, 0, &done), RFS_OK);
    CHECK_RC(rfs_pwrite(f, "def", 3, 0, &done), RFS_OK);
    CHECK_RC(rfs_close(f), RFS_OK);

    /* bad combinations */
    CHECK_RC(rfs_open(url("/f1"), RFS_O_RDONLY | RFS_O_TRUNC, 0, o, &f), RFS_E_INVAL);
    rc = rfs_open(url("/f1"), RFS_O_RDONLY | RFS_O_APPEND, 0, o, &f);
    CHECK(rc < 0);
    CHECK_RC(rfs_open(url("/"), RFS_O_RDWR, 0, o, &f), RFS_E_ISDIR);
    puts("OK");
    return 0;
}

/* ---- big contiguous transfer: BASE ref size streams max_frame window ---- */
static int t_bigrw(int argc, char **argv)
{
    CHECK(argc >= 7);
    const char *ref = argv[3];
    size_t size = strtoull(argv[4], NULL, 0);
    rfs_options o = {.streams = atoi(argv[5]), .max_frame = (uint32_t)strtoul(argv[6], NULL, 0)};
    if (argc > 7)
        o.window = atoi(argv[7]);
    uint8_t *w = malloc(size), *r = malloc(size + 4096);
    CHECK(w && r);
    fill(w, size, 0, 1);
    rfs_file *f = must_open("/big", RFS_O_RDWR | RFS_O_CREAT | RFS_O_TRUNC, &o);
    size_t done = 0;
    CHECK_RC(rfs_pwrite(f, w, size, 0, &done), RFS_OK);
    CHECK(done == size);
    CHECK_RC(rfs_sync(f), RFS_OK);
    uint64_t got;
    CHECK_RC(rfs_get_size(f, &got), RFS_OK);
    CHECK(got == size);
    memset(r, 0xEE, size + 4096);
    CHECK_RC(rfs_pread(f, r, size + 4096, 0, &done), RFS_OK); /* asks past EOF */
    CHECK(done == size);
    CHECK(memcmp(w, r, size) == 0);
    /* an unaligned window in the middle */
    size_t off = size / 3 + 1, len = size / 3;
    CHECK_RC(rfs_pread(f, r, len, off, &done), RFS_OK);
    CHECK(done == len && memcmp(w + off, r, len) == 0);
    CHECK_RC(rfs_close(f), RFS_OK);
    write_ref(ref, w, size);
    free(w);
    free(r);
    puts("OK");
    return 0;
}

/* ---- list I/O: BASE ref max_frame ---- */
static int t_listio(int argc, char **argv)
{
    CHECK(argc >= 5);
    const char *ref = argv[3];
    rfs_options o = {.max_frame = (uint32_t)strtoul(argv[4], NULL, 0)};
    enum { N = 20000 };
    rfs_extent *ext = malloc((N + 2) * sizeof *ext);
    size_t n = 0, total = 0;
    uint64_t pos = 0;
    for (int i = 0; i < N; i++) {
        pos += (uint64_t)(i % 7) * 3; /* holes of 0..18 bytes */
        ext[n].offset = pos;
        ext[n].length = 1 + (uint64_t)(i * 37) % 250;
        if (i % 1000 == 999)
            ext[n].length = 0; /* empty extents are allowed */
        pos += ext[n].length;
        total += ext[n].length;
        n++;
    }
    /* one extent much larger than a frame, then a small one after a hole */
    ext[n].offset = pos + 100000;
    ext[n].length = 9u << 20;
    total += ext[n].length;
    pos = ext[n].offset + ext[n].length;
    n++;
    ext[n].offset = pos + 5;
    ext[n].length = 3;
    total += 3;
    pos += 8;
    n++;
    size_t file_size = pos;

    uint8_t *data = malloc(total), *back = malloc(total);
    fill(data, total, 0, 2);
    rfs_file *f = must_open("/list", RFS_O_RDWR | RFS_O_CREAT | RFS_O_TRUNC, &o);
    size_t done = 0;
    CHECK_RC(rfs_pwritev(f, ext, n, data, &done), RFS_OK);
    CHECK(done == total);
    memset(back, 0, total);
    CHECK_RC(rfs_preadv(f, ext, n, back, &done), RFS_OK);
    CHECK(done == total);
    CHECK(memcmp(data, back, total) == 0);

    /* The same extents in reverse order read the same bytes, packed in that order. */
    rfs_extent *rev = malloc(n * sizeof *rev);
    size_t at = total;
    uint8_t *expect = malloc(total);
    size_t eo = 0;
    for (size_t i = 0; i < n; i++) {
        rev[i] = ext[n - 1 - i];
        at -= ext[n - 1 - i].length;
        memcpy(expect + eo, data + at, ext[n - 1 - i].length);
        eo += ext[n - 1 - i].length;
    }
    CHECK_RC(rfs_preadv(f, rev, n, back, &done), RFS_OK);
    CHECK(done == total && memcmp(expect, back, total) == 0);

    /* The file image the server must hold: zeros in the holes. */
    uint8_t *image = calloc(1, file_size);
    size_t d = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(image + ext[i].offset, data + d, ext[i].length);
        d += ext[i].length;
    }
    uint64_t size;
    CHECK_RC(rfs_get_size(f, &size), RFS_OK);
    CHECK(size == file_size);
    CHECK_RC(rfs_close(f), RFS_OK);
    write_ref(ref, image, file_size);
    free(image);
    free(expect);
    free(rev);
    free(data);
    free(back);
    free(ext);
    puts("OK");
    return 0;
}

/* ---- end of file ---- */
static int t_eof(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    rfs_options small = {.max_frame = 65536};
    rfs_file *f = must_open("/eof", RFS_O_RDWR | RFS_O_CREAT | RFS_O_TRUNC, &small);
    uint8_t w[1000];
    fill(w, sizeof w, 0, 3);
    size_t done;
    CHECK_RC(rfs_pwrite(f, w, sizeof w, 0, &done), RFS_OK);
    size_t big = 10u << 20;
    uint8_t *r = malloc(big);
    CHECK_RC(rfs_pread(f, r, 4096, 0, &done), RFS_OK);
    CHECK(done == 1000 && memcmp(r, w, 1000) == 0);
    CHECK_RC(rfs_pread(f, r, 4096, 1000, &done), RFS_OK);
    CHECK(done == 0);
    CHECK_RC(rfs_pread(f, r, 4096, 5000, &done), RFS_OK);
    CHECK(done == 0);
    CHECK_RC(rfs_pread(f, r, big, 1, &done), RFS_OK); /* many frames, EOF in the first */
    CHECK(done == 999 && memcmp(r, w + 1, 999) == 0);
    CHECK_RC(rfs_pread(f, r, 0, 0, &done), RFS_OK);
    CHECK(done == 0);
    rfs_extent e[2] = {{900, 200}, {2000, 10}};
    CHECK_RC(rfs_preadv(f, e, 2, r, &done), RFS_OK);
    CHECK(done == 100 && memcmp(r, w + 900, 100) == 0);
    /* ranges past the largest offset are refused, not wrapped */
    CHECK_RC(rfs_pread(f, r, 10, UINT64_MAX - 3, &done), RFS_E_FBIG);
    rfs_extent huge = {INT64_MAX, 2};
    CHECK_RC(rfs_pwritev(f, &huge, 1, w, &done), RFS_E_FBIG);
    CHECK_RC(rfs_close(f), RFS_OK);
    free(r);
    puts("OK");
    return 0;
}

/* ---- size, preallocate, sync ---- */
static int t_size(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    rfs_file *f = must_open("/sz", RFS_O_RDWR | RFS_O_CREAT | RFS_O_TRUNC, NULL);
    uint64_t size;
    CHECK_RC(rfs_set_size(f, 12345), RFS_OK);
    CHECK_RC(rfs_get_size(f, &size), RFS_OK);
    CHECK(size == 12345);
    CHECK_RC(rfs_preallocate(f, 1 << 20), RFS_OK);
    CHECK_RC(rfs_get_size(f, &size), RFS_OK);
    CHECK(size >= 12345);
    CHECK_RC(rfs_sync(f), RFS_OK);
    CHECK_RC(rfs_set_size(f, 10), RFS_OK);
    CHECK_RC(rfs_get_size(f, &size), RFS_OK);
    CHECK(size == 10);
    CHECK_RC(rfs_set_size(f, UINT64_MAX), RFS_E_FBIG);
    CHECK_RC(rfs_close(f), RFS_OK);
    puts("OK");
    return 0;
}

/* ---- path calls ---- */
typedef struct listing {
    int count;
    int stop_after;
    unsigned char seen[2000];
    int dirs;
} listing;

static int on_entry(void *ctx, const char *entry, const rfs_stat_info *st)
{
    listing *l = ctx;
    l->count++;
    int k;
    if (sscanf(entry, "f%04d", &k) == 1 && k >= 0 && k < 2000) {
        if (l->seen[k]++)
            return -1; /* duplicate: stop, the count check fails */
        if (st->type != RFS_TYPE_FILE || st->size != (uint64_t)(k % 5))
            return -1;
    } else if (st->type == RFS_TYPE_DIR) {
        l->dirs++;
    }
    return l->stop_after && l->count >= l->stop_after;
}

static int t_meta(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    enum { NFILES = 1500 };
    rfs_stat_info st;
    CHECK_RC(rfs_mkdir(url("/d"), 0755, NULL), RFS_OK);
    CHECK_RC(rfs_mkdir(url("/d"), 0755, NULL), RFS_E_EXIST);
    CHECK_RC(rfs_mkdir(url("/d/sub"), 0700, NULL), RFS_OK);
    CHECK_RC(rfs_stat(url("/d"), NULL, &st), RFS_OK);
    CHECK(st.type == RFS_TYPE_DIR);
    /* Keep one file open so the many opens below reuse its connection. */
    rfs_file *keep = must_open("/d/keep", RFS_O_RDWR | RFS_O_CREAT, NULL);
    for (int k = 0; k < NFILES; k++) {
        char p[64];
        snprintf(p, sizeof p, "/d/f%04d", k);
        rfs_file *f = must_open(p, RFS_O_WRONLY | RFS_O_CREAT, NULL);
        size_t done;
        CHECK_RC(rfs_pwrite(f, "abcd", (size_t)(k % 5), 0, &done), RFS_OK);
        CHECK_RC(rfs_close(f), RFS_OK);
    }
    CHECK_RC(rfs_stat(url("/d/f0004"), NULL, &st), RFS_OK);
    CHECK(st.type == RFS_TYPE_FILE && st.size == 4);

    listing l;
    memset(&l, 0, sizeof l);
    CHECK_RC(rfs_list(url("/d"), NULL, on_entry, &l), RFS_OK);
    CHECK(l.count == NFILES + 2); /* + keep + sub */
    for (int k = 0; k < NFILES; k++)
        CHECK(l.seen[k] == 1);
    CHECK(l.dirs == 1);
    memset(&l, 0, sizeof l);
    l.stop_after = 10;
    CHECK_RC(rfs_list(url("/d"), NULL, on_entry, &l), RFS_OK);
    CHECK(l.count == 10);
    CHECK_RC(rfs_list(url("/d/f0001"), NULL, on_entry, &l), RFS_E_NOTDIR);
    CHECK_RC(rfs_list(url("/nodir"), NULL, on_entry, &l), RFS_E_NOENT);

    CHECK_RC(rfs_rename(url("/d/f0001"), "/d/renamed", NULL), RFS_OK);
    CHECK_RC(rfs_stat(url("/d/f0001"), NULL, &st), RFS_E_NOENT);
    CHECK(strstr(rfs_last_error(), "/d/f0001"));
    CHECK_RC(rfs_stat(url("/d/renamed"), NULL, &st), RFS_OK);
    CHECK(st.size == 1);
    CHECK_RC(rfs_rename(url("/d/renamed"), url("/d/renamed2"), NULL), RFS_OK); /* full name */
    CHECK_RC(rfs_rename(url("/d/renamed2"), "rfs:otherhost:1:/x", NULL), RFS_E_INVAL);
    CHECK_RC(rfs_delete(url("/d/renamed2"), NULL), RFS_OK);
    CHECK_RC(rfs_delete(url("/d/renamed2"), NULL), RFS_E_NOENT);
    CHECK_RC(rfs_delete(url("/d/sub"), NULL), RFS_OK); /* empty directory */
    int rc = rfs_delete(url("/d"), NULL);
    CHECK(rc == RFS_E_NOTEMPTY);
    CHECK_RC(rfs_close(keep), RFS_OK);

    double rtt = -1;
    CHECK_RC(rfs_ping(url("/"), NULL, &rtt), RFS_OK);
    CHECK(rtt > 0 && rtt < 60);
    puts("OK");
    return 0;
}

/* ---- errors: BASE refused_name token_file ---- */
static int t_errors(int argc, char **argv)
{
    CHECK(argc >= 5);
    const char *refused = argv[3];
    const char *token_file = argv[4];
    rfs_file *f = NULL;
    rfs_options wrong = {.token = "definitely-not-the-token"};
    CHECK_RC(rfs_open(url("/e"), RFS_O_RDWR | RFS_O_CREAT, 0644, &wrong, &f), RFS_E_AUTH);
    CHECK(f == NULL);
    CHECK(strstr(rfs_last_error(), url("/e")));
    rfs_options none = {.token = ""};
    CHECK_RC(rfs_open(url("/e"), RFS_O_RDWR | RFS_O_CREAT, 0644, &none, &f), RFS_E_AUTH);
    CHECK(strstr(rfs_last_error(), "RFS_TOKEN"));
    CHECK_RC(rfs_stat(url("/"), &wrong, &(rfs_stat_info){0}), RFS_E_AUTH);

    /* $RFS_TOKEN_FILE works when $RFS_TOKEN is not set */
    char *env_token = getenv("RFS_TOKEN") ? strdup(getenv("RFS_TOKEN")) : NULL;
    unsetenv("RFS_TOKEN");
    setenv("RFS_TOKEN_FILE", token_file, 1);
    CHECK_RC(rfs_open(url("/e"), RFS_O_RDWR | RFS_O_CREAT, 0644, NULL, &f), RFS_OK);
    CHECK_RC(rfs_close(f), RFS_OK);
    setenv("RFS_TOKEN_FILE", "/nonexistent/token", 1);
    CHECK_RC(rfs_open(url("/e"), RFS_O_RDWR, 0, NULL, &f), RFS_E_NOENT);
    CHECK(strstr(rfs_last_error(), "RFS_TOKEN_FILE"));
    unsetenv("RFS_TOKEN_FILE");
    if (env_token)
        setenv("RFS_TOKEN", env_token, 1);
    free(env_token);

    /* nothing listening: RFS_E_CONN, quickly */
    double t0 = now_s();
    rfs_options quick = {.connect_timeout_ms = 3000};
    CHECK_RC(rfs_open(refused, RFS_O_RDONLY, 0, &quick, &f), RFS_E_CONN);
    CHECK(strstr(rfs_last_error(), refused));
    CHECK(now_s() - t0 < 30);

    /* server-side errors name the server, the path and the cause */
    CHECK_RC(rfs_stat(url("/no/such/file"), NULL, &(rfs_stat_info){0}), RFS_E_NOENT);
    CHECK(strstr(rfs_last_error(), url("/no/such/file")));
    CHECK_RC(rfs_open(url("/../escape"), RFS_O_RDONLY, 0, NULL, &f), RFS_E_ACCESS);
    CHECK_RC(rfs_open("rfs:127.0.0.1:0:/x", RFS_O_RDONLY, 0, NULL, &f), RFS_E_NAME);
    puts("OK");
    return 0;
}

/* ---- 8 threads, disjoint ranges of one file: BASE ref ---- */
enum { NTHREADS = 8 };
#define REGION ((size_t)(3u << 20) + 12345)

typedef struct worker {
    rfs_file *f;
    int t;
    uint8_t *src;
    int rc;
    char msg[512];
} worker;

static void *writer(void *arg)
{
    worker *w = arg;
    size_t base_off = (size_t)w->t * REGION;
    static const size_t sizes[] = {7, 100000, 1u << 20, 4096, 333333, 65536 + 1};
    size_t at = 0;
    for (int k = 0; at < REGION; k++) {
        size_t n = sizes[(k + w->t) % 6];
        if (n > REGION - at)
            n = REGION - at;
        size_t done = 0;
        int rc = rfs_pwrite(w->f, w->src + base_off + at, n, base_off + at, &done);
        if (rc || done != n) {
            w->rc = rc ? rc : -1;
            snprintf(w->msg, sizeof w->msg, "%s", rfs_last_error());
            return NULL;
        }
        at += n;
    }
    /* read our own region back while the others still write theirs */
    uint8_t *back = malloc(REGION);
    size_t done = 0;
    int rc = rfs_pread(w->f, back, REGION, base_off, &done);
    if (rc || done != REGION || memcmp(back, w->src + base_off, REGION) != 0) {
        w->rc = rc ? rc : -2;
        snprintf(w->msg, sizeof w->msg, "read back: %s", rfs_last_error());
    }
    free(back);
    return NULL;
}

static int t_threads(int argc, char **argv)
{
    CHECK(argc >= 4);
    size_t size = REGION * NTHREADS;
    uint8_t *src = malloc(size);
    fill(src, size, 0, 4);
    rfs_options o = {.max_frame = 256 * 1024, .window = 4};
    rfs_file *f = must_open("/threads", RFS_O_RDWR | RFS_O_CREAT | RFS_O_TRUNC, &o);
    pthread_t th[NTHREADS];
    worker w[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        w[t] = (worker){.f = f, .t = t, .src = src};
        CHECK(pthread_create(&th[t], NULL, writer, &w[t]) == 0);
    }
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        if (w[t].rc) {
            fprintf(stderr, "thread %d: %d %s\n", t, w[t].rc, w[t].msg);
            return 1;
        }
    }
    uint8_t *back = malloc(size);
    size_t done;
    CHECK_RC(rfs_pread(f, back, size, 0, &done), RFS_OK);
    CHECK(done == size && memcmp(back, src, size) == 0);
    CHECK_RC(rfs_close(f), RFS_OK);
    write_ref(argv[3], src, size);
    free(back);
    free(src);
    puts("OK");
    return 0;
}

/* ---- services: counter, locks, views (or RFS_E_UNSUPPORTED) ---- */
static int t_services(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    rfs_file *a = must_open("/svc", RFS_O_RDWR | RFS_O_CREAT | RFS_O_TRUNC, NULL);
    rfs_file *b = must_open("/svc", RFS_O_RDWR, NULL);
    int64_t old = -1;
    int rc = rfs_counter(a, 3, 1, 100, &old);
    if (rc == RFS_E_UNSUPPORTED) {
        puts("counter unsupported");
    } else {
        CHECK_RC(rc, RFS_OK);
        CHECK_RC(rfs_counter(a, 3, 0, 5, &old), RFS_OK);
        CHECK(old == 100);
        CHECK_RC(rfs_counter(b, 3, 0, 1, &old), RFS_OK); /* same file: same counter */
        CHECK(old == 105);
        CHECK_RC(rfs_counter(b, 4, 0, 1, &old), RFS_OK); /* another key starts at 0 */
        CHECK(old == 0);
    }
    rc = rfs_lock(a, 0, 100, RFS_LOCK_EXCL, 0);
    if (rc == RFS_E_UNSUPPORTED) {
        puts("lock unsupported");
    } else {
        CHECK_RC(rc, RFS_OK);
        CHECK_RC(rfs_lock(b, 50, 10, RFS_LOCK_EXCL, 0), RFS_E_BUSY);
        CHECK_RC(rfs_unlock(a, 0, 100), RFS_OK);
        CHECK_RC(rfs_lock(b, 50, 10, RFS_LOCK_SHARED, 0), RFS_OK);
        CHECK_RC(rfs_unlock(b, 50, 10), RFS_OK);
    }
    CHECK_RC(rfs_lock(a, 0, 1, 99, 0), RFS_E_INVAL);
    /* A garbage datatype encoding is refused with an error, not a crash: at once, or (the view
     * is pipelined) by the access that uses it, which then writes nothing. */
    rc = rfs_set_view(a, 1, 0, "\xff\xff\xff\xff", 4);
    if (rc == RFS_OK) {
        size_t wrote = 99;
        rc = rfs_view_write(a, 1, 0, "q", 1, &wrote);
        CHECK(wrote == 0);
    }
    CHECK(rc < 0);
    CHECK_RC(rfs_close(b), RFS_OK);
    CHECK_RC(rfs_close(a), RFS_OK);

    /* the rfs_io face of the client */
    rfs_io *io = NULL;
    CHECK_RC(rfs_io_open_remote(url("/svc"), RFS_O_RDWR, 0, NULL, &io), RFS_OK);
    CHECK(strcmp(io->path, "/svc") == 0 && strchr(io->server, ':'));
    size_t done;
    CHECK_RC(io->ops->pwrite(io, "xyz", 3, 10, &done), RFS_OK);
    char buf[3];
    CHECK_RC(io->ops->pread(io, buf, 3, 10, &done), RFS_OK);
    CHECK(done == 3 && memcmp(buf, "xyz", 3) == 0);
    uint64_t size;
    CHECK_RC(io->ops->get_size(io, &size), RFS_OK);
    CHECK(size == 13);
    CHECK_RC(io->ops->close(io), RFS_OK);
    CHECK_RC(rfs_io_open_remote(url("/missing"), RFS_O_RDONLY, 0, NULL, &io), RFS_E_NOENT);
    CHECK(io == NULL);
    puts("OK");
    return 0;
}

/* ---- views: a SET_VIEW is pipelined with the view op after it once the connection is
 * known to have views; its failure must surface, and must not let data through a stale view.
 * ARGS: streams. The filetype (docs/datatypes.md): two 4-byte runs at 0 and 8 of every 16
 * bytes, the same as tests/e2e/test_server_views.py's STRIDED. ---- */
static const unsigned char strided_enc[] = {
    0x52, 0x46, 0x44, 0x54, 0x01, 0x00, 0x00, 0x00, 0x67, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x04,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

static int t_views(int argc, char **argv)
{
    CHECK(argc >= 4);
    rfs_options o = {.streams = atoi(argv[3])};
    rfs_file *f = must_open("/views", RFS_O_RDWR | RFS_O_CREAT | RFS_O_TRUNC, &o);
    unsigned char data[16], back[16];
    for (int i = 0; i < 16; i++)
        data[i] = (unsigned char)(i + 1);
    size_t done = 0;
    /* (once a view succeeded on the connections, rfs_set_view returns before the server
     * answers: the errors below come from the view op or close that collects the reply) */
    /* first view on these connections: answered before rfs_set_view returns */
    CHECK_RC(rfs_set_view(f, 2, 100, strided_enc, sizeof strided_enc), RFS_OK);
    CHECK_RC(rfs_view_write(f, 2, 0, data, 16, &done), RFS_OK);
    CHECK(done == 16);
    /* a bad view, now sent without waiting: the write through it fails with its error */
    CHECK_RC(rfs_set_view(f, 3, 0, "\xff\xff\xff\xff", 4), RFS_OK);
    done = 99;
    CHECK_RC(rfs_view_write(f, 3, 0, "abcd", 4, &done), RFS_E_INVAL);
    CHECK(done == 0);
    CHECK(strstr(rfs_last_error(), "/views") && strstr(rfs_last_error(), "datatype"));
    /* a bad view over a good one: the old view is gone, nothing lands through it */
    CHECK_RC(rfs_set_view(f, 2, 100, strided_enc, sizeof strided_enc), RFS_OK);
    CHECK_RC(rfs_view_read(f, 2, 0, back, 16, &done), RFS_OK);
    CHECK(done == 16 && memcmp(back, data, 16) == 0);
    CHECK_RC(rfs_set_view(f, 2, 0, "\xff\xff\xff\xff", 4), RFS_OK);
    CHECK_RC(rfs_view_write(f, 2, 0, "wxyz", 4, &done), RFS_E_INVAL);
    /* a failure nobody collected is reported by close */
    CHECK_RC(rfs_set_view(f, 4, 0, "\xff\xff\xff\xff", 4), RFS_OK);
    CHECK_RC(rfs_close(f), RFS_E_INVAL);
    puts("OK");
    return 0;
}

/* ---- server killed mid-transfer: BASE streams ---- */
static int t_kill(int argc, char **argv)
{
    CHECK(argc >= 4);
    rfs_options o = {.streams = atoi(argv[3]), .io_timeout_ms = 60000, .max_frame = 1 << 20};
    rfs_file *f = must_open("/kill", RFS_O_RDWR | RFS_O_CREAT | RFS_O_TRUNC, &o);
    size_t len = 16u << 20;
    uint8_t *buf = malloc(len);
    fill(buf, len, 0, 5);
    int rc = RFS_OK;
    size_t done = 0;
    for (int i = 0; i < 100000 && rc == RFS_OK; i++) {
        rc = rfs_pwrite(f, buf, len, (uint64_t)(i % 4) * len, &done);
        if (i == 0 && rc == RFS_OK) {
            puts("STARTED");
            fflush(stdout);
        }
        if (rc == RFS_OK) {
            rc = rfs_pread(f, buf, len, 0, &done);
        }
    }
    printf("ERR %d %s\n", rc, rfs_last_error());
    CHECK(rc == RFS_E_CONN);
    CHECK(done < len);
    CHECK(strstr(rfs_last_error(), "/kill"));
    /* everything after fails at once, and close still frees */
    uint64_t size;
    CHECK_RC(rfs_get_size(f, &size), RFS_E_CONN);
    CHECK(rfs_close(f) == RFS_E_CONN);
    /* a new open tries a new connection, and the server is gone */
    rfs_options quick = {.connect_timeout_ms = 3000};
    CHECK_RC(rfs_open(url("/kill"), RFS_O_RDONLY, 0, &quick, &f), RFS_E_CONN);
    free(buf);
    puts("OK");
    return 0;
}

/* ---- the write window ---- */
/* Small writes return before their replies (rfs_options.write_window); later writes and reads
 * of the same bytes still see them in order, and a failure is reported by flush or close,
 * once. argv[3]: the reference file the Python side compares with the server's. */
static int t_wwin(int argc, char **argv)
{
    CHECK(argc > 3);
    rfs_options o = {.write_window = 1 << 20};
    rfs_file *f = must_open("/wwin", RFS_O_RDWR | RFS_O_CREAT | RFS_O_TRUNC, &o);
    enum { BLK = 512, NBLK = 500, NW = 2000 };
    static uint8_t expect[BLK * NBLK], got[BLK * NBLK];
    uint8_t blk[BLK];
    for (int i = 0; i < NW; i++) {
        memset(blk, i & 0xff, sizeof blk);
        size_t done = 0;
        CHECK_RC(rfs_pwrite(f, blk, BLK, (uint64_t)(i % NBLK) * BLK, &done), RFS_OK);
        CHECK(done == BLK);
        memset(blk, 0xee, sizeof blk); /* the caller's buffer is free once the call returns */
        memset(expect + (i % NBLK) * BLK, i & 0xff, BLK);
    }
    size_t done = 0;
    CHECK_RC(rfs_pread(f, got, sizeof got, 0, &done), RFS_OK);
    CHECK(done == sizeof got && memcmp(got, expect, sizeof got) == 0);
    CHECK_RC(rfs_sync(f), RFS_OK);
    write_ref(argv[3], expect, sizeof expect);

    /* A VIEW_WRITE through a view never set fails on the server: the call has returned. */
    CHECK_RC(rfs_view_write(f, 7, 0, blk, 100, &done), RFS_OK);
    CHECK(done == 100);
    CHECK_RC(rfs_flush(f), RFS_E_INVAL);
    CHECK(strstr(rfs_last_error(), "reported late") && strstr(rfs_last_error(), "view position"));
    CHECK_RC(rfs_flush(f), RFS_OK); /* reported once */
    CHECK_RC(rfs_view_write(f, 7, 0, blk, 100, &done), RFS_OK);
    CHECK_RC(rfs_close(f), RFS_E_INVAL);

    /* Off: every write waits for its reply and fails at the call. */
    rfs_options off = {0};
    f = must_open("/wwin", RFS_O_RDWR, &off);
    CHECK_RC(rfs_view_write(f, 7, 0, blk, 100, &done), RFS_E_INVAL);
    CHECK_RC(rfs_close(f), RFS_OK);
    puts("OK");
    return 0;
}

/* hold PATH STREAMS SEED: opens PATH with rfs_options.streams = STREAMS, says "OPENED", waits
 * for a line on stdin (so a test can hold several clients' connections at once), then writes
 * 1 MiB of (SEED) bytes through every stream the file has and closes. */
static int t_hold(int argc, char **argv)
{
    CHECK(argc >= 6);
    rfs_options o = {.streams = atoi(argv[4])};
    uint64_t seed = strtoull(argv[5], NULL, 0);
    rfs_file *f = must_open(argv[3], RFS_O_RDWR | RFS_O_CREAT | RFS_O_TRUNC, &o);
    puts("OPENED");
    fflush(stdout);
    char line[16];
    CHECK(fgets(line, sizeof line, stdin) != NULL);
    size_t size = 1u << 20, done = 0;
    uint8_t *w = malloc(size);
    CHECK(w);
    fill(w, size, 0, seed);
    CHECK_RC(rfs_pwrite(f, w, size, 0, &done), RFS_OK);
    CHECK(done == size);
    CHECK_RC(rfs_close(f), RFS_OK);
    free(w);
    puts("OK");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s TEST BASE [ARGS...]\n", argv[0]);
        return 2;
    }
    base = argv[2];
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } tests[] = {
        {"flags", t_flags},       {"bigrw", t_bigrw}, {"listio", t_listio}, {"eof", t_eof},
        {"size", t_size},         {"meta", t_meta},   {"errors", t_errors}, {"threads", t_threads},
        {"services", t_services}, {"kill", t_kill},   {"views", t_views},   {"wwin", t_wwin},
        {"hold", t_hold},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (strcmp(argv[1], tests[i].name) == 0)
            return tests[i].fn(argc, argv);
    fprintf(stderr, "unknown test %s\n", argv[1]);
    return 2;
}
