/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Which ranks aggregate in two-phase collective I/O (aggr.c). */
#ifndef RFS_MPIIO_AGGR_H
#define RFS_MPIIO_AGGR_H

#include "mpiio/mpiio_internal.h"

/* The aggregator ranks of f->comm, ascending, for the cb_nodes hint `want` (0: one per node,
 * the lowest rank of each). `want` > 0 picks that many (at most the number of ranks) spread over
 * the nodes: the lowest rank of every node first, then the second lowest of every node, and so
 * on. Collective over f->comm the first time (nodes found with MPI_Comm_split_type(SHARED) and
 * cached on the communicator); local afterwards. Caller frees *ranks. Returns MPI_SUCCESS or
 * MPI_ERR_NO_MEM. */
int mp_aggregators(mp_file *f, int want, int **ranks, int *n);

#endif
