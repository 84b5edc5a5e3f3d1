/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Path-based calls (no open file): delete, rename, mkdir, stat, list, ping. Each borrows one
 * pooled connection to the server for the duration of the call. */
#include "client/client.h"

#include "common/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct meta {
    rfs_name name;
    char label[RFS_CLIENT_LABEL_MAX];
    rfs_copts o;
    rfs_conn *conn;
} meta;

static int meta_begin(meta *m, const char *name, const rfs_options *opts)
{
    memset(m, 0, sizeof *m);
    if (!name)
        return rfs_fail(RFS_E_INVAL, "NULL rfs name");
    int rc = rfs_parse_name(name, &m->name);
    if (rc)
        return rc;
    rfs_name_label(&m->name, m->label, sizeof m->label);
    if ((rc = rfs_copts_resolve(opts, m->label, &m->o)))
        return rc;
    return rfs_pool_get_retry(&m->name, &m->o, 1, &m->conn, m->label);
}

static void meta_end(meta *m)
{
    rfs_pool_put(m->conn);
    m->conn = NULL;
    explicit_bzero(m->o.token, sizeof m->o.token);
}

static rfs_wpath wpath(const char *s)
{
    rfs_wpath p = {s, (uint16_t)strlen(s)};
    return p;
}

/* Runs one request on the borrowed connection; reply in *call (caller destroys it). */
static int meta_call(meta *m, rfs_req *req, rfs_call *call)
{
    rfs_call_init(call);
    return rfs_conn_call(m->conn, call, req, m->o.io_timeout_ms, m->label);
}

/* Puts the parsed path into whichever field of req names it. */
static void set_path(rfs_req *req, const char *path)
{
    switch (req->op) {
    case RFS_OP_MKDIR:
    case RFS_OP_CHMOD: req->u.mkdir.path = wpath(path); break;
    case RFS_OP_RENAME: req->u.rename.from = wpath(path); break;
    case RFS_OP_LIST:
    case RFS_OP_LIST_TREE: req->u.list.path = wpath(path); break;
    case RFS_OP_PING: break;
    default: req->u.path.path = wpath(path); break;
    }
}

/* One request about name (req's op and other fields set by the caller) on a borrowed
 * connection. On success *rep (if not NULL) gets the reply's fixed fields (pointers into the
 * body are not valid after return). */
static int meta_once(const char *name, const rfs_options *opts, rfs_req *req, rfs_rep *rep)
{
    meta m;
    int rc = meta_begin(&m, name, opts);
    if (rc)
        return rc;
    set_path(req, m.name.path);
    rfs_call call;
    rc = meta_call(&m, req, &call);
    if (!rc && rep)
        *rep = call.rep;
    rfs_call_destroy(&call);
    meta_end(&m);
    return rc;
}

static int path_op(const char *name, const rfs_options *opts, uint16_t op, unsigned mode)
{
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = op;
    if (op == RFS_OP_MKDIR || op == RFS_OP_CHMOD)
        req.u.mkdir.mode = mode;
    return meta_once(name, opts, &req, NULL);
}

int rfs_delete(const char *name, const rfs_options *opts)
{
    return path_op(name, opts, RFS_OP_DELETE, 0);
}

int rfs_mkdir(const char *name, unsigned mode, const rfs_options *opts)
{
    if (mode & ~07777u)
        return rfs_fail(RFS_E_INVAL, "%s: bad mode 0%o", name ? name : "(null)", mode);
    return path_op(name, opts, RFS_OP_MKDIR, mode);
}

int rfs_chmod(const char *name, unsigned mode, const rfs_options *opts)
{
    if (mode & ~07777u)
        return rfs_fail(RFS_E_INVAL, "%s: bad mode 0%o", name ? name : "(null)", mode);
    return path_op(name, opts, RFS_OP_CHMOD, mode);
}

/* A request of only a path whose reply's fixed fields the caller reads. */
static int path_query(const char *name, const rfs_options *opts, uint16_t op, rfs_rep *rep)
{
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = op;
    return meta_once(name, opts, &req, rep);
}

int rfs_statfs(const char *name, const rfs_options *opts, rfs_fs_info *out)
{
    if (!out)
        return rfs_fail(RFS_E_INVAL, "rfs_statfs: NULL output");
    rfs_rep rep;
    int rc = path_query(name, opts, RFS_OP_STATFS, &rep);
    if (!rc) {
        out->total_bytes = rep.u.statfs.total;
        out->free_bytes = rep.u.statfs.free;
        out->avail_bytes = rep.u.statfs.avail;
        out->files = rep.u.statfs.files;
        out->files_free = rep.u.statfs.files_free;
    }
    return rc;
}

