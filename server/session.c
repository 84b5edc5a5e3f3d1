/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Sessions, leases and fencing (docs/reliability.md "Write fencing").
 *
 * A client names each connection with a random session id (SESSION, right after AUTH). When it
 * loses a connection and makes a new one, it names the old session to fence: the old
 * connection is shut down, whatever it had in flight finishes, its handles and locks are
 * released, and only then does the reply come back. Frames of the old connection still in the
 * network are never applied after that, so the client can safely replay its unacknowledged
 * writes on the new connection.
 *
 * A client that disappears without reconnecting (a partition, a dead node) is ended by its
 * lease: a connection silent for lease_ms is closed (SO_RCVTIMEO), and clients ping at a
 * quarter of it. Before that, a second session opening the same file for writing waits while
 * a writer of that file has been silent for more than half the lease: such a writer is either
 * about to speak again or about to expire, and its late frames must not land on data the new
 * session was told is safe. */
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/debug.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"

void rfsd_session_heard(rfsd_conn *c)
{
    atomic_store_explicit(&c->last_rx_ns, rfs_now_ns(), memory_order_relaxed);
}

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

void rfsd_boot_id(uint8_t out[RFS_SESSION_LEN])
{
    memset(out, 0, RFS_SESSION_LEN);
    char text[64] = "";
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return; /* all zero: "unknown", clients then cannot tell a reboot and say so */
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return;
    unsigned k = 0;
    for (ssize_t i = 0; i + 1 < n && k < RFS_SESSION_LEN; i++) {
        int hi = hexval(text[i]), lo = hexval(text[i + 1]);
        if (hi < 0 || lo < 0)
            continue;
        out[k++] = (uint8_t)(hi << 4 | lo);
        i++;
    }
}

static int is_zero(const uint8_t *p)
{
    for (unsigned i = 0; i < RFS_SESSION_LEN; i++)
        if (p[i])
            return 0;
    return 1;
}

/* The live connection with session id, or NULL (caller holds srv->mu). */
static rfsd_conn *find_locked(rfsd_server *srv, const uint8_t *id, const rfsd_conn *except)
{
    RFS_ASSERT_HELD(&srv->mu);
    for (rfsd_conn *o = srv->conns; o; o = o->next)
        if (o != except && o->has_session && memcmp(o->session, id, RFS_SESSION_LEN) == 0)
            return o;
    return NULL;
}

/* Ends the session and waits until its connection is gone (handles and locks released).
 * Returns 1 if a session was fenced, 0 if none was live, or an rfs_err when it did not end
 * within the bound. */
static int fence(rfsd_conn *self, const uint8_t *id)
{
    rfsd_server *srv = self->srv;
    int64_t until = rfs_now_ns() + (int64_t)RFSD_FENCE_WAIT_MS * 1000000;
    int found = 0;
    pthread_mutex_lock(&srv->mu);
    rfsd_conn *o = find_locked(srv, id, self);
    if (o) {
        found = 1;
        RFS_LOGI("%s: fencing the client's previous session from %s", self->peer, o->peer);
        rfsd_conn_fence(o);
    }
    while ((o = find_locked(srv, id, self))) {
        int64_t left = until - rfs_now_ns();
        if (left <= 0) {
            pthread_mutex_unlock(&srv->mu);
            return rfs_fail(RFS_E_BUSY, "the previous session (from %s) did not end within %d ms",
                            o->peer, RFSD_FENCE_WAIT_MS);
        }
        struct timespec ts = rfs_deadline_at(rfs_now_ns() + (left < 100000000 ? left : 100000000));
        pthread_cond_timedwait(&srv->conns_cv, &srv->mu, &ts);
    }
    pthread_mutex_unlock(&srv->mu);
    return found;
}

int rfsd_session_request(rfsd_conn *c, const rfs_req *req)
{
    const uint8_t *id = req->u.session.id;
    if (is_zero(id)) {
        rfsd_conn_send_error(c, req->op, req->id, rfs_fail(RFS_E_INVAL, "SESSION: empty id"));
        return 0;
    }
    rfsd_server *srv = c->srv;
    pthread_mutex_lock(&srv->mu);
    int clash = c->has_session ? memcmp(c->session, id, RFS_SESSION_LEN) != 0
                               : find_locked(srv, id, c) != NULL;
    if (!clash && !c->has_session) {
        memcpy(c->session, id, RFS_SESSION_LEN);
        c->has_session = 1;
    }
    pthread_mutex_unlock(&srv->mu);
    if (clash) {
        rfsd_conn_send_error(c, req->op, req->id,
                             rfs_fail(RFS_E_INVAL, "SESSION: this connection has another session "
                                                   "id, or the id is in use"));
        return 0;
    }
    int fenced = 0;
    if (!is_zero(req->u.session.fence) && memcmp(req->u.session.fence, id, RFS_SESSION_LEN) != 0) {
        fenced = fence(c, req->u.session.fence);
        if (fenced < 0) {
            rfsd_conn_send_error(c, req->op, req->id, fenced);
            return 0;
        }
    }
    rfs_rep rep = {.op = RFS_OP_SESSION, .id = req->id};
    rep.u.session.lease_ms = (uint32_t)srv->cfg.lease_ms;
    rep.u.session.fenced = fenced ? 1 : 0;
    memcpy(rep.u.session.boot, srv->boot_id, RFS_SESSION_LEN);
    rfsd_conn_send(c, &rep);
    return 0;
}

/* 1 if another connection has fid open for writing and has been silent for more than half
 * the lease (caller holds srv->mu; each connection's table is read under its own mutex). */
static int silent_writer_locked(rfsd_conn *self, const rfsd_fileid *fid, int64_t now, char *who,
                                size_t cap)
{
    RFS_ASSERT_HELD(&self->srv->mu);
    rfsd_server *srv = self->srv;
    int64_t quiet = (int64_t)srv->cfg.lease_ms * 1000000 / 2;
    for (rfsd_conn *o = srv->conns; o; o = o->next) {
        if (o == self || atomic_load(&o->closing))
            continue;
        if (now - atomic_load_explicit(&o->last_rx_ns, memory_order_relaxed) <= quiet)
            continue;
        int writes = 0;
        pthread_mutex_lock(&o->mu);
        for (unsigned i = 0; i < RFSD_MAX_HANDLES && !writes; i++) {
            const rfsd_handle *h = o->slots[i];
            writes = h && !h->closed && h->fid == fid && (h->flags & RFS_O_ACCMODE) != RFS_O_RDONLY;
        }
        pthread_mutex_unlock(&o->mu);
        if (writes) {
            snprintf(who, cap, "%s", o->peer);
            return 1;
        }
    }
    return 0;
}

void rfsd_session_wait_silent_writers(rfsd_conn *c, const rfsd_fileid *fid, const char *path)
{
    rfsd_server *srv = c->srv;
    char who[80];
    int logged = 0;
    pthread_mutex_lock(&srv->mu);
    /* Bounded: a silent connection either speaks (and stops being silent) or reaches its lease
     * and is closed, which removes it from the list; either way this loop ends within a lease. */
    while (silent_writer_locked(c, fid, rfs_now_ns(), who, sizeof who) && !srv->stopping &&
           !atomic_load(&c->closing)) {
        if (!logged) {
            RFS_LOGI("%s: open of %s waits for %s, a silent writer of that file, to speak or to "
                     "reach its lease",
                     c->peer, path, who);
            logged = 1;
        }
        struct timespec ts = rfs_deadline_ms(100);
        pthread_cond_timedwait(&srv->conns_cv, &srv->mu, &ts);
    }
    pthread_mutex_unlock(&srv->mu);
}
