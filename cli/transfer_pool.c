/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Parallel copy engine; see transfer_pool.h. */
#include "cli/transfer_pool.h"

#include "client/client.h"
#include "common/clock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One 4 MiB frame (the default frame size) per connection per call. The library deals a
 * call's frames to its connections starting with the first each time, so a call needs one
 * frame per connection to keep them all busy (16 x 4 MiB = 64 MiB at most). Smaller buffers
 * also stay in the CPU cache between the network copy and the file copy. */
#define CHUNK_PER_STREAM ((size_t)4 << 20)
#define MAX_DEFAULT_CHUNK ((size_t)64 << 20)
#define MIN_CHUNK ((size_t)4096)
#define MAX_CHUNK ((size_t)256 << 20)
/* Each connection should get at least this much, or setting it up costs more than it gains. */
#define MIN_PER_STREAM ((uint64_t)1 << 20)
/* Calls in flight: while some move data over the network, another does the local I/O, and
 * each connection has depth frames in flight (16 MiB: a 50 ms, 2.5 Gbit/s path). On loopback
 * (1 GiB get into /dev/shm, 4 runs each, interleaved) depth 3 x 8 MiB gave 963-1361 MiB/s,
 * 4 x 4 MiB 728-1418, 4 x 2 MiB 720-1411: equal within this shared machine's noise, so the
 * choice rests on the argument above. The buffers (depth x chunk) stay within MAX_BUFFERS by
 * lowering depth for wide files. */
#define DEFAULT_DEPTH 4
#define MIN_DEPTH 2
#define MAX_BUFFERS ((size_t)128 << 20)
#define MAX_DEPTH 16

static long env_long(const char *name, long dflt, long lo, long hi)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    long v = strtol(s, &end, 10);
    return *end == '\0' && v >= lo && v <= hi ? v : dflt;
}

uint32_t xfer_frame_size(void)
{
    return (uint32_t)env_long("RFS_CLI_FRAME", 0, 0, 64L << 20);
}

/* On a long path one TCP connection is held back by its window (the hosts' buffer maxima) and
 * by its congestion control's slow recovery; 4 connections filled a 1 Gbit/s, 50 ms path with
 * 4 MiB maxima to 0.94 of the link where one reached 0.64 (issue #12). The threshold is
 * librfs's for rfs_streams=auto ($RFS_STREAMS_AUTO_MIN_RTT_US, docs/tuning.md). */
#define CLI_AUTO_STREAMS 4
/* A tree of small files (cp -r) gains from twice as many: most of what is left there is TCP's
 * slow start on fresh connections, and eight open their windows one round trip sooner than
 * four. 10 000 files of 4..64 KiB, 1 Gbit/s, 50 ms, 4 MiB buffer maxima, four alternating
 * pairs: get 3.45 s against 3.50, put 3.42 against 3.46, faster with eight in every pair. */
#define CLI_AUTO_STREAMS_TREE 8
#define CLI_AUTO_MIN_RTT_US 2000

typedef struct cli_decision {
    long min_us;
    double rtt_ms;
    int k, many; /* many: the streams a long path gets */
} cli_decision;

static int cli_decide(double rtt_ms, void *ctx)
{
    cli_decision *d = ctx;
    d->rtt_ms = rtt_ms;
    d->k = rtt_ms * 1000 >= (double)d->min_us ? d->many : 1;
    return d->k;
}

/* Decides the streams and dials them into the pool, where the transfer's open finds them: the
 * first connection's round trip is read from the kernel as soon as its TCP connect is answered,
 * and the others, dialled speculatively beside it (rfs_pool_get_auto_spec), go on to their
 * handshake or close unused. A failure is left to
 * the transfer itself to meet and report. The connections keep the options they were opened
 * with, so they are opened with the transfer's frame size. */
