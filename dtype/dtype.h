/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Portable datatype descriptions (docs/datatypes.md): decoded and flattened without MPI, on the
 * server and on the client. The client produces encodings from MPI datatypes with
 * rfs_dt_encode_mpi (dtype/encode_mpi.h, built only with MPI).
 * Every decoder bound is enforced (nesting depth, node count, run count, overflow), so a
 * hostile encoding gets RFS_E_INVAL, never a crash or a huge allocation. */
#ifndef RFS_DTYPE_H
#define RFS_DTYPE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define RFS_DT_MAX_DEPTH 64
#define RFS_DT_MAX_NODES 65536
#define RFS_DT_MAX_RUNS (16u * 1024u * 1024u)

typedef struct rfs_dt rfs_dt;

int rfs_dt_decode(const uint8_t *enc, size_t len, rfs_dt **out);
void rfs_dt_free(rfs_dt *t);

/* Flattened type: runs in type-map order (adjacent runs merged), byte displacements relative
 * to the type's origin, plus size (data bytes), lb and extent (as MPI defines them). */
typedef struct rfs_flat {
    size_t n;
    int64_t *off;
    int64_t *len;
    int64_t size, lb, extent;
    int monotonic; /* 1 if offsets are nondecreasing and runs do not overlap (valid filetype) */
} rfs_flat;

/* RFS_E_TOOBIG past RFS_DT_MAX_RUNS runs or past the work budget (docs/datatypes.md), both
 * named in the message; RFS_E_BUSY when cancelled (rfs_dt_set_cancel). */
int rfs_dt_flatten(const rfs_dt *t, rfs_flat **out);
/* The same with a lower run limit (0: RFS_DT_MAX_RUNS), e.g. what a caller's memory budget
 * allows (RFS_DT_FLAT_BYTES_PER_RUN each); the work budget shrinks with it. */
#define RFS_DT_FLAT_BYTES_PER_RUN 24u
int rfs_dt_flatten_max(const rfs_dt *t, size_t max_runs, rfs_flat **out);
/* rfs_dt_decode then rfs_dt_flatten, for callers that keep only the flattened type. */
int rfs_flat_from_encoding(const uint8_t *enc, size_t len, rfs_flat **out);
void rfs_flat_free(rfs_flat *f);
/* A contiguous type of n bytes (the default view). */
int rfs_flat_bytes(uint64_t n, rfs_flat **out);

/* A file view: filetype tiled from disp (copy k starts at disp + k*extent). Maps the bytes
 * [pos, pos+len) of the view's data stream to file runs, in order, calling fn for each
 * (adjacent runs merged). Stops and returns fn's value if it is non-zero. */
typedef int (*rfs_run_fn)(void *ctx, uint64_t file_off, uint64_t len);
int rfs_flat_map(const rfs_flat *ft, uint64_t disp, uint64_t pos, uint64_t len, rfs_run_fn fn,
                 void *ctx);

/* Process-wide: long flattening and view mapping poll *flag and stop with RFS_E_BUSY once it
 * is non-zero, so a server's shutdown is not held up by one hostile datatype. NULL: never. */
void rfs_dt_set_cancel(const atomic_int *flag);

#endif
