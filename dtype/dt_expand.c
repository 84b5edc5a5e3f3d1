/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Expansion of SUBARRAY and DARRAY into the internal node kinds, following the MPI standard's
 * definitions: the result has lb 0 and extent prod(sizes) * extent(oldtype); its type map walks
 * the selected elements in array order (last dimension fastest for C order, first dimension
 * fastest for Fortran order). DARRAY's process grid is always row-major, whatever the order. */
#include "dt_format.h"
#include "dt_internal.h"

#include "common/err.h"

#include <stdlib.h>

#define BAD(...) rfs_fail(RFS_E_INVAL, "datatype encoding: " __VA_ARGS__)

/* Dimension i of the walk from the fastest-varying dimension outwards. */
static int dim_at(int i, int ndims, int order)
{
    return order == RFS_DT_ORDER_C ? ndims - 1 - i : i;
}

/* Places one copy of t at disp, then gives the result lb 0 and the given extent. Consumes t. */
static int place(dt_node *t, int64_t disp, int64_t extent, dt_node **out)
{
    int64_t *d = dt_malloc(sizeof *d);
    dt_node *h = NULL;
    if (d) {
        *d = disp;
        h = dt_new_hidx(1, NULL, 1, d, t);
    }
    if (!h) {
        free(d);
        dt_node_free(t);
        return BAD("array type overflow");
    }
    *out = dt_new_resized(0, extent, h);
    if (!*out) {
        dt_node_free(h);
        return BAD("array type overflow");
    }
    return 0;
}

int dt_expand_subarray(int ndims, const int64_t *sizes, const int64_t *subsizes,
                       const int64_t *starts, int order, dt_node *kid, dt_node **out)
{
    for (int d = 0; d < ndims; d++) {
        if (sizes[d] < 1 || subsizes[d] < 0 || starts[d] < 0 || subsizes[d] > sizes[d] ||
            starts[d] > sizes[d] - subsizes[d]) {
            dt_node_free(kid);
            return BAD("subarray dim %d: size %lld subsize %lld start %lld", d, (long long)sizes[d],
                       (long long)subsizes[d], (long long)starts[d]);
        }
    }
    int64_t stride = dt_extent(kid), disp = 0, off;
    dt_node *t = kid;
    for (int i = 0; i < ndims; i++) {
        int d = dim_at(i, ndims, order);
        dt_node *h = dt_new_hvec(subsizes[d], 1, stride, 0, t);
        if (!h || !dt_mul(starts[d], stride, &off) || !dt_add(disp, off, &disp) ||
            !dt_mul(stride, sizes[d], &stride)) {
            dt_node_free(h ? h : t);
            return BAD("subarray overflow");
        }
        t = h;
    }
    return place(t, disp, stride, out);
}

/* The indices of one dimension owned by a process: nfull blocks of k indices, block j starting
 * at first + j*step, then a last block of tail (< k) indices. */
typedef struct {
    int64_t first, k, step, nfull, tail;
} dim_share;

static int share_of(int64_t g, uint8_t distrib, int64_t darg, int64_t p, int64_t c, dim_share *s)
{
    *s = (dim_share){0, 0, 0, 0, 0};
    if (distrib == RFS_DT_DIST_NONE) {
        if (p != 1)
            return BAD("darray: DISTRIBUTE_NONE with %lld processes", (long long)p);
        *s = (dim_share){0, g, g, 1, 0};
        return 0;
    }
    if (darg != RFS_DT_DARG_DEFAULT && darg < 1)
        return BAD("darray: distribution argument %lld", (long long)darg);
    int64_t k, start, step;
    if (distrib == RFS_DT_DIST_BLOCK) {
        k = darg == RFS_DT_DARG_DEFAULT ? g / p + (g % p != 0) : darg;
        if (!dt_mul(k, p, &step) || step < g)
            return BAD("darray: block size %lld too small for %lld elements", (long long)k,
                       (long long)g);
    } else if (distrib == RFS_DT_DIST_CYCLIC) {
        k = darg == RFS_DT_DARG_DEFAULT ? 1 : darg;
        if (!dt_mul(k, p, &step))
            return BAD("darray: cyclic step overflow");
    } else {
        return BAD("darray: distribution %u", distrib);
    }
    if (!dt_mul(c, k, &start))
        return BAD("darray: offset overflow");
    if (start >= g)
        return 0; /* this process owns nothing in this dimension */
    int64_t nblocks = (g - start) / step + ((g - start) % step != 0);
    int64_t last = start + (nblocks - 1) * step; /* < g, no overflow */
    s->first = start;
    s->k = k;
    s->step = step;
    if (g - last >= k) {
        s->nfull = nblocks;
    } else {
        s->nfull = nblocks - 1;
        s->tail = g - last;
    }
    return 0;
}

int dt_expand_darray(int64_t nprocs, int64_t rank, int ndims, const int64_t *gsizes,
                     const uint8_t *distribs, const int64_t *dargs, const int64_t *psizes,
                     int order, dt_node *kid, dt_node **out)
{
    int64_t coords[RFS_DT_MAX_NDIMS], nprod = 1;
    int rc = 0;
    if (nprocs < 1 || rank < 0 || rank >= nprocs)
        rc = BAD("darray: rank %lld of %lld", (long long)rank, (long long)nprocs);
    for (int d = 0; rc == 0 && d < ndims; d++) {
        if (gsizes[d] < 1 || psizes[d] < 1 || !dt_mul(nprod, psizes[d], &nprod))
            rc = BAD("darray dim %d: gsize %lld psize %lld", d, (long long)gsizes[d],
                     (long long)psizes[d]);
    }
    if (rc == 0 && nprod != nprocs)
        rc = BAD("darray: process grid of %lld for %lld processes", (long long)nprod,
                 (long long)nprocs);
    if (rc) {
        dt_node_free(kid);
        return rc;
    }
    /* row-major process grid: the last dimension varies fastest */
    int64_t r = rank;
    for (int d = ndims - 1; d >= 0; d--) {
        coords[d] = r % psizes[d];
        r /= psizes[d];
    }
    dt_node *t = kid;
    int64_t stride = dt_extent(kid);
    for (int i = 0; i < ndims; i++) {
        int d = dim_at(i, ndims, order);
        dim_share s;
        int64_t step_bytes, first_bytes, dim_extent;
        rc = share_of(gsizes[d], distribs[d], dargs[d], psizes[d], coords[d], &s);
        if (rc) {
            dt_node_free(t);
            return rc;
        }
        /* t's extent is exactly one index of this dimension, so the k copies of a block sit
         * next to each other */
        dt_node *h = NULL;
        if (dt_mul(s.step, stride, &step_bytes) && dt_mul(s.first, stride, &first_bytes) &&
            dt_mul(gsizes[d], stride, &dim_extent))
            h = dt_new_hvec(s.nfull, s.k, step_bytes, s.tail, t);
        if (!h) {
            dt_node_free(t);
            return BAD("darray overflow");
        }
        rc = place(h, first_bytes, dim_extent, &t);
        if (rc)
            return rc;
        stride = dim_extent;
    }
    *out = t;
    return 0;
}
