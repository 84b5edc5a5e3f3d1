/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the datatype decoder, flattener and view mapping on hand-built encodings, and
 * of the decoder's defences against malformed ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dtype/dt_format.h"
#include "dtype/dt_internal.h"
#include "dtype/dtype.h"
#include "rfs/rfs.h"

#include <stdlib.h>
#include <string.h>

/* ---- encoding builder ---- */

typedef struct {
    uint8_t *b;
    size_t n, cap;
} enc;

static void put(enc *e, const void *p, size_t n)
{
    if (e->n + n > e->cap) {
        e->cap = (e->n + n) * 2 + 64;
        e->b = realloc(e->b, e->cap);
        assert_non_null(e->b);
    }
    memcpy(e->b + e->n, p, n);
    e->n += n;
}

static void u8(enc *e, unsigned v)
{
    uint8_t b = (uint8_t)v;
    put(e, &b, 1);
}

static void u32(enc *e, uint32_t v)
{
    uint8_t b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    put(e, b, 4);
}

static void i64(enc *e, int64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)v >> (8 * i));
    put(e, b, 8);
}

static enc start(void)
{
    enc e = {0};
    u8(&e, 'R');
    u8(&e, 'F');
    u8(&e, 'D');
    u8(&e, 'T');
    u8(&e, RFS_DT_VERSION);
    u8(&e, 0);
    u8(&e, 0);
    u8(&e, 0);
    i64(&e, 0); /* patched by finish */
    return e;
}

static void finish(enc *e)
{
    for (int i = 0; i < 8; i++)
        e->b[8 + i] = (uint8_t)((uint64_t)e->n >> (8 * i));
}

/* a named type of size bytes (lb 0, extent size) */
static void leaf(enc *e, int64_t size)
{
    u8(e, RFS_DTW_NAMED);
    i64(e, size);
    i64(e, 0);
    i64(e, size);
    u32(e, 1);
    i64(e, 0);
    i64(e, size);
}

static void leaf_int(enc *e)
{
    leaf(e, 4);
}

static void resized_hdr(enc *e, int64_t lb, int64_t extent)
{
    u8(e, RFS_DTW_RESIZED);
    i64(e, lb);
    i64(e, extent);
}

static void vector_hdr(enc *e, unsigned kind, int64_t count, int64_t bl, int64_t stride)
{
    u8(e, kind);
    i64(e, count);
    i64(e, bl);
    i64(e, stride);
}

static void contig_hdr(enc *e, int64_t count)
{
    u8(e, RFS_DTW_CONTIGUOUS);
    i64(e, count);
}

/* decode + flatten, asserting success */
static rfs_flat *flat_of(enc *e)
{
    finish(e);
    rfs_dt *t = NULL;
    assert_int_equal(rfs_dt_decode(e->b, e->n, &t), 0);
    rfs_flat *f = NULL;
    assert_int_equal(rfs_dt_flatten(t, &f), 0);
    rfs_dt_free(t);
    free(e->b);
    return f;
}

static int decode_rc(enc *e)
{
    finish(e);
    rfs_dt *t = NULL;
    int rc = rfs_dt_decode(e->b, e->n, &t);
    if (rc == 0)
        rfs_dt_free(t);
    else
        assert_null(t);
    free(e->b);
    return rc;
}

static void assert_runs(const rfs_flat *f, const int64_t *expect, size_t n)
{
    assert_int_equal(f->n, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(f->off[i], expect[2 * i]);
        assert_int_equal(f->len[i], expect[2 * i + 1]);
    }
}

static void assert_shape(const rfs_flat *f, int64_t size, int64_t lb, int64_t extent, int monotonic)
{
    assert_int_equal(f->size, size);
    assert_int_equal(f->lb, lb);
    assert_int_equal(f->extent, extent);
    assert_int_equal(f->monotonic, monotonic);
}

/* ---- layouts ---- */

static void test_leaf(void **state)
{
    enc e = start();
    leaf_int(&e);
    rfs_flat *f = flat_of(&e);
    assert_runs(f, (int64_t[]){0, 4}, 1);
    assert_shape(f, 4, 0, 4, 1);
    rfs_flat_free(f);
}

static void test_pair_leaf_with_hole(void **state)
{
    /* MPI_SHORT_INT-like: 2 bytes, hole, 4 bytes; extent 8 */
    enc e = start();
    contig_hdr(&e, 2);
    u8(&e, RFS_DTW_NAMED);
    i64(&e, 6);
    i64(&e, 0);
    i64(&e, 8);
    u32(&e, 2);
    i64(&e, 0);
    i64(&e, 2);
    i64(&e, 4);
    i64(&e, 4);
    rfs_flat *f = flat_of(&e);
    assert_runs(f, (int64_t[]){0, 2, 4, 6, 12, 4}, 3);
    assert_shape(f, 12, 0, 16, 1);
    rfs_flat_free(f);
}

