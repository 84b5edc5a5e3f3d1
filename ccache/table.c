/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The page table in shared memory: layout, table and page locks, LRU room-making, and writing
 * dirty pages below (cc_internal.h). Every wait here is bounded: by the peer's death, noticed
 * from its pid, or by the configured timeout. */
#include "ccache/cc_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/err.h"

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static size_t align_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

uint64_t rfs_cc_frames(int nranks, uint64_t page_size, uint64_t max_memory)
{
    uint64_t f = page_size ? max_memory / page_size : 0;
    uint64_t min = (uint64_t)(nranks > 0 ? nranks : 1) + 2;
    return f < min ? min : f;
}

void cc_layout(cc *c, int nranks, uint64_t page, uint64_t max_memory, size_t *total)
{
    uint64_t nf = rfs_cc_frames(nranks, page, max_memory);
    uint64_t nb = 64;
    while (nb < nf)
        nb <<= 1;
    uint64_t runs = page / 2048;
    c->max_runs = runs < CC_RUNS_MIN   ? CC_RUNS_MIN
                  : runs > CC_RUNS_MAX ? CC_RUNS_MAX
                                       : (uint32_t)runs;
    c->frame_size = align_up(sizeof(cc_frame) + 2 * sizeof(uint32_t) * c->max_runs, 8);
    c->nframes = nf;
    c->nbuckets = nb;
    c->off_buckets = align_up(sizeof(cc_head), 64);
    c->off_frames = align_up(c->off_buckets + (size_t)nb * sizeof(int32_t), 64);
    c->off_data = align_up(c->off_frames + (size_t)nf * c->frame_size, 4096);
    *total = c->off_data + (size_t)nf * (size_t)page;
}

size_t rfs_cc_meta_size(int nranks, uint64_t page_size, uint64_t max_memory)
{
    cc c;
    size_t total;
    cc_layout(&c, nranks, page_size, max_memory, &total);
    return c.off_data;
}

size_t rfs_cc_segment_size(int nranks, uint64_t page_size, uint64_t max_memory)
{
    cc c;
    size_t total;
    cc_layout(&c, nranks, page_size, max_memory, &total);
    return total;
}

/* The rank whose segment names pid, or -1. */
static int rank_of_pid(const cc *c, uint32_t pid)
{
    for (int r = 0; r < c->n; r++)
        if ((uint32_t)__atomic_load_n(&cc_head_of(c, r)->pid, __ATOMIC_ACQUIRE) == pid)
            return r;
    return -1;
}

void cc_hand_error(cc *c, int r, int rc, int by)
{
    cc_head *h = cc_head_of(c, r);
    int32_t zero = 0;
    if (__atomic_compare_exchange_n(&h->err, &zero, (int32_t)rc, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST))
        __atomic_store_n(&h->err_by, (int32_t)by, __ATOMIC_SEQ_CST);
}

