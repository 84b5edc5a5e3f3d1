/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* ABT layer over an in-memory rfs_io: buffering, ordering, staging, deferred close and
 * deferred errors, the journal, and the eq. (1) model. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "abt/abt.h"
#include "client/runtime.h"
#include "abt/journal.h"
#include "abt/model.h"
#include "fake_io.h"
#include "../client/io_slots.h"

static char staging[256];
/* Each test runs in a runtime of its own (its own ABT engine: pool, queue, journals, threads),
 * made by setup and destroyed by teardown, instead of sharing the process's. */
static rfs_runtime *rt;

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    if (d)
        closedir(d);
    return n;
}

static int setup(void **state)
{
    (void)state;
    snprintf(staging, sizeof staging, "/tmp/rfs-abt-test-XXXXXX");
    assert_non_null(mkdtemp(staging));
    return rfs_runtime_create(&rt) == RFS_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rfs_runtime_destroy(rt);
    rt = NULL;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", staging);
    return system(cmd);
}

/* The path of the (one) journal left in the staging directory; "" when there is none. */
static void journal_path(char *path, size_t cap)
{
    DIR *d = opendir(staging);
    struct dirent *e;
    path[0] = '\0';
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            snprintf(path, cap, "%s/%s", staging, e->d_name);
    closedir(d);
}

static rfs_abt_config cfg(uint64_t cap, uint64_t bufsize)
{
    rfs_abt_config c;
    rfs_abt_config_default(&c);
    c.max_memory = cap;
    c.buffer_size = bufsize;
    c.staging_dir = staging;
    c.background_staging = 0;
    c.rt = rt;
    return c;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 31u + seed * 7u + (i >> 9));
}

/* The write returns while the layer below is still blocked: the data was only buffered. */
static void test_write_returns_before_delivery(void **state)
{
    (void)state;
    fake_io *fk = fake_io_new();
    fake_io_gate(fk, 1);
    rfs_abt_config c = cfg(64u << 20, 1u << 20);
    rfs_io *io;
    assert_int_equal(rfs_abt_wrap(&fk->io, "rfs:fake:1:/a", &c, &io), RFS_OK);
    size_t n = 5u << 20;
    uint8_t *buf = malloc(n), *copy = malloc(n);
    fill(buf, n, 1);
    memcpy(copy, buf, n);
    size_t done = 0;
    assert_int_equal(io->ops->pwrite(io, buf, n, 1000, &done), RFS_OK);
    assert_int_equal(done, n);
    memset(buf, 0, n); /* the application may reuse its buffer at once */
    assert_true(fake_io_wait_blocked(fk, 1));
    assert_int_equal(fk->bytes_written, 0);
    fake_io_gate(fk, 0);
    assert_int_equal(io->ops->sync(io), RFS_OK);
    assert_int_equal(fk->size, 1000 + n);
    assert_memory_equal(fk->data + 1000, copy, n);
    assert_true(fk->syncs >= 1);
    assert_int_equal(io->ops->close(io), RFS_OK);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_OK);
    assert_int_equal(count_files(staging), 0);
    free(buf), free(copy), free(fk->data), free(fk);
}

/* Overlapping writes reach the file in program order even with several sender threads. */
static void test_overlapping_writes_keep_order(void **state)
{
    (void)state;
    fake_io *fk = fake_io_new();
    rfs_abt_config c = cfg(64u << 20, 64u << 10);
    c.threads = 8;
    rfs_io *io;
    assert_int_equal(rfs_abt_wrap(&fk->io, "rfs:fake:1:/b", &c, &io), RFS_OK);
    uint8_t v[4096];
    for (int round = 0; round < 200; round++) {
        memset(v, round & 0xff, sizeof v);
        assert_int_equal(io->ops->pwrite(io, v, sizeof v, (uint64_t)(round % 7) * 1000, NULL),
                         RFS_OK);
    }
    assert_int_equal(io->ops->close(io), RFS_OK);
    /* Last writer of each byte wins: rounds 193..199 wrote offsets (r%7)*1000. */
    uint8_t expect[4096 + 6000];
    memset(expect, 0, sizeof expect);
    for (int round = 0; round < 200; round++)
        memset(expect + (round % 7) * 1000, round & 0xff, 4096);
    assert_int_equal(fk->size, 6000 + 4096);
    assert_memory_equal(fk->data, expect, sizeof expect);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_OK);
    free(fk->data), free(fk);
}

/* rfs_abt_threads is a file's own setting: a file opened first with one sender neither holds
 * back a later file that asks for five (the engine adds senders) nor sends more than one of
 * its own chunks at a time while senders are idle. */
static void test_threads_are_per_file(void **state)
{
    (void)state;
    fake_io *fa = fake_io_new(), *fb = fake_io_new();
    fake_io_gate(fa, 1);
    fake_io_gate(fb, 1);
    rfs_abt_config ca = cfg(64u << 20, 1u << 20), cb = ca;
    ca.threads = 1;
    cb.threads = 5;
    rfs_io *a, *b;
    assert_int_equal(rfs_abt_wrap(&fa->io, "rfs:fake:1:/ta", &ca, &a), RFS_OK);
    assert_int_equal(rfs_abt_wrap(&fb->io, "rfs:fake:1:/tb", &cb, &b), RFS_OK);
    size_t n = 1u << 20;
    uint8_t *buf = malloc(n);
    fill(buf, n, 3);
    for (uint64_t i = 0; i < 3; i++)
        assert_int_equal(a->ops->pwrite(a, buf, n, i * n, NULL), RFS_OK);
    assert_true(fake_io_wait_blocked(fa, 1));
    /* Five senders: had A's idle ones taken its two other chunks, B would get two. */
    for (uint64_t i = 0; i < 4; i++)
        assert_int_equal(b->ops->pwrite(b, buf, n, i * n, NULL), RFS_OK);
    assert_true(fake_io_wait_blocked(fb, 4));
    pthread_mutex_lock(&fa->mu);
    assert_int_equal(fa->writes_waiting, 1);
    pthread_mutex_unlock(&fa->mu);
    fake_io_gate(fa, 0);
    fake_io_gate(fb, 0);
    assert_int_equal(a->ops->close(a), RFS_OK);
    assert_int_equal(b->ops->close(b), RFS_OK);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_OK);
    assert_int_equal(fa->size, 3 * n);
    assert_int_equal(fb->size, 4 * n);
    for (uint64_t i = 0; i < 3; i++)
        assert_memory_equal(fa->data + i * n, buf, n);
    for (uint64_t i = 0; i < 4; i++)
        assert_memory_equal(fb->data + i * n, buf, n);
    free(buf);
    free(fa->data), free(fa), free(fb->data), free(fb);
}

