/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Nonblocking I/O: real MPI requests (MPI_Grequest_start) whose work runs in a small pool of
 * I/O threads that call only rfs_io ops, never MPI, so MPI_THREAD_SINGLE programs work. The
 * completion (unpacking, error code, MPI_Grequest_complete) happens in an application thread:
 * in the MPI_Wait/Test family (waits.c), which we intercept for this reason, or when a file is
 * closed/synced (mp_nb_drain). */
#include "mpiio/nonblock.h"

#include "common/debug.h"
#include "common/clock.h"
#include "common/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBUCKETS 1024

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv;  /* timed waits: monotonic, made by done_cv_ready */
static pthread_once_t done_cv_once = PTHREAD_ONCE_INIT;
static mp_req *qhead, *qtail;
static mp_req *buckets[NBUCKETS];
static rfs_task *threads;     /* workers of the runtime of the file that started them */
static int nthreads, stopping;
static unsigned long events;  /* bumped whenever an op finishes */
static mp_req *detached;      /* MPI_Request_free'd requests not yet completed (under mu) */
static int ndetached;         /* their number: written under mu, peeked without it */

static void done_cv_init(void) { rfs_cond_init_monotonic(&done_cv); }
static void done_cv_ready(void) { pthread_once(&done_cv_once, done_cv_init); }

/* Caller holds mu. */
static void unlink_detached(mp_req *r)
{
    RFS_ASSERT_HELD(&mu);
    for (mp_req **p = &detached; *p; p = &(*p)->dnext)
        if (*p == r) {
            *p = r->dnext;
            __atomic_sub_fetch(&ndetached, 1, __ATOMIC_RELAXED);
            return;
        }
}

static unsigned bucket_of(MPI_Request r)
{
    const unsigned char *p = (const unsigned char *)&r;
    unsigned h = 2166136261u;
    for (size_t i = 0; i < sizeof r; i++)
        h = (h ^ p[i]) * 16777619u;
    return h % NBUCKETS;
}

static void hash_add(mp_req *r)
{
    unsigned b = bucket_of(r->req);
    r->hnext = buckets[b];
    buckets[b] = r;
}

static void hash_remove(mp_req *r)
{
    for (mp_req **p = &buckets[bucket_of(r->req)]; *p; p = &(*p)->hnext)
        if (*p == r) {
            *p = r->hnext;
            return;
        }
}

mp_req *mp_req_find(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL)
        return NULL;
    pthread_mutex_lock(&mu);
    mp_req *r = buckets[bucket_of(req)];
    while (r && memcmp(&r->req, &req, sizeof req))
        r = r->hnext;
    pthread_mutex_unlock(&mu);
    return r;
}

/* ---- I/O threads: no MPI in here ---- */
static void run(mp_req *r)
{
    mp_file *f = r->f;
    uint64_t lo = 0, hi = 0;
    int rc = RFS_OK;
    if (f->atomic)
        rc = mp_atomic_lock(f, r->v, r->is_write, r->pos, (uint64_t)r->b.len, &lo, &hi);
    if (rc == RFS_OK) {
        rc = mp_stream_io(f, r->v, r->is_write, r->pos, r->b.data, (size_t)r->b.len, &r->done);
        if (f->atomic)
            mp_atomic_unlock(f, lo, hi);
    }
    if (rc != RFS_OK)  /* completed later, in an application thread */
        rfs_status_save(&r->failed, rc);
    r->failed.rc = rc;
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!qhead && !stopping)
            pthread_cond_wait(&work_cv, &mu);
        if (!qhead && stopping)
            break;
        mp_req *r = qhead;
        qhead = r->qnext;
        if (!qhead)
            qtail = NULL;
        r->state = MP_REQ_RUNNING;
        pthread_mutex_unlock(&mu);
        run(r);
        pthread_mutex_lock(&mu);
        r->state = MP_REQ_DONE;
        events++;
        pthread_cond_broadcast(&done_cv);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

static int start_pool(rfs_runtime *rt, int n)
{
    if (nthreads)
        return 0;
    done_cv_ready();  /* before any worker can signal it */
    threads = calloc((size_t)n, sizeof *threads);
    if (!threads)
        return -1;
    for (int i = 0; i < n; i++) {
        if (rfs_task_start(rt, &threads[i], worker, NULL))
            break;
        nthreads++;
    }
    return nthreads ? 0 : -1;
}

void mp_nb_shutdown(void)
{
    pthread_mutex_lock(&mu);
    stopping = 1;
    pthread_cond_broadcast(&work_cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < nthreads; i++)
        rfs_task_join(&threads[i]);
    free(threads);
    threads = NULL;
    nthreads = 0;
    pthread_mutex_lock(&mu);
    stopping = 0;
    pthread_mutex_unlock(&mu);
}

