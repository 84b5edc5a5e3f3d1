/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* One connection to a server: a transport, a table of pending requests keyed by request id,
 * a receiver thread that reads reply frames and completes the matching request, and a
 * watchdog that closes the connection when any request outlives its deadline.
 *
 * Any number of threads may have requests in flight; replies may come in any order. Sends
 * are serialised frame by frame (send_lock); receives happen only in the receiver thread,
 * which reads a read's payload straight into the caller's buffer.
 *
 * Failure model: any transport error, malformed reply or timeout kills the connection: every
 * pending request fails at once with the cause, and later requests fail without being sent.
 * Nothing is retried here (a lost PWRITE may or may not have reached the disk, so replaying
 * it silently could reorder data); callers see the error and decide. */
#include "client/client.h"
#include "transport/tls.h"
#include "transport/ucx.h"

#include "common/envflag.h"
#include "common/crc32c.h"
#include "common/debug.h"
#include "common/clock.h"
#include "common/compress.h"
#include "common/err.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBUCKETS (sizeof((rfs_conn *)0)->pending / sizeof((rfs_conn *)0)->pending[0])
#define WATCHDOG_PERIOD_MS 250

_Atomic uint64_t rfs_wire_tx, rfs_wire_rx;
_Atomic uint64_t rfs_zread_replies, rfs_zread_raw, rfs_zread_wire;

/* ---- request trace ---- */

/* RFS_TRACE=1 prints one line per request sent and reply received on stderr, with a
 * monotonic timestamp: where the round trips of an MPI-IO call go. */
static int trace_on(void)
{
    static atomic_int on = RFS_ENV_FLAG_INIT;
    return rfs_env_flag(&on, "RFS_TRACE");
}

int rfs_stats_enabled(void)
{
    static atomic_int on = RFS_ENV_FLAG_INIT;
    return rfs_env_flag(&on, "RFS_STATS");
}

static void trace(const rfs_conn *c, const char *what, uint16_t op, uint32_t id, uint64_t bytes)
{
    fprintf(stderr, "rfs trace %.6f %s %s %s #%u %llu\n", (double)rfs_now_ns() / 1e9, c->server,
            what, rfs_op_name(op), id, (unsigned long long)bytes);
}

/* ---- calls ---- */

void rfs_call_init(rfs_call *call)
{
    memset(call, 0, sizeof *call);
    rfs_cond_init_monotonic(&call->cv);
}

void rfs_call_reset(rfs_call *call)
{
    free(call->body);
    call->body = NULL;
    call->next = NULL;
    call->id = 0;
    call->op = 0;
    call->deadline_ns = 0;
    call->timeout_ms = 0;
    call->dst = NULL;
    call->dst_cap = 0;
    call->sink = NULL;
    call->sink_ctx = NULL;
    call->sink_off = 0;
    call->sink_err = 0;
    call->done = 0;
    call->rc = 0;
    call->status = 0;
    memset(&call->rep, 0, sizeof call->rep);
    call->data_len = 0;
    call->moved = 0;
    call->sum = 0;
    call->on_done = NULL;
    call->on_done_arg = NULL;
}

void rfs_call_destroy(rfs_call *call)
{
    rfs_call_reset(call);
    pthread_cond_destroy(&call->cv);
}

/* ---- pending table (caller holds c->lock) ---- */

static void pending_add(rfs_conn *c, rfs_call *call)
{
    RFS_ASSERT_HELD(&c->lock);
    size_t b = call->id % NBUCKETS;
    call->next = c->pending[b];
    c->pending[b] = call;
    c->npending++;
}

static rfs_call *pending_take(rfs_conn *c, uint32_t id)
{
    RFS_ASSERT_HELD(&c->lock);
    rfs_call **pp = &c->pending[id % NBUCKETS];
    for (; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            rfs_call *call = *pp;
            *pp = call->next;
            call->next = NULL;
            c->npending--;
            return call;
        }
    }
    return NULL;
}

/* Marks the call finished and wakes its waiter (caller holds c->lock, so the waiter cannot
 * free the call before we let go of it). */
static void complete_locked(rfs_call *call)
{
    __atomic_store_n(&call->done, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&call->cv);
    if (call->on_done) /* a call nobody sleeps on (async.c): tell its owner */
        call->on_done(call, call->on_done_arg);
}

/* ---- death ---- */