static int decide_streams(cli_ctx *c, const char *url)
{
    if (c->o.streams > 0)
        return c->o.streams;
    rfs_name n;
    char server[300] = "";
    if (rfs_parse_name(url, &n) == RFS_OK)
        cli_server_str(&n, server, sizeof server);
    if (c->auto_streams && strcmp(server, c->auto_server) == 0)
        return c->auto_streams;
    cli_decision d = {.min_us =
                          env_long("RFS_STREAMS_AUTO_MIN_RTT_US", CLI_AUTO_MIN_RTT_US, 0, 10000000),
                      .rtt_ms = -1,
                      .k = 1,
                      .many = c->o.recursive ? CLI_AUTO_STREAMS_TREE : CLI_AUTO_STREAMS};
    rfs_options po = c->ropts;
    po.max_frame = xfer_frame_size();
    int count = 0;
    if (rfs_pool_warm_auto(url, &po, cli_decide, &d, d.many, &count) != RFS_OK)
        rfs_clear_error();
    int k = d.k;
    if (c->o.verbose)
        fprintf(stderr, "rfs: %s: round trip %.3f ms: %d stream%s (--streams auto)\n", server,
                d.rtt_ms, k, k > 1 ? "s" : "");
    c->auto_streams = k;
    snprintf(c->auto_server, sizeof c->auto_server, "%s", server);
    return k;
}

/* A command's warm-up (cli_streams_warm): the streams decided and the connections dialled on a
 * thread of its own, on a copy of the command's context. */
static struct {
    pthread_t th;
    int running;
    cli_ctx cc;
    char url[4400];
} warm;

static void *warm_main(void *arg)
{
    (void)arg;
    decide_streams(&warm.cc, warm.url);
    return NULL;
}

void cli_streams_warm(cli_ctx *c, const char *url)
{
    if (warm.running || c->o.streams == 1)
        return;
    warm.cc = *c;
    snprintf(warm.url, sizeof warm.url, "%s", url);
    warm.running = pthread_create(&warm.th, NULL, warm_main, NULL) == 0;
}

void cli_streams_warm_end(cli_ctx *c)
{
    if (!warm.running)
        return;
    pthread_join(warm.th, NULL);
    warm.running = 0;
    if (!c->auto_streams && warm.cc.auto_streams) {
        c->auto_streams = warm.cc.auto_streams;
        snprintf(c->auto_server, sizeof c->auto_server, "%s", warm.cc.auto_server);
    }
    explicit_bzero(&warm.cc, sizeof warm.cc); /* its copy of the token */
}

int cli_streams(cli_ctx *c, const char *url)
{
    cli_streams_warm_end(c);
    return decide_streams(c, url);
}

void xfer_defaults(xfer *x, uint64_t total, int requested_streams)
{
    memset(x, 0, sizeof *x);
    x->total = total;
    uint64_t useful = (total + MIN_PER_STREAM - 1) / MIN_PER_STREAM;
    if (useful < 1)
        useful = 1;
    x->nstreams = requested_streams < 1 ? 1 : requested_streams;
    if ((uint64_t)x->nstreams > useful)
        x->nstreams = (int)useful;
    size_t chunk = CHUNK_PER_STREAM * (size_t)x->nstreams;
    if (chunk > MAX_DEFAULT_CHUNK)
        chunk = MAX_DEFAULT_CHUNK;
    x->chunk = (size_t)env_long("RFS_CLI_CHUNK", (long)chunk, (long)MIN_CHUNK, (long)MAX_CHUNK);
    x->frame = xfer_frame_size();
    int depth = DEFAULT_DEPTH;
    while (depth > MIN_DEPTH && (size_t)depth * x->chunk > MAX_BUFFERS)
        depth--;
    x->depth = (int)env_long("RFS_CLI_DEPTH", depth, 1, MAX_DEPTH);
    /* No more threads than chunks. */
    uint64_t chunks = (total + x->chunk - 1) / x->chunk;
    if (chunks < 1)
        chunks = 1;
    if ((uint64_t)x->depth > chunks)
        x->depth = (int)chunks;
}

typedef struct worker_arg {
    xfer *x;
    pthread_t tid;
} worker_arg;

static void record_failure(xfer *x, const xfer_error *e)
{
    pthread_mutex_lock(&x->mu);
    if (x->error.st.rc == RFS_OK)
        x->error = *e;
    pthread_mutex_unlock(&x->mu);
    atomic_store(&x->stop, 1);
}

