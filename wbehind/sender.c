/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The owner's senders: background threads that write the pages the owner thread hands over
 * (full pages as soon as they are whole, evicted pages, every page at a flush), so the owner
 * goes on taking the writers' mailboxes while pages travel, and the link carries pages from
 * the first whole one on instead of only in 8 MiB batches and at the flush (close).
 *
 * Each sender has one list write in flight at a time, taken from the head of the queue in
 * hand-over order; a list write spread over the file's streams returns once the server
 * answered all of it. There are two of them, so the link has the next pages while the server
 * answers the last ones: with one, every list write ended in a round trip with nothing of
 * this owner's on the link, the first whole page went alone and the partial pages of a flush
 * waited for the list write before them. A sender never takes a copy of a page whose other
 * copy the other sender is writing (it stops at it), so a later write of the same bytes (a
 * page written again after it went) cannot overtake an earlier one. Whatever the owner handed
 * over while a write was under way goes in the next one, so list writes grow as the link falls
 * behind. Handed-over pages count against the owner's memory cap until written: an owner short
 * of room waits for them (and the writers then wait for their mailboxes). Never calls MPI. */
#include "wbehind/wb_internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"

/* The most bytes of pages in one list write: large enough that its round trip is small next
 * to its transfer, small enough that written pages free their room while more arrive. */
#define WB_SEND_BYTES (16ull << 20)
/* Runs per list write (the MPI-IO layer's rfs_max_extents default). */
#define WB_SEND_RUNS 16384

