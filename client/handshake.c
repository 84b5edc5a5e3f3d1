/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* HELLO (version, frame size, features) and AUTH (mutual challenge-response, common/auth.h).
 *
 * The client proves it knows the token, and then checks the server's MAC: a server that
 * does not know the token (an impostor on the port, or a server configured with another
 * token) is refused before any file data is sent to it. AUTH's round trip is shared with the
 * connection's first request (see authenticate). */
#include "client/cap.h"
#include "client/client.h"

#include "common/err.h"

#include <stdio.h>
#include <string.h>

static int hello(rfs_conn *c, const rfs_copts *o, rfs_rep *rep)
{
    rfs_call call;
    rfs_call_init(&call);
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_HELLO;
    req.u.hello.min_version = RFS_PROTO_VERSION;
    req.u.hello.max_version = RFS_PROTO_VERSION;
    req.u.hello.max_frame = o->max_frame;
    req.extra_stream = o->extra_stream;
    if (o->gate_wait) {
        /* an additional stream of a file: its mark depends on what the first one's server
         * said (an older server refuses a mark it does not know) */
        uint32_t features;
        req.extra_stream =
            rfs_gate_wait_hello(o->gate_wait, &features) == 0 && (features & RFS_FEAT_XSTREAM) != 0;
    }
    c->hello_extra = req.extra_stream;
    int rc = rfs_conn_start(c, &call, &req, NULL, o->connect_timeout_ms);
    if (!rc)
        rc = rfs_conn_wait(c, &call);
    if (rc) {
        rc = rfs_fail_cause(rc, "handshake with %s failed", c->server);
    } else if (call.status) {
        rc = rfs_fail(call.status == RFS_E_VERSION ? RFS_E_VERSION : call.status,
                      "server %s refused HELLO: %.*s", c->server, (int)call.rep.u.err.len,
                      call.rep.u.err.s ? call.rep.u.err.s : "");
    } else if (call.rep.u.hello.version != RFS_PROTO_VERSION) {
        rc = rfs_fail(RFS_E_VERSION, "server %s chose protocol version %u; this client speaks %u",
                      c->server, call.rep.u.hello.version, RFS_PROTO_VERSION);
    } else {
        *rep = call.rep;
    }
    rfs_call_destroy(&call);
    return rc;
}

/* Sends AUTH and returns without its reply: the connection's first request follows in the
 * same round trip. The receiver checks the server's proof (rfs_auth_settle) before it hands
 * any other reply to a caller, and requests carrying file data wait for that check, so an
 * impostor can learn at most the first request's path name, never file data. */
static int authenticate(rfs_conn *c, const rfs_copts *o, const uint8_t *server_nonce)
{
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_AUTH;
    if (rfs_auth_random(req.u.auth.client_nonce, RFS_NONCE_LEN))
        return rfs_fail(RFS_E_IO, "no randomness for the authentication nonce");
    /* a third-party copy grant's key stands in for the token (TPC_AUTH) */
    const char *secret = o->has_grant ? (const char *)o->grant_key : o->token;
    size_t tlen = o->has_grant ? RFS_TPC_KEY_LEN : strlen(o->token);
    rfs_auth_client_mac(secret, tlen, server_nonce, req.u.auth.client_nonce, req.u.auth.mac);
    pthread_mutex_lock(&c->lock);
    rfs_auth_server_mac(secret, tlen, server_nonce, req.u.auth.client_nonce, c->auth_expect);
    c->auth_pending = 1;
    pthread_mutex_unlock(&c->lock);
    if (o->has_grant) {
        uint8_t nonce[RFS_NONCE_LEN], mac[RFS_MAC_LEN];
        memcpy(nonce, req.u.auth.client_nonce, sizeof nonce);
        memcpy(mac, req.u.auth.mac, sizeof mac);
        memset(&req.u, 0, sizeof req.u);
        req.op = RFS_OP_TPC_AUTH;
        memcpy(req.u.tpc_auth.id, o->grant_id, RFS_TPC_ID_LEN);
        memcpy(req.u.tpc_auth.client_nonce, nonce, sizeof nonce);
        memcpy(req.u.tpc_auth.mac, mac, sizeof mac);
    }
    int rc = rfs_conn_start(c, &c->auth_call, &req, NULL, o->connect_timeout_ms);
    explicit_bzero(&req.u, sizeof req.u);
    if (rc)
        return rfs_fail_cause(rc, "authentication with %s failed", c->server);
    return RFS_OK;
}

/* CAP_AUTH: the capability itself is the credential (it travels like a bearer token: use
 * TLS where the path is not trusted). There is no proof from the server: a connection to an
 * impostor would hand it the capability, as TLS or a trusted network prevent. */