static void tlock(cc *c, int o)
{
    cc_head *h = cc_head_of(c, o);
    for (;;) {
        uint32_t cur = 0;
        if (__atomic_compare_exchange_n(&h->lock, &cur, (uint32_t)c->pid, 0, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            return;
        /* A holder that died mid-update: take the lock over; what it guarded may be torn, so
         * every rank's next sync says so (broken). The critical sections are short and never
         * wait, so a live holder lets go soon. */
        if (rfs_shm_pid_dead((int32_t)cur) &&
            __atomic_compare_exchange_n(&h->lock, &cur, (uint32_t)c->pid, 0, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED)) {
            __atomic_store_n(&h->broken, 1, __ATOMIC_SEQ_CST);
            return;
        }
        __atomic_add_fetch(&h->lock_waiters, 1, __ATOMIC_SEQ_CST);
        rfs_shm_wait(&h->lock, cur, 10);
        __atomic_sub_fetch(&h->lock_waiters, 1, __ATOMIC_SEQ_CST);
    }
}

static void tunlock(cc *c, int o)
{
    cc_head *h = cc_head_of(c, o);
    __atomic_store_n(&h->lock, 0, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&h->lock_waiters, __ATOMIC_SEQ_CST))
        rfs_shm_wake(&h->lock);
}

static uint64_t bucket_of(const cc *c, uint64_t idx)
{
    return (idx / (uint64_t)c->n) & (c->nbuckets - 1);
}

/* table lock held */
static cc_frame *lookup(cc *c, int o, uint64_t idx)
{
    for (int32_t i = cc_buckets(c, o)[bucket_of(c, idx)]; i > 0;) {
        if ((uint64_t)(i - 1) >= c->nframes)
            break; /* a chain torn by a dead holder of the table lock */
        cc_frame *f = cc_frame_at(c, o, (uint64_t)(i - 1));
        if (f->used && f->idx == idx)
            return f;
        i = f->next;
    }
    return NULL;
}

/* table lock held */
static void link_frame(cc *c, int o, cc_frame *f)
{
    int32_t *b = &cc_buckets(c, o)[bucket_of(c, f->idx)];
    f->next = *b;
    *b = (int32_t)cc_frame_no(c, o, f) + 1;
}

/* table lock held */
static void unlink_frame(cc *c, int o, cc_frame *f)
{
    int32_t me = (int32_t)cc_frame_no(c, o, f) + 1;
    int32_t *pp = &cc_buckets(c, o)[bucket_of(c, f->idx)];
    for (int guard = 0; *pp > 0 && guard <= (int)c->nframes; guard++) {
        if (*pp == me) {
            *pp = f->next;
            break;
        }
        pp = &cc_frame_at(c, o, (uint64_t)(*pp - 1))->next;
    }
    f->next = 0;
}

static void clear_page(cc_frame *f)
{
    f->nruns = 0;
    f->filled = 0;
    memset(f->writers, 0, sizeof f->writers);
}

/* table lock held, the page lock just taken over from dead process `pid`: the dead process may
 * have been changing the page, so nothing of it can be trusted. The server keeps what was synced;
 * the other ranks whose unsynced bytes the page held hear of the loss at their next sync. */
static void lost_to_dead(cc *c, cc_frame *f, uint32_t pid)
{
    int d = rank_of_pid(c, pid);
    if (f->nruns)
        for (int r = 0; r < c->n; r++)
            if (r != d && cc_writer(f, r))
                cc_hand_error(c, r, RFS_E_IO, d);
    clear_page(f);
}

/* table lock held */
static void claim(cc *c, int o, cc_frame *f, uint64_t idx)
{
    cc_head *h = cc_head_of(c, o);
    f->idx = idx;
    clear_page(f);
    f->stamp = ++h->clock;
    if (!f->used) {
        f->used = 1;
        if (++h->used > h->peak)
            h->peak = h->used;
    }
    link_frame(c, o, f);
}

/* Page lock of f (in h's segment) just released: wakes whoever sleeps on it or on room. The
 * stores and loads are sequentially consistent, so a sleeper either is counted here or sees the
 * changed word when it goes to sleep. */
static void released(cc_head *h, cc_frame *f)
{
    if (__atomic_load_n(&h->pin_waiters, __ATOMIC_SEQ_CST))
        rfs_shm_wake(&f->pin);
    __atomic_add_fetch(&h->freed, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&h->room_waiters, __ATOMIC_SEQ_CST))
        rfs_shm_wake(&h->freed);
}

void cc_free_frame(cc *c, int o, cc_frame *f)
{
    cc_head *h = cc_head_of(c, o);
    tlock(c, o);
    if (f->used) {
        unlink_frame(c, o, f);
        f->used = 0;
        h->used--;
    }
    clear_page(f);
    __atomic_store_n(&f->pin, 0, __ATOMIC_SEQ_CST);
    tunlock(c, o);
    released(h, f);
}

void cc_unpin(cc *c, uint64_t idx, cc_frame *f)
{
    cc_head *h = cc_head_of(c, cc_owner(c, idx));
    __atomic_store_n(&f->pin, 0, __ATOMIC_SEQ_CST);
    released(h, f);
}

static int timed_out(const cc *c, uint64_t t0)
{
    return c->timeout_ms > 0 && now_ms() - t0 > (uint64_t)c->timeout_ms;
}

int cc_write_pages(cc *c, cc_frame *const *fr, const uint64_t *idx, size_t k, int hand_self)
{
    size_t nr = 0;
    for (size_t i = 0; i < k; i++)
        nr += fr[i]->nruns;
    if (nr == 0)
        return RFS_OK;
    rfs_extent *ext = malloc(nr * sizeof *ext);
    struct iovec *iov = malloc(nr * sizeof *iov);
    int rc = RFS_OK;
    uint64_t bytes = 0;
    if (!ext || !iov) {
        rc = rfs_fail(RFS_E_NOMEM, "%s:%s: no memory to write cached pages", c->io.server,
                      c->io.path);
    } else {
        size_t e = 0;
        for (size_t i = 0; i < k; i++) {
            int o = cc_owner(c, idx[i]);
            uint8_t *d = cc_data(c, o, cc_frame_no(c, o, fr[i]));
            uint64_t base = idx[i] * c->page;
            for (uint32_t r = 0; r < fr[i]->nruns; r++, e++) {
                uint64_t len = CC_HI(fr[i], r) - CC_LO(fr[i], r);
                ext[e] = (rfs_extent){base + CC_LO(fr[i], r), len};
                iov[e] = (struct iovec){d + CC_LO(fr[i], r), (size_t)len};
                bytes += len;
            }
        }
        size_t done = 0;
        rc = c->below->ops->pwritev_gather(c->below, ext, nr, iov, nr, &done);
        /* The answer, not only the send: another rank may read these pages from the server as
         * soon as they are clean. */
        int frc = c->below->ops->flush(c->below, 1);
        if (rc == RFS_OK)
            rc = frc;
    }
    free(ext);
    free(iov);
    if (rc != RFS_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", rfs_last_error());
        for (size_t i = 0; i < k; i++)
            for (int r = 0; r < c->n; r++)
                if (cc_writer(fr[i], r) && (hand_self || r != c->rank))
                    cc_hand_error(c, r, rc, c->rank);
        rfs_fail(rc, "%s", msg);
    }
    for (size_t i = 0; i < k; i++) {
        fr[i]->nruns = 0;
        memset(fr[i]->writers, 0, sizeof fr[i]->writers);
    }
    __atomic_add_fetch(&c->st.flushed_pages, (uint64_t)k, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->st.flushed_bytes, bytes, __ATOMIC_RELAXED);
    return rc;
}

