/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "view.h"

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "common/err.h"
#include "server.h"

#ifdef RFSD_HAVE_DTYPE
#include "dtype/dtype.h"

int rfsd_views_built(void)
{
    return 1;
}

void rfsd_views_set_cancel(const atomic_int *flag)
{
    rfs_dt_set_cancel(flag);
}

/* Bytes a flattened view of n runs holds: off, len and prefix sums (dtype/dt_flat.h). */
static uint64_t view_cost(size_t n)
{
    return (uint64_t)n * RFS_DT_FLAT_BYTES_PER_RUN + 128;
}

int rfsd_view_set(rfsd_view *v, uint64_t disp, const uint8_t *enc, size_t len, const char *shown,
                  _Atomic uint64_t *acct, uint64_t limit)
{
    /* The old view goes first: after a failed SET_VIEW the slot is unset, so a VIEW_READ or
     * VIEW_WRITE the client pipelined behind it fails instead of using a stale view. */
    rfsd_view_clear(v);
    rfs_dt *t = NULL;
    rfs_flat *f = NULL;
    int rc = rfs_dt_decode(enc, len, &t);
    if (rc) {
        char why[512];
        snprintf(why, sizeof why, "%s", rfs_last_error());
        return rfs_fail(rc, "%s: bad file view datatype: %s", shown, why);
    }
    /* Flatten no further than the connection's view memory allows, so the limit bounds the
     * work and the memory before they are spent, not after. */
    uint64_t used = atomic_load(acct), room = used < limit ? limit - used : 0;
    size_t max_runs = room / RFS_DT_FLAT_BYTES_PER_RUN;
    if (max_runs == 0) {
        rfs_dt_free(t);
        return rfs_fail(RFS_E_TOOBIG,
                        "%s: file views of this connection hold %llu bytes "
                        "(limit %llu, rfsd --max-view-bytes)",
                        shown, (unsigned long long)used, (unsigned long long)limit);
    }
    rc = rfs_dt_flatten_max(t, max_runs < RFS_DT_MAX_RUNS ? max_runs : 0, &f);
    rfs_dt_free(t);
    if (rc) {
        char why[512];
        snprintf(why, sizeof why, "%s", rfs_last_error());
        if (rc == RFS_E_TOOBIG && max_runs < RFS_DT_MAX_RUNS && strstr(why, "runs (limit)"))
            return rfs_fail(rc,
                            "%s: file view needs more memory than this connection has left "
                            "(limit %llu bytes of views, %llu used; rfsd --max-view-bytes)",
                            shown, (unsigned long long)limit, (unsigned long long)used);
        return rfs_fail(rc, "%s: cannot flatten file view datatype: %s", shown, why);
    }
    if (!f->monotonic || f->size <= 0 || f->extent <= 0) {
        rfs_flat_free(f);
        return rfs_fail(RFS_E_INVAL,
                        "%s: a filetype needs data, a positive extent and "
                        "nondecreasing, non-overlapping displacements",
                        shown);
    }
    /* charge it; concurrent SET_VIEWs on other handles may have taken the room meanwhile */
    uint64_t cost = view_cost(f->n);
    if (atomic_fetch_add(acct, cost) + cost > limit) {
        atomic_fetch_sub(acct, cost);
        rfs_flat_free(f);
        return rfs_fail(RFS_E_TOOBIG,
                        "%s: file view of %llu bytes is over what this connection "
                        "has left (limit %llu, rfsd --max-view-bytes)",
                        shown, (unsigned long long)cost, (unsigned long long)limit);
    }
    v->flat = f;
    v->disp = disp;
    v->bytes = cost;
    v->acct = acct;
    return RFS_OK;
}

typedef struct io_ctx {
    int fd;
    const char *shown;
    uint8_t *rbuf;
    const uint8_t *wbuf;
    size_t done;
    int eof;
} io_ctx;

static int read_run(void *arg, uint64_t off, uint64_t len)
{
    io_ctx *x = arg;
    size_t got;
    int rc = rfsd_be_pread(x->fd, x->shown, x->rbuf + x->done, (size_t)len, off, &got);
    if (rc)
        return rc;
    x->done += got;
    if (got < len) {
        x->eof = 1;
        return 1; /* stop: the packed stream ends at end of file */
    }
    return 0;
}

static int write_run(void *arg, uint64_t off, uint64_t len)
{
    io_ctx *x = arg;
    int rc = rfsd_be_pwrite(x->fd, x->shown, x->wbuf + x->done, (size_t)len, off);
    if (rc)
        return rc;
    x->done += len;
    return 0;
}