static int authenticate_cap(rfs_conn *c, const rfs_copts *o)
{
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_CAP_AUTH;
    size_t n = rfs_cap_trimmed_len(o->token);
    if (n > RFS_CAP_WIRE_MAX)
        return rfs_fail(RFS_E_AUTH, "the capability is %zu bytes long (at most %u)", n,
                        RFS_CAP_WIRE_MAX);
    req.u.cap.str.s = o->token;
    req.u.cap.str.len = (uint16_t)n;
    pthread_mutex_lock(&c->lock);
    c->auth_pending = 1;
    pthread_mutex_unlock(&c->lock);
    int rc = rfs_conn_start(c, &c->auth_call, &req, NULL, o->connect_timeout_ms);
    if (rc)
        return rfs_fail_cause(rc, "authentication with %s failed", c->server);
    return RFS_OK;
}

int rfs_auth_settle(rfs_conn *c)
{
    rfs_call *call = &c->auth_call;
    if (call->op == RFS_OP_CAP_AUTH) {
        if (call->status) {
            rfs_conn_kill(c, RFS_E_AUTH, "server %s refused the capability: %.*s", c->server,
                          (int)call->rep.u.err.len, call->rep.u.err.s ? call->rep.u.err.s : "");
            return -1;
        }
        pthread_mutex_lock(&c->lock);
        c->auth_pending = 0;
        pthread_cond_broadcast(&c->auth_cv);
        pthread_mutex_unlock(&c->lock);
        return 0;
    }
    if (call->status && call->op == RFS_OP_TPC_AUTH) {
        rfs_conn_kill(c, RFS_E_AUTH, "server %s refused the third-party copy grant: %.*s",
                      c->server, (int)call->rep.u.err.len,
                      call->rep.u.err.s ? call->rep.u.err.s : "");
        return -1;
    }
    if (call->status) {
        rfs_conn_kill(c, RFS_E_AUTH,
                      "server %s rejected the token (%.*s); check RFS_TOKEN, "
                      "RFS_TOKEN_FILE or rfs_options.token",
                      c->server, (int)call->rep.u.err.len,
                      call->rep.u.err.s ? call->rep.u.err.s : "");
        return -1;
    }
    pthread_mutex_lock(&c->lock);
    int ok = rfs_auth_equal(c->auth_expect, call->rep.u.auth.server_mac, RFS_MAC_LEN);
    explicit_bzero(c->auth_expect, sizeof c->auth_expect);
    if (ok) {
        c->auth_pending = 0;
        pthread_cond_broadcast(&c->auth_cv);
    }
    pthread_mutex_unlock(&c->lock);
    if (!ok) {
        rfs_conn_kill(c, RFS_E_AUTH,
                      "server %s did not prove it knows the token (a different "
                      "token, or not the expected server); connection closed",
                      c->server);
        return -1;
    }
    return 0;
}

void rfs_session_settle(rfs_conn *c)
{
    rfs_call *call = &c->session_call;
    pthread_mutex_lock(&c->lock);
    /* An error reply (a server without sessions) leaves lease 0: no pings, no fencing. */
    if (!call->status) {
        c->lease_ms = call->rep.u.session.lease_ms;
        memcpy(c->boot, call->rep.u.session.boot, RFS_SESSION_LEN);
    }
    c->session_known = 1;
    pthread_mutex_unlock(&c->lock);
}

/* Names this connection's session without waiting for the reply (the receiver records it). */
static int start_session(rfs_conn *c, const rfs_copts *o)
{
    if (rfs_auth_random(c->session, RFS_SESSION_LEN))
        return rfs_fail(RFS_E_IO, "no randomness for the session id");
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_SESSION;
    memcpy(req.u.session.id, c->session, RFS_SESSION_LEN);
    /* Not sent only when the connection is already dead (say, the AUTH reply came back wrong
     * meanwhile): the next request reports why, as it would without sessions. */
    rfs_conn_start(c, &c->session_call, &req, NULL, o->connect_timeout_ms);
    return RFS_OK;
}

