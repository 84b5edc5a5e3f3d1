/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Whole small files in one request each (WRITE_FILE, READ_FILE), many in flight on one
 * connection: a directory of thousands of small files is bound by the link's rate and the
 * server's disk, not by round trips (an open, write, sync, rename and close per file, one
 * after another, cost seven round trips each). */
#include "client/client.h"

#include "common/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* In flight at once per connection: enough to cover a long link's round trip with small
 * files, bounded in bytes so the server's per-connection budget (64 MiB) is not the one
 * refusing work. */
#define WF_WINDOW 64
#define WF_WINDOW_BYTES ((size_t)32 << 20)
/* Connections a batch spreads over on a long link (rfs_streams, auto: this many when the round
 * trip is long). One connection's rate is its socket buffer per round trip (4 MiB / 50 ms =
 * 80 MB/s on a stock host): a 1 Gbit/s link needs several, as large files do. */
#define WF_MAX_CONNS 4
/* Room in a frame for the fixed fields and a path of the longest length. */
#define WF_OVERHEAD (RFS_HDR_SIZE + 10 + 4096)

size_t rfs_write_file_max(const char *name, const rfs_options *opts)
{
    (void)name;
    (void)opts;
    /* What every server accepts: the default frame (a client may negotiate more). */
    return RFS_FRAME_DEFAULT - WF_OVERHEAD;
}

typedef struct slot {
    rfs_call call;
    rfs_req req;
    size_t item;
} slot;

/* One batch: items are WRITE_FILE or READ_FILE requests; the caller's arrays describe them. */
typedef struct batch {
    int reading;
    rfs_write_item *w;
    rfs_read_item *r;
    const char **mk; /* MKDIR batch: these paths (rfs_mkdir_many) */
    int *mk_results;
    unsigned mk_mode;
    size_t n;
    uint32_t wflags;
    char server[300];
    pthread_mutex_t mu; /* first, next (connections share the batch) */
    size_t next;        /* the next item to send, over all connections */
    rfs_status first;   /* the first item that failed */
} batch;

static const char *item_path(const batch *b, size_t i)
{
    return b->mk ? b->mk[i] : b->reading ? b->r[i].path : b->w[i].path;
}

static size_t item_bytes(const batch *b, size_t i)
{
    return b->mk ? 0 : b->reading ? b->r[i].cap : b->w[i].len;
}

static void set_result(batch *b, size_t i, int rc, const char *msg)
{
    if (b->mk)
        b->mk_results[i] = rc;
    else if (b->reading)
        b->r[i].result = rc;
    else
        b->w[i].result = rc;
    pthread_mutex_lock(&b->mu);
    if (rc && !b->first.rc) {
        b->first.rc = rc;
        snprintf(b->first.msg, sizeof b->first.msg, "%s", msg);
    }
    pthread_mutex_unlock(&b->mu);
}

/* The next item for a connection to send, or b->n when none is left. */
static size_t take_next(batch *b)
{
    pthread_mutex_lock(&b->mu);
    size_t i = b->next < b->n ? b->next++ : b->n;
    pthread_mutex_unlock(&b->mu);
    return i;
}

/* Checks item i and fills the request; RFS_OK, or an error already recorded for it. */
static int prepare(batch *b, size_t i, size_t max, slot *s)
{
    const char *path = item_path(b, i);
    size_t plen = path ? strlen(path) : 0, bytes = item_bytes(b, i);
    int bad = !path || path[0] != '/' || plen > 4095 ||
              (!b->mk && !b->reading && b->w[i].len && !b->w[i].data) ||
              (!b->mk && b->reading && b->r[i].cap && !b->r[i].data);
    if (bad || bytes > max) {
        int rc = rfs_fail(bad ? RFS_E_INVAL : RFS_E_TOOBIG, "rfs:%s:%s: %s", b->server,
                          path ? path : "(null)",
                          bad ? "needs an absolute path and its buffer"
                              : "too big for one request: use rfs_open");
        set_result(b, i, rc, rfs_last_error());
        return rc;
    }
    memset(&s->req, 0, sizeof s->req);
    rfs_wpath wp = {path, (uint16_t)plen};
    if (b->mk) {
        s->req.op = RFS_OP_MKDIR;
        s->req.u.mkdir.path = wp;
        s->req.u.mkdir.mode = b->mk_mode;
        rfs_call_init(&s->call);
    } else if (b->reading) {
        s->req.op = RFS_OP_READ_FILE;
        s->req.u.read_file.path = wp;
        s->req.u.read_file.max = (uint32_t)b->r[i].cap;
        rfs_call_init(&s->call);
        s->call.dst = b->r[i].data;
        s->call.dst_cap = b->r[i].cap;
    } else {
        s->req.op = RFS_OP_WRITE_FILE;
        s->req.u.write_file.path = wp;
        s->req.u.write_file.flags = b->wflags;
        s->req.u.write_file.mode = b->w[i].mode & 07777;
        s->req.data = b->w[i].data;
        s->req.data_len = (uint32_t)b->w[i].len;
        rfs_call_init(&s->call);
    }
    s->item = i;
    return RFS_OK;
}

