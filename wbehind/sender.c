/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The owner's sender: a second background thread that writes the pages the owner thread hands
 * over (full pages as soon as they are whole, evicted pages, every page at a flush), so the
 * owner goes on taking the writers' mailboxes while pages travel, and the link carries pages
 * from the first whole one on instead of only in 8 MiB batches and at the flush (close).
 *
 * One thread and one list write at a time, in the order the pages were handed over: a write
 * spread over the file's streams returns once the server answered all of it, so a later
 * write of the same bytes (a page written again after it went) cannot overtake an earlier
 * one. Whatever the owner handed over while a write was under way goes in the next one, so
 * list writes grow as the link falls behind. Handed-over pages count against the owner's
 * memory cap until written: an owner short of room waits for them (and the writers then wait
 * for their mailboxes). Never calls MPI. */
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

static int scratch(wb *w, size_t n)
{
    wb_owner *o = &w->own;
    if (n <= o->scratch_cap)
        return RFS_OK;
    struct iovec *iov = realloc(o->iov, n * sizeof *iov);
    if (iov)
        o->iov = iov;
    rfs_extent *ext = realloc(o->ext, n * sizeof *ext);
    if (ext)
        o->ext = ext;
    if (!iov || !ext)
        return RFS_E_NOMEM;
    o->scratch_cap = n;
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

/* The dirty runs of pages p[0..n) in as few list writes as WB_SEND_RUNS allows (one page of
 * one run: a plain write, which the write window lets return before its reply). */
static void pages_write(wb *w, wb_page **p, size_t n)
{
    wb_owner *o = &w->own;
    size_t i = 0;
    while (i < n) {
        size_t k = 0, j = i;
        for (; j < n && (k == 0 || k + (size_t)p[j]->nr <= WB_SEND_RUNS); j++)
            k += (size_t)p[j]->nr;
        int rc = scratch(w, k);
        size_t done = 0;
        if (rc == RFS_OK && k == 1) {
            wb_page *q = p[i];
            rc = w->below->ops->pwrite(w->below, q->data + q->lo[0], (size_t)(q->hi[0] - q->lo[0]),
                                       q->idx * w->page + q->lo[0], &done);
        } else if (rc == RFS_OK) {
            size_t e = 0;
            for (size_t q = i; q < j; q++) {
                uint64_t base = p[q]->idx * w->page;
                for (int r = 0; r < p[q]->nr; r++, e++) {
                    o->ext[e] = (rfs_extent){base + p[q]->lo[r], p[q]->hi[r] - p[q]->lo[r]};
                    o->iov[e] = (struct iovec){p[q]->data + p[q]->lo[r],
                                               (size_t)(p[q]->hi[r] - p[q]->lo[r])};
                }
            }
            rc = w->below->ops->pwritev_gather(w->below, o->ext, k, o->iov, k, &done);
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

/* Two copies of one page whose dirty runs overlap: the frames of one list write may land in any
 * order, so they must go one after the other. Copies with disjoint runs go together: at a close,
 * the two parts of a page two ranks share reach the owner at their two flushes, and one by one
 * each cost a round trip at the end of the transfer. */
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

/* One page in one write, learning whether the layer below let it return once sent. */
static void page_write_alone(wb *w, wb_page *p)
{
    uint64_t sent = w->below->ops->write_mark(w->below);
    pages_write(w, &p, 1);
    if (w->below->ops->write_mark(w->below) == sent)
        w->own.below_unwindowed = 1;
}

/* A take that flush requests wait for, page by page: a page of one frame goes through the
 * layer below's write window and the call returns once it is sent, where a list write of
 * several frames returns only once all of them are answered. At a close the ranks' flushes
 * queue the last pages of the transfer; written as one list write, the next take (the pages
 * of a rank that flushed later) and then the owner's CLOSE each waited a round trip for it
 * with the link idle. Sent one by one, the last pages follow the others at once and the
 * CLOSE follows them (rfsd applies it after every earlier write on its handle); the answers
 * are still collected: by the flush below for a flush, by the close for a closing flush.
 * Without a window below (off, or pages larger than a frame) each page would cost a round
 * trip: the rest then goes in list writes as before. */
static void pages_write_flowing(wb *w, wb_page **p, size_t n)
{
    size_t i = 0;
    while (i < n && !w->own.below_unwindowed)
        page_write_alone(w, p[i++]);
    if (i < n)
        pages_write(w, p + i, n - i);
}

/* Whether a writer's flush request is not answered yet: among reqs (NULL: every request the
 * writers made so far), and with closing_too 0 only a writer that is not closing. */
static int flush_pending(wb *w, const uint64_t *reqs, int closing_too)
{
    for (int src = 0; src < w->n; src++) {
        wb_chan *c = wb_chan_of(w, src, w->rank);
        uint64_t r = reqs ? reqs[src] : __atomic_load_n(&c->flush_req, __ATOMIC_ACQUIRE);
        if (r > __atomic_load_n(&c->flush_done, __ATOMIC_ACQUIRE) &&
            (closing_too || !__atomic_load_n(&c->closing, __ATOMIC_ACQUIRE)))
            return 1;
    }
    return 0;
}

/* Writes one take. In file order: the server's writes of one list then run forward through the
 * file. A page written again after it was handed over can be in the same take twice: the
 * frames of one list write may land in any order, so when two copies overlap, each page goes
 * alone, in hand-over order. flowing: a flush waits for this take. */
static void take_write(wb *w, wb_page **take, size_t n, int flowing)
{
    int dup = 0;
    qsort(take, n, sizeof *take, by_index);
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j-- > 0 && take[j]->idx == take[i]->idx;)
            dup |= runs_overlap(take[i], take[j]);
    if (dup) {
        qsort(take, n, sizeof *take, by_seq);
        for (size_t i = 0; i < n; i++)
            pages_write(w, &take[i], 1);
    } else if (n == 1) {
        page_write_alone(w, take[0]);
    } else if (flowing && !w->own.below_unwindowed) {
        pages_write_flowing(w, take, n);
    } else {
        pages_write(w, take, n);
    }
}

static void *sender_main(void *arg)
{
    wb *w = arg;
    wb_owner *o = &w->own;
    uint64_t lim = WB_SEND_BYTES / w->page;
    if (lim > o->max_pages / 2)
        lim = o->max_pages / 2;
    if (lim == 0)
        lim = 1;
    wb_page *one = NULL;
    wb_page **take = malloc((size_t)lim * sizeof *take);
    if (!take) {
        take = &one; /* no memory for the list: one page at a time */
        lim = 1;
    }
    pthread_mutex_lock(&o->qmu);
    for (;;) {
        while (!o->q_head && !o->q_stop)
            pthread_cond_wait(&o->q_cv, &o->qmu);
        if (!o->q_head)
            break; /* stopped with nothing left */
        /* A take: the pages queued, in hand-over order, up to lim, passing over the flush
         * markers between them (and taking those right after its last page). The markers are
         * answered once the whole take is written and answered below: later than the pages
         * before each marker alone would allow, never earlier. Ranks reach their close at
         * different times, so an owner's queue ends in a marker per rank with the partial
         * pages of that rank's flush between them; a take that stopped at every marker wrote
         * those pages in a chain of small writes, each after the previous one's round trip
         * and a wait for the layer below's answers (the tail of a close). */
        size_t n = 0;
        wb_page *marks = NULL, **mtail = &marks;
        uint64_t nmarks = 0;
        while (o->q_head && (n < lim || o->q_head->reqs)) {
            wb_page *p = o->q_head;
            o->q_head = p->qnext;
            if (!o->q_head)
                o->q_tail = NULL;
            p->qnext = NULL;
            if (p->reqs) {
                *mtail = p;
                mtail = &p->qnext;
                nmarks++;
            } else {
                take[n++] = p;
            }
        }
        pthread_mutex_unlock(&o->qmu);
        if (n)
            /* (a flush's pages can be taken before its marker is queued) */
            take_write(w, take, n, nmarks > 0 || flush_pending(w, NULL, 1));
        for (size_t i = 0; i < n; i++)
            wb_page_free(take[i]);
        while (marks) {
            wb_page *m = marks;
            marks = m->qnext;
            wb_flush_answer(w, m->reqs); /* (the first waits for the layer below) */
            free(m->reqs);
            free(m);
        }
        pthread_mutex_lock(&o->qmu);
        o->q_pages -= n;
        o->q_marks -= nmarks;
        pthread_cond_broadcast(&o->room_cv);
    }
    pthread_mutex_unlock(&o->qmu);
    if (take != &one)
        free(take);
    return NULL;
}

int wb_sender_start(wb *w, rfs_runtime *rt)
{
    wb_owner *o = &w->own;
    if (rfs_task_start(rt, &o->sth, sender_main, w) != 0)
        return RFS_E_NOMEM;
    o->sender_running = 1;
    return RFS_OK;
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
    rfs_task_join(&o->sth);
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
    pthread_cond_signal(&o->q_cv);
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
            pages_write(w, &p, 1);
            wb_page_free(p);
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
    pthread_cond_signal(&o->q_cv);
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
    /* A writer that is not closing is answered once the layer below answered; closing
     * writers once their pages are sent (pend stays set for the close). */
    if (any && flush_pending(w, reqs, 0)) {
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