/* A read of buffered bytes sees the new data. */
static void test_read_sees_buffered_writes(void **state)
{
    (void)state;
    fake_io *fk = fake_io_new();
    rfs_abt_config c = cfg(64u << 20, 1u << 20);
    rfs_io *io;
    assert_int_equal(rfs_abt_wrap(&fk->io, "rfs:fake:1:/c", &c, &io), RFS_OK);
    uint8_t w[3000], r[3000];
    fill(w, sizeof w, 9);
    for (int i = 0; i < 50; i++) {
        w[0] = (uint8_t)i;
        assert_int_equal(io->ops->pwrite(io, w, sizeof w, 500, NULL), RFS_OK);
        size_t got = 0;
        assert_int_equal(io->ops->pread(io, r, sizeof r, 500, &got), RFS_OK);
        assert_int_equal(got, sizeof r);
        assert_memory_equal(r, w, sizeof w);
    }
    uint64_t size;
    assert_int_equal(io->ops->get_size(io, &size), RFS_OK);
    assert_int_equal(size, 3500);
    assert_int_equal(io->ops->close(io), RFS_OK);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_OK);
    free(fk->data), free(fk);
}

/* get_size answers without waiting for buffered writes (HDF5 asks at every flush and close:
 * waiting there undid the deferred close), yet counts them: the size is at least the end of
 * this process's queued writes, and the server's size when that is larger. A barrier's flush
 * delivers them; set_size still waits for them first. */
static void test_get_size_counts_queued_writes_without_waiting(void **state)
{
    (void)state;
    fake_io *fk = fake_io_new();
    rfs_abt_config c = cfg(64u << 20, 1u << 20);
    rfs_io *io;
    assert_int_equal(rfs_abt_wrap(&fk->io, "rfs:fake:1:/size", &c, &io), RFS_OK);
    uint8_t w[5000];
    fill(w, sizeof w, 3);
    assert_int_equal(io->ops->pwrite(io, w, 100, 0, NULL), RFS_OK);
    assert_int_equal(io->ops->flush(io, 1), RFS_OK);
    assert_int_equal(fk->size, 100);
    fake_io_gate(fk, 1);
    assert_int_equal(io->ops->pwrite(io, w, sizeof w, 1000, NULL), RFS_OK);
    assert_true(fake_io_wait_blocked(fk, 1));
    uint64_t size = 0;
    assert_int_equal(io->ops->get_size(io, &size), RFS_OK);
    assert_int_equal(size, 6000);
    assert_int_equal(fk->size, 100); /* not delivered: get_size did not wait for it */
    /* A larger file on the server wins over the queued end. */
    pthread_mutex_lock(&fk->mu);
    fk->size = 9000;
    pthread_mutex_unlock(&fk->mu);
    assert_int_equal(io->ops->get_size(io, &size), RFS_OK);
    assert_int_equal(size, 9000);
    pthread_mutex_lock(&fk->mu);
    fk->size = 100;
    pthread_mutex_unlock(&fk->mu);
    fake_io_gate(fk, 0);
    assert_int_equal(io->ops->flush(io, 1), RFS_OK); /* what MPI_Barrier calls */
    assert_int_equal(fk->size, 6000);
    assert_memory_equal(fk->data + 1000, w, sizeof w);
    assert_int_equal(io->ops->get_size(io, &size), RFS_OK);
    assert_int_equal(size, 6000);
    assert_int_equal(io->ops->set_size(io, 20), RFS_OK);
    assert_int_equal(io->ops->get_size(io, &size), RFS_OK);
    assert_int_equal(size, 20);
    assert_int_equal(io->ops->close(io), RFS_OK);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_OK);
    free(fk->data), free(fk);
}

/* A memory cap smaller than one buffer forces every write through the journal. */
static void test_tiny_cap_forces_foreground_staging(void **state)
{
    (void)state;
    fake_io *fk = fake_io_new();
    fake_io_gate(fk, 1);
    rfs_abt_config c = cfg(1, 256u << 10);
    rfs_io *io;
    assert_int_equal(rfs_abt_wrap(&fk->io, "rfs:fake:1:/d", &c, &io), RFS_OK);
    size_t n = 3u << 20;
    uint8_t *buf = malloc(n);
    fill(buf, n, 3);
    /* Noncontiguous too: every other 10 KiB block. */
    rfs_extent ext[100];
    for (int i = 0; i < 100; i++)
        ext[i] = (rfs_extent){(uint64_t)i * 20480u, 10240u};
    assert_int_equal(io->ops->pwrite(io, buf, n, 4u << 20, NULL), RFS_OK);
    assert_int_equal(io->ops->pwritev(io, ext, 100, buf, NULL), RFS_OK);
    assert_int_equal(count_files(staging), 1); /* the journal holds the staged data */
    rfs_abt_stats st;
    rfs_abt_get_stats_in(rt, &st);
    assert_int_equal(st.bytes_staged_fg, n + 100u * 10240u);
    assert_int_equal(st.bytes_buffered, 0);
    fake_io_gate(fk, 0);
    assert_int_equal(io->ops->close(io), RFS_OK);
    assert_memory_equal(fk->data + (4u << 20), buf, n);
    for (int i = 0; i < 100; i++)
        assert_memory_equal(fk->data + i * 20480, buf + i * 10240, 10240);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_OK);
    assert_int_equal(count_files(staging), 0); /* nothing left after a clean run */
    free(buf), free(fk->data), free(fk);
}

