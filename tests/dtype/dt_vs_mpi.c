/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Checks the portable datatype encoding against the MPI library itself, for many datatypes:
 * - rfs_dt_encode_mpi + rfs_dt_decode + rfs_dt_flatten give MPI's size, lb and extent;
 * - packing with the flattened runs gives exactly MPI_Pack's bytes (3 copies, so tiling by the
 *   extent is covered too);
 * - rfs_flat_map of random file views equals a reference built only from MPI (MPI_Unpack of
 *   numbered stream bytes tells where each data byte of the type lives).
 * Run with one process. Exits non-zero on the first mismatch, naming the datatype. */
#include "dtype/dtype.h"
#include "dtype/dt_format.h"
#include "dtype/encode_mpi.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, checked, pinned, mapped, library_bugs;
static unsigned long long rng = 88172645463325252ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

#define FAIL(name, ...)                     \
    do {                                    \
        fprintf(stderr, "FAIL %s: ", name); \
        fprintf(stderr, __VA_ARGS__);       \
        fprintf(stderr, "\n");              \
        failures++;                         \
        return;                             \
    } while (0)

/* ---- reference file view mapping, built from MPI_Unpack alone ---- */

typedef struct {
    uint64_t *off, *len;
    size_t n, cap;
} runlist;

static void rl_add(runlist *r, uint64_t off, uint64_t len)
{
    if (r->n && r->off[r->n - 1] + r->len[r->n - 1] == off) {
        r->len[r->n - 1] += len;
        return;
    }
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->off = realloc(r->off, r->cap * sizeof *r->off);
        r->len = realloc(r->len, r->cap * sizeof *r->len);
    }
    r->off[r->n] = off;
    r->len[r->n] = len;
    r->n++;
}

static int collect(void *ctx, uint64_t off, uint64_t len)
{
    rl_add(ctx, off, len);
    return 0;
}

/* where[r] = offset (from the type's origin) of data byte r of one copy of t */
static bool stream_positions(MPI_Datatype t, MPI_Count size, int64_t **where_out)
{
    MPI_Count tlb, text;
    MPI_Type_get_true_extent_x(t, &tlb, &text);
    unsigned char *mem = malloc((size_t)text + 1), *stream = malloc((size_t)size);
    int64_t *where = calloc((size_t)size, sizeof *where);
    unsigned char *base = mem - tlb;
    /* planes 0..2 carry the bits of the stream index; touched marks bytes written */
    unsigned char *touched = calloc((size_t)text + 1, 1);
    int pos;
    memset(mem, 0, (size_t)text + 1);
    memset(stream, 1, (size_t)size);
    pos = 0;
    MPI_Unpack(stream, (int)size, &pos, touched - tlb, 1, t, MPI_COMM_SELF);
    uint32_t *idx = calloc((size_t)text + 1, sizeof *idx);
    for (int plane = 0; plane < 3; plane++) {
        for (MPI_Count r = 0; r < size; r++)
            stream[r] = (unsigned char)(r >> (8 * plane));
        memset(mem, 0, (size_t)text + 1);
        pos = 0;
        MPI_Unpack(stream, (int)size, &pos, base, 1, t, MPI_COMM_SELF);
        for (MPI_Count m = 0; m < text; m++)
            idx[m] |= (uint32_t)mem[m] << (8 * plane);
    }
    MPI_Count seen = 0;
    for (MPI_Count m = 0; m < text; m++) {
        if (touched[m]) {
            where[idx[m]] = tlb + m;
            seen++;
        }
    }
    free(mem);
    free(stream);
    free(touched);
    free(idx);
    if (seen != size) {
        free(where);
        return false; /* overlapping type: no unique position per byte */
    }
    *where_out = where;
    return true;
}