/* table lock held: an unused frame, else the least recently used unlocked one, or NULL. */
static cc_frame *room(cc *c, int o)
{
    cc_frame *best = NULL;
    for (uint64_t i = 0; i < c->nframes; i++) {
        cc_frame *f = cc_frame_at(c, o, i);
        if (!f->used)
            return f;
        if (__atomic_load_n(&f->pin, __ATOMIC_ACQUIRE) == 0 && (!best || f->stamp < best->stamp))
            best = f;
    }
    return best;
}

int cc_pin_new(cc *c, uint64_t idx, cc_frame **out)
{
    int o = cc_owner(c, idx);
    *out = NULL;
    tlock(c, o);
    cc_frame *v = lookup(c, o, idx) ? NULL : room(c, o);
    if (v && (!v->used || v->nruns == 0)) {
        __atomic_store_n(&v->pin, (uint32_t)c->pid, __ATOMIC_RELEASE);
        if (v->used)
            unlink_frame(c, o, v);
        claim(c, o, v, idx);
        *out = v;
    }
    tunlock(c, o);
    return RFS_OK;
}

int cc_pin(cc *c, uint64_t idx, int create, cc_frame **out)
{
    int o = cc_owner(c, idx);
    cc_head *h = cc_head_of(c, o);
    uint64_t t0 = now_ms();
    *out = NULL;
    for (;;) {
        tlock(c, o);
        cc_frame *f = lookup(c, o, idx);
        if (f) {
            uint32_t holder = 0;
            if (__atomic_compare_exchange_n(&f->pin, &holder, (uint32_t)c->pid, 0, __ATOMIC_ACQUIRE,
                                            __ATOMIC_ACQUIRE)) {
                f->stamp = ++h->clock;
                tunlock(c, o);
                *out = f;
                return RFS_OK;
            }
            if (rfs_shm_pid_dead((int32_t)holder) &&
                __atomic_compare_exchange_n(&f->pin, &holder, (uint32_t)c->pid, 0, __ATOMIC_ACQUIRE,
                                            __ATOMIC_ACQUIRE)) {
                lost_to_dead(c, f, holder);
                f->stamp = ++h->clock;
                tunlock(c, o);
                *out = f;
                return RFS_OK;
            }
            tunlock(c, o);
            if (timed_out(c, t0))
                return rfs_fail(RFS_E_TIMEOUT,
                                "%s:%s: page %llu of the collaborative cache stayed locked by "
                                "process %u for %d ms",
                                c->io.server, c->io.path, (unsigned long long)idx, (unsigned)holder,
                                c->timeout_ms);
            __atomic_add_fetch(&h->pin_waiters, 1, __ATOMIC_SEQ_CST);
            rfs_shm_wait(&f->pin, holder, 50);
            __atomic_sub_fetch(&h->pin_waiters, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        if (!create) {
            tunlock(c, o);
            return RFS_OK;
        }
        cc_frame *v = room(c, o);
        if (!v) {
            /* Every page of the owner is locked by someone: each holder lets go soon (an
             * access holds one page at a time; a flush holds its batch while writing it). */
            uint32_t seen = __atomic_load_n(&h->freed, __ATOMIC_ACQUIRE);
            tunlock(c, o);
            if (timed_out(c, t0))
                return rfs_fail(RFS_E_TIMEOUT,
                                "%s:%s: no page of the collaborative cache came free within "
                                "%d ms",
                                c->io.server, c->io.path, c->timeout_ms);
            __atomic_add_fetch(&h->room_waiters, 1, __ATOMIC_SEQ_CST);
            rfs_shm_wait(&h->freed, seen, 50);
            __atomic_sub_fetch(&h->room_waiters, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        __atomic_store_n(&v->pin, (uint32_t)c->pid, __ATOMIC_RELEASE);
        if (!v->used || v->nruns == 0) {
            if (v->used)
                unlink_frame(c, o, v);
            claim(c, o, v, idx);
            tunlock(c, o);
            *out = v;
            return RFS_OK;
        }
        /* The least recently used page is dirty: written below (and answered) before its frame
         * takes the new page; a failure goes to its writers' next sync. Then look again: another
         * process may have brought page idx in meanwhile. */
        tunlock(c, o);
        uint64_t vidx = v->idx;
        int wrc = cc_write_pages(c, &v, &vidx, 1, 1);
        (void)wrc;
        rfs_clear_error();
        __atomic_add_fetch(&c->st.evictions, 1, __ATOMIC_RELAXED);
        cc_free_frame(c, o, v);
    }
}
