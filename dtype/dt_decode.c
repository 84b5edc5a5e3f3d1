/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Decoder of the portable datatype encoding (docs/datatypes.md). Reads the preorder tree,
 * validates every field against the remaining input before allocating, and normalises each
 * combiner to the internal node kinds. Bounds: RFS_DT_MAX_DEPTH nesting, RFS_DT_MAX_NODES encoded
 * nodes, arrays never longer than the bytes left, all sizes/bounds within int64. */
#include "dt_format.h"
#include "dt_internal.h"

#include "common/err.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    size_t left;
    size_t nodes;
} reader;

static bool get_u8(reader *r, uint8_t *v)
{
    if (r->left < 1)
        return false;
    *v = r->p[0];
    r->p++;
    r->left--;
    return true;
}

static bool get_u32(reader *r, uint32_t *v)
{
    if (r->left < 4)
        return false;
    *v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
         (uint32_t)r->p[3] << 24;
    r->p += 4;
    r->left -= 4;
    return true;
}

static bool get_u64(reader *r, uint64_t *v)
{
    if (r->left < 8)
        return false;
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--)
        x = x << 8 | r->p[i];
    *v = x;
    r->p += 8;
    r->left -= 8;
    return true;
}

static bool get_i64(reader *r, int64_t *v)
{
    uint64_t u;
    if (!get_u64(r, &u))
        return false;
    memcpy(v, &u, sizeof *v);
    return true;
}

static bool get_count(reader *r, int64_t *v)
{
    return get_i64(r, v) && *v >= 0;
}

/* Reads n i64 values into a fresh array. n is checked against the input left first, so a forged
 * count never turns into a large allocation. */
static bool get_i64_array(reader *r, int64_t n, int64_t **out)
{
    *out = NULL;
    if (n < 0 || (uint64_t)n > r->left / 8)
        return false;
    int64_t *a = dt_malloc((size_t)n * sizeof *a);
    if (!a)
        return false;
    for (int64_t i = 0; i < n; i++)
        get_i64(r, &a[i]);
    *out = a;
    return true;
}

static int decode_node(reader *r, unsigned depth, dt_node **out);

#define BAD(...) rfs_fail(RFS_E_INVAL, "datatype encoding: " __VA_ARGS__)

static int decode_named(reader *r, dt_node **out)
{
    int64_t size, lb, extent;
    uint32_t nruns;
    if (!get_count(r, &size) || !get_i64(r, &lb) || !get_i64(r, &extent) || !get_u32(r, &nruns))
        return BAD("truncated or negative named type");
    if (nruns > RFS_DT_MAX_LEAF_RUNS)
        return BAD("named type with %u runs", nruns);
    int64_t *runs;
    if (!get_i64_array(r, 2 * (int64_t)nruns, &runs))
        return BAD("truncated named type runs");
    int64_t sum = 0;
    for (uint32_t i = 0; i < nruns; i++) {
        if (runs[2 * i + 1] < 0 || !dt_add(sum, runs[2 * i + 1], &sum)) {
            free(runs);
            return BAD("bad named type run");
        }
    }
    if (sum != size) {
        free(runs);
        return BAD("named type runs cover %lld bytes, size is %lld", (long long)sum,
                   (long long)size);
    }
    *out = dt_new_leaf(size, lb, extent, runs, nruns);
    if (!*out) {
        free(runs);
        return BAD("named type bounds overflow");
    }
    return 0;
}

/* Wraps a freshly decoded kid; on failure frees everything it was given. */
static int make_hvec(int64_t count, int64_t bl, int64_t stride, dt_node *kid, dt_node **out)
{
    *out = dt_new_hvec(count, bl, stride, 0, kid);
    if (!*out) {
        dt_node_free(kid);
        return BAD("vector size or bounds overflow");
    }
    return 0;
}

static int decode_vector(reader *r, uint8_t kind, unsigned depth, dt_node **out)
{
    int64_t count = 1, bl = 1, stride = 0;
    if (kind == RFS_DTW_CONTIGUOUS) {
        if (!get_count(r, &count))
            return BAD("bad contiguous count");
    } else if (!get_count(r, &count) || !get_count(r, &bl) || !get_i64(r, &stride)) {
        return BAD("bad vector header");
    }
    dt_node *kid;
    int rc = decode_node(r, depth + 1, &kid);
    if (rc)
        return rc;
    int64_t ext = dt_extent(kid);
    if (kind == RFS_DTW_CONTIGUOUS) {
        stride = ext;
    } else if (kind == RFS_DTW_VECTOR && !dt_mul(stride, ext, &stride)) {
        dt_node_free(kid);
        return BAD("vector stride overflow");
    }
    return make_hvec(count, bl, stride, kid, out);
}