static void check_map(const char *name, MPI_Datatype t, const rfs_flat *f)
{
    MPI_Count size, lb, extent, tlb, text;
    MPI_Type_size_x(t, &size);
    MPI_Type_get_extent_x(t, &lb, &extent);
    MPI_Type_get_true_extent_x(t, &tlb, &text);
    if (size <= 0 || extent <= 0 || size > (1 << 20) || !f->monotonic)
        return;
    int64_t *where;
    if (!stream_positions(t, size, &where))
        return;
    mapped++;
    for (int trial = 0; trial < 12; trial++) {
        uint64_t disp = (uint64_t)(tlb < 0 ? -tlb : 0) + rnd() % 64;
        uint64_t tiles = trial % 3 == 0 ? rnd() % 1000000000ull : rnd() % 4;
        uint64_t pos = tiles * (uint64_t)size + rnd() % (uint64_t)size;
        uint64_t len = 1 + rnd() % (3 * (uint64_t)size + 17);
        runlist want = {0}, got = {0};
        for (uint64_t b = pos; b < pos + len; b++) {
            uint64_t k = b / (uint64_t)size, r = b % (uint64_t)size;
            rl_add(&want, disp + k * (uint64_t)extent + (uint64_t)where[r], 1);
        }
        int rc = rfs_flat_map(f, disp, pos, len, collect, &got);
        bool same = rc == 0 && got.n == want.n;
        for (size_t i = 0; same && i < got.n; i++)
            same = got.off[i] == want.off[i] && got.len[i] == want.len[i];
        free(want.off);
        free(want.len);
        free(got.off);
        free(got.len);
        if (!same) {
            free(where);
            FAIL(name, "rfs_flat_map(disp %llu, pos %llu, len %llu) differs from MPI (rc %d)",
                 (unsigned long long)disp, (unsigned long long)pos, (unsigned long long)len, rc);
        }
    }
    free(where);
}

/* ---- the main check ---- */

static void check(const char *name, MPI_Datatype t)
{
    checked++;
    uint8_t *enc;
    size_t len;
    int rc = rfs_dt_encode_mpi(t, &enc, &len);
    if (rc != MPI_SUCCESS)
        FAIL(name, "encode failed: %d", rc);
    /* count the types whose bounds the encoder had to pin to the library's (see encode_mpi.c) */
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    if (comb != MPI_COMBINER_RESIZED && enc[RFS_DT_HEADER_LEN] == RFS_DTW_RESIZED) {
        pinned++;
        if (getenv("DT_VERBOSE"))
            fprintf(stderr, "pinned bounds: %s\n", name);
    }
    rfs_dt *dt;
    rc = rfs_dt_decode(enc, len, &dt);
    free(enc);
    if (rc)
        FAIL(name, "decode failed: %d", rc);
    rfs_flat *f;
    rc = rfs_dt_flatten(dt, &f);
    rfs_dt_free(dt);
    if (rc)
        FAIL(name, "flatten failed: %d", rc);

    MPI_Count size, lb, extent, tlb, text;
    MPI_Type_size_x(t, &size);
    MPI_Type_get_extent_x(t, &lb, &extent);
    MPI_Type_get_true_extent_x(t, &tlb, &text);
    if (f->size != size || f->lb != lb || f->extent != extent) {
        fprintf(stderr, "FAIL %s: size/lb/extent %lld/%lld/%lld, MPI %lld/%lld/%lld\n", name,
                (long long)f->size, (long long)f->lb, (long long)f->extent, (long long)size,
                (long long)lb, (long long)extent);
        failures++;
        rfs_flat_free(f);
        return;
    }
    for (size_t i = 0; i < f->n; i++) {
        if (f->len[i] <= 0 || f->off[i] < tlb || f->off[i] + f->len[i] > tlb + text) {
            fprintf(stderr, "FAIL %s: run %zu (%lld, %lld) outside the true extent\n", name, i,
                    (long long)f->off[i], (long long)f->len[i]);
            failures++;
            rfs_flat_free(f);
            return;
        }
    }

    /* pack 3 copies both ways */
    int count = extent > 0 ? 3 : 1;
    MPI_Count lo = tlb + (extent < 0 ? (count - 1) * extent : 0);
    MPI_Count hi = tlb + text + (extent > 0 ? (count - 1) * extent : 0);
    size_t span = (size_t)(hi - lo) + 1;
    unsigned char *mem = malloc(span);
    for (size_t i = 0; i < span; i++)
        mem[i] = (unsigned char)rnd();
    unsigned char *base = mem - lo;
    int packsize = 0, pos = 0;
    MPI_Pack_size(count, t, MPI_COMM_SELF, &packsize);
    unsigned char *want = malloc((size_t)packsize + 1),
                  *got = malloc((size_t)count * (size_t)size + 1);
    MPI_Pack(base, count, t, want, packsize, &pos, MPI_COMM_SELF);
    size_t n = 0;
    for (int c = 0; c < count; c++)
        for (size_t i = 0; i < f->n; i++) {
            memcpy(got + n, base + c * extent + f->off[i], (size_t)f->len[i]);
            n += (size_t)f->len[i];
        }
    /* MPI must agree with itself: count copies pack like single copies extent apart. Open MPI
     * 4.1 does not for a struct holding an empty member; such library bugs are reported, not
     * counted against rfs. */
    unsigned char *single = malloc((size_t)packsize + 1);
    int spos = 0;
    for (int c = 0; c < count; c++)
        MPI_Pack(base + c * extent, 1, t, single, packsize, &spos, MPI_COMM_SELF);
    bool mpi_consistent = spos == pos && memcmp(single, want, (size_t)pos) == 0;
    free(single);
    if (!mpi_consistent) {
        library_bugs++;
        printf("NOTE %s: MPI_Pack of %d copies differs from %d single packs (MPI library bug); "
               "comparing against the single packs\n",
               name, count, count);
        pos = 0;
        for (int c = 0; c < count; c++)
            MPI_Pack(base + c * extent, 1, t, want, packsize, &pos, MPI_COMM_SELF);
    }
    if ((size_t)pos != n || memcmp(want, got, n) != 0) {
        fprintf(stderr, "FAIL %s: packed bytes differ (MPI %d bytes, rfs %zu)\n", name, pos, n);
        failures++;
    } else {
        check_map(name, t, f);
    }
    free(mem);
    free(want);
    free(got);
    rfs_flat_free(f);
}

