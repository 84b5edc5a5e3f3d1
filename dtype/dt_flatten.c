/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Flattening: the type map of a decoded datatype as (offset, length) runs in type-map order,
 * with adjacent runs merged.
 *
 * Work is bounded by what the type describes, not by how it is written (issue #21):
 * - a subtree that holds no data (size 0: zero count or blocklength anywhere on the way), or a
 *   block of zero copies, is skipped without visiting it, so a STRUCT of zero-blocklength
 *   children that would each expand to millions of runs costs one step per child;
 * - a child placed once is emitted straight into the parent's output at its offset; only a
 *   child repeated two or more times is materialised, and then each copy adds at least one run
 *   (runs inside a copy never merge with each other) or the copies collapse without iterating;
 * - every step (node visited, run emitted at any level) is charged to a budget proportional to
 *   the input and the data (dt_internal.h), and the cancellation flag is polled, so no type can
 *   hold a thread longer than the budget and none can hold up a server's shutdown. */
#include "dt_flat.h"
#include "dt_internal.h"

#include "common/err.h"

#include <stdlib.h>

typedef struct {
    int64_t *off, *len;
    size_t n, cap;
} runs;

/* One flattening: its step counter and budget, and its run limit. */
typedef struct {
    uint64_t work, budget;
    size_t max_runs;
} fctx;

static void runs_free(runs *r)
{
    free(r->off);
    free(r->len);
    *r = (runs){0};
}

static _Thread_local size_t max_runs = RFS_DT_MAX_RUNS;
static _Thread_local uint64_t budget_override, last_work;

void dt_set_max_runs(size_t n)
{
    max_runs = n ? n : RFS_DT_MAX_RUNS;
}
void dt_set_work_budget(uint64_t n)
{
    budget_override = n;
}
uint64_t dt_last_work(void)
{
    return last_work;
}

#define TOO_MANY(x) rfs_fail(RFS_E_TOOBIG, "datatype has more than %zu runs (limit)", (x)->max_runs)
#define OVERFLOW() rfs_fail(RFS_E_INVAL, "datatype displacement overflow")

static int step(fctx *x)
{
    if (++x->work > x->budget)
        return rfs_fail(RFS_E_TOOBIG,
                        "datatype flattening needs more than its work budget of "
                        "%llu steps (%u per data byte up to %zu runs, %u per encoded item, %u)",
                        (unsigned long long)x->budget, DT_WORK_PER_RUN, x->max_runs,
                        DT_WORK_PER_META, DT_WORK_SLACK);
    /* polled on the first step too, so requests still queued at shutdown stop at once */
    if (x->work % DT_CANCEL_POLL == 1 && dt_cancelled())
        return rfs_fail(RFS_E_BUSY, "datatype flattening cancelled: shutting down");
    return 0;
}

static int emit_run(fctx *x, runs *r, int64_t off, int64_t len)
{
    if (len == 0)
        return 0;
    int rc = step(x);
    if (rc)
        return rc;
    if (r->n > 0) {
        int64_t end;
        if (dt_add(r->off[r->n - 1], r->len[r->n - 1], &end) && end == off)
            return dt_add(r->len[r->n - 1], len, &r->len[r->n - 1]) ? 0 : OVERFLOW();
    }
    if (r->n == r->cap) {
        if (r->cap >= x->max_runs)
            return TOO_MANY(x);
        size_t cap = r->cap ? 2 * r->cap : 16;
        if (cap > x->max_runs)
            cap = x->max_runs;
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
static int emit_copies(fctx *x, runs *out, const runs *c, int64_t ext, int64_t base, int64_t m)
{
    if (c->n == 0 || m == 0)
        return 0;
    int64_t off, len;
    if (c->n == 1 && (m == 1 || c->len[0] == ext)) {
        if (!dt_add(base, c->off[0], &off) || !dt_mul(m, c->len[0], &len))
            return OVERFLOW();
        return emit_run(x, out, off, len);
    }
    for (int64_t j = 0; j < m; j++) {
        int64_t d;
        if (!dt_mul(j, ext, &d) || !dt_add(d, base, &d))
            return OVERFLOW();
        for (size_t i = 0; i < c->n; i++) {
            if (!dt_add(d, c->off[i], &off))
                return OVERFLOW();
            int rc = emit_run(x, out, off, c->len[i]);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static int flatten_at(fctx *x, const dt_node *n, int64_t base, runs *out);

/* The child's runs relative to its origin, for repeating them. */
static int materialise(fctx *x, const dt_node *kid, runs *c)
{
    c->n = 0;
    return flatten_at(x, kid, 0, c);
}

static int flatten_hvec(fctx *x, const dt_node *n, int64_t base, runs *out)
{
    const dt_node *kid = n->kids[0];
    int64_t ext = dt_extent(kid), block, d;
    bool blocks = n->count > 0 && n->blocklen > 0;
    /* exactly one copy in all: no need to materialise it */
    if (blocks && n->count == 1 && n->blocklen == 1 && n->tail == 0)
        return flatten_at(x, kid, base, out);
    if (!blocks && n->tail == 1) {
        if (!dt_mul(n->count, n->stride, &d) || !dt_add(d, base, &d))
            return OVERFLOW();
        return flatten_at(x, kid, d, out);
    }
    runs c = {0};
    int rc = materialise(x, kid, &c);
    if (rc || c.n == 0)
        goto done;
    if (!blocks) {
        /* only the tail block */
    } else if (c.n == 1 && (n->blocklen == 1 || is_dense(&c, ext)) &&
               dt_mul(n->blocklen, c.len[0], &block) && block == n->stride) {
        /* blocks that are single runs exactly stride apart merge into one run */
        int64_t len, off;
        rc = dt_mul(n->count, block, &len) && dt_add(base, c.off[0], &off)
                 ? emit_run(x, out, off, len)
                 : OVERFLOW();
    } else
        for (int64_t i = 0; rc == 0 && i < n->count; i++)
            rc = dt_mul(i, n->stride, &d) && dt_add(d, base, &d)
                     ? emit_copies(x, out, &c, ext, d, n->blocklen)
                     : OVERFLOW();
    if (rc == 0 && n->tail > 0)
        rc = dt_mul(n->count, n->stride, &d) && dt_add(d, base, &d)
                 ? emit_copies(x, out, &c, ext, d, n->tail)
                 : OVERFLOW();
done:
    runs_free(&c);
    return rc;
}

/* DT_HIDX and DT_STRUCT: block i is bl copies of its kid at disps[i]. */
static int flatten_indexed(fctx *x, const dt_node *n, int64_t base, runs *out)
{
    runs c = {0};
    const dt_node *held = NULL; /* the kid whose runs c holds */
    int rc = 0;
    for (int64_t i = 0; rc == 0 && i < n->count; i++) {
        const dt_node *kid = n->kind == DT_STRUCT ? n->kids[i] : n->kids[0];
        int64_t bl = n->bls ? n->bls[i] : n->blocklen, d;
        if (bl == 0 || kid->size == 0) {
            rc = step(x); /* contributes no data: never expanded */
            continue;
        }
        if (!dt_add(base, n->disps[i], &d)) {
            rc = OVERFLOW();
            break;
        }
        /* A STRUCT's kids are distinct subtrees, each visited once: a single copy goes straight
         * to the output. An HIDX repeats one kid in every block, so it is materialised once
         * (unless there is a single copy in all). */
        if (bl == 1 && kid != held && (n->kind == DT_STRUCT || n->count == 1)) {
            rc = flatten_at(x, kid, d, out);
            continue;
        }
        if (kid != held) {
            rc = materialise(x, kid, &c);
            held = kid;
        }
        if (rc == 0)
            rc = emit_copies(x, out, &c, dt_extent(kid), d, bl);
    }
    runs_free(&c);
    return rc;
}

static int flatten_at(fctx *x, const dt_node *n, int64_t base, runs *out)
{
    int rc = step(x);
    if (rc || n->size == 0)
        return rc; /* a subtree without data adds nothing, however it is built */
    switch (n->kind) {
    case DT_LEAF:
        for (int64_t i = 0; rc == 0 && i < n->nruns; i++) {
            int64_t off;
            rc = dt_add(base, n->runs[2 * i], &off) ? emit_run(x, out, off, n->runs[2 * i + 1])
                                                    : OVERFLOW();
        }
        return rc;
    case DT_RESIZED: return flatten_at(x, n->kids[0], base, out);
    case DT_HVEC: return flatten_hvec(x, n, base, out);
    default: /* DT_HIDX, DT_STRUCT */ return flatten_indexed(x, n, base, out);
    }
}

static uint64_t work_budget(const dt_node *root, size_t limit)
{
    if (budget_override)
        return budget_override;
    uint64_t data = (uint64_t)root->size < limit ? (uint64_t)root->size : limit;
    return DT_WORK_PER_RUN * data + DT_WORK_PER_META * root->nmeta + DT_WORK_SLACK;
}

int rfs_dt_flatten(const rfs_dt *t, rfs_flat **out)
{
    return rfs_dt_flatten_max(t, 0, out);
}

int rfs_dt_flatten_max(const rfs_dt *t, size_t limit, rfs_flat **out)
{
    if (!t || !out)
        return rfs_fail(RFS_E_INVAL, "rfs_dt_flatten: null argument");
    *out = NULL;
    runs r = {0};
    if (limit == 0 || limit > max_runs)
        limit = max_runs;
    fctx x = {.budget = work_budget(t->root, limit), .max_runs = limit};
    int rc = flatten_at(&x, t->root, 0, &r);
    last_work = x.work;
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