/* A gathered write (memory runs, no packed copy) lands as the packed bytes would, whether the
 * runs fit ABT's buffers or span them, in memory or (cap 0: every piece staged, gathered into
 * one block first) through the journal; a size mismatch between runs and extents is refused. */
static void gather_into(uint64_t cap, uint64_t bufsize, const char *name)
{
    fake_io *fk = fake_io_new();
    rfs_abt_config c = cfg(cap, bufsize);
    rfs_io *io;
    assert_int_equal(rfs_abt_wrap(&fk->io, name, &c, &io), RFS_OK);
    assert_non_null(io->ops->pwritev_gather);
    size_t n = 3u << 20;
    uint8_t *mem = malloc(2 * n);
    fill(mem, 2 * n, 5);
    /* 700 runs of 3000 bytes every 6000 bytes, plus one last run up to n bytes in all */
    struct iovec iov[701];
    size_t k = 0, total = 0;
    for (; k < 700 && total + 3000 <= n; k++, total += 3000)
        iov[k] = (struct iovec){mem + k * 6000, 3000};
    iov[k++] = (struct iovec){mem + 5000000, n - total};
    uint8_t *want = malloc(n);
    for (size_t i = 0, at = 0; i < k; at += iov[i].iov_len, i++)
        memcpy(want + at, iov[i].iov_base, iov[i].iov_len);
    rfs_extent ext[2] = {{4096, n / 2}, {n, n - n / 2}}; /* a hole between the two */
    size_t done = 0;
    assert_int_equal(io->ops->pwritev_gather(io, ext, 2, iov, k, &done), RFS_OK);
    assert_int_equal(done, n);
    rfs_extent bad = {0, n + 1};
    assert_int_equal(io->ops->pwritev_gather(io, &bad, 1, iov, k, &done), RFS_E_INVAL);
    assert_int_equal(io->ops->close(io), RFS_OK);
    assert_memory_equal(fk->data + 4096, want, n / 2);
    assert_memory_equal(fk->data + n, want + n / 2, n - n / 2);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_OK);
    free(mem), free(want), free(fk->data), free(fk);
}

static void test_gathered_write_in_memory(void **state)
{
    (void)state;
    gather_into(8u << 20, 256u << 10, "rfs:fake:1:/g1");
}

static void test_gathered_write_staged(void **state)
{
    (void)state;
    gather_into(1, 256u << 10, "rfs:fake:1:/g2");
}

/* With an explicit cap the pool is allocated and touched in the background before the first
 * write; ABT's own costs (time in write calls, its threads' CPU) are counted. */
static void test_pool_prefaulted_and_costs_counted(void **state)
{
    (void)state;
    fake_io *fk = fake_io_new();
    rfs_abt_config c = cfg(4u << 20, 1u << 20);
    rfs_io *io;
    assert_int_equal(rfs_abt_wrap(&fk->io, "rfs:fake:1:/p", &c, &io), RFS_OK);
    rfs_abt_stats st;
    for (int i = 0; i < 5000; i++) { /* bounded: 5 s at most */
        rfs_abt_get_stats_in(rt, &st);
        if (st.bytes_prefaulted == (4u << 20))
            break;
        usleep(1000);
    }
    assert_int_equal(st.bytes_prefaulted, 4u << 20);
    size_t n = 4u << 20;
    uint8_t *buf = malloc(n);
    fill(buf, n, 9);
    /* The copy into the pool takes no page faults: the pages are mapped already (a 4 MiB copy
     * into fresh memory takes 1024). */
    struct rusage before, after;
    assert_int_equal(getrusage(RUSAGE_THREAD, &before), 0);
    assert_int_equal(io->ops->pwrite(io, buf, n, 0, NULL), RFS_OK);
    assert_int_equal(getrusage(RUSAGE_THREAD, &after), 0);
#ifndef __SANITIZE_THREAD__ /* ThreadSanitizer's own shadow of the pool faults in on the copy */
    assert_in_range(after.ru_minflt - before.ru_minflt, 0, 64);
#endif
    assert_int_equal(io->ops->close(io), RFS_OK);
    assert_memory_equal(fk->data, buf, n);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_OK);
    rfs_abt_get_stats_in(rt, &st);
    assert_int_equal(st.bytes_prefaulted, 4u << 20); /* never more than the cap */
#ifndef __SANITIZE_THREAD__ /* slowed down, the sender frees buffers before the copy ends */
    assert_int_equal(st.memory_peak, 4u << 20);
#endif
    assert_int_equal(st.bytes_sent, n);
    assert_true(st.enqueue_s > 0);
    assert_true(st.thread_cpu_s > 0);
    free(buf), free(fk->data), free(fk);
}

