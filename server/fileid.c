/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "fileid.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <time.h>

#include "common/debug.h"
#include "common/clock.h"
#include "common/err.h"
#include "rfs/rfs.h"
#include "server.h"

typedef struct counter {
    uint32_t key;
    uint64_t value;
} counter;
/* acct: the owner's connection's count of held locks (NULL: not counted) */
typedef struct range_lock {
    const void *owner;
    uint64_t start, end;
    uint32_t mode;
    atomic_uint *acct;
} range_lock;

struct rfsd_fileid {
    dev_t dev;
    ino_t ino;
    unsigned refs;            /* registry mutex */
    struct rfsd_fileid *next; /* registry bucket chain */
    int serial_writes;        /* set at creation; see rfsd_fileid_write_begin */
    pthread_mutex_t write_mu;
    pthread_rwlock_t write_rw; /* where writes run in parallel: see vwrite_begin */
    pthread_mutex_t mu;        /* guards everything below */
    pthread_cond_t cv;         /* signalled when locks are released */
    counter *counters;
    size_t ncounters, counters_cap;
    range_lock *locks;
    size_t nlocks, locks_cap;
};

#define NBUCKETS 256u
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static rfsd_fileid *buckets[NBUCKETS];
static atomic_int lock_waiters;
static int max_lock_waiters = 1;

void rfsd_lock_set_max_waiters(int n)
{
    max_lock_waiters = n < 1 ? 1 : n;
}

static unsigned bucket_of(dev_t dev, ino_t ino)
{
    uint64_t h = (uint64_t)dev * 0x9E3779B97F4A7C15ull ^ (uint64_t)ino;
    h ^= h >> 29;
    return (unsigned)(h % NBUCKETS);
}

/* File systems whose buffered writes take the inode lock exclusively (so serialising them in
 * user space loses no parallelism). */
static int writes_serialised_by_kernel(int fd)
{
    struct statfs sf;
    if (fstatfs(fd, &sf) != 0)
        return 0;
    switch ((unsigned long)sf.f_type) {
    case 0x01021994ul: /* tmpfs */
    case 0xEF53ul:     /* ext2/3/4 */
    case 0x58465342ul: /* XFS */
    case 0x9123683Eul: /* btrfs */ return 1;
    default: return 0;
    }
}

void rfsd_fileid_write_begin(rfsd_fileid *f)
{
    if (f->serial_writes)
        pthread_mutex_lock(&f->write_mu);
    else
        pthread_rwlock_rdlock(&f->write_rw);
}

void rfsd_fileid_write_end(rfsd_fileid *f)
{
    if (f->serial_writes)
        pthread_mutex_unlock(&f->write_mu);
    else
        pthread_rwlock_unlock(&f->write_rw);
}

void rfsd_fileid_vwrite_begin(rfsd_fileid *f)
{
    if (f->serial_writes)
        pthread_mutex_lock(&f->write_mu);
    else
        pthread_rwlock_wrlock(&f->write_rw);
}

void rfsd_fileid_vwrite_end(rfsd_fileid *f)
{
    rfsd_fileid_write_end(f);
}

rfsd_fileid *rfsd_fileid_get(dev_t dev, ino_t ino, int fd)
{
    unsigned b = bucket_of(dev, ino);
    pthread_mutex_lock(&reg_mu);
    rfsd_fileid *f;
    for (f = buckets[b]; f; f = f->next)
        if (f->dev == dev && f->ino == ino)
            break;
    if (!f) {
        f = calloc(1, sizeof *f);
        if (f) {
            f->dev = dev;
            f->ino = ino;
            f->serial_writes = writes_serialised_by_kernel(fd);
            pthread_mutex_init(&f->write_mu, NULL);
            pthread_rwlock_init(&f->write_rw, NULL);
            pthread_mutex_init(&f->mu, NULL);
            rfs_cond_init_monotonic(&f->cv);
            f->next = buckets[b];
            buckets[b] = f;
        }
    }
    if (f)
        RFS_REF_GET(f->refs);
    pthread_mutex_unlock(&reg_mu);
    return f;
}

