#include "view.h"

#include <stdio.h>

#include "backend.h"
#include "common/err.h"

#ifdef RFSD_HAVE_DTYPE
#include "dtype/dtype.h"

int rfsd_views_built(void)
{
    return 1;
}

void rfsd_views_set_cancel(const atomic_int *flag) { rfs_dt_set_cancel(flag); }

int rfsd_view_set(rfsd_view *v, uint64_t disp, const uint8_t *enc, size_t len, const char *shown)
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
    rc = rfs_dt_flatten(t, &f);
    rfs_dt_free(t);
    if (rc) {
        char why[512];
        snprintf(why, sizeof why, "%s", rfs_last_error());
        return rfs_fail(rc, "%s: cannot flatten file view datatype: %s", shown, why);
    }
    if (!f->monotonic || f->size <= 0 || f->extent <= 0) {
        rfs_flat_free(f);
        return rfs_fail(RFS_E_INVAL, "%s: a filetype needs data, a positive extent and "
                                     "nondecreasing, non-overlapping displacements", shown);
    }
    v->flat = f;
    v->disp = disp;
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
        return 1;  /* stop: the packed stream ends at end of file */
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

void rfsd_view_clear(rfsd_view *v)
{
    if (v->flat)
        rfs_flat_free(v->flat);
    v->flat = NULL;
    v->disp = 0;
}

#else /* built without dtype/: views are refused with a clear reason */

int rfsd_views_built(void)
{
    return 0;
}

void rfsd_views_set_cancel(const atomic_int *flag) { (void)flag; }

int rfsd_view_set(rfsd_view *v, uint64_t disp, const uint8_t *enc, size_t len, const char *shown)
{
    (void)v; (void)disp; (void)enc; (void)len;
    return rfs_fail(RFS_E_UNSUPPORTED, "%s: file views are not supported by this server build", shown);
}

int rfsd_view_read(const rfsd_view *v, int fd, const char *shown, uint64_t pos, void *buf,
                   size_t len, size_t *done)
{
    (void)v; (void)fd; (void)pos; (void)buf; (void)len;
    *done = 0;
    return rfs_fail(RFS_E_UNSUPPORTED, "%s: file views are not supported by this server build", shown);
}

int rfsd_view_write(const rfsd_view *v, int fd, const char *shown, uint64_t pos, const void *buf,
                    size_t len)
{
    (void)v; (void)fd; (void)pos; (void)buf; (void)len;
    return rfs_fail(RFS_E_UNSUPPORTED, "%s: file views are not supported by this server build", shown);
}

void rfsd_view_clear(rfsd_view *v) { v->flat = NULL; v->disp = 0; }

#endif
