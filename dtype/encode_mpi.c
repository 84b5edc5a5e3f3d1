/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Preorder traversal of an MPI datatype with PMPI_Type_get_envelope/get_contents, written in the
 * portable encoding. After each derived node the subtree just written is decoded again and its
 * size and bounds compared with what the MPI library reports: a size mismatch is an error, and
 * differing bounds (e.g. MPICH pads struct extents for alignment, a rule the standard leaves to
 * the implementation) are pinned with a RESIZED wrapper, so the decoder always reproduces the
 * local MPI's extent exactly. */
#include "encode_mpi.h"

#include "dt_format.h"
#include "dt_internal.h"

#include "common/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t *p;
    size_t n, cap;
    bool oom;
    size_t nodes;
} wbuf;

static void put_bytes(wbuf *w, const void *src, size_t n)
{
    if (w->oom)
        return;
    if (w->cap - w->n < n) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap - w->n < n)
            cap *= 2;
        uint8_t *p = realloc(w->p, cap);
        if (!p) {
            w->oom = true;
            return;
        }
        w->p = p;
        w->cap = cap;
    }
    memcpy(w->p + w->n, src, n);
    w->n += n;
}

static void put_u8(wbuf *w, unsigned v)
{
    uint8_t b = (uint8_t)v;
    put_bytes(w, &b, 1);
}

static void le64(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

static void put_u32(wbuf *w, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put_bytes(w, b, 4);
}

static void put_i64(wbuf *w, int64_t v)
{
    uint8_t b[8];
    le64(b, (uint64_t)v);
    put_bytes(w, b, 8);
}

static int mpi_fail(int rc, const char *what)
{
    int cls = rc;
    PMPI_Error_class(rc, &cls);
    rfs_fail(RFS_E_INVAL, "datatype encoding: %s failed (MPI error class %d)", what, cls);
    return cls;
}

#define type_fail(...) (rfs_fail(RFS_E_UNSUPPORTED, __VA_ARGS__), MPI_ERR_TYPE)

/* The pair types for MINLOC/MAXLOC have a padding hole on common ABIs (MPI_SHORT_INT: 2 data
 * bytes, 2 padding, 4 data). They are defined as the C struct {value; int}, so their true type
 * map follows from offsetof. */
struct pair_float {
    float v;
    int i;
};
struct pair_double {
    double v;
    int i;
};
struct pair_long {
    long v;
    int i;
};
struct pair_2int {
    int v;
    int i;
};
struct pair_short {
    short v;
    int i;
};
struct pair_ldouble {
    long double v;
    int i;
};

static bool pair_layout(MPI_Datatype t, MPI_Datatype *value, MPI_Aint *int_off)
{
#define PAIR(mpi, val, st)                    \
    if (t == (mpi)) {                         \
        *value = (val);                       \
        *int_off = (MPI_Aint)offsetof(st, i); \
        return true;                          \
    }
    PAIR(MPI_FLOAT_INT, MPI_FLOAT, struct pair_float)
    PAIR(MPI_DOUBLE_INT, MPI_DOUBLE, struct pair_double)
    PAIR(MPI_LONG_INT, MPI_LONG, struct pair_long)
    PAIR(MPI_2INT, MPI_INT, struct pair_2int)
    PAIR(MPI_SHORT_INT, MPI_SHORT, struct pair_short)
    PAIR(MPI_LONG_DOUBLE_INT, MPI_LONG_DOUBLE, struct pair_ldouble)
#undef PAIR
    return false;
}

/* A named type: size, lb and extent from the library, data runs from its true type map. */
static int enc_named(wbuf *w, MPI_Datatype t)
{
    MPI_Count size, lb, extent, tlb, textent;
    int rc = PMPI_Type_size_x(t, &size);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_get_extent_x(t, &lb, &extent);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_get_true_extent_x(t, &tlb, &textent);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "querying a named type");
    int64_t runs[4];
    uint32_t nruns = 0;
    MPI_Datatype value;
    MPI_Aint int_off;
    int vsize, isize;
    if (size > 0 && size != textent && pair_layout(t, &value, &int_off) &&
        PMPI_Type_size(value, &vsize) == MPI_SUCCESS &&
        PMPI_Type_size(MPI_INT, &isize) == MPI_SUCCESS && vsize + isize == size &&
        int_off >= vsize) {
        runs[0] = tlb;
        runs[1] = vsize;
        runs[2] = tlb + int_off;
        runs[3] = isize;
        nruns = 2;
    } else if (size > 0) {
        /* contiguous data (size == true extent), or an unknown named type with holes: then we
         * can only assume its data is contiguous from the true lb (documented limitation) */
        runs[0] = tlb;
        runs[1] = size;
        nruns = 1;
    }
    put_u8(w, RFS_DTW_NAMED);
    put_i64(w, size);
    put_i64(w, lb);
    put_i64(w, extent);
    put_u32(w, nruns);
    for (uint32_t i = 0; i < 2 * nruns; i++)
        put_i64(w, runs[i]);
    return MPI_SUCCESS;
}

