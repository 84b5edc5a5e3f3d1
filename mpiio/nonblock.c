/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Nonblocking I/O: real MPI requests (MPI_Grequest_start) whose work runs in a small pool of
 * I/O threads (workers of the file's runtime; the queue is the runtime's) that call only
 * rfs_io ops, never MPI, so MPI_THREAD_SINGLE programs work. Or natively, with no thread of
 * ours: a contiguous access of a file whose layer can start one (rfs_io start, RFS_IO_F_ASYNC:
 * UCX files by default, hint rfs_nb_native) is put on the wire by the calling thread, and the
 * connection's receiver marks the request done when the last reply is in (native_done). The
 * completion (unpacking, error code, MPI_Grequest_complete) happens in an application thread:
 * in the MPI_Wait/Test family (waits.c), which we intercept for this reason, or when a file is
 * closed/synced (mp_nb_drain). */
#include "mpiio/nonblock.h"

#include "common/debug.h"
#include "common/clock.h"
#include "common/log.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBUCKETS 1024

/* A runtime's nonblocking queue (its part): the requests in flight, found by their MPI handle,
 * the FIFO of work and the I/O threads (workers of the runtime). mu guards all of it. */
typedef struct mp_nbq {
    pthread_mutex_t mu;
    pthread_cond_t work_cv;
    pthread_cond_t done_cv; /* timed waits: monotonic */
    mp_req *qhead, *qtail;
    mp_req *buckets[NBUCKETS];
    rfs_runtime *rt;
    rfs_task *threads;
    int nthreads, stopping;
    unsigned long events; /* bumped whenever an op finishes */
    mp_req *detached;     /* MPI_Request_free'd requests not yet completed (under mu) */
    int ndetached;        /* their number: written under mu, peeked without it */
} mp_nbq;

static void *nbq_make(rfs_runtime *rt)
{
    mp_nbq *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->work_cv, NULL);
    rfs_cond_init_monotonic(&q->done_cv);
    q->rt = rt;
    return q;
}

static void nbq_stop(mp_nbq *q);

