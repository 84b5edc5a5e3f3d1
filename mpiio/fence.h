/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Barriers that do not wait for the network (hint rfs_lazy_barrier, docs/mpiio.md "Lazy
 * barriers"). With the write window or ABT a write returns before the server has it; programs
 * (HDF5 first) order writes of different ranks with MPI_Barrier, so the barrier used to wait
 * one round trip for this rank's writes to be answered. Instead, when every rank of the file
 * is on this node, each rank publishes in node shared memory the byte ranges of its writes not
 * yet answered, a helper thread marks them answered when they are, and after the barrier a
 * rank's request that touches another rank's published ranges waits until that rank's marks
 * say so. Requests on other bytes go at once: the server orders requests on the same bytes
 * only, so their order cannot change what the file holds.
 *
 * The layer sits on top of the rfs_io stack (over ABT or the remote client) and exposes no
 * view ops: views are mapped by the layer above, so every request's file ranges are known
 * here. Not used with rfs_view=server. */
#ifndef RFS_MPIIO_FENCE_H
#define RFS_MPIIO_FENCE_H

#include "mpiio/mpiio_internal.h"

/* Collective over f->comm (application thread): stacks the layer on f->io when the hints ask
 * for it (rfs_lazy_barrier, writes that return early) and every rank of f->comm shares this
 * node's memory. The same decision on every rank. MPI_SUCCESS or an error code. */
int mp_fence_open(mp_file *f, int node_ranks);
/* MPI_Barrier(comm) with f open: 1 if f's barrier is lazy (comm holds the same ranks as the
 * file's), after publishing this rank's unanswered writes; 0: the caller flushes as before. */
int mp_fence_publish(mp_file *f, MPI_Comm comm);
/* After the barrier, for files mp_fence_publish said 1 for: takes the other ranks' ranges. */
void mp_fence_collect(mp_file *f);
/* A collective size change (set_size: exact; preallocate: at least size), on every rank
 * before the ranks agree on its outcome: the sizes the ranks vouch for (fence.c, local_size)
 * start again from it; ok == 0 (it failed): this rank no longer vouches, get_size asks the
 * server. */
void mp_fence_size_changed(mp_file *f, uint64_t size, int exact, int ok);
/* Collective close (before f->io is closed): stops the helper and frees the shared memory;
 * collective 0 (finalize): the memory is left to the MPI library. */
void mp_fence_close(mp_file *f, int collective);

#endif
