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
/* Connections a batch spreads over on a long link (rfs_streams auto: WF_AUTO_CONNS when the
 * round trip is long; asked for: up to WF_MAX_CONNS, as `rfs cp -r` does). One connection's rate
 * is its socket buffer per round trip (4 MiB / 50 ms = 80 MB/s on a stock host): a 1 Gbit/s link
 * needs several, as large files do. */
#define WF_AUTO_CONNS 4
#define WF_MAX_CONNS 16
/* Room in a frame for the fixed fields and a path of the longest length. */
#define WF_OVERHEAD (RFS_HDR_SIZE + 10 + 4096)

size_t rfs_write_file_max(const char *name, const rfs_options *opts)
{
    (void)name;
    (void)opts;
    /* What every server accepts: the default frame (a client may negotiate more). */
    return RFS_FRAME_DEFAULT - WF_OVERHEAD;
}

typedef enum wf_kind { WF_WRITE, WF_READ, WF_MKDIR, WF_LIST } wf_kind;

/* One item of a batch: an element of the caller's arrays, or an item from its feed. */
typedef struct wf_item {
    size_t index;      /* position in the caller's arrays (MKDIR, LIST, array mode) */
    rfs_write_item *w; /* WF_WRITE */
    rfs_read_item *r;  /* WF_READ */
} wf_item;

typedef struct slot {
    rfs_call call;
    rfs_req req;
    wf_item item;
} slot;

/* One batch: the items come from the caller's arrays, or from its feed as it produces them. */
typedef struct batch {
    wf_kind kind;
    rfs_write_item *w;
    rfs_read_item *r;
    const char **paths; /* MKDIR and LIST */
    int *results;
    unsigned mk_mode;
    rfs_list_many_fn list_fn;
    void *list_ctx;
    const rfs_files_feed *feed;
    size_t n; /* array mode: the items; fed: SIZE_MAX */
    uint32_t wflags;
    char server[300];
    pthread_mutex_t mu; /* first, next (connections share the batch) */
    size_t next;        /* array mode: the next item to send, over all connections */
    rfs_status first;   /* the first item that failed */
} batch;

static const char *item_path(const batch *b, const wf_item *it)
{
    return b->kind == WF_WRITE  ? it->w->path
           : b->kind == WF_READ ? it->r->path
                                : b->paths[it->index];
}

static size_t item_bytes(const batch *b, const wf_item *it)
{
    return b->kind == WF_WRITE ? it->w->len : b->kind == WF_READ ? it->r->cap : 0;
}

static void set_result(batch *b, const wf_item *it, int rc, const char *msg)
{
    if (b->kind == WF_WRITE)
        it->w->result = rc;
    else if (b->kind == WF_READ)
        it->r->result = rc;
    else
        b->results[it->index] = rc;
    if (!rc)
        return;
    pthread_mutex_lock(&b->mu);
    if (!b->first.rc) {
        b->first.rc = rc;
        snprintf(b->first.msg, sizeof b->first.msg, "%s", msg);
    }
    pthread_mutex_unlock(&b->mu);
}

/* The item is the caller's again. */
static void item_done(batch *b, const wf_item *it)
{
    if (b->kind == WF_LIST)
        b->list_fn(b->list_ctx, it->index, NULL, NULL); /* "this listing has ended" */
    else if (b->feed)
        b->feed->done(b->feed->ctx, b->kind == WF_WRITE ? (void *)it->w : (void *)it->r);
}

/* The next item for a connection to send: 1, or 0 when none is ready yet (only if !wait: a
 * fed batch whose caller has not produced it), or -1 when there are no more. A fed item is
 * taken without the batch's lock: the caller's next may wait for room that only items
 * finishing on other connections make. */
static int take_next(batch *b, int wait, wf_item *it)
{
    memset(it, 0, sizeof *it);
    if (b->feed) {
        void *p = NULL;
        int got = b->feed->next(b->feed->ctx, wait, &p);
        if (got <= 0)
            return got;
        if (b->kind == WF_WRITE)
            it->w = p;
        else
            it->r = p;
    } else {
        pthread_mutex_lock(&b->mu);
        size_t i = b->next < b->n ? b->next++ : b->n;
        pthread_mutex_unlock(&b->mu);
        if (i >= b->n)
            return -1;
        it->index = i;
        if (b->kind == WF_WRITE)
            it->w = &b->w[i];
        else if (b->kind == WF_READ)
            it->r = &b->r[i];
    }
    /* Failed until its reply says otherwise; not the batch's first failure (set_result would
     * make it one, and every batch would then return RFS_E_IO with no message). */
    if (b->kind == WF_WRITE)
        it->w->result = RFS_E_IO;
    else if (b->kind == WF_READ)
        it->r->result = RFS_E_IO;
    else
        b->results[it->index] = RFS_E_IO;
    return 1;
}

