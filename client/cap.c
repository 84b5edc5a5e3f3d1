/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Capabilities, the client's part (cap.h). */
#include "client/cap.h"

#include "client/client.h"
#include "common/capability.h"
#include "common/err.h"

#include <stdio.h>
#include <string.h>

static int connect_to(const char *name, const rfs_options *opts, rfs_name *n, char *label,
                      rfs_copts *o, rfs_conn **conn)
{
    if (!name)
        return rfs_fail(RFS_E_INVAL, "NULL rfs name");
    int rc = rfs_parse_name(name, n);
    if (rc)
        return rc;
    rfs_name_label(n, label, RFS_CLIENT_LABEL_MAX);
    if ((rc = rfs_copts_resolve(opts, label, o)))
        return rc;
    rc = rfs_pool_get_retry(n, o, 1, conn, label);
    if (rc)
        return rc;
    pthread_mutex_lock(&(*conn)->lock);
    unsigned f = (*conn)->features;
    pthread_mutex_unlock(&(*conn)->lock);
    if (!(f & RFS_FEAT_CAP)) {
        rfs_pool_put(*conn);
        return rfs_fail(RFS_E_UNSUPPORTED,
                        "%s: the server does not make capabilities (an older "
                        "rfsd)",
                        label);
    }
    return RFS_OK;
}

static int call(rfs_conn *c, const rfs_copts *o, const char *label, rfs_req *req, char *out,
                size_t outcap)
{
    rfs_call cl;
    rfs_call_init(&cl);
    int rc = rfs_conn_call(c, &cl, req, o->io_timeout_ms, label);
    if (!rc && out) {
        const rfs_wpath *s = &cl.rep.u.cap_issue.str;
        if (s->len >= outcap)
            rc = rfs_fail(RFS_E_TOOBIG, "%s: capability of %u bytes", label, s->len);
        else {
            memcpy(out, s->s, s->len);
            out[s->len] = '\0';
        }
    }
    rfs_call_destroy(&cl);
    return rc;
}

int rfs_cap_request(const char *name, const rfs_options *opts, unsigned right, int lease,
                    uint64_t expires, char *out, size_t outcap)
{
    rfs_name n;
    char label[RFS_CLIENT_LABEL_MAX];
    rfs_copts o;
    rfs_conn *c = NULL;
    int rc = connect_to(name, opts, &n, label, &o, &c);
    explicit_bzero(o.token, sizeof o.token);
    if (rc)
        return rc;
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_CAP_ISSUE;
    req.u.cap_issue.right = right;
    req.u.cap_issue.flags = lease ? RFS_CAP_ISSUE_LEASE : 0;
    req.u.cap_issue.expires = expires;
    req.u.cap_issue.path.s = n.path;
    req.u.cap_issue.path.len = (uint16_t)strlen(n.path);
    rc = call(c, &o, label, &req, out, outcap);
    rfs_pool_put(c);
    return rc;
}

int rfs_cap_revoke_at(const char *name, const rfs_options *opts, const char *cap)
{
    rfs_name n;
    char label[RFS_CLIENT_LABEL_MAX];
    rfs_copts o;
    rfs_conn *c = NULL;
    size_t len = strlen(cap);
    while (len && (cap[len - 1] == '\n' || cap[len - 1] == ' ' || cap[len - 1] == '\r'))
        len--;
    if (len == 0 || len > RFS_CAP_WIRE_MAX)
        return rfs_fail(RFS_E_INVAL, "not a capability (%zu bytes)", len);
    int rc = connect_to(name, opts, &n, label, &o, &c);
    explicit_bzero(o.token, sizeof o.token);
    if (rc)
        return rc;
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_CAP_REVOKE;
    req.u.cap.str.s = cap;
    req.u.cap.str.len = (uint16_t)len;
    rc = call(c, &o, label, &req, NULL, 0);
    rfs_pool_put(c);
    return rc;
}

int rfs_obj_lease(const char *name, const rfs_options *opts, uint64_t expires, uint64_t *kept)
{
    rfs_name n;
    char label[RFS_CLIENT_LABEL_MAX];
    rfs_copts o;
    rfs_conn *c = NULL;
    int rc = connect_to(name, opts, &n, label, &o, &c);
    explicit_bzero(o.token, sizeof o.token);
    if (rc)
        return rc;
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_OBJ_LEASE;
    req.u.obj_lease.expires = expires;
    req.u.obj_lease.path.s = n.path;
    req.u.obj_lease.path.len = (uint16_t)strlen(n.path);
    rfs_call cl;
    rfs_call_init(&cl);
    rc = rfs_conn_call(c, &cl, &req, o.io_timeout_ms, label);
    if (!rc)
        *kept = cl.rep.u.u64.value;
    rfs_call_destroy(&cl);
    rfs_pool_put(c);
    return rc;
}

int rfs_cap_in_use(const rfs_options *opts)
{
    rfs_copts o;
    if (rfs_copts_resolve(opts, "capability", &o))
        return 0;
    int on = o.has_token && o.is_cap;
    explicit_bzero(o.token, sizeof o.token);
    return on;
}