/* The writer src hears of rc at its next flush (the first failure wins). */
void wb_hand_error(wb *w, int src, int rc)
{
    wb_chan *c = wb_chan_of(w, src, w->rank);
    int32_t zero = 0;
    __atomic_compare_exchange_n(&c->err, &zero, (int32_t)rc, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/* qmu held. A failure below may be this write's or an earlier one's that returned early (the
 * write window): everyone whose bytes went below since the last flush below hears of it. */
void wb_below_failed(wb *w, const uint8_t *srcs, int rc)
{
    for (int r = 0; r < w->n; r++)
        if ((srcs && srcs[r]) || w->own.pend[r])
            wb_hand_error(w, r, rc);
}

static int scratch(wb_sender *sd, size_t n)
{
    if (n <= sd->scratch_cap)
        return RFS_OK;
    struct iovec *iov = realloc(sd->iov, n * sizeof *iov);
    if (iov)
        sd->iov = iov;
    rfs_extent *ext = realloc(sd->ext, n * sizeof *ext);
    if (ext)
        sd->ext = ext;
    if (!iov || !ext)
        return RFS_E_NOMEM;
    sd->scratch_cap = n;
    return RFS_OK;
}

/* (the counters are read by the application thread: atomics) */
static void written(wb *w, wb_page *p, int rc)
{
    __atomic_add_fetch(&w->st.pages_written, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&w->st.page_bytes, p->dirty, __ATOMIC_RELAXED);
    pthread_mutex_lock(&w->own.qmu);
    if (rc != RFS_OK)
        wb_below_failed(w, p->srcs, rc);
    for (int r = 0; r < w->n; r++)
        if (p->srcs[r])
            w->own.pend[r] = 1;
    pthread_mutex_unlock(&w->own.qmu);
}

/* The dirty runs of pages p[0..n) in as few list writes as WB_SEND_RUNS allows. Always list
 * writes, one page too: a plain write of one frame would return early through the write window,
 * and the next list write spread over the streams (the other sender's) would first wait for
 * its reply. */
static void pages_write(wb_sender *sd, wb_page **p, size_t n)
{
    wb *w = sd->w;
    size_t i = 0;
    while (i < n) {
        size_t k = 0, j = i;
        for (; j < n && (k == 0 || k + (size_t)p[j]->nr <= WB_SEND_RUNS); j++)
            k += (size_t)p[j]->nr;
        int rc = scratch(sd, k);
        size_t done = 0;
        if (rc == RFS_OK) {
            size_t e = 0;
            for (size_t q = i; q < j; q++) {
                uint64_t base = p[q]->idx * w->page;
                for (int r = 0; r < p[q]->nr; r++, e++) {
                    sd->ext[e] = (rfs_extent){base + p[q]->lo[r], p[q]->hi[r] - p[q]->lo[r]};
                    sd->iov[e] = (struct iovec){p[q]->data + p[q]->lo[r],
                                                (size_t)(p[q]->hi[r] - p[q]->lo[r])};
                }
            }
            rc = w->below->ops->pwritev_gather(w->below, sd->ext, k, sd->iov, k, &done);
        }
        for (size_t q = i; q < j; q++)
            written(w, p[q], rc);
        i = j;
    }
}

static int by_index(const void *a, const void *b)
{
    const wb_page *x = *(wb_page *const *)a, *y = *(wb_page *const *)b;
    if (x->idx != y->idx)
        return x->idx < y->idx ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_seq(const void *a, const void *b)
{
    const wb_page *x = *(wb_page *const *)a, *y = *(wb_page *const *)b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Two copies of one page whose dirty runs overlap: the frames of one list write, or of two
 * list writes in flight at once, may land in any order, so they must go one after the other.
 * (Copies with disjoint runs, like the two parts of a page that two ranks share, which reach the
 * owner at their two flushes, may go together.) */
static int runs_overlap(const wb_page *x, const wb_page *y)
{
    for (int a = 0, b = 0; a < x->nr && b < y->nr;) {
        if (x->lo[a] < y->hi[b] && y->lo[b] < x->hi[a])
            return 1;
        if (x->hi[a] <= y->hi[b])
            a++;
        else
            b++;
    }
    return 0;
}

/* qmu held: whether another sender is writing a copy of page p whose runs overlap p's. */
static int busy_elsewhere(const wb_owner *o, const wb_sender *me, const wb_page *p)
{
    for (int t = 0; t < WB_SENDERS; t++) {
        const wb_sender *sd = &o->snd[t];
        if (sd == me)
            continue;
        size_t lo = 0, hi = sd->ntake; /* the first of its pages with idx >= p->idx */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (sd->busy[mid]->idx < p->idx)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; lo < sd->ntake && sd->busy[lo]->idx == p->idx; lo++)
            if (runs_overlap(sd->busy[lo], p))
                return 1;
    }
    return 0;
}

/* A flush marker heads the queue and no sender writes: the pages handed over before it are all
 * written. Answers it (no sender takes the pages after it meanwhile: their writes would count
 * in the flush below, and their failures would be cleared with its pending ranks). */
static void answer_marker(wb_owner *o, wb *w)
{
    wb_page *m = o->q_head;
    o->q_answering = 1;
    pthread_mutex_unlock(&o->qmu);
    wb_flush_answer(w, m->reqs);
    pthread_mutex_lock(&o->qmu);
    o->q_head = m->qnext;
    if (!o->q_head)
        o->q_tail = NULL;
    free(m->reqs);
    free(m);
    o->q_answering = 0;
    o->q_marks--;
    pthread_cond_broadcast(&o->room_cv);
    pthread_cond_broadcast(&o->q_cv);
}

/* qmu held: takes pages from the head of the queue, up to sd->lim, stopping at a flush marker
 * and at a page another sender is writing a copy of. */
static size_t take_pages(wb_owner *o, wb_sender *sd)
{
    size_t n = 0;
    while (o->q_head && !o->q_head->reqs && n < sd->lim && !busy_elsewhere(o, sd, o->q_head)) {
        wb_page *p = o->q_head;
        o->q_head = p->qnext;
        if (!o->q_head)
            o->q_tail = NULL;
        p->qnext = NULL;
        sd->take[n] = p;
        sd->busy[n] = p;
        n++;
    }
    qsort(sd->busy, n, sizeof *sd->busy, by_index);
    sd->ntake = n;
    return n;
}

static void *sender_main(void *arg)
{
    wb_sender *sd = arg;
    wb *w = sd->w;
    wb_owner *o = &w->own;
    pthread_mutex_lock(&o->qmu);
    for (;;) {
        if (!o->q_head && o->q_stop)
            break; /* stopped with nothing left */
        if (o->q_head && o->q_head->reqs) {
            if (!o->q_writing && !o->q_answering)
                answer_marker(o, w);
            else
                pthread_cond_wait(&o->q_cv, &o->qmu);
            continue;
        }
        size_t n = o->q_answering ? 0 : take_pages(o, sd);
        if (n == 0) {
            pthread_cond_wait(&o->q_cv, &o->qmu);
            continue;
        }
        o->q_writing++;
        pthread_mutex_unlock(&o->qmu);
        /* In file order: the server's writes of one list then run forward through the file.
         * Two copies of a page with overlapping runs in the same take: each page goes alone,
         * in hand-over order. */
        wb_page **take = sd->take;
        int dup = 0;
        qsort(take, n, sizeof *take, by_index);
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j-- > 0 && take[j]->idx == take[i]->idx;)
                dup |= runs_overlap(take[i], take[j]);
        if (dup) {
            qsort(take, n, sizeof *take, by_seq);
            for (size_t i = 0; i < n; i++)
                pages_write(sd, &take[i], 1);
        } else {
            pages_write(sd, take, n);
        }
        for (size_t i = 0; i < n; i++)
            wb_page_free(take[i]);
        pthread_mutex_lock(&o->qmu);
        sd->ntake = 0;
        o->q_writing--;
        o->q_pages -= n;
        pthread_cond_broadcast(&o->room_cv);
        pthread_cond_broadcast(&o->q_cv); /* the other sender may wait for these pages */
    }
    pthread_mutex_unlock(&o->qmu);
    return NULL;
}

static void sender_free(wb_sender *sd)
{
    free(sd->take);
    free(sd->busy);
    free(sd->iov);
    free(sd->ext);
    memset(sd, 0, sizeof *sd);
}

int wb_sender_start(wb *w, rfs_runtime *rt)
{
    wb_owner *o = &w->own;
    uint64_t lim = WB_SEND_BYTES / w->page;
    if (lim > o->max_pages / 2)
        lim = o->max_pages / 2;
    if (lim == 0)
        lim = 1;
    for (int t = 0; t < WB_SENDERS; t++) {
        wb_sender *sd = &o->snd[t];
        sd->w = w;
        sd->lim = (size_t)lim;
        sd->take = malloc(sd->lim * sizeof *sd->take);
        sd->busy = malloc(sd->lim * sizeof *sd->busy);
        if (!sd->take || !sd->busy || rfs_task_start(rt, &sd->th, sender_main, sd) != 0) {
            sender_free(sd);
            break;
        }
        sd->running = 1;
        o->sender_running = 1; /* one is enough to write everything (in order) */
    }
    return o->sender_running ? RFS_OK : RFS_E_NOMEM;
}

void wb_sender_stop(wb *w)
{
    wb_owner *o = &w->own;
    if (!o->sender_running)
        return;
    pthread_mutex_lock(&o->qmu);
    o->q_stop = 1;
    pthread_cond_broadcast(&o->q_cv);
    pthread_mutex_unlock(&o->qmu);
    for (int t = 0; t < WB_SENDERS; t++)
        if (o->snd[t].running) {
            rfs_task_join(&o->snd[t].th);
            sender_free(&o->snd[t]);
        }
    o->sender_running = 0;
}

void wb_send(wb *w, wb_page *p)
{
    wb_owner *o = &w->own;
    pthread_mutex_lock(&o->qmu);
    p->qnext = NULL;
    p->seq = o->q_seq++;
    if (o->q_tail)
        o->q_tail->qnext = p;
    else
        o->q_head = p;
    o->q_tail = p;
    o->q_pages++;
    pthread_cond_broadcast(&o->q_cv);
    pthread_mutex_unlock(&o->qmu);
}

/* Without a sender (it could not start, or it stopped): the owner writes them itself. */
static void send_here(wb *w)
{
    wb_owner *o = &w->own;
    while (o->q_head) {
        wb_page *p = o->q_head;
        o->q_head = p->qnext;
        if (!o->q_head)
            o->q_tail = NULL;
        int mark = p->reqs != NULL;
        pthread_mutex_unlock(&o->qmu);
        if (mark) {
            wb_flush_answer(w, p->reqs);
            free(p->reqs);
            free(p);
        } else {
            wb_sender one = {.w = w};
            pages_write(&one, &p, 1);
            wb_page_free(p);
            sender_free(&one);
        }
        pthread_mutex_lock(&o->qmu);
        if (mark)
            o->q_marks--;
        else
            o->q_pages--;
    }
}

int wb_send_flush(wb *w, const uint64_t *reqs)
{
    wb_owner *o = &w->own;
    wb_page *m = calloc(1, sizeof *m);
    uint64_t *r = m ? malloc((size_t)w->n * sizeof *r) : NULL;
    if (!r) {
        free(m);
        return RFS_E_NOMEM;
    }
    memcpy(r, reqs, (size_t)w->n * sizeof *r);
    m->reqs = r;
    pthread_mutex_lock(&o->qmu);
    if (o->q_tail)
        o->q_tail->qnext = m;
    else
        o->q_head = m;
    o->q_tail = m;
    o->q_marks++;
    pthread_cond_broadcast(&o->q_cv);
    pthread_mutex_unlock(&o->qmu);
    return RFS_OK;
}

void wb_flush_answer(wb *w, const uint64_t *reqs)
{
    wb_owner *o = &w->own;
    pthread_mutex_lock(&o->qmu);
    int any = 0;
    for (int r = 0; r < w->n; r++)
        any |= o->pend[r];
    pthread_mutex_unlock(&o->qmu);
    if (any) {
        int rc = w->below->ops->flush(w->below, 1);
        pthread_mutex_lock(&o->qmu);
        if (rc != RFS_OK)
            wb_below_failed(w, NULL, rc);
        memset(o->pend, 0, (size_t)w->n);
        pthread_mutex_unlock(&o->qmu);
    }
    for (int src = 0; src < w->n; src++) {
        wb_chan *c = wb_chan_of(w, src, w->rank);
        uint64_t r = reqs ? reqs[src] : __atomic_load_n(&c->flush_req, __ATOMIC_ACQUIRE);
        if (r > __atomic_load_n(&c->flush_done, __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&c->flush_done, r, __ATOMIC_RELEASE);
            __atomic_add_fetch(&c->done_word, 1, __ATOMIC_RELEASE);
            rfs_shm_wake(&c->done_word);
        }
    }
}

void wb_send_wait(wb *w, uint64_t room)
{
    wb_owner *o = &w->own;
    pthread_mutex_lock(&o->qmu);
    if (!o->sender_running)
        send_here(w);
    while (o->q_pages > room || (room == 0 && o->q_marks))
        pthread_cond_wait(&o->room_cv, &o->qmu);
    pthread_mutex_unlock(&o->qmu);
}
