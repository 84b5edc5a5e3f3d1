/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Read-ahead: after each read the file's pattern (pattern.c) decides whether and where to read
 * ahead. The bytes to come are claimed at once as in-flight extents (so the reader, arriving
 * there, waits for them instead of asking again) and queued; the file's threads read them
 * from the layer below. The window ahead of the reader starts at two reads' worth and doubles
 * with every read that keeps the pattern, as Linux readahead grows, up to what keeps the link
 * busy: twice the bytes the reader consumes during the shortest recent prefetch round trip
 * (bytes per read x that round trip / time between reads), and never beyond window_max. A
 * window no larger than that is what a reader that stops (at the end of its share of a file)
 * leaves prefetched and unread. */
#include "cache/cache_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Bytes per prefetch request: an eighth of the window, at least PF_CHUNK_MIN so the requests
 * stay few, and not raised to the reader's read size: the window is sized from the round trip
 * of one request (see above), which on a link that is the bottleneck is mostly the request's
 * own transfer, so a request as large as a 4 MiB read makes the window two such reads or more
 * (the bytes a reader leaves unread past its share). Several requests smaller than a read are
 * in flight at once (rfs_prefetch_threads), so the link stays as busy. */
#define PF_CHUNK_MIN (1ull << 20)
#define PF_CHUNK_MAX (8ull << 20)
#define PF_WINDOW_MIN (256ull << 10)
/* Blocks per strided prefetch request (one PREADV), bounded like a request's bytes. */
#define PF_BLOCKS_MAX 1024

static void *pf_main(void *arg);

static void start_threads(cx_file *f)
{
    while (f->nthreads < f->threads_wanted && !f->threads_failed) {
        if (rfs_task_start(f->rt, &f->th[f->nthreads], pf_main, f) != 0) {
            f->threads_failed = 1; /* prefetch goes on with the threads it has, or none */
            break;
        }
        f->nthreads++;
    }
}

static void enqueue(cx_file *f, cx_ext **ext, size_t n)
{
    cx_job *j = malloc(sizeof *j + n * sizeof *j->ext);
    if (j)
        start_threads(f);
    if (!j || f->nthreads == 0) {
        for (size_t i = 0; i < n; i++)
            cx_ext_abandon(ext[i]);
        free(j);
        return;
    }
    j->next = NULL;
    j->n = n;
    memcpy(j->ext, ext, n * sizeof *ext);
    if (f->q_tail)
        f->q_tail->next = j;
    else
        f->q_head = j;
    f->q_tail = j;
    pthread_cond_signal(&f->q_cv);
}

static uint64_t chunk_of(const cx_file *f)
{
    uint64_t c = f->window / 8;
    if (c < PF_CHUNK_MIN)
        c = PF_CHUNK_MIN;
    if (c > PF_CHUNK_MAX)
        c = PF_CHUNK_MAX;
    return c;
}

/* Claims the gaps of [from, to) in requests of at most a chunk; returns where it stopped. */
static uint64_t ahead_sequential(cx_file *f, uint64_t from, uint64_t to, uint64_t chunk)
{
    uint64_t x = from;
    while (x < to) {
        uint64_t ge = to, gs = cx_first_gap(f, x, to, &ge);
        if (gs >= to)
            return to;
        if (ge - gs > chunk)
            ge = gs + chunk;
        cx_ext *e = cx_ext_new(f, gs, ge - gs);
        if (!e)
            return gs; /* the cap is full of what the reader has not read: wait for it */
        enqueue(f, &e, 1);
        x = ge;
    }
    return x;
}

/* Claims the next blocks of a stride (each wholly uncached) until `count` blocks. */
static uint64_t ahead_strided(cx_file *f, uint64_t from, uint64_t stride, uint64_t len,
                              uint64_t count, uint64_t chunk)
{
    cx_ext *batch[PF_BLOCKS_MAX];
    size_t nb = 0;
    uint64_t per = chunk / len ? chunk / len : 1, x = from;
    if (per > PF_BLOCKS_MAX)
        per = PF_BLOCKS_MAX;
    for (uint64_t k = 0; k < count && x < f->eof; k++, x += stride) {
        if (x > UINT64_MAX - stride - len)
            break;
        uint64_t ge = 0;
        if (cx_first_gap(f, x, x + len, &ge) != x || ge != x + len)
            continue; /* partly cached or in flight already */
        cx_ext *e = cx_ext_new(f, x, len);
        if (!e)
            break;
        batch[nb++] = e;
        if (nb == per) {
            enqueue(f, batch, nb);
            nb = 0;
        }
    }
    if (nb)
        enqueue(f, batch, nb);
    return x;
}