/* Fails an item that never went out, and gives it back. */
static void item_unsent(batch *b, const wf_item *it, int rc, const char *why)
{
    char msg[RFS_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "rfs:%s:%s: %s", b->server, item_path(b, it), why);
    set_result(b, it, rc, msg);
    item_done(b, it);
}

/* Checks the item and fills the request; RFS_OK, or an error already recorded for it. */
static int prepare(batch *b, const wf_item *it, size_t max, slot *s)
{
    const char *path = item_path(b, it);
    size_t plen = path ? strlen(path) : 0, bytes = item_bytes(b, it);
    int bad = !path || path[0] != '/' || plen > 4095 ||
              (b->kind == WF_WRITE && it->w->len && !it->w->data) ||
              (b->kind == WF_READ && it->r->cap && !it->r->data);
    if (bad || bytes > max) {
        int rc = rfs_fail(bad ? RFS_E_INVAL : RFS_E_TOOBIG, "rfs:%s:%s: %s", b->server,
                          path ? path : "(null)",
                          bad ? "needs an absolute path and its buffer"
                              : "too big for one request: use rfs_open");
        set_result(b, it, rc, rfs_last_error());
        item_done(b, it);
        return rc;
    }
    memset(&s->req, 0, sizeof s->req);
    rfs_call_init(&s->call);
    rfs_wpath wp = {path, (uint16_t)plen};
    switch (b->kind) {
    case WF_MKDIR:
        s->req.op = RFS_OP_MKDIR;
        s->req.u.mkdir.path = wp;
        s->req.u.mkdir.mode = b->mk_mode;
        break;
    case WF_LIST:
        s->req.op = RFS_OP_LIST;
        s->req.u.list.path = wp;
        break;
    case WF_READ:
        s->req.op = RFS_OP_READ_FILE;
        s->req.u.read_file.path = wp;
        s->req.u.read_file.max = (uint32_t)it->r->cap;
        s->call.dst = it->r->data;
        s->call.dst_cap = it->r->cap;
        break;
    case WF_WRITE:
        s->req.op = RFS_OP_WRITE_FILE;
        s->req.u.write_file.path = wp;
        s->req.u.write_file.flags = b->wflags;
        s->req.u.write_file.mode = it->w->mode & 07777;
        s->req.data = it->w->data;
        s->req.data_len = (uint32_t)it->w->len;
        break;
    }
    s->item = *it;
    return RFS_OK;
}

/* Directory i's entries, for the batch's list function. */
typedef struct list_dir {
    batch *b;
    size_t i;
} list_dir;

static int list_entry(void *arg, const char *entry, const rfs_stat_info *st)
{
    list_dir *ld = arg;
    return ld->b->list_fn(ld->b->list_ctx, ld->i, entry, st);
}

/* Hands a LIST reply's entries to the caller's function; 1 if it asked to stop. */
static int list_deliver(batch *b, size_t i, const rfs_rep *rep, const char *label)
{
    list_dir ld = {b, i};
    return rfs_list_entries_each(rep->u.list.entries, rep->u.list.entries_len, rep->u.list.count,
                                 list_entry, &ld, label);
}

/* The rest of a listing longer than one reply, page by page on this connection (rare: a
 * page holds hundreds of entries). */
static int list_rest(rfs_conn *c, batch *b, const slot *s, uint32_t start, int timeout_ms,
                     const char *label)
{
    while (start) {
        rfs_req req = s->req;
        req.u.list.start = start;
        rfs_call call;
        rfs_call_init(&call);
        int rc = rfs_conn_call(c, &call, &req, timeout_ms, label);
        uint32_t next = call.rep.u.list.next;
        if (!rc && (rc = list_deliver(b, s->item.index, &call.rep, label)) == 0 && next &&
            next <= start)
            rc = rfs_fail(RFS_E_PROTO, "%s: listing page at %u points back to %u", label, start,
                          next);
        rfs_call_destroy(&call);
        if (rc)
            return rc == 1 ? RFS_OK : rc;
        start = next;
    }
    return RFS_OK;
}

