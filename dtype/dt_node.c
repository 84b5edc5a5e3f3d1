/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Construction of internal datatype nodes with MPI's size and bounds rules:
 * - size is the sum of the children's sizes times their repetition counts;
 * - lb/ub are the min/max over every child copy of (displacement + child lb/ub); blocks with a
 *   zero count contribute nothing, and a type with no copies at all has lb = ub = 0;
 * - RESIZED replaces lb and ub (resized of resized simply takes the outer values).
 * All arithmetic is checked; a result that does not fit int64 makes the constructor fail. */
#include "dt_internal.h"

#include <stdlib.h>

static _Thread_local size_t alloc_total;

void *dt_malloc(size_t n)
{
    alloc_total += n;
    return malloc(n ? n : 1);
}

void *dt_calloc(size_t n, size_t sz)
{
    alloc_total += n * sz;
    return calloc(n ? n : 1, sz ? sz : 1);
}

void dt_alloc_reset_total(void)
{
    alloc_total = 0;
}
size_t dt_alloc_total(void)
{
    return alloc_total;
}

/* Bounds accumulator over child copies. */
typedef struct {
    bool any;
    int64_t lb, ub;
} bounds;

/* Adds bl consecutive copies of kid (copy j at disp + j*extent). */
static bool bounds_add_block(bounds *b, int64_t disp, int64_t bl, const dt_node *kid)
{
    if (bl == 0)
        return true;
    int64_t ext = dt_extent(kid), last, lo, hi;
    if (!dt_mul(bl - 1, ext, &last))
        return false;
    if (!dt_add(disp, kid->lb, &lo) || !dt_add(lo, last < 0 ? last : 0, &lo))
        return false;
    if (!dt_add(disp, kid->ub, &hi) || !dt_add(hi, last > 0 ? last : 0, &hi))
        return false;
    if (!b->any || lo < b->lb)
        b->lb = lo;
    if (!b->any || hi > b->ub)
        b->ub = hi;
    b->any = true;
    return true;
}

/* Sets height, subtree node count and metadata items from the kids. */
static void set_shape(dt_node *n)
{
    unsigned h = 0;
    uint64_t c = 1, m = 1;
    if (n->kind == DT_LEAF)
        m += (uint64_t)n->nruns;
    else if (n->kind == DT_HIDX || n->kind == DT_STRUCT)
        m += (uint64_t)n->count;
    for (size_t i = 0; i < n->nkids; i++) {
        if (n->kids[i]->height > h)
            h = n->kids[i]->height;
        c += n->kids[i]->nnodes;
        m += n->kids[i]->nmeta;
    }
    n->height = h + 1;
    n->nnodes = c;
    n->nmeta = m;
}

static bool finish(dt_node *n, const bounds *b)
{
    n->lb = b->any ? b->lb : 0;
    n->ub = b->any ? b->ub : 0;
    int64_t ext;
    return !__builtin_sub_overflow(n->ub, n->lb, &ext);
}

static dt_node *node_alloc(enum dt_kind kind)
{
    dt_node *n = dt_calloc(1, sizeof *n);
    if (n)
        n->kind = kind;
    return n;
}

/* Frees only the node struct (kids and arrays stay with the caller). */
static void node_release(dt_node *n)
{
    free(n);
}

dt_node *dt_new_leaf(int64_t size, int64_t lb, int64_t extent, int64_t *runs, int64_t nruns)
{
    int64_t ub;
    if (size < 0 || !dt_add(lb, extent, &ub))
        return NULL;
    dt_node *n = node_alloc(DT_LEAF);
    if (!n)
        return NULL;
    n->size = size;
    n->lb = lb;
    n->ub = ub;
    int64_t e;
    if (__builtin_sub_overflow(ub, lb, &e)) {
        node_release(n);
        return NULL;
    }
    n->runs = runs;
    n->nruns = nruns;
    set_shape(n);
    return n;
}