static void test_vector(void **state)
{
    enc e = start();
    vector_hdr(&e, RFS_DTW_VECTOR, 3, 2, 4);
    leaf_int(&e);
    rfs_flat *f = flat_of(&e);
    assert_runs(f, (int64_t[]){0, 8, 16, 8, 32, 8}, 3);
    assert_shape(f, 24, 0, 40, 1);
    rfs_flat_free(f);
}

static void test_negative_stride(void **state)
{
    enc e = start();
    vector_hdr(&e, RFS_DTW_HVECTOR, 3, 1, -8);
    leaf_int(&e);
    rfs_flat *f = flat_of(&e);
    assert_runs(f, (int64_t[]){0, 4, -8, 4, -16, 4}, 3);
    assert_shape(f, 12, -16, 20, 0);
    rfs_flat_free(f);
}

static void test_huge_contiguous_is_one_run(void **state)
{
    /* 2^40 bytes as a vector of contiguous blocks: must collapse without iterating */
    enc e = start();
    vector_hdr(&e, RFS_DTW_VECTOR, (int64_t)1 << 20, 1, 1);
    contig_hdr(&e, (int64_t)1 << 20);
    leaf(&e, 1);
    rfs_flat *f = flat_of(&e);
    assert_runs(f, (int64_t[]){0, (int64_t)1 << 40}, 1);
    assert_shape(f, (int64_t)1 << 40, 0, (int64_t)1 << 40, 1);
    rfs_flat_free(f);
}

static void test_resized(void **state)
{
    enc e = start();
    contig_hdr(&e, 3);
    resized_hdr(&e, -4, 12);
    leaf_int(&e);
    rfs_flat *f = flat_of(&e);
    assert_runs(f, (int64_t[]){0, 4, 12, 4, 24, 4}, 3);
    assert_shape(f, 12, -4, 36, 1);
    rfs_flat_free(f);

    /* resized of resized takes the outer bounds */
    e = start();
    resized_hdr(&e, 2, 20);
    resized_hdr(&e, 0, 8);
    leaf_int(&e);
    f = flat_of(&e);
    assert_runs(f, (int64_t[]){0, 4}, 1);
    assert_shape(f, 4, 2, 20, 1);
    rfs_flat_free(f);
}

static void test_zero_counts_keep_bounds(void **state)
{
    /* struct { int x2 at 8, double x0 at 1000, short x1 at -4 } */
    enc e = start();
    u8(&e, RFS_DTW_STRUCT);
    i64(&e, 3);
    i64(&e, 2);
    i64(&e, 0);
    i64(&e, 1);
    i64(&e, 8);
    i64(&e, 1000);
    i64(&e, -4);
    leaf_int(&e);
    leaf(&e, 8);
    leaf(&e, 2);
    rfs_flat *f = flat_of(&e);
    assert_runs(f, (int64_t[]){8, 8, -4, 2}, 2);
    assert_shape(f, 10, -4, 20, 0);
    rfs_flat_free(f);

    /* a type with no copies at all: lb = ub = 0 */
    e = start();
    contig_hdr(&e, 0);
    leaf_int(&e);
    f = flat_of(&e);
    assert_int_equal(f->n, 0);
    assert_shape(f, 0, 0, 0, 1);
    rfs_flat_free(f);
}

static void test_struct_resized_member(void **state)
{
    /* struct { resized(int,-8,32) at 100, char x2 at 0 } */
    enc e = start();
    u8(&e, RFS_DTW_STRUCT);
    i64(&e, 2);
    i64(&e, 1);
    i64(&e, 2);
    i64(&e, 100);
    i64(&e, 0);
    resized_hdr(&e, -8, 32);
    leaf_int(&e);
    leaf(&e, 1);
    rfs_flat *f = flat_of(&e);
    assert_runs(f, (int64_t[]){100, 4, 0, 2}, 2);
    assert_shape(f, 6, 0, 124, 0);
    rfs_flat_free(f);
}