/* A background failure is reported at the next sync, and the data is kept in the journal. */
static void test_error_reported_at_sync_and_kept(void **state)
{
    (void)state;
    fake_io *fk = fake_io_new();
    fk->fail_writes = RFS_E_CONN;
    rfs_abt_config c = cfg(64u << 20, 1u << 20);
    rfs_io *io;
    assert_int_equal(rfs_abt_wrap(&fk->io, "rfs:fake:1:/e", &c, &io), RFS_OK);
    uint8_t w[10000];
    fill(w, sizeof w, 5);
    assert_int_equal(io->ops->pwrite(io, w, sizeof w, 0, NULL), RFS_OK);
    assert_int_equal(io->ops->sync(io), RFS_E_CONN);
    assert_non_null(strstr(rfs_last_error(), "rfs:fake:1:/e"));
    assert_non_null(strstr(rfs_last_error(), "background write"));
    assert_int_equal(io->ops->sync(io), RFS_OK); /* reported once */
    assert_int_equal(io->ops->close(io), RFS_OK);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_E_IO); /* undelivered data remains */
    assert_non_null(strstr(rfs_last_error(), "rfs recover"));
    assert_int_equal(count_files(staging), 1);
    free(fk->data), free(fk);
}

static int count_pending(void *ctx, const rfs_journal_rec *r)
{
    int *n = ctx;
    if (r->kind == RFS_JOURNAL_DATA && !r->done) {
        n[0]++;
        n[1] += (int)r->len;
        assert_string_equal(r->name, "rfs:fake:1:/e");
    }
    return 0;
}

static void test_journal_left_by_failure_is_replayable(void **state)
{
    (void)state;
    test_error_reported_at_sync_and_kept(state);
    char path[600];
    journal_path(path, sizeof path);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    int n[2] = {0, 0};
    rfs_journal_info info;
    assert_int_equal(rfs_journal_check_header(fd, &info), RFS_OK);
    assert_int_equal(info.pid, (uint32_t)getpid());
    rfs_journal_end end;
    assert_int_equal(rfs_journal_scan(fd, 0, count_pending, n, &end), RFS_OK);
    assert_int_equal(end.kind, RFS_JOURNAL_CLEAN);
    assert_int_equal(n[0], 1);
    assert_int_equal(n[1], 10000);
    /* A torn tail (crash mid-append) is detected, earlier records stay usable. */
    assert_true(lseek(fd, 0, SEEK_END) > 0);
    assert_int_equal(write(fd, "RFSJ\x01garbage", 12), 12);
    n[0] = n[1] = 0;
    assert_int_equal(rfs_journal_scan(fd, 0, count_pending, n, &end), RFS_OK);
    assert_int_equal(end.kind, RFS_JOURNAL_TORN);
    assert_int_equal(n[0], 1);
    close(fd);
}

/* ---- file versions (docs/abt.md "Replay safety") ---- */

static int no_server_probe(const char *name, rfs_journal_version *v);

static int probes;
static int counting_probe(const char *name, rfs_journal_version *v)
{
    (void)name;
    probes++;
    v->known = 0;
    return RFS_E_CONN;
}

static int last_version(void *ctx, const rfs_journal_rec *r)
{
    if (r->kind == RFS_JOURNAL_VERSION)
        *(rfs_journal_version *)ctx = r->version;
    return 0;
}

/* Every write staged; four delivered, then the layer below fails: the journal keeps the fifth
 * with the version the fourth's answer left (below's version op), and with versions from the
 * layer below nothing is ever asked with a probe; without them, the probe is asked. */
static void run_versions(int below_has_versions)
{
    probes = 0;
    rfs_journal_set_probe(counting_probe);
    fake_io *fk = fake_io_new();
    fk->versions = below_has_versions;
    rfs_abt_config c = cfg(1, 1u << 20);
    rfs_io *io;
    /* a name of its own: the table of versions outlives the engine */
    const char *name = below_has_versions ? "rfs:fake:1:/v1" : "rfs:fake:1:/v0";
    assert_int_equal(rfs_abt_wrap(&fk->io, name, &c, &io), RFS_OK);
    uint8_t w[10000];
    fill(w, sizeof w, 9);
    for (int i = 0; i < 4; i++)
        assert_int_equal(io->ops->pwrite(io, w, sizeof w, (uint64_t)i * sizeof w, NULL), RFS_OK);
    assert_int_equal(io->ops->sync(io), RFS_OK);
    pthread_mutex_lock(&fk->mu);
    fk->fail_writes = RFS_E_CONN;
    pthread_mutex_unlock(&fk->mu);
    assert_int_equal(io->ops->pwrite(io, w, sizeof w, 4 * sizeof w, NULL), RFS_OK);
    assert_int_equal(io->ops->sync(io), RFS_E_CONN);
    assert_int_equal(io->ops->close(io), RFS_OK);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_E_IO);
    rfs_journal_set_probe(no_server_probe);

    char path[600];
    journal_path(path, sizeof path);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    rfs_journal_version v = {0};
    rfs_journal_end end;
    assert_int_equal(rfs_journal_scan(fd, 1, last_version, &v, &end), RFS_OK);
    close(fd);
    if (below_has_versions) {
        assert_int_equal(probes, 0);
        assert_true(v.known && v.exists);
        assert_int_equal(v.size, 4 * sizeof w);
        assert_int_equal(v.mtime_ns, 4); /* after the fourth write */
    } else {
        assert_true(probes >= 1);     /* at open and after the deliveries */
        assert_int_equal(v.known, 0); /* this probe never reaches a server */
    }
    free(fk->data), free(fk);
}

static void test_versions_from_below_need_no_probe(void **state)
{
    (void)state;
    run_versions(1);
}

static void test_without_versions_below_the_probe_asks(void **state)
{
    (void)state;
    run_versions(0);
}

