/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Internals of the rfs client library shared by the files in client/ (not installed).
 *
 * Structure: name.c parses names, options.c resolves options and the token, conn.c owns one
 * connection (transport + receiver thread + pending requests), handshake.c runs HELLO/AUTH,
 * pool.c shares connections between files, file.c opens/closes files and does the small ops,
 * xfer.c pipelines large and list transfers over a file's streams, meta.c does the
 * path-based calls, services.c the MPI-IO services (counter, locks, views); runtime.c and
 * exec.c are the runtime that owns the pool and the worker threads (runtime.h). */
#ifndef RFS_CLIENT_CLIENT_H
#define RFS_CLIENT_CLIENT_H

#include "rfs/rfs.h"
#include "common/auth.h"
#include "common/err.h"
#include "proto/proto.h"
#include "transport/transport.h"
#include "client/compress_pipe.h"
#include "client/runtime.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define RFS_CLIENT_MAX_STREAMS 16
#define RFS_AUTO_MAX_STREAMS 8 /* rfs_streams=auto opens at most this many */
#define RFS_CLIENT_MAX_WINDOW 64
#define RFS_DEFAULT_RETRY_TIMEOUT_MS 60000
#define RFS_CLIENT_LABEL_MAX (sizeof "rfs:[]:65535:" + 255 + 4096)

/* ---- names (name.c) ---- */
/* "host:port", IPv6 in brackets. */
void rfs_name_server(const rfs_name *n, char *buf, size_t cap);
/* "rfs:host:port:/path" (rfss: for TLS names, rfs+ucx: for UCX) for messages; it parses back
 * to n. */
void rfs_name_label(const rfs_name *n, char *buf, size_t cap);

/* ---- options (options.c) ---- */
/* dialgate.c: what a file's first connection learns while it is set up, for the dials beside it. */
typedef struct rfs_dial_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int rtt_known;     /* the first connection's transport is up, or it failed */
    double rtt_ms;     /* the kernel's round trip then; -1: failed or not measurable (UCX) */
    int hello_known;   /* its HELLO was answered, or it failed */
    uint32_t features; /* the server's HELLO features (0 when it failed) */
    int failed;
    int done; /* the first connection's dial ended (it may have found a pooled one instead) */
    /* Speculative dials (rfs_pool_get_auto's speculate): they connect beside the first one and
     * wait here, before their HELLO, for how many of them the decision keeps. */
    int decided, admit, tickets;
} rfs_dial_gate;
void rfs_gate_init(rfs_dial_gate *g);
void rfs_gate_destroy(rfs_dial_gate *g);
void rfs_gate_tell_rtt(rfs_dial_gate *g, double rtt_ms);
void rfs_gate_tell_hello(rfs_dial_gate *g, uint32_t features, int failed);
void rfs_gate_tell_done(rfs_dial_gate *g);
/* Block until the round trip (or HELLO) is known or the dial ended; -1 when it is not known
 * (then the caller decides as without a gate). */
double rfs_gate_wait_rtt(rfs_dial_gate *g);
int rfs_gate_wait_hello(rfs_dial_gate *g, uint32_t *features);
/* The decision: admit speculative dials may go on; the others close their transport. */
void rfs_gate_decide(rfs_dial_gate *g, int admit);
/* A speculative dial, its transport up: 1 when it may go on to its handshake (blocks until
 * the decision is made). */
int rfs_gate_admit(rfs_dial_gate *g);

typedef struct rfs_copts {
    int connect_timeout_ms;
    int io_timeout_ms;
    int streams; /* connections to open; with streams_auto, the most to open */
    int streams_auto;
    int sndbuf, rcvbuf;
    uint32_t max_frame;
    int window;
    size_t write_window;
    int retry_timeout_ms;
    int has_token;
    char token[RFS_TOKEN_MAX];
    /* token holds a capability string (common/capability.h): authenticate with CAP_AUTH */
    int is_cap;
    char congestion[RFS_TCP_CC_MAX]; /* $RFS_TCP_CONGESTION when usable, else "" */
    int no_sums;                     /* $RFS_CHECKSUM=off: no frame checksums even if offered */
    int no_vers;                     /* $RFS_FILE_VERSIONS=off: never ask for file versions (acts
                                      * as an older server would: tests of ABT's STAT path) */
    unsigned zmode;                  /* rfs_options.compress / $RFS_COMPRESS (compress_pipe.h) */
    int zlevel;
    int tls;           /* rfs_options.tls or $RFS_TLS (an rfss: name adds it) */
    char tls_ca[4096]; /* $RFS_TLS_CA, or "": the system's CAs */
    char tls_pin[128]; /* $RFS_TLS_PIN, or "" */
    int ucx;           /* $RFS_TRANSPORT is "ucx" (an rfs+ucx: name adds it) */
    /* A third-party copy grant (rfsd's pulling side): authenticate with TPC_AUTH and this
     * grant's key instead of a token (docs/protocol.md "Third-party copy"). */
    int has_grant;
    /* This connection is an additional stream of a file whose first connection's server
     * takes RFS_F_EXTRA: its HELLO says so, and the server may refuse it (BUSY). */
    int extra_stream;
    /* Multi-stream opens (dialgate.c): the first connection's dial tells gate_tell its round
     * trip and HELLO; the others' dials wait on gate_wait before their HELLO and mark it EXTRA
     * when the first one's server takes the mark (extra_stream is then ignored). */
    rfs_dial_gate *gate_tell, *gate_wait;
    /* A speculative dial (rfs_pool_get_auto): after its connect, it asks this gate whether it
     * is wanted; when not, rfs_conn_open ends with RFS_OK and no connection. */
    rfs_dial_gate *gate_admit;
    /* This dial follows a server group's PLACE answer: do not ask again. */
    int placed;
    uint8_t grant_id[RFS_TPC_ID_LEN];
    uint8_t grant_key[RFS_TPC_KEY_LEN];
    /* The runtime whose connection pool and workers serve this file or call (the default
     * runtime unless an *_in function names another). */
    rfs_runtime *rt;
} rfs_copts;