static void test_indexed(void **state)
{
    /* indexed {2,0,1} at {5,1,0} of int, then indexed_block and hindexed_block */
    enc e = start();
    u8(&e, RFS_DTW_INDEXED);
    i64(&e, 3);
    i64(&e, 2);
    i64(&e, 0);
    i64(&e, 1);
    i64(&e, 5);
    i64(&e, 1);
    i64(&e, 0);
    leaf_int(&e);
    rfs_flat *f = flat_of(&e);
    assert_runs(f, (int64_t[]){20, 8, 0, 4}, 2);
    assert_shape(f, 12, 0, 28, 0);
    rfs_flat_free(f);

    e = start();
    u8(&e, RFS_DTW_HINDEXED_BLOCK);
    i64(&e, 2);
    i64(&e, 2);
    i64(&e, -24);
    i64(&e, 40);
    leaf(&e, 8);
    f = flat_of(&e);
    assert_runs(f, (int64_t[]){-24, 16, 40, 16}, 2);
    assert_shape(f, 32, -24, 80, 1);
    rfs_flat_free(f);

    e = start();
    u8(&e, RFS_DTW_INDEXED_BLOCK);
    i64(&e, 2);
    i64(&e, 1);
    i64(&e, 3);
    i64(&e, 4);
    leaf_int(&e);
    f = flat_of(&e);
    assert_runs(f, (int64_t[]){12, 8}, 1);
    assert_shape(f, 8, 12, 8, 1);
    rfs_flat_free(f);
}

static void subarray(enc *e, int order, int n, const int64_t *sizes, const int64_t *subs,
                     const int64_t *starts)
{
    u8(e, RFS_DTW_SUBARRAY);
    u32(e, (uint32_t)n);
    u8(e, (unsigned)order);
    for (int i = 0; i < n; i++)
        i64(e, sizes[i]);
    for (int i = 0; i < n; i++)
        i64(e, subs[i]);
    for (int i = 0; i < n; i++)
        i64(e, starts[i]);
}

static void test_subarray(void **state)
{
    int64_t sizes[] = {4, 5}, subs[] = {2, 3}, starts[] = {1, 1};
    enc e = start();
    subarray(&e, RFS_DT_ORDER_C, 2, sizes, subs, starts);
    leaf_int(&e);
    rfs_flat *f = flat_of(&e);
    assert_runs(f, (int64_t[]){24, 12, 44, 12}, 2);
    assert_shape(f, 24, 0, 80, 1);
    rfs_flat_free(f);

    e = start();
    subarray(&e, RFS_DT_ORDER_FORTRAN, 2, sizes, subs, starts);
    leaf_int(&e);
    f = flat_of(&e);
    assert_runs(f, (int64_t[]){20, 8, 36, 8, 52, 8}, 3);
    assert_shape(f, 24, 0, 80, 1);
    rfs_flat_free(f);
}

static void darray(enc *e, uint32_t nprocs, uint32_t rank, int order, int n, const int64_t *g,
                   const uint8_t *dist, const int64_t *darg, const int64_t *p)
{
    u8(e, RFS_DTW_DARRAY);
    u32(e, nprocs);
    u32(e, rank);
    u32(e, (uint32_t)n);
    u8(e, (unsigned)order);
    for (int i = 0; i < n; i++) {
        i64(e, g[i]);
        u8(e, dist[i]);
        i64(e, darg[i]);
        i64(e, p[i]);
    }
}

static void test_darray(void **state)
{
    /* 1-D cyclic(2) of 7 over 3 processes: rank 0 owns 0,1 and 6 */
    int64_t g[] = {7}, darg[] = {2}, p[] = {3};
    uint8_t dist[] = {RFS_DT_DIST_CYCLIC};
    enc e = start();
    darray(&e, 3, 0, RFS_DT_ORDER_C, 1, g, dist, darg, p);
    leaf_int(&e);
    rfs_flat *f = flat_of(&e);
    assert_runs(f, (int64_t[]){0, 8, 24, 4}, 2);
    assert_shape(f, 12, 0, 28, 1);
    rfs_flat_free(f);

    /* 2-D block x block of 4x6 on a 2x2 grid: rank 1 is grid (0,1): rows 0-1, cols 3-5 */
    int64_t g2[] = {4, 6}, d2[] = {RFS_DT_DARG_DEFAULT, RFS_DT_DARG_DEFAULT}, p2[] = {2, 2};
    uint8_t dist2[] = {RFS_DT_DIST_BLOCK, RFS_DT_DIST_BLOCK};
    e = start();
    darray(&e, 4, 1, RFS_DT_ORDER_C, 2, g2, dist2, d2, p2);
    leaf_int(&e);
    f = flat_of(&e);
    assert_runs(f, (int64_t[]){12, 12, 36, 12}, 2);
    assert_shape(f, 24, 0, 96, 1);
    rfs_flat_free(f);

    /* Fortran order, same grid: element (i,j) at i + 4j; rank 1 owns i 0-1, j 3-5 */
    e = start();
    darray(&e, 4, 1, RFS_DT_ORDER_FORTRAN, 2, g2, dist2, d2, p2);
    leaf_int(&e);
    f = flat_of(&e);
    assert_runs(f, (int64_t[]){48, 8, 64, 8, 80, 8}, 3);
    assert_shape(f, 24, 0, 96, 1);
    rfs_flat_free(f);

    /* a process owning nothing: 2 elements in blocks over 4 processes, rank 3 */
    int64_t g3[] = {2}, d3[] = {RFS_DT_DARG_DEFAULT}, p3[] = {4};
    uint8_t dist3[] = {RFS_DT_DIST_BLOCK};
    e = start();
    darray(&e, 4, 3, RFS_DT_ORDER_C, 1, g3, dist3, d3, p3);
    leaf_int(&e);
    f = flat_of(&e);
    assert_int_equal(f->n, 0);
    assert_shape(f, 0, 0, 8, 1);
    rfs_flat_free(f);
}