static void *worker(void *p)
{
    worker_arg *a = p;
    xfer *x = a->x;
    uint64_t end = x->total; /* the cursor starts at x->start */
    void *buf = x->no_buffer ? NULL : malloc(x->chunk);
    int ok = x->no_buffer || buf;
    if (!ok) {
        xfer_error e = {.st = {.rc = RFS_E_NOMEM}, .local = 1};
        snprintf(e.st.msg, sizeof e.st.msg, "out of memory for a %zu-byte transfer buffer",
                 x->chunk);
        record_failure(x, &e);
    }
    while (ok && !atomic_load(&x->stop)) {
        uint64_t off = atomic_fetch_add(&x->cursor, (uint64_t)x->chunk);
        if (off >= end)
            break;
        size_t len = end - off < x->chunk ? (size_t)(end - off) : x->chunk;
        xfer_error e = {0};
        int rc = x->copy(x, buf, off, len, &e);
        if (rc != RFS_OK) {
            if (e.st.msg[0] == '\0')
                rfs_status_save(&e.st, rc);
            e.st.rc = rc;
            record_failure(x, &e);
            break;
        }
        atomic_fetch_add(&x->done, (uint64_t)len);
    }
    free(buf);
    pthread_mutex_lock(&x->mu);
    x->running--;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

int xfer_run(xfer *x)
{
    atomic_init(&x->cursor, x->start);
    atomic_init(&x->done, 0);
    atomic_init(&x->stop, 0);
    x->error.st.rc = RFS_OK;
    pthread_mutex_init(&x->mu, NULL);
    rfs_cond_init_monotonic(&x->cv);

    int nthreads = x->depth;
    worker_arg *args = calloc((size_t)nthreads, sizeof *args);
    if (!args) {
        x->error = (xfer_error){.st = {RFS_E_NOMEM, "out of memory"}, .local = 1};
        return RFS_E_NOMEM;
    }
    int started = 0;
    for (int i = 0; i < nthreads; i++) {
        args[i].x = x;
        pthread_mutex_lock(&x->mu);
        x->running++;
        pthread_mutex_unlock(&x->mu);
        int rc = pthread_create(&args[i].tid, NULL, worker, &args[i]);
        if (rc != 0) {
            pthread_mutex_lock(&x->mu);
            x->running--;
            pthread_mutex_unlock(&x->mu);
            if (started == 0) {
                xfer_error e = {.st = {.rc = RFS_E_NOMEM}, .local = 1};
                snprintf(e.st.msg, sizeof e.st.msg, "cannot start a transfer thread: %s",
                         strerror(rc));
                record_failure(x, &e);
            }
            break; /* the threads already running share the work */
        }
        started++;
    }

    /* Wake at least every 100 ms to redraw the progress bar. */
    pthread_mutex_lock(&x->mu);
    while (x->running > 0) {
        struct timespec ts = rfs_deadline_ms(100);
        pthread_cond_timedwait(&x->cv, &x->mu, &ts);
        pthread_mutex_unlock(&x->mu);
        if (x->prog)
            progress_update(x->prog, atomic_load(&x->done));
        pthread_mutex_lock(&x->mu);
    }
    pthread_mutex_unlock(&x->mu);
    for (int i = 0; i < started; i++)
        pthread_join(args[i].tid, NULL);
    free(args);
    pthread_cond_destroy(&x->cv);
    pthread_mutex_destroy(&x->mu);
    if (x->error.st.rc == RFS_OK && atomic_load(&x->done) != x->total - x->start) {
        x->error = (xfer_error){.st = {RFS_E_IO, "transfer incomplete"}, .local = 1};
    }
    return x->error.st.rc;
}

/* ---- atomic, restartable, verifiable transfers ---- */

#include "common/crc32c.h"
#include "common/fullio.h"

#define SUM_BUF ((size_t)1 << 20)
#define PREFIX_FANOUT 16
#define PART_NAME_MAX 200

uint64_t xfer_hash(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

int xfer_part_path(char *out, size_t cap, const char *target, uint64_t key)
{
    const char *slash = strrchr(target, '/');
    size_t dirlen = slash ? (size_t)(slash - target) + 1 : 0;
    char base[1024];
    cli_basename(target, base, sizeof base);
    if (!base[0])
        return -1;
    int n = snprintf(out, cap, "%.*s.%.*s.rfs-part-%016" PRIx64, (int)dirlen, target, PART_NAME_MAX,
                     base, key);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

typedef struct local_sum {
    int fd;
    uint64_t off, len;
    uint32_t crc;
    uint64_t got;
    int err; /* errno */
} local_sum;

static void *local_sum_main(void *p)
{
    local_sum *s = p;
    unsigned char *buf = malloc(SUM_BUF);
    if (!buf) {
        s->err = ENOMEM;
        return NULL;
    }
    while (s->got < s->len) {
        size_t want = s->len - s->got < SUM_BUF ? (size_t)(s->len - s->got) : SUM_BUF;
        ssize_t r = rfs_pread_full(s->fd, buf, want, s->off + s->got);
        if (r < 0) {
            s->err = errno ? errno : EIO;
            break;
        }
        s->crc = rfs_crc32c(s->crc, buf, (size_t)r);
        s->got += (uint64_t)r;
        if ((size_t)r < want)
            break; /* end of the local file */
    }
    free(buf);
    return NULL;
}

int xfer_compare(rfs_file *f, int fd, const char *local, uint64_t off, uint64_t len, int *same,
                 uint32_t crcs[2], xfer_error *e)
{
    *same = 0;
    local_sum ls = {.fd = fd, .off = off, .len = len};
    pthread_t th;
    int threaded = pthread_create(&th, NULL, local_sum_main, &ls) == 0;
    uint32_t rcrc = 0;
    uint64_t rgot = 0;
    int rc = rfs_checksum(f, off, len, &rcrc, &rgot);
    if (rc != RFS_OK) /* kept past the local side's calls */
        rfs_status_save(&e->st, rfs_fail_cause(rc, "checksum on the server"));
    if (threaded)
        pthread_join(th, NULL);
    else
        local_sum_main(&ls); /* no thread to spare: one side after the other */
    if (rc != RFS_OK) {
        e->st.rc = rc;
        return rc;
    }
    if (ls.err) {
        e->st.rc = RFS_E_IO;
        e->local = 1;
        snprintf(e->st.msg, sizeof e->st.msg, "reading %s: %s", local, strerror(ls.err));
        return RFS_E_IO;
    }
    if (crcs) {
        crcs[0] = rcrc;
        crcs[1] = ls.crc;
    }
    *same = rgot == len && ls.got == len && rcrc == ls.crc;
    return RFS_OK;
}

/* [lo, hi) is known to start where both sides agree; finds where they stop agreeing. */
static int prefix_in(rfs_file *f, int fd, const char *local, uint64_t lo, uint64_t hi,
                     uint64_t *end, xfer_error *e)
{
    uint64_t units = (hi - lo) / XFER_VERIFY_UNIT;
    uint64_t part = (units + PREFIX_FANOUT - 1) / PREFIX_FANOUT * XFER_VERIFY_UNIT;
    for (uint64_t a = lo; a < hi; a += part) {
        uint64_t b = hi - a < part ? hi : a + part;
        int same;
        int rc = xfer_compare(f, fd, local, a, b - a, &same, NULL, e);
        if (rc != RFS_OK)
            return rc;
        if (same)
            continue;
        if (b - a == XFER_VERIFY_UNIT) {
            *end = a;
            return RFS_OK;
        }
        return prefix_in(f, fd, local, a, b, end, e);
    }
    *end = hi;
    return RFS_OK;
}

int xfer_verified_prefix(rfs_file *f, int fd, const char *local, uint64_t len, uint64_t *end,
                         xfer_error *e)
{
    *end = 0;
    len -= len % XFER_VERIFY_UNIT;
    return len ? prefix_in(f, fd, local, 0, len, end, e) : RFS_OK;
}
