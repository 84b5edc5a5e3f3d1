/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* One client connection: its reader thread, reply writer lock, in-flight accounting, handle
 * table and the per-handle ordering of requests. See docs/design.md "rfsd threading model". */
#ifndef RFSD_CONN_H
#define RFSD_CONN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "fileid.h"
#include "identity.h"
#include "peraddr.h"
#include "pool.h"
#include "proto/proto.h"
#include "reply.h"
#include "server.h"
#include "view.h"

typedef struct rfsd_conn rfsd_conn;
typedef struct rfsd_job rfsd_job;

typedef struct rfsd_handle {
    uint32_t id;
    int fd;
    uint32_t flags; /* RFS_O_* given at open */
    rfsd_fileid *fid;
    char *path;                     /* client's path, for messages */
    struct rfsd_qfile *qf;          /* its export's quota accounting (NULL: no quota) */
    _Atomic(struct rfs_zstate *) z; /* compression of its read replies (zreply.c), or NULL */
    int state_fd; /* its file's shared state file (rfsd --mpi, fs_shared.h), or -1 */
    struct rfsd_coll_member *coll; /* its collective open (COLL_JOIN, coll.h), or NULL */
    /* Below: guarded by the connection's mutex. */
    unsigned refs; /* table entry + jobs holding it */
    int closed;
    unsigned active; /* dispatched, unfinished requests on this handle */
    int barrier_running;
    rfsd_job *qhead, *qtail; /* requests held back by the ordering rule */
    rfsd_job *running;       /* data ops started and not finished, for the overlap rule */
    /* Views are only changed by SET_VIEW, a barrier, so readers never race a writer. */
    rfsd_view views[RFSD_MAX_VIEWS];
} rfsd_handle;

/* Where a streamed PWRITE's data come from: the connection's socket, read piece by piece by
 * the reader thread that runs the write (conn.c), so each piece is written while still in that
 * thread's cache instead of being handed to a worker in a frame-sized buffer. */
typedef struct rfsd_stream {
    int (*next)(void *ctx, void *buf, size_t n); /* the next n bytes; 0, or -1: connection lost */
    void *ctx;
    uint8_t *buf;
    size_t cap; /* piece size */
    int lost;   /* set when next failed: the connection is gone */
} rfsd_stream;

struct rfsd_job {
    rfsd_work work;      /* first: the pool hands back this pointer */
    rfsd_out out;        /* its reply; the job ends when the reply is out (reply.h) */
    uint8_t *rbuf;       /* reply payload the job owns, freed when it ends */
    int on_worker;       /* run by a pool worker (not inline by the reader) */
    rfsd_stream *stream; /* PWRITE data still in the socket (req.data is NULL), or NULL */
    rfsd_conn *conn;
    rfsd_handle *h; /* NULL for ops without a file handle */
    rfs_req req;    /* points into body */
    uint8_t *body;
    size_t cost; /* bytes charged to the connection's in-flight budget */
    int barrier;
    int ranged, writes; /* a data op on [lo, hi); writes: it changes those bytes */
    uint64_t lo, hi;
    rfsd_job *qnext;
    rfsd_job *rnext, *rprev; /* the handle's running data ops (rfsd_handle.running) */
};

struct rfsd_conn {
    rfsd_server *srv;
    int fd;            /* the socket: poll, shutdown (I/O goes through tr) */
    rfs_transport *tr; /* TCP, or TLS over it (transport/tls.h) */
    char peer[80];
    pthread_t reader;
    struct rfsd_conn *next, *prev; /* server list (srv->mu) */

    pthread_mutex_t mu; /* in-flight counters, handle table, ordering */
    pthread_cond_t cv;  /* signalled when a job finishes or a reply goes out */
    unsigned inflight;  /* requests read whose reply is not out yet */
    size_t inflight_bytes;
    unsigned loose; /* replies of the reader itself (HELLO, errors) not out */

    rfsd_replyq rq;   /* replies waiting for the client to read (reply.h) */
    rfsd_lane lane;   /* requests waiting for a worker (pool.h) */
    rfsd_addr *addr;  /* the peer's address: per-address limits (peraddr.h) */
    int extra_stream; /* admitted as an additional stream (RFS_F_EXTRA) */

