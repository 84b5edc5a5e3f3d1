/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Wire constants of the portable datatype encoding (docs/datatypes.md). Shared by the decoder,
 * the MPI encoder and the tests; the values are our own, not any MPI library's, so an encoding
 * made with MPICH decodes identically next to Open MPI or without MPI at all. */
#ifndef RFS_DT_FORMAT_H
#define RFS_DT_FORMAT_H

#define RFS_DT_MAGIC0 'R'
#define RFS_DT_MAGIC1 'F'
#define RFS_DT_MAGIC2 'D'
#define RFS_DT_MAGIC3 'T'
#define RFS_DT_VERSION 1
/* magic[4] u8 version u8 flags(0) u16 reserved(0) u64 total_len */
#define RFS_DT_HEADER_LEN 16

/* Node kinds (u8). Numbers are part of the format: never renumber. */
enum rfs_dt_wire_kind {
    RFS_DTW_NAMED = 1,      /* i64 size, lb, extent; u32 nruns; nruns x (i64 off, i64 len) */
    RFS_DTW_DUP = 2,        /* child */
    RFS_DTW_CONTIGUOUS = 3, /* i64 count; child */
    RFS_DTW_VECTOR = 4,     /* i64 count, blocklen, stride (in child extents); child */
    RFS_DTW_HVECTOR = 5,    /* i64 count, blocklen, stride (bytes); child */
    RFS_DTW_INDEXED = 6,  /* i64 count; count x i64 blocklen; count x i64 displ (extents); child */
    RFS_DTW_HINDEXED = 7, /* i64 count; count x i64 blocklen; count x i64 displ (bytes); child */
    RFS_DTW_INDEXED_BLOCK = 8,  /* i64 count, blocklen; count x i64 displ (extents); child */
    RFS_DTW_HINDEXED_BLOCK = 9, /* i64 count, blocklen; count x i64 displ (bytes); child */
    RFS_DTW_STRUCT =
        10, /* i64 count; count x i64 blocklen; count x i64 displ (bytes); count children */
    RFS_DTW_SUBARRAY =
        11, /* u32 ndims; u8 order; ndims x i64 size, subsize, start (3 arrays); child */
    RFS_DTW_DARRAY = 12,  /* u32 nprocs, rank, ndims; u8 order; ndims x (i64 gsize, u8 distrib,
                             i64 darg, i64 psize); child */
    RFS_DTW_RESIZED = 13, /* i64 lb, extent; child */
};

#define RFS_DT_ORDER_C 0
#define RFS_DT_ORDER_FORTRAN 1
#define RFS_DT_DIST_NONE 0
#define RFS_DT_DIST_BLOCK 1
#define RFS_DT_DIST_CYCLIC 2
#define RFS_DT_DARG_DEFAULT (-1)

/* Decoder limits beyond those in dtype.h. */
#define RFS_DT_MAX_NDIMS 32
#define RFS_DT_MAX_LEAF_RUNS 64

#endif