static void finish(rfs_conn *c, batch *b, slot *s)
{
    char label[RFS_CLIENT_LABEL_MAX + 8];
    snprintf(label, sizeof label, "rfs:%s:%s", b->server, item_path(b, s->item));
    int rc = rfs_call_result(c, &s->call, rfs_conn_wait(c, &s->call), label);
    if (!rc && b->reading && !b->mk)
        b->r[s->item].len = s->call.data_len;
    set_result(b, s->item, rc, rc ? rfs_last_error() : "");
    rfs_call_destroy(&s->call);
}

/* One connection's share of a batch: items taken in turn from the shared cursor, up to a
 * window of them in flight. */
typedef struct lane {
    batch *b;
    rfs_conn *c;
    const rfs_copts *o;
    const char *label;
    rfs_task th;
    rfs_status st; /* the lane's own failure (in its thread's message otherwise) */
} lane;

static void *run_lane(void *arg)
{
    lane *l = arg;
    batch *b = l->b;
    rfs_conn *c = l->c;
    size_t max = rfs_conn_max_frame(c) > WF_OVERHEAD ? rfs_conn_max_frame(c) - WF_OVERHEAD : 0;
    slot *slots = calloc(WF_WINDOW, sizeof *slots);
    /* one decision state per lane: its files are alike more often than not */
    rfs_zstate *z = l->o->zmode == RFS_Z_NONE ? NULL : rfs_zstate_new(l->o->zmode, l->o->zlevel);
    if (!slots || (l->o->zmode != RFS_Z_NONE && !z)) {
        free(slots);
        rfs_zstate_free(z);
        rfs_status_save(&l->st, rfs_fail(RFS_E_NOMEM, "whole-file batch: out of memory"));
        return NULL;
    }
    size_t inflight_bytes = 0, oldest = 0, active = 0;
    size_t held = b->n; /* an item taken but not yet sent (the window had no bytes for it) */
    for (;;) {
        /* Start while the window has room (a free slot, and bytes for this item). */
        while (active < WF_WINDOW && !rfs_conn_is_dead(c)) {
            size_t i = held < b->n ? held : take_next(b);
            held = b->n;
            if (i >= b->n)
                break;
            if (active && inflight_bytes + item_bytes(b, i) > WF_WINDOW_BYTES) {
                held = i;
                break;
            }
            slot *s = &slots[(oldest + active) % WF_WINDOW];
            if (prepare(b, i, max, s))
                continue;
            rfs_packed pk = {0};
            if (s->req.op == RFS_OP_WRITE_FILE)
                rfs_zpack(z, c, s->req.data, s->req.data_len, &pk);
            int rc = rfs_conn_start_packed(c, &s->call, &s->req, NULL, l->o->io_timeout_ms, &pk);
            if (rc) {
                rfs_fail_cause(rc, "rfs:%s:%s", b->server, item_path(b, i));
                set_result(b, i, rc, rfs_last_error());
                rfs_call_destroy(&s->call);
                continue;
            }
            inflight_bytes += item_bytes(b, i);
            active++;
        }
        if (!active)
            break;
        /* Waiting for the oldest keeps the window simple; the others complete meanwhile. */
        slot *s = &slots[oldest];
        inflight_bytes -= item_bytes(b, s->item);
        finish(c, b, s);
        oldest = (oldest + 1) % WF_WINDOW;
        active--;
    }
    if (held < b->n) { /* this connection died with an item in hand */
        char msg[RFS_ERRMSG_MAX];
        snprintf(msg, sizeof msg, "%s: connection lost before this file was sent", l->label);
        set_result(b, held, RFS_E_CONN, msg);
    }
    free(slots);
    rfs_zstate_free(z);
    return NULL;
}

