/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Per-export byte quotas: the usage counter, the accounted size of each open file, and the
 * name operations that free or replace files. See quota.h for what is counted and when. */
#include "quota.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "common/debug.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"

struct rfsd_qfile {
    rfsd_quota *q;
    dev_t dev;
    ino_t ino;
    unsigned refs; /* q->mu */
    uint64_t size; /* accounted size (q->mu) */
    int gone;      /* its name was deleted or replaced: no longer counted */
    rfsd_qfile *next;
};

struct rfsd_quota {
    char name[80];
    uint64_t limit;
    /* One mutex per export for the counter and its open files: every critical section is a
     * few arithmetic operations (or one ftruncate/fallocate), never a data write. */
    pthread_mutex_t mu;
    uint64_t used;
    rfsd_qfile *files;
};

static int over(const rfsd_quota *q, uint64_t grow, const char *shown, const char *what)
{
    uint64_t left = q->used < q->limit ? q->limit - q->used : 0;
    return rfs_fail(RFS_E_DQUOT,
                    "%s: %s needs %llu more bytes but export %s has %llu of its "
                    "quota of %llu bytes left (nothing of this request was written)",
                    shown, what, (unsigned long long)grow, q->name, (unsigned long long)left,
                    (unsigned long long)q->limit);
}

/* Admits grow bytes (caller holds q->mu). */
static int admit(rfsd_quota *q, uint64_t grow, const char *shown, const char *what)
{
    RFS_ASSERT_HELD(&q->mu);
    if (grow > q->limit || q->used > q->limit - grow)
        return over(q, grow, shown, what);
    q->used += grow;
    return RFS_OK;
}

static void release(rfsd_quota *q, uint64_t n)
{
    q->used = q->used > n ? q->used - n : 0;
}

/* ---- the scan at start ---- */

static _Thread_local uint64_t scan_bytes, scan_files;

static int count_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
    (void)path;
    (void)f;
    if (type == FTW_F && S_ISREG(st->st_mode)) {
        scan_bytes += (uint64_t)st->st_size;
        scan_files++;
    }
    return 0;
}

rfsd_quota *rfsd_quota_start(const char *name, const char *dir, uint64_t limit)
{
    rfsd_quota *q = calloc(1, sizeof *q);
    if (!q) {
        fprintf(stderr, "rfsd: out of memory\n");
        return NULL;
    }
    snprintf(q->name, sizeof q->name, "%s", name);
    q->limit = limit;
    pthread_mutex_init(&q->mu, NULL);
    int64_t t0 = rfs_now_ns();
    scan_bytes = scan_files = 0;
    /* FTW_PHYS: links are not followed, so nothing outside the export is counted */
    if (nftw(dir, count_one, 64, FTW_PHYS) != 0) {
        fprintf(stderr, "rfsd: export %s: counting the bytes beneath %s for its quota: %s\n", name,
                dir, strerror(errno));
        free(q);
        return NULL;
    }
    q->used = scan_bytes;
    RFS_LOGI("export %s: %llu bytes in %llu files of its quota of %llu (counted in %lld ms)%s",
             name, (unsigned long long)q->used, (unsigned long long)scan_files,
             (unsigned long long)limit, (long long)((rfs_now_ns() - t0) / 1000000),
             q->used > limit ? ": over its quota, only deletes and shrinks will succeed" : "");
    return q;
}

uint64_t rfsd_quota_used(const rfsd_quota *q)
{
    pthread_mutex_t *mu = (pthread_mutex_t *)&q->mu;
    pthread_mutex_lock(mu);
    uint64_t u = q->used;
    pthread_mutex_unlock(mu);
    return u;
}

uint64_t rfsd_quota_limit(const rfsd_quota *q)
{
    return q->limit;
}

void rfsd_quota_statfs(rfsd_quota *q, uint64_t *total, uint64_t *free_bytes, uint64_t *avail)
{
    pthread_mutex_lock(&q->mu);
    uint64_t left = q->used < q->limit ? q->limit - q->used : 0;
    pthread_mutex_unlock(&q->mu);
    if (*total > q->limit)
        *total = q->limit;
    if (*free_bytes > left)
        *free_bytes = left;
    if (*avail > left)
        *avail = left;
}

/* ---- open files ---- */

rfsd_qfile *rfsd_quota_file_get(rfsd_quota *q, const struct stat *st)
{
    pthread_mutex_lock(&q->mu);
    rfsd_qfile *f;
    for (f = q->files; f; f = f->next)
        if (f->dev == st->st_dev && f->ino == st->st_ino && !f->gone)
            break;
    if (!f && (f = calloc(1, sizeof *f))) {
        f->q = q;
        f->dev = st->st_dev;
        f->ino = st->st_ino;
        f->size = (uint64_t)st->st_size; /* counted already: by the scan or by rfsd */
        f->next = q->files;
        q->files = f;
    }
    if (f)
        RFS_REF_GET(f->refs);
    pthread_mutex_unlock(&q->mu);
    return f;
}