/* Deferred close returns while writes are still queued; finalize waits for them. */
static void test_deferred_close(void **state)
{
    (void)state;
    fake_io *fk = fake_io_new();
    int closed = 0;
    fk->closed_flag = &closed;
    fake_io_gate(fk, 1);
    rfs_abt_config c = cfg(64u << 20, 1u << 20);
    c.defer_close = 1;
    rfs_io *io;
    assert_int_equal(rfs_abt_wrap(&fk->io, "rfs:fake:1:/f", &c, &io), RFS_OK);
    uint8_t w[100000];
    fill(w, sizeof w, 8);
    assert_int_equal(io->ops->pwrite(io, w, sizeof w, 0, NULL), RFS_OK);
    assert_int_equal(io->ops->close(io), RFS_OK);
    assert_true(fake_io_wait_blocked(fk, 1));
    assert_int_equal(closed, 0);
    fake_io_gate(fk, 0);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_OK);
    assert_int_equal(closed, 1);
    assert_memory_equal(fk->data, w, sizeof w);
    free(fk->data), free(fk);
}

/* With a deferred close, a failure after close is reported by finalize. */
static void test_deferred_close_error_at_finalize(void **state)
{
    (void)state;
    fake_io *fk = fake_io_new();
    fake_io_gate(fk, 1);
    fk->fail_writes = RFS_E_NOSPC;
    rfs_abt_config c = cfg(64u << 20, 1u << 20);
    c.defer_close = 1;
    rfs_io *io;
    assert_int_equal(rfs_abt_wrap(&fk->io, "rfs:fake:1:/g", &c, &io), RFS_OK);
    uint8_t w[1000] = {1};
    assert_int_equal(io->ops->pwrite(io, w, sizeof w, 0, NULL), RFS_OK);
    assert_int_equal(io->ops->close(io), RFS_OK);
    fake_io_gate(fk, 0);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_E_NOSPC);
    assert_non_null(strstr(rfs_last_error(), "rfs:fake:1:/g"));
    free(fk->data), free(fk);
}

static void test_model_eq1(void **state)
{
    (void)state;
    /* Need 32 MB free, 8 MB free now, 1 s left at 10 MB/s: 14 MB short; Bw = 100 MB/s. */
    double x = rfs_abt_stage_bytes(64e6, 8e6, 32e6, 1.0, 10e6, 100e6, 56e6);
    assert_true(x > 15.5e6 && x < 15.6e6); /* 14e6 / 0.9 */
    /* Enough time to drain: nothing to stage. */
    assert_true(rfs_abt_stage_bytes(64e6, 8e6, 32e6, 3.0, 10e6, 100e6, 56e6) == 0);
    /* Remote faster than the disk: staging cannot help. */
    assert_true(rfs_abt_stage_bytes(64e6, 0, 32e6, 0, 200e6, 100e6, 64e6) == 0);
    /* Never more than what is buffered; the cap bounds the need. */
    assert_true(rfs_abt_stage_bytes(16e6, 0, 32e6, 0, 10e6, 100e6, 5e6) == 5e6);
}

static void test_model_phases(void **state)
{
    (void)state;
    rfs_abt_phases p;
    rfs_abt_phases_init(&p, 0.1);
    assert_true(rfs_abt_phases_remaining(&p, 0) < 0);
    for (int k = 0; k < 3; k++) {
        double t = 10.0 * k;
        for (int i = 0; i < 4; i++)
            rfs_abt_phases_write(&p, t + 0.01 * i, 1000);
        assert_false(rfs_abt_phases_computing(&p, t + 0.05));
        assert_true(rfs_abt_phases_computing(&p, t + 1.0));
    }
    assert_int_equal(p.phases, 3);
    assert_true(p.interval > 9.99 && p.interval < 10.01);
    assert_true(p.output == 4000);
    double r = rfs_abt_phases_remaining(&p, 25.0);
    assert_true(r > 4.99 && r < 5.01);
}

/* The engine asks the server for each file's version; the fake files have none to ask. */
static int no_server_probe(const char *name, rfs_journal_version *v)
{
    (void)name;
    v->known = 0;
    return RFS_E_CONN;
}

/* ---- no room to keep a write (docs/reliability.md, "ABT when staging is full") ---- */

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A small staging disk: the journal's preallocations (ABT reserves room before every append
 * and before taking a write into memory) fail with ENOSPC past staging_room bytes. The test
 * binary's own fallocate comes before libc's for the ABT code linked into it. */
static off_t staging_room;

int fallocate(int fd, int mode, off_t off, off_t len)
{
    if (staging_room && !(mode & FALLOC_FL_PUNCH_HOLE) && off + len > staging_room) {
        errno = ENOSPC;
        return -1;
    }
    return (int)syscall(SYS_fallocate, fd, mode, off, len);
}

static int count_any_pending(void *ctx, const rfs_journal_rec *r)
{
    int *n = ctx;
    n[0] += r->kind == RFS_JOURNAL_DATA && !r->done;
    return 0;
}

static int pending_in_staging(void)
{
    DIR *d = opendir(staging);
    struct dirent *e;
    int n[1] = {0};
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s", staging, e->d_name);
        int fd = open(path, O_RDONLY);
        assert_true(fd >= 0);
        rfs_journal_info info;
        rfs_journal_end end;
        assert_int_equal(rfs_journal_check_header(fd, &info), RFS_OK);
        assert_int_equal(rfs_journal_scan(fd, 0, count_any_pending, n, &end), RFS_OK);
        assert_int_equal(end.kind, RFS_JOURNAL_CLEAN);
        close(fd);
    }
    closedir(d);
    return n[0];
}

/* A staging directory ABT cannot write: the write fails at the call (no delivery could make it
 * writable, so it does not wait), and nothing of it reaches the layer below. */
