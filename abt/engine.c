/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The ABT engine: one FIFO of buffered writes per process, a pool of equal-sized buffers,
 * sender threads that deliver chunks to the layer below, and the eq. (1) stager.
 *
 * Ordering rule: chunks are dispatched in FIFO order, and a chunk is never sent while an
 * earlier chunk of the same file that overlaps it is still queued or in flight. Several
 * chunks are in flight at once (one per sender thread), which keeps a long-RTT link busy;
 * non-overlapping writes may complete in any order, which MPI semantics allow. */
#include "abt/engine.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"

abt_engine rfs_abt_engine = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
};
#define E rfs_abt_engine

/* work and done are waited on with deadlines: monotonic, so made at run time (once: the
 * engine may start again after a finalize). */
static pthread_once_t conds_once = PTHREAD_ONCE_INIT;
static void conds_init(void)
{
    rfs_cond_init_monotonic(&E.work);
    rfs_cond_init_monotonic(&E.done);
}

/* Coalescing stops at this many extents per chunk: one list-I/O frame carries them. */
#define CHUNK_MAX_EXT 65536u
/* Bx is re-estimated once this much time passed between completions (see note_bandwidth). */
#define BX_WINDOW_S 0.25
/* Senders start a chunk only once the application has been out of ABT's write calls for
 * SEND_QUIET_S, or the chunk has waited SEND_DEFER_MAX_S (see sendable()). */
#define SEND_QUIET_S 0.0005
#define SEND_DEFER_MAX_S 0.02

/* Bx window (see note_bandwidth): opened at a completion, -1 while none is open. */
static double win_start = -1, win_bytes;
/* The current busy period (at least one send in flight), for a first estimate of Bx. */
static double period_bytes;

double rfs_abt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    uint64_t kb = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %" SCNu64, &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb ? kb * 1024u : (uint64_t)1 << 30;
}

void rfs_abt_config_default(rfs_abt_config *c)
{
    *c = (rfs_abt_config){
        .buffer_size = RFS_ABT_DEFAULT_BUFFER,
        .threads = RFS_ABT_DEFAULT_THREADS,
        .background_staging = 1,
        .local_ranks = 1,
        .wait_timeout_s = RFS_ABT_DEFAULT_WAIT_TIMEOUT_MS / 1000.0,
    };
}

static void resolve_staging_dir(const char *hint, char *out, size_t cap)
{
    const char *d = hint && *hint ? hint : getenv("RFS_STAGING_DIR");
    if (!d || !*d)
        d = getenv("TMPDIR");
    if (!d || !*d)
        d = "/tmp";
    snprintf(out, cap, "%s", d);
}

/* ---- buffer pool (mu held) ---- */

static int pool_set_cap(uint64_t cap_bufs)
{
    void **nf = realloc(E.free_bufs, sizeof *nf * (cap_bufs ? cap_bufs : 1));
    if (!nf)
        return RFS_E_NOMEM;
    E.free_bufs = nf;
    E.cap_bufs = cap_bufs;
    E.stats.memory_cap = cap_bufs * E.buf_size;
    return RFS_OK;
}

static void *pool_get(void)
{
    if (E.used_bufs >= E.cap_bufs)
        return NULL;
    void *b = NULL;
    if (E.n_free) {
        b = E.free_bufs[--E.n_free];
    } else if ((b = malloc(E.buf_size)) != NULL) {
        E.n_alloc++;
    }
    if (!b)
        return NULL;
    E.used_bufs++;
    if (E.used_bufs * E.buf_size > E.stats.memory_peak)
        E.stats.memory_peak = E.used_bufs * E.buf_size;
    return b;
}

static void pool_put(void *b)
{
    E.used_bufs--;
    E.free_bufs[E.n_free++] = b;
}

static void pool_release_all(void)
{
    for (uint64_t i = 0; i < E.n_free; i++)
        free(E.free_bufs[i]);
    free(E.free_bufs);
    E.free_bufs = NULL;
    E.n_free = E.used_bufs = E.n_alloc = 0;
}

/* Writes one byte per page so the kernel maps them now. Not memset(0): the compiler turns
 * malloc + memset(0) into calloc, which leaves fresh mmap'ed memory untouched, so the
 * application's first write took every page fault after all. */
static void touch_pages(void *b, size_t len)
{
    volatile char *p = b;
    for (size_t i = 0; i < len; i += 4096)
        p[i] = 1;
    p[len - 1] = 1;
}

/* Allocates and touches buffers up to prefault_bufs while the application computes, so its
 * first output phase copies into memory that is already mapped. Called by the stager with mu
 * held; drops it while touching. A buffer the pool no longer has room for is freed. */
static void pool_prefault(void)
{
    while (!E.stop && E.n_alloc < E.prefault_bufs && E.n_alloc < E.cap_bufs) {
        E.n_alloc++;
        pthread_mutex_unlock(&E.mu);
        void *b = malloc(E.buf_size);
        if (b)
            touch_pages(b, E.buf_size);
        pthread_mutex_lock(&E.mu);
        if (!b) {
            E.n_alloc--;
            return;
        }
        if (E.n_free + E.used_bufs >= E.cap_bufs) {
            free(b);
            E.n_alloc--;
            return;
        }
        E.free_bufs[E.n_free++] = b;
        E.stats.bytes_prefaulted += E.buf_size;
    }
}

