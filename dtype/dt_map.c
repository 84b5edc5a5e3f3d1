/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Flat types as values (construction, freeing) and the file-view mapping: the filetype tiled
 * from disp, copy k at disp + k*extent, and a data-stream byte range mapped to file runs. Whole
 * tiles are skipped by division and the run inside a tile is found by binary search over the
 * prefix sums, so mapping a small range anywhere costs O(log runs + runs produced). */
#include "dt_flat.h"
#include "dt_internal.h"

#include "common/err.h"

#include <stdlib.h>

int dt_flat_make(int64_t *off, int64_t *len, size_t n, int64_t size, int64_t lb, int64_t extent,
                 rfs_flat **out)
{
    *out = NULL;
    flat_impl *f = calloc(1, sizeof *f);
    int64_t *cum = malloc((n + 1) * sizeof *cum);
    /* shrink the growth slack away; realloc to a smaller size cannot really fail */
    if (n > 0) {
        int64_t *o = realloc(off, n * sizeof *o), *l = realloc(len, n * sizeof *l);
        off = o ? o : off;
        len = l ? l : len;
    }
    if (!f || !cum) {
        free(f);
        free(cum);
        free(off);
        free(len);
        return rfs_fail(RFS_E_NOMEM, "out of memory flattening a datatype");
    }
    int monotonic = 1;
    cum[0] = 0;
    for (size_t i = 0; i < n; i++) {
        cum[i + 1] = cum[i] + len[i]; /* sums to size, which fits */
        if (i > 0 && off[i] < off[i - 1] + len[i - 1])
            monotonic = 0;
    }
    f->pub = (rfs_flat){.n = n,
                        .off = off,
                        .len = len,
                        .size = size,
                        .lb = lb,
                        .extent = extent,
                        .monotonic = monotonic};
    f->cum = cum;
    *out = &f->pub;
    return 0;
}

void rfs_flat_free(rfs_flat *f)
{
    if (!f)
        return;
    flat_impl *fi = (flat_impl *)f;
    free(f->off);
    free(f->len);
    free(fi->cum);
    free(fi);
}

int rfs_flat_bytes(uint64_t n, rfs_flat **out)
{
    if (!out)
        return rfs_fail(RFS_E_INVAL, "rfs_flat_bytes: no output");
    *out = NULL;
    if (n > INT64_MAX)
        return rfs_fail(RFS_E_INVAL, "contiguous type of %llu bytes", (unsigned long long)n);
    int64_t *off = NULL, *len = NULL;
    if (n > 0) {
        off = malloc(sizeof *off);
        len = malloc(sizeof *len);
        if (!off || !len) {
            free(off);
            free(len);
            return rfs_fail(RFS_E_NOMEM, "out of memory");
        }
        off[0] = 0;
        len[0] = (int64_t)n;
    }
    return dt_flat_make(off, len, n > 0, (int64_t)n, 0, (int64_t)n, out);
}

/* Collects output runs, merging a run that starts where the previous one ended. */
typedef struct {
    rfs_run_fn fn;
    void *ctx;
    uint64_t off, len;
} pending;

static int push(pending *p, uint64_t off, uint64_t len)
{
    if (p->len > 0 && p->off + p->len == off) {
        p->len += len;
        return 0;
    }
    int rc = p->len > 0 ? p->fn(p->ctx, p->off, p->len) : 0;
    p->off = off;
    p->len = len;
    return rc;
}

/* Index of the run holding data byte r of a tile: the last i with cum[i] <= r. */
static size_t run_at(const int64_t *cum, size_t n, int64_t r)
{
    size_t lo = 0, hi = n; /* cum[lo] <= r < cum[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (cum[mid] <= r)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

#define RANGE() rfs_fail(RFS_E_FBIG, "file view maps to an offset out of range")

int rfs_flat_map(const rfs_flat *ft, uint64_t disp, uint64_t pos, uint64_t len, rfs_run_fn fn,
                 void *ctx)
{
    if (!ft || !fn)
        return rfs_fail(RFS_E_INVAL, "rfs_flat_map: null argument");
    if (len == 0)
        return 0;
    if (ft->size <= 0 || ft->n == 0 || ft->extent <= 0)
        return rfs_fail(RFS_E_INVAL,
                        "file view: filetype with size %lld, extent %lld holds no data",
                        (long long)ft->size, (long long)ft->extent);
    if (disp > INT64_MAX || pos > INT64_MAX || len > INT64_MAX - pos)
        return RANGE();
    const int64_t *cum = ((const flat_impl *)ft)->cum;
    int64_t size = ft->size, ext = ft->extent;
    int64_t tile = (int64_t)pos / size, r = (int64_t)pos % size, base, file;
    size_t i = run_at(cum, ft->n, r);
    int64_t within = r - cum[i];
    pending p = {fn, ctx, 0, 0};
    uint64_t left = len, steps = 0;
    if (ft->n == 1 && ft->len[0] == ext) {
        /* contiguous tiles: the whole range is one run */
        if (!dt_mul(tile, ext, &base) || !dt_add(base, (int64_t)disp, &base) ||
            !dt_add(base, ft->off[0], &file) || !dt_add(file, within, &file) || file < 0 ||
            len > (uint64_t)INT64_MAX - (uint64_t)file)
            return RANGE();
        return fn(ctx, (uint64_t)file, len);
    }
    while (left > 0) {
        if (!dt_mul(tile, ext, &base) || !dt_add(base, (int64_t)disp, &base))
            return RANGE();
        for (; i < ft->n && left > 0; i++, within = 0) {
            int64_t chunk = ft->len[i] - within;
            if ((uint64_t)chunk > left)
                chunk = (int64_t)left;
            int64_t end;
            if (!dt_add(base, ft->off[i], &file) || !dt_add(file, within, &file) || file < 0 ||
                !dt_add(file, chunk, &end))
                return RANGE();
            int rc = push(&p, (uint64_t)file, (uint64_t)chunk);
            if (rc)
                return rc;
            /* runs produced are bounded by len (each holds a byte), but a reply of millions of
             * one-byte runs takes a while: a shutting-down server must not wait for it */
            if (++steps % DT_CANCEL_POLL == 0 && dt_cancelled())
                return rfs_fail(RFS_E_BUSY, "file view mapping cancelled: shutting down");
            left -= (uint64_t)chunk;
        }
        i = 0;
        tile++;
    }
    return p.len > 0 ? fn(ctx, p.off, p.len) : 0;
}