static void test_unwritable_staging_fails_the_write(void **state)
{
    (void)state;
    fake_io *fk = fake_io_new();
    rfs_abt_config c = cfg(4u << 20, 1u << 20);
    c.staging_dir = "/dev/null/staging";
    rfs_io *io;
    assert_int_equal(rfs_abt_wrap(&fk->io, "rfs:fake:1:/u", &c, &io), RFS_OK);
    uint8_t w[4096];
    fill(w, sizeof w, 3);
    double t0 = mono();
    assert_int_not_equal(io->ops->pwrite(io, w, sizeof w, 0, NULL), RFS_OK);
    assert_true(mono() - t0 < 5);
    assert_non_null(strstr(rfs_last_error(), "not accepted"));
    assert_non_null(strstr(rfs_last_error(), "/dev/null/staging"));
    assert_int_equal(io->ops->sync(io), RFS_OK);
    assert_int_equal(fk->bytes_written, 0);
    assert_int_equal(io->ops->close(io), RFS_OK);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_OK);
    free(fk->data), free(fk);
}

/* Server frozen (the gate holds every send), buffers full, staging full: the next write waits
 * rfs_abt_wait_timeout_ms for a delivery, then fails; the two it took are delivered once the
 * server moves again. */
static void test_full_staging_wait_is_bounded(void **state)
{
    (void)state;
    fake_io *fk = fake_io_new();
    fake_io_gate(fk, 1);
    rfs_abt_config c = cfg(2u << 20, 1u << 20);
    c.wait_timeout_s = 0.3;
    staging_room = (5 << 20) / 2;
    rfs_io *io;
    assert_int_equal(rfs_abt_wrap(&fk->io, "rfs:fake:1:/w", &c, &io), RFS_OK);
    size_t n = 1u << 20;
    uint8_t *buf = malloc(3 * n);
    fill(buf, 3 * n, 4);
    assert_int_equal(io->ops->pwrite(io, buf, n, 0, NULL), RFS_OK);
    assert_int_equal(io->ops->pwrite(io, buf + n, n, n, NULL), RFS_OK);
    double t0 = mono();
    assert_int_equal(io->ops->pwrite(io, buf + 2 * n, n, 2 * n, NULL), RFS_E_NOSPC);
    double waited = mono() - t0;
    assert_true(waited >= 0.25 && waited < 10);
    assert_non_null(strstr(rfs_last_error(), "rfs_abt_wait_timeout_ms"));
    fake_io_gate(fk, 0);
    assert_int_equal(io->ops->sync(io), RFS_OK);
    assert_int_equal(fk->size, 2 * n);
    assert_memory_equal(fk->data, buf, 2 * n);
    assert_int_equal(io->ops->close(io), RFS_OK);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_OK);
    staging_room = 0;
    assert_int_equal(count_files(staging), 0);
    free(buf), free(fk->data), free(fk);
}

/* Server failing, staging nearly full: the buffered writes' data goes to the room reserved
 * for it in the journal (none is lost), and the write that finds no room fails at once. */
static void test_server_down_staging_full_keeps_what_was_taken(void **state)
{
    (void)state;
    fake_io *fk = fake_io_new();
    fk->fail_writes = RFS_E_CONN;
    rfs_abt_config c = cfg(2u << 20, 1u << 20);
    c.wait_timeout_s = 60;
    staging_room = (5 << 20) / 2;
    rfs_io *io;
    assert_int_equal(rfs_abt_wrap(&fk->io, "rfs:fake:1:/k", &c, &io), RFS_OK);
    size_t n = 1u << 20;
    uint8_t *buf = malloc(n);
    fill(buf, n, 6);
    int taken = 0, rc = RFS_OK;
    double t0 = mono();
    for (int i = 0; i < 8 && rc == RFS_OK; i++) {
        rc = io->ops->pwrite(io, buf, n, (uint64_t)i * n, NULL);
        taken += rc == RFS_OK;
    }
    assert_int_not_equal(rc, RFS_OK);
    assert_true(mono() - t0 < 10); /* not rfs_abt_wait_timeout_ms: the server failed */
    assert_non_null(strstr(rfs_last_error(), "not taking writes"));
    assert_int_equal(io->ops->sync(io), RFS_E_CONN);
    assert_int_equal(io->ops->close(io), RFS_OK);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_E_IO);
    staging_room = 0;
#ifndef __SANITIZE_THREAD__ /* slowed down 5-15x, the sender may see the failure first */
    assert_true(taken >= 2);
#endif
    assert_int_equal(pending_in_staging(), taken); /* every write that returned is kept */
    free(buf), free(fk->data), free(fk);
}

/* ---- delete of a file's name (rfs_io_remove through ABT) ---- */

static fake_io *remove_fake;
static int removes, writes_at_remove;

/* The layer under ABT as far as a delete goes: notes what was delivered when it came. */
static int record_remove(const rfs_io_ops *const *below, const char *name, const rfs_options *o)
{
    (void)below, (void)name, (void)o;
    pthread_mutex_lock(&remove_fake->mu);
    writes_at_remove = (int)remove_fake->writes;
    removes++;
    pthread_mutex_unlock(&remove_fake->mu);
    return RFS_OK;
}

typedef struct remove_job {
    const rfs_io_ops *const *layers;
    const char *name;
    int started, rc;
} remove_job;

static void *remove_main(void *arg)
{
    remove_job *j = arg;
    __atomic_store_n(&j->started, 1, __ATOMIC_RELEASE);
    j->rc = rfs_io_remove(j->layers, j->name, NULL);
    return NULL;
}

/* A delete reaches the layer below only after the writes ABT queued for that file (however
 * its name is spelled) were delivered: none may land in the deleted file or create it again.
 * A delete of another file does not wait for them. */