void rfsd_quota_file_put(rfsd_qfile *f, int fd)
{
    if (!f)
        return;
    rfsd_quota *q = f->q;
    struct stat st;
    int have = fd >= 0 && fstat(fd, &st) == 0;
    pthread_mutex_lock(&q->mu);
    if (RFS_REF_PUT(f->refs) > 0) {
        pthread_mutex_unlock(&q->mu);
        return;
    }
    /* the last handle: count what the file really holds from now on */
    if (!f->gone && have) {
        uint64_t real = st.st_nlink ? (uint64_t)st.st_size : 0;
        if (real > f->size)
            q->used += real - f->size;
        else
            release(q, f->size - real);
    }
    for (rfsd_qfile **pp = &q->files; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    pthread_mutex_unlock(&q->mu);
    RFS_REF_DEAD(f->refs);
    free(f);
}

int rfsd_quota_write(rfsd_qfile *f, int append, uint64_t off, uint64_t len, const char *shown)
{
    if (!f || len == 0)
        return RFS_OK;
    rfsd_quota *q = f->q;
    int rc = RFS_OK;
    pthread_mutex_lock(&q->mu);
    if (!f->gone) {
        uint64_t end = append ? f->size + len : off + len;
        if (end > f->size && (rc = admit(q, end - f->size, shown, "this write")) == RFS_OK)
            f->size = end;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

int rfsd_quota_resize(rfsd_qfile *f, int fd, const char *shown, uint64_t size, int prealloc)
{
    rfsd_quota *q = f->q;
    pthread_mutex_lock(&q->mu);
    uint64_t was = f->size;
    int rc = RFS_OK, admitted = 0;
    if (!f->gone && size > was) {
        rc = admit(q, size - was, shown, prealloc ? "this preallocation" : "growing the file");
        admitted = rc == RFS_OK;
    }
    if (rc == RFS_OK)
        rc = prealloc ? rfsd_be_preallocate(fd, shown, size) : rfsd_be_set_size(fd, shown, size);
    if (rc != RFS_OK) {
        if (admitted)
            release(q, size - was); /* admitted above, not done */
    } else if (!f->gone && size > was) {
        f->size = size;
    } else if (!f->gone && !prealloc) {
        release(q, was - size);
        f->size = size;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

/* ---- names ---- */

typedef struct entry {
    int regular;
    dev_t dev;
    ino_t ino;
    uint64_t size;
    nlink_t nlink;
} entry;

/* What the last component of p is (not followed), without changing p. */
static void stat_entry(int root_fd, const rfsd_path *p, entry *e)
{
    memset(e, 0, sizeof *e);
    rfsd_path copy = *p;
    int dfd;
    const char *last;
    if (rfsd_open_parent(root_fd, &copy, &dfd, &last) != RFS_OK) {
        rfs_clear_error();
        return;
    }
    struct stat st;
    if (fstatat(dfd, last, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
        e->regular = 1;
        e->dev = st.st_dev;
        e->ino = st.st_ino;
        e->size = (uint64_t)st.st_size;
        e->nlink = st.st_nlink;
    }
    close(dfd);
}

/* A name of e went away: when it was the file's last one, its bytes are free. An open file is
 * freed by its accounted size and stops being counted. */
static void removed(rfsd_quota *q, const entry *e)
{
    if (!e->regular || e->nlink > 1)
        return;
    pthread_mutex_lock(&q->mu);
    uint64_t n = e->size;
    for (rfsd_qfile *f = q->files; f; f = f->next)
        if (f->dev == e->dev && f->ino == e->ino && !f->gone) {
            n = f->size;
            f->gone = 1;
            break;
        }
    release(q, n);
    pthread_mutex_unlock(&q->mu);
}

int rfsd_quota_delete(rfsd_quota *q, int root_fd, rfsd_path *p)
{
    entry e;
    stat_entry(root_fd, p, &e);
    int rc = rfsd_be_delete(root_fd, p);
    if (rc == RFS_OK)
        removed(q, &e);
    return rc;
}

int rfsd_quota_rename(rfsd_quota *q, int root_fd, rfsd_path *from, rfsd_path *to)
{
    entry src, dst;
    stat_entry(root_fd, from, &src);
    stat_entry(root_fd, to, &dst);
    int rc = rfsd_be_rename(root_fd, from, to);
    if (rc == RFS_OK && !(src.regular && dst.regular && src.dev == dst.dev && src.ino == dst.ino))
        removed(q, &dst); /* the file renamed over, if any */
    return rc;
}

int rfsd_quota_write_file(rfsd_quota *q, int root_fd, rfsd_path *p, uint32_t mode, int excl,
                          int sync, const void *data, size_t len)
{
    entry old;
    stat_entry(root_fd, p, &old);
    /* admitted: what the new file adds over the one it replaces */
    uint64_t replaced = old.regular && old.nlink <= 1 ? old.size : 0;
    uint64_t grow = len > replaced ? len - replaced : 0;
    pthread_mutex_lock(&q->mu);
    int rc = admit(q, grow, p->shown, "this file");
    pthread_mutex_unlock(&q->mu);
    if (rc)
        return rc;
    rc = rfsd_be_write_file(root_fd, p, mode, excl, sync, data, len);
    pthread_mutex_lock(&q->mu);
    if (rc == RFS_OK)
        q->used += len - grow; /* the new file's bytes, now all counted... */
    else
        release(q, grow);
    pthread_mutex_unlock(&q->mu);
    if (rc == RFS_OK)
        removed(q, &old); /* ...and the replaced file's freed */
    return rc;
}