/* Its requests were completed (every file of the runtime is closed, and close drains them). */
static void nbq_destroy(void *part)
{
    mp_nbq *q = part;
    nbq_stop(q);
    pthread_cond_destroy(&q->done_cv);
    pthread_cond_destroy(&q->work_cv);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

static const rfs_runtime_part_desc nbq_desc = {
    .name = "MPI-IO nonblocking queue",
    .make = nbq_make,
    .destroy = nbq_destroy,
};

/* The default runtime's queue, once made. MPI's request handles name no file, so the hooks of
 * the Wait/Test family look there: MPI-IO opens its files in the default runtime, which is
 * never destroyed. An atomic pointer, so that a program with no rfs file pays no lock. */
static _Atomic(mp_nbq *) default_q;

static mp_nbq *nbq_of(rfs_runtime *rt)
{
    mp_nbq *q = rfs_runtime_part(rt, &nbq_desc);
    if (q && rt == rfs_runtime_default())
        atomic_store(&default_q, q);
    return q;
}

/* Caller holds q->mu. */
static void unlink_detached(mp_nbq *q, mp_req *r)
{
    RFS_ASSERT_HELD(&q->mu);
    for (mp_req **p = &q->detached; *p; p = &(*p)->dnext)
        if (*p == r) {
            *p = r->dnext;
            __atomic_sub_fetch(&q->ndetached, 1, __ATOMIC_RELAXED);
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

static void hash_add(mp_nbq *q, mp_req *r)
{
    unsigned b = bucket_of(r->req);
    r->hnext = q->buckets[b];
    q->buckets[b] = r;
}

static void hash_remove(mp_nbq *q, mp_req *r)
{
    for (mp_req **p = &q->buckets[bucket_of(r->req)]; *p; p = &(*p)->hnext)
        if (*p == r) {
            *p = r->hnext;
            return;
        }
}

mp_req *mp_req_find(MPI_Request req)
{
    mp_nbq *q = atomic_load(&default_q);
    if (req == MPI_REQUEST_NULL || !q)
        return NULL;
    pthread_mutex_lock(&q->mu);
    mp_req *r = q->buckets[bucket_of(req)];
    while (r && memcmp(&r->req, &req, sizeof req))
        r = r->hnext;
    pthread_mutex_unlock(&q->mu);
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
    if (rc != RFS_OK) /* completed later, in an application thread */
        rfs_status_save(&r->failed, rc);
    r->failed.rc = rc;
}

static void *worker(void *arg)
{
    mp_nbq *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->qhead && !q->stopping)
            pthread_cond_wait(&q->work_cv, &q->mu);
        if (!q->qhead && q->stopping)
            break;
        mp_req *r = q->qhead;
        q->qhead = r->qnext;
        if (!q->qhead)
            q->qtail = NULL;
        r->state = MP_REQ_RUNNING;
        pthread_mutex_unlock(&q->mu);
        run(r);
        pthread_mutex_lock(&q->mu);
        r->state = MP_REQ_DONE;
        q->events++;
        pthread_cond_broadcast(&q->done_cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* The I/O threads, on first use (the first file's rfs_io_threads). q->mu held. */
static int start_pool(mp_nbq *q, int n)
{
    if (q->nthreads)
        return 0;
    q->threads = calloc((size_t)n, sizeof *q->threads);
    if (!q->threads)
        return -1;
    for (int i = 0; i < n; i++) {
        if (rfs_task_start(q->rt, &q->threads[i], worker, q))
            break;
        q->nthreads++;
    }
    return q->nthreads ? 0 : -1;
}

/* Ends the I/O threads once the queue is empty; the next operation starts them again. */
static void nbq_stop(mp_nbq *q)
{
    pthread_mutex_lock(&q->mu);
    q->stopping = 1;
    pthread_cond_broadcast(&q->work_cv);
    int n = q->nthreads;
    rfs_task *th = q->threads;
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < n; i++)
        rfs_task_join(&th[i]);
    free(th);
    pthread_mutex_lock(&q->mu);
    q->threads = NULL;
    q->nthreads = 0;
    q->stopping = 0;
    pthread_mutex_unlock(&q->mu);
}

void mp_nb_shutdown(void)
{
    mp_nbq *q = atomic_load(&default_q);
    if (q)
        nbq_stop(q);
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
    mp_nbq *q = r->q;
    pthread_mutex_lock(&q->mu);
    int last = RFS_REF_PUT(r->refs) == 0;
    pthread_mutex_unlock(&q->mu);
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
    pthread_mutex_lock(&r->q->mu);
    hash_remove(r->q, r);
    pthread_mutex_unlock(&r->q->mu);
    req_unref(r);
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS; /* I/O already sent cannot be taken back: it completes normally */
}

/* Application-thread part of completion. Caller made sure r->state == MP_REQ_DONE and claimed it
 * (state set to COMPLETE under mu). */
static void complete(mp_req *r)
{
    mp_file *f = r->f;
    if (r->native) { /* the access is over (native_done); collect its outcome */
        int rc = f->io->ops->end(f->io, &r->async, &r->done);
        if (rc != RFS_OK)
            rfs_status_save(&r->failed, rc);
        r->failed.rc = rc;
        r->native = 0;
    }
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
    mp_nbq *q = r->q;
    pthread_mutex_lock(&q->mu);
    int st = r->state;
    if (st == MP_REQ_DONE) {
        r->state = MP_REQ_COMPLETE;
        if (r->detached)
            unlink_detached(q, r);
    }
    pthread_mutex_unlock(&q->mu);
    if (st == MP_REQ_DONE)
        complete(r);
    return st >= MP_REQ_DONE;
}

void mp_req_finish(mp_req *r)
{
    mp_nbq *q = r->q;
    pthread_mutex_lock(&q->mu);
    while (r->state < MP_REQ_DONE)
        pthread_cond_wait(&q->done_cv, &q->mu);
    pthread_mutex_unlock(&q->mu);
    mp_req_progress(r);
}

void mp_req_detach(mp_req *r)
{
    mp_nbq *q = r->q;
    pthread_mutex_lock(&q->mu);
    int done = r->state >= MP_REQ_DONE;
    if (!done) {
        r->detached = 1;
        r->dnext = q->detached;
        q->detached = r;
        __atomic_add_fetch(&q->ndetached, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&q->mu);
    if (done)
        mp_req_progress(r);
}

void mp_nb_reap(void)
{
    /* Cheap when nothing was freed early. A request finishing right now is reaped next time. */
    mp_nbq *q = atomic_load(&default_q);
    if (!q || !__atomic_load_n(&q->ndetached, __ATOMIC_RELAXED))
        return;
    for (;;) {
        mp_req *found = NULL;
        pthread_mutex_lock(&q->mu);
        for (mp_req *r = q->detached; r; r = r->dnext)
            if (r->state == MP_REQ_DONE) {
                found = r;
                found->state = MP_REQ_COMPLETE; /* claimed: nobody else completes it */
                unlink_detached(q, found);
                break;
            }
        pthread_mutex_unlock(&q->mu);
        if (!found)
            return;
        complete(found); /* found is gone afterwards */
    }
}

void mp_req_wait_any_event(void)
{
    mp_nbq *q = atomic_load(&default_q);
    if (!q)
        return;
    struct timespec ts = rfs_deadline_ms(1);
    pthread_mutex_lock(&q->mu);
    unsigned long seen = q->events;
    while (q->events == seen) {
        if (pthread_cond_timedwait(&q->done_cv, &q->mu, &ts) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&q->mu);
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
    mp_nbq *q = rfs_runtime_part_peek(f->rt, &nbq_desc);
    if (!q)
        return;
    for (;;) {
        mp_req *found = NULL;
        pthread_mutex_lock(&q->mu);
        for (int b = 0; b < NBUCKETS && !found; b++)
            for (mp_req *r = q->buckets[b]; r; r = r->hnext)
                if (r->f == f && r->state != MP_REQ_COMPLETE) {
                    found = r;
                    break;
                }
        /* Freed requests may have left the table already (MPICH calls free_fn early). */
        for (mp_req *r = q->detached; r && !found; r = r->dnext)
            if (r->f == f)
                found = r;
        pthread_mutex_unlock(&q->mu);
        if (!found)
            return;
        mp_req_finish(found);
    }
}

/* ---- native nonblocking (no I/O thread) ---- */

/* The layer's access finished: called by the connection's receiver (or by start itself). No
 * MPI here; completion as an MPI request follows in an application thread, as for a thread's. */
static void native_done(rfs_io_async *a)
{
    mp_req *r = a->user;
    mp_nbq *q = r->q;
    pthread_mutex_lock(&q->mu);
    r->state = MP_REQ_DONE;
    q->events++;
    pthread_cond_broadcast(&q->done_cv);
    pthread_mutex_unlock(&q->mu);
}

/* Whether r may go natively: a contiguous access through a contiguous view (one byte range),
 * not atomic (that needs a lock round trip first), on a layer that can start one. */
static int native_wanted(const mp_req *r)
{
    const mp_file *f = r->f;
    return f->hints.nb_native != MP_DISABLE && !f->atomic && r->v->contig && r->b.len > 0 &&
           (f->io->features & RFS_IO_F_ASYNC);
}

/* Starts r natively. 1: taken (it is RUNNING, or already DONE); 0: the layer declined, r is
 * untouched and goes to the I/O threads. r is in the table, state RUNNING, q->mu not held. */
static int native_start(mp_req *r)
{
    mp_file *f = r->f;
    unsigned how = r->is_write ? RFS_IO_ASYNC_WRITE : 0u;
    if (f->hints.nb_native == MP_ENABLE)
        how |= RFS_IO_ASYNC_STREAMS;
    r->async.on_done = native_done;
    r->async.user = r;
    r->native = 1;
    int rc = f->io->ops->start(f->io, how, r->b.data, (size_t)r->b.len,
                               (uint64_t)r->v->disp + r->pos, &r->async);
    if (rc == RFS_OK)
        return 1;
    r->native = 0;
    if (rc == RFS_E_UNSUPPORTED)
        return 0;
    /* Nothing was sent: the failure is the request's, reported by its wait like any other. */
    rfs_status_save(&r->failed, rc);
    native_done(&r->async);
    return 1;
}

/* ---- starting operations ---- */
int mp_nb_start(mp_file *f, int is_write, uint64_t pos, void *buf, MPI_Count count,
                MPI_Datatype type, MPI_Request *req)
{
    mp_nb_reap(); /* a program that only frees its requests still gets them released */
    mp_req *r = calloc(1, sizeof *r);
    if (!r)
        return MPI_ERR_NO_MEM;
    int rc = is_write ? mp_buf_for_write(&r->b, buf, count, type, f->view->rep)
                      : mp_buf_for_read(&r->b, buf, count, type, f->view->rep);
    if (rc != MPI_SUCCESS) {
        free(r);
        return mp_error_code(rc, "rfs: %s: bad count or datatype for this access", f->name);
    }
    mp_nbq *q = nbq_of(f->rt);
    if (!q) {
        mp_buf_free(&r->b);
        free(r);
        return mp_error_code(MPI_ERR_INTERN, "rfs: cannot make the nonblocking queue");
    }
    r->q = q;
    r->refs = 2; /* MPI's (free_fn) and ours (complete) */
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
    int native = native_wanted(r);
    pthread_mutex_lock(&q->mu);
    hash_add(q, r);
    r->state = native ? MP_REQ_RUNNING : MP_REQ_QUEUED;
    pthread_mutex_unlock(&q->mu);
    *req = r->req;
    if (native && native_start(r))
        return MPI_SUCCESS;
    /* The I/O threads: started on first use (the first file's rfs_io_threads). */
    pthread_mutex_lock(&q->mu);
    if (start_pool(q, f->hints.io_threads)) {
        /* The request exists for MPI: it fails at its wait, as any other failed I/O. */
        pthread_mutex_unlock(&q->mu);
        rfs_fail(RFS_E_NOMEM, "cannot start I/O threads");
        rfs_status_save(&r->failed, RFS_E_NOMEM);
        native_done(&r->async);
        return MPI_SUCCESS;
    }
    r->state = MP_REQ_QUEUED;
    if (q->qtail)
        q->qtail->qnext = r;
    else
        q->qhead = r;
    q->qtail = r;
    pthread_cond_signal(&q->work_cv);
    pthread_mutex_unlock(&q->mu);
    return MPI_SUCCESS;
}

int mp_nb_completed(mp_file *f, int code, int64_t bytes, MPI_Request *req)
{
    if (code != MPI_SUCCESS) {
        *req = MPI_REQUEST_NULL;
        return code;
    }
    mp_nbq *q = nbq_of(f->rt);
    mp_req *r = q ? calloc(1, sizeof *r) : NULL;
    if (!r)
        return MPI_ERR_NO_MEM;
    r->q = q;
    r->f = f;
    r->bytes = bytes;
    r->state = MP_REQ_COMPLETE;
    r->refs = 1; /* MPI's only: complete() never runs for it */
    int rc = MPI_Grequest_start(query_fn, free_fn, cancel_fn, r, &r->req);
    if (rc != MPI_SUCCESS) {
        free(r);
        return rc;
    }
    pthread_mutex_lock(&q->mu);
    hash_add(q, r); /* so free_fn finds it; already complete */
    pthread_mutex_unlock(&q->mu);
    MPI_Grequest_complete(r->req);
    *req = r->req;
    return MPI_SUCCESS;
}