/* ---- generalized-request callbacks (called by MPI in an application thread) ---- */
static int query_fn(void *extra, MPI_Status *st)
{
    mp_req *r = extra;
    MPI_Status_set_elements_x(st, MPI_BYTE, (MPI_Count)r->bytes);
    MPI_Status_set_cancelled(st, 0);
    st->MPI_SOURCE = MPI_UNDEFINED;
    st->MPI_TAG = MPI_UNDEFINED;
    /* Errors are reported by our wait/test wrappers, through the file's error handler, not by
     * MPI (which would use MPI_COMM_WORLD's handler). */
    st->MPI_ERROR = MPI_SUCCESS;
    return MPI_SUCCESS;
}

/* Drops one of r's two references (MPI's, ours); the last one frees it. */
static void req_unref(mp_req *r)
{
    pthread_mutex_lock(&mu);
    int last = RFS_REF_PUT(r->refs) == 0;
    pthread_mutex_unlock(&mu);
    if (last) {
        RFS_REF_DEAD(r->refs);
        mp_buf_free(&r->b);
        free(r);
    }
}

/* MPI is done with the request. MPICH calls this already in MPI_Request_free, before the request
 * is complete (the standard says: at whichever of free and complete comes last), so the I/O
 * may still be running: our own reference keeps r alive until complete() has run. */
static int free_fn(void *extra)
{
    mp_req *r = extra;
    pthread_mutex_lock(&mu);
    hash_remove(r);
    pthread_mutex_unlock(&mu);
    req_unref(r);
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;  /* I/O already sent cannot be taken back: it completes normally */
}

/* Application-thread part of completion. Caller made sure r->state == MP_REQ_DONE and claimed it
 * (state set to COMPLETE under mu). */
static void complete(mp_req *r)
{
    mp_file *f = r->f;
    if (r->failed.rc != RFS_OK) {
        r->code = mp_io_error(f, r->failed.rc, r->is_write ? "write" : "read", r->failed.msg);
        r->bytes = 0;
    } else {
        r->code = r->is_write ? MPI_SUCCESS : mp_buf_finish_read(&r->b, (int64_t)r->done);
        r->bytes = mp_datarep_memory_bytes(r->b.rep, r->b.type, (int64_t)r->done);
    }
    if (r->detached && r->code != MPI_SUCCESS) {
        /* Nobody will ever see this request's status: say it on stderr. */
        RFS_LOGW("mpiio: %s: a nonblocking %s whose request was freed failed: %s", f->name,
                 r->is_write ? "write" : "read",
                 r->failed.msg[0] ? r->failed.msg : rfs_strerror(r->failed.rc));
    }
    mp_view_put(f, r->v);
    r->v = NULL;
    pthread_mutex_lock(&f->mu);
    f->pending--;
    pthread_mutex_unlock(&f->mu);
    MPI_Grequest_complete(r->req);
    req_unref(r);
}

int mp_req_progress(mp_req *r)
{
    pthread_mutex_lock(&mu);
    int st = r->state;
    if (st == MP_REQ_DONE) {
        r->state = MP_REQ_COMPLETE;
        if (r->detached)
            unlink_detached(r);
    }
    pthread_mutex_unlock(&mu);
    if (st == MP_REQ_DONE)
        complete(r);
    return st >= MP_REQ_DONE;
}

void mp_req_finish(mp_req *r)
{
    done_cv_ready();
    pthread_mutex_lock(&mu);
    while (r->state < MP_REQ_DONE)
        pthread_cond_wait(&done_cv, &mu);
    pthread_mutex_unlock(&mu);
    mp_req_progress(r);
}