void cx_prefetch_note(cx_file *f, const rfs_extent *ext, size_t n)
{
    if (f->prefetch == RFS_PREFETCH_DISABLE || n == 0)
        return;
    int before = f->pat.kind;
    for (size_t i = 0; i < n; i++)
        cx_pattern_note(&f->pat, ext[i].offset, ext[i].length);
    int kind = cx_pattern_decide(&f->pat, f->prefetch);
    uint64_t len = f->pat.last_len, last = f->pat.last_off, end = last + len;
    if (kind == CX_PAT_NONE || len == 0 || f->stop) {
        f->window = 0;
        return;
    }
    uint64_t now = now_ns();
    if (f->window && kind == before && f->last_note_ns) {
        uint64_t d = now - f->last_note_ns;
        f->gap_ns = f->gaps ? (3 * f->gap_ns + d) / 4 : d;
        f->gaps++;
    }
    f->last_note_ns = now;
    uint64_t w0 = 2 * len < PF_WINDOW_MIN ? PF_WINDOW_MIN : 2 * len;
    if (w0 > f->window_max)
        w0 = f->window_max;
    if (f->window == 0 || kind != before) {
        f->window = w0;
        f->gaps = 0;
    } else {
        uint64_t w = f->window * 2 < f->window_max ? f->window * 2 : f->window_max;
        if (f->gaps >= 2 && f->lats >= 1 && f->gap_ns > 0) {
            double need = 2.0 * (double)len * (double)f->lat_min_ns / (double)f->gap_ns;
            uint64_t n = need > (double)f->window_max ? f->window_max : (uint64_t)need;
            if (n < w0)
                n = w0;
            if (n < w)
                w = n;
        }
        f->window = w;
    }
    uint64_t chunk = chunk_of(f);
    if (kind == CX_PAT_SEQ) {
        uint64_t to = end + f->window < end ? UINT64_MAX : end + f->window;
        if (to > f->eof)
            to = f->eof;
        uint64_t from = f->pf_next >= end && f->pf_next <= to ? f->pf_next : end;
        /* Like Linux's asynchronous readahead mark: top the window up only once the reader
         * has used half of what is ahead, so requests stay large instead of one per read. */
        if (from == end || from - end < f->window / 2)
            f->pf_next = ahead_sequential(f, from, to, chunk);
    } else {
        uint64_t s = f->pat.stride, next = last + s;
        uint64_t count = f->window / len ? f->window / len : 1;
        /* Continue where the last prefetch stopped when that is further along the stride. */
        uint64_t from = next;
        if (f->pf_next > next && (f->pf_next - next) % s == 0 && (f->pf_next - next) / s <= count) {
            uint64_t ahead = (f->pf_next - next) / s;
            if (ahead >= count / 2)
                return; /* more than half the window is still ahead (see above) */
            count -= ahead;
            from = f->pf_next;
        }
        f->pf_next = ahead_strided(f, from, s, len, count, chunk);
    }
}

/* Reads one job's extents from the layer below (the pool's mu not held). */
static void run_job(cx_file *f, cx_job *j)
{
    rfs_io *b = f->below;
    size_t got = 0;
    int rc;
    uint8_t *tmp = NULL;
    uint64_t t0 = now_ns();
    if (j->n == 1) {
        rc = b->ops->pread(b, j->ext[0]->data, j->ext[0]->len, j->ext[0]->off, &got);
    } else {
        rfs_extent *ext = malloc(j->n * sizeof *ext);
        uint64_t total = 0;
        for (size_t i = 0; ext && i < j->n; i++) {
            ext[i] = (rfs_extent){j->ext[i]->off, j->ext[i]->len};
            total += j->ext[i]->len;
        }
        tmp = ext ? malloc(total) : NULL;
        if (!tmp)
            rc = RFS_E_NOMEM;
        else if (b->ops->preadv)
            rc = b->ops->preadv(b, ext, j->n, tmp, &got);
        else
            rc = RFS_E_UNSUPPORTED; /* no list reads below: strided prefetch is not worth it */
        free(ext);
    }
    uint64_t lat = now_ns() - t0;
    pthread_mutex_lock(&f->pool->mu);
    /* The shortest recent round trip: it rises only slowly, so a burst of queued requests
     * (each waiting behind the others) does not pass for the link's latency. */
    if (rc == RFS_OK) {
        if (!f->lats || lat < f->lat_min_ns)
            f->lat_min_ns = lat;
        else
            f->lat_min_ns += (lat - f->lat_min_ns) / 16;
        f->lats++;
    }
    size_t pos = 0;
    for (size_t i = 0; i < j->n; i++) {
        cx_ext *e = j->ext[i];
        uint64_t mine = got > pos ? got - pos : 0;
        if (mine > e->len)
            mine = e->len;
        if (rc != RFS_OK) {
            cx_ext_abandon(e);
            continue;
        }
        if (tmp && mine && !e->stale)
            memcpy(e->data, tmp + pos, mine);
        pos += e->len;
        cx_ext_landed(e, mine, 1);
    }
    if (rc != RFS_OK)
        f->st.prefetch_failed++;
    pthread_cond_broadcast(&f->pool->landed);
    pthread_mutex_unlock(&f->pool->mu);
    free(tmp);
}

static void *pf_main(void *arg)
{
    cx_file *f = arg;
    pthread_mutex_lock(&f->pool->mu);
    for (;;) {
        while (!f->q_head && !f->stop)
            pthread_cond_wait(&f->q_cv, &f->pool->mu);
        if (f->stop)
            break;
        cx_job *j = f->q_head;
        f->q_head = j->next;
        if (!f->q_head)
            f->q_tail = NULL;
        pthread_mutex_unlock(&f->pool->mu);
        run_job(f, j);
        free(j);
        pthread_mutex_lock(&f->pool->mu);
    }
    pthread_mutex_unlock(&f->pool->mu);
    return NULL;
}

void cx_prefetch_cancel_queued(cx_file *f)
{
    while (f->q_head) {
        cx_job *j = f->q_head;
        f->q_head = j->next;
        for (size_t i = 0; i < j->n; i++)
            cx_ext_abandon(j->ext[i]);
        free(j);
    }
    f->q_tail = NULL;
    f->pf_next = 0;
    pthread_cond_broadcast(&f->pool->landed);
}

void cx_prefetch_stop(cx_file *f)
{
    pthread_mutex_lock(&f->pool->mu);
    f->stop = 1;
    cx_prefetch_cancel_queued(f);
    pthread_cond_broadcast(&f->q_cv);
    pthread_mutex_unlock(&f->pool->mu);
    for (int i = 0; i < f->nthreads; i++)
        rfs_task_join(&f->th[i]);
    f->nthreads = 0;
}
