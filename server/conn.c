/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Connection reader: frames in, HELLO/AUTH inline, everything else handed to the worker pool
 * subject to the in-flight budget and the per-handle ordering rule (docs/design.md). */
#include "conn.h"
#include "session.h"
#include "fs_shared.h"
#include "group.h"
#include "coll.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "authlimit.h"
#include "tpc_grant.h"
#include "tpc_pull.h"
#include "common/debug.h"
#include "common/auth.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "audit.h"
#include "capability.h"
#include "metrics.h"
#include "wire.h"
#include "quota.h"
#include "tls_gate.h"
#include "transport/ucx.h"
#include "zreply.h"
#include "common/zauto.h"

enum { ST_PRE_HELLO, ST_PRE_AUTH, ST_READY };

/* 1: got len bytes; 0: clean end of stream before the first byte; -1: error or end mid-way
 * (errno EAGAIN: nothing arrived for timeout_ms; EPROTO: TLS failure, logged). The socket is
 * nonblocking (the reply queue needs that), so waiting is a poll. deadline_ns (monotonic,
 * 0: none) bounds the whole call, so a peer sending a byte now and then cannot stretch it. */
static int recv_all(rfs_transport *t, void *buf, size_t len, int timeout_ms, int64_t deadline_ns)
{
    size_t got = 0;
    while (got < len) {
        long n = rfs_transport_recv_nb(t, (char *)buf + got, len - got);
        if (n > 0) {
            got += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pf = {.fd = t->fd, .events = rfs_transport_wants(t, POLLIN)};
            int wait = timeout_ms;
            if (deadline_ns) {
                int64_t left = (deadline_ns - rfs_now_ns()) / 1000000;
                wait = left <= 0 ? 0 : left < wait ? (int)left : wait;
            }
            int r = poll(&pf, 1, wait);
            if (r > 0 || (r < 0 && errno == EINTR))
                continue;
            if (r == 0)
                errno = EAGAIN;
            return -1;
        }
        if (n < 0 && errno == EPROTO)
            RFS_LOGI("%s", rfs_last_error());
        return (n == 0 && got == 0) ? 0 : -1;
    }
    return 1;
}

/* recv_all on the connection's socket; what arrives renews the lease. A read that waits a
 * whole lease fails: the session has expired. */
static int conn_recv(rfsd_conn *c, void *buf, size_t len)
{
    /* Before authentication a peer gets the short handshake timeout: a connection that never
     * says who it is must not hold a slot for a whole lease. */
    int ready = atomic_load(&c->ready);
    int limit = ready ? c->srv->cfg.lease_ms : c->srv->cfg.handshake_timeout_ms;
    int r = recv_all(c->tr, buf, len, limit, ready ? 0 : c->started_ns + (int64_t)limit * 1000000);
    if (r == 1)
        rfsd_session_heard(c);
    else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !atomic_load(&c->fenced))
        RFS_LOGI(ready ? "%s: nothing received for %d ms: session expired, closing it and "
                         "dropping whatever it sends later"
                       : "%s: no authentication within %d ms (rfsd --handshake-timeout-ms); "
                         "closing",
                 c->peer, limit);
    return r;
}

int rfsd_conn_evict_unready(rfsd_server *srv)
{
    pthread_mutex_lock(&srv->mu);
    rfsd_conn *oldest = NULL;
    for (rfsd_conn *c = srv->conns; c; c = c->next)
        if (!atomic_load(&c->ready) && !atomic_load(&c->closing) &&
            (!oldest || c->started_ns < oldest->started_ns))
            oldest = c;
    if (oldest) {
        atomic_store(&oldest->closing, 1);
        RFS_LOGI("%s: not authenticated yet and the connection table is full: closed to make "
                 "room",
                 oldest->peer);
        shutdown(oldest->fd, SHUT_RDWR);
    }
    pthread_mutex_unlock(&srv->mu);
    return oldest ? 0 : -1;
}

/* ---- replies ---- */

/* A reply of the reader itself, copied with its payload. */
typedef struct loose_out {
    rfsd_out out;
    uint8_t payload[];
} loose_out;