/* Adds the calling thread's CPU time to the statistics (mu held), when it exits. */
static void account_thread_cpu(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
        E.stats.thread_cpu_s += (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- journal (opened on first staging) ---- */

static int ensure_journal(void)
{
    if (E.journal)
        return RFS_OK;
    return rfs_journal_open(E.staging_dir, &E.journal);
}

/* Data held only in memory would be lost if its send failed while the staging disk is full:
 * it could then be neither delivered nor kept. So a write is taken into memory only once the
 * journal has room reserved for it: blocks allocated past the journal's end
 * (FALLOC_FL_KEEP_SIZE, invisible to recovery, which reads up to the file size), which an
 * append fills without needing new ones. Every append is reserved for first too, so one
 * never takes the room a buffered chunk counts on, and none is torn by a full disk. */

/* A record's header is 32 bytes today; the margin lets the format grow. */
#define REC_OVERHEAD 128u
/* Room is allocated ahead for up to this many more buffers, so most writes need no syscall;
 * never for more than the free buffers could hold: processes share the staging disk, and room
 * one holds for nothing is room another's writes fail for. */
#define RESV_STEP_BUFS 8u

static uint64_t rec_bytes(const abt_file *f, uint64_t len, uint32_t n_ext)
{
    return len + REC_OVERHEAD + strlen(f->name) + 16u * (uint64_t)n_ext;
}

static uint64_t journal_end(void)
{
    pthread_mutex_lock(&E.journal->mu);
    uint64_t end = E.journal->end;
    pthread_mutex_unlock(&E.journal->mu);
    return end;
}

static int try_fallocate(uint64_t from, uint64_t to)
{
    return to > from && fallocate(E.journal->fd, FALLOC_FL_KEEP_SIZE, (off_t)from,
                                  (off_t)(to - from)) != 0 ? errno : 0;
}

/* Makes sure the journal has room for everything it may have to take, plus extra. mu held. */
static int reserve(uint64_t extra)
{
    int rc = ensure_journal();
    if (rc != RFS_OK || E.resv_unsupported)
        return rc;
    uint64_t end = journal_end();
    uint64_t need = end + E.stage_claims + E.mem_need + extra;
    if (need <= E.resv_hi)
        return RFS_OK;
    uint64_t free_bufs = E.cap_bufs > E.used_bufs ? E.cap_bufs - E.used_bufs : 0;
    uint64_t ahead = need + (free_bufs < RESV_STEP_BUFS ? free_bufs : RESV_STEP_BUFS) * E.buf_size;
    int e = try_fallocate(end, ahead);
    if (e == ENOSPC || e == EDQUOT || e == EFBIG)
        e = try_fallocate(end, ahead = need);  /* a small disk may still hold what is needed */
    if (e == EOPNOTSUPP) {
        /* Cannot hold room ahead here: buffered data is then kept only if the disk has space
         * when a send fails (docs/abt.md). */
        RFS_LOGW("staging directory %s cannot preallocate; ABT keeps memory-held data in the "
                 "journal only while the disk has room", E.staging_dir);
        E.resv_unsupported = 1;
        return RFS_OK;
    }
    if (e)
        return rfs_fail(rfs_err_from_errno(e), "staging journal %s: no room for %" PRIu64
                        " more bytes: %s", E.journal->path, need - end, strerror(e));
    E.resv_hi = ahead;
    return RFS_OK;
}

/* Gives the room held past the journal's end back to the file system (mu held). */
static void release_reserve(void)
{
    uint64_t end = journal_end();
    if (E.resv_hi > end)
        fallocate(E.journal->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)end,
                  (off_t)(E.resv_hi - end));
    E.resv_hi = 0;
}

/* Stages a chunk's data; called without mu, with the chunk marked busy. from_memory: the chunk
 * is held in a buffer and its reserved room pays for the record. */
static int stage_chunk(abt_chunk *c, const void *data, int sync, int from_memory)
{
    pthread_mutex_lock(&E.mu);
    uint64_t rec = from_memory ? c->resv : rec_bytes(c->f, c->len, c->n_ext);
    int rc = from_memory ? ensure_journal() : reserve(rec);
    if (rc == RFS_OK) {
        if (from_memory)
            E.mem_need -= rec;
        E.stage_claims += rec;
    }
    pthread_mutex_unlock(&E.mu);
    if (rc != RFS_OK)
        return rc;
    double t0 = rfs_abt_now();
    rc = rfs_journal_append(E.journal, c->seq, c->f->name, c->ext, c->n_ext, data, c->len, sync,
                            &c->rec_off, &c->data_off);
    double dt = rfs_abt_now() - t0;
    pthread_mutex_lock(&E.mu);
    E.stage_claims -= rec;
    if (from_memory && rc != RFS_OK)
        E.mem_need += rec;
    else if (from_memory)
        c->resv = 0;
    if (rc == RFS_OK && dt > 0 && c->len >= 65536) {
        E.bw = rfs_ewma(E.bw, (double)c->len / dt, 0.3);
        E.stats.staging_bw = E.bw;
    }
    pthread_mutex_unlock(&E.mu);
    return rc;
}

/* ---- queue ---- */

static int overlaps(const abt_chunk *a, uint64_t lo, uint64_t hi) { return a->lo < hi && lo < a->hi; }

static void fifo_append(abt_chunk *c)
{
    c->prev = E.tail;
    c->next = NULL;
    if (E.tail)
        E.tail->next = c;
    else
        E.head = c;
    E.tail = c;
}

static void fifo_remove(abt_chunk *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        E.head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        E.tail = c->prev;
}

static int add_extents(abt_chunk *c, const rfs_extent *ext, size_t n)
{
    if (c->n_ext + n > c->cap_ext) {
        uint32_t cap = c->cap_ext ? c->cap_ext : 4;
        while (cap < c->n_ext + n)
            cap *= 2;
        rfs_extent *ne = realloc(c->ext, sizeof *ne * cap);
        if (!ne)
            return RFS_E_NOMEM;
        c->ext = ne;
        c->cap_ext = cap;
    }
    for (size_t i = 0; i < n; i++) {
        if (ext[i].length == 0)
            continue;
        rfs_extent *last = c->n_ext ? &c->ext[c->n_ext - 1] : NULL;
        if (last && last->offset + last->length == ext[i].offset)
            last->length += ext[i].length;
        else
            c->ext[c->n_ext++] = ext[i];
        if (c->n_ext == 1 && c->len == 0) {
            c->lo = ext[i].offset;
            c->hi = ext[i].offset + ext[i].length;
        }
        if (ext[i].offset < c->lo)
            c->lo = ext[i].offset;
        if (ext[i].offset + ext[i].length > c->hi)
            c->hi = ext[i].offset + ext[i].length;
    }
    return RFS_OK;
}

static void range_of(const rfs_extent *ext, size_t n, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (ext[i].length == 0)
            continue;
        if (ext[i].offset < *lo)
            *lo = ext[i].offset;
        if (ext[i].offset + ext[i].length > *hi)
            *hi = ext[i].offset + ext[i].length;
    }
    if (*lo > *hi)
        *lo = *hi = 0;
}

