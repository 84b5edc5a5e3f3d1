/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The collaborative page cache for MPI-IO (hint rfs_cache; ccache/ccache.h, docs/design.md
 * "Collaborative cache"): the MPI side. Only these functions call MPI, all in the application's
 * thread: the node's shared segments are made at open and freed at close. */
#ifndef RFS_MPIIO_CCACHE_H
#define RFS_MPIIO_CCACHE_H

#include "mpiio/mpiio_internal.h"

/* Collective over f->comm, on every rank whatever its open's outcome (ok == 0: this rank's
 * open failed, so nobody stacks the layer). Stacks the cache on f->io when the hints ask for it
 * and every rank of the file is on this node; it then takes the place of write-behind and the
 * read cache for the file (f->cc is set on every rank or none). */
int mp_cc_open(mp_file *f, int ok);
/* Before f->io is closed: this rank's dirty bytes to the server; collective: the group waits
 * for every rank's before the segments are freed. */
void mp_cc_close(mp_file *f, int collective);
/* Atomic mode on (flag 1): every rank's dirty bytes go to the server, the pages are dropped
 * and accesses pass straight through; off: caching again. Collective (a barrier of the node),
 * before the ranks agree on the call's outcome. */
void mp_cc_atomic(mp_file *f, int flag);

#endif