static void test_bad_arrays(void **state)
{
    int64_t sizes[] = {4}, subs[] = {3}, starts[] = {2};
    enc e = start();
    subarray(&e, RFS_DT_ORDER_C, 1, sizes, subs, starts); /* 2 + 3 > 4 */
    leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);

    int64_t g[] = {8}, darg[] = {RFS_DT_DARG_DEFAULT}, p[] = {2}, small[] = {3};
    uint8_t block[] = {RFS_DT_DIST_BLOCK}, none[] = {RFS_DT_DIST_NONE}, bogus[] = {7};
    e = start();
    darray(&e, 3, 0, RFS_DT_ORDER_C, 1, g, block, darg, p); /* grid of 2 for 3 processes */
    leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    e = start();
    darray(&e, 2, 2, RFS_DT_ORDER_C, 1, g, block, darg, p); /* rank out of range */
    leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    e = start();
    darray(&e, 2, 0, RFS_DT_ORDER_C, 1, g, block, small, p); /* 2 blocks of 3 < 8 */
    leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    e = start();
    darray(&e, 2, 0, RFS_DT_ORDER_C, 1, g, none, darg, p); /* NONE over 2 processes */
    leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    e = start();
    darray(&e, 2, 0, RFS_DT_ORDER_C, 1, g, bogus, darg, p);
    leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
}

/* ---- file view mapping ---- */

typedef struct {
    uint64_t off[64], len[64];
    size_t n;
    int stop_after;
} got_runs;

static int collect(void *ctx, uint64_t off, uint64_t len)
{
    got_runs *g = ctx;
    assert_true(g->n < 64);
    g->off[g->n] = off;
    g->len[g->n] = len;
    g->n++;
    return g->stop_after && (int)g->n == g->stop_after ? 42 : 0;
}

static void assert_got(const got_runs *g, const uint64_t *expect, size_t n)
{
    assert_int_equal(g->n, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(g->off[i], expect[2 * i]);
        assert_int_equal(g->len[i], expect[2 * i + 1]);
    }
}

static rfs_flat *vector_2_1_2_int(void)
{
    enc e = start();
    vector_hdr(&e, RFS_DTW_VECTOR, 2, 1, 2);
    leaf_int(&e);
    return flat_of(&e); /* runs (0,4) (8,4), size 8, extent 12 */
}

static void test_map_basic(void **state)
{
    rfs_flat *f = vector_2_1_2_int();
    got_runs g = {0};
    assert_int_equal(rfs_flat_map(f, 100, 0, 8, collect, &g), 0);
    assert_got(&g, (uint64_t[]){100, 4, 108, 4}, 2);
    /* crossing a tile boundary merges the runs that touch */
    g = (got_runs){0};
    assert_int_equal(rfs_flat_map(f, 100, 2, 12, collect, &g), 0);
    assert_got(&g, (uint64_t[]){102, 2, 108, 8, 120, 2}, 3);
    /* zero length: no calls */
    g = (got_runs){0};
    assert_int_equal(rfs_flat_map(f, 100, 5, 0, collect, &g), 0);
    assert_int_equal(g.n, 0);
    /* the callback's non-zero value stops the walk */
    g = (got_runs){.stop_after = 2};
    assert_int_equal(rfs_flat_map(f, 0, 0, 100, collect, &g), 42);
    assert_int_equal(g.n, 2);
    rfs_flat_free(f);
}