int rfs_rename(const char *name, const char *new_path, const rfs_options *opts)
{
    if (!new_path || !new_path[0])
        return rfs_fail(RFS_E_INVAL, "%s: rename needs a target path", name ? name : "(null)");
    /* The target is a path on the same server; a full rfs name is accepted if it names the
     * same server. */
    char target[4096 + 1];
    if (rfs_is_name(new_path)) {
        rfs_name to, from;
        int rc = rfs_parse_name(new_path, &to);
        if (rc)
            return rc;
        if ((rc = rfs_parse_name(name, &from)))
            return rc;
        if (to.port != from.port || strcmp(to.host, from.host) != 0)
            return rfs_fail(RFS_E_INVAL, "%s: cannot rename to another server (%s)", name,
                            new_path);
        snprintf(target, sizeof target, "%s", to.path);
    } else {
        size_t len = strlen(new_path);
        int slash = new_path[0] != '/';
        if (len + (size_t)slash > RFS_MAX_PATH)
            return rfs_fail(RFS_E_NAME, "%s: rename target longer than %u bytes", name ? name : "",
                            RFS_MAX_PATH);
        snprintf(target, sizeof target, "%s%s", slash ? "/" : "", new_path);
    }
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_RENAME;
    req.u.rename.to = wpath(target);
    return meta_once(name, opts, &req, NULL);
}

int rfs_stat(const char *name, const rfs_options *opts, rfs_stat_info *st)
{
    if (!st)
        return rfs_fail(RFS_E_INVAL, "rfs_stat: NULL output");
    rfs_rep rep;
    int rc = path_query(name, opts, RFS_OP_STAT, &rep);
    if (!rc) {
        st->size = rep.u.stat.size;
        st->mode = rep.u.stat.mode;
        st->type = rep.u.stat.type;
        st->mtime_ns = rep.u.stat.mtime_ns;
    }
    return rc;
}

int rfs_list_entries_each(const uint8_t *entries, size_t len, uint32_t count, rfs_list_fn fn,
                          void *ctx, const char *label)
{
    for (uint32_t i = 0; i < count; i++) {
        rfs_list_entry e;
        if (rfs_list_entry_next(&entries, &len, &e))
            return rfs_fail_cause(RFS_E_PROTO, "%s: malformed listing", label);
        char entry[RFS_MAX_NAME + 1];
        memcpy(entry, e.name.s, e.name.len);
        entry[e.name.len] = '\0';
        rfs_stat_info st = {.size = e.size, .mode = e.mode, .type = e.type, .mtime_ns = e.mtime_ns};
        if (fn(ctx, entry, &st))
            return 1;
    }
    return 0;
}

/* Hands one page's entries to fn. Returns 1 if fn asked to stop, 0 to go on, < 0 on error. */
static int list_page(meta *m, const rfs_rep *rep, rfs_list_fn fn, void *ctx)
{
    return rfs_list_entries_each(rep->u.list.entries, rep->u.list.entries_len, rep->u.list.count,
                                 fn, ctx, m->label);
}

int rfs_list(const char *name, const rfs_options *opts, rfs_list_fn fn, void *ctx)
{
    if (!fn)
        return rfs_fail(RFS_E_INVAL, "rfs_list: NULL callback");
    meta m;
    int rc = meta_begin(&m, name, opts);
    if (rc)
        return rc;
    uint32_t start = 0;
    for (;;) {
        rfs_req req;
        memset(&req, 0, sizeof req);
        req.op = RFS_OP_LIST;
        set_path(&req, m.name.path);
        req.u.list.start = start;
        rfs_call call;
        rc = meta_call(&m, &req, &call);
        uint32_t next = call.rep.u.list.next;
        if (!rc) {
            rc = list_page(&m, &call.rep, fn, ctx);
            if (rc == 0 && next != 0 && next <= start)
                rc = rfs_fail(RFS_E_PROTO, "%s: listing page at %u points back to %u", m.label,
                              start, next);
        }
        rfs_call_destroy(&call);
        if (rc || next == 0)
            break;
        start = next;
    }
    meta_end(&m);
    if (rc == 1)
        rc = RFS_OK;
    return rc;
}