void rfs_conn_kill(rfs_conn *c, int err, const char *fmt, ...)
{
    char msg[sizeof c->dead_msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    int first = 0;
    pthread_mutex_lock(&c->lock);
    if (!c->dead) {
        first = 1;
        c->dead = 1;
        c->dead_err = err;
        snprintf(c->dead_msg, sizeof c->dead_msg, "%s", msg);
        for (size_t b = 0; b < NBUCKETS; b++) {
            rfs_call *call = c->pending[b];
            c->pending[b] = NULL;
            while (call) {
                rfs_call *next = call->next;
                call->next = NULL;
                call->rc = err;
                complete_locked(call);
                call = next;
            }
        }
        c->npending = 0;
        pthread_cond_broadcast(&c->auth_cv);
    }
    pthread_mutex_unlock(&c->lock);
    /* Unblocks the receiver (and a writer stuck on a full socket) without freeing anything. */
    if (first && c->t)
        c->t->ops->shutdown(c->t);
}

int rfs_conn_is_dead(rfs_conn *c)
{
    pthread_mutex_lock(&c->lock);
    int d = c->dead;
    pthread_mutex_unlock(&c->lock);
    return d;
}

int rfs_conn_lost(rfs_conn *c)
{
    pthread_mutex_lock(&c->lock);
    int lost = c->dead && (c->dead_err == RFS_E_CONN || c->dead_err == RFS_E_TIMEOUT);
    pthread_mutex_unlock(&c->lock);
    return lost;
}

unsigned rfs_conn_features(rfs_conn *c)
{
    pthread_mutex_lock(&c->lock);
    unsigned f = c->features;
    pthread_mutex_unlock(&c->lock);
    return f;
}

uint32_t rfs_conn_max_frame(rfs_conn *c)
{
    pthread_mutex_lock(&c->lock);
    uint32_t m = c->max_frame;
    pthread_mutex_unlock(&c->lock);
    return m;
}

/* ---- receiver ---- */

/* Sink deliveries go out in pieces of at most this much: what the thread received is written
 * while still in its cache, with few system calls. On a 1 GiB loopback get into /dev/shm,
 * 64 KiB pieces took 0.88-1.03 s, 256 KiB 0.75-1.02 s, 1 MiB 0.59-0.73 s, 4 MiB 0.69-0.78 s. */
#define SINK_PIECE ((size_t)1 << 20)

/* A reply whose checksum did not match: the call fails with RFS_E_IO and the message of the
 * mismatch. The frame was read whole, so the stream is still in step and the connection stays. */
static void corrupt_reply(rfs_call *call)
{
    const char *m = rfs_last_error();
    size_t n = strlen(m);
    if (n > RFS_MAX_MSG)
        n = RFS_MAX_MSG;
    free(call->body);
    call->body = malloc(n + 1);
    memset(&call->rep, 0, sizeof call->rep);
    call->rep.op = call->op;
    call->rep.id = call->id;
    if (call->body) {
        memcpy(call->body, m, n);
        call->rep.u.err.s = (const char *)call->body;
        call->rep.u.err.len = (uint16_t)n;
    }
    call->data_len = 0;
    call->status = RFS_E_IO;
    call->rc = RFS_OK;
}

/* A PREAD payload handed to the call's sink piece by piece as it is received. sum: the
 * checksum so far (header and field read), or NULL. A mismatch is found only after the sink
 * had the bytes: the call then fails, so the caller never takes them for good data. */
static int receive_to_sink(rfs_conn *c, const rfs_hdr *h, rfs_call *call, uint32_t *sum)
{
    if (h->body_len > call->dst_cap)
        return rfs_fail(RFS_E_PROTO, "server sent %u bytes in reply to a %s of %zu bytes",
                        h->body_len, rfs_op_name(h->op), call->dst_cap);
    rfs_hdr empty = *h;
    empty.body_len = 0;
    if (rfs_rep_decode(&empty, NULL, 0, &call->rep))
        return RFS_E_PROTO;
    if (!c->sink_buf && !(c->sink_buf = malloc(SINK_PIECE)))
        return rfs_fail(RFS_E_PROTO, "out of memory for a %zu-byte receive buffer", SINK_PIECE);
    size_t got = 0;
    while (got < h->body_len) {
        /* Whatever has arrived goes on at once: waiting for a full piece would put this
         * thread to sleep while the sender is still filling the socket. */
        size_t want = h->body_len - got < SINK_PIECE ? h->body_len - got : SINK_PIECE;
        long n = rfs_transport_read_some(c->t, c->sink_buf, want);
        if (n < 0)
            return (int)n;
        if (sum)
            *sum = rfs_crc32c(*sum, c->sink_buf, (size_t)n);
        if (!call->sink_err)
            call->sink_err =
                call->sink(call->sink_ctx, call->sink_off + got, c->sink_buf, (size_t)n);
        got += (size_t)n;
    }
    call->rep.data_len = h->body_len;
    call->data_len = h->body_len;
    call->status = RFS_OK;
    call->rc = RFS_OK;
    return RFS_OK;
}

static uint32_t le32_get(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A read reply whose payload came compressed (RFS_F_PACK, asked for with RFS_F_ZOK): read
 * whole, checked, and decompressed to where the call wants its bytes. The declared size is
 * held against what the call asked for before anything is decompressed, so a server cannot
 * make the client write past its buffer or allocate more than the read. A corrupt stream
 * fails the call (RFS_E_IO, like a checksum mismatch); the frame was read whole, so the
 * connection stays in step. */
static int receive_packed(rfs_conn *c, const rfs_hdr *h0, rfs_call *call)
{
    if (!call->zok)
        return rfs_fail(RFS_E_PROTO, "compressed %s reply to a request that did not accept one",
                        rfs_op_name(h0->op));
    if (call->sum && !(h0->flags & RFS_F_SUM))
        return rfs_fail(RFS_E_PROTO, "%s reply without the checksum its request asked for",
                        rfs_op_name(h0->op));
    uint8_t *body = malloc(h0->body_len ? h0->body_len : 1);
    if (!body)
        return rfs_fail(RFS_E_PROTO, "out of memory for a %u-byte reply", h0->body_len);
    int rc;
    if (h0->body_len && (rc = rfs_transport_read_all(c->t, body, h0->body_len))) {
        free(body);
        return rc;
    }
    rfs_hdr hd = *h0;
    const uint8_t *fields = body;
    size_t flen = h0->body_len;
    rfs_pack_info pi;
    uint8_t *raw = NULL;
    rc = rfs_frame_check_sum(&hd, &fields, &flen);
    if (rc == RFS_OK && (rc = rfs_frame_pack_info(&hd, fields, flen, rfs_conn_max_frame(c), &pi)))
        rc = rc == RFS_E_IO ? RFS_E_PROTO : rc;
    if (rc == RFS_OK && (pi.fields_len != 0 || pi.raw_len > call->dst_cap))
        rc = rfs_fail(RFS_E_PROTO,
                      "compressed %s reply of %u bytes (%u field bytes) to a read "
                      "of %zu",
                      rfs_op_name(h0->op), pi.raw_len, pi.fields_len, call->dst_cap);
    if (rc == RFS_E_IO) { /* checksum mismatch */
        free(body);
        corrupt_reply(call);
        return RFS_OK;
    }
    if (rc) {
        free(body);
        return RFS_E_PROTO;
    }
    void *to = call->dst;
    if (!to && pi.raw_len && !(to = raw = malloc(pi.raw_len))) {
        free(body);
        return rfs_fail(RFS_E_PROTO, "out of memory for a %u-byte reply", pi.raw_len);
    }
    rc = rfs_codec_decompress(pi.codec, to, pi.raw_len, pi.packed, pi.packed_len);
    free(body);
    if (rc) {
        char why[RFS_ERRMSG_MAX];
        snprintf(why, sizeof why, "%s", rfs_last_error()); /* not formatted into itself */
        free(raw);
        rfs_fail(RFS_E_IO, "compressed %s reply from %s: %s", rfs_op_name(h0->op), c->server, why);
        corrupt_reply(call);
        return RFS_OK;
    }
    atomic_fetch_add(&rfs_zread_replies, 1);
    atomic_fetch_add(&rfs_zread_raw, pi.raw_len);
    atomic_fetch_add(&rfs_zread_wire, pi.packed_len);
    memset(&call->rep, 0, sizeof call->rep);
    call->rep.op = h0->op;
    call->rep.id = h0->req_id;
    if (call->sink) {
        call->sink_err =
            raw && pi.raw_len ? call->sink(call->sink_ctx, call->sink_off, raw, pi.raw_len) : 0;
        free(raw);
        raw = NULL;
    } else if (raw) {
        call->body = raw; /* a read with no destination keeps its bytes in the body */
    }
    call->rep.data = call->dst ? call->dst : raw;
    call->rep.data_len = pi.raw_len;
    call->data_len = pi.raw_len;
    call->status = RFS_OK;
    call->rc = RFS_OK;
    return RFS_OK;
}

/* Reads the body of a reply for call. Returns 0, RFS_E_CONN (transport) or RFS_E_PROTO, with
 * the message set. A checksum mismatch is the call's outcome (RFS_E_IO), not the connection's. */
static int receive_body(rfs_conn *c, const rfs_hdr *h0, rfs_call *call)
{
    int rc;
    if (h0->status == 0 && (h0->flags & RFS_F_PACK))
        return receive_packed(c, h0, call);
    rfs_hdr hd = *h0;
    const rfs_hdr *h = &hd;
    int sum = (h0->flags & RFS_F_SUM) != 0;
    if (call->sum && !sum)
        return rfs_fail(RFS_E_PROTO, "%s reply without the checksum its request asked for",
                        rfs_op_name(h0->op));
    int direct = h->status == 0 && (call->sink || call->dst);
    uint32_t carried = 0, crc = 0;
    if (sum && direct) {
        uint8_t field[RFS_SUM_LEN];
        if ((rc = rfs_transport_read_all(c->t, field, sizeof field)))
            return rc;
        carried = le32_get(field);
        crc = rfs_frame_sum_start(h0);
        rfs_frame_strip_sum(&hd);
    }
    if (h->status == 0 && call->sink) {
        if ((rc = receive_to_sink(c, h, call, sum ? &crc : NULL)))
            return rc;
        if (sum && rfs_frame_sum_compare(h0, carried, crc))
            corrupt_reply(call);
        return RFS_OK;
    }
    if (h->status == 0 && call->dst) {
        /* PREAD / PREADV / VIEW_READ: the body is the payload; put it where the caller wants it. */
        if (h->body_len > call->dst_cap)
            return rfs_fail(RFS_E_PROTO, "server sent %u bytes in reply to a %s of %zu bytes",
                            h->body_len, rfs_op_name(h->op), call->dst_cap);
        if (h->body_len && (rc = rfs_transport_read_all(c->t, call->dst, h->body_len)))
            return rc;
        if ((rc = rfs_rep_decode(h, call->dst, h->body_len, &call->rep)))
            return RFS_E_PROTO;
        call->data_len = h->body_len;
        if (sum && rfs_frame_sum_compare(h0, carried, rfs_crc32c(crc, call->dst, h->body_len))) {
            corrupt_reply(call);
            return RFS_OK;
        }
    } else {
        uint8_t *body = malloc(h->body_len ? h->body_len : 1);
        if (!body)
            return rfs_fail(RFS_E_PROTO, "out of memory for a %u-byte reply", h->body_len);
        if (h->body_len && (rc = rfs_transport_read_all(c->t, body, h->body_len))) {
            free(body);
            return rc;
        }
        const uint8_t *fields = body;
        size_t flen = h->body_len;
        rc = rfs_frame_check_sum(&hd, &fields, &flen);
        if (rc == RFS_E_IO) {
            call->body = body;
            corrupt_reply(call);
            return RFS_OK;
        }
        if (rc || rfs_rep_decode(h, fields, flen, &call->rep)) {
            free(body);
            return RFS_E_PROTO;
        }
        call->body = body;
        call->data_len = call->rep.data_len;
    }
    call->status = rfs_err_from_wire(h->status);
    call->rc = RFS_OK;
    return RFS_OK;
}

static void lost(rfs_conn *c, int rc)
{
    if (rc == RFS_E_PROTO)
        rfs_conn_kill(c, RFS_E_PROTO, "malformed reply from server: %s", rfs_last_error());
    else
        rfs_conn_kill(c, RFS_E_CONN, "%s", rfs_last_error());
}

static void *receiver_main(void *arg)
{
    rfs_conn *c = arg;
    for (;;) {
        uint8_t hb[RFS_HDR_SIZE];
        int rc = rfs_transport_read_all(c->t, hb, sizeof hb);
        if (rc) {
            lost(c, RFS_E_CONN);
            break;
        }
        rfs_hdr h;
        int drc = rfs_hdr_decode(hb, rfs_conn_max_frame(c), &h);
        if (!drc)
            atomic_fetch_add(&rfs_wire_rx, RFS_HDR_SIZE + (uint64_t)h.body_len);
        if (!drc && !(h.flags & RFS_F_REPLY))
            drc = rfs_fail(RFS_E_PROTO, "server sent a request frame (%s)", rfs_op_name(h.op));
        if (drc) {
            lost(c, RFS_E_PROTO);
            break;
        }
        pthread_mutex_lock(&c->lock);
        int auth_pending = c->auth_pending;
        rfs_call *call = pending_take(c, h.req_id);
        pthread_mutex_unlock(&c->lock);
        if (!call) {
            rfs_conn_kill(c, RFS_E_PROTO, "reply to unknown request id %u (%s)", h.req_id,
                          rfs_op_name(h.op));
            break;
        }
        if (auth_pending && call != &c->auth_call) {
            /* A genuine server answers AUTH before reading what follows it. */
            rfs_conn_kill(c, RFS_E_AUTH,
                          "server %s answered %s before proving it knows the "
                          "token; connection closed",
                          c->server, rfs_op_name(h.op));
            pthread_mutex_lock(&c->lock);
            call->rc = c->dead_err;
            complete_locked(call);
            pthread_mutex_unlock(&c->lock);
            break;
        }
        if (trace_on())
            trace(c, "reply", h.op, h.req_id, h.body_len);
        if (call->op != h.op) {
            rc = rfs_fail(RFS_E_PROTO, "%s reply to a %s request", rfs_op_name(h.op),
                          rfs_op_name(call->op));
        } else {
            rc = receive_body(c, &h, call);
        }
        if (rc) {
            /* The call left the table, so the kill below does not see it: fail it here. */
            lost(c, rc);
            pthread_mutex_lock(&c->lock);
            call->rc = c->dead_err;
            complete_locked(call);
            pthread_mutex_unlock(&c->lock);
            break;
        }
        if (call == &c->auth_call) {
            if (rfs_auth_settle(c))
                break;
            continue; /* nobody waits for it */
        }
        if (call == &c->session_call) {
            rfs_session_settle(c);
            continue;
        }
        if (call == &c->ping_call) {
            pthread_mutex_lock(&c->lock);
            c->ping_busy = 0;
            pthread_mutex_unlock(&c->lock);
            continue;
        }
        rfs_conn_ver_reply(c, call); /* before the caller wakes: its write's version */
        pthread_mutex_lock(&c->lock);
        complete_locked(call);
        pthread_mutex_unlock(&c->lock);
    }
    return NULL;
}

static int conn_start(rfs_conn *c, rfs_call *call, rfs_req *req, const uint64_t *ext_src,
                      int timeout_ms, int may_block, const rfs_packed *pk, size_t *keep,
                      void **keep_buf);

/* Bounds every request, including one whose sender is stuck writing to a server that stopped
 * reading: the waiter cannot notice that, so this thread does. */
static void *watchdog_main(void *arg)
{
    rfs_conn *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->stopping) {
        struct timespec ts = rfs_deadline_ms(WATCHDOG_PERIOD_MS);
        pthread_cond_timedwait(&c->wd_cv, &c->lock, &ts);
        if (c->stopping || c->dead)
            continue;
        int64_t now = rfs_now_ns();
        rfs_call *late = NULL;
        for (size_t b = 0; b < NBUCKETS && !late; b++)
            for (rfs_call *call = c->pending[b]; call && !late; call = call->next)
                if (call->deadline_ns && now > call->deadline_ns)
                    late = call;
        if (late) {
            uint16_t op = late->op;
            int ms = late->timeout_ms;
            pthread_mutex_unlock(&c->lock);
            rfs_conn_kill(c, RFS_E_TIMEOUT, "no reply to %s within %d ms; connection closed",
                          rfs_op_name(op), ms);
            pthread_mutex_lock(&c->lock);
        } else if (c->lease_ms && !c->ping_busy && !c->auth_pending && c->npending == 0 &&
                   now - c->last_send_ns > (int64_t)c->lease_ms * 1000000 / 4) {
            /* Idle for a quarter of the server's lease: a ping keeps the session (and tells
             * us, within io_timeout, if the link is gone). Not idle while a request is
             * outstanding: its reply or its deadline settles the connection. And this thread
             * must never wait behind a send (conn_start's may_block = 0): a send stuck on a
             * silent link would hold it, and then nobody enforces the deadlines. */
            c->ping_busy = 1;
            int timeout = c->ping_timeout_ms;
            pthread_mutex_unlock(&c->lock);
            rfs_req req;
            memset(&req, 0, sizeof req);
            req.op = RFS_OP_PING;
            rfs_call_reset(&c->ping_call);
            if (conn_start(c, &c->ping_call, &req, NULL, timeout, 0, NULL, NULL, NULL) != RFS_OK) {
                pthread_mutex_lock(&c->lock);
                c->ping_busy = 0;
                pthread_mutex_unlock(&c->lock);
            }
            pthread_mutex_lock(&c->lock);
        }
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* ---- requests ---- */

static int fail_dead(rfs_conn *c)
{
    pthread_mutex_lock(&c->lock);
    int err = c->dead_err;
    char msg[sizeof c->dead_msg];
    snprintf(msg, sizeof msg, "%s", c->dead_msg);
    pthread_mutex_unlock(&c->lock);
    if (err == RFS_E_AUTH)
        return rfs_fail(err, "%s", msg);
    return rfs_fail(err,
                    "%s (server file handles do not survive a lost connection: reopen "
                    "the file)",
                    msg);
}

/* may_block 0: give up (RFS_E_BUSY, nothing sent, the call not pending) instead of waiting
 * for another thread's send to finish. */
/* The link's rate for compress_pipe.h. A send that had to wait for the socket ends with the
 * send buffer full; between two such ends the link drained exactly what was written in
 * between, so bytes written since the last full-buffer instant over the time since it is the
 * drain rate (a send that finds room proves nothing by itself: it only filled free buffer).
 * A mark older than RATE_MAX_GAP_NS may hide an idle link and is not used. Caller holds
 * send_lock. */
#define RATE_MIN_WAIT_NS 1000000
#define RATE_MIN_BYTES ((size_t)256 << 10)
#define RATE_MAX_GAP_NS 1000000000

static void note_send(rfs_conn *c, size_t bytes, int64_t start_ns, int64_t end_ns)
{
    RFS_ASSERT_HELD(&c->send_lock);
    c->rate_bytes += bytes;
    if (end_ns - start_ns < RATE_MIN_WAIT_NS)
        return;
    if (c->rate_mark_ns && end_ns - c->rate_mark_ns < RATE_MAX_GAP_NS &&
        c->rate_bytes >= RATE_MIN_BYTES) {
        double rate = (double)c->rate_bytes / ((double)(end_ns - c->rate_mark_ns) / 1e9);
        uint64_t old = atomic_load(&c->link_bps);
        atomic_store(&c->link_bps,
                     old ? (uint64_t)(0.7 * (double)old + 0.3 * rate) : (uint64_t)rate);
    }
    c->rate_mark_ns = end_ns;
    c->rate_bytes = 0;
}

/* keep: NULL, or where a transport with split writes (UCX) leaves the count of bytes still to
 * be taken from the frame's memory, for rfs_conn_post_end; the write is then not waited for,
 * and the encoded header (which may go direct too) is handed over in *keep_buf. */
static int conn_start(rfs_conn *c, rfs_call *call, rfs_req *req, const uint64_t *ext_src,
                      int timeout_ms, int may_block, const rfs_packed *pk, size_t *keep,
                      void **keep_buf)
{
    uint8_t small[256];
    size_t need = rfs_req_encoded_size(req);
    if (need == 0)
        return rfs_fail(RFS_E_INVAL, "request with unknown op %u", req->op);
    need += RFS_SUM_LEN + RFS_PACK_HDR;
    uint8_t *buf = need <= sizeof small && !keep ? small : malloc(need);
    if (!buf)
        return rfs_fail(RFS_E_NOMEM, "out of memory encoding a %s request", rfs_op_name(req->op));

    pthread_mutex_lock(&c->lock);
    /* File data goes only to a server that has proven it knows the token. The wait is bounded:
     * the AUTH call has a deadline the watchdog enforces, and a kill wakes us. */
    while (req->data_len && c->auth_pending && !c->dead)
        pthread_cond_wait(&c->auth_cv, &c->lock);
    int dead = c->dead;
    uint32_t id = c->next_id++;
    if (c->next_id == 0)
        c->next_id = 1;
    uint32_t max_frame = c->max_frame;
    int sum = c->sums && req->op != RFS_OP_HELLO;
    if (!(c->features & RFS_FEAT_ZREAD))
        req->zok = 0; /* an older server would refuse the flag */
    req->zshuf = req->zok && (c->features & RFS_FEAT_SHUFFLE);
    rfs_conn_ver_request(c, call, req);
    pthread_mutex_unlock(&c->lock);
    int rc;
    if (dead) {
        rc = fail_dead(c);
        goto out;
    }
    req->id = id;
    size_t len;
    if ((rc = rfs_req_encode(req, ext_src, buf, need, &len)))
        goto out;
    const void *tail = req->data;
    size_t tail_len = req->data_len;
    /* the frame as it would go uncompressed must fit too: the server unpacks it */
    uint64_t frame = (uint64_t)len + req->data_len + (sum ? RFS_SUM_LEN : 0);
    if (pk && pk->codec && frame <= max_frame) {
        if ((rc = rfs_frame_add_pack(buf, &len, need, pk->codec, req->data_len, pk->len)))
            goto out;
        tail = pk->data;
        tail_len = pk->len;
    }
    /* computed here, outside the send lock: streams of one file checksum side by side */
    if (sum && (rc = rfs_frame_add_sum(buf, &len, need, tail, tail_len)))
        goto out;
    if ((uint64_t)len + tail_len > frame)
        frame = (uint64_t)len + tail_len;
    if (frame > max_frame) {
        rc = rfs_fail(RFS_E_TOOBIG, "%s frame of %llu bytes over the negotiated %u-byte limit",
                      rfs_op_name(req->op), (unsigned long long)frame, max_frame);
        goto out;
    }

    call->id = id;
    call->op = req->op;
    call->sum = sum;
    call->zok = req->zok;
    call->moved = (size_t)req->data_len + call->dst_cap;
    call->timeout_ms = timeout_ms;
    call->deadline_ns = rfs_now_ns() + (int64_t)timeout_ms * 1000000;
    call->done = 0;
    pthread_mutex_lock(&c->lock);
    if (c->dead) {
        pthread_mutex_unlock(&c->lock);
        rc = fail_dead(c);
        goto out;
    }
    pending_add(c, call);
    c->last_send_ns = rfs_now_ns();
    pthread_mutex_unlock(&c->lock);

    if (trace_on())
        trace(c, "send", req->op, id, (uint64_t)len + tail_len);
    struct iovec iov[2] = {{buf, len}, {(void *)tail, tail_len}};
    if (!may_block) {
        if (pthread_mutex_trylock(&c->send_lock) != 0) {
            pthread_mutex_lock(&c->lock);
            pending_take(c, id); /* a kill meanwhile may have taken (and completed) it */
            pthread_mutex_unlock(&c->lock);
            rc = rfs_fail(RFS_E_BUSY, "connection busy sending; %s not sent", rfs_op_name(req->op));
            goto out;
        }
    } else {
        pthread_mutex_lock(&c->send_lock);
    }
    /* A dead connection is shut down; skip the write rather than fail on it. */
    int64_t t0 = rfs_now_ns();
    /* A transport that sends payloads from our memory after the call (UCX's direct sends)
     * is waited for outside the send lock, so other threads' frames go out meanwhile. */
    const rfs_transport_ops *ops = c->t->ops;
    int split = ops->write_post != NULL;
    /* The count direct sends decrement as the peer takes them: the caller's when it keeps them. */
    size_t own_pending = 0, *pending = keep ? keep : &own_pending;
    *pending = 0;
    int wrc = rfs_conn_is_dead(c) ? RFS_OK
              : split             ? ops->write_post(c->t, iov, tail_len ? 2 : 1, pending)
                                  : rfs_transport_write_all(c->t, iov, tail_len ? 2 : 1);
    if (!wrc && !split)
        note_send(c, len + tail_len, t0, rfs_now_ns());
    pthread_mutex_unlock(&c->send_lock);
    if (split && keep && !wrc) { /* rfs_conn_post_end waits for them; no rate sample */
        atomic_fetch_add(&rfs_wire_tx, (uint64_t)len + tail_len);
        *keep_buf = buf;
        return RFS_OK;
    }
    if (split) {
        wrc = ops->write_wait(c->t, pending, wrc);
        if (!wrc) { /* the send lock again: ends the rate sample where the bytes were taken */
            pthread_mutex_lock(&c->send_lock);
            note_send(c, len + tail_len, t0, rfs_now_ns());
            pthread_mutex_unlock(&c->send_lock);
        }
    }
    if (!wrc)
        atomic_fetch_add(&rfs_wire_tx, (uint64_t)len + tail_len);
    if (wrc)
        rfs_conn_kill(c, RFS_E_CONN, "connection to server lost while sending %s: %s",
                      rfs_op_name(req->op), rfs_last_error());
    rc = RFS_OK;
out:
    if (buf != small)
        free(buf);
    return rc;
}

int rfs_conn_start(rfs_conn *c, rfs_call *call, rfs_req *req, const uint64_t *ext_src,
                   int timeout_ms)
{
    return conn_start(c, call, req, ext_src, timeout_ms, 1, NULL, NULL, NULL);
}

int rfs_conn_start_packed(rfs_conn *c, rfs_call *call, rfs_req *req, const uint64_t *ext_src,
                          int timeout_ms, const rfs_packed *pk)
{
    return conn_start(c, call, req, ext_src, timeout_ms, 1, pk, NULL, NULL);
}

int rfs_conn_post(rfs_conn *c, rfs_call *call, rfs_req *req, int timeout_ms, size_t *pending,
                  void **hold)
{
    *pending = 0;
    *hold = NULL;
    return conn_start(c, call, req, NULL, timeout_ms, 1, NULL, pending, hold);
}

int rfs_conn_post_end(rfs_conn *c, size_t *pending, void **hold)
{
    int wrc = *pending ? c->t->ops->write_wait(c->t, pending, RFS_OK) : RFS_OK;
    if (wrc)
        rfs_conn_kill(c, RFS_E_CONN, "connection to server lost while sending: %s",
                      rfs_last_error());
    free(*hold); /* no send reads it any more (write_wait also ends them on failure) */
    *hold = NULL;
    return wrc;
}

/* A small request's reply typically arrives within tens of microseconds on a LAN or loopback;
 * sleeping on the condition variable would add a futex wake-up and a context switch to that
 * (measured: most of the client's share of a 4-byte read's round trip). So look for it for a
 * short, bounded while first, yielding the CPU between looks: the receiver thread may need it. */
#define SPIN_WAIT_NS 50000
/* A call moving this many bytes takes longer than the spin anyway: polling for it only takes
 * CPU from the receiver thread that is reading its reply (a 1 GiB loopback get on 2 cores,
 * 8 interleaved runs: median 0.81 s with the spin, 0.74 s without). */
#define SPIN_MAX_BYTES ((size_t)64 << 10)
static void spin_for_reply(rfs_call *call)
{
    if (call->moved >= SPIN_MAX_BYTES)
        return;
    int64_t until = rfs_now_ns() + SPIN_WAIT_NS;
    while (!__atomic_load_n(&call->done, __ATOMIC_ACQUIRE)) {
        if (rfs_now_ns() > until)
            return;
        sched_yield();
    }
}

int rfs_conn_wait(rfs_conn *c, rfs_call *call)
{
    int timed_out = 0;
    spin_for_reply(call);
    pthread_mutex_lock(&c->lock);
    while (!call->done) {
        if (timed_out) {
            pthread_cond_wait(&call->cv, &c->lock);
            continue;
        }
        struct timespec ts = rfs_deadline_at(call->deadline_ns);
        int r = pthread_cond_timedwait(&call->cv, &c->lock, &ts);
        if (r == ETIMEDOUT && !call->done) {
            /* The reply may be half read; only killing the connection makes the receiver
             * let go of our buffer, and then it (or the kill) completes the call. */
            timed_out = 1;
            uint16_t op = call->op;
            pthread_mutex_unlock(&c->lock);
            rfs_conn_kill(c, RFS_E_TIMEOUT, "no reply to %s within %d ms; connection closed",
                          rfs_op_name(op), call->timeout_ms);
            pthread_mutex_lock(&c->lock);
        }
    }
    int rc = call->rc;
    char msg[sizeof c->dead_msg];
    if (rc)
        snprintf(msg, sizeof msg, "%s", c->dead_msg);
    pthread_mutex_unlock(&c->lock);
    if (rc)
        return rfs_fail(rc, "%s", msg);
    return RFS_OK;
}

int rfs_call_result(rfs_conn *c, const rfs_call *call, int wait_rc, const char *label)
{
    (void)c;
    if (wait_rc)
        return rfs_fail_cause(wait_rc, "%s", label);
    if (call->status) {
        if (call->rep.u.err.len)
            return rfs_fail(call->status, "%s: %.*s", label, (int)call->rep.u.err.len,
                            call->rep.u.err.s);
        return rfs_fail(call->status, "%s: %s", label, rfs_strerror(call->status));
    }
    return RFS_OK;
}

int rfs_conn_call(rfs_conn *c, rfs_call *call, rfs_req *req, int timeout_ms, const char *label)
{
    int rc = rfs_conn_start(c, call, req, NULL, timeout_ms);
    if (rc)
        return rfs_fail_cause(rc, "%s", label);
    return rfs_call_result(c, call, rfs_conn_wait(c, call), label);
}

/* ---- lifecycle ---- */

int rfs_thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int r = pthread_create(th, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return r;
}

/* "HOST:PORT" or "[v6]:PORT" of a PLACE answer into its parts; -1 when malformed. */
static int split_moved(const char *a, char *host, size_t cap, uint16_t *port)
{
    const char *colon = strrchr(a, ':');
    if (!colon || colon == a)
        return -1;
    const char *h = a, *he = colon;
    if (*a == '[') {
        if (colon[-1] != ']')
            return -1;
        h++, he--;
    }
    char *end;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (he <= h || (size_t)(he - h) >= cap || *end || end == colon + 1 || p == 0 || p > 65535)
        return -1;
    memcpy(host, h, (size_t)(he - h));
    host[he - h] = '\0';
    *port = (uint16_t)p;
    return 0;
}

static int conn_open_at(const char *host, uint16_t port, const char *dial_host, uint16_t dial_port,
                        const rfs_copts *o, rfs_conn **out);

/* A server group placed this client on another of its processes: dial that one, keeping the
 * name the client used (the pool finds the connection by it, and a reconnection asks the
 * group again, landing on the same process). */
static int follow_place(rfs_conn *entry, const rfs_copts *o, rfs_conn **out)
{
    char host[256], moved[sizeof entry->moved_to], from[sizeof entry->server];
    uint16_t port;
    snprintf(moved, sizeof moved, "%s", entry->moved_to);
    snprintf(from, sizeof from, "%s", entry->server);
    rfs_copts *o2 = malloc(sizeof *o2);
    if (!o2)
        return rfs_fail(RFS_E_NOMEM, "out of memory for a connection");
    *o2 = *o;
    o2->placed = 1;
    o2->extra_stream = entry->hello_extra;
    o2->gate_tell = o2->gate_wait = o2->gate_admit = NULL; /* told and waited already */
    int rc = split_moved(moved, host, sizeof host, &port)
                 ? rfs_fail(RFS_E_PROTO, "server %s sent this client to '%s', not HOST:PORT", from,
                            moved)
                 : conn_open_at(entry->host, entry->port, host, port, o2, out);
    explicit_bzero(o2->token, sizeof o2->token);
    free(o2);
    if (rc)
        rc = rfs_fail_cause(rc, "server group at %s placed this client on %s", from, moved);
    return rc;
}

static int conn_open(const char *host, uint16_t port, const rfs_copts *o, rfs_conn **out)
{
    return conn_open_at(host, port, host, port, o, out);
}

static int conn_open_at(const char *host, uint16_t port, const char *dial_host, uint16_t dial_port,
                        const rfs_copts *o, rfs_conn **out)
{
    *out = NULL;
    rfs_conn *c = calloc(1, sizeof *c);
    if (!c)
        return rfs_fail(RFS_E_NOMEM, "out of memory for a connection");
    snprintf(c->host, sizeof c->host, "%s", host);
    c->port = port;
    if (strchr(dial_host, ':'))
        snprintf(c->server, sizeof c->server, "[%s]:%u", dial_host, dial_port);
    else
        snprintf(c->server, sizeof c->server, "%s:%u", dial_host, dial_port);
    c->has_token = o->has_token;
    memcpy(c->token, o->token, sizeof c->token);
    c->refs = 1;
    c->next_id = 1;
    c->max_frame = RFS_PRE_HELLO_MAX;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->send_lock, NULL);
    rfs_cond_init_monotonic(&c->wd_cv);
    pthread_cond_init(&c->auth_cv, NULL);
    rfs_call_init(&c->auth_call);
    rfs_call_init(&c->session_call);
    rfs_call_init(&c->ping_call);
    c->ping_timeout_ms = o->io_timeout_ms;
    c->last_send_ns = rfs_now_ns();

    rfs_transport_opts to = {.connect_timeout_ms = o->connect_timeout_ms,
                             .sndbuf = o->sndbuf,
                             .rcvbuf = o->rcvbuf,
                             .nodelay = 1,
                             .congestion = o->congestion};
    int tls = c->tls = o->tls;
    rfs_tls_client_cfg tc = {.ca_file = o->tls_ca, .pin = o->tls_pin};
    c->ucx = o->ucx;
    if (tls && c->ucx) {
        c->refs = 0;
        rfs_conn_free(c);
        return rfs_fail(RFS_E_INVAL,
                        "%s: UCX has no TLS: ask for one or the other (rfss: or "
                        "rfs+ucx:, $RFS_TLS, $RFS_TRANSPORT)",
                        host);
    }
    int rc = c->ucx ? rfs_ucx_connect(dial_host, dial_port, &to, &c->t)
             : tls  ? rfs_tls_connect(dial_host, dial_port, &to, &tc, &c->t)
                    : rfs_tcp_connect(dial_host, dial_port, &to, &c->t);
    if (rc) {
        rfs_status failed; /* the transport's message says "cannot connect" */
        rfs_status_save(&failed, rc);
        c->t = NULL;
        c->refs = 0;
        rfs_conn_free(c);
        return rfs_status_raise(&failed);
    }
    if (o->gate_tell) /* the dials beside this one may start now (dialgate.c) */
        rfs_gate_tell_rtt(o->gate_tell, rfs_conn_rtt_ms(c));
    if (o->gate_admit && !rfs_gate_admit(o->gate_admit)) { /* a speculative dial not wanted */
        c->refs = 0;
        rfs_conn_free(c);
        return RFS_OK;
    }
    if (rfs_thread_start(&c->receiver, receiver_main, c)) {
        c->refs = 0;
        rfs_conn_free(c);
        return rfs_fail(RFS_E_NOMEM, "cannot start the connection's receiver thread");
    }
    c->threads_started = 1; /* receiver only: free() joins it */
    if (rfs_thread_start(&c->watchdog, watchdog_main, c)) {
        c->refs = 0;
        rfs_conn_free(c);
        return rfs_fail(RFS_E_NOMEM, "cannot start the connection's watchdog thread");
    }
    c->threads_started = 2;
    if ((rc = rfs_handshake(c, o))) {
        rfs_status failed;
        rfs_status_save(&failed, rc);
        c->refs = 0;
        rfs_conn_free(c);
        return rfs_status_raise(&failed);
    }
    if (c->moved_to[0]) {
        rc = follow_place(c, o, out);
        rfs_status st;
        rfs_status_save(&st, rc);
        c->refs = 0;
        rfs_conn_free(c);
        return rfs_status_raise(&st);
    }
    *out = c;
    return RFS_OK;
}

int rfs_conn_open(const char *host, uint16_t port, const rfs_copts *o, rfs_conn **out)
{
    int rc = conn_open(host, port, o, out);
    if (rc && o->gate_tell) /* nobody beside it waits for a HELLO that will not come */
        rfs_gate_tell_hello(o->gate_tell, 0, 1);
    return rc;
}

void rfs_conn_free(rfs_conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->stopping = 1;
    pthread_cond_signal(&c->wd_cv);
    pthread_mutex_unlock(&c->lock);
    rfs_conn_kill(c, RFS_E_CONN, "connection closed by the client");
    if (c->threads_started >= 1)
        pthread_join(c->receiver, NULL);
    if (c->threads_started >= 2)
        pthread_join(c->watchdog, NULL);
    rfs_transport_close(c->t);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->send_lock);
    pthread_cond_destroy(&c->wd_cv);
    pthread_cond_destroy(&c->auth_cv);
    rfs_call_destroy(&c->auth_call);
    rfs_call_destroy(&c->session_call);
    rfs_call_destroy(&c->ping_call);
    free(c->sink_buf);
    free(c->vreg);
    /* The token is a secret: do not leave it in freed memory. */
    explicit_bzero(c->token, sizeof c->token);
    free(c);
}