static void test_map_deep(void **state)
{
    /* a small range a hundred trillion tiles in, inside a type of many runs */
    enc e = start();
    vector_hdr(&e, RFS_DTW_VECTOR, 1000, 1, 3);
    leaf_int(&e);
    rfs_flat *f = flat_of(&e); /* 1000 runs of 4 every 12 bytes; size 4000, extent 11992 */
    assert_int_equal(f->n, 1000);
    uint64_t tiles = 100000000000000ull, pos = tiles * 4000 + 4 * 517 + 1;
    got_runs g = {0};
    assert_int_equal(rfs_flat_map(f, 7, pos, 10, collect, &g), 0);
    uint64_t base = 7 + tiles * 11992;
    assert_got(&g, (uint64_t[]){base + 517 * 12 + 1, 3, base + 518 * 12, 4, base + 519 * 12, 3}, 3);
    rfs_flat_free(f);
}

static void test_map_contiguous(void **state)
{
    rfs_flat *f;
    assert_int_equal(rfs_flat_bytes(10, &f), 0);
    assert_shape(f, 10, 0, 10, 1);
    got_runs g = {0};
    assert_int_equal(rfs_flat_map(f, 7, 1000000000000ull, 1000000000000ull, collect, &g), 0);
    assert_got(&g, (uint64_t[]){7 + 1000000000000ull, 1000000000000ull}, 1);
    rfs_flat_free(f);

    assert_int_equal(rfs_flat_bytes(0, &f), 0);
    assert_int_equal(f->n, 0);
    g = (got_runs){0};
    assert_int_equal(rfs_flat_map(f, 0, 0, 1, collect, &g), RFS_E_INVAL); /* no data to map to */
    rfs_flat_free(f);
    assert_int_equal(rfs_flat_bytes(UINT64_MAX, &f), RFS_E_INVAL);
}

static void test_map_out_of_range(void **state)
{
    rfs_flat *f = vector_2_1_2_int();
    got_runs g = {0};
    assert_int_equal(rfs_flat_map(f, 0, UINT64_MAX - 4, 8, collect, &g), RFS_E_FBIG);
    assert_int_equal(rfs_flat_map(f, (uint64_t)INT64_MAX, 8, 8, collect, &g), RFS_E_FBIG);
    rfs_flat_free(f);
    /* negative displacements below the view's start */
    enc e = start();
    vector_hdr(&e, RFS_DTW_HVECTOR, 2, 1, -8);
    leaf_int(&e);
    f = flat_of(&e);
    assert_int_equal(rfs_flat_map(f, 4, 0, 8, collect, &g), RFS_E_FBIG);
    g = (got_runs){0};
    assert_int_equal(rfs_flat_map(f, 8, 0, 8, collect, &g), 0);
    assert_got(&g, (uint64_t[]){8, 4, 0, 4}, 2);
    rfs_flat_free(f);
}

/* ---- malformed encodings ---- */

static enc complex_encoding(void)
{
    int64_t sizes[] = {4, 5}, subs[] = {2, 3}, starts[] = {1, 1};
    enc e = start();
    u8(&e, RFS_DTW_STRUCT);
    i64(&e, 2);
    i64(&e, 1);
    i64(&e, 2);
    i64(&e, 0);
    i64(&e, 200);
    subarray(&e, RFS_DT_ORDER_C, 2, sizes, subs, starts);
    u8(&e, RFS_DTW_DUP);
    leaf_int(&e);
    u8(&e, RFS_DTW_HINDEXED);
    i64(&e, 2);
    i64(&e, 1);
    i64(&e, 3);
    i64(&e, -8);
    i64(&e, 16);
    resized_hdr(&e, 0, 8);
    leaf_int(&e);
    finish(&e);
    return e;
}

static void test_truncated_everywhere(void **state)
{
    enc e = complex_encoding();
    rfs_dt *t;
    assert_int_equal(rfs_dt_decode(e.b, e.n, &t), 0);
    rfs_dt_free(t);
    for (size_t n = 0; n < e.n; n++) {
        uint8_t *copy = malloc(n + 1);
        memcpy(copy, e.b, n);
        if (n >= 16)
            for (int i = 0; i < 8; i++) /* a consistent length field: the tree itself is cut */
                copy[8 + i] = (uint8_t)((uint64_t)n >> (8 * i));
        t = (rfs_dt *)1;
        assert_int_equal(rfs_dt_decode(copy, n, &t), RFS_E_INVAL);
        assert_null(t);
        free(copy);
    }
    free(e.b);
}