static int enc_type(wbuf *w, MPI_Datatype t, int depth);

static int64_t map_distrib(int d)
{
    if (d == MPI_DISTRIBUTE_BLOCK)
        return RFS_DT_DIST_BLOCK;
    if (d == MPI_DISTRIBUTE_CYCLIC)
        return RFS_DT_DIST_CYCLIC;
    if (d == MPI_DISTRIBUTE_NONE)
        return RFS_DT_DIST_NONE;
    return -1;
}

static int map_order(int o)
{
    return o == MPI_ORDER_FORTRAN ? RFS_DT_ORDER_FORTRAN : RFS_DT_ORDER_C;
}

/* Writes the node's own fields (not its children) from get_contents' arrays. */
static int enc_fields(wbuf *w, int comb, const int *ints, const MPI_Aint *addrs, int *nkids)
{
    *nkids = 1;
    switch (comb) {
    case MPI_COMBINER_DUP: put_u8(w, RFS_DTW_DUP); return MPI_SUCCESS;
    case MPI_COMBINER_CONTIGUOUS:
        put_u8(w, RFS_DTW_CONTIGUOUS);
        put_i64(w, ints[0]);
        return MPI_SUCCESS;
    case MPI_COMBINER_VECTOR:
        put_u8(w, RFS_DTW_VECTOR);
        put_i64(w, ints[0]);
        put_i64(w, ints[1]);
        put_i64(w, ints[2]);
        return MPI_SUCCESS;
    case MPI_COMBINER_HVECTOR:
        put_u8(w, RFS_DTW_HVECTOR);
        put_i64(w, ints[0]);
        put_i64(w, ints[1]);
        put_i64(w, addrs[0]);
        return MPI_SUCCESS;
    case MPI_COMBINER_INDEXED:
        put_u8(w, RFS_DTW_INDEXED);
        put_i64(w, ints[0]);
        for (int i = 0; i < 2 * ints[0]; i++)
            put_i64(w, ints[1 + i]);
        return MPI_SUCCESS;
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_STRUCT:
        put_u8(w, comb == MPI_COMBINER_STRUCT ? RFS_DTW_STRUCT : RFS_DTW_HINDEXED);
        put_i64(w, ints[0]);
        for (int i = 0; i < ints[0]; i++)
            put_i64(w, ints[1 + i]);
        for (int i = 0; i < ints[0]; i++)
            put_i64(w, addrs[i]);
        if (comb == MPI_COMBINER_STRUCT)
            *nkids = ints[0];
        return MPI_SUCCESS;
    case MPI_COMBINER_INDEXED_BLOCK:
        put_u8(w, RFS_DTW_INDEXED_BLOCK);
        put_i64(w, ints[0]);
        put_i64(w, ints[1]);
        for (int i = 0; i < ints[0]; i++)
            put_i64(w, ints[2 + i]);
        return MPI_SUCCESS;
    case MPI_COMBINER_HINDEXED_BLOCK:
        put_u8(w, RFS_DTW_HINDEXED_BLOCK);
        put_i64(w, ints[0]);
        put_i64(w, ints[1]);
        for (int i = 0; i < ints[0]; i++)
            put_i64(w, addrs[i]);
        return MPI_SUCCESS;
    case MPI_COMBINER_SUBARRAY: {
        int n = ints[0];
        put_u8(w, RFS_DTW_SUBARRAY);
        put_u32(w, (uint32_t)n);
        put_u8(w, (unsigned)map_order(ints[1 + 3 * n]));
        for (int i = 0; i < 3 * n; i++)
            put_i64(w, ints[1 + i]);
        return MPI_SUCCESS;
    }
    case MPI_COMBINER_DARRAY: {
        int n = ints[2];
        const int *gs = ints + 3, *dist = gs + n, *dargs = dist + n, *ps = dargs + n;
        put_u8(w, RFS_DTW_DARRAY);
        put_u32(w, (uint32_t)ints[0]);
        put_u32(w, (uint32_t)ints[1]);
        put_u32(w, (uint32_t)n);
        put_u8(w, (unsigned)map_order(ps[n]));
        for (int i = 0; i < n; i++) {
            int64_t d = map_distrib(dist[i]);
            if (d < 0)
                return type_fail("datatype encoding: darray distribution %d", dist[i]);
            put_i64(w, gs[i]);
            put_u8(w, (unsigned)d);
            put_i64(w, dargs[i] == MPI_DISTRIBUTE_DFLT_DARG ? RFS_DT_DARG_DEFAULT : dargs[i]);
            put_i64(w, ps[i]);
        }
        return MPI_SUCCESS;
    }
    case MPI_COMBINER_RESIZED:
        put_u8(w, RFS_DTW_RESIZED);
        put_i64(w, addrs[0]);
        put_i64(w, addrs[1]);
        return MPI_SUCCESS;
    default:
        return type_fail("datatype encoding: unsupported combiner %d (F90, *_INTEGER or newer)",
                         comb);
    }
}

static bool is_named(MPI_Datatype t)
{
    int ni, na, nd, comb;
    return PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) == MPI_SUCCESS &&
           comb == MPI_COMBINER_NAMED;
}