int rfs_conn_fence(rfs_conn *c, const uint8_t old[RFS_SESSION_LEN], int timeout_ms,
                   uint8_t boot[RFS_SESSION_LEN])
{
    rfs_call call;
    rfs_call_init(&call);
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_SESSION;
    memcpy(req.u.session.id, c->session, RFS_SESSION_LEN);
    memcpy(req.u.session.fence, old, RFS_SESSION_LEN);
    int rc = rfs_conn_start(c, &call, &req, NULL, timeout_ms);
    if (!rc)
        rc = rfs_conn_wait(c, &call);
    if (!rc && call.status)
        rc = rfs_fail(call.status, "%.*s", (int)call.rep.u.err.len,
                      call.rep.u.err.s ? call.rep.u.err.s : rfs_strerror(call.status));
    if (!rc)
        memcpy(boot, call.rep.u.session.boot, RFS_SESSION_LEN);
    rfs_call_destroy(&call);
    return rc;
}

/* A server group (rfsd --mpi) serves each rank of a job on one of its processes: ask which,
 * right behind AUTH, and wait for the answer before the session starts, so that nothing of
 * this client runs on a process that does not serve it. An answer naming another process
 * leaves its address in c->moved_to (conn_open dials there); an error reply, or a process
 * without a rank, is served where it landed, as an older client is. */
static int place(rfs_conn *c, const rfs_copts *o)
{
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_PLACE;
    if (rfs_place_identity(req.u.place.job, &req.u.place.rank))
        return RFS_OK;
    rfs_call call;
    rfs_call_init(&call);
    int rc = rfs_conn_start(c, &call, &req, NULL, o->connect_timeout_ms);
    if (!rc)
        rc = rfs_conn_wait(c, &call);
    if (rc)
        rc = rfs_fail_cause(rc, "handshake with %s failed", c->server);
    else if (!call.status && call.rep.u.place.addr.len > 0)
        snprintf(c->moved_to, sizeof c->moved_to, "%.*s", (int)call.rep.u.place.addr.len,
                 call.rep.u.place.addr.s);
    rfs_call_destroy(&call);
    return rc;
}

int rfs_handshake(rfs_conn *c, const rfs_copts *o)
{
    rfs_rep rep;
    int rc = hello(c, o, &rep);
    if (rc)
        return rc;
    if (o->gate_tell)
        rfs_gate_tell_hello(o->gate_tell, rep.u.hello.features, 0);
    uint32_t mf = rep.u.hello.max_frame < o->max_frame ? rep.u.hello.max_frame : o->max_frame;
    pthread_mutex_lock(&c->lock);
    c->max_frame = mf;
    if (rep.u.hello.features & RFS_FEAT_VIEWS)
        c->views_ok = 1;
    c->vers = (rep.u.hello.features & RFS_FEAT_VER) && !o->no_vers;
    /* from AUTH on, every frame both ways is checksummed (docs/protocol.md) */
    if ((rep.u.hello.features & RFS_FEAT_SUM) && !o->no_sums)
        c->sums = 1;
    c->codecs = ((rep.u.hello.features & RFS_FEAT_LZ4) ? 1u << RFS_CODEC_ID_LZ4 : 0) |
                ((rep.u.hello.features & RFS_FEAT_ZSTD) ? 1u << RFS_CODEC_ID_ZSTD : 0);
    if (rep.u.hello.features & RFS_FEAT_SHUFFLE)
        c->codecs |= c->codecs << (RFS_CODEC_ID_LZ4_SHUF - RFS_CODEC_ID_LZ4);
    c->features = rep.u.hello.features;
    pthread_mutex_unlock(&c->lock);
    if (rep.u.hello.auth_required && o->has_grant) {
        if (!(rep.u.hello.features & RFS_FEAT_TPC_SRC))
            return rfs_fail(RFS_E_UNSUPPORTED, "server %s does not take third-party copy grants",
                            c->server);
        if ((rc = authenticate(c, o, rep.u.hello.nonce)))
            return rc;
    } else if (rep.u.hello.auth_required && o->is_cap) {
        if (!(rep.u.hello.features & RFS_FEAT_CAP))
            return rfs_fail(RFS_E_UNSUPPORTED,
                            "server %s does not take capabilities (an older rfsd): use a "
                            "token",
                            c->server);
        if ((rc = authenticate_cap(c, o)))
            return rc;
    } else if (rep.u.hello.auth_required) {
        if (!o->has_token)
            return rfs_fail(RFS_E_AUTH,
                            "server %s requires a token: set RFS_TOKEN to it, or "
                            "RFS_TOKEN_FILE to a file holding it (or rfs_options.token)",
                            c->server);
        if ((rc = authenticate(c, o, rep.u.hello.nonce)))
            return rc;
    }
    if ((rep.u.hello.features & RFS_FEAT_PLACE) && !o->placed && !o->has_grant) {
        if ((rc = place(c, o)))
            return rc;
        if (c->moved_to[0])
            return RFS_OK; /* no session here: the client goes to the process named */
    }
    return start_session(c, o);
}