/* Applies the defaults and finds the token (opts, $RFS_TOKEN, $RFS_TOKEN_FILE). label names
 * the file for messages. */
int rfs_copts_resolve(const rfs_options *opts, const char *label, rfs_copts *out);

/* wholefiles.c: MKDIR of n absolute paths on one server (server_name: any rfs name of it),
 * pipelined like rfs_write_files; results[i] gets each one's rfs_err (RFS_E_EXIST included).
 * The server runs them in any order: a parent must exist before the call that makes its
 * child (the rfs command creates a tree level by level). */
int rfs_mkdir_many(const char *server_name, const char **paths, int *results, size_t n,
                   unsigned mode, const rfs_options *opts);

/* meta.c: the HELLO feature bits (RFS_FEAT_*) of the server of name, from a pooled connection
 * (made if there is none). */
int rfs_server_features(const char *name, const rfs_options *opts, unsigned *features);

/* meta.c: hands count LIST entries (as a reply lays them out) to fn, each name NUL-terminated
 * and its fields as an rfs_stat_info. 1 if fn asked to stop, 0 when all were given, or
 * RFS_E_PROTO naming label when one is malformed. */
int rfs_list_entries_each(const uint8_t *entries, size_t len, uint32_t count, rfs_list_fn fn,
                          void *ctx, const char *label);

/* meta.c: one LIST_TREE of name's directory (docs/protocol.md "LIST_TREE"), a reply of at
 * most max_bytes (0: the server's limit): fn gets each entry of each directory the server
 * listed whole, with dir that directory's path below name
 * ("" for name itself, parts joined by '/', each a checked LIST name), then
 * fn(ctx, dir, NULL, NULL) when that directory's entries are all given. Directories fn was not
 * told about are for the caller to list. RFS_E_UNSUPPORTED from a server without
 * RFS_FEAT_LTREE; a nonzero return of fn stops the delivery. */
typedef int (*rfs_list_tree_fn)(void *ctx, const char *dir, const char *entry,
                                const rfs_stat_info *st);
int rfs_list_tree(const char *name, uint32_t max_bytes, rfs_list_tree_fn fn, void *ctx,
                  const rfs_options *opts);

/* wholefiles.c: LIST of n absolute directory paths on one server, pipelined as above; fn gets
 * each entry of directory i (from one of the batch's threads, but the entries of one
 * directory from one thread, in order); a non-zero return ends that directory's listing.
 * results[i] gets each listing's rfs_err, and then fn is called once more with entry and st
 * NULL: directory i is done (the caller may use it while later ones are still listed). */
typedef int (*rfs_list_many_fn)(void *ctx, size_t i, const char *entry, const rfs_stat_info *st);
int rfs_list_many(const char *server_name, const char **paths, int *results, size_t n,
                  rfs_list_many_fn fn, void *ctx, const rfs_options *opts);

/* wholefiles.c: whole-file batches whose items the caller produces while the batch runs (the
 * rfs command reads a tree's files while earlier ones are on the wire, and installs fetched
 * files as they arrive), on one set of connections from the first item to the last.
 * next() hands over the next item (an rfs_write_item * for rfs_write_files_fed, an
 * rfs_read_item * for rfs_read_files_fed): 1 with *item set; 0 when none is ready and wait is
 * 0; -1 when there are no more. It is called from several threads at once, and with wait 0
 * while the caller is owed done() calls, so it must not wait then. done() is called exactly
 * once for every item handed over, on one of the batch's threads, after its result (and len)
 * are set; the batch does not touch the item after it. Returns as rfs_write_files. */
typedef struct rfs_files_feed {
    int (*next)(void *ctx, int wait, void **item);
    void (*done)(void *ctx, void *item);
    void *ctx;
} rfs_files_feed;
int rfs_write_files_fed(const char *server_name, const rfs_files_feed *feed, unsigned flags,
                        const rfs_options *opts);
int rfs_read_files_fed(const char *server_name, const rfs_files_feed *feed,
                       const rfs_options *opts);