static void test_byte_flips_never_crash(void **state)
{
    enc e = complex_encoding();
    static const uint8_t values[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
    for (size_t i = 0; i < e.n; i++) {
        for (size_t v = 0; v < sizeof values; v++) {
            uint8_t saved = e.b[i];
            e.b[i] = values[v];
            rfs_dt *t = NULL;
            dt_alloc_reset_total();
            int rc = rfs_dt_decode(e.b, e.n, &t);
            assert_true(rc == 0 || rc == RFS_E_INVAL);
            assert_true(dt_alloc_total() < 64 * 1024);
            if (rc == 0) {
                rfs_flat *f = NULL;
                dt_set_max_runs(4096);
                rc = rfs_dt_flatten(t, &f);
                dt_set_max_runs(0);
                assert_true(rc == 0 || rc == RFS_E_INVAL || rc == RFS_E_TOOBIG);
                rfs_flat_free(f);
                rfs_dt_free(t);
            }
            e.b[i] = saved;
        }
    }
    free(e.b);
}

static void test_header_errors(void **state)
{
    enc e = start();
    leaf_int(&e);
    finish(&e);
    rfs_dt *t;
    e.b[0] = 'X';
    assert_int_equal(rfs_dt_decode(e.b, e.n, &t), RFS_E_INVAL);
    e.b[0] = 'R';
    e.b[4] = 2; /* version */
    assert_int_equal(rfs_dt_decode(e.b, e.n, &t), RFS_E_INVAL);
    e.b[4] = RFS_DT_VERSION;
    e.b[5] = 1; /* flags */
    assert_int_equal(rfs_dt_decode(e.b, e.n, &t), RFS_E_INVAL);
    e.b[5] = 0;
    e.b[8]++; /* length field */
    assert_int_equal(rfs_dt_decode(e.b, e.n, &t), RFS_E_INVAL);
    e.b[8]--;
    assert_int_equal(rfs_dt_decode(e.b, e.n, &t), 0);
    rfs_dt_free(t);
    assert_int_equal(rfs_dt_decode(NULL, 0, &t), RFS_E_INVAL);
    free(e.b);

    /* trailing bytes after the tree */
    e = start();
    leaf_int(&e);
    u8(&e, 0);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    /* unknown kind */
    e = start();
    u8(&e, 99);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    /* named type whose runs do not add up to its size */
    e = start();
    u8(&e, RFS_DTW_NAMED);
    i64(&e, 4);
    i64(&e, 0);
    i64(&e, 4);
    u32(&e, 1);
    i64(&e, 0);
    i64(&e, 3);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
}

static void test_negative_counts(void **state)
{
    enc e = start();
    contig_hdr(&e, -1);
    leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    e = start();
    vector_hdr(&e, RFS_DTW_VECTOR, 2, -1, 1);
    leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    e = start();
    u8(&e, RFS_DTW_INDEXED);
    i64(&e, 1);
    i64(&e, -5);
    i64(&e, 0);
    leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    e = start();
    u8(&e, RFS_DTW_NAMED);
    i64(&e, -4);
    i64(&e, 0);
    i64(&e, 4);
    u32(&e, 0);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
}

static void test_huge_counts_no_allocation(void **state)
{
    static const unsigned kinds[] = {RFS_DTW_INDEXED, RFS_DTW_HINDEXED, RFS_DTW_INDEXED_BLOCK,
                                     RFS_DTW_HINDEXED_BLOCK, RFS_DTW_STRUCT};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        enc e = start();
        u8(&e, kinds[k]);
        i64(&e, (int64_t)1 << 40);
        i64(&e, 1);
        i64(&e, 0);
        leaf_int(&e);
        dt_alloc_reset_total();
        assert_int_equal(decode_rc(&e), RFS_E_INVAL);
        assert_true(dt_alloc_total() < 4096);
    }
    /* a named type claiming 2^31 runs */
    enc e = start();
    u8(&e, RFS_DTW_NAMED);
    i64(&e, 4);
    i64(&e, 0);
    i64(&e, 4);
    u32(&e, 0x80000000u);
    dt_alloc_reset_total();
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    assert_true(dt_alloc_total() < 4096);
}