/* Buffers are queued without waking the senders (the write call wakes them once when it
 * returns, see sendable()), except when the oldest chunk has waited longer than senders defer
 * to a write: a long write call (many buffers, foreground staging) then streams. mu held. */
static void wake_if_overdue(void)
{
    if (E.head && rfs_abt_now() - E.head->born >= SEND_DEFER_MAX_S)
        pthread_cond_broadcast(&E.work);
}

/* Copies the next len bytes of the source to dst. */
static void src_copy(abt_src *s, uint8_t *dst, size_t len)
{
    while (len > 0 && s->i < s->n) {
        size_t left = s->iov[s->i].iov_len - s->at;
        size_t k = left < len ? left : len;
        memcpy(dst, (const uint8_t *)s->iov[s->i].iov_base + s->at, k);
        dst += k;
        len -= k;
        s->at += k;
        if (s->at == s->iov[s->i].iov_len) {
            s->i++;
            s->at = 0;
        }
    }
}

/* The next len bytes of the source as one contiguous block: in place when one run holds them,
 * else gathered into *bounce (the caller frees it). NULL when out of memory. */
static const uint8_t *src_take(abt_src *s, size_t len, uint8_t **bounce)
{
    *bounce = NULL;
    while (s->i < s->n && s->at == s->iov[s->i].iov_len) {
        s->i++;
        s->at = 0;
    }
    if (s->i < s->n && s->iov[s->i].iov_len - s->at >= len) {
        const uint8_t *p = (const uint8_t *)s->iov[s->i].iov_base + s->at;
        s->at += len;
        return p;
    }
    if (!(*bounce = malloc(len ? len : 1)))
        return NULL;
    src_copy(s, *bounce, len);
    return *bounce;
}

/* Appends the piece to f's newest chunk when it fits there (small writes become one list
 * I/O); its journal room grows with it. Returns 1 if done. mu held. */
static int coalesce(abt_file *f, const rfs_extent *ext, size_t n, abt_src *src, uint64_t len,
                    uint64_t lo, uint64_t hi)
{
    abt_chunk *c = f->last;
    if (!c || c->sealed || c->inflight || c->staged || !c->buf || c->busy != 0 ||
        c->len + len > E.buf_size || c->n_ext + n > CHUNK_MAX_EXT || overlaps(c, lo, hi))
        return 0;
    uint64_t more = len + 16u * (uint64_t)n;
    if (reserve(more) != RFS_OK || add_extents(c, ext, n) != RFS_OK)
        return 0;
    c->resv += more;
    E.mem_need += more;
    uint64_t at = c->len;
    c->len += len;
    c->busy++;
    E.stats.bytes_buffered += len;
    pthread_mutex_unlock(&E.mu);
    src_copy(src, c->buf + at, len);
    pthread_mutex_lock(&E.mu);
    c->busy--;
    wake_if_overdue();
    return 1;
}

/* A buffer for c, with journal room reserved for its record. mu held. */
static int take_buffer(abt_chunk *c, uint64_t rec)
{
    void *b = pool_get();
    if (!b)
        return RFS_E_NOSPC;
    int rc = reserve(rec);
    if (rc != RFS_OK) {
        pool_put(b);
        return rc;
    }
    c->buf = b;
    c->resv = rec;
    E.mem_need += rec;
    return RFS_OK;
}

/* Waits on cv until woken or until the monotonic time `until` (mu held). */
static void wait_until(pthread_cond_t *cv, double until)
{
    if (until <= rfs_abt_now())
        return;
    /* rfs_abt_now is CLOCK_MONOTONIC in seconds; 1 us late rather than early */
    struct timespec ts = rfs_deadline_at((int64_t)(until * 1e9) + 1000);
    pthread_cond_timedwait(cv, &E.mu, &ts);
}

/* Why a write that found no room must not wait any longer, or NULL. Waiting helps only while
 * writes are being delivered: that frees buffers and, once a queue is empty, its journal. mu
 * held. */
static const char *no_use_waiting(const abt_chunk *c, int rc, uint64_t failures0,
                                  double deadline)
{
    if (E.failures != failures0 || E.last_failed)
        return "the server is not taking writes";
    int space = rc == RFS_E_NOSPC || rc == RFS_E_DQUOT || rc == RFS_E_FBIG;
    if (!space && E.head == c && !c->next)
        return "nothing is queued whose delivery could free room";
    if (rfs_abt_now() >= deadline)
        return "nothing was delivered within rfs_abt_wait_timeout_ms";
    return NULL;
}

/* The staging disk may be full of other processes' journals, whose deliveries free room
 * without telling this one: a waiting write looks again now and then. */
#define ROOM_POLL_S 0.05

static int placement_failed(abt_chunk *c, int rc, const char *why, const rfs_status *cause)
{
    char srv[600] = "";
    if (E.last_failed)
        snprintf(srv, sizeof srv, " (last failure: %s)", E.last_fail);
    /* The reason first: MPI error strings may be cut at 256 characters (Open MPI). */
    return rfs_fail(rc, "%s:%s: write of %" PRIu64 " bytes at offset %" PRIu64 " not accepted "
                    "(nothing of it buffered): no buffer or staging room and %s%s; staging in "
                    "%s: %s", c->f->io.server, c->f->io.path, c->len, c->lo, why, srv,
                    E.staging_dir, cause->msg);
}

/* Puts a new chunk's data in a buffer (with journal room reserved) or in the journal. When
 * neither has room it waits, but only while writes are being delivered and for at most the
 * file's wait timeout without a delivery: a write that cannot be kept fails here, at the call,
 * instead of being acknowledged and lost later. mu held; the chunk is busy. */