static void test_delete_waits_for_the_files_queued_writes(void **state)
{
    (void)state;
    fake_io *fk = fake_io_new();
    remove_fake = fk;
    removes = 0;
    fake_io_gate(fk, 1);
    rfs_abt_config c = cfg(64u << 20, 1u << 20);
    rfs_io *io;
    assert_int_equal(rfs_abt_wrap(&fk->io, "rfs:fake:1:/a", &c, &io), RFS_OK);
    uint8_t w[4096];
    fill(w, sizeof w, 3);
    assert_int_equal(io->ops->pwrite(io, w, sizeof w, 0, NULL), RFS_OK);
    assert_true(fake_io_wait_blocked(fk, 1));

    rfs_io_ops bottom = *fk->io.ops;
    bottom.remove = record_remove;
    const rfs_io_ops *layers[] = {rfs_abt_ops(), &bottom, NULL};
    assert_int_equal(rfs_io_remove(layers, "rfs:fake:1:/other", NULL), RFS_OK);
    assert_int_equal(removes, 1);
    assert_int_equal(writes_at_remove, 0);

    remove_job j = {.layers = layers, .name = "rfs://fake:1/a"};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, remove_main, &j), 0);
    while (!__atomic_load_n(&j.started, __ATOMIC_ACQUIRE))
        sched_yield();
    fake_io_gate(fk, 0);
    pthread_join(th, NULL);
    assert_int_equal(j.rc, RFS_OK);
    assert_int_equal(removes, 2);
    assert_int_equal(writes_at_remove, 1);
    assert_int_equal(io->ops->close(io), RFS_OK);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_OK);
    free(fk->data), free(fk);
}

/* ---- the runtime's engine and per-file settings ---- */

/* Bytes the file system holds for the (one) journal in dir, allocated past its end too. */
static uint64_t journal_blocks(void)
{
    char path[600];
    journal_path(path, sizeof path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_blocks * 512u;
}

/* 1 if the staging directory's file system holds room past a file's end (ABT reserves room
 * so only there). */
static int can_preallocate(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/probe", staging);
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    int ok = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1u << 20) == 0;
    close(fd);
    unlink(path);
    return ok;
}

/* After the queue drained and the journal was truncated, the room held past its end is gone
 * with the truncated blocks: the next buffered write must reserve room again. It did not (the
 * engine still counted the old room as held), so a failed send of that write could find the
 * staging disk full and lose it. */
static void test_trim_then_buffered_write_reserves_again(void **state)
{
    (void)state;
    if (!can_preallocate())
        skip();
    fake_io *fk = fake_io_new();
    fake_io_gate(fk, 1);
    rfs_abt_config c = cfg(1u << 20, 1u << 20); /* one buffer: the second write is staged */
    rfs_io *io;
    assert_int_equal(rfs_abt_wrap(&fk->io, "rfs:fake:1:/trim", &c, &io), RFS_OK);
    size_t n = 1u << 20;
    uint8_t *buf = malloc(n);
    fill(buf, n, 4);
    assert_int_equal(io->ops->pwrite(io, buf, n, 0, NULL), RFS_OK);
    assert_int_equal(io->ops->pwrite(io, buf, n, n, NULL), RFS_OK);
    uint64_t both = journal_blocks();
    fake_io_gate(fk, 0);
    rfs_abt_stats st;
    rfs_abt_get_stats_in(rt, &st);
    assert_int_equal(st.bytes_staged_fg, n);
    assert_true(both >= 2 * n);                  /* the staged record and the buffer's room */
    assert_int_equal(io->ops->sync(io), RFS_OK); /* queue empty: the journal is truncated */
    assert_true(journal_blocks() < n);
    fake_io_gate(fk, 1);
    assert_int_equal(io->ops->pwrite(io, buf, n, 2 * n, NULL), RFS_OK); /* buffered */
    uint64_t held = journal_blocks();
    fake_io_gate(fk, 0); /* before any assertion: teardown waits for the queued writes */
    rfs_abt_get_stats_in(rt, &st);
    assert_int_equal(st.bytes_buffered, 2 * n);
    assert_true(held >= n); /* its room is held again */
    assert_int_equal(io->ops->close(io), RFS_OK);
    assert_memory_equal(fk->data + 2 * n, buf, n);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_OK);
    free(buf), free(fk->data), free(fk);
}

/* Each file's writes are cut into buffers of its own rfs_abt_buffer_size, whichever file
 * started the engine (the first file's size was everybody's). */
static void test_buffer_size_is_per_file(void **state)
{
    (void)state;
    fake_io *fa = fake_io_new(), *fb = fake_io_new();
    rfs_abt_config ca = cfg(64u << 20, 64u << 10), cb = cfg(64u << 20, 1u << 20);
    rfs_io *a, *b;
    assert_int_equal(rfs_abt_wrap(&fa->io, "rfs:fake:1:/bs-a", &ca, &a), RFS_OK);
    assert_int_equal(rfs_abt_wrap(&fb->io, "rfs:fake:1:/bs-b", &cb, &b), RFS_OK);
    size_t n = 1u << 20;
    uint8_t *buf = malloc(n);
    fill(buf, n, 6);
    assert_int_equal(a->ops->pwrite(a, buf, n, 0, NULL), RFS_OK);
    assert_int_equal(b->ops->pwrite(b, buf, n, 0, NULL), RFS_OK);
    assert_int_equal(a->ops->close(a), RFS_OK);
    assert_int_equal(b->ops->close(b), RFS_OK);
    assert_int_equal(fa->writes, 16); /* 16 buffers of 64 KiB */
    assert_int_equal(fb->writes, 1);  /* one buffer of 1 MiB */
    assert_memory_equal(fa->data, buf, n);
    assert_memory_equal(fb->data, buf, n);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_OK);
    free(buf), free(fa->data), free(fa), free(fb->data), free(fb);
}