static void test_depth_bomb(void **state)
{
    /* RFS_DT_MAX_DEPTH levels decode, one more does not */
    for (int extra = 0; extra < 2; extra++) {
        enc e = start();
        for (int i = 0; i < RFS_DT_MAX_DEPTH - 1 + extra; i++)
            u8(&e, RFS_DTW_DUP);
        leaf_int(&e);
        assert_int_equal(decode_rc(&e), extra ? RFS_E_INVAL : 0);
    }
    enc e = start();
    for (int i = 0; i < 100000; i++)
        contig_hdr(&e, 1);
    leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    /* nested 32-dimensional subarrays expand far deeper than they are encoded */
    int64_t ones[RFS_DT_MAX_NDIMS], zeros[RFS_DT_MAX_NDIMS];
    for (int i = 0; i < RFS_DT_MAX_NDIMS; i++) {
        ones[i] = 1;
        zeros[i] = 0;
    }
    e = start();
    for (int i = 0; i < 40; i++)
        subarray(&e, RFS_DT_ORDER_C, RFS_DT_MAX_NDIMS, ones, ones, zeros);
    leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
}

static void test_node_bomb(void **state)
{
    enc e = start();
    int64_t n = RFS_DT_MAX_NODES + 10;
    u8(&e, RFS_DTW_STRUCT);
    i64(&e, n);
    for (int64_t i = 0; i < 2 * n; i++)
        i64(&e, i < n ? 1 : 4 * (i - n));
    for (int64_t i = 0; i < n; i++)
        leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
}

static void test_overflow(void **state)
{
    /* size overflow */
    enc e = start();
    contig_hdr(&e, (int64_t)1 << 62);
    contig_hdr(&e, 4);
    leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    /* stride in extents overflows */
    e = start();
    vector_hdr(&e, RFS_DTW_VECTOR, 2, 1, INT64_MAX / 2);
    leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    /* bounds overflow with size 0 data */
    e = start();
    vector_hdr(&e, RFS_DTW_HVECTOR, 3, 1, INT64_MAX / 2 + 1);
    leaf(&e, 1);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    /* resized lb + extent overflows */
    e = start();
    resized_hdr(&e, INT64_MAX, 2);
    leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    /* extent itself overflows (ub - lb) */
    e = start();
    u8(&e, RFS_DTW_HINDEXED);
    i64(&e, 2);
    i64(&e, 1);
    i64(&e, 1);
    i64(&e, INT64_MIN / 2 - 10);
    i64(&e, INT64_MAX / 2 + 10);
    leaf_int(&e);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
    /* indexed displacement times extent overflows */
    e = start();
    u8(&e, RFS_DTW_INDEXED_BLOCK);
    i64(&e, 1);
    i64(&e, 1);
    i64(&e, INT64_MAX / 3);
    leaf(&e, 8);
    assert_int_equal(decode_rc(&e), RFS_E_INVAL);
}

static void test_run_limit(void **state)
{
    /* valid but too fragmented: a trillion separate runs. Must fail at the limit, quickly. */
    enc e = start();
    vector_hdr(&e, RFS_DTW_HVECTOR, (int64_t)1 << 40, 1, 2);
    leaf(&e, 1);
    finish(&e);
    rfs_dt *t;
    assert_int_equal(rfs_dt_decode(e.b, e.n, &t), 0);
    rfs_flat *f = (rfs_flat *)1;
    dt_set_max_runs(1000);
    assert_int_equal(rfs_dt_flatten(t, &f), RFS_E_TOOBIG);
    assert_non_null(strstr(rfs_last_error(), "1000 runs"));
    dt_set_max_runs(0);
    assert_null(f);
    rfs_dt_free(t);
    free(e.b);
    /* a zero-size child repeated 2^62 times costs nothing */
    e = start();
    contig_hdr(&e, (int64_t)1 << 62);
    contig_hdr(&e, 0);
    leaf_int(&e);
    f = flat_of(&e);
    assert_int_equal(f->n, 0);
    assert_int_equal(f->size, 0);
    rfs_flat_free(f);
}

/* Issue #21's attack: a STRUCT of 256 zero-blocklength children, each VECTOR(2^24, 1, 2) of bytes
 * (16 Mi runs if expanded), plus one real byte. A valid one-byte type: the empty children must be
 * skipped without expanding them. */
static void test_struct_of_empty_children_is_cheap(void **state)
{
    enum { EMPTY = 256 };
    enc e = start();
    u8(&e, RFS_DTW_STRUCT);
    i64(&e, EMPTY + 1);
    for (int i = 0; i < EMPTY; i++)
        i64(&e, 0);
    i64(&e, 1);
    for (int i = 0; i <= EMPTY; i++)
        i64(&e, i == EMPTY ? 7 : 0);
    for (int i = 0; i < EMPTY; i++) {
        vector_hdr(&e, RFS_DTW_VECTOR, (int64_t)1 << 24, 1, 2);
        leaf(&e, 1);
    }
    leaf(&e, 1);
    rfs_flat *f = flat_of(&e);
    assert_runs(f, (int64_t[]){7, 1}, 1);
    assert_int_equal(f->size, 1);
    /* one step per node visited or skipped, none for the 2^32 runs the children would make */
    assert_true(dt_last_work() < 4 * (EMPTY + 2));
    rfs_flat_free(f);
}