static int place_piece(abt_chunk *c, abt_src *src)
{
    abt_file *f = c->f;
    uint64_t rec = rec_bytes(f, c->len, c->n_ext), failures0 = E.failures;
    uint64_t delivered = E.delivered;
    double deadline = rfs_abt_now() + f->wait_timeout_s;
    uint8_t *bounce = NULL;
    const uint8_t *data = NULL;  /* the bytes, once taken from src for staging */
    rfs_status cause;  /* why staging failed, past the waits */
    int rc;
    for (;;) {
        if (take_buffer(c, rec) == RFS_OK) {
            pthread_mutex_unlock(&E.mu);
            if (data)
                memcpy(c->buf, data, c->len);
            else
                src_copy(src, c->buf, c->len);
            pthread_mutex_lock(&E.mu);
            E.stats.bytes_buffered += c->len;
            rc = RFS_OK;
            break;
        }
        pthread_mutex_unlock(&E.mu);
        if (!data)
            data = src_take(src, c->len, &bounce);
        rc = data ? stage_chunk(c, data, f->sync_staging, 0)
                  : rfs_fail(RFS_E_NOMEM, "out of memory gathering a write");
        pthread_mutex_lock(&E.mu);
        if (rc == RFS_OK) {
            c->staged = 1;  /* foreground staging */
            E.stats.bytes_staged_fg += c->len;
            break;
        }
        rfs_status_save(&cause, rc);
        if (E.delivered != delivered) {
            delivered = E.delivered;
            deadline = rfs_abt_now() + f->wait_timeout_s;
        }
        const char *why = no_use_waiting(c, rc, failures0, deadline);
        if (why) {
            rc = placement_failed(c, rc, why, &cause);
            break;
        }
        RFS_LOGD("%s: no room for %" PRIu64 " bytes (%s); waiting for deliveries", f->name,
                 c->len, cause.msg);
        double poll = rfs_abt_now() + ROOM_POLL_S;
        wait_until(&E.done, poll < deadline ? poll : deadline);
    }
    free(bounce);
    return rc;
}

/* Takes a chunk that could not be placed out of the queue again (mu held). */
static void drop_chunk(abt_chunk *c)
{
    abt_file *f = c->f;
    fifo_remove(c);
    if (f->last == c)
        f->last = NULL;
    f->pending--;
    free(c->ext);
    free(c);
    pthread_cond_broadcast(&E.done);
}

/* Queues one piece of at most buf_size bytes, taken from src. */
static int put_piece(abt_file *f, const rfs_extent *ext, size_t n, abt_src *src, uint64_t len)
{
    uint64_t lo, hi;
    range_of(ext, n, &lo, &hi);
    pthread_mutex_lock(&E.mu);
    if (coalesce(f, ext, n, src, len, lo, hi)) {
        pthread_mutex_unlock(&E.mu);
        return RFS_OK;
    }
    abt_chunk *c = calloc(1, sizeof *c);
    if (!c || add_extents(c, ext, n) != RFS_OK) {
        free(c);
        pthread_mutex_unlock(&E.mu);
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory buffering a write", f->name);
    }
    c->f = f;
    c->seq = E.next_seq++;
    c->born = rfs_abt_now();
    c->len = len;
    c->busy = 1;
    if (f->last)
        f->last->sealed = 1;
    f->last = c;
    f->pending++;
    fifo_append(c);
    int rc = place_piece(c, src);
    if (rc != RFS_OK) {
        drop_chunk(c);
    } else {
        c->busy--;
        wake_if_overdue();
    }
    pthread_mutex_unlock(&E.mu);
    return rc;
}

int rfs_abt_enqueue(abt_file *f, const rfs_extent *ext, size_t n, abt_src *src, uint64_t len)
{
    double t_enter = rfs_abt_now();
    pthread_mutex_lock(&E.mu);
    rfs_abt_phases_write(&E.phases, t_enter, len);
    E.writing++;
    pthread_mutex_unlock(&E.mu);

    /* Cut the write into pieces of at most one buffer, each with the extents it covers. */
    size_t i = 0;
    uint64_t used_in_ext = 0;
    rfs_extent stackbuf[64];
    rfs_extent *pext = stackbuf;
    size_t pcap = 64;
    int rc = RFS_OK;
    while (rc == RFS_OK && len > 0) {
        size_t pn = 0;
        uint64_t plen = 0;
        while (i < n && plen < E.buf_size) {
            uint64_t avail = ext[i].length - used_in_ext;
            uint64_t take = avail < E.buf_size - plen ? avail : E.buf_size - plen;
            if (pn == pcap) {
                rfs_extent *ne = malloc(sizeof *ne * pcap * 2);
                if (!ne) {
                    rc = rfs_fail(RFS_E_NOMEM, "%s: out of memory buffering a write", f->name);
                    break;
                }
                memcpy(ne, pext, sizeof *ne * pn);
                if (pext != stackbuf)
                    free(pext);
                pext = ne;
                pcap *= 2;
            }
            if (take > 0)
                pext[pn++] = (rfs_extent){ext[i].offset + used_in_ext, take};
            plen += take;
            used_in_ext += take;
            if (used_in_ext == ext[i].length) {
                i++;
                used_in_ext = 0;
            }
        }
        if (rc != RFS_OK || plen == 0)
            break;
        rc = put_piece(f, pext, pn, src, plen);
        len -= plen;
    }
    if (pext != stackbuf)
        free(pext);
    double t_leave = rfs_abt_now();
    pthread_mutex_lock(&E.mu);
    E.stats.enqueue_s += t_leave - t_enter;
    E.writing--;
    E.last_write_end = t_leave;
    /* One wake-up per write call, not per buffer: the senders wait for the write to end. */
    pthread_cond_broadcast(&E.work);
    pthread_mutex_unlock(&E.mu);
    return rc;
}

/* ---- senders ---- */

/* Memory-held chunks go first: sending one frees a buffer for the next output phase, sending
 * a staged one frees nothing. Eq. (1) counts every byte the link carries (I * Bx) as freed
 * buffer space, which only holds if staged chunks wait while memory-held ones are queued;
 * otherwise the staged backlog of earlier phases is sent first and the next phase finds the
 * buffers still full (foreground staging). The overlap rule below keeps program order where
 * it matters. */