/* Each file stages in its own rfs_staging_dir (one journal per directory), and finalize
 * leaves neither behind after a clean run. */
static void test_staging_dir_is_per_file(void **state)
{
    (void)state;
    char other[300];
    snprintf(other, sizeof other, "%s/other", staging);
    fake_io *fa = fake_io_new(), *fb = fake_io_new();
    fake_io_gate(fa, 1);
    fake_io_gate(fb, 1);
    rfs_abt_config ca = cfg(1, 256u << 10), cb = ca; /* no memory: every write is staged */
    cb.staging_dir = other;
    rfs_io *a, *b;
    assert_int_equal(rfs_abt_wrap(&fa->io, "rfs:fake:1:/sd-a", &ca, &a), RFS_OK);
    assert_int_equal(rfs_abt_wrap(&fb->io, "rfs:fake:1:/sd-b", &cb, &b), RFS_OK);
    uint8_t w[100000];
    fill(w, sizeof w, 8);
    assert_int_equal(a->ops->pwrite(a, w, sizeof w, 0, NULL), RFS_OK);
    assert_int_equal(b->ops->pwrite(b, w, sizeof w, 0, NULL), RFS_OK);
    int in_other = count_files(other), in_staging = count_files(staging);
    fake_io_gate(fa, 0); /* before any assertion: teardown waits for the queued writes */
    fake_io_gate(fb, 0);
    assert_int_equal(in_other, 1);   /* b's journal */
    assert_int_equal(in_staging, 2); /* a's journal and the other directory */
    assert_int_equal(a->ops->close(a), RFS_OK);
    assert_int_equal(b->ops->close(b), RFS_OK);
    assert_memory_equal(fa->data, w, sizeof w);
    assert_memory_equal(fb->data, w, sizeof w);
    assert_int_equal(rfs_abt_finalize_in(rt), RFS_OK);
    assert_int_equal(count_files(other), 0);
    assert_int_equal(count_files(staging), 1);
    free(fa->data), free(fa), free(fb->data), free(fb);
}

/* Runtimes have engines of their own: finalizing one neither waits for nor touches another's
 * queued writes, and destroying a runtime delivers what its engine still holds. */
static void test_engines_are_per_runtime(void **state)
{
    (void)state;
    rfs_runtime *other;
    assert_int_equal(rfs_runtime_create(&other), RFS_OK);
    fake_io *fa = fake_io_new(), *fb = fake_io_new();
    fake_io_gate(fb, 1);
    rfs_abt_config ca = cfg(8u << 20, 1u << 20), cb = ca;
    cb.rt = other;
    rfs_io *a, *b;
    assert_int_equal(rfs_abt_wrap(&fa->io, "rfs:fake:1:/rt-a", &ca, &a), RFS_OK);
    assert_int_equal(rfs_abt_wrap(&fb->io, "rfs:fake:1:/rt-b", &cb, &b), RFS_OK);
    uint8_t w[4096];
    fill(w, sizeof w, 2);
    assert_int_equal(a->ops->pwrite(a, w, sizeof w, 0, NULL), RFS_OK);
    assert_int_equal(b->ops->pwrite(b, w, sizeof w, 0, NULL), RFS_OK);
    int blocked = fake_io_wait_blocked(fb, 1);
    int closed = a->ops->close(a);
    int fin = rfs_abt_finalize_in(rt); /* b's write is still at the gate */
    rfs_abt_stats sa, sb;
    rfs_abt_get_stats_in(rt, &sa);
    rfs_abt_get_stats_in(other, &sb);
    uint64_t b_written = fb->bytes_written;
    fake_io_gate(fb, 0); /* before any assertion: destroying other waits for its writes */
    assert_true(blocked);
    assert_int_equal(closed, RFS_OK);
    assert_int_equal(fin, RFS_OK);
    assert_int_equal(sa.bytes_sent, sizeof w);
    assert_int_equal(sb.bytes_sent, 0);
    assert_int_equal(b_written, 0);
    assert_int_equal(b->ops->close(b), RFS_OK);
    rfs_runtime_destroy(other);
    assert_memory_equal(fb->data, w, sizeof w);
    free(fa->data), free(fa), free(fb->data), free(fb);
}

static void test_tables_name_every_slot(void **state)
{
    (void)state;
    assert_io_slots_named(rfs_abt_ops());
    fake_io *fk = fake_io_new();
    assert_io_slots_named(fk->io.ops);
    free(fk);
}

int main(void)
{
    rfs_journal_set_probe(no_server_probe);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_returns_before_delivery, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlapping_writes_keep_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_sees_buffered_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_size_counts_queued_writes_without_waiting, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_tiny_cap_forces_foreground_staging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool_prefaulted_and_costs_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gathered_write_in_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gathered_write_staged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_reported_at_sync_and_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_journal_left_by_failure_is_replayable, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_versions_from_below_need_no_probe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_without_versions_below_the_probe_asks, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_deferred_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deferred_close_error_at_finalize, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unwritable_staging_fails_the_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_staging_wait_is_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_down_staging_full_keeps_what_was_taken, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_delete_waits_for_the_files_queued_writes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_threads_are_per_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trim_then_buffered_write_reserves_again, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_buffer_size_is_per_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_staging_dir_is_per_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engines_are_per_runtime, setup, teardown),
        cmocka_unit_test(test_tables_name_every_slot),
        cmocka_unit_test(test_model_eq1),
        cmocka_unit_test(test_model_phases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