/* Frame bytes this process sent and received on all its connections (conn.c), for
 * `RFS_STATS=1 rfs ...` (what crossed this client's network, e.g. none of a third-party copy). */
extern _Atomic uint64_t rfs_wire_tx, rfs_wire_rx;
/* Read replies that came compressed, and their raw and wire payload bytes (RFS_STATS). */
extern _Atomic uint64_t rfs_zread_replies, rfs_zread_raw, rfs_zread_wire;

/* ---- the runtime (runtime.c, exec.c, runtime.h) ---- */
typedef struct rfs_conn rfs_conn;
struct rfs_runtime {
    /* The executor (exec.c): x_mu guards the rest of these. */
    pthread_mutex_t x_mu;
    pthread_cond_t x_work; /* a job was queued, or stopping */
    pthread_cond_t x_done; /* a job finished */
    pthread_cond_t x_gone; /* a worker ended */
    rfs_task *x_head, *x_tail;
    int x_threads, x_idle, x_queued, x_stopping;
    unsigned long x_started;
    /* The connection pool (pool.c): pool_lock guards the list and every connection's pool
     * bookkeeping (pool_next, refs, idle_since_ns). */
    pthread_mutex_t pool_lock;
    rfs_conn *pool_head;
    /* The layers' parts (runtime.c): parts_mu guards the table; a part has its own locks. */
    pthread_mutex_t parts_mu;
    int n_parts;
    struct {
        const rfs_runtime_part_desc *desc;
        void *part;
    } parts[RFS_RUNTIME_MAX_PARTS];
};
void rfs_exec_init(rfs_runtime *rt);
/* In a child after fork: only the forking thread exists there, so no worker does (the lock
 * may have been held by one of them): starts the executor again from nothing. */
void rfs_exec_after_fork(rfs_runtime *rt);
/* Ends the workers once their jobs are done (every task must have been joined). */
void rfs_exec_stop(rfs_runtime *rt);

/* ---- monotonic clock ---- */
#include "common/clock.h"

/* pthread_create with every signal blocked in the new thread: library threads must not take
 * the application's signals (conn.c). */
int rfs_thread_start(pthread_t *th, void *(*fn)(void *), void *arg);

/* ---- one request in flight (conn.c) ---- */
typedef struct rfs_call {
    struct rfs_call *next; /* hash chain in the connection's pending table */
    uint32_t id;
    uint16_t op;
    int64_t deadline_ns;
    int timeout_ms;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    /* A read's payload goes straight here (PREAD, PREADV, VIEW_READ); NULL otherwise. */
    void *dst;
    size_t dst_cap; /* the most payload bytes the reply may carry (dst or sink) */
    /* Or, for a PREAD, to sink(sink_ctx, sink_off + k, piece, n) as it arrives; sink_err is
     * the sink's first errno (the rest of the payload is then read and dropped). */
    rfs_sink_fn sink;
    void *sink_ctx;
    uint64_t sink_off;
    int sink_err;
    /* Results, written by the receiver (or by a connection failure) before done is set. */
    int done;
    int rc;          /* RFS_OK: a reply came (see status); < 0: no reply (conn failure) */
    int status;      /* the reply's rfs_err */
    rfs_rep rep;     /* decoded reply; pointers into body */
    uint8_t *body;   /* owned copy of a non-payload reply body */
    size_t data_len; /* payload bytes stored at dst */
    size_t moved;    /* payload bytes the request carries or asks for (rfs_conn_start) */
    int sum;         /* sent with a checksum: the reply must carry one too */
    int zok;         /* sent with RFS_F_ZOK: the reply's payload may be packed */
    /* Asked for the file's version for a tracked handle (versions.c): the receiver notes the
     * reply's version in the box registered for vfh, with the box's epoch at sending. */
    int vtrack;
    uint32_t vfh;
    uint64_t vepoch;
    /* Called (c->lock held, by the receiver or a kill) right after done is set, for a call
     * that no thread sleeps on (async.c); it must not block or take c->lock. NULL: none. */
    void (*on_done)(struct rfs_call *call, void *arg);
    void *on_done_arg;
} rfs_call;

void rfs_call_init(rfs_call *call);
/* Frees the reply body and clears results, so the call can be reused. */
void rfs_call_reset(rfs_call *call);
void rfs_call_destroy(rfs_call *call);

/* ---- connections (conn.c, handshake.c) ---- */

struct rfs_conn {
    /* Pool bookkeeping: guarded by the pool's lock (pool.c) of rt, the runtime whose pool
     * holds the connection. */
    rfs_runtime *rt;
    rfs_conn *pool_next;
    int refs;
    int64_t idle_since_ns; /* when refs last dropped to 0 (lingering in the pool) */
    int has_token;
    char token[RFS_TOKEN_MAX];
    char host[256];
    uint16_t port;
    char server[300]; /* "host:port" of the process serving it (after a PLACE, not host) */
    /* The server group's answer to PLACE named another process ("HOST:PORT"): conn_open
     * dials there instead; "" otherwise (docs/protocol.md "Server groups"). */
    char moved_to[RFS_PLACE_MAX_ADDR + 1];
    int hello_extra; /* its HELLO was marked RFS_F_EXTRA */
    int tls;         /* the transport is TLS: only TLS requests share it */
    int ucx;         /* the transport is UCX: only UCX requests share it */