static abt_chunk *pick_pass(int memory_only)
{
    for (abt_chunk *c = E.head; c; c = c->next) {
        if (c->inflight || c->busy)
            continue;
        if (memory_only && (c->staged || !c->buf))
            continue;
        int blocked = 0;
        /* An earlier write the server has answered is in the file: a later one on the same
         * bytes may go while the version after the earlier one is still being asked for
         * (finish_chunk); HDF5 fills a chunk and writes it right after, so this saves a round
         * trip per dataset. */
        for (abt_chunk *d = E.head; d != c; d = d->next)
            if (d->f == c->f && !d->answered && overlaps(d, c->lo, c->hi)) {
                blocked = 1;
                break;
            }
        if (!blocked)
            return c;
    }
    return NULL;
}

static abt_chunk *pick(void)
{
    abt_chunk *c = pick_pass(1);
    return c ? c : pick_pass(0);
}

static int send_chunk(abt_chunk *c, rfs_status *st)
{
    uint8_t *data = c->buf, *tmp = NULL;
    int rc = RFS_OK;
    if (c->staged) {
        tmp = malloc(c->len ? c->len : 1);
        rc = tmp ? rfs_journal_read(E.journal, c->data_off, tmp, c->len)
                 : rfs_fail(RFS_E_NOMEM, "out of memory reading back staged data");
        data = tmp;
    }
    rfs_io *b = c->f->below;
    size_t done = 0;
    if (rc == RFS_OK) {
        if (c->n_ext == 1)
            rc = b->ops->pwrite(b, data, c->len, c->ext[0].offset, &done);
        else
            rc = b->ops->pwritev(b, c->ext, c->n_ext, data, &done);
        if (rc == RFS_OK && done != c->len)
            rc = rfs_fail(RFS_E_IO, "short write (%zu of %" PRIu64 " bytes)", done, c->len);
    }
    st->rc = rc;
    if (rc != RFS_OK)  /* its message goes with it to finish_chunk, past the version probe */
        rfs_status_save(st, rc);
    free(tmp);
    return rc;
}

static void close_below_locked(abt_file *f)
{
    rfs_abt_unregister_file(f);
    pthread_mutex_unlock(&E.mu);
    rfs_status closed;
    rfs_status_save(&closed, f->below->ops->close(f->below));
    pthread_mutex_lock(&E.mu);
    int err = f->err ? f->err : closed.rc;
    if (err != RFS_OK && E.final_err == RFS_OK) {
        E.final_err = err;
        snprintf(E.final_msg, sizeof E.final_msg, "%s: %s", f->name,
                 f->err ? f->errmsg : closed.msg);
    }
    free(f->name);
    free(f);
    pthread_cond_broadcast(&E.done);
}

/* 1 if a chunk of c's file other than c is being sent. */
static int file_busy_besides(const abt_chunk *c)
{
    for (abt_chunk *d = E.head; d; d = d->next)
        if (d != c && d->f == c->f && d->inflight)
            return 1;
    return 0;
}

/* 1 if a chunk of c's file other than c is queued and not answered yet. A chunk answered
 * and having its version asked for does not count: a write sent meanwhile (on other bytes, or
 * on its bytes once answered) must ask again, or the version noted last could predate it. */
static int unanswered_besides(const abt_chunk *c)
{
    for (abt_chunk *d = E.head; d; d = d->next)
        if (d != c && d->f == c->f && !d->answered)
            return 1;
    return 0;
}

/* What writes waiting for space go by: deliveries free room, failures mean waiting is
 * pointless (mu held). */
static void note_outcome(int rc, const char *msg)
{
    E.last_failed = rc != RFS_OK;
    if (rc == RFS_OK) {
        E.delivered++;
        return;
    }
    E.failures++;
    snprintf(E.last_fail, sizeof E.last_fail, "%s", msg);
}

static int read_below_version(void *ctx, rfs_journal_version *v)
{
    rfs_io *b = ctx;
    rfs_io_version iv;
    int rc = b->ops->version(b, &iv);
    v->size = iv.size;
    v->mtime_ns = iv.mtime_ns;
    return rc;
}

int rfs_abt_note_version(abt_file *f)
{
    if (atomic_load(&f->versions) < 0)
        return 0;
    int rc = rfs_journal_note(f->name, read_below_version, f->below);
    if (rc == RFS_OK) {
        atomic_store(&f->versions, 1);
        return 1;
    }
    if (rc != RFS_E_BUSY)
        atomic_store(&f->versions, -1);   /* an older server: STAT probes from now on */
    rfs_clear_error();
    return 0;
}