static int run_batch(const char *server_name, batch *b, const rfs_options *opts)
{
    rfs_name name;
    int rc = rfs_parse_name(server_name, &name);
    if (rc)
        return rc;
    char label[RFS_CLIENT_LABEL_MAX];
    rfs_name_label(&name, label, sizeof label);
    snprintf(b->server, sizeof b->server, strchr(name.host, ':') ? "[%s]:%u" : "%s:%u", name.host,
             (unsigned)name.port);
    rfs_copts o;
    if ((rc = rfs_copts_resolve(opts, label, &o)))
        return rc;
    rfs_conn *conns[WF_MAX_CONNS];
    rc = rfs_pool_get_retry(&name, &o, 1, conns, label);
    if (rc) {
        explicit_bzero(o.token, sizeof o.token);
        return rc;
    }
    /* More connections only when the batch is worth it and the link is long (as a file's
     * streams: rfs_streams, or auto by the round trip). */
    int want = o.streams_auto ? rfs_auto_wants_streams(conns[0], label, WF_MAX_CONNS)
                              : (o.streams < WF_MAX_CONNS ? o.streams : WF_MAX_CONNS);
    if (b->n < (size_t)want * WF_WINDOW / 4)
        want = 1;
    int nconn = 1;
    if (want > 1) {
        rfs_pool_put(conns[0]);
        if (rfs_pool_get_retry(&name, &o, want, conns, label) == RFS_OK)
            nconn = want;
        else if ((rc = rfs_pool_get_retry(&name, &o, 1, conns, label))) {
            explicit_bzero(o.token, sizeof o.token);
            return rc;
        }
    }
    pthread_mutex_init(&b->mu, NULL);
    for (size_t i = 0; i < b->n; i++)
        set_result(b, i, RFS_E_IO, ""); /* until its reply says otherwise */
    b->first.rc = RFS_OK;
    b->next = 0;
    lane lanes[WF_MAX_CONNS];
    int started = 0;
    for (int k = 0; k < nconn; k++) {
        lanes[k] = (lane){.b = b, .c = conns[k], .o = &o, .label = label};
        if (k > 0 && rfs_task_start(o.rt, &lanes[k].th, run_lane, &lanes[k]) != 0)
            break; /* the lanes started take every item anyway */
        started++;
    }
    run_lane(&lanes[0]);
    for (int k = 1; k < started; k++)
        rfs_task_join(&lanes[k].th);
    for (size_t i; (i = take_next(b)) < b->n;) { /* left unsent when the connections died */
        char msg[RFS_ERRMSG_MAX];
        snprintf(msg, sizeof msg, "%s: connection lost before this file was sent", label);
        set_result(b, i, RFS_E_CONN, msg);
    }
    for (int k = 0; k < nconn; k++)
        rfs_pool_put(conns[k]);
    explicit_bzero(o.token, sizeof o.token);
    pthread_mutex_destroy(&b->mu);
    if (b->first.rc)
        return rfs_status_raise(&b->first);
    for (int k = 0; k < started; k++)
        if (lanes[k].st.rc)
            return rfs_status_raise(&lanes[k].st);
    return RFS_OK;
}

int rfs_write_files(const char *server_name, rfs_write_item *items, size_t n, unsigned flags,
                    const rfs_options *opts)
{
    if (!server_name || (n && !items))
        return rfs_fail(RFS_E_INVAL, "rfs_write_files: NULL argument");
    if (flags & ~(RFS_WRITE_EXCL | RFS_WRITE_SYNC))
        return rfs_fail(RFS_E_INVAL, "rfs_write_files: unknown flags 0x%x", flags);
    batch b = {.w = items, .n = n};
    b.wflags =
        (flags & RFS_WRITE_EXCL ? RFS_WF_EXCL : 0) | (flags & RFS_WRITE_SYNC ? RFS_WF_SYNC : 0);
    return run_batch(server_name, &b, opts);
}

int rfs_read_files(const char *server_name, rfs_read_item *items, size_t n, const rfs_options *opts)
{
    if (!server_name || (n && !items))
        return rfs_fail(RFS_E_INVAL, "rfs_read_files: NULL argument");
    batch b = {.reading = 1, .r = items, .n = n};
    return run_batch(server_name, &b, opts);
}

int rfs_mkdir_many(const char *server_name, const char **paths, int *results, size_t n,
                   unsigned mode, const rfs_options *opts)
{
    if (!server_name || (n && (!paths || !results)))
        return rfs_fail(RFS_E_INVAL, "rfs_mkdir_many: NULL argument");
    if (mode & ~(07777u | RFS_MKDIR_PARENTS))
        return rfs_fail(RFS_E_INVAL, "rfs_mkdir_many: bad mode 0%o", mode);
    batch b = {.reading = 1, .mk = paths, .mk_results = results, .mk_mode = mode, .n = n};
    return run_batch(server_name, &b, opts);
}

int rfs_write_file(const char *name, const void *data, size_t len, unsigned mode, unsigned flags,
                   const rfs_options *opts)
{
    rfs_name n;
    int rc = name ? rfs_parse_name(name, &n) : rfs_fail(RFS_E_INVAL, "NULL rfs name");
    if (rc)
        return rc;
    rfs_write_item it = {.path = n.path, .data = data, .len = len, .mode = mode};
    return rfs_write_files(name, &it, 1, flags, opts);
}