/* commits, checks, frees */
static void check_free(const char *name, MPI_Datatype t)
{
    MPI_Type_commit(&t);
    check(name, t);
    MPI_Type_free(&t);
}

static void expect_unsupported(const char *name, MPI_Datatype t)
{
    uint8_t *enc = NULL;
    size_t len;
    checked++;
    int rc = rfs_dt_encode_mpi(t, &enc, &len);
    int cls = rc;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_TYPE || enc != NULL) {
        fprintf(stderr, "FAIL %s: expected MPI_ERR_TYPE, got %d\n", name, rc);
        failures++;
    }
}

/* ---- the datatypes ---- */

static void named_types(void)
{
    static const struct {
        const char *name;
        MPI_Datatype t;
    } named[] = {
        {"MPI_INT", MPI_INT},
        {"MPI_DOUBLE", MPI_DOUBLE},
        {"MPI_CHAR", MPI_CHAR},
        {"MPI_BYTE", MPI_BYTE},
        {"MPI_PACKED", MPI_PACKED},
        {"MPI_LONG_DOUBLE", MPI_LONG_DOUBLE},
        {"MPI_SHORT_INT", MPI_SHORT_INT},
        {"MPI_DOUBLE_INT", MPI_DOUBLE_INT},
        {"MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT},
        {"MPI_FLOAT_INT", MPI_FLOAT_INT},
        {"MPI_2INT", MPI_2INT},
        {"MPI_LONG_INT", MPI_LONG_INT},
        {"MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX},
        {"MPI_INT64_T", MPI_INT64_T},
    };
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        check(named[i].name, named[i].t);
    MPI_Datatype t;
    MPI_Type_contiguous(3, MPI_SHORT_INT, &t);
    check_free("contiguous(3, SHORT_INT)", t);
    MPI_Type_contiguous(2, MPI_LONG_DOUBLE_INT, &t);
    check_free("contiguous(2, LONG_DOUBLE_INT)", t);
}

static void simple_types(void)
{
    MPI_Datatype t, u, v;
    MPI_Type_contiguous(5, MPI_INT, &t);
    check_free("contiguous(5, int)", t);
    MPI_Type_contiguous(0, MPI_INT, &t);
    check_free("contiguous(0, int)", t);
    MPI_Type_contiguous(1 << 20, MPI_BYTE, &t);
    check_free("contiguous(1M, byte)", t);

    MPI_Type_vector(4, 2, 3, MPI_INT, &t);
    MPI_Type_dup(t, &u);
    check_free("dup(vector)", u);
    check_free("vector(4,2,3,int)", t);
    MPI_Type_vector(3, 1, -2, MPI_DOUBLE, &t);
    check_free("vector(3,1,-2,double)", t);
    MPI_Type_vector(0, 2, 3, MPI_INT, &t);
    check_free("vector(0,...)", t);
    MPI_Type_vector(3, 0, 2, MPI_INT, &t);
    check_free("vector(3,0,2,int)", t);
    MPI_Type_vector(5, 3, 3, MPI_INT, &t);
    check_free("vector(5,3,3) contiguous", t);

    MPI_Type_create_hvector(3, 2, 20, MPI_INT, &t);
    check_free("hvector(3,2,20,int)", t);
    MPI_Type_create_hvector(3, 1, -16, MPI_SHORT, &t);
    check_free("hvector(3,1,-16,short)", t);

    int bl[] = {2, 0, 1}, di[] = {5, 1, 0};
    MPI_Type_indexed(3, bl, di, MPI_INT, &t);
    check_free("indexed decreasing with zero block", t);
    int bl2[] = {1, 2}, di2[] = {-3, 4};
    MPI_Type_indexed(2, bl2, di2, MPI_INT, &t);
    check_free("indexed negative", t);
    MPI_Type_indexed(0, bl2, di2, MPI_INT, &t);
    check_free("indexed(0)", t);

    MPI_Aint hd[] = {-8, 12};
    MPI_Type_create_hindexed(2, bl2, hd, MPI_DOUBLE, &t);
    check_free("hindexed negative", t);
    int ib[] = {0, 5, 9};
    MPI_Type_create_indexed_block(3, 2, ib, MPI_INT, &t);
    check_free("indexed_block", t);
    MPI_Aint hb[] = {-24, 40};
    MPI_Type_create_hindexed_block(2, 1, hb, MPI_DOUBLE, &t);
    check_free("hindexed_block negative", t);
    MPI_Type_create_hindexed_block(2, 0, hb, MPI_DOUBLE, &t);
    check_free("hindexed_block zero blocklen", t);

    MPI_Type_create_resized(MPI_INT, -4, 12, &t);
    check_free("resized(int,-4,12)", t);
    MPI_Type_create_resized(MPI_INT, 0, 8, &u);
    MPI_Type_create_resized(u, 2, 20, &v);
    MPI_Type_contiguous(3, v, &t);
    check_free("contiguous(3, resized(resized(int)))", t);
    check_free("resized of resized", v);
    MPI_Type_contiguous(3, u, &t);
    check_free("contiguous(3, resized(int,0,8))", t);
    MPI_Type_create_resized(u, -16, 4, &v);
    MPI_Type_vector(3, 2, 2, v, &t);
    check_free("vector of resized negative lb", t);
    check_free("resized negative lb", v);
    MPI_Type_free(&u);
    MPI_Type_vector(2, 1, 3, MPI_INT, &u);
    MPI_Type_create_resized(u, 0, 100, &t);
    MPI_Type_free(&u);
    check_free("resized(vector,0,100)", t);
}

struct cstruct {
    int a;
    double b;
    char c;
};

static void struct_types(void)
{
    MPI_Datatype t, u, r;
    int bl[] = {1, 1, 1};
    MPI_Aint d[] = {offsetof(struct cstruct, a), offsetof(struct cstruct, b),
                    offsetof(struct cstruct, c)};
    MPI_Datatype ty[] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    MPI_Type_create_struct(3, bl, d, ty, &t);
    MPI_Type_contiguous(4, t, &u);
    check_free("contiguous(4, struct{int,double,char})", u);
    check_free("struct{int,double,char}", t);

    /* a zero-blocklen member far away must not move the bounds */
    int bl2[] = {2, 0, 1};
    MPI_Aint d2[] = {8, 1000, -4};
    MPI_Datatype ty2[] = {MPI_INT, MPI_DOUBLE, MPI_SHORT};
    MPI_Type_create_struct(3, bl2, d2, ty2, &t);
    check_free("struct with zero block", t);

    /* lb/ub from resized members */
    MPI_Type_create_resized(MPI_INT, -8, 32, &r);
    int bl3[] = {1, 2, 1};
    MPI_Aint d3[] = {100, 0, -50};
    MPI_Datatype ty3[] = {r, MPI_CHAR, MPI_SHORT_INT};
    MPI_Type_create_struct(3, bl3, d3, ty3, &t);
    MPI_Type_free(&r);
    MPI_Type_vector(2, 1, 2, t, &u);
    check_free("vector(struct with resized member)", u);
    check_free("struct with resized member", t);

    MPI_Type_create_struct(0, bl, d, ty, &t);
    check_free("struct(0)", t);

    /* struct of an empty type */
    MPI_Type_contiguous(0, MPI_INT, &r);
    MPI_Datatype ty4[] = {MPI_DOUBLE, r};
    int bl4[] = {1, 1};
    MPI_Aint d4[] = {0, 64};
    MPI_Type_create_struct(2, bl4, d4, ty4, &t);
    MPI_Type_free(&r);
    check_free("struct with empty member", t);
}

static void subarray_types(void)
{
    static const struct {
        int ndims, sizes[4], subsizes[4], starts[4];
    } cases[] = {
        {1, {10}, {4}, {3}},
        {2, {6, 5}, {3, 2}, {1, 2}},
        {2, {6, 5}, {6, 5}, {0, 0}},
        {2, {4, 4}, {1, 4}, {3, 0}},
        {3, {4, 5, 6}, {2, 3, 4}, {1, 1, 2}},
        {3, {3, 1, 7}, {3, 1, 1}, {0, 0, 6}},
        {4, {2, 3, 4, 5}, {1, 2, 3, 4}, {1, 0, 1, 1}},
    };
    MPI_Datatype olds[3], tmp;
    MPI_Type_create_resized(MPI_DOUBLE, 0, 16, &olds[2]);
    olds[0] = MPI_INT;
    MPI_Type_vector(2, 1, 2, MPI_SHORT, &olds[1]);
    const char *oldname[] = {"int", "vector(short)", "resized(double,0,16)"};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int o = 0; o < 2; o++)
            for (int k = 0; k < 3; k++) {
                char name[160];
                snprintf(name, sizeof name, "subarray case %zu order %s of %s", c, o ? "F" : "C",
                         oldname[k]);
                MPI_Type_create_subarray(cases[c].ndims, cases[c].sizes, cases[c].subsizes,
                                         cases[c].starts, o ? MPI_ORDER_FORTRAN : MPI_ORDER_C,
                                         olds[k], &tmp);
                check_free(name, tmp);
            }
    /* nested: subarray of a subarray, vector of subarrays */
    int sz[] = {4, 4}, sub[] = {2, 2}, st[] = {1, 1};
    MPI_Datatype inner, outer;
    MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &inner);
    MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_FORTRAN, inner, &outer);
    MPI_Type_vector(2, 1, 3, outer, &tmp);
    check_free("vector(subarray(subarray))", tmp);
    check_free("subarray(subarray)", outer);
    MPI_Type_free(&inner);
    MPI_Type_free(&olds[1]);
    MPI_Type_free(&olds[2]);
}

