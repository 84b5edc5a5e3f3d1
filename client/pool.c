/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Connection pool: files (and path calls) to the same server with the same token share
 * connections. A file asking for k streams gets k distinct connections, reusing live ones
 * first. Connections are reference counted; a dead connection is never handed out again (its
 * users keep it until they close).
 *
 * When the last user lets go, a live connection lingers in the pool for RFS_CONN_LINGER_MS
 * (default 30 s; 0 closes at once), so the next file opened on that server - an application
 * writing one file per checkpoint, say - skips the three round trips of TCP + HELLO + AUTH and
 * inherits a congestion window that already fits the path instead of starting slow start
 * again (on a 50 ms path that is 150 ms plus several round trips of ramp-up per file). The
 * window survives the pause only with bbr or net.ipv4.tcp_slow_start_after_idle=0; otherwise
 * the kernel restarts slow start after any idle period longer than the RTO (docs/tuning.md).
 * Lingering connections that expired or died are closed by the next pool call.
 *
 * A shared connection keeps the options of whoever opened it (frame size, socket buffers). */
#include "client/client.h"

#include "common/debug.h"
#include "common/err.h"
#include "common/log.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_LINGER_MS 30000

static int64_t linger_ns(void)
{
    const char *e = getenv("RFS_CONN_LINGER_MS");
    long ms = DEFAULT_LINGER_MS;
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end == '\0' && v >= 0 && v <= 24L * 3600 * 1000)
            ms = v;
    }
    return (int64_t)ms * 1000000;
}

/* Unlinks idle connections that died or outlived the linger time (all: every idle one;
 * caller holds rt->pool_lock); returns them chained through pool_next, to be freed outside
 * the lock. */
static rfs_conn *take_stale_locked(rfs_runtime *rt, int all)
{
    RFS_ASSERT_HELD(&rt->pool_lock);
    int64_t now = rfs_now_ns(), linger = linger_ns();
    rfs_conn *stale = NULL;
    for (rfs_conn **pp = &rt->pool_head; *pp;) {
        rfs_conn *c = *pp;
        if (c->refs == 0 && (all || now - c->idle_since_ns >= linger || rfs_conn_is_dead(c))) {
            *pp = c->pool_next;
            c->pool_next = stale;
            stale = c;
        } else {
            pp = &c->pool_next;
        }
    }
    return stale;
}

static void free_chain(rfs_conn *c)
{
    while (c) {
        rfs_conn *next = c->pool_next;
        rfs_conn_free(c);
        c = next;
    }
}

static int same_key(const rfs_conn *c, const rfs_name *n, const rfs_copts *o)
{
    /* a name that asks for TLS never gets a plaintext connection (nor the other way round) */
    return c->port == n->port && strcmp(c->host, n->host) == 0 && c->tls == (n->tls || o->tls) &&
           c->ucx == (n->ucx || o->ucx) && c->has_token == o->has_token &&
           (!o->has_token || strcmp(c->token, o->token) == 0);
}

/* One connection being opened, possibly on a helper thread (the error message is
 * thread-local, so it is copied out here). */
typedef struct dial {
    const rfs_name *n;
    const rfs_copts *o;
    rfs_conn *c;
    rfs_status st; /* this dial's outcome, read by the caller's thread */
} dial;

static void *dial_main(void *arg)
{
    dial *d = arg;
    rfs_copts o = *d->o;
    o.tls |= d->n->tls; /* an rfss: name */
    o.ucx |= d->n->ucx; /* an rfs+ucx: name */
    int rc = rfs_conn_open(d->n->host, d->n->port, &o, &d->c);
    explicit_bzero(o.token, sizeof o.token);
    d->st.rc = RFS_OK;
    rfs_status_first(&d->st, rc);
    return NULL;
}

/* A connection just dialled joins the pool (in use by its dialler: one reference). */
static void pool_adopt(rfs_runtime *rt, rfs_conn *c)
{
    pthread_mutex_lock(&rt->pool_lock);
    rfs_conn **tail = &rt->pool_head;
    while (*tail)
        tail = &(*tail)->pool_next;
    c->pool_next = NULL;
    c->rt = rt;
    *tail = c;
    pthread_mutex_unlock(&rt->pool_lock);
}

/* Takes live pooled connections first, then dials the missing ones side by side. With
 * `some`, the connections that could be had are kept (*got says how many) and a failure is
 * returned only when there are none; otherwise it is all or nothing. */