/* Single copies are emitted in place: a chain of 60 CONTIGUOUS(1) over a fragmented vector costs
 * about one step per run, not one per run per level (which would also blow the budget). */
static void test_single_copy_chain_is_linear(void **state)
{
    enc e = start();
    for (int i = 0; i < 60; i++)
        contig_hdr(&e, 1);
    vector_hdr(&e, RFS_DTW_HVECTOR, 100000, 1, 2);
    leaf(&e, 1);
    rfs_flat *f = flat_of(&e);
    assert_int_equal(f->n, 100000);
    assert_true(dt_last_work() < 2 * 100000 + 200);
    rfs_flat_free(f);
}

/* Past the work budget: RFS_E_TOOBIG naming the budget; a repeated child still costs one step
 * per run it adds. */
static void test_work_budget(void **state)
{
    enc e = start();
    contig_hdr(&e, 3);
    vector_hdr(&e, RFS_DTW_HVECTOR, 1000, 1, 2);
    leaf(&e, 1);
    finish(&e);
    rfs_dt *t = NULL;
    assert_int_equal(rfs_dt_decode(e.b, e.n, &t), 0);
    rfs_flat *f = NULL;
    assert_int_equal(rfs_dt_flatten(t, &f), 0);
    assert_int_equal(f->n, 2998); /* copies touch: the last run of one merges with the next */
    assert_true(dt_last_work() <= 4000 + 100);
    rfs_flat_free(f);
    f = (rfs_flat *)1;
    dt_set_work_budget(500);
    assert_int_equal(rfs_dt_flatten(t, &f), RFS_E_TOOBIG);
    dt_set_work_budget(0);
    assert_null(f);
    assert_non_null(strstr(rfs_last_error(), "work budget of 500 steps"));
    rfs_dt_free(t);
    free(e.b);
}

/* A set cancellation flag stops a long flatten (a server's SIGTERM) with RFS_E_BUSY. */
static void test_cancel(void **state)
{
    enc e = start();
    vector_hdr(&e, RFS_DTW_HVECTOR, 1 << 20, 1, 2);
    leaf(&e, 1);
    finish(&e);
    rfs_dt *t = NULL;
    assert_int_equal(rfs_dt_decode(e.b, e.n, &t), 0);
    atomic_int stop = 1;
    rfs_dt_set_cancel(&stop);
    rfs_flat *f = NULL;
    assert_int_equal(rfs_dt_flatten(t, &f), RFS_E_BUSY);
    assert_true(dt_last_work() <= DT_CANCEL_POLL);
    atomic_store(&stop, 0);
    assert_int_equal(rfs_dt_flatten(t, &f), 0);
    assert_int_equal(f->n, 1 << 20);
    rfs_dt_set_cancel(NULL);
    rfs_flat_free(f);
    rfs_dt_free(t);
    free(e.b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leaf),
        cmocka_unit_test(test_pair_leaf_with_hole),
        cmocka_unit_test(test_vector),
        cmocka_unit_test(test_negative_stride),
        cmocka_unit_test(test_huge_contiguous_is_one_run),
        cmocka_unit_test(test_resized),
        cmocka_unit_test(test_zero_counts_keep_bounds),
        cmocka_unit_test(test_struct_resized_member),
        cmocka_unit_test(test_indexed),
        cmocka_unit_test(test_subarray),
        cmocka_unit_test(test_darray),
        cmocka_unit_test(test_bad_arrays),
        cmocka_unit_test(test_map_basic),
        cmocka_unit_test(test_map_deep),
        cmocka_unit_test(test_map_contiguous),
        cmocka_unit_test(test_map_out_of_range),
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_byte_flips_never_crash),
        cmocka_unit_test(test_header_errors),
        cmocka_unit_test(test_negative_counts),
        cmocka_unit_test(test_huge_counts_no_allocation),
        cmocka_unit_test(test_depth_bomb),
        cmocka_unit_test(test_node_bomb),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_run_limit),
        cmocka_unit_test(test_struct_of_empty_children_is_cheap),
        cmocka_unit_test(test_single_copy_chain_is_linear),
        cmocka_unit_test(test_work_budget),
        cmocka_unit_test(test_cancel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