/* noted: the version after c is already in the journal's table (from its reply). */
static void finish_chunk(abt_chunk *c, int rc, const char *msg, int noted)
{
    abt_file *f = c->f;
    /* Its send is over: it must not count as in flight for another completion of the file
     * while mu is let go below (the version probe, the journal mark of a staged chunk). It
     * did: a completion that skipped its probe because the other was in flight then made the
     * other skip too, while it marked its record done, and the journal kept the version of
     * before both (1 run in 4 of test_writer_records_version_after_its_deliveries). Busy until
     * it leaves the queue, so nobody picks it and sends it again meanwhile. */
    c->inflight = 0;
    c->busy++;
    /* Barriers and reads wait only for this (rfs_abt_wait_file): the bytes are in the file. */
    if (rc == RFS_OK) {
        c->answered = 1;
        pthread_cond_broadcast(&E.done);
        pthread_cond_broadcast(&E.work);  /* later writes on its bytes may go now */
    }
    /* A write the server refused (disk full, quota) may still have landed in part: the
     * version after it is ours too. After a lost connection nothing can be asked. */
    int server_answered = rc != RFS_E_CONN && rc != RFS_E_TIMEOUT && rc != RFS_E_PROTO;
    char *probe = !noted && server_answered && !file_busy_besides(c) &&
                  (!unanswered_besides(c) || rfs_journal_track_due(f->name)) ? strdup(f->name)
                                                                             : NULL;
    if (probe) {
        /* Replay safety: with no other write of the file in flight, what the server reports
         * now is the version `rfs recover` must find before it replays this file
         * (abt/journal.h). Asked while c is still queued, so a sync of the file returns only
         * once it is known. */
        pthread_mutex_unlock(&E.mu);
        rfs_journal_track(probe);
        pthread_mutex_lock(&E.mu);
        free(probe);
    }
    note_outcome(rc, msg);
    if (rc == RFS_OK) {
        E.stats.bytes_sent += c->len;
        if (c->staged) {
            pthread_mutex_unlock(&E.mu);
            rfs_journal_mark_done(E.journal, c->rec_off);
            pthread_mutex_lock(&E.mu);
        }
    } else {
        E.stats.bytes_failed += c->len;
        char kept[160] = "";
        if (!c->staged) {
            /* Keep undelivered data so `rfs recover` can deliver it later. */
            c->busy++;
            pthread_mutex_unlock(&E.mu);
            int src = stage_chunk(c, c->buf, 1, 1);
            pthread_mutex_lock(&E.mu);
            c->busy--;
            if (src != RFS_OK)
                snprintf(kept, sizeof kept, "; could not keep the data in the staging journal, "
                         "%" PRIu64 " bytes are lost", c->len);
        }
        if (f->err == RFS_OK) {
            f->err = rc;
            snprintf(f->errmsg, sizeof f->errmsg,
                     "background write of %" PRIu64 " bytes at offset %" PRIu64 " failed: %s%s%s%s",
                     c->len, c->lo, msg, kept, kept[0] ? "" : "; the data is kept in ",
                     kept[0] ? "" : E.staging_dir);
        }
    }
    fifo_remove(c);
    if (f->last == c)
        f->last = NULL;
    if (c->buf)
        pool_put(c->buf);
    E.mem_need -= c->resv;
    f->pending--;
    free(c->ext);
    free(c);
    if (!E.head && E.journal) {
        uint64_t end = journal_end();
        rfs_journal_trim(E.journal);
        if (end > 0 && journal_end() == 0)
            E.resv_hi = 0;  /* the truncation freed the room held past the end too */
    }
    pthread_cond_broadcast(&E.done);
    if (f->closing && f->pending == 0)
        close_below_locked(f);
}

/* Bx is measured between completions: bytes completed after a completion, over the time since
 * it. Several sends are in flight at once, so counting from the start of a busy period would
 * charge the first completion with the transfer time of every send in flight but only its own
 * bytes (up to threads x too low, which makes eq. (1) stage far too much); between two
 * completions the bytes that were already on their way cancel out. Called with mu held, before
 * n_inflight is decremented. */
static void note_bandwidth(uint64_t bytes, double now)
{
    period_bytes += (double)bytes;
    if (win_start < 0) {
        win_start = now;
        win_bytes = 0;
    } else {
        win_bytes += (double)bytes;
        double dt = now - win_start;
        int last = E.n_inflight == 1;  /* this completion ends the busy period */
        /* A busy period's last window counts only if it is long enough: completions that
         * arrive in a burst (pipelined replies) would otherwise give any rate at all. */
        if (dt > 0 && win_bytes > 0 && (dt >= BX_WINDOW_S || (last && dt >= BX_WINDOW_S / 4))) {
            E.bx = rfs_ewma(E.bx, win_bytes / dt, 0.3);
            E.stats.remote_bw = E.bx;
            win_start = now;
            win_bytes = 0;
        }
    }
    if (E.n_inflight == 1) {
        /* A busy period of one send gives no window: take its bytes over its whole time
         * (request latency included) until a better estimate exists. */
        if (E.bx <= 0 && now > E.busy_mark && period_bytes > 0) {
            E.bx = period_bytes / (now - E.busy_mark);
            E.stats.remote_bw = E.bx;
        }
        win_start = -1;
        period_bytes = 0;
    }
}

/* Senders yield to the application: while it is copying a write into the buffers, a sender
 * sending (copying into the socket, running the TCP stack) would take the CPU and memory
 * bandwidth that write is waiting for, on a node whose cores all compute. A chunk is started
 * once no write call has been in ABT for SEND_QUIET_S -- the link loses well under a
 * millisecond per output phase -- or once it has waited SEND_DEFER_MAX_S, so a program that
 * writes without pause still streams. Returns 1, or 0 and the time to look again. */
static int sendable(const abt_chunk *c, double now, double *retry)
{
    if (E.stop)
        return 1;
    double quiet_at = E.writing ? now + SEND_DEFER_MAX_S : E.last_write_end + SEND_QUIET_S;
    double due = c->born + SEND_DEFER_MAX_S;
    if (now >= quiet_at || now >= due)
        return 1;
    *retry = quiet_at < due ? quiet_at : due;
    return 0;
}

static void *sender_main(void *arg)
{
    (void)arg;
    rfs_status sent;
    pthread_mutex_lock(&E.mu);
    for (;;) {
        abt_chunk *c = pick();
        if (!c) {
            if (E.stop && !E.head)
                break;
            pthread_cond_wait(&E.work, &E.mu);
            continue;
        }
        double retry;
        if (!sendable(c, rfs_abt_now(), &retry)) {
            wait_until(&E.work, retry);
            continue;
        }
        c->inflight = 1;
        c->sealed = 1;
        if (E.n_inflight++ == 0)
            E.busy_mark = rfs_abt_now();
        pthread_mutex_unlock(&E.mu);
        int rc = send_chunk(c, &sent);
        /* Replay safety: the version the reply carried (no round trip), noted before the chunk
         * leaves the queue, so a sync of the file returns only once it is in the journal. */
        int noted = rfs_abt_note_version(c->f);
        pthread_mutex_lock(&E.mu);
        note_bandwidth(rc == RFS_OK ? c->len : 0, rfs_abt_now());
        E.n_inflight--;
        finish_chunk(c, rc, sent.msg, noted);
    }
    account_thread_cpu();
    pthread_mutex_unlock(&E.mu);
    return NULL;
}

/* ---- background staging (eq. 1) ---- */

static abt_chunk *newest_in_memory(void)
{
    for (abt_chunk *c = E.tail; c; c = c->prev)
        if (c->buf && !c->inflight && !c->busy && !c->staged)
            return c;
    return NULL;
}