/* One directory's entries, for the caller's tree function. */
typedef struct tree_block {
    rfs_list_tree_fn fn;
    void *ctx;
    char dir[RFS_MAX_PATH + 1];
} tree_block;

static int tree_entry(void *arg, const char *entry, const rfs_stat_info *st)
{
    tree_block *tb = arg;
    return tb->fn(tb->ctx, tb->dir, entry, st);
}

/* One LIST_TREE reply's blocks, each checked before its first entry is given. */
static int tree_deliver(meta *m, const rfs_rep *rep, rfs_list_tree_fn fn, void *ctx)
{
    const uint8_t *p = rep->data;
    size_t rem = rep->data_len;
    while (rem) {
        rfs_wpath rel;
        uint32_t count;
        const uint8_t *entries;
        size_t elen;
        if (rfs_ltree_block_next(&p, &rem, &rel, &count, &entries, &elen))
            return rfs_fail_cause(RFS_E_PROTO, "%s: malformed tree listing", m->label);
        tree_block tb = {.fn = fn, .ctx = ctx};
        memcpy(tb.dir, rel.s, rel.len);
        tb.dir[rel.len] = '\0';
        int rc = rfs_list_entries_each(entries, elen, count, tree_entry, &tb, m->label);
        if (rc)
            return rc;
        if (fn(ctx, tb.dir, NULL, NULL))
            return 1;
    }
    return 0;
}

int rfs_list_tree(const char *name, uint32_t max_bytes, rfs_list_tree_fn fn, void *ctx,
                  const rfs_options *opts)
{
    if (!fn)
        return rfs_fail(RFS_E_INVAL, "rfs_list_tree: NULL callback");
    meta m;
    int rc = meta_begin(&m, name, opts);
    if (rc)
        return rc;
    if (!(rfs_conn_features(m.conn) & RFS_FEAT_LTREE)) {
        rc = rfs_fail(RFS_E_UNSUPPORTED, "%s: the server cannot list a tree in one request",
                      m.label);
    } else {
        rfs_req req;
        memset(&req, 0, sizeof req);
        req.op = RFS_OP_LIST_TREE;
        set_path(&req, m.name.path);
        req.u.list.start = max_bytes;
        rfs_call call;
        if (!(rc = meta_call(&m, &req, &call)))
            rc = tree_deliver(&m, &call.rep, fn, ctx);
        rfs_call_destroy(&call);
    }
    meta_end(&m);
    return rc == 1 ? RFS_OK : rc;
}

int rfs_server_features(const char *name, const rfs_options *opts, unsigned *features)
{
    meta m;
    int rc = meta_begin(&m, name, opts);
    if (rc)
        return rc;
    *features = rfs_conn_features(m.conn);
    meta_end(&m);
    return RFS_OK;
}

int rfs_ping(const char *name, const rfs_options *opts, double *rtt_s)
{
    return rfs_ping_tcp(name, opts, rtt_s, NULL);
}

int rfs_ping_tcp(const char *name, const rfs_options *opts, double *rtt_s, rfs_tcp_info *tcp)
{
    meta m;
    int rc = meta_begin(&m, name, opts);
    if (rc)
        return rc;
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_PING;
    rfs_call call;
    int64_t t0 = rfs_now_ns();
    rc = meta_call(&m, &req, &call);
    int64_t ns = rfs_now_ns() - t0;
    rfs_call_destroy(&call);
    if (!rc && rtt_s)
        *rtt_s = (double)ns / 1e9;
    if (tcp) {
        /* The ping's outcome stands even if the kernel will not describe the socket. */
        rfs_tcp_state st;
        memset(tcp, 0, sizeof *tcp);
        tcp->slow_start_after_idle = -1;
        if (!rc && rfs_tcp_describe(m.conn->t, &st) == RFS_OK) {
            snprintf(tcp->congestion, sizeof tcp->congestion, "%s", st.congestion);
            tcp->slow_start_after_idle = st.slow_start_after_idle;
            tcp->restarts_after_idle = st.restarts_after_idle;
            tcp->rtt_ms = st.rtt_ms;
            tcp->cwnd_segments = st.cwnd_segments;
            tcp->mss = st.mss;
        } else if (!rc) {
            rfs_clear_error();
        }
    }
    meta_end(&m);
    return rc;
}