static int decode_indexed(reader *r, uint8_t kind, unsigned depth, dt_node **out)
{
    int64_t count, bl = 0, *bls = NULL, *disps = NULL;
    bool block = kind == RFS_DTW_INDEXED_BLOCK || kind == RFS_DTW_HINDEXED_BLOCK;
    if (!get_count(r, &count) || (block && !get_count(r, &bl)))
        return BAD("bad indexed header");
    if (!block && !get_i64_array(r, count, &bls))
        return BAD("truncated indexed blocklengths");
    if (!get_i64_array(r, count, &disps)) {
        free(bls);
        return BAD("truncated indexed displacements");
    }
    for (int64_t i = 0; bls && i < count; i++) {
        if (bls[i] < 0) {
            free(bls);
            free(disps);
            return BAD("negative blocklength");
        }
    }
    dt_node *kid;
    int rc = decode_node(r, depth + 1, &kid);
    if (rc) {
        free(bls);
        free(disps);
        return rc;
    }
    if (kind == RFS_DTW_INDEXED || kind == RFS_DTW_INDEXED_BLOCK) {
        int64_t ext = dt_extent(kid);
        for (int64_t i = 0; i < count; i++) {
            if (!dt_mul(disps[i], ext, &disps[i])) {
                free(bls);
                free(disps);
                dt_node_free(kid);
                return BAD("indexed displacement overflow");
            }
        }
    }
    *out = dt_new_hidx(count, bls, bl, disps, kid);
    if (!*out) {
        free(bls);
        free(disps);
        dt_node_free(kid);
        return BAD("indexed size or bounds overflow");
    }
    return 0;
}

static int decode_struct(reader *r, unsigned depth, dt_node **out)
{
    int64_t count, *bls = NULL, *disps = NULL;
    if (!get_count(r, &count))
        return BAD("bad struct count");
    /* every child takes at least one byte */
    if ((uint64_t)count > r->left || !get_i64_array(r, count, &bls))
        return BAD("truncated struct blocklengths");
    if (!get_i64_array(r, count, &disps)) {
        free(bls);
        return BAD("truncated struct displacements");
    }
    dt_node **kids = dt_calloc((size_t)count, sizeof *kids);
    int rc = kids ? 0 : rfs_fail(RFS_E_NOMEM, "datatype decode: out of memory");
    for (int64_t i = 0; rc == 0 && i < count; i++) {
        if (bls[i] < 0)
            rc = BAD("negative struct blocklength");
        else
            rc = decode_node(r, depth + 1, &kids[i]);
    }
    if (rc == 0) {
        *out = dt_new_struct(count, bls, disps, kids);
        if (*out)
            return 0;
        rc = BAD("struct size or bounds overflow");
    }
    for (int64_t i = 0; kids && i < count; i++)
        dt_node_free(kids[i]);
    free(kids);
    free(bls);
    free(disps);
    return rc;
}

static int decode_subarray(reader *r, unsigned depth, dt_node **out)
{
    uint32_t ndims;
    uint8_t order;
    if (!get_u32(r, &ndims) || !get_u8(r, &order))
        return BAD("bad subarray header");
    if (ndims < 1 || ndims > RFS_DT_MAX_NDIMS || order > RFS_DT_ORDER_FORTRAN)
        return BAD("subarray with %u dims, order %u", ndims, order);
    int64_t a[3][RFS_DT_MAX_NDIMS];
    for (int k = 0; k < 3; k++)
        for (uint32_t i = 0; i < ndims; i++)
            if (!get_i64(r, &a[k][i]))
                return BAD("truncated subarray");
    dt_node *kid;
    int rc = decode_node(r, depth + 1, &kid);
    if (rc)
        return rc;
    return dt_expand_subarray((int)ndims, a[0], a[1], a[2], order, kid, out);
}

static int decode_darray(reader *r, unsigned depth, dt_node **out)
{
    uint32_t nprocs, rank, ndims;
    uint8_t order;
    if (!get_u32(r, &nprocs) || !get_u32(r, &rank) || !get_u32(r, &ndims) || !get_u8(r, &order))
        return BAD("bad darray header");
    if (ndims < 1 || ndims > RFS_DT_MAX_NDIMS || order > RFS_DT_ORDER_FORTRAN)
        return BAD("darray with %u dims, order %u", ndims, order);
    int64_t gsizes[RFS_DT_MAX_NDIMS], dargs[RFS_DT_MAX_NDIMS], psizes[RFS_DT_MAX_NDIMS];
    uint8_t distribs[RFS_DT_MAX_NDIMS];
    for (uint32_t i = 0; i < ndims; i++)
        if (!get_i64(r, &gsizes[i]) || !get_u8(r, &distribs[i]) || !get_i64(r, &dargs[i]) ||
            !get_i64(r, &psizes[i]))
            return BAD("truncated darray");
    dt_node *kid;
    int rc = decode_node(r, depth + 1, &kid);
    if (rc)
        return rc;
    return dt_expand_darray(nprocs, rank, (int)ndims, gsizes, distribs, dargs, psizes, order, kid,
                            out);
}

