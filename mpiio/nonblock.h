/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Nonblocking rfs operations (nonblock.c) and the request-completion hooks (waits.c). */
#ifndef RFS_MPIIO_NONBLOCK_H
#define RFS_MPIIO_NONBLOCK_H

#include "mpiio/mpiio_internal.h"

enum mp_req_state {
    MP_REQ_QUEUED = 0,   /* waiting for an I/O thread */
    MP_REQ_RUNNING = 1,  /* an I/O thread is doing it, or (native) it is on the wire */
    MP_REQ_DONE = 2,     /* I/O finished; MPI_Grequest_complete not yet called */
    MP_REQ_COMPLETE = 3, /* completed as an MPI request; MPI frees it (free_fn) */
};

struct mp_nbq;
typedef struct mp_req {
    MPI_Request req;
    struct mp_nbq *q; /* the queue of its file's runtime */
    mp_file *f;
    mp_view *v;
    int is_write;
    uint64_t pos;
    mp_buf b;
    int state;
    rfs_status failed; /* the I/O's outcome (rc RFS_OK: none) */
    /* Native (rfs_io start/end, no thread): the layer's access; ended in complete(). */
    int native;
    rfs_io_async async;
    size_t done;
    int code;             /* final MPI code (set when completed) */
    int64_t bytes;        /* memory bytes moved, for the status */
    int refs;             /* MPI's (dropped in free_fn) + ours (dropped when completed); under mu */
    int detached;         /* MPI_Request_free'd before its I/O finished: nobody waits on it */
    struct mp_req *dnext; /* list of detached requests */
    struct mp_req *qnext; /* FIFO of queued work */
    struct mp_req *hnext; /* hash chain */
} mp_req;

/* Looks up a request handle; NULL if it is not an rfs request still in flight in MPI's eyes. */
mp_req *mp_req_find(MPI_Request r);
/* If r's I/O is done, completes it as an MPI request from this thread. Returns 1 if r is now
 * complete (MP_REQ_COMPLETE). */
int mp_req_progress(mp_req *r);
/* Blocks until r's I/O is done, then completes it. */
void mp_req_finish(mp_req *r);
/* MPI_Request_free of r: if its I/O is done, completes it now; otherwise marks it detached, so
 * that the next application-thread call that reaps (mp_nb_reap, the Wait/Test family, new
 * nonblocking operations, close/sync of the file) completes it once the I/O has finished.
 * Never blocks. */
void mp_req_detach(mp_req *r);
/* Completes every detached request whose I/O is done (application thread). */
void mp_nb_reap(void);
/* Waits (bounded, ~1 ms) for any I/O thread to finish something. */
void mp_req_wait_any_event(void);
/* Completes every done rfs request in reqs[0..n); returns how many rfs requests are still not
 * done (so a blocking PMPI call could wait forever on them). */
int mp_reqs_progress(int n, MPI_Request reqs[]);

#endif
