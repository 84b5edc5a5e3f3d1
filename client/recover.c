/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Transparent recovery of a file whose connections were lost (docs/reliability.md).
 *
 * Every public operation on a file runs as an attempt (rfs_attempt_*): it holds the file's
 * recovery lock for reading, so any number of threads can use the file at once. When an
 * attempt fails because a connection died (the server restarted, the link was cut or went
 * silent past io_timeout), the file is recovered under the lock held for writing, with
 * backoff, for at most the retry timeout:
 *  1. new connections (pool), and on them SESSION fences every old session: the server ends
 *     the old connection and finishes what it had in flight before it answers, so nothing the
 *     old connection carried can land after what follows;
 *  2. the file is opened again on every stream (never with CREAT/EXCL/TRUNC: it exists, and
 *     what was written must stay), its views are set again and its locks taken again;
 *  3. writes of the write window whose replies were lost are sent again, in their order;
 * then the operation is run again from its start. Writes are idempotent (the same bytes to
 * the same place), so running one again is safe once the old session is fenced. An operation
 * that is not (a shared-counter fetch-and-add) is not run again: the file is recovered and
 * the operation reports that its outcome is unknown.
 *
 * A server whose host rebooted (its boot id changed) lost its page cache: writes since the
 * last successful sync may be gone, so the next sync (or close) fails and says so. */
#include "client/cap.h"
#include "client/client.h"

#include "common/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BACKOFF_FIRST_MS 50
#define BACKOFF_MAX_MS 2000
/* After a recovery gave up, later calls on the file fail at once for this long after each
 * failed try, then try once. Trying once per call cost a whole connect timeout per call on a
 * silent link: an ABT sync waiting for N queued writes waited N connect timeouts (the WAN link
 * cut: a 3-minute cut outlasted the documented bound). */
#define RETRY_AFTER_GIVING_UP_MS 2000

/* A connection died of the network or the server (not of a protocol or token error), or the
 * window holds writes to send again. */
static int lost_conn(rfs_file *f)
{
    for (int s = 0; s < f->nconn; s++)
        if (rfs_conn_lost(f->conn[s]) || f->stale[s])
            return 1;
    return 0;
}

static void nap_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* The file is opened again on stream s (it exists: no create, no truncate). */
static int reopen(rfs_file *f, int s)
{
    return rfs_file_open_stream(f, s, f->flags & ~(RFS_O_CREAT | RFS_O_EXCL | RFS_O_TRUNC), 0);
}

static int restore_views(rfs_file *f, int s)
{
    for (uint32_t v = 0; v < RFS_MAX_VIEWS; v++) {
        if (!f->saved_views[v].enc)
            continue;
        rfs_call call;
        rfs_call_init(&call);
        rfs_req req;
        memset(&req, 0, sizeof req);
        req.op = RFS_OP_SET_VIEW;
        req.u.set_view.fh = f->fh[s];
        req.u.set_view.view_id = v;
        req.u.set_view.disp = f->saved_views[v].disp;
        req.data = f->saved_views[v].enc;
        req.data_len = (uint32_t)f->saved_views[v].len;
        int rc = rfs_conn_call(f->conn[s], &call, &req, f->io_timeout_ms, f->label);
        rfs_call_destroy(&call);
        if (rc)
            return rc;
    }
    return RFS_OK;
}

/* Locks live on stream 0's handle. */
static int restore_locks(rfs_file *f)
{
    for (size_t i = 0; i < f->nlocks; i++) {
        rfs_call call;
        rfs_call_init(&call);
        rfs_req req;
        memset(&req, 0, sizeof req);
        req.op = RFS_OP_LOCK;
        req.u.lock.fh = f->fh[0];
        req.u.lock.off = f->locks[i].off;
        req.u.lock.len = f->locks[i].len;
        req.u.lock.mode = f->locks[i].mode;
        req.u.lock.wait_ms = 0;
        int rc = rfs_conn_call(f->conn[0], &call, &req, f->io_timeout_ms, f->label);
        rfs_call_destroy(&call);
        if (rc)
            return rc;
    }
    return RFS_OK;
}

/* Stream s's connection is lost: a new one replaces it, and on it SESSION ends the old
 * session before anything else is sent. Live streams (maybe shared with other files through
 * the pool) are left alone. */
static int replace_conn(rfs_file *f, int s)
{
    uint8_t old[RFS_SESSION_LEN], boot[RFS_SESSION_LEN];
    memcpy(old, f->conn[s]->session, RFS_SESSION_LEN);
    rfs_conn *fresh;
    /* a lease of a capability (a logical file's object) may be past its window for new
     * connections: a fresh one from the home server first */
    int rc = rfs_cap_lease_renew(&f->copts);
    if (rc)
        return rc;
    rc = rfs_pool_get(&f->name, &f->copts, 1, &fresh, f->label);
    if (rc)
        return rc;
    rfs_conn_untrack(f->conn[s], f->fh[s], &f->ver);
    rfs_pool_put(f->conn[s]);
    f->conn[s] = fresh;
    f->stale[s] = 1;
    if ((rc = rfs_conn_fence(fresh, old, f->io_timeout_ms, boot)))
        return rfs_fail_cause(rc, "%s: ending the lost connection's session", f->label);
    if (f->boot_known && memcmp(boot, f->boot, RFS_SESSION_LEN) != 0 &&
        atomic_load(&f->writes) != atomic_load(&f->synced))
        atomic_store(&f->lost_unsynced, 1);
    memcpy(f->boot, boot, RFS_SESSION_LEN);
    f->boot_known = 1;
    return RFS_OK;
}