static void finish(rfs_conn *c, batch *b, slot *s, int timeout_ms)
{
    char label[RFS_CLIENT_LABEL_MAX + 8];
    snprintf(label, sizeof label, "rfs:%s:%s", b->server, item_path(b, &s->item));
    int rc = rfs_call_result(c, &s->call, rfs_conn_wait(c, &s->call), label);
    if (!rc && b->kind == WF_READ)
        s->item.r->len = s->call.data_len;
    if (!rc && b->kind == WF_LIST) {
        uint32_t next = s->call.rep.u.list.next;
        rc = list_deliver(b, s->item.index, &s->call.rep, label);
        rc = rc == 1 ? RFS_OK : rc ? rc : list_rest(c, b, s, next, timeout_ms, label);
    }
    set_result(b, &s->item, rc, rc ? rfs_last_error() : "");
    rfs_call_destroy(&s->call);
    item_done(b, &s->item);
}

/* One connection's share of a batch: items taken in turn from the shared source, up to a
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
    wf_item held; /* an item taken but not yet sent (the window had no bytes for it) */
    int have_held = 0, ended = 0;
    for (;;) {
        /* Start while the window has room (a free slot, and bytes for this item); wait for the
         * caller's next item only with nothing in flight. */
        while (!ended && active < WF_WINDOW && !rfs_conn_is_dead(c)) {
            wf_item it;
            if (have_held) {
                it = held;
                have_held = 0;
            } else {
                int got = take_next(b, active == 0, &it);
                if (got < 0)
                    ended = 1;
                if (got <= 0)
                    break;
            }
            if (active && inflight_bytes + item_bytes(b, &it) > WF_WINDOW_BYTES) {
                held = it;
                have_held = 1;
                break;
            }
            slot *s = &slots[(oldest + active) % WF_WINDOW];
            if (prepare(b, &it, max, s))
                continue;
            rfs_packed pk = {0};
            if (s->req.op == RFS_OP_WRITE_FILE)
                rfs_zpack(z, c, s->req.data, s->req.data_len, &pk);
            int rc = rfs_conn_start_packed(c, &s->call, &s->req, NULL, l->o->io_timeout_ms, &pk);
            if (rc) {
                rfs_fail_cause(rc, "rfs:%s:%s", b->server, item_path(b, &it));
                set_result(b, &it, rc, rfs_last_error());
                rfs_call_destroy(&s->call);
                item_done(b, &it);
                continue;
            }
            inflight_bytes += item_bytes(b, &it);
            active++;
        }
        if (!active)
            break; /* no more items, or the connection died */
        /* Waiting for the oldest keeps the window simple; the others complete meanwhile. */
        slot *s = &slots[oldest];
        inflight_bytes -= item_bytes(b, &s->item);
        finish(c, b, s, l->o->io_timeout_ms);
        oldest = (oldest + 1) % WF_WINDOW;
        active--;
    }
    if (have_held) /* this connection died with an item in hand */
        item_unsent(b, &held, RFS_E_CONN, "connection lost before this file was sent");
    free(slots);
    rfs_zstate_free(z);
    return NULL;
}

/* Items no connection will send (every one died, or none could be made): failed with rc. */
static void drain(batch *b, int rc, const char *why)
{
    wf_item it;
    while (take_next(b, 1, &it) > 0)
        item_unsent(b, &it, rc, why);
}

static int run_batch(const char *server_name, batch *b, const rfs_options *opts)
{
    pthread_mutex_init(&b->mu, NULL);
    b->first.rc = RFS_OK;
    b->next = 0;
    rfs_name name;
    int rc = rfs_parse_name(server_name, &name);
    char label[RFS_CLIENT_LABEL_MAX];
    rfs_copts o;
    rfs_conn *conns[WF_MAX_CONNS];
    if (!rc) {
        rfs_name_label(&name, label, sizeof label);
        snprintf(b->server, sizeof b->server, strchr(name.host, ':') ? "[%s]:%u" : "%s:%u",
                 name.host, (unsigned)name.port);
        if (!(rc = rfs_copts_resolve(opts, label, &o)) &&
            (rc = rfs_pool_get_retry(&name, &o, 1, conns, label)))
            explicit_bzero(o.token, sizeof o.token);
    }
    if (!rc && (b->wflags & RFS_WF_PARENTS) && !(rfs_conn_features(conns[0]) & RFS_FEAT_WPARENTS)) {
        rfs_pool_put(conns[0]);
        explicit_bzero(o.token, sizeof o.token);
        rc = rfs_fail(RFS_E_UNSUPPORTED,
                      "rfs:%s: the server cannot make parent directories with a whole-file "
                      "write (an older rfsd)",
                      b->server);
    }
    if (rc) { /* a fed batch's caller waits for its items to come back */
        char why[RFS_ERRMSG_MAX];
        snprintf(why, sizeof why, "%s", rfs_last_error());
        drain(b, rc, why);
        pthread_mutex_destroy(&b->mu);
        return rfs_fail(rc, "%s", why);
    }
    /* More connections only when the batch is worth it and the link is long (as a file's
     * streams: rfs_streams, or auto by the round trip). */
    int want = o.streams_auto ? rfs_auto_wants_streams(conns[0], label, WF_AUTO_CONNS)
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
            char why[RFS_ERRMSG_MAX];
            snprintf(why, sizeof why, "%s", rfs_last_error());
            drain(b, rc, why);
            pthread_mutex_destroy(&b->mu);
            return rfs_fail(rc, "%s", why);
        }
    }
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
    drain(b, RFS_E_CONN, "connection lost before this file was sent");
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

