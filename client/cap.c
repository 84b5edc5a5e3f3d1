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

size_t rfs_cap_trimmed_len(const char *cap)
{
    size_t len = strlen(cap);
    while (len && (cap[len - 1] == '\n' || cap[len - 1] == ' ' || cap[len - 1] == '\r'))
        len--;
    return len;
}

int rfs_cap_revoke_at(const char *name, const rfs_options *opts, const char *cap)
{
    rfs_name n;
    char label[RFS_CLIENT_LABEL_MAX];
    rfs_copts o;
    rfs_conn *c = NULL;
    size_t len = rfs_cap_trimmed_len(cap);
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

/* ---- leases to renew (cap.h) ---- */

#define LEASES_KEPT 16u

typedef struct kept_lease {
    int used;
    uint64_t age;
    unsigned right;
    char lease[RFS_CAP_MAX_LEN + 1];
    char parent[RFS_CAP_MAX_LEN + 1];
    char home[RFS_CLIENT_LABEL_MAX + 4096];
} kept_lease;

static pthread_mutex_t leases_mu = PTHREAD_MUTEX_INITIALIZER;
static kept_lease leases[LEASES_KEPT];
static uint64_t leases_clock;

static kept_lease *lease_find(const char *lease)
{
    for (unsigned i = 0; i < LEASES_KEPT; i++)
        if (leases[i].used && !strcmp(leases[i].lease, lease))
            return &leases[i];
    return NULL;
}

/* A free entry, else the oldest (wiped: it holds a capability). */
static kept_lease *lease_slot(void)
{
    kept_lease *old = &leases[0];
    for (unsigned i = 0; i < LEASES_KEPT; i++) {
        if (!leases[i].used)
            return &leases[i];
        if (leases[i].age < old->age)
            old = &leases[i];
    }
    explicit_bzero(old, sizeof *old);
    return old;
}

static void lease_put(const char *lease, const char *home, const char *parent, unsigned right)
{
    if (strlen(lease) > RFS_CAP_MAX_LEN || strlen(parent) > RFS_CAP_MAX_LEN ||
        strlen(home) >= sizeof leases[0].home)
        return; /* cannot happen with what rfs makes; such a lease is simply not renewed */
    kept_lease *k = lease_find(lease);
    if (!k)
        k = lease_slot();
    k->used = 1;
    k->age = ++leases_clock;
    k->right = right;
    snprintf(k->lease, sizeof k->lease, "%s", lease);
    snprintf(k->parent, sizeof k->parent, "%s", parent);
    snprintf(k->home, sizeof k->home, "%s", home);
}

void rfs_cap_lease_remember(const char *lease, const char *home, const rfs_options *parent,
                            unsigned right)
{
    rfs_copts o;
    if (rfs_copts_resolve(parent, "capability", &o))
        return;
    if (o.has_token && o.is_cap) {
        pthread_mutex_lock(&leases_mu);
        lease_put(lease, home, o.token, right);
        pthread_mutex_unlock(&leases_mu);
    }
    explicit_bzero(o.token, sizeof o.token);
}

int rfs_cap_lease_renew(rfs_copts *o)
{
    if (!o->has_token || !o->is_cap)
        return RFS_OK;
    pthread_mutex_lock(&leases_mu);
    kept_lease *k = lease_find(o->token);
    kept_lease mine;
    if (k)
        mine = *k;
    pthread_mutex_unlock(&leases_mu);
    if (!k)
        return RFS_OK;
    rfs_options po = {.token = mine.parent};
    char fresh[RFS_CAP_MAX_LEN + 1];
    int rc = rfs_cap_request(mine.home, &po, mine.right, 1, 0, fresh, sizeof fresh);
    if (rc == RFS_OK) {
        /* the old lease stays known: other files opened with it renew it too */
        pthread_mutex_lock(&leases_mu);
        lease_put(fresh, mine.home, mine.parent, mine.right);
        pthread_mutex_unlock(&leases_mu);
        snprintf(o->token, sizeof o->token, "%s", fresh);
    }
    if (rc != RFS_OK)
        rc = rfs_fail_cause(rc, "renewing the capability's lease at %s", mine.home);
    explicit_bzero(&mine, sizeof mine);
    explicit_bzero(fresh, sizeof fresh);
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