dt_node *dt_new_hvec(int64_t count, int64_t blocklen, int64_t stride, int64_t tail, dt_node *kid)
{
    if (count < 0 || blocklen < 0 || tail < 0)
        return NULL;
    bounds b = {0};
    bool ok = true;
    int64_t last, size, tsize;
    if (count > 0 && blocklen > 0) {
        /* Copies sit at i*stride + j*extent: the extremes are those of the first and last block. */
        ok = dt_mul(count - 1, stride, &last) && bounds_add_block(&b, 0, blocklen, kid) &&
             bounds_add_block(&b, last, blocklen, kid);
    }
    if (ok && tail > 0)
        ok = dt_mul(count, stride, &last) && bounds_add_block(&b, last, tail, kid);
    ok = ok && dt_mul(count, blocklen, &size) && dt_mul(size, kid->size, &size) &&
         dt_mul(tail, kid->size, &tsize) && dt_add(size, tsize, &size);
    if (!ok)
        return NULL;
    dt_node *n = node_alloc(DT_HVEC);
    if (!n)
        return NULL;
    n->count = count;
    n->blocklen = blocklen;
    n->stride = stride;
    n->tail = tail;
    n->size = size;
    n->kids = dt_malloc(sizeof *n->kids);
    if (!finish(n, &b) || !n->kids) {
        free(n->kids);
        node_release(n);
        return NULL;
    }
    n->kids[0] = kid;
    n->nkids = 1;
    set_shape(n);
    return n;
}

/* Shared by HIDX and STRUCT: kids[i] or the single kid. */
static dt_node *new_indexed(enum dt_kind kind, int64_t count, int64_t *bls, int64_t blocklen,
                            int64_t *disps, dt_node **kids, dt_node *kid)
{
    if (count < 0 || blocklen < 0)
        return NULL;
    bounds b = {0};
    int64_t size = 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t bl = bls ? bls[i] : blocklen, s;
        const dt_node *k = kids ? kids[i] : kid;
        if (bl < 0 || !bounds_add_block(&b, disps[i], bl, k))
            return NULL;
        if (!dt_mul(bl, k->size, &s) || !dt_add(size, s, &size))
            return NULL;
    }
    dt_node *n = node_alloc(kind);
    if (!n)
        return NULL;
    n->count = count;
    n->blocklen = blocklen;
    n->bls = bls;
    n->disps = disps;
    n->size = size;
    if (!finish(n, &b)) {
        node_release(n);
        return NULL;
    }
    if (kids) {
        n->kids = kids;
        n->nkids = (size_t)count;
    } else {
        n->kids = dt_malloc(sizeof *n->kids);
        if (!n->kids) {
            node_release(n);
            return NULL;
        }
        n->kids[0] = kid;
        n->nkids = 1;
    }
    set_shape(n);
    return n;
}

dt_node *dt_new_hidx(int64_t count, int64_t *bls, int64_t blocklen, int64_t *disps, dt_node *kid)
{
    return new_indexed(DT_HIDX, count, bls, blocklen, disps, NULL, kid);
}

dt_node *dt_new_struct(int64_t count, int64_t *bls, int64_t *disps, dt_node **kids)
{
    return new_indexed(DT_STRUCT, count, bls, 0, disps, kids, NULL);
}

dt_node *dt_new_resized(int64_t lb, int64_t extent, dt_node *kid)
{
    int64_t ub;
    if (!dt_add(lb, extent, &ub))
        return NULL;
    dt_node *n = node_alloc(DT_RESIZED);
    if (!n)
        return NULL;
    n->size = kid->size;
    n->lb = lb;
    n->ub = ub;
    int64_t e;
    n->kids = dt_malloc(sizeof *n->kids);
    if (__builtin_sub_overflow(ub, lb, &e) || !n->kids) {
        free(n->kids);
        node_release(n);
        return NULL;
    }
    n->kids[0] = kid;
    n->nkids = 1;
    set_shape(n);
    return n;
}

void dt_node_free(dt_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->nkids; i++)
        dt_node_free(n->kids[i]);
    free(n->kids);
    free(n->bls);
    free(n->disps);
    free(n->runs);
    free(n);
}