static int decode_resized(reader *r, unsigned depth, dt_node **out)
{
    int64_t lb, extent;
    if (!get_i64(r, &lb) || !get_i64(r, &extent))
        return BAD("truncated resized");
    dt_node *kid;
    int rc = decode_node(r, depth + 1, &kid);
    if (rc)
        return rc;
    *out = dt_new_resized(lb, extent, kid);
    if (!*out) {
        dt_node_free(kid);
        return BAD("resized bounds overflow");
    }
    return 0;
}

static int decode_kind(reader *r, uint8_t kind, unsigned depth, dt_node **out)
{
    switch (kind) {
    case RFS_DTW_NAMED: return decode_named(r, out);
    case RFS_DTW_DUP: return decode_node(r, depth + 1, out);
    case RFS_DTW_CONTIGUOUS:
    case RFS_DTW_VECTOR:
    case RFS_DTW_HVECTOR: return decode_vector(r, kind, depth, out);
    case RFS_DTW_INDEXED:
    case RFS_DTW_HINDEXED:
    case RFS_DTW_INDEXED_BLOCK:
    case RFS_DTW_HINDEXED_BLOCK: return decode_indexed(r, kind, depth, out);
    case RFS_DTW_STRUCT: return decode_struct(r, depth, out);
    case RFS_DTW_SUBARRAY: return decode_subarray(r, depth, out);
    case RFS_DTW_DARRAY: return decode_darray(r, depth, out);
    case RFS_DTW_RESIZED: return decode_resized(r, depth, out);
    default: return BAD("unknown node kind %u", kind);
    }
}

static int decode_node(reader *r, unsigned depth, dt_node **out)
{
    *out = NULL;
    if (depth >= RFS_DT_MAX_DEPTH)
        return BAD("nesting deeper than %d", RFS_DT_MAX_DEPTH);
    if (++r->nodes > RFS_DT_MAX_NODES)
        return BAD("more than %d nodes", RFS_DT_MAX_NODES);
    uint8_t kind;
    if (!get_u8(r, &kind))
        return BAD("truncated");
    int rc = decode_kind(r, kind, depth, out);
    /* SUBARRAY/DARRAY expansions deepen the tree; bound the result so that flattening and
     * freeing (both recursive) stay shallow. */
    if (rc == 0 &&
        ((*out)->height > DT_MAX_INTERNAL_DEPTH || (*out)->nnodes > DT_MAX_INTERNAL_NODES)) {
        dt_node_free(*out);
        *out = NULL;
        rc = BAD("expanded tree deeper than %d or larger than %u nodes", DT_MAX_INTERNAL_DEPTH,
                 DT_MAX_INTERNAL_NODES);
    }
    return rc;
}

static int decode_tree(const uint8_t *p, size_t len, dt_node **out)
{
    reader r = {p, len, 0};
    int rc = decode_node(&r, 0, out);
    if (rc == 0 && r.left != 0)
        rc = BAD("%zu trailing bytes", r.left);
    if (rc) {
        dt_node_free(*out);
        *out = NULL;
    }
    return rc;
}

int rfs_dt_decode(const uint8_t *enc, size_t len, rfs_dt **out)
{
    if (!out)
        return rfs_fail(RFS_E_INVAL, "rfs_dt_decode: no output");
    *out = NULL;
    if (!enc || len < RFS_DT_HEADER_LEN)
        return BAD("shorter than its header");
    if (enc[0] != RFS_DT_MAGIC0 || enc[1] != RFS_DT_MAGIC1 || enc[2] != RFS_DT_MAGIC2 ||
        enc[3] != RFS_DT_MAGIC3)
        return BAD("bad magic");
    if (enc[4] != RFS_DT_VERSION)
        return BAD("unsupported version %u", enc[4]);
    if (enc[5] != 0 || enc[6] != 0 || enc[7] != 0)
        return BAD("unknown flags");
    reader hr = {enc + 8, 8, 0};
    uint64_t total = 0;
    get_u64(&hr, &total);
    if (total != len)
        return BAD("length field %llu, buffer %zu", (unsigned long long)total, len);
    dt_node *root;
    int rc = decode_tree(enc + RFS_DT_HEADER_LEN, len - RFS_DT_HEADER_LEN, &root);
    if (rc)
        return rc;
    rfs_dt *t = malloc(sizeof *t);
    if (!t) {
        dt_node_free(root);
        return rfs_fail(RFS_E_NOMEM, "datatype decode: out of memory");
    }
    t->root = root;
    *out = t;
    return 0;
}

void rfs_dt_free(rfs_dt *t)
{
    if (!t)
        return;
    dt_node_free(t->root);
    free(t);
}

int dt_probe_tree(const uint8_t *tree, size_t len, int64_t *size, int64_t *lb, int64_t *extent)
{
    dt_node *root;
    int rc = decode_tree(tree, len, &root);
    if (rc)
        return rc;
    *size = root->size;
    *lb = root->lb;
    *extent = dt_extent(root);
    dt_node_free(root);
    return 0;
}