static int restore_stream(rfs_file *f, int s)
{
    int rc = reopen(f, s);
    if (!rc)
        rc = restore_views(f, s);
    if (!rc && s == 0)
        rc = restore_locks(f);
    if (!rc)
        f->stale[s] = 0;
    return rc;
}

static int recover_once(rfs_file *f)
{
    rfs_file_settle_view(f, -1); /* calls on the old connections: their outcome is moot */
    rfs_wwin_wait(f);            /* and the window's: the lost ones wait to be sent again */
    for (int s = 0; s < f->nconn; s++) {
        int rc = RFS_OK;
        if (rfs_conn_is_dead(f->conn[s]))
            rc = replace_conn(f, s);
        if (!rc && f->stale[s])
            rc = restore_stream(f, s);
        if (rc)
            return rc;
    }
    return rfs_wwin_replay(f);
}

/* Errors that another attempt cannot fix: the file is gone, access was refused, ... */
static int worth_retrying(int rc)
{
    return rc == RFS_E_CONN || rc == RFS_E_TIMEOUT || rc == RFS_E_BUSY;
}

int rfs_file_recover(rfs_file *f, unsigned gen, int64_t deadline_ns)
{
    pthread_rwlock_wrlock(&f->rw);
    if (f->gen != gen) { /* another thread recovered the file meanwhile */
        pthread_rwlock_unlock(&f->rw);
        return RFS_OK;
    }
    /* After a recovery that ran out of time, later operations try once each instead of
     * waiting the whole timeout again, and not even that within RETRY_AFTER_GIVING_UP_MS of
     * the last failed try: a dead server or a silent link costs one timeout, not one per call. */
    if (f->gave_up) {
        int64_t now = rfs_now_ns();
        if (now < f->next_try_ns) {
            rfs_status was = f->gave_up_why; /* f's may change once unlocked */
            pthread_rwlock_unlock(&f->rw);
            return rfs_fail(
                was.rc,
                "%s: connection lost and not restored (the last try failed "
                "%lld ms ago; the next comes after %d ms): %s",
                f->label,
                (long long)((now - (f->next_try_ns - (int64_t)RETRY_AFTER_GIVING_UP_MS * 1000000)) /
                            1000000),
                RETRY_AFTER_GIVING_UP_MS, was.msg);
        }
        deadline_ns = now;
    }
    int delay = BACKOFF_FIRST_MS, tries = 0, rc;
    rfs_status cause = {RFS_OK, ""};
    for (;;) {
        tries++;
        rc = recover_once(f);
        if (!rc)
            break;
        rfs_status_save(&cause, rc);
        if (!worth_retrying(rc) || rfs_now_ns() + (int64_t)delay * 1000000 > deadline_ns)
            break;
        nap_ms(delay);
        delay = delay * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : delay * 2;
    }
    f->gave_up = rc != RFS_OK;
    if (rc) {
        f->gave_up_why = cause;
        f->next_try_ns = rfs_now_ns() + (int64_t)RETRY_AFTER_GIVING_UP_MS * 1000000;
    }
    if (!rc) {
        f->gen++;
        f->recoveries++;
        if (rfs_stats_enabled())
            fprintf(stderr, "rfs stats %s: connection restored (recovery %u, %d attempt%s)\n",
                    f->label, f->recoveries, tries, tries == 1 ? "" : "s");
    }
    pthread_rwlock_unlock(&f->rw);
    if (rc)
        return rfs_fail(rc,
                        "%s: connection lost and not restored within the retry timeout of "
                        "%d ms (%d attempt%s); last error: %s",
                        f->label, f->retry_ms, tries, tries == 1 ? "" : "s", cause.msg);
    return RFS_OK;
}

unsigned rfs_attempt_how(uint16_t op)
{
    return (rfs_op_has(op, RFS_OPF_IDEMPOTENT) ? RFS_ATTEMPT_RETRY : 0) |
           (rfs_op_has(op, RFS_OPF_MUTATES) ? RFS_ATTEMPT_WRITES : 0);
}

void rfs_attempt_begin(rfs_file *f, rfs_attempt *a, unsigned how)
{
    a->how = how;
    a->deadline_ns = 0;
    pthread_rwlock_rdlock(&f->rw);
    a->gen = f->gen;
}

int rfs_attempt_again(rfs_file *f, rfs_attempt *a, int *rc)
{
    int lost = *rc && f->retry_ms > 0 && lost_conn(f);
    if (!*rc && (a->how & RFS_ATTEMPT_WRITES))
        atomic_fetch_add(&f->writes, 1);
    pthread_rwlock_unlock(&f->rw);
    if (!lost)
        return 0;
    rfs_status cause; /* the operation's failure, past the recovery */
    rfs_status_save(&cause, *rc);
    if (!a->deadline_ns)
        a->deadline_ns = rfs_now_ns() + (int64_t)f->retry_ms * 1000000;
    int rrc = rfs_file_recover(f, a->gen, a->deadline_ns);
    if (rrc) {
        *rc = rrc;
        return 0;
    }
    if (!(a->how & RFS_ATTEMPT_RETRY)) {
        *rc = rfs_fail(*rc,
                       "%s (the connection was restored, but this operation is not "
                       "repeated: its outcome on the server is unknown)",
                       cause.msg);
        return 0;
    }
    pthread_rwlock_rdlock(&f->rw);
    a->gen = f->gen;
    return 1;
}