void mp_req_detach(mp_req *r)
{
    pthread_mutex_lock(&mu);
    int done = r->state >= MP_REQ_DONE;
    if (!done) {
        r->detached = 1;
        r->dnext = detached;
        detached = r;
        __atomic_add_fetch(&ndetached, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&mu);
    if (done)
        mp_req_progress(r);
}

void mp_nb_reap(void)
{
    /* Cheap when nothing was freed early. A request finishing right now is reaped next time. */
    if (!__atomic_load_n(&ndetached, __ATOMIC_RELAXED))
        return;
    for (;;) {
        mp_req *found = NULL;
        pthread_mutex_lock(&mu);
        for (mp_req *r = detached; r; r = r->dnext)
            if (r->state == MP_REQ_DONE) {
                found = r;
                found->state = MP_REQ_COMPLETE;  /* claimed: nobody else completes it */
                unlink_detached(found);
                break;
            }
        pthread_mutex_unlock(&mu);
        if (!found)
            return;
        complete(found);  /* found is gone afterwards */
    }
}

void mp_req_wait_any_event(void)
{
    done_cv_ready();
    struct timespec ts = rfs_deadline_ms(1);
    pthread_mutex_lock(&mu);
    unsigned long seen = events;
    while (events == seen) {
        if (pthread_cond_timedwait(&done_cv, &mu, &ts) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&mu);
}

int mp_reqs_progress(int n, MPI_Request reqs[])
{
    int pending = 0;
    for (int i = 0; i < n; i++) {
        mp_req *r = mp_req_find(reqs[i]);
        if (r && !mp_req_progress(r))
            pending++;
    }
    return pending;
}

void mp_nb_drain(mp_file *f)
{
    /* Complete every request of f (I/O first, then as MPI requests), so the file can change
     * view, size or close. The application still waits on them and gets their status. */
    for (;;) {
        mp_req *found = NULL;
        pthread_mutex_lock(&mu);
        for (int b = 0; b < NBUCKETS && !found; b++)
            for (mp_req *r = buckets[b]; r; r = r->hnext)
                if (r->f == f && r->state != MP_REQ_COMPLETE) {
                    found = r;
                    break;
                }
        /* Freed requests may have left the table already (MPICH calls free_fn early). */
        for (mp_req *r = detached; r && !found; r = r->dnext)
            if (r->f == f)
                found = r;
        pthread_mutex_unlock(&mu);
        if (!found)
            return;
        mp_req_finish(found);
    }
}

/* ---- starting operations ---- */
int mp_nb_start(mp_file *f, int is_write, uint64_t pos, void *buf, MPI_Count count,
                MPI_Datatype type, MPI_Request *req)
{
    mp_nb_reap();  /* a program that only frees its requests still gets them released */
    mp_req *r = calloc(1, sizeof *r);
    if (!r)
        return MPI_ERR_NO_MEM;
    int rc = is_write ? mp_buf_for_write(&r->b, buf, count, type, f->view->rep)
                      : mp_buf_for_read(&r->b, buf, count, type, f->view->rep);
    if (rc != MPI_SUCCESS) {
        free(r);
        return mp_error_code(rc, "rfs: %s: bad count or datatype for this access", f->name);
    }
    pthread_mutex_lock(&mu);
    int prc = start_pool(f->rt, f->hints.io_threads);
    pthread_mutex_unlock(&mu);
    if (prc) {
        mp_buf_free(&r->b);
        free(r);
        return mp_error_code(MPI_ERR_INTERN, "rfs: cannot start I/O threads");
    }
    r->refs = 2;  /* MPI's (free_fn) and ours (complete) */
    rc = MPI_Grequest_start(query_fn, free_fn, cancel_fn, r, &r->req);
    if (rc != MPI_SUCCESS) {
        mp_buf_free(&r->b);
        free(r);
        return rc;
    }
    r->f = f;
    r->v = mp_view_get(f);
    r->is_write = is_write;
    r->pos = pos;
    pthread_mutex_lock(&f->mu);
    f->pending++;
    pthread_mutex_unlock(&f->mu);
    pthread_mutex_lock(&mu);
    hash_add(r);
    r->state = MP_REQ_QUEUED;
    if (qtail)
        qtail->qnext = r;
    else
        qhead = r;
    qtail = r;
    pthread_cond_signal(&work_cv);
    pthread_mutex_unlock(&mu);
    *req = r->req;
    return MPI_SUCCESS;
}

int mp_nb_completed(mp_file *f, int code, int64_t bytes, MPI_Request *req)
{
    if (code != MPI_SUCCESS) {
        *req = MPI_REQUEST_NULL;
        return code;
    }
    mp_req *r = calloc(1, sizeof *r);
    if (!r)
        return MPI_ERR_NO_MEM;
    r->f = f;
    r->bytes = bytes;
    r->state = MP_REQ_COMPLETE;
    r->refs = 1;  /* MPI's only: complete() never runs for it */
    int rc = MPI_Grequest_start(query_fn, free_fn, cancel_fn, r, &r->req);
    if (rc != MPI_SUCCESS) {
        free(r);
        return rc;
    }
    pthread_mutex_lock(&mu);
    hash_add(r);  /* so free_fn finds it; already complete */
    pthread_mutex_unlock(&mu);
    MPI_Grequest_complete(r->req);
    *req = r->req;
    return MPI_SUCCESS;
}