static int pool_get(const rfs_name *n, const rfs_copts *o, int count, rfs_conn **out,
                    const char *label, int some, int *got_out)
{
    int got = 0;
    rfs_runtime *rt = o->rt;
    pthread_mutex_lock(&rt->pool_lock);
    rfs_conn *stale = take_stale_locked(rt, 0);
    for (rfs_conn *c = rt->pool_head; c && got < count; c = c->pool_next) {
        if (same_key(c, n, o) && !rfs_conn_is_dead(c)) {
            RFS_REF_GET(c->refs);
            out[got++] = c;
        }
    }
    pthread_mutex_unlock(&rt->pool_lock);
    free_chain(stale);

    /* Connect outside the lock: a slow server must not stall files on other servers. The
     * missing connections are opened side by side: each costs three round trips (TCP, HELLO,
     * AUTH), which on a 50 ms path would otherwise add up to 150 ms per stream. */
    int need = count - got;
    *got_out = got;
    if (need <= 0)
        return RFS_OK;
    dial d[RFS_CLIENT_MAX_STREAMS];
    rfs_task th[RFS_CLIENT_MAX_STREAMS];
    int spawned[RFS_CLIENT_MAX_STREAMS] = {0};
    for (int i = 0; i < need; i++) {
        d[i].n = n;
        d[i].o = o;
        d[i].c = NULL;
        d[i].st.rc = RFS_OK;
    }
    for (int i = 1; i < need; i++)
        spawned[i] = rfs_task_start(rt, &th[i], dial_main, &d[i]) == 0;
    dial_main(&d[0]);
    for (int i = 1; i < need; i++) {
        if (spawned[i])
            rfs_task_join(&th[i]);
        else
            dial_main(&d[i]); /* no thread: connect here, just slower */
    }
    int first_err = -1;
    for (int i = 0; i < need; i++) {
        if (d[i].st.rc) {
            if (first_err < 0)
                first_err = i;
            continue;
        }
        pool_adopt(rt, d[i].c);
        out[got++] = d[i].c;
    }
    *got_out = got;
    if (first_err >= 0 && (!some || got == 0)) {
        while (got > 0)
            rfs_pool_put(out[--got]);
        *got_out = 0;
        return rfs_fail(d[first_err].st.rc, "%s: %s", label, d[first_err].st.msg);
    }
    if (first_err >= 0) /* kept what could be had; the reason goes to the caller's log */
        rfs_fail(d[first_err].st.rc, "%s: %s", label, d[first_err].st.msg);
    return RFS_OK;
}

int rfs_pool_get(const rfs_name *n, const rfs_copts *o, int count, rfs_conn **out,
                 const char *label)
{
    int got;
    return pool_get(n, o, count, out, label, 0, &got);
}

int rfs_pool_get_some(const rfs_name *n, const rfs_copts *o, int count, rfs_conn **out,
                      const char *label, int *got)
{
    return pool_get(n, o, count, out, label, 1, got);
}

void rfs_pool_hold(rfs_conn *c)
{
    pthread_mutex_lock(&c->rt->pool_lock);
    RFS_REF_GET(c->refs);
    pthread_mutex_unlock(&c->rt->pool_lock);
}

void rfs_pool_put(rfs_conn *c)
{
    if (!c)
        return;
    rfs_runtime *rt = c->rt;
    pthread_mutex_lock(&rt->pool_lock);
    if (RFS_REF_PUT(c->refs) == 0)
        c->idle_since_ns = rfs_now_ns(); /* lingers; take_stale_locked closes it in time */
    rfs_conn *stale = take_stale_locked(rt, 0);
    pthread_mutex_unlock(&rt->pool_lock);
    free_chain(stale);
}

void rfs_pool_close_all(rfs_runtime *rt)
{
    pthread_mutex_lock(&rt->pool_lock);
    rfs_conn *idle = take_stale_locked(rt, 1);
    pthread_mutex_unlock(&rt->pool_lock);
    free_chain(idle);
}