int rfsd_view_read(const rfsd_view *v, int fd, const char *shown, uint64_t pos, void *buf,
                   size_t len, size_t *done)
{
    *done = 0;
    if (!v->flat)
        return rfs_fail(RFS_E_INVAL, "%s: view not set (SET_VIEW first)", shown);
    io_ctx x = {.fd = fd, .shown = shown, .rbuf = buf};
    int rc = rfs_flat_map(v->flat, v->disp, pos, len, read_run, &x);
    if (rc < 0)
        return rc;
    *done = x.done;
    return RFS_OK;
}

int rfsd_view_write(const rfsd_view *v, int fd, const char *shown, uint64_t pos, const void *buf,
                    size_t len)
{
    if (!v->flat)
        return rfs_fail(RFS_E_INVAL, "%s: view not set (SET_VIEW first)", shown);
    io_ctx x = {.fd = fd, .shown = shown, .wbuf = buf};
    int rc = rfs_flat_map(v->flat, v->disp, pos, len, write_run, &x);
    return rc < 0 ? rc : RFS_OK;
}

static int end_run(void *arg, uint64_t off, uint64_t len)
{
    uint64_t *end = arg;
    if (len && off + len > *end)
        *end = off + len;
    return 0;
}

int rfsd_view_end(const rfsd_view *v, uint64_t pos, size_t len, uint64_t *end)
{
    *end = 0;
    if (!v->flat)
        return rfs_fail(RFS_E_INVAL, "view not set (SET_VIEW first)");
    int rc = rfs_flat_map(v->flat, v->disp, pos, len, end_run, end);
    return rc < 0 ? rc : RFS_OK;
}

/* Memory of big views goes back to the kernel when they are dropped (a client leaving, a slot
 * refilled). rfsd keeps freed heap memory on purpose (M_TRIM_THRESHOLD, main.c) for its frame
 * buffers, and glibc never trims the top of a worker thread's arena below that threshold, not
 * even in malloc_trim; so around the free of a big view the threshold is lowered, and
 * malloc_trim then returns the free pages inside the arenas too. */
#define TRIM_VIEW_MIN (4ull << 20)
static pthread_mutex_t trim_mu = PTHREAD_MUTEX_INITIALIZER;

void rfsd_view_clear(rfsd_view *v)
{
    if (v->acct)
        atomic_fetch_sub(v->acct, v->bytes);
    if (v->flat && v->bytes >= TRIM_VIEW_MIN) {
        pthread_mutex_lock(&trim_mu);
        mallopt(M_TRIM_THRESHOLD, (int)TRIM_VIEW_MIN);
        rfs_flat_free(v->flat);
        mallopt(M_TRIM_THRESHOLD, RFSD_TRIM_THRESHOLD);
        malloc_trim(0);
        pthread_mutex_unlock(&trim_mu);
    } else if (v->flat) {
        rfs_flat_free(v->flat);
    }
    v->flat = NULL;
    v->disp = 0;
    v->bytes = 0;
    v->acct = NULL;
}

#else /* built without dtype/: views are refused with a clear reason */

int rfsd_views_built(void)
{
    return 0;
}

void rfsd_views_set_cancel(const atomic_int *flag)
{
    (void)flag;
}

int rfsd_view_set(rfsd_view *v, uint64_t disp, const uint8_t *enc, size_t len, const char *shown,
                  _Atomic uint64_t *acct, uint64_t limit)
{
    (void)v;
    (void)disp;
    (void)enc;
    (void)len;
    (void)acct;
    (void)limit;
    return rfs_fail(RFS_E_UNSUPPORTED, "%s: file views are not supported by this server build",
                    shown);
}

int rfsd_view_read(const rfsd_view *v, int fd, const char *shown, uint64_t pos, void *buf,
                   size_t len, size_t *done)
{
    (void)v;
    (void)fd;
    (void)pos;
    (void)buf;
    (void)len;
    *done = 0;
    return rfs_fail(RFS_E_UNSUPPORTED, "%s: file views are not supported by this server build",
                    shown);
}

int rfsd_view_write(const rfsd_view *v, int fd, const char *shown, uint64_t pos, const void *buf,
                    size_t len)
{
    (void)v;
    (void)fd;
    (void)pos;
    (void)buf;
    (void)len;
    return rfs_fail(RFS_E_UNSUPPORTED, "%s: file views are not supported by this server build",
                    shown);
}

void rfsd_view_clear(rfsd_view *v)
{
    v->flat = NULL;
    v->disp = 0;
}

int rfsd_view_end(const rfsd_view *v, uint64_t pos, size_t len, uint64_t *end)
{
    (void)v;
    (void)pos;
    (void)len;
    *end = 0;
    return rfs_fail(RFS_E_UNSUPPORTED, "file views are not supported by this server build");
}

#endif