    rfs_transport *t;
    pthread_mutex_t send_lock; /* one frame at a time on the wire */

    pthread_mutex_t lock; /* everything below */
    uint32_t next_id;
    rfs_call *pending[64];
    size_t npending;
    uint32_t max_frame;    /* negotiated; RFS_PRE_HELLO_MAX until HELLO completes */
    int views_ok;          /* the server has views (HELLO features, or a SET_VIEW worked) */
    int sums;              /* frames carry checksums (HELLO features; RFS_CHECKSUM=off: no) */
    unsigned codecs;       /* bit RFS_CODEC_*: the server takes payloads compressed so */
    int vers;              /* the server reports file versions (RFS_FEAT_VER) */
    struct rfs_vreg *vreg; /* lock: handles whose files track versions (versions.c) */
    size_t nvreg, vreg_cap;
    unsigned features; /* the HELLO reply's RFS_FEAT_* bits */
    /* The link's rate as this connection's sends see it (bytes/s, 0 unknown): what the link
     * drained between two sends that waited for the socket (conn.c note_send). */
    _Atomic uint64_t link_bps;
    int64_t rate_mark_ns; /* send_lock: when a send last ended with a full buffer */
    uint64_t rate_bytes;  /* send_lock: bytes written since */
    /* AUTH is sent and the first requests follow it at once; until the server's reply proves
     * it knows the token (handshake.c), replies to anything else kill the connection and
     * requests carrying file data wait (auth_cv). */
    int auth_pending;
    pthread_cond_t auth_cv;
    rfs_call auth_call;
    uint8_t auth_expect[RFS_MAC_LEN];
    uint8_t *sink_buf; /* the receiver's scratch for sink deliveries (lazily made) */
    /* The session (handshake.c): a random id named in SESSION right after AUTH, so that a
     * later connection can fence this one; the server's lease (0: the server has none, no
     * pings) and its host's boot id, from the reply. */
    uint8_t session[RFS_SESSION_LEN];
    rfs_call session_call;
    int session_known;
    uint32_t lease_ms;
    uint8_t boot[RFS_SESSION_LEN];
    /* Pings keep the lease while the connection is idle (watchdog). */
    rfs_call ping_call;
    int ping_busy;
    int ping_timeout_ms;
    int64_t last_send_ns;
    int dead;
    int dead_err;
    char dead_msg[768];
    int stopping;
    pthread_cond_t wd_cv;
    pthread_t receiver, watchdog;
    int threads_started;
};

/* handshake.c, for the receiver: checks the AUTH reply in c->auth_call. Returns 0 when the
 * server proved itself (requests waiting on auth_cv are released), else kills the connection
 * with RFS_E_AUTH and returns -1. */
int rfs_auth_settle(rfs_conn *c);

/* Connects, runs HELLO/AUTH and starts the receiver. The new connection has refs = 1.
 * On failure the message names the server and the cause. */
/* Over TLS when o->tls (o says how the server is verified), else plain TCP. */
int rfs_conn_open(const char *host, uint16_t port, const rfs_copts *o, rfs_conn **out);
/* Stops the threads, closes the transport and frees c (refs must be 0). */
void rfs_conn_free(rfs_conn *c);
int rfs_conn_is_dead(rfs_conn *c);
/* Dead of the network or the server (closed, reset, silent past io_timeout), not of a
 * protocol or token error: what recovery can fix. */
int rfs_conn_lost(rfs_conn *c);
uint32_t rfs_conn_max_frame(rfs_conn *c);
/* The server's HELLO feature bits (RFS_FEAT_*). */
unsigned rfs_conn_features(rfs_conn *c);
/* Collective calls through a server group's MPI-IO (client/coll.c, rfs_io.h coll_*). */
int rfs_coll_join(rfs_file *f, const unsigned char id[16], unsigned nranks, const char *hints,
                  size_t *max_part);
int rfs_coll_listio(rfs_file *f, int is_write, const rfs_extent *ext, size_t n, void *buf,
                    size_t *done);

/* Registers call, encodes req (req->id is set here) and sends it with req->data as the
 * payload and ext_src as the PREADV/PWRITEV extents. Returns RFS_OK when the call is pending
 * (a send failure then completes it with an error: always rfs_conn_wait it), or a negative
 * rfs_err with the message set when nothing was sent and the call is not pending. */
int rfs_conn_start(rfs_conn *c, rfs_call *call, rfs_req *req, const uint64_t *ext_src,
                   int timeout_ms);
/* The same with the payload sent as pk says (compressed by rfs_zpack; codec 0: raw). */
int rfs_conn_start_packed(rfs_conn *c, rfs_call *call, rfs_req *req, const uint64_t *ext_src,
                          int timeout_ms, const rfs_packed *pk);