static void darray_types(void)
{
    static const struct {
        int nprocs, ndims, gsizes[3], distribs[3], dargs[3], psizes[3];
    } cases[] = {
        {4,
         2,
         {8, 6},
         {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK},
         {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG},
         {2, 2}},
        {4,
         2,
         {7, 5},
         {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK},
         {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG},
         {2, 2}},
        {3, 1, {7}, {MPI_DISTRIBUTE_CYCLIC}, {2}, {3}},
        {3, 1, {10}, {MPI_DISTRIBUTE_CYCLIC}, {MPI_DISTRIBUTE_DFLT_DARG}, {3}},
        {6,
         2,
         {9, 10},
         {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK},
         {2, MPI_DISTRIBUTE_DFLT_DARG},
         {3, 2}},
        {2,
         2,
         {5, 6},
         {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_CYCLIC},
         {MPI_DISTRIBUTE_DFLT_DARG, 3},
         {1, 2}},
        {4, 1, {2}, {MPI_DISTRIBUTE_BLOCK}, {MPI_DISTRIBUTE_DFLT_DARG}, {4}},
        {3, 1, {10}, {MPI_DISTRIBUTE_BLOCK}, {4}, {3}},
        {8,
         3,
         {4, 6, 5},
         {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_CYCLIC},
         {MPI_DISTRIBUTE_DFLT_DARG, 1, 2},
         {2, 2, 2}},
        {1,
         2,
         {3, 4},
         {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_NONE},
         {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG},
         {1, 1}},
    };
    MPI_Datatype olds[2], tmp;
    olds[0] = MPI_INT;
    MPI_Type_create_resized(MPI_SHORT, -2, 6, &olds[1]);
    const char *oldname[] = {"int", "resized(short,-2,6)"};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int rank = 0; rank < cases[c].nprocs; rank++)
            for (int o = 0; o < 2; o++)
                for (int k = 0; k < 2; k++) {
                    char name[160];
                    snprintf(name, sizeof name, "darray case %zu rank %d order %s of %s", c, rank,
                             o ? "F" : "C", oldname[k]);
                    int rc = MPI_Type_create_darray(
                        cases[c].nprocs, rank, cases[c].ndims, cases[c].gsizes, cases[c].distribs,
                        cases[c].dargs, cases[c].psizes, o ? MPI_ORDER_FORTRAN : MPI_ORDER_C,
                        olds[k], &tmp);
                    if (rc != MPI_SUCCESS) {
                        fprintf(stderr, "FAIL %s: MPI rejected it\n", name);
                        failures++;
                        continue;
                    }
                    check_free(name, tmp);
                }
    /* darray nested in hindexed */
    int gs[] = {6}, di[] = {MPI_DISTRIBUTE_CYCLIC}, da[] = {2}, ps[] = {2}, bl[] = {1, 1};
    MPI_Aint d[] = {0, 200};
    MPI_Type_create_darray(2, 1, 1, gs, di, da, ps, MPI_ORDER_C, MPI_DOUBLE, &tmp);
    MPI_Datatype h;
    MPI_Type_create_hindexed(2, bl, d, tmp, &h);
    check_free("hindexed(darray)", h);
    MPI_Type_free(&tmp);
    MPI_Type_free(&olds[1]);
}