static void loose_done(rfsd_out *o, int sent)
{
    (void)sent;
    rfsd_conn *c = o->ctx;
    free(o);
    pthread_mutex_lock(&c->mu);
    c->loose--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Ends both directions: the socket's shutdown, or the transport's when it has no socket. */
static void cut(rfsd_conn *c)
{
    if (c->fd >= 0)
        shutdown(c->fd, SHUT_RDWR);
    else if (c->tr)
        rfs_transport_shutdown(c->tr);
}

void rfsd_conn_send(rfsd_conn *c, const rfs_rep *r)
{
    size_t n = r->status == 0 ? r->data_len : 0;
    if (r->status == 0 && r->op == RFS_OP_LIST && r->u.list.entries)
        n = r->u.list.entries_len;
    loose_out *lo = malloc(sizeof *lo + (n ? n : 1));
    if (!lo) {
        /* the client would wait for this reply forever: end the connection instead */
        RFS_LOGE("%s: out of memory for a reply; dropping the connection", c->peer);
        cut(c);
        return;
    }
    rfs_rep copy = *r;
    if (n && r->op == RFS_OP_LIST && r->u.list.entries) {
        memcpy(lo->payload, r->u.list.entries, n);
        copy.u.list.entries = lo->payload;
    } else if (n) {
        memcpy(lo->payload, r->data, n);
        copy.data = lo->payload;
    }
    rfsd_out_encode(&lo->out, &copy, -1, 0, c->peer);
    rfsd_wire_seal(c, &lo->out);
    lo->out.done = loose_done;
    lo->out.ctx = c;
    pthread_mutex_lock(&c->mu);
    c->loose++;
    pthread_mutex_unlock(&c->mu);
    rfsd_replyq_submit(&c->rq, &lo->out);
}

void rfsd_error_rep(rfs_rep *r, uint16_t op, uint32_t id, int err, char *msg, size_t cap)
{
    const char *m = rfs_last_error();
    if (!m || !*m)
        m = rfs_strerror(err);
    snprintf(msg, cap, "%s", m);
    memset(r, 0, sizeof *r);
    r->op = op;
    r->id = id;
    r->status = rfs_err_to_wire(err);
    r->u.err.s = msg;
    size_t n = strlen(msg);
    r->u.err.len = (uint16_t)(n > RFS_MAX_MSG ? RFS_MAX_MSG : n);
}

void rfsd_conn_send_error(rfsd_conn *c, uint16_t op, uint32_t id, int err)
{
    char msg[RFS_MAX_MSG + 1];
    rfs_rep r;
    rfsd_error_rep(&r, op, id, err, msg, sizeof msg);
    RFS_LOGD("%s: %s #%u -> %s: %s", c->peer, rfs_op_name(op), id, rfs_strerror(err), msg);
    rfsd_conn_send(c, &r);
    rfs_clear_error();
}

/* ---- handle table ---- */

int rfsd_handle_add(rfsd_conn *c, rfsd_handle *h)
{
    RFS_ASSERT_HELD(&c->mu);
    if (c->nhandles >= RFSD_MAX_HANDLES)
        return rfs_fail(RFS_E_NOSPC, "%s: too many open files on this connection (limit %u)",
                        h->path, RFSD_MAX_HANDLES);
    unsigned per_addr = c->srv->cfg.max_handles_per_addr;
    if (c->addr && !rfsd_addr_open(c->addr, per_addr))
        return rfs_fail(RFS_E_NOSPC,
                        "%s: too many open files from this client's address %s "
                        "(limit %u over all its connections, rfsd --max-handles-per-addr)",
                        h->path, rfsd_addr_name(c->addr), per_addr);
    for (unsigned i = 0; i < RFSD_MAX_HANDLES; i++) {
        unsigned slot = (c->cursor + i) % RFSD_MAX_HANDLES;
        if (c->slots[slot])
            continue;
        /* id = generation << 12 | slot: a closed handle's id comes back only after 2^20
         * reuses of its slot, and the rotating cursor spreads reuse over all slots */
        uint32_t gen = (c->gens[slot] + 1) & 0xFFFFFu;
        c->gens[slot] = gen ? gen : 1;
        h->id = c->gens[slot] << 12 | slot;
        c->slots[slot] = h;
        c->cursor = slot + 1;
        c->nhandles++;
        RFS_REF_GET(h->refs);
        return RFS_OK;
    }
    if (c->addr)
        rfsd_addr_close(c->addr);
    return rfs_fail(RFS_E_NOSPC, "%s: no free handle slot", h->path);
}

rfsd_handle *rfsd_handle_find(rfsd_conn *c, uint32_t id)
{
    RFS_ASSERT_HELD(&c->mu);
    rfsd_handle *h = c->slots[id & (RFSD_MAX_HANDLES - 1)];
    return (h && h->id == id && !h->closed) ? h : NULL;
}

void rfsd_handle_remove(rfsd_conn *c, rfsd_handle *h)
{
    RFS_ASSERT_HELD(&c->mu);
    unsigned slot = h->id & (RFSD_MAX_HANDLES - 1);
    if (c->slots[slot] == h) {
        c->slots[slot] = NULL;
        c->nhandles--;
        RFS_REF_PUT(h->refs);
        if (c->addr)
            rfsd_addr_close(c->addr);
    }
}

void rfsd_handle_release(rfsd_handle *h)
{
    rfsd_quota_file_put(h->qf, h->fd);
    h->qf = NULL;
    if (h->fid) {
        rfsd_unlock_all(h->fid, h);
        rfsd_fileid_put(h->fid);
        h->fid = NULL;
    }
    if (h->state_fd >= 0) { /* while fd is open: the state file is named after it */
        rfsd_fss_detach(h->fd, h->state_fd);
        h->state_fd = -1;
    }
    if (h->fd >= 0) {
        close(h->fd);
        h->fd = -1;
    }
    for (unsigned i = 0; i < RFSD_MAX_VIEWS; i++)
        rfsd_view_clear(&h->views[i]);
    rfsd_coll_leave(h); /* a handle lost with its connection counts as closed for the group */
}

static void handle_free(rfsd_handle *h)
{
    RFS_REF_DEAD(h->refs);
    rfsd_zreply_free(h);
    free(h->path);
    free(h);
}

/* ---- jobs ---- */

/* The ordering rule (docs/design.md): a barrier waits for everything before it and holds
 * everything after it; a data op waits for earlier unfinished data ops it conflicts with (the
 * same bytes, and one of the two writes them), so a client may send a write and a read or
 * write of the same bytes without waiting for the first reply. Caller holds c->mu. */
static int conflicts(const rfsd_handle *h, const rfsd_job *j)
{
    if (!j->ranged)
        return 0;
    for (const rfsd_job *r = h->running; r; r = r->rnext)
        if ((r->writes || j->writes) && r->lo < j->hi && j->lo < r->hi)
            return 1;
    return 0;
}

static int may_start(const rfsd_handle *h, const rfsd_job *j)
{
    return j->barrier ? h->active == 0 : !h->barrier_running && !conflicts(h, j);
}

static void start_on_handle(rfsd_handle *h, rfsd_job *j)
{
    h->active++;
    if (j->barrier)
        h->barrier_running = 1;
    if (j->ranged) {
        j->rprev = NULL;
        j->rnext = h->running;
        if (h->running)
            h->running->rprev = j;
        h->running = j;
    }
}

static void end_on_handle(rfsd_handle *h, rfsd_job *j)
{
    h->active--;
    if (j->barrier)
        h->barrier_running = 0;
    if (j->ranged) {
        if (j->rprev)
            j->rprev->rnext = j->rnext;
        else
            h->running = j->rnext;
        if (j->rnext)
            j->rnext->rprev = j->rprev;
    }
}

/* The job's reply is out (or dropped with the connection): the request ends here, so its
 * budget, its place in the handle's ordering and the bytes of a sendfile reply are held until
 * the client has them (a later write to those bytes must not change a read reply in flight). */
static void job_finish(rfsd_out *o, int sent)
{
    (void)sent;
    rfsd_job *j = o->ctx;
    rfsd_conn *c = j->conn;
    rfsd_handle *h = j->h, *dead = NULL;
    pthread_mutex_lock(&c->mu);
    c->inflight--;
    c->inflight_bytes -= j->cost;
    if (h) {
        end_on_handle(h, j);
        /* start what the ordering rule held back, in arrival order */
        while (h->qhead) {
            rfsd_job *n = h->qhead;
            if (!may_start(h, n))
                break;
            h->qhead = n->qnext;
            if (!h->qhead)
                h->qtail = NULL;
            start_on_handle(h, n);
            n->on_worker = 1;
            rfsd_pool_submit(c->srv->pool, &c->lane, &n->work);
        }
        if (RFS_REF_PUT(h->refs) == 0)
            dead = h;
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (dead)
        handle_free(dead);
    free(j->rbuf);
    free(j->body);
    free(j);
}

static void job_run(rfsd_work *w)
{
    rfsd_job *j = (rfsd_job *)w;
    rfsd_conn *c = j->conn;
    rfs_clear_error();
    /* A connection whose replies can no longer be sent (reset by the client, timed out, cut
     * at shutdown) has nobody to tell the outcome: its queued requests are dropped unrun, as
     * if they had been lost on the way, instead of keeping workers busy for nothing. */
    if (j->stream || !rfsd_replyq_broken(&c->rq))
        rfsd_execute(j);
    j->out.done = job_finish;
    j->out.ctx = j;
    /* The worker is free once the reply is encoded: sending it never waits for the client
     * (reply.h). The job is still in flight, so c outlives this call. */
    if (j->on_worker)
        rfsd_pool_done(c->srv->pool, &c->lane);
    rfsd_replyq_submit(&c->rq, &j->out);
}

/* Hands a decoded request to the pool, or parks it behind its handle's ordering rule. st: a
 * PWRITE whose data are still in the socket; the caller has seen the connection idle, so the
 * write runs right here (only this thread adds work, so it stays idle until then). */
static void dispatch(rfsd_conn *c, uint8_t *body, const rfs_req *req, uint32_t body_len,
                     rfsd_stream *st)
{
    rfsd_job *j = calloc(1, sizeof *j);
    if (!j) {
        free(body);
        rfsd_conn_send_error(c, req->op, req->id, rfs_fail(RFS_E_NOMEM, "server out of memory"));
        return;
    }
    j->work.run = job_run;
    j->conn = c;
    j->req = *req;
    j->body = body;
    j->stream = st;
    j->cost = rfsd_request_cost(req, body_len);
    j->barrier = rfs_op_has(req->op, RFS_OPF_BARRIER);
    j->ranged = rfsd_op_range(req, &j->lo, &j->hi, &j->writes);
    uint32_t fh;
    int has_fh = rfsd_op_handle(req, &fh);

    pthread_mutex_lock(&c->mu);
    if (atomic_load(&c->fenced)) {
        /* read before the fence shut the socket, but after it: never applied */
        pthread_mutex_unlock(&c->mu);
        free(j->body);
        free(j);
        return;
    }
    if (has_fh) {
        rfsd_handle *h = rfsd_handle_find(c, fh);
        if (!h) {
            pthread_mutex_unlock(&c->mu);
            rfsd_conn_send_error(c, req->op, req->id,
                                 rfs_fail(RFS_E_BADF, "%s: unknown or closed file handle %u",
                                          rfs_op_name(req->op), fh));
            free(j->body);
            free(j);
            return;
        }
        RFS_REF_GET(h->refs);
        j->h = h;
    }
    /* A quick request on an otherwise idle connection runs right here: nothing else of this
     * client's is in flight, so it cannot overtake anything or hold anything up, and skipping
     * the hand-off to a worker saves a thread wake-up (a sizeable part of a small request's
     * round trip on loopback or a LAN). A streamed write runs here always (see st). */
    int inline_run = c->inflight == 0 && (st || rfsd_op_is_quick(req));
    c->inflight++;
    c->inflight_bytes += j->cost;
    rfsd_handle *h = j->h;
    if (inline_run) {
        if (h)
            start_on_handle(h, j);
        pthread_mutex_unlock(&c->mu);
        job_run(&j->work);
        return;
    }
    if (h && (h->qhead || !may_start(h, j))) {
        if (h->qtail)
            h->qtail->qnext = j;
        else
            h->qhead = j;
        h->qtail = j;
    } else {
        if (h)
            start_on_handle(h, j);
        j->on_worker = 1;
        rfsd_pool_submit(c->srv->pool, &c->lane, &j->work);
    }
    pthread_mutex_unlock(&c->mu);
}

/* ---- the reader ---- */

/* The reader reads the next frame only within the budget: requests in flight (their replies
 * included: a request ends when its reply is out) and replies of its own not yet taken by the
 * client. A client that stops reading thus stops being read, and its replies waiting in
 * memory stay bounded by the budget (docs/security.md). */
static void wait_for_budget(rfsd_conn *c)
{
    pthread_mutex_lock(&c->mu);
    while ((c->inflight > 0 && (c->inflight >= RFSD_CONN_MAX_INFLIGHT ||
                                c->inflight_bytes >= RFSD_CONN_MAX_INFLIGHT_BYTES)) ||
           c->loose >= RFSD_CONN_MAX_INFLIGHT)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

/* Reads and drops n body bytes (a frame we answer with an error but whose framing is sound). */
static int drain(rfsd_conn *c, uint32_t n)
{
    uint8_t scratch[4096];
    while (n > 0) {
        uint32_t k = n < sizeof scratch ? n : (uint32_t)sizeof scratch;
        if (conn_recv(c, scratch, k) != 1)
            return -1;
        n -= k;
    }
    return 0;
}

typedef struct session {
    int state;
    uint8_t nonce[RFS_NONCE_LEN];
    uint32_t negotiated;
} session;

/* 1 (refusal sent) if the peer's address is in its failed-AUTH backoff: it is told so and
 * dropped before any HMAC work (authlimit.h). */
static int backed_off(rfsd_conn *c, const rfs_req *req)
{
    uint64_t wait = rfsd_authlimit_wait_ms(c->peer);
    if (!wait)
        return 0;
    rfsd_conn_send_error(c, req->op, req->id,
                         rfs_fail(RFS_E_AUTH,
                                  "too many failed authentications from this "
                                  "address: retry in %llu ms",
                                  (unsigned long long)wait));
    return 1;
}

/* An additional stream beyond its address's share is refused, so that first connections
 * (more ranks of a job, other users behind the same address) still find room under
 * --max-conns-per-addr. The client keeps the streams it has. */
static int refuse_extra_stream(rfsd_conn *c, const rfs_req *req)
{
    if (!c->addr)
        return 0;
    unsigned share =
        rfsd_stream_share(c->srv->cfg.max_stream_conns_per_addr, c->srv->cfg.max_conns_per_addr);
    unsigned n;
    if (rfsd_addr_take_stream(c->addr, share, &n)) {
        c->extra_stream = 1;
        return 0;
    }
    RFS_LOGI("%s: additional stream refused: %u from %s already (limit %u, rfsd "
             "--max-stream-conns-per-addr)",
             c->peer, n, rfsd_addr_name(c->addr), share);
    rfsd_conn_send_error(c, req->op, req->id,
                         rfs_fail(RFS_E_BUSY,
                                  "server busy: additional stream refused: %u "
                                  "additional streams from %s (limit %u per address, rfsd "
                                  "--max-stream-conns-per-addr)",
                                  n, rfsd_addr_name(c->addr), share));
    return 1;
}

/* Returns 0 to go on reading, -1 to close the connection. */
static int on_hello(rfsd_conn *c, session *s, const rfs_req *req)
{
    if (s->state != ST_PRE_HELLO) {
        rfsd_conn_send_error(c, req->op, req->id, rfs_fail(RFS_E_PROTO, "HELLO sent twice"));
        return 0;
    }
    if (!c->srv->cfg.no_auth && backed_off(c, req))
        return -1;
    if (req->extra_stream && refuse_extra_stream(c, req))
        return -1;
    rfs_rep rep = {.op = RFS_OP_HELLO, .id = req->id};
    int rc =
        rfs_hello_choose(req->u.hello.min_version, req->u.hello.max_version, req->u.hello.max_frame,
                         c->srv->cfg.max_frame, &rep.u.hello.version, &rep.u.hello.max_frame);
    if (!rc)
        rc = rfs_auth_random(s->nonce, RFS_NONCE_LEN);
    if (rc) {
        rfsd_conn_send_error(c, req->op, req->id, rc);
        return -1;
    }
    s->negotiated = rep.u.hello.max_frame;
    rep.u.hello.auth_required = c->srv->cfg.no_auth ? 0 : 1;
    rep.u.hello.features =
        (rfsd_views_built() ? RFS_FEAT_VIEWS : 0) | RFS_FEAT_SUM | RFS_FEAT_LZ4 | RFS_FEAT_ZSTD |
        RFS_FEAT_SHUFFLE | RFS_FEAT_VER | RFS_FEAT_TPC_SRC | RFS_FEAT_XSTREAM | RFS_FEAT_WPARENTS |
        RFS_FEAT_LTREE | RFS_FEAT_CAP | (c->srv->cfg.tpc ? RFS_FEAT_TPC_DST : 0) |
        (c->srv->cfg.zread_mode != RFS_Z_NONE ? RFS_FEAT_ZREAD : 0) |
        (rfsd_group_on() ? RFS_FEAT_PLACE : 0) | (rfsd_coll_on() ? RFS_FEAT_COLL : 0);
    memcpy(rep.u.hello.nonce, s->nonce, RFS_NONCE_LEN);
    if (c->srv->cfg.no_auth) {
        s->state = ST_READY;
        rfsd_ident_anonymous(&c->who);
        atomic_store(&c->ready, 1);
        c->max_frame = s->negotiated;
    } else {
        s->state = ST_PRE_AUTH;
    }
    rfsd_conn_send(c, &rep);
    return 0;
}

static int on_auth(rfsd_conn *c, session *s, const rfs_req *req)
{
    if (s->state != ST_PRE_AUTH) {
        const char *why = s->state == ST_PRE_HELLO ? "AUTH before HELLO"
                          : c->srv->cfg.no_auth    ? "this server does not require authentication"
                                                   : "already authenticated";
        rfsd_conn_send_error(c, req->op, req->id, rfs_fail(RFS_E_PROTO, "%s", why));
        return 0;
    }
    if (backed_off(c, req)) /* also when HELLO came before the address's failures */
        return -1;
    rfs_rep rep = {.op = RFS_OP_AUTH, .id = req->id};
    if (rfsd_ident_auth(s->nonce, req->u.auth.client_nonce, req->u.auth.mac, &c->who,
                        rep.u.auth.server_mac)) {
        unsigned n;
        uint64_t ms = rfsd_authlimit_failed(c->peer, &n);
        RFS_LOGW("%s: authentication failed (wrong token); failure %u from this address, "
                 "its next attempt in %llu ms",
                 c->peer, n, (unsigned long long)ms);
        rfsd_audit_auth(c->peer, NULL);
        rfsd_conn_send_error(c, req->op, req->id,
                             rfs_fail(RFS_E_AUTH, "authentication failed: the client's token does "
                                                  "not match the server's"));
        return -1;
    }
    s->state = ST_READY;
    atomic_store(&c->ready, 1);
    c->max_frame = s->negotiated;
    rfsd_audit_auth(c->peer, c->who.name);
    rfsd_authlimit_ok(c->peer);
    rfsd_conn_send(c, &rep);
    RFS_LOGD("%s: authenticated as %s", c->peer, c->who.name);
    return 0;
}

/* TPC_AUTH: AUTH with a third-party copy grant's key instead of a token (tpc_grant.h);
 * CAP_AUTH: with a signed capability (capability.h). */
static int on_tpc_auth(rfsd_conn *c, session *s, const rfs_req *req)
{
    if (s->state != ST_PRE_AUTH) {
        const char *why = s->state == ST_PRE_HELLO ? "TPC_AUTH or CAP_AUTH before HELLO"
                          : c->srv->cfg.no_auth    ? "this server does not require authentication"
                                                   : "already authenticated";
        rfsd_conn_send_error(c, req->op, req->id, rfs_fail(RFS_E_PROTO, "%s", why));
        return 0;
    }
    if (backed_off(c, req))
        return -1;
    rfs_rep rep = {.op = req->op, .id = req->id};
    int rc = req->op == RFS_OP_CAP_AUTH
                 ? rfsd_cap_auth(req, &c->who, &rep)
                 : rfsd_tpc_auth(s->nonce, req, &c->who, rep.u.auth.server_mac);
    if (rc) {
        unsigned n;
        char msg[RFS_MAX_MSG];
        snprintf(msg, sizeof msg, "%s", rfs_last_error());
        /* A refused capability guessed no secret (forging one means forging an Ed25519
         * signature) and cost one verification: only the grant's key is worth slowing. */
        if (req->op != RFS_OP_CAP_AUTH)
            rfsd_authlimit_failed(c->peer, &n);
        RFS_LOGW("%s: %s authentication failed: %s", c->peer,
                 req->op == RFS_OP_CAP_AUTH ? "capability" : "third-party copy", msg);
        rfsd_audit_auth(c->peer, NULL);
        rfsd_conn_send_error(c, req->op, req->id, rfs_fail(rc, "%s", msg));
        return -1;
    }
    s->state = ST_READY;
    atomic_store(&c->ready, 1);
    c->max_frame = s->negotiated;
    rfsd_audit_auth(c->peer, c->who.name);
    rfsd_conn_send(c, &rep);
    RFS_LOGD("%s: authenticated as %s", c->peer, c->who.name);
    return 0;
}

/* ---- streamed writes ---- */

/* A PWRITE at least this large, arriving when nothing else of the connection is in flight, is
 * written by the reader itself as its data come in, STREAM_PIECE at a time: each piece is
 * written while still in this thread's cache, and no worker has to be woken. The usual path
 * (the whole frame into a buffer, then a worker writes it) made rfsd the bottleneck of a
 * loopback put, at 1.5x the CPU time of a plain receive-and-write loop; streamed, a 1 GiB put
 * took 0.90 of the time (median of 12 paired runs). Each piece takes the file's write mutex
 * on its own, so a slow sender does not hold up other connections writing the same file. */
#define STREAM_MIN ((size_t)256 << 10)
#define STREAM_PIECE ((size_t)1 << 20)
#define NOT_STREAMED 1

typedef struct stream_src {
    rfsd_conn *c;
    size_t left; /* payload bytes not read yet */
} stream_src;

static int next_piece(void *ctx, void *buf, size_t n)
{
    stream_src *src = ctx;
    if (atomic_load(&src->c->fenced) || n > src->left || conn_recv(src->c, buf, n) != 1)
        return -1;
    src->left -= n;
    return 0;
}

/* head: the PWRITE's fixed fields, already read. Returns NOT_STREAMED when the write must go
 * the usual way (its body is then read by the caller), else 0 to continue or -1 to close. */
static int try_streamed_pwrite(rfsd_conn *c, const rfs_hdr *hdr, const uint8_t *head)
{
    rfs_req req;
    if (rfs_req_decode_pwrite_head(hdr, head, &req))
        return NOT_STREAMED; /* the usual decode reports it */
    if (!c->stream_buf && !(c->stream_buf = malloc(STREAM_PIECE)))
        return NOT_STREAMED;
    pthread_mutex_lock(&c->mu);
    /* unknown handle: the usual path replies BADF; work in flight: keep its order */
    int idle = c->inflight == 0 && rfsd_handle_find(c, req.u.pwrite.fh);
    pthread_mutex_unlock(&c->mu);
    if (!idle)
        return NOT_STREAMED;
    stream_src src = {.c = c, .left = req.data_len};
    rfsd_stream st = {.next = next_piece, .ctx = &src, .buf = c->stream_buf, .cap = STREAM_PIECE};
    dispatch(c, NULL, &req, hdr->body_len, &st); /* runs here: writes and replies */
    if (st.lost) {
        RFS_LOGI("%s: connection ended inside a PWRITE frame", c->peer);
        return -1;
    }
    return src.left && drain(c, (uint32_t)src.left) ? -1 : 0;
}

/* Reads one frame and acts on it. Returns 0 to continue, -1 to close. */
static int read_one(rfsd_conn *c, session *s)
{
    uint8_t hb[RFS_HDR_SIZE];
    int r = conn_recv(c, hb, sizeof hb);
    if (r == 0)
        return -1;
    if (r < 0) {
        if (errno != EPROTO) /* a TLS failure was logged with its cause */
            RFS_LOGI("%s: connection ended inside a frame header", c->peer);
        return -1;
    }
    rfs_hdr h;
    int rc = rfs_hdr_decode(hb, c->max_frame, &h);
    uint32_t raw_magic, raw_id;
    uint16_t raw_op;
    rfs_hdr_peek(hb, &raw_magic, &raw_op, &raw_id);
    if (hb[0] == RFSD_TLS_RECORD && !c->srv->tls) {
        rfsd_tls_refuse(c, raw_op, raw_id);
        return -1;
    }
    if (raw_magic != RFS_MAGIC || rc == RFS_E_VERSION) {
        /* not our framing (or not a version we can frame): answer once, then hang up */
        RFS_LOGI("%s: %s; closing", c->peer, rfs_last_error());
        rfsd_conn_send_error(c, raw_op, raw_id, rc);
        return -1;
    }
    if (rc == RFS_E_TOOBIG || (uint64_t)RFS_HDR_SIZE + h.body_len > c->max_frame) {
        if (rc != RFS_E_TOOBIG)
            rc = rfs_fail(RFS_E_TOOBIG, "frame of %llu bytes over the %u-byte limit%s",
                          (unsigned long long)RFS_HDR_SIZE + h.body_len, c->max_frame,
                          s->state == ST_READY ? "" : " before authentication");
        RFS_LOGI("%s: %s; closing", c->peer, rfs_last_error());
        rfsd_conn_send_error(c, raw_op, h.req_id, rc);
        return -1;
    }
    if (rc) { /* sound framing, bad op or flags: skip the body and say why */
        char msg[RFS_MAX_MSG];
        snprintf(msg, sizeof msg, "%s", rfs_last_error());
        if (drain(c, h.body_len))
            return -1;
        rfsd_conn_send_error(c, raw_op, h.req_id, rfs_fail(rc, "%s", msg));
        return 0;
    }
    if (h.flags & RFS_F_SUM)
        atomic_store(&c->sums, 1);
    uint8_t head[RFS_PWRITE_FIXED];
    uint32_t have = 0; /* body bytes read already */
    /* a checksummed write is verified whole before any of it is written: not streamed */
    if (s->state == ST_READY && h.op == RFS_OP_PWRITE && !(h.flags & (RFS_F_SUM | RFS_F_PACK)) &&
        h.body_len >= RFS_PWRITE_FIXED + STREAM_MIN) {
        if (conn_recv(c, head, sizeof head) != 1) {
            RFS_LOGI("%s: connection ended inside a PWRITE frame", c->peer);
            return -1;
        }
        int sr = try_streamed_pwrite(c, &h, head);
        if (sr != NOT_STREAMED)
            return sr;
        have = sizeof head;
    }
    uint8_t *body = malloc(h.body_len ? h.body_len : 1);
    if (!body) {
        if (drain(c, h.body_len - have))
            return -1;
        rfsd_conn_send_error(c, h.op, h.req_id, rfs_fail(RFS_E_NOMEM, "server out of memory"));
        return 0;
    }
    memcpy(body, head, have);
    if (h.body_len > have && conn_recv(c, body + have, h.body_len - have) != 1) {
        RFS_LOGI("%s: connection ended inside a %s frame", c->peer, rfs_op_name(h.op));
        free(body);
        return -1;
    }
    rfs_req req;
    const uint8_t *fields = body;
    size_t flen = h.body_len;
    uint32_t frame_body = h.body_len;
    rc = rfs_frame_check_sum(&h, &fields, &flen);
    if (!rc && (h.flags & RFS_F_PACK) && !(rc = rfsd_wire_unpack(c, &h, &body, &fields, &flen)) &&
        flen > frame_body)
        frame_body = (uint32_t)flen; /* the budget counts what it holds */
    if (!rc)
        rc = rfs_req_decode(&h, fields, flen, &req);
    if (rc) {
        rfsd_conn_send_error(c, h.op, h.req_id, rc);
        free(body);
        return 0;
    }
    if (req.op == RFS_OP_PLACE && s->state == ST_READY) {
        rfsd_group_on_place(c, &req);
        free(body);
        return 0;
    }
    if (req.op == RFS_OP_SESSION && s->state == ST_READY) {
        rc = rfsd_session_request(c, &req);
        free(body);
        return rc;
    }
    if (req.op == RFS_OP_HELLO || req.op == RFS_OP_AUTH || req.op == RFS_OP_TPC_AUTH ||
        req.op == RFS_OP_CAP_AUTH) {
        rc = req.op == RFS_OP_HELLO  ? on_hello(c, s, &req)
             : req.op == RFS_OP_AUTH ? on_auth(c, s, &req)
                                     : on_tpc_auth(c, s, &req);
        free(body);
        return rc;
    }
    if (s->state != ST_READY) {
        if (rfs_op_has(req.op, RFS_OPF_PRE_AUTH)) { /* PING: the others were answered above */
            rfs_rep rep = {
                .op = RFS_OP_PING, .id = req.id, .data = req.data, .data_len = req.data_len};
            rfsd_conn_send(c, &rep);
        } else {
            rfsd_conn_send_error(
                c, req.op, req.id,
                rfs_fail(RFS_E_AUTH, "%s before authentication: send HELLO%s first",
                         rfs_op_name(req.op), c->srv->cfg.no_auth ? "" : " and AUTH"));
        }
        free(body);
        return 0;
    }
    dispatch(c, body, &req, frame_body, NULL);
    return 0;
}

static void conn_teardown(rfsd_conn *c)
{
    atomic_store(&c->closing, 1);
    rfsd_tpc_conn_end(c);   /* pulls this client started end with it: their temporaries go */
    rfsd_fileid_wake_all(); /* a LOCK of ours waiting for someone else gives up now */
    pthread_mutex_lock(&c->mu);
    while (c->inflight > 0 || c->loose > 0)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    rfsd_replyq_stop(&c->rq); /* every reply is out or dropped: the writer has nothing left */
    /* No job is left: close what the client left open. Each slot is emptied under the mutex
     * before its handle is freed, because an OPEN elsewhere may be looking through this
     * table for silent writers of its file (session.c). */
    unsigned left = 0;
    for (unsigned i = 0; i < RFSD_MAX_HANDLES; i++) {
        pthread_mutex_lock(&c->mu);
        rfsd_handle *h = c->slots[i];
        c->slots[i] = NULL;
        pthread_mutex_unlock(&c->mu);
        if (!h)
            continue;
        left++;
        if (c->addr)
            rfsd_addr_close(c->addr);
        RFS_REF_PUT(h->refs); /* the slot's: no job is left to hold another */
        rfsd_handle_release(h);
        handle_free(h);
    }
    if (left)
        RFS_LOGD("%s: closed %u file(s) left open", c->peer, left);

    rfsd_server *srv = c->srv;
    pthread_mutex_lock(&srv->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    RFS_LOGD("%s: disconnected", c->peer);
    rfs_transport_close(c->tr);
    c->tr = NULL;
    c->fd = -1;
    if (c->addr && c->extra_stream)
        rfsd_addr_drop_stream(c->addr);
    if (c->addr)
        rfsd_addr_disconnect(c->addr);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    /* The acceptor joins this thread and frees c (rfsd_conn_reap): joining guarantees the
     * thread's own exit work (library thread-local state) is done before the process exits. */
    c->next = srv->dead;
    srv->dead = c;
    srv->nconns--;
    pthread_cond_broadcast(&srv->conns_cv);
    pthread_mutex_unlock(&srv->mu);
}

void rfsd_conn_reap(rfsd_server *srv)
{
    pthread_mutex_lock(&srv->mu);
    rfsd_conn *dead = srv->dead;
    srv->dead = NULL;
    pthread_mutex_unlock(&srv->mu);
    while (dead) {
        rfsd_conn *next = dead->next;
        pthread_join(dead->reader, NULL);
        free(dead->stream_buf);
        free(dead);
        dead = next;
    }
}

static void *reader_main(void *arg)
{
    rfsd_conn *c = arg;
    session s = {.state = ST_PRE_HELLO};
    if (c->srv->tls && rfsd_tls_gate(c)) {
        conn_teardown(c);
        return NULL;
    }
    for (;;) {
        wait_for_budget(c);
        if (read_one(c, &s))
            break;
    }
    conn_teardown(c);
    return NULL;
}

/* Undoes a connection that never got its threads. */
static int start_failed(rfsd_conn *c)
{
    rfs_transport_close(c->tr); /* NULL when the transport could not be made (fd closed) */
    if (c->addr)
        rfsd_addr_disconnect(c->addr);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
    return RFS_E_NOMEM;
}

/* One connection's threads: over the TCP socket fd (TLS when rfsd has a certificate), or over
 * a ready transport (UCX: fd is -1). */
static int conn_start(rfsd_server *srv, int fd, rfs_transport *ready, const char *peer,
                      rfsd_addr *addr)
{
    rfsd_conn *c = calloc(1, sizeof *c);
    if (!c) {
        if (ready)
            rfs_transport_close(ready);
        else
            close(fd);
        if (addr)
            rfsd_addr_disconnect(addr);
        return RFS_E_NOMEM;
    }
    c->srv = srv;
    c->fd = fd;
    c->addr = addr;
    c->started_ns = rfs_now_ns();
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    c->max_frame = RFS_PRE_HELLO_MAX;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    rfsd_session_heard(c);
    if (ready) {
        c->tr = ready; /* nonblocking by nature; UCX finds a vanished peer itself */
        goto threads;
    }
    /* Nonblocking: replies are sent as far as the socket takes them and the rest is queued, so
     * no thread but the connection's own writer ever waits for this client (reply.h). */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    /* Keepalive finds a peer that vanished while the reader is not waiting in recv (its
     * requests still running): dead connections release their handles and locks. */
    int one = 1, idle = 30, intvl = 10, cnt = 3;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    /* TCP, or TLS over it when rfsd has a certificate (the handshake runs in the first reads,
     * after rfsd_tls_gate has seen a ClientHello). */
    rfs_transport *tcp;
    int trc = rfs_tcp_from_fd(fd, NULL, &tcp);
    if (!trc && srv->tls)
        trc = rfs_tls_server_wrap(srv->tls, tcp, &c->tr);
    else if (!trc)
        c->tr = tcp;
    if (trc) {
        RFS_LOGE("%s: %s", peer, rfs_last_error());
        c->tr = NULL;
        return start_failed(c);
    }
threads:
    if (rfsd_replyq_start(&c->rq, c->tr, c->peer, srv->cfg.send_timeout_ms)) {
        RFS_LOGE("%s: cannot start a writer thread", peer);
        return start_failed(c);
    }

    pthread_mutex_lock(&srv->mu);
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    srv->nconns++;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    int e = pthread_create(&c->reader, &attr, reader_main, c);
    pthread_attr_destroy(&attr);
    if (e) {
        srv->conns = c->next;
        if (c->next)
            c->next->prev = NULL;
        srv->nconns--;
        pthread_mutex_unlock(&srv->mu);
        RFS_LOGE("%s: cannot start a reader thread: %s", peer, strerror(e));
        rfsd_replyq_stop(&c->rq);
        return start_failed(c);
    }
    pthread_mutex_unlock(&srv->mu);
    rfsd_metrics_connection();
    return RFS_OK;
}

int rfsd_conn_start(rfsd_server *srv, int fd, const char *peer, rfsd_addr *addr)
{
    return conn_start(srv, fd, NULL, peer, addr);
}

int rfsd_conn_start_transport(rfsd_server *srv, rfs_transport *t, const char *peer, rfsd_addr *addr)
{
    return conn_start(srv, -1, t, peer, addr);
}

void rfsd_conn_stop_reading(rfsd_conn *c)
{
    if (c->fd >= 0)
        shutdown(c->fd, SHUT_RD);
    else if (c->tr)
        rfs_ucx_stop_reading(c->tr);
}

void rfsd_conn_fence(rfsd_conn *c)
{
    atomic_store(&c->fenced, 1);
    atomic_store(&c->closing, 1);
    cut(c);
    rfsd_fileid_wake_all(); /* a LOCK of its waiting for someone else gives up now */
}