/* rfs_conn_start without compression or extents that, on a transport sending from the
 * caller's memory (UCX's direct sends), returns once the frame is posted: *pending counts the
 * bytes still to be taken, from req->data (untouched until then) and from the encoded header
 * (*hold, ours); rfs_conn_post_end, once the call is done (or to give up), waits until none is
 * and frees *hold. Elsewhere like rfs_conn_start (*pending 0, *hold NULL). */
int rfs_conn_post(rfs_conn *c, rfs_call *call, rfs_req *req, int timeout_ms, size_t *pending,
                  void **hold);
int rfs_conn_post_end(rfs_conn *c, size_t *pending, void **hold);

/* Waits for the call. Returns RFS_OK when a reply arrived (call->status may still be an
 * error), or the connection failure (RFS_E_CONN / RFS_E_TIMEOUT / RFS_E_PROTO) with the
 * message "cause" (without the server: callers prefix the file label). */
int rfs_conn_wait(rfs_conn *c, rfs_call *call);
/* start + wait + turns a failure or error reply into rfs_fail("label: cause"). */
int rfs_conn_call(rfs_conn *c, rfs_call *call, rfs_req *req, int timeout_ms, const char *label);
/* The outcome of a finished call as an rfs_err with the message "label: cause". */
int rfs_call_result(rfs_conn *c, const rfs_call *call, int wait_rc, const char *label);
/* Marks c dead, fails every pending call with err, unblocks the receiver. */
void rfs_conn_kill(rfs_conn *c, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* HELLO + AUTH + SESSION on a connection whose receiver runs (handshake.c). */
int rfs_handshake(rfs_conn *c, const rfs_copts *o);
/* place.c: this process's rank and job for PLACE ($RFS_RANK, else the MPI launcher's rank
 * variables; job from $RFS_JOB or the launcher's job id, all zero when none is known).
 * -1 when no rank is known or $RFS_PLACE is "off": the connection is served where it landed. */
int rfs_place_identity(uint8_t job[RFS_PLACE_JOB_LEN], uint32_t *rank);
/* handshake.c, for the receiver: records the SESSION reply in c->session_call. */
void rfs_session_settle(rfs_conn *c);
/* Ends the server session `old` (a dead connection of this client) and waits until the server
 * confirms nothing more of it will be applied. *boot gets the server host's boot id. */
int rfs_conn_fence(rfs_conn *c, const uint8_t old[RFS_SESSION_LEN], int timeout_ms,
                   uint8_t boot[RFS_SESSION_LEN]);

/* ---- pool (pool.c): the connections of o->rt ---- */
/* count connections to host:port authenticated with o's token; shares live ones. */
int rfs_pool_get(const rfs_name *n, const rfs_copts *o, int count, rfs_conn **out,
                 const char *label);
/* Up to count connections: keeps those that could be had (*got of them, at least 1 on
 * success), e.g. when the server refuses additional streams; the error of the first one that
 * failed, if any, is left as the last error for the caller's log. */
int rfs_pool_get_some(const rfs_name *n, const rfs_copts *o, int count, rfs_conn **out,
                      const char *label, int *got);
void rfs_pool_put(rfs_conn *c);
/* One more reference to c, which the holder gives back with rfs_pool_put: c stays alive even
 * if its file replaces it meanwhile (recovery). */
void rfs_pool_hold(rfs_conn *c);
/* rfs_streams=auto's connections (dialgate.c): the first one is dialled on a worker, and as
 * soon as its round trip is known decide(rtt_ms, ctx) says how many the file should have in
 * all; the others are dialled then, beside the first one's handshake, their HELLO marked EXTRA
 * (with mark_extra) where its server takes the mark. When a pooled connection answers at once,
 * the decision is made from it and the rest come from the pool. out gets *got connections
 * (out[0] the first; at least 1 on success; fewer than decided when the server refuses some). */
int rfs_pool_get_auto(const rfs_name *n, const rfs_copts *o, int (*decide)(double, void *),
                      void *ctx, int mark_extra, rfs_conn **out, int *got, const char *label);
/* rfs_pool_get_auto that also dials up to speculate - 1 more connections at once, beside the
 * first one instead of a round trip after it; those the decision does not want close right
 * after their TCP connect, before any handshake. For callers that expect a long path to be
 * likely and will move enough to pay for the connects (the rfs command's copies). */
int rfs_pool_get_auto_spec(const rfs_name *n, const rfs_copts *o, int (*decide)(double, void *),
                           void *ctx, int mark_extra, int speculate, rfs_conn **out, int *got,
                           const char *label);
/* Opens connections to the server of name (an rfs name) into the pool, as many as
 * rfs_pool_get_auto's rule decides (decide sees the round trip; *count of them), where they
 * linger (RFS_CONN_LINGER_MS) for the calls that follow: a command that knows it will need
 * them dials them while it does other work (the rfs command's put, get and cp -r). */
int rfs_pool_warm_auto(const char *name, const rfs_options *opts, int (*decide)(double, void *),
                       void *ctx, int speculate, int *count);
/* Closes every connection of rt's pool (none may be in use: rfs_runtime_destroy). */
void rfs_pool_close_all(rfs_runtime *rt);
/* rfs_pool_get that retries a refused or lost connection with backoff (50 ms doubling to 2 s)
 * for o->retry_timeout_ms: a server being restarted refuses connections for a moment. */
int rfs_pool_get_retry(const rfs_name *n, const rfs_copts *o, int count, rfs_conn **out,
                       const char *label);

/* ---- rfs_streams=auto (autostreams.c) ---- */
/* What a file has learnt about its streams; shared by its transfers (mu guards it). */
/* One transfer's probing state (owned by its controller), or a series' (in rfs_auto). */
typedef struct rfs_auto_probe {
    int k;       /* streams running */
    int warming; /* the current epoch is not judged */
    int done;
    double base; /* rate with k - 1 streams, bytes/s */
} rfs_auto_probe;
typedef struct rfs_auto {
    pthread_mutex_t mu;
    int enabled;       /* auto, and the file has more than one connection */
    int active;        /* streams a large transfer starts with */
    int settled;       /* probing stopped: the last addition did not pay */
    int since_settled; /* large transfers since then (re-probe after a while) */
    /* Transfers too short to probe within (a collective buffer's few frames) probe as a
     * series: their bytes and times add up to epochs (rfs_auto_series). */
    rfs_auto_probe series;
    int64_t series_ns;
    uint64_t series_bytes;
} rfs_auto;
double rfs_conn_rtt_ms(rfs_conn *c);
int rfs_auto_min_rtt_us(void);
/* How many connections an auto file opens, judged from its first connection's round trip. */
int rfs_auto_wants_streams(rfs_conn *first, const char *label, int cap);
/* The same decision from a round trip in ms (-1: unknown, one stream). */
int rfs_auto_streams_for_rtt(double rtt_ms, const char *label, int cap);
void rfs_auto_init(rfs_auto *a); /* off; open sets enabled */
void rfs_auto_destroy(rfs_auto *a);
/* Streams a large transfer starts with; *probing: whether it should measure and add more. */
int rfs_auto_start(rfs_auto *a, int nconn, int *probing);
int64_t rfs_auto_epoch_ns(rfs_conn *c);
void rfs_auto_probe_init(rfs_auto_probe *p, int k);
/* Judges one epoch's delivered rate; 1: start one more stream (p->k is then its count). */
int rfs_auto_probe_epoch(rfs_auto *a, rfs_auto_probe *p, int nconn, double rate, const char *label);
/* A transfer of a few frames that ran on k streams (rfs_auto_start's count) moved `bytes` in
 * ns: counted into the file's series epoch, which when full is judged as a transfer's epoch
 * is, and the next transfers start with the count it chose. */
void rfs_auto_series(rfs_auto *a, int k, uint64_t bytes, int64_t ns, int64_t epoch_ns, int nconn,
                     const char *label);

/* ---- file versions (versions.c, docs/protocol.md "File versions") ----
 * The newest version (size, mtime_ns) of a file the server reported in a reply to one of this
 * file's requests. Replies of requests in flight at the same time may arrive in any order, so
 * a version replaces the box's only if it is newer: its request was sent after the box's
 * version had arrived (epoch unchanged since), or it is larger by (mtime, size) (writes only
 * grow a file and the server's clock only moves on). */
typedef struct rfs_verbox {
    pthread_mutex_t mu;
    int tracking; /* writes and size changes ask for the version (rfs_file_version) */
    int known;
    uint64_t size;
    int64_t mtime_ns;
    uint64_t epoch; /* bumped when the version changes */
} rfs_verbox;
struct rfs_vreg {
    uint32_t fh;
    rfs_verbox *box;
};
void rfs_verbox_init(rfs_verbox *b);
void rfs_verbox_destroy(rfs_verbox *b);
uint64_t rfs_verbox_epoch(rfs_verbox *b);
void rfs_verbox_note(rfs_verbox *b, uint64_t sent_epoch, uint64_t size, int64_t mtime_ns);
/* Registers the handle fh of c as the file of box (the receiver updates the box from the
 * replies of its requests), or forgets it (only if it is box's: harmless for any fh). */
void rfs_conn_track(rfs_conn *c, uint32_t fh, rfs_verbox *box);
void rfs_conn_untrack(rfs_conn *c, uint32_t fh, rfs_verbox *box);
/* rfs_conn_start, c->lock held: makes a write or size change of a tracked handle ask for the
 * version; drops the flag when the server cannot answer it. */
void rfs_conn_ver_request(rfs_conn *c, rfs_call *call, rfs_req *req);
/* The receiver: notes the version of call's reply in its box. */
void rfs_conn_ver_reply(rfs_conn *c, rfs_call *call);
/* The file's newest version; the first call starts tracking (later writes ask for it).
 * RFS_E_UNSUPPORTED when the server does not report versions. */
int rfs_file_version(rfs_file *f, uint64_t *size, int64_t *mtime_ns);
/* The size in the newest version a reply reported (right after open: the OPEN reply's), without
 * asking the server or starting to track; -1 when no reply carried one (an older server). */
int rfs_file_known_size(rfs_file *f, uint64_t *size);

/* ---- files (file.c) ---- */
struct rfs_file {
    rfs_name name;
    char server[300];
    char label[RFS_CLIENT_LABEL_MAX];
    unsigned flags;
    int nconn;
    rfs_conn *conn[RFS_CLIENT_MAX_STREAMS];
    uint32_t fh[RFS_CLIENT_MAX_STREAMS];
    rfs_auto autos; /* rfs_streams=auto: how many of them large transfers use */
    int io_timeout_ms;
    int window;
    size_t chunk;  /* data bytes per frame, for every stream of this file */
    rfs_zstate *z; /* compression of its writes (compress_pipe.h) */
    /* A SET_VIEW sent without waiting for its replies (services.c): the view op that follows
     * on the same connections is ordered after it by the server, so the round trip is saved;
     * its outcome is collected by that view op (or the next set_view, sync or close). */
    pthread_mutex_t view_mu;
    struct {
        int active;
        uint32_t view_id;
        int started[RFS_CLIENT_MAX_STREAMS];
        rfs_call calls[RFS_CLIENT_MAX_STREAMS];
    } pending_view;
    /* The write window (wwin.c): PWRITEs sent whose replies are not collected yet, oldest
     * first, and the first failure among them not yet reported. */
    pthread_mutex_t ww_mu;
    size_t ww_cap, ww_bytes;
    unsigned ww_count;
    uint64_t ww_queued, ww_collected; /* writes queued and collected so far */
    uint64_t ww_replayed;             /* sent again after a lost connection (RFS_STATS) */
    struct rfs_wwrite *ww_head, *ww_tail;
    rfs_status ww_failed; /* first windowed write failure not yet reported (rc RFS_OK: none) */
    struct rfs_wwrite *ww_lost_head, *ww_lost_tail; /* lost with a connection: to send again */

    /* Recovery after a lost connection (recover.c). Operations hold rw for reading; recovery
     * holds it for writing while it swaps connections and handles. */
    pthread_rwlock_t rw;
    unsigned gen, recoveries;
    int gave_up;                       /* the last recovery failed: the next tries once */
    rfs_status gave_up_why;            /* ... with this error, */
    int64_t next_try_ns;               /* ... and until then later calls fail at once (recover.c) */
    int retry_ms;                      /* 0: no recovery, a lost connection fails the operation */
    rfs_copts copts;                   /* to connect again (holds the token: wiped at close) */
    int stale[RFS_CLIENT_MAX_STREAMS]; /* replaced connection, file not yet open on it */
    /* Atomic: operations on the file run concurrently (they hold f->rw only for reading).
     * The file is dirty (written since the last successful sync) while writes != synced. */
    atomic_uint_fast64_t writes; /* operations that changed the file's bytes or size */
    atomic_uint_fast64_t synced; /* `writes` when the last successful sync began */
    atomic_int lost_unsynced;    /* the server host rebooted while dirty: sync must fail */
    int boot_known;
    uint8_t boot[RFS_SESSION_LEN];
    struct {
        uint64_t disp;
        uint8_t *enc;
        size_t len;
    } saved_views[RFS_MAX_VIEWS];
    struct rfs_held_lock {
        uint64_t off, len;
        unsigned mode;
    } * locks;
    size_t nlocks, locks_cap;
    rfs_verbox ver; /* the file's version as replies reported it (versions.c) */
};

/* ---- recovery (recover.c) ---- */
#define RFS_ATTEMPT_RETRY 1u  /* idempotent: run it again once the file is recovered */
#define RFS_ATTEMPT_WRITES 2u /* changes the file's bytes (so a later sync has work) */
typedef struct rfs_attempt {
    unsigned how;
    unsigned gen;
    int64_t deadline_ns;
} rfs_attempt;
/* Every public operation on a file:
 *     rfs_attempt a; rfs_attempt_begin(f, &a, how);
 *     do rc = op(...); while (rfs_attempt_again(f, &a, &rc));
 * again() recovers the file when the attempt failed on a lost connection and says whether to
 * run the operation again; otherwise *rc is the outcome. */
void rfs_attempt_begin(rfs_file *f, rfs_attempt *a, unsigned how);
/* The `how` of an operation that is one op, from the op's facts (proto.h): idempotent ops run
 * again, ops that change the file's bytes or size leave work for the next sync. */
unsigned rfs_attempt_how(uint16_t op);
int rfs_attempt_again(rfs_file *f, rfs_attempt *a, int *rc);
/* Reconnects, fences the old sessions, reopens, restores views, locks and lost window writes;
 * retries with backoff until deadline_ns. gen: the file generation the caller saw. */
int rfs_file_recover(rfs_file *f, unsigned gen, int64_t deadline_ns);
/* RFS_STATS=1 (conn.c): counters printed at close and after recoveries. */
int rfs_stats_enabled(void);
/* RFS_STATS: one line with the window's counts (wwin.c). */
void rfs_wwin_report(const rfs_file *f);
/* Sends again, in order, the window's writes whose replies were lost (wwin.c). */
int rfs_wwin_replay(rfs_file *f);
/* Frees what was never sent again (the file is being closed after a failed recovery). */
void rfs_wwin_replay_drop(rfs_file *f);
/* Saved state that recovery restores (services.c). */
int rfs_file_save_view(rfs_file *f, uint32_t view_id, uint64_t disp, const void *enc, size_t len);
void rfs_file_free_saved(rfs_file *f);

/* ---- asynchronous contiguous accesses (async.c; rfs_io start/end) ---- */
typedef struct rfs_async rfs_async;
#define RFS_ASYNC_WRITE 1u
#define RFS_ASYNC_STREAMS 2u /* also where a send waits for the socket (TCP, TLS) */
/* Sends every frame of the access on the file's first connection and returns: done(arg) is
 * called once when the last reply is in (or the connection failed). RFS_E_UNSUPPORTED: this
 * file cannot (recovery on, compression, not UCX without RFS_ASYNC_STREAMS): nothing sent. */
int rfs_async_start(rfs_file *f, unsigned how, void *buf, size_t len, uint64_t off,
                    void (*done)(void *arg), void *arg, rfs_async **out);
/* Waits for it (bounded by the file's I/O timeout), frees it, returns its outcome. */
int rfs_async_end(rfs_file *f, rfs_async *a, size_t *done);

/* ---- the write window (wwin.c) ---- */
#define RFS_WWIN_DECLINED 1
/* Sends a PWRITE or VIEW_WRITE (off: the view position) without waiting for its reply; RFS_WWIN_DECLINED when the window does not
 * take it (off, several streams, larger than a frame): then write the ordinary way. A failure
 * of an earlier windowed write is returned instead, once. */
int rfs_wwin_write(rfs_file *f, uint16_t op, uint32_t view_id, const void *buf, size_t len,
                   uint64_t off, size_t *done);
/* The same for a PWRITEV whose npieces (offset, length) pairs and len bytes make one frame
 * (xfer.c plans it): a collective round's list write returns once sent, as a small write does. */
int rfs_wwin_writev(rfs_file *f, const uint64_t *pieces, uint32_t npieces, const void *buf,
                    size_t len, size_t *done);
/* Collects the replies that have arrived (all: waits for every one) and returns the first
 * failure not yet reported. Every other call on the file calls it first. */
int rfs_wwin_settle(rfs_file *f, int all);
/* Waits for every reply; a failure stays recorded for the next call to report. */
void rfs_wwin_wait(rfs_file *f);
/* The same for the writes queued before the call, without holding the window while waiting:
 * writes of other threads go on meanwhile (rfs_flush_quiet: a helper thread waits for the
 * writes before a barrier while the application writes on, mpiio/fence.c). */
void rfs_wwin_wait_queued(rfs_file *f);
/* rfs_io write_mark / mark_answered for the window: writes queued so far; 1 once all writes
 * queued before `mark` are answered (collects the replies that arrived, never waits). */
uint64_t rfs_wwin_mark(rfs_file *f);
int rfs_wwin_answered(rfs_file *f, uint64_t mark);

/* Collects the replies of a pending SET_VIEW (all of them when view_id < 0, else only if it
 * was for view_id) and returns its first failure, "label: cause". */
int rfs_file_settle_view(rfs_file *f, int64_t view_id);

/* Sends reqs[s] on stream s for every s in [from, f->nconn) at once, then waits for all of
 * them: one round trip for the lot. calls[from..] are initialised here and hold the replies
 * (the caller destroys them); ok[s] says which succeeded. Returns the first failure in stream
 * order, as "label: cause". */
int rfs_file_fanout(rfs_file *f, int from, rfs_req *reqs, rfs_call *calls, int *ok);

/* OPEN of the file's path on stream s with these flags; the handle goes to f->fh[s]. */
int rfs_file_open_stream(rfs_file *f, int s, unsigned flags, unsigned mode);

/* Payload bytes that fit one frame of max_frame, with room for any op's fixed fields. */
size_t rfs_chunk_for_frame(uint32_t max_frame);

/* ---- pipelined transfers (xfer.c) ---- */
int rfs_xfer_contig(rfs_file *f, uint16_t op, uint32_t view_id, uint64_t off, void *rbuf,
                    const void *wbuf, size_t len, size_t *done);
/* PREAD of [off, off+len) delivered to sink (rfs_pread_sink). */
int rfs_xfer_sink(rfs_file *f, uint64_t off, size_t len, rfs_sink_fn sink, void *ctx, size_t *done);
int rfs_xfer_list(rfs_file *f, uint16_t op, const rfs_extent *ext, size_t n, void *rbuf,
                  const void *wbuf, size_t *done);
/* A list write (rfs_pwritev): as rfs_xfer_list, but one that makes a single frame goes through
 * the write window and returns once sent. */
int rfs_xfer_writev_windowed(rfs_file *f, const rfs_extent *ext, size_t n, const void *wbuf,
                             size_t *done);

#endif