int rfs_pool_get_retry(const rfs_name *n, const rfs_copts *o, int count, rfs_conn **out,
                       const char *label)
{
    int64_t deadline = rfs_now_ns() + (int64_t)o->retry_timeout_ms * 1000000;
    int delay = 50;
    for (;;) {
        int rc = rfs_pool_get(n, o, count, out, label);
        if (rc != RFS_E_CONN && rc != RFS_E_TIMEOUT)
            return rc;
        if (rfs_now_ns() + (int64_t)delay * 1000000 > deadline)
            return rc;
        struct timespec ts = {.tv_sec = delay / 1000, .tv_nsec = (long)(delay % 1000) * 1000000};
        nanosleep(&ts, NULL);
        delay = delay * 2 > 2000 ? 2000 : delay * 2;
    }
}

/* The first connection's dial, on a worker: it tells the gate its round trip as soon as its
 * transport is up, and that it ended (it may have found a pooled connection and dialled none). */
typedef struct first_dial {
    const rfs_name *n;
    rfs_copts o;
    const char *label;
    rfs_conn *c;
    rfs_status st;
} first_dial;

static void *first_dial_main(void *arg)
{
    first_dial *d = arg;
    int rc = rfs_pool_get_retry(d->n, &d->o, 1, &d->c, d->label);
    d->st.rc = RFS_OK;
    rfs_status_first(&d->st, rc);
    rfs_gate_tell_done(d->o.gate_tell);
    return NULL;
}

static int clamp_streams(int k)
{
    return k < 1 ? 1 : k > RFS_CLIENT_MAX_STREAMS ? RFS_CLIENT_MAX_STREAMS : k;
}

/* The speculative dials of rfs_pool_get_auto_spec, each on a worker. */
typedef struct spec_dials {
    const rfs_name *n;
    rfs_copts o;
    int count, spawned[RFS_CLIENT_MAX_STREAMS];
    dial d[RFS_CLIENT_MAX_STREAMS];
    rfs_task th[RFS_CLIENT_MAX_STREAMS];
} spec_dials;

static void spec_start(spec_dials *s, const rfs_name *n, const rfs_copts *o, rfs_dial_gate *gate,
                       int mark_extra, int count)
{
    s->n = n;
    s->o = *o;
    s->o.gate_tell = NULL;
    s->o.gate_wait = mark_extra ? gate : NULL;
    s->o.gate_admit = gate;
    s->o.extra_stream = 0;
    s->count = count;
    for (int i = 0; i < count; i++) {
        s->d[i] = (dial){.n = n, .o = &s->o, .st.rc = RFS_OK};
        s->spawned[i] = rfs_task_start(o->rt, &s->th[i], dial_main, &s->d[i]) == 0;
    }
}

/* Joins them; those that were wanted and got through their handshake go to out, and the first
 * failure's message to why (when it is still empty). */
static int spec_end(spec_dials *s, rfs_conn **out, char *why, size_t why_cap)
{
    int got = 0;
    for (int i = 0; i < s->count; i++) {
        if (!s->spawned[i])
            continue;
        rfs_task_join(&s->th[i]);
        if (s->d[i].c) {
            pool_adopt(s->o.rt, s->d[i].c);
            out[got++] = s->d[i].c;
        } else if (s->d[i].st.rc && !why[0]) {
            snprintf(why, why_cap, ": %s", s->d[i].st.msg);
        }
    }
    explicit_bzero(s->o.token, sizeof s->o.token);
    return got;
}

int rfs_pool_get_auto(const rfs_name *n, const rfs_copts *o, int (*decide)(double, void *),
                      void *ctx, int mark_extra, rfs_conn **out, int *got, const char *label)
{
    return rfs_pool_get_auto_spec(n, o, decide, ctx, mark_extra, 0, out, got, label);
}