void rfsd_fileid_put(rfsd_fileid *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&reg_mu);
    if (RFS_REF_PUT(f->refs) > 0) {
        pthread_mutex_unlock(&reg_mu);
        return;
    }
    unsigned b = bucket_of(f->dev, f->ino);
    for (rfsd_fileid **pp = &buckets[b]; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    pthread_mutex_unlock(&reg_mu);
    pthread_mutex_destroy(&f->write_mu);
    pthread_rwlock_destroy(&f->write_rw);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f->counters);
    free(f->locks);
    RFS_REF_DEAD(f->refs);
    free(f);
}

int rfsd_counter_op(rfsd_fileid *f, uint32_t key, int set, int64_t delta, int64_t *old)
{
    int rc = RFS_OK;
    pthread_mutex_lock(&f->mu);
    counter *c = NULL;
    for (size_t i = 0; i < f->ncounters; i++)
        if (f->counters[i].key == key) {
            c = &f->counters[i];
            break;
        }
    if (!c) {
        if (f->ncounters >= RFSD_MAX_COUNTERS_PER_FILE) {
            rc = rfs_fail(RFS_E_NOSPC, "too many counters on this file (limit %u)",
                          RFSD_MAX_COUNTERS_PER_FILE);
            goto out;
        }
        if (f->ncounters == f->counters_cap) {
            size_t cap = f->counters_cap ? 2 * f->counters_cap : 4;
            counter *n = realloc(f->counters, cap * sizeof *n);
            if (!n) {
                rc = rfs_fail(RFS_E_NOMEM, "out of memory for a counter");
                goto out;
            }
            f->counters = n;
            f->counters_cap = cap;
        }
        c = &f->counters[f->ncounters++];
        c->key = key;
        c->value = 0;
    }
    *old = (int64_t)c->value;
    /* unsigned arithmetic: wrap-around is defined, signed overflow would not be */
    c->value = set ? (uint64_t)delta : c->value + (uint64_t)delta;
out:
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static uint64_t range_end(uint64_t off, uint64_t len)
{
    if (len == 0 || off + len < off)
        return UINT64_MAX;
    return off + len;
}

static int conflicts(const rfsd_fileid *f, const void *owner, uint64_t start, uint64_t end,
                     uint32_t mode)
{
    for (size_t i = 0; i < f->nlocks; i++) {
        const range_lock *l = &f->locks[i];
        if (l->owner == owner || l->end <= start || end <= l->start)
            continue;
        if (mode == RFS_LOCK_EXCL || l->mode == RFS_LOCK_EXCL)
            return 1;
    }
    return 0;
}

static unsigned max_locks_per_acct = RFSD_MAX_LOCKS_PER_FILE;

void rfsd_lock_set_max_per_conn(unsigned n)
{
    max_locks_per_acct = n;
}

static int add_lock(rfsd_fileid *f, const void *owner, uint64_t start, uint64_t end, uint32_t mode,
                    atomic_uint *acct)
{
    if (f->nlocks >= RFSD_MAX_LOCKS_PER_FILE)
        return rfs_fail(RFS_E_NOSPC, "too many byte-range locks on this file (limit %u)",
                        RFSD_MAX_LOCKS_PER_FILE);
    /* below the per-file cap, so one client cannot take a file's whole lock table */
    if (acct && atomic_load(acct) >= max_locks_per_acct)
        return rfs_fail(RFS_E_NOSPC,
                        "too many byte-range locks held by this connection "
                        "(limit %u, rfsd --max-locks)",
                        max_locks_per_acct);
    if (f->nlocks == f->locks_cap) {
        size_t cap = f->locks_cap ? 2 * f->locks_cap : 4;
        range_lock *n = realloc(f->locks, cap * sizeof *n);
        if (!n)
            return rfs_fail(RFS_E_NOMEM, "out of memory for a lock");
        f->locks = n;
        f->locks_cap = cap;
    }
    f->locks[f->nlocks++] = (range_lock){owner, start, end, mode, acct};
    if (acct)
        atomic_fetch_add(acct, 1);
    return RFS_OK;
}

/* Removes lock i (caller holds f->mu). */
static range_lock drop_lock(rfsd_fileid *f, size_t i)
{
    RFS_ASSERT_HELD(&f->mu);
    range_lock l = f->locks[i];
    f->locks[i] = f->locks[--f->nlocks];
    if (l.acct)
        atomic_fetch_sub(l.acct, 1);
    return l;
}

int rfsd_lock(rfsd_fileid *f, const void *owner, uint64_t off, uint64_t len, uint32_t mode,
              uint32_t wait_ms, const atomic_int *cancelled, atomic_uint *acct)
{
    if (mode != RFS_LOCK_SHARED && mode != RFS_LOCK_EXCL)
        return rfs_fail(RFS_E_INVAL, "lock mode %u is neither shared (1) nor exclusive (2)", mode);
    if (wait_ms > RFSD_LOCK_WAIT_MAX_MS)
        wait_ms = RFSD_LOCK_WAIT_MAX_MS;
    uint64_t start = off, end = range_end(off, len);
    struct timespec deadline = rfs_deadline_ms(wait_ms);
    int rc, waiting = 0;
    pthread_mutex_lock(&f->mu);
    for (;;) {
        if (!conflicts(f, owner, start, end, mode)) {
            rc = add_lock(f, owner, start, end, mode, acct);
            break;
        }
        if (wait_ms == 0 || (cancelled && atomic_load(cancelled))) {
            rc = rfs_fail(RFS_E_BUSY, "byte range [%llu, +%llu) is locked by another client",
                          (unsigned long long)off, (unsigned long long)len);
            break;
        }
        if (!waiting) {
            if (atomic_fetch_add(&lock_waiters, 1) >= max_lock_waiters) {
                atomic_fetch_sub(&lock_waiters, 1);
                rc = rfs_fail(RFS_E_BUSY,
                              "byte range [%llu, +%llu) is locked by another client "
                              "and the server has too many lock waiters to wait",
                              (unsigned long long)off, (unsigned long long)len);
                break;
            }
            waiting = 1;
        }
        if (pthread_cond_timedwait(&f->cv, &f->mu, &deadline) == ETIMEDOUT &&
            conflicts(f, owner, start, end, mode)) {
            rc = rfs_fail(RFS_E_BUSY,
                          "byte range [%llu, +%llu) still locked by another client "
                          "after %u ms",
                          (unsigned long long)off, (unsigned long long)len, wait_ms);
            break;
        }
    }
    pthread_mutex_unlock(&f->mu);
    if (waiting)
        atomic_fetch_sub(&lock_waiters, 1);
    return rc;
}

int rfsd_unlock(rfsd_fileid *f, const void *owner, uint64_t off, uint64_t len)
{
    uint64_t start = off, end = range_end(off, len);
    int rc = RFS_OK;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->nlocks;) {
        range_lock l = f->locks[i];
        if (l.owner != owner || l.end <= start || end <= l.start) {
            i++;
            continue;
        }
        /* remove, then put back the parts outside [start, end) */
        drop_lock(f, i);
        if (l.start < start && (rc = add_lock(f, owner, l.start, start, l.mode, l.acct)))
            break;
        if (end < l.end && (rc = add_lock(f, owner, end, l.end, l.mode, l.acct)))
            break;
        /* re-added pieces are outside the range, so rescanning from i is safe */
    }
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return rc;
}

void rfsd_unlock_all(rfsd_fileid *f, const void *owner)
{
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->nlocks;) {
        if (f->locks[i].owner == owner)
            drop_lock(f, i);
        else
            i++;
    }
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

void rfsd_fileid_wake_all(void)
{
    pthread_mutex_lock(&reg_mu);
    for (unsigned b = 0; b < NBUCKETS; b++)
        for (rfsd_fileid *f = buckets[b]; f; f = f->next) {
            pthread_mutex_lock(&f->mu);
            pthread_cond_broadcast(&f->cv);
            pthread_mutex_unlock(&f->mu);
        }
    pthread_mutex_unlock(&reg_mu);
}