#define WRITE_FLAGS (RFS_WRITE_EXCL | RFS_WRITE_SYNC | RFS_WRITE_PARENTS)

static uint32_t write_flags(unsigned flags)
{
    return (flags & RFS_WRITE_EXCL ? RFS_WF_EXCL : 0) | (flags & RFS_WRITE_SYNC ? RFS_WF_SYNC : 0) |
           (flags & RFS_WRITE_PARENTS ? RFS_WF_PARENTS : 0);
}

int rfs_write_files(const char *server_name, rfs_write_item *items, size_t n, unsigned flags,
                    const rfs_options *opts)
{
    if (!server_name || (n && !items))
        return rfs_fail(RFS_E_INVAL, "rfs_write_files: NULL argument");
    if (flags & ~WRITE_FLAGS)
        return rfs_fail(RFS_E_INVAL, "rfs_write_files: unknown flags 0x%x", flags);
    batch b = {.kind = WF_WRITE, .w = items, .n = n, .wflags = write_flags(flags)};
    return run_batch(server_name, &b, opts);
}

int rfs_write_files_fed(const char *server_name, const rfs_files_feed *feed, unsigned flags,
                        const rfs_options *opts)
{
    if (!server_name || !feed || !feed->next || !feed->done)
        return rfs_fail(RFS_E_INVAL, "rfs_write_files_fed: NULL argument");
    if (flags & ~WRITE_FLAGS)
        return rfs_fail(RFS_E_INVAL, "rfs_write_files_fed: unknown flags 0x%x", flags);
    batch b = {.kind = WF_WRITE, .feed = feed, .n = SIZE_MAX, .wflags = write_flags(flags)};
    return run_batch(server_name, &b, opts);
}

int rfs_read_files(const char *server_name, rfs_read_item *items, size_t n, const rfs_options *opts)
{
    if (!server_name || (n && !items))
        return rfs_fail(RFS_E_INVAL, "rfs_read_files: NULL argument");
    batch b = {.kind = WF_READ, .r = items, .n = n};
    return run_batch(server_name, &b, opts);
}

int rfs_read_files_fed(const char *server_name, const rfs_files_feed *feed, const rfs_options *opts)
{
    if (!server_name || !feed || !feed->next || !feed->done)
        return rfs_fail(RFS_E_INVAL, "rfs_read_files_fed: NULL argument");
    batch b = {.kind = WF_READ, .feed = feed, .n = SIZE_MAX};
    return run_batch(server_name, &b, opts);
}

int rfs_mkdir_many(const char *server_name, const char **paths, int *results, size_t n,
                   unsigned mode, const rfs_options *opts)
{
    if (!server_name || (n && (!paths || !results)))
        return rfs_fail(RFS_E_INVAL, "rfs_mkdir_many: NULL argument");
    if (mode & ~(07777u | RFS_MKDIR_PARENTS))
        return rfs_fail(RFS_E_INVAL, "rfs_mkdir_many: bad mode 0%o", mode);
    batch b = {.kind = WF_MKDIR, .paths = paths, .results = results, .mk_mode = mode, .n = n};
    return run_batch(server_name, &b, opts);
}

int rfs_list_many(const char *server_name, const char **paths, int *results, size_t n,
                  rfs_list_many_fn fn, void *ctx, const rfs_options *opts)
{
    if (!server_name || !fn || (n && (!paths || !results)))
        return rfs_fail(RFS_E_INVAL, "rfs_list_many: NULL argument");
    batch b = {.kind = WF_LIST,
               .paths = paths,
               .results = results,
               .list_fn = fn,
               .list_ctx = ctx,
               .n = n};
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
