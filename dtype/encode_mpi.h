/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Encoder from MPI datatypes to the portable encoding (docs/datatypes.md). Built only with MPI
 * (static PIC library rfs_dtype_mpi). Uses only PMPI_ entry points, so it is safe to call from
 * the MPI-IO interposition library. */
#ifndef RFS_DTYPE_ENCODE_MPI_H
#define RFS_DTYPE_ENCODE_MPI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* Encodes t into a malloc'd buffer (*enc, *len; the caller frees it). Returns MPI_SUCCESS or an
 * MPI error class: MPI_ERR_TYPE for MPI_DATATYPE_NULL, unsupported combiners (F90_*, MPI-1
 * *_INTEGER, anything newer), types nested deeper or larger than the decoder accepts, or a type
 * the decoder would not reproduce; MPI_ERR_ARG for null pointers; MPI_ERR_NO_MEM; or the class
 * of a failing PMPI call. rfs_last_error() (rfs/rfs.h) names the cause. Every derived
 * datatype that PMPI_Type_get_contents hands out is freed again, predefined ones never. */
int rfs_dt_encode_mpi(MPI_Datatype t, uint8_t **enc, size_t *len);

#endif
