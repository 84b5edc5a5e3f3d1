/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Third-party copy, the client's part (tpc.h). */
#include "client/tpc.h"

#include "client/client.h"
#include "common/err.h"
#include "transport/tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rfs_tpc_pull {
    rfs_name name;
    char label[RFS_CLIENT_LABEL_MAX];
    rfs_copts o;
    rfs_conn *conn; /* a connection of its own: the pull lives and dies with it */
    uint32_t job;
};

static int connect_to(const char *name, const rfs_options *opts, rfs_name *n, char *label,
                      rfs_copts *o, rfs_conn **conn, int pooled)
{
    if (!name)
        return rfs_fail(RFS_E_INVAL, "NULL rfs name");
    int rc = rfs_parse_name(name, n);
    if (rc)
        return rc;
    rfs_name_label(n, label, RFS_CLIENT_LABEL_MAX);
    if ((rc = rfs_copts_resolve(opts, label, o)))
        return rc;
    if (pooled)
        return rfs_pool_get_retry(n, o, 1, conn, label);
    o->tls |= n->tls; /* an rfss: name */
    o->ucx |= n->ucx; /* an rfs+ucx: name */
    return rfs_conn_open(n->host, n->port, o, conn);
}

/* The HELLO reply's feature bits (set under the connection's lock). */
static unsigned conn_features(rfs_conn *c)
{
    pthread_mutex_lock(&c->lock);
    unsigned f = c->features;
    pthread_mutex_unlock(&c->lock);
    return f;
}

int rfs_tpc_features(const char *name, const rfs_options *opts, unsigned *features)
{
    rfs_name n;
    char label[RFS_CLIENT_LABEL_MAX];
    rfs_copts o;
    rfs_conn *c = NULL;
    int rc = connect_to(name, opts, &n, label, &o, &c, 1);
    explicit_bzero(o.token, sizeof o.token);
    if (rc)
        return rc;
    *features = conn_features(c);
    rfs_pool_put(c);
    return RFS_OK;
}

int rfs_tpc_grant(const char *src_name, const rfs_options *opts, unsigned uses,
                  rfs_tpc_grant_info *out)
{
    memset(out, 0, sizeof *out);
    rfs_name n;
    char label[RFS_CLIENT_LABEL_MAX];
    rfs_copts o;
    rfs_conn *c = NULL;
    int rc = connect_to(src_name, opts, &n, label, &o, &c, 1);
    explicit_bzero(o.token, sizeof o.token);
    if (rc)
        return rc;
    if (!(conn_features(c) & RFS_FEAT_TPC_SRC)) {
        rfs_pool_put(c);
        return rfs_fail(RFS_E_UNSUPPORTED,
                        "%s: the server does not make third-party copy "
                        "grants (an older rfsd)",
                        label);
    }
    if (c->tls) {
        out->tls = 1;
        if ((rc = rfs_tls_peer_pin(c->t, out->pin))) {
            rfs_pool_put(c);
            return rc;
        }
    }
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_TPC_GRANT;
    req.u.tpc_grant.uses = uses;
    req.u.tpc_grant.path.s = n.path;
    req.u.tpc_grant.path.len = (uint16_t)strlen(n.path);
    rfs_call call;
    rfs_call_init(&call);
    rc = rfs_conn_call(c, &call, &req, o.io_timeout_ms, label);
    if (!rc) {
        memcpy(out->id, call.rep.u.tpc_grant.id, RFS_TPC_ID_LEN);
        memcpy(out->key, call.rep.u.tpc_grant.key, RFS_TPC_KEY_LEN);
        out->size = call.rep.u.tpc_grant.size;
        out->ttl_ms = call.rep.u.tpc_grant.ttl_ms;
    }
    rfs_call_destroy(&call);
    rfs_pool_put(c);
    return rc;
}

int rfs_tpc_pull_begin(const char *dst_name, const rfs_options *opts, const char *src_host,
                       unsigned src_port, const char *src_path, const rfs_tpc_grant_info *g,
                       uint32_t flags, uint32_t mode, unsigned streams, rfs_tpc_pull **out)
{
    *out = NULL;
    rfs_tpc_pull *p = calloc(1, sizeof *p);
    if (!p)
        return rfs_fail(RFS_E_NOMEM, "out of memory");
    int rc = connect_to(dst_name, opts, &p->name, p->label, &p->o, &p->conn, 0);
    explicit_bzero(p->o.token, sizeof p->o.token);
    if (rc) {
        free(p);
        return rc;
    }
    pthread_mutex_lock(&p->conn->lock);
    unsigned features = p->conn->features;
    pthread_mutex_unlock(&p->conn->lock);
    if (!(features & RFS_FEAT_TPC_DST)) {
        rc = rfs_fail(RFS_E_UNSUPPORTED,
                      "%s: the server does not pull third-party copies "
                      "(rfsd --tpc on enables it)",
                      p->label); /* before the end frees the label */
        rfs_tpc_pull_end(p);
        return rc;
    }
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_TPC_PULL;
    req.u.tpc_pull.flags = flags | (g->tls ? RFS_TPC_TLS : 0);
    req.u.tpc_pull.mode = mode;
    req.u.tpc_pull.port = src_port;
    req.u.tpc_pull.streams = streams;
    memcpy(req.u.tpc_pull.id, g->id, RFS_TPC_ID_LEN);
    memcpy(req.u.tpc_pull.key, g->key, RFS_TPC_KEY_LEN);
    memcpy(req.u.tpc_pull.pin, g->pin, RFS_TPC_PIN_LEN);
    req.u.tpc_pull.host.s = src_host;
    req.u.tpc_pull.host.len = (uint16_t)strlen(src_host);
    req.u.tpc_pull.src.s = src_path;
    req.u.tpc_pull.src.len = (uint16_t)strlen(src_path);
    req.u.tpc_pull.dst.s = p->name.path;
    req.u.tpc_pull.dst.len = (uint16_t)strlen(p->name.path);
    rfs_call call;
    rfs_call_init(&call);
    rc = rfs_conn_call(p->conn, &call, &req, p->o.io_timeout_ms, p->label);
    explicit_bzero(&req.u.tpc_pull.key, sizeof req.u.tpc_pull.key);
    if (!rc)
        p->job = call.rep.u.tpc_pull.job;
    rfs_call_destroy(&call);
    if (rc) {
        rfs_tpc_pull_end(p);
        return rc;
    }
    *out = p;
    return RFS_OK;
}

int rfs_tpc_pull_poll(rfs_tpc_pull *p, int *finished, uint64_t *done, uint64_t *total,
                      uint32_t *crc)
{
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_TPC_STATUS;
    req.u.tpc_status.job = p->job;
    rfs_call call;
    rfs_call_init(&call);
    int rc = rfs_conn_call(p->conn, &call, &req, p->o.io_timeout_ms, p->label);
    if (!rc) {
        *finished = call.rep.u.tpc_status.state == RFS_TPC_DONE;
        *done = call.rep.u.tpc_status.done;
        *total = call.rep.u.tpc_status.total;
        *crc = call.rep.u.tpc_status.crc;
    }
    rfs_call_destroy(&call);
    return rc;
}

void rfs_tpc_pull_end(rfs_tpc_pull *p)
{
    if (!p)
        return;
    if (p->conn)
        rfs_conn_free(p->conn);
    free(p);
}
