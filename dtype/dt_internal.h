/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Internal representation of a decoded datatype: a tree of five node kinds to which every wire
 * combiner is normalised (VECTOR/INDEXED become byte-strided forms, DUP disappears, SUBARRAY and
 * DARRAY are expanded, see dt_expand.c). Each node carries its size and bounds as MPI defines
 * them, computed with overflow checks while decoding, so flattening never has to fail on them. */
#ifndef RFS_DT_INTERNAL_H
#define RFS_DT_INTERNAL_H

#include "dtype/dtype.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum dt_kind {
    DT_LEAF,    /* named type: runs[] relative to its origin */
    DT_HVEC,    /* count blocks of blocklen consecutive copies, block i at i*stride bytes,
                   then (if tail > 0) one more block of tail copies at count*stride */
    DT_HIDX,    /* block i: bls[i] (or blocklen if bls is NULL) copies at disps[i] bytes */
    DT_STRUCT,  /* like DT_HIDX but block i uses kids[i] */
    DT_RESIZED, /* child's type map with lb/ub replaced */
};

typedef struct dt_node {
    enum dt_kind kind;
    int64_t size, lb, ub; /* extent = ub - lb (fits int64: checked) */
    int64_t count, blocklen, stride, tail;
    int64_t *bls, *disps; /* DT_HIDX, DT_STRUCT: count entries (bls may be NULL) */
    int64_t *runs;        /* DT_LEAF: nruns (off, len) pairs */
    int64_t nruns;
    struct dt_node **kids; /* DT_STRUCT: count; others: 1 (none for a leaf) */
    size_t nkids;
    unsigned height; /* 1 for a leaf, else 1 + the tallest kid */
    uint64_t nnodes; /* nodes in this subtree, itself included */
    uint64_t nmeta;  /* nodes + block entries + leaf runs: the subtree's input size,
                        which the flattening work budget is proportional to */
} dt_node;

struct rfs_dt {
    dt_node *root;
};

/* The decoder allows expansions of SUBARRAY/DARRAY to deepen the tree beyond the encoded depth,
 * but never beyond this (flattening recurses once per level). */
#define DT_MAX_INTERNAL_DEPTH 512
#define DT_MAX_INTERNAL_NODES (8u * RFS_DT_MAX_NODES)

/* Checked 64-bit arithmetic: false on overflow. */
static inline bool dt_add(int64_t a, int64_t b, int64_t *r)
{
    return !__builtin_add_overflow(a, b, r);
}
static inline bool dt_mul(int64_t a, int64_t b, int64_t *r)
{
    return !__builtin_mul_overflow(a, b, r);
}
static inline int64_t dt_extent(const dt_node *n)
{
    return n->ub - n->lb;
}

/* Node construction (dt_node.c). Each returns NULL on overflow or allocation failure; on
 * failure the passed kids are NOT freed (the caller still owns them). Bounds/size computed. */
dt_node *dt_new_leaf(int64_t size, int64_t lb, int64_t extent, int64_t *runs, int64_t nruns);
dt_node *dt_new_hvec(int64_t count, int64_t blocklen, int64_t stride, int64_t tail, dt_node *kid);
dt_node *dt_new_hidx(int64_t count, int64_t *bls, int64_t blocklen, int64_t *disps, dt_node *kid);
dt_node *dt_new_struct(int64_t count, int64_t *bls, int64_t *disps, dt_node **kids);
dt_node *dt_new_resized(int64_t lb, int64_t extent, dt_node *kid);
void dt_node_free(dt_node *n);

/* Allocation counted per thread (bytes requested since the last reset), so tests can prove that
 * hostile encodings never cause a big allocation. Free with free(). */
void *dt_malloc(size_t n);
void *dt_calloc(size_t n, size_t sz);
void dt_alloc_reset_total(void);
size_t dt_alloc_total(void);

/* The run limit rfs_dt_flatten enforces: RFS_DT_MAX_RUNS unless a test lowers it (so that
 * hitting it does not need a quarter gigabyte). Per thread. */
void dt_set_max_runs(size_t n);

/* Flattening work budget (docs/datatypes.md "Work budget"): steps = nodes visited + runs
 * emitted at every level before merging. A type may take
 *   DT_WORK_PER_RUN * min(size, run limit) + DT_WORK_PER_META * nmeta + DT_WORK_SLACK
 * steps, i.e. a small multiple of its input and of the data it describes; past it rfs_dt_flatten
 * answers RFS_E_TOOBIG. The flattener emits single copies in place and materialises a child
 * only when it is repeated, so an honest type needs at most about 2 steps per final run plus
 * one per metadata item. dt_set_work_budget(n) overrides the computed budget (tests; 0 restores). */
#define DT_WORK_PER_RUN 4u
#define DT_WORK_PER_META 4u
#define DT_WORK_SLACK 64u
void dt_set_work_budget(uint64_t n);
/* Steps the last rfs_dt_flatten of this thread took (tests prove skipped subtrees cost nothing). */
uint64_t dt_last_work(void);

/* Long loops poll this every DT_CANCEL_POLL steps: non-zero when rfs_dt_set_cancel's flag is. */
#define DT_CANCEL_POLL 65536u
int dt_cancelled(void);

/* SUBARRAY / DARRAY expansion (dt_expand.c). Arrays have ndims entries; kid is always consumed
 * (freed on failure). Returns 0 or RFS_E_INVAL. */
int dt_expand_subarray(int ndims, const int64_t *sizes, const int64_t *subsizes,
                       const int64_t *starts, int order, dt_node *kid, dt_node **out);
int dt_expand_darray(int64_t nprocs, int64_t rank, int ndims, const int64_t *gsizes,
                     const uint8_t *distribs, const int64_t *dargs, const int64_t *psizes,
                     int order, dt_node *kid, dt_node **out);

/* Decodes a header-less node tree occupying exactly len bytes and reports the root's size and
 * bounds. Used by the MPI encoder to check each node it writes against the MPI library. */
int dt_probe_tree(const uint8_t *tree, size_t len, int64_t *size, int64_t *lb, int64_t *extent);

#endif