static void nested_types(void)
{
    MPI_Datatype a, b, c, d;
    /* build a deep chain: vector of struct of indexed of resized ... */
    MPI_Type_create_resized(MPI_INT, 0, 12, &a);
    int bl[] = {1, 2}, di[] = {3, 0};
    MPI_Type_indexed(2, bl, di, a, &b);
    MPI_Type_free(&a);
    int sbl[] = {1, 1};
    MPI_Aint sd[] = {-40, 8};
    MPI_Datatype sty[] = {b, MPI_DOUBLE};
    MPI_Type_create_struct(2, sbl, sd, sty, &c);
    MPI_Type_free(&b);
    MPI_Type_create_hvector(3, 2, 200, c, &d);
    MPI_Type_free(&c);
    check_free("hvector(struct(indexed(resized)))", d);

    /* a chain 40 deep */
    MPI_Datatype t = MPI_INT;
    for (int i = 0; i < 40; i++) {
        MPI_Datatype n;
        if (i % 2)
            MPI_Type_contiguous(2, t, &n);
        else
            MPI_Type_create_resized(t, 0, 8 << (i / 2), &n);
        if (t != MPI_INT)
            MPI_Type_free(&t);
        t = n;
        if (i == 20) {
            MPI_Type_commit(&t);
            check("chain depth 21", t);
        }
    }
    check_free("chain depth 40", t);

    /* many random indexed types */
    for (int trial = 0; trial < 50; trial++) {
        int n = 1 + (int)(rnd() % 20), bls[20], dis[20];
        for (int i = 0; i < n; i++) {
            bls[i] = (int)(rnd() % 4);
            dis[i] = (int)(rnd() % 64) - 16;
        }
        MPI_Datatype x, y;
        MPI_Type_indexed(n, bls, dis, trial % 2 ? MPI_SHORT_INT : MPI_INT, &x);
        MPI_Type_vector(2, 1, 3, x, &y);
        MPI_Type_free(&x);
        char name[64];
        snprintf(name, sizeof name, "random indexed %d", trial);
        check_free(name, y);
    }
    /* monotonic random hindexed filetypes (for the view mapping) */
    for (int trial = 0; trial < 30; trial++) {
        int n = 1 + (int)(rnd() % 12), bls[12];
        MPI_Aint dis[12], at = (MPI_Aint)(rnd() % 8);
        for (int i = 0; i < n; i++) {
            bls[i] = 1 + (int)(rnd() % 5);
            dis[i] = at;
            at += bls[i] * 4 + (MPI_Aint)(rnd() % 3) * 4;
        }
        MPI_Datatype x, y;
        MPI_Type_create_hindexed(n, bls, dis, MPI_INT, &x);
        MPI_Type_create_resized(x, 0, at + (MPI_Aint)(rnd() % 16), &y);
        MPI_Type_free(&x);
        char name[64];
        snprintf(name, sizeof name, "random filetype %d", trial);
        check_free(name, y);
    }
}

static void unsupported_types(void)
{
    expect_unsupported("MPI_DATATYPE_NULL", MPI_DATATYPE_NULL);
    MPI_Datatype t;
    if (MPI_Type_create_f90_integer(9, &t) == MPI_SUCCESS)
        expect_unsupported("f90_integer(9)", t); /* not freed: f90 types are predefined */
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    named_types();
    simple_types();
    struct_types();
    subarray_types();
    darray_types();
    nested_types();
    unsupported_types();
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int liblen;
    MPI_Get_library_version(lib, &liblen);
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = 0;
    printf("%d datatypes checked (%d with bounds pinned to the library's, %d view-mapped, %d MPI "
           "library "
           "bugs noted), %d failures (%s)\n",
           checked, pinned, mapped, library_bugs, failures, lib);
    MPI_Finalize();
    return failures ? 1 : 0;
}