/* Pins the subtree written at [start, w->n) to the library's bounds if the decoder's differ. */
static int check_subtree(wbuf *w, size_t start, MPI_Datatype t)
{
    MPI_Count size, lb, extent;
    int rc = PMPI_Type_size_x(t, &size);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_get_extent_x(t, &lb, &extent);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "querying a derived type");
    int64_t dsize, dlb, dext;
    if (dt_probe_tree(w->p + start, w->n - start, &dsize, &dlb, &dext) != 0) {
        rfs_fail_cause(RFS_E_UNSUPPORTED, "datatype encoding: the decoder rejects this type");
        return MPI_ERR_TYPE;
    }
    if (dsize != size) {
        rfs_fail(RFS_E_INVAL, "datatype encoding: decoded size %lld, MPI says %lld",
                 (long long)dsize, (long long)size);
        return MPI_ERR_TYPE;
    }
    if (dlb == lb && dext == extent)
        return MPI_SUCCESS;
    uint8_t hdr[17];
    hdr[0] = RFS_DTW_RESIZED;
    le64(hdr + 1, (uint64_t)(int64_t)lb);
    le64(hdr + 9, (uint64_t)(int64_t)extent);
    size_t end = w->n;
    put_bytes(w, hdr, sizeof hdr); /* grow by the header's size */
    if (w->oom)
        return MPI_ERR_NO_MEM;
    memmove(w->p + start + sizeof hdr, w->p + start, end - start);
    memcpy(w->p + start, hdr, sizeof hdr);
    if (++w->nodes > RFS_DT_MAX_NODES)
        return type_fail("datatype encoding: more than %d nodes", RFS_DT_MAX_NODES);
    return MPI_SUCCESS;
}

static int enc_type(wbuf *w, MPI_Datatype t, int depth)
{
    int ni, na, nd, comb;
    if (t == MPI_DATATYPE_NULL)
        return type_fail("datatype encoding: MPI_DATATYPE_NULL");
    if (depth >= RFS_DT_MAX_DEPTH)
        return type_fail("datatype encoding: nested deeper than %d", RFS_DT_MAX_DEPTH);
    if (++w->nodes > RFS_DT_MAX_NODES)
        return type_fail("datatype encoding: more than %d nodes", RFS_DT_MAX_NODES);
    int rc = PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Type_get_envelope");
    if (comb == MPI_COMBINER_NAMED)
        return enc_named(w, t);

    int *ints = malloc(((size_t)ni + 1) * sizeof *ints);
    MPI_Aint *addrs = malloc(((size_t)na + 1) * sizeof *addrs);
    MPI_Datatype *types = malloc(((size_t)nd + 1) * sizeof *types);
    if (!ints || !addrs || !types) {
        free(ints);
        free(addrs);
        free(types);
        rfs_fail(RFS_E_NOMEM, "datatype encoding: out of memory");
        return MPI_ERR_NO_MEM;
    }
    rc = PMPI_Type_get_contents(t, ni, na, nd, ints, addrs, types);
    if (rc != MPI_SUCCESS) {
        free(ints);
        free(addrs);
        free(types);
        return mpi_fail(rc, "MPI_Type_get_contents");
    }
    size_t start = w->n;
    int nkids = 0;
    rc = enc_fields(w, comb, ints, addrs, &nkids);
    for (int i = 0; rc == MPI_SUCCESS && i < nkids && i < nd; i++)
        rc = enc_type(w, types[i], depth + 1);
    /* the returned handles are ours to free, whatever happened above */
    for (int i = 0; i < nd; i++)
        if (!is_named(types[i]))
            PMPI_Type_free(&types[i]);
    free(ints);
    free(addrs);
    free(types);
    if (rc == MPI_SUCCESS && w->oom)
        rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
        rc = check_subtree(w, start, t);
    return rc;
}

int rfs_dt_encode_mpi(MPI_Datatype t, uint8_t **enc, size_t *len)
{
    if (!enc || !len) {
        rfs_fail(RFS_E_INVAL, "rfs_dt_encode_mpi: null output");
        return MPI_ERR_ARG;
    }
    *enc = NULL;
    *len = 0;
    wbuf w = {0};
    uint8_t hdr[RFS_DT_HEADER_LEN] = {
        RFS_DT_MAGIC0, RFS_DT_MAGIC1, RFS_DT_MAGIC2, RFS_DT_MAGIC3, RFS_DT_VERSION, 0, 0, 0};
    put_bytes(&w, hdr, sizeof hdr);
    int rc = enc_type(&w, t, 0);
    if (rc == MPI_SUCCESS && w.oom) {
        rfs_fail(RFS_E_NOMEM, "datatype encoding: out of memory");
        rc = MPI_ERR_NO_MEM;
    }
    if (rc != MPI_SUCCESS) {
        free(w.p);
        return rc;
    }
    le64(w.p + 8, (uint64_t)w.n);
    *enc = w.p;
    *len = w.n;
    return MPI_SUCCESS;
}