int rfs_pool_get_auto_spec(const rfs_name *n, const rfs_copts *o, int (*decide)(double, void *),
                           void *ctx, int mark_extra, int speculate, rfs_conn **out, int *got,
                           const char *label)
{
    *got = 0;
    rfs_dial_gate gate;
    rfs_gate_init(&gate);
    first_dial d = {.n = n, .o = *o, .label = label};
    d.o.gate_tell = &gate;
    d.o.gate_wait = NULL;
    d.o.gate_admit = NULL;
    d.o.extra_stream = 0;
    rfs_task th;
    int spawned = rfs_task_start(o->rt, &th, first_dial_main, &d) == 0;
    if (!spawned)
        first_dial_main(&d);
    /* Only beside a dial of its own: a pooled first connection ends the wait at once. */
    spec_dials *spec = NULL;
    int nspec = speculate > 1 ? clamp_streams(speculate) - 1 : 0;
    if (nspec && (spec = malloc(sizeof *spec)))
        spec_start(spec, n, o, &gate, mark_extra, nspec);
    double rtt = rfs_gate_wait_rtt(&gate);
    int early = rtt >= 0; /* known before the first connection's handshake ended */
    int k = early ? clamp_streams(decide(rtt, ctx)) : 1;
    int kept = spec ? (k - 1 < nspec ? k - 1 : nspec) : 0;
    rfs_gate_decide(&gate, kept);
    int extras = 0;
    char why[RFS_ERRMSG_MAX] = "";
    rfs_copts xo = *o;
    xo.gate_tell = NULL;
    xo.gate_wait = mark_extra ? &gate : NULL;
    xo.gate_admit = NULL;
    xo.extra_stream = 0;
    if (early && k - 1 > kept) {
        /* dialled beside the first one's handshake; their HELLO waits for its reply */
        rfs_clear_error();
        if (rfs_pool_get_some(n, &xo, k - 1 - kept, out + 1, label, &extras) != RFS_OK)
            extras = 0;
        if (extras < k - 1 - kept)
            snprintf(why, sizeof why, ": %s", rfs_last_error());
        rfs_clear_error();
    }
    if (spec) {
        rfs_conn *sc[RFS_CLIENT_MAX_STREAMS];
        int sgot = spec_end(spec, sc, why, sizeof why);
        free(spec);
        memcpy(out + 1 + extras, sc, (size_t)sgot * sizeof *sc);
        extras += sgot;
    }
    if (early && extras < k - 1)
        RFS_LOGI("%s: streams auto: %d of %d streams%s", label, extras + 1, k, why);
    if (spawned)
        rfs_task_join(&th);
    explicit_bzero(d.o.token, sizeof d.o.token);
    rfs_gate_destroy(&gate);
    xo.gate_wait = NULL;
    if (d.st.rc || early) {
        explicit_bzero(xo.token, sizeof xo.token);
        if (!d.st.rc) {
            out[0] = d.c;
            *got = 1 + extras;
            return RFS_OK;
        }
        while (extras > 0)
            rfs_pool_put(out[extras--]);
        return rfs_status_raise(&d.st);
    }
    out[0] = d.c;
    *got = 1;
    /* A pooled connection answered at once (or no round trip could be read while dialling):
     * decide from it, as it is live, and take the others from the pool or dial them. */
    k = clamp_streams(decide(rfs_conn_rtt_ms(d.c), ctx));
    if (k <= 1) {
        explicit_bzero(xo.token, sizeof xo.token);
        return RFS_OK;
    }
    rfs_conn *all[RFS_CLIENT_MAX_STREAMS];
    int have = 0;
    xo.extra_stream = mark_extra && (d.c->features & RFS_FEAT_XSTREAM) != 0;
    rfs_clear_error();
    if (rfs_pool_get_some(n, &xo, k, all, label, &have) == RFS_OK) {
        if (have < k)
            RFS_LOGI("%s: streams auto: %d of %d streams: %s", label, have, k, rfs_last_error());
        rfs_pool_put(d.c);
        memcpy(out, all, (size_t)have * sizeof *all);
        *got = have;
    } else {
        RFS_LOGI("%s: streams auto: staying with one stream: %s", label, rfs_last_error());
    }
    rfs_clear_error();
    explicit_bzero(xo.token, sizeof xo.token);
    return RFS_OK;
}

int rfs_pool_warm_auto(const char *name, const rfs_options *opts, int (*decide)(double, void *),
                       void *ctx, int speculate, int *count)
{
    *count = 0;
    rfs_name n;
    int rc = rfs_parse_name(name, &n);
    if (rc)
        return rc;
    char label[300];
    rfs_name_label(&n, label, sizeof label);
    rfs_copts o;
    if ((rc = rfs_copts_resolve(opts, label, &o)))
        return rc;
    rfs_conn *c[RFS_CLIENT_MAX_STREAMS];
    int got = 0;
    rc = rfs_pool_get_auto_spec(&n, &o, decide, ctx, 0, speculate, c, &got, label);
    explicit_bzero(o.token, sizeof o.token);
    *count = got;
    while (got > 0)
        rfs_pool_put(c[--got]); /* they linger for the transfer that follows */
    return rc;
}