    atomic_int closing;         /* reader stopped: cancels lock waits */
    atomic_int fenced;          /* superseded by a new session: apply nothing more */
    atomic_int ready;           /* authenticated (or HELLO done without auth) */
    int64_t started_ns;         /* accepted (monotonic): the oldest unready goes first */
    _Atomic int64_t last_rx_ns; /* when bytes last arrived (monotonic): the lease */
    int has_session;            /* session: set once by SESSION (srv->mu) */
    uint8_t session[RFS_SESSION_LEN];
    atomic_uint nlocks;          /* byte-range locks held (cap: rfsd --max-locks) */
    _Atomic uint64_t view_bytes; /* decoded views held (cap: rfsd --max-view-bytes) */
    uint32_t max_frame;          /* negotiated; RFS_PRE_HELLO_MAX until ready */
    atomic_int sums;             /* the client sent checksummed frames: so do we (wire.h) */
    rfsd_who who;                /* identity and rights: set before ready, then fixed */

    uint8_t *stream_buf;       /* the reader's piece buffer for streamed writes */
    struct rfsd_tpc_jobs *tpc; /* third-party copy pulls this client started (tpc_pull.h) */

    rfsd_handle *slots[RFSD_MAX_HANDLES];
    uint32_t gens[RFSD_MAX_HANDLES];
    unsigned cursor, nhandles;
};

/* Accepted socket: registers the connection and starts its reader and writer threads. Takes
 * fd and the connection's count in addr (rfsd_addr_connect; NULL: not counted). */
int rfsd_conn_start(rfsd_server *srv, int fd, const char *peer, rfsd_addr *addr);
/* Joins the reader threads of ended connections and frees them (acceptor thread). */
void rfsd_conn_reap(rfsd_server *srv);
/* rfsd_conn_start over a ready transport without a socket (UCX), taking it over. */
int rfsd_conn_start_transport(rfsd_server *srv, rfs_transport *t, const char *peer,
                              rfsd_addr *addr);
/* Stops reading new requests (SIGTERM); in-flight ones are still answered. Call under srv->mu. */
void rfsd_conn_stop_reading(rfsd_conn *c);
/* Ends a superseded session at once: nothing more it sent is applied, its reader stops, and
 * what it has in flight finishes (session.c waits for that). Call under srv->mu. */
void rfsd_conn_fence(rfsd_conn *c);
/* Closes the oldest connection that has not authenticated yet (the table is full and a new
 * client waits). 0, or -1 if every connection is authenticated. */
int rfsd_conn_evict_unready(rfsd_server *srv);

/* Replies of the reader thread itself (HELLO, AUTH, SESSION, refused frames): r is copied,
 * payload included, and queued (reply.h). The reader stops reading while 64 of these are
 * waiting for the client. */
void rfsd_conn_send(rfsd_conn *c, const rfs_rep *r);
/* Error reply carrying rfs_last_error() of the calling thread (or rfs_strerror). */
void rfsd_conn_send_error(rfsd_conn *c, uint16_t op, uint32_t id, int err);
/* Fills r as an error reply to op/id carrying rfs_last_error() (msg: storage for it). */
void rfsd_error_rep(rfs_rep *r, uint16_t op, uint32_t id, int err, char *msg, size_t cap);

/* Handle table (caller holds c->mu). */
int rfsd_handle_add(rfsd_conn *c, rfsd_handle *h); /* assigns h->id; RFS_E_NOSPC when full */
rfsd_handle *rfsd_handle_find(rfsd_conn *c, uint32_t id);
void rfsd_handle_remove(rfsd_conn *c, rfsd_handle *h);
/* Releases a handle's file, locks and views (no lock needed: no job uses it any more). */
void rfsd_handle_release(rfsd_handle *h);

/* ops.c: executes a request and encodes its reply into j->out (payload owned by the job:
 * j->rbuf, its request body, or its file by sendfile). */
void rfsd_execute(rfsd_job *j);
/* Bytes a request may put in flight (request body + expected reply data). */
size_t rfsd_request_cost(const rfs_req *r, uint32_t body_len);
/* 1 if the request is small and never waits (no lock waits, no fsync, at most
 * RFSD_QUICK_MAX_BYTES of data): the reader may run it itself when nothing else is in flight. */
int rfsd_op_is_quick(const rfs_req *r);
/* 1 if the op names a file handle; *fh gets it. */
int rfsd_op_handle(const rfs_req *r, uint32_t *fh);
/* 1 for a data op on a byte range [lo, hi) of its file (writes: it changes bytes); 0 if none. */
int rfsd_op_range(const rfs_req *r, uint64_t *lo, uint64_t *hi, int *writes);

#endif