static void stage_one_step(double now)
{
    if (!rfs_abt_phases_computing(&E.phases, now)) {
        E.staged_this_phase = 0;
        E.computing_since = -1;
        return;
    }
    if (E.computing_since < 0)
        E.computing_since = now;
    double i_rem = E.hint_interval > 0 ? E.phases.phase_start + E.hint_interval - now
                                       : rfs_abt_phases_remaining(&E.phases, now);
    if (E.hint_interval > 0 && i_rem < 0)
        i_rem = 0;  /* overdue: the next output phase may start any moment */
    double n = E.hint_output ? (double)E.hint_output : E.phases.output;
    E.stats.interval_s = E.hint_interval > 0 ? E.hint_interval : E.phases.interval;
    E.stats.output_bytes = (uint64_t)n;
    if (i_rem < 0 || n <= 0 || E.bx <= 0)
        return;
    if (i_rem < 0)
        i_rem = 0;
    double abs_max = (double)(E.cap_bufs * E.buf_size);
    double abs_now = (double)((E.cap_bufs - E.used_bufs) * E.buf_size);
    double buffered = (double)(E.used_bufs * E.buf_size);
    /* Until the first staging measures Bw, assume the local disk is far faster than the link. */
    double bw = E.bw > 0 ? E.bw : 100.0 * E.bx;
    double x = rfs_abt_stage_bytes(abs_max, abs_now, n, i_rem, E.bx, bw, buffered);
    if (x <= 0)
        return;
    /* Spread the staging over the computation phase rather than doing it all at once. */
    double elapsed = now - E.computing_since, total = elapsed + i_rem;
    double target = (x + (double)E.staged_this_phase) * (total > 0 ? elapsed / total : 1.0) +
                    (double)E.buf_size;
    if ((double)E.staged_this_phase >= target)
        return;
    abt_chunk *c = newest_in_memory();
    if (!c)
        return;
    c->busy++;
    c->sealed = 1;
    pthread_mutex_unlock(&E.mu);
    int rc = stage_chunk(c, c->buf, c->f->sync_staging, 1);
    pthread_mutex_lock(&E.mu);
    c->busy--;
    if (rc == RFS_OK) {
        c->staged = 1;
        pool_put(c->buf);
        c->buf = NULL;
        E.stats.bytes_staged_bg += c->len;
        E.staged_this_phase += c->len;
    }
    pthread_cond_broadcast(&E.work);
}

static void *stager_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&E.mu);
    pool_prefault();
    while (!E.stop) {
        if (!E.head) {
            /* Nothing buffered, nothing to stage: sleep until a write queues a chunk (no
             * 10 ms polling that would preempt the computation for nothing). */
            pthread_cond_wait(&E.work, &E.mu);
            continue;
        }
        struct timespec ts = rfs_deadline_ms(10);
        pthread_cond_timedwait(&E.work, &E.mu, &ts);
        if (!E.stop && E.bg_staging)
            stage_one_step(rfs_abt_now());
    }
    account_thread_cpu();
    pthread_mutex_unlock(&E.mu);
    return NULL;
}

/* ---- lifecycle ---- */

int rfs_abt_engine_start(const rfs_abt_config *c)
{
    pthread_once(&conds_once, conds_init);
    pthread_mutex_lock(&E.mu);
    if (E.started) {
        uint64_t want = c->max_memory / E.buf_size;
        int rc = want > E.cap_bufs ? pool_set_cap(want) : RFS_OK;
        pthread_mutex_unlock(&E.mu);
        return rc;
    }
    E.buf_size = c->buffer_size ? c->buffer_size : RFS_ABT_DEFAULT_BUFFER;
    if (E.buf_size < 4096)
        E.buf_size = 4096;
    uint64_t cap = c->max_memory;
    if (!cap) {
        int ranks = c->local_ranks > 0 ? c->local_ranks : 1;
        cap = (uint64_t)((double)mem_available() * RFS_ABT_DEFAULT_MEM_SHARE) / (uint64_t)ranks;
        if (cap > RFS_ABT_DEFAULT_MEM_MAX)
            cap = RFS_ABT_DEFAULT_MEM_MAX;
    }
    if (pool_set_cap(cap / E.buf_size) != RFS_OK) {
        pthread_mutex_unlock(&E.mu);
        return rfs_fail(RFS_E_NOMEM, "ABT: out of memory");
    }
    /* A cap the user gave is memory meant for ABT: touch all of it up front. */
    uint64_t prefault = c->max_memory ? cap : RFS_ABT_DEFAULT_PREFAULT;
    E.prefault_bufs = prefault / E.buf_size;
    resolve_staging_dir(c->staging_dir, E.staging_dir, sizeof E.staging_dir);
    E.n_threads = c->threads < 1 ? 1 : c->threads > 16 ? 16 : c->threads;
    E.bg_staging = c->background_staging;
    E.hint_interval = c->interval_s;
    E.hint_output = c->output_bytes;
    rfs_abt_phases_init(&E.phases, 0.1);
    E.computing_since = -1;
    E.stop = 0;
    E.final_err = RFS_OK;
    E.bx = E.bw = 0;
    E.resv_hi = E.mem_need = E.stage_claims = 0;
    E.resv_unsupported = 0;
    E.delivered = E.failures = 0;
    E.last_failed = 0;
    win_start = -1;
    win_bytes = period_bytes = 0;
    memset(&E.stats, 0, sizeof E.stats);
    E.stats.memory_cap = E.cap_bufs * E.buf_size;
    int started = 0;
    for (int i = 0; i < E.n_threads; i++)
        if (pthread_create(&E.threads[i], NULL, sender_main, NULL) == 0)
            started++;
    E.n_threads = started;
    if (started == 0 || pthread_create(&E.stager, NULL, stager_main, NULL) != 0) {
        E.stop = 1;
        pthread_cond_broadcast(&E.work);
        pthread_mutex_unlock(&E.mu);
        for (int i = 0; i < started; i++)
            pthread_join(E.threads[i], NULL);
        return rfs_fail(RFS_E_NOMEM, "ABT: cannot start background threads");
    }
    E.started = 1;
    pthread_mutex_unlock(&E.mu);
    return RFS_OK;
}

