/* Flattening: the type map of a decoded datatype as (offset, length) runs in type-map order,
 * with adjacent runs merged. Repetitions of a contiguous child collapse into one run without
 * iterating, and every other repetition adds at least one run per iteration, so the work is
 * bounded by RFS_DT_MAX_RUNS even for types with astronomically large counts. */
#include "dt_flat.h"
#include "dt_internal.h"

#include "common/err.h"

#include <stdlib.h>

typedef struct {
    int64_t *off, *len;
    size_t n, cap;
} runs;

static void runs_free(runs *r)
{
    free(r->off);
    free(r->len);
    *r = (runs){0};
}

static _Thread_local size_t max_runs = RFS_DT_MAX_RUNS;

void dt_set_max_runs(size_t n) { max_runs = n ? n : RFS_DT_MAX_RUNS; }

#define TOO_MANY() rfs_fail(RFS_E_INVAL, "datatype has more than %zu runs", max_runs)
#define OVERFLOW() rfs_fail(RFS_E_INVAL, "datatype displacement overflow")

static int emit_run(runs *r, int64_t off, int64_t len)
{
    if (len == 0)
        return 0;
    if (r->n > 0) {
        int64_t end;
        if (dt_add(r->off[r->n - 1], r->len[r->n - 1], &end) && end == off)
            return dt_add(r->len[r->n - 1], len, &r->len[r->n - 1]) ? 0 : OVERFLOW();
    }
    if (r->n == r->cap) {
        if (r->cap >= max_runs)
            return TOO_MANY();
        size_t cap = r->cap ? 2 * r->cap : 16;
        if (cap > max_runs)
            cap = max_runs;
        int64_t *o = realloc(r->off, cap * sizeof *o);
        if (o)
            r->off = o;
        int64_t *l = o ? realloc(r->len, cap * sizeof *l) : NULL;
        if (l)
            r->len = l;
        if (!o || !l)
            return rfs_fail(RFS_E_NOMEM, "out of memory flattening a datatype");
        r->cap = cap;
    }
    r->off[r->n] = off;
    r->len[r->n] = len;
    r->n++;
    return 0;
}

/* True if consecutive copies of the child (kid_ext apart) form one run. */
static bool is_dense(const runs *c, int64_t kid_ext)
{
    return c->n == 1 && c->len[0] == kid_ext;
}

/* m consecutive copies of the flattened child c at base, base + ext, ... */
static int emit_copies(runs *out, const runs *c, int64_t ext, int64_t base, int64_t m)
{
    if (c->n == 0 || m == 0)
        return 0;
    int64_t off, len;
    if (c->n == 1 && (m == 1 || c->len[0] == ext)) {
        if (!dt_add(base, c->off[0], &off) || !dt_mul(m, c->len[0], &len))
            return OVERFLOW();
        return emit_run(out, off, len);
    }
    for (int64_t j = 0; j < m; j++) {
        int64_t d;
        if (!dt_mul(j, ext, &d) || !dt_add(d, base, &d))
            return OVERFLOW();
        for (size_t i = 0; i < c->n; i++) {
            if (!dt_add(d, c->off[i], &off))
                return OVERFLOW();
            int rc = emit_run(out, off, c->len[i]);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static int flatten_node(const dt_node *n, runs *out);

static int flatten_hvec(const dt_node *n, const runs *c, runs *out)
{
    const dt_node *kid = n->kids[0];
    int64_t ext = dt_extent(kid), block, d;
    int rc = 0;
    if (c->n == 0)
        return 0;
    /* blocks that are single runs exactly stride apart merge into one run */
    if (n->blocklen == 0 || n->count == 0) {
        /* only the tail block, if any */
    } else if (c->n == 1 && (n->blocklen == 1 || is_dense(c, ext)) &&
               dt_mul(n->blocklen, c->len[0], &block) && block == n->stride) {
        int64_t len;
        rc = dt_mul(n->count, block, &len) ? emit_run(out, c->off[0], len) : OVERFLOW();
    } else
        for (int64_t i = 0; rc == 0 && i < n->count; i++)
            rc = dt_mul(i, n->stride, &d) ? emit_copies(out, c, ext, d, n->blocklen) : OVERFLOW();
    if (rc == 0 && n->tail > 0)
        rc = dt_mul(n->count, n->stride, &d) ? emit_copies(out, c, ext, d, n->tail) : OVERFLOW();
    return rc;
}

static int flatten_node(const dt_node *n, runs *out)
{
    if (n->kind == DT_LEAF) {
        for (int64_t i = 0; i < n->nruns; i++) {
            int rc = emit_run(out, n->runs[2 * i], n->runs[2 * i + 1]);
            if (rc)
                return rc;
        }
        return 0;
    }
    if (n->kind == DT_RESIZED)
        return flatten_node(n->kids[0], out);
    int rc = 0;
    runs c = {0};
    if (n->kind == DT_HVEC) {
        rc = flatten_node(n->kids[0], &c);
        if (rc == 0)
            rc = flatten_hvec(n, &c, out);
    } else { /* DT_HIDX, DT_STRUCT */
        for (int64_t i = 0; rc == 0 && i < n->count; i++) {
            const dt_node *kid = n->kind == DT_STRUCT ? n->kids[i] : n->kids[0];
            if (i == 0 || n->kind == DT_STRUCT) {
                c.n = 0;
                rc = flatten_node(kid, &c);
            }
            if (rc == 0)
                rc = emit_copies(out, &c, dt_extent(kid), n->disps[i], n->bls ? n->bls[i] : n->blocklen);
        }
    }
    runs_free(&c);
    return rc;
}

int rfs_dt_flatten(const rfs_dt *t, rfs_flat **out)
{
    if (!t || !out)
        return rfs_fail(RFS_E_INVAL, "rfs_dt_flatten: null argument");
    *out = NULL;
    runs r = {0};
    int rc = flatten_node(t->root, &r);
    if (rc) {
        runs_free(&r);
        return rc;
    }
    const dt_node *root = t->root;
    return dt_flat_make(r.off, r.len, r.n, root->size, root->lb, dt_extent(root), out);
}

int rfs_flat_from_encoding(const uint8_t *enc, size_t len, rfs_flat **out)
{
    rfs_dt *t = NULL;
    *out = NULL;
    int rc = rfs_dt_decode(enc, len, &t);
    if (rc == RFS_OK)
        rc = rfs_dt_flatten(t, out);
    rfs_dt_free(t);
    return rc;
}
