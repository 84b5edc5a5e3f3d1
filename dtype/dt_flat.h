/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The allocation behind every rfs_flat handed out by this library: the public struct plus the
 * prefix sums of the run lengths that rfs_flat_map binary-searches. An rfs_flat must therefore
 * come from rfs_dt_flatten or rfs_flat_bytes (and be freed by rfs_flat_free). */
#ifndef RFS_DT_FLAT_H
#define RFS_DT_FLAT_H

#include "dtype/dtype.h"

typedef struct {
    rfs_flat pub; /* first member: an rfs_flat * is a flat_impl * */
    int64_t *cum; /* n + 1 entries: cum[i] = data bytes before run i; cum[n] = size */
} flat_impl;

/* Takes ownership of off/len (n runs, all len > 0), computes prefix sums and monotonic. */
int dt_flat_make(int64_t *off, int64_t *len, size_t n, int64_t size, int64_t lb, int64_t extent,
                 rfs_flat **out);

#endif