void rfs_abt_register_file(abt_file *f)
{
    f->next_open = E.open_files;
    f->prev_open = NULL;
    if (E.open_files)
        E.open_files->prev_open = f;
    E.open_files = f;
}

void rfs_abt_unregister_file(abt_file *f)
{
    if (f->prev_open)
        f->prev_open->next_open = f->next_open;
    else
        E.open_files = f->next_open;
    if (f->next_open)
        f->next_open->prev_open = f->prev_open;
}

void rfs_abt_wait_file(abt_file *f, uint64_t lo, uint64_t hi, int answered_enough)
{
    pthread_mutex_lock(&E.mu);
    for (;;) {
        int busy = 0;
        if (f->pending > 0)
            for (abt_chunk *c = E.head; c && !busy; c = c->next)
                busy = c->f == f && overlaps(c, lo, hi) && !(answered_enough && c->answered);
        if (!busy)
            break;
        pthread_cond_wait(&E.done, &E.mu);
    }
    pthread_mutex_unlock(&E.mu);
}

void rfs_abt_wait_queued(abt_file *f)
{
    pthread_mutex_lock(&E.mu);
    uint64_t mark = E.next_seq;
    for (;;) {
        int busy = 0;
        /* Until they left the queue: answered and the file version after them noted, so a
         * waiting barrier ends a burst for replay safety too (docs/abt.md). */
        if (f->pending > 0)
            for (abt_chunk *c = E.head; c && !busy; c = c->next)
                busy = c->f == f && c->seq < mark;
        if (!busy)
            break;
        pthread_cond_wait(&E.done, &E.mu);
    }
    pthread_mutex_unlock(&E.mu);
}

/* 1 if name and the parsed want name the same file (spellings of a name may differ). */
static int same_file(const char *name, const rfs_name *want)
{
    rfs_name n;
    return rfs_parse_name(name, &n) == RFS_OK && n.port == want->port &&
           strcmp(n.host, want->host) == 0 && strcmp(n.path, want->path) == 0;
}

void rfs_abt_wait_name(const char *name)
{
    rfs_name want;
    if (rfs_parse_name(name, &want) != RFS_OK)
        return;
    pthread_mutex_lock(&E.mu);
    while (E.started) {
        int busy = 0;
        for (abt_file *f = E.open_files; f && !busy; f = f->next_open)
            busy = f->pending > 0 && same_file(f->name, &want);
        if (!busy)
            break;
        pthread_cond_wait(&E.done, &E.mu);
    }
    pthread_mutex_unlock(&E.mu);
}

uint64_t rfs_abt_write_mark(void)
{
    pthread_mutex_lock(&E.mu);
    uint64_t m = E.next_seq;
    pthread_mutex_unlock(&E.mu);
    return m;
}

int rfs_abt_mark_answered(abt_file *f, uint64_t mark)
{
    int busy = 0;
    pthread_mutex_lock(&E.mu);
    if (f->pending > 0)
        for (abt_chunk *c = E.head; c && !busy; c = c->next)
            busy = c->f == f && c->seq < mark && !c->answered;
    pthread_mutex_unlock(&E.mu);
    return !busy;
}

uint64_t rfs_abt_pending_end(abt_file *f)
{
    uint64_t end = 0;
    pthread_mutex_lock(&E.mu);
    if (f->pending > 0)
        for (abt_chunk *c = E.head; c; c = c->next)
            if (c->f == f && c->len > 0 && c->hi > end)
                end = c->hi;
    pthread_mutex_unlock(&E.mu);
    return end;
}

int rfs_abt_take_error(abt_file *f)
{
    pthread_mutex_lock(&E.mu);
    int err = f->err;
    if (err != RFS_OK)
        rfs_fail(err, "%s: %s", f->name, f->errmsg);
    f->err = RFS_OK;
    pthread_mutex_unlock(&E.mu);
    return err;
}

static int any_closing(void)
{
    for (abt_file *f = E.open_files; f; f = f->next_open)
        if (f->closing)
            return 1;
    return 0;
}

int rfs_abt_finalize(void)
{
    pthread_mutex_lock(&E.mu);
    if (!E.started) {
        pthread_mutex_unlock(&E.mu);
        return RFS_OK;
    }
    while (E.head || any_closing())
        pthread_cond_wait(&E.done, &E.mu);
    E.stop = 1;
    pthread_cond_broadcast(&E.work);
    pthread_mutex_unlock(&E.mu);
    for (int i = 0; i < E.n_threads; i++)
        pthread_join(E.threads[i], NULL);
    pthread_join(E.stager, NULL);

    pthread_mutex_lock(&E.mu);
    int err = E.final_err;
    char msg[RFS_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%s", E.final_msg);
    for (abt_file *f = E.open_files; f && err == RFS_OK; f = f->next_open)
        if (f->err != RFS_OK) {
            err = f->err;
            snprintf(msg, sizeof msg, "%s: %s", f->name, f->errmsg);
        }
    if (E.journal) {
        release_reserve();
        char path[4200];
        snprintf(path, sizeof path, "%s", E.journal->path);
        if (rfs_journal_close(E.journal) && err == RFS_OK) {
            err = RFS_E_IO;
            snprintf(msg, sizeof msg, "undelivered writes remain in %s", path);
        }
        E.journal = NULL;
    }
    pool_release_all();
    E.started = 0;
    pthread_mutex_unlock(&E.mu);
    if (err != RFS_OK)
        return rfs_fail(err, "%s (run `rfs recover %s` once the server is reachable)", msg,
                        E.staging_dir);
    return RFS_OK;
}

void rfs_abt_get_stats(rfs_abt_stats *s)
{
    pthread_mutex_lock(&E.mu);
    *s = E.stats;
    s->phases = E.phases.phases;
    if (!s->interval_s)
        s->interval_s = E.phases.interval;
    if (!s->output_bytes)
        s->output_bytes = (uint64_t)E.phases.output;
    pthread_mutex_unlock(&E.mu);
}
