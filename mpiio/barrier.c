/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Barrier, seen by librfs-mpiio.so: before the ranks meet, every write of this rank that
 * returned early (the write window, active buffering) is delivered to the server.
 *
 * Why: programs order writes between ranks with a barrier. HDF5 has one rank fill a new chunk
 * and the others write their rows into it after MPI_Barrier; a header written by rank 0 is read
 * by all after a barrier. On a local or parallel file system a returned write is already in the
 * file; here it may still sit in ABT's buffers or in flight, and another rank's later write
 * reaches the server first over its own connection (the server orders requests per connection
 * only). So the barrier waits for this rank's writes first. Failures are not reported here:
 * they stay for the next call on the file (window) or for sync and close (ABT). Only
 * MPI_Barrier is wrapped, not PMPI_Barrier: tools and our own code call the library's. */
#include "mpiio/mpiio_internal.h"
#include "mpiio/fence.h"

#include "cache/cache.h"

#include <stdlib.h>

int MPI_Barrier(MPI_Comm comm)
{
    MP_TRACE_BEGIN("MPI_Barrier");
    size_t n = 0;
    mp_file **all = mp_files_all(&n);
    char *lazy = calloc(n ? n : 1, 1);
    for (size_t i = 0; i < n; i++) {
        rfs_io *io = all[i]->io;
        /* other ranks' writes before the barrier count from now on (manage.c) */
        __atomic_store_n(&all[i]->size_at_open_valid, 0, __ATOMIC_RELAXED);
        /* Lazy (fence.h): publish the unanswered writes instead of waiting for them. */
        if (lazy && mp_fence_publish(all[i], comm))
            lazy[i] = 1;
        else if (io)
            io->ops->flush(io, 0);
    }
    int rc = PMPI_Barrier(comm);
    /* A file open for writing with the read cache on: another rank may have written bytes
     * cached here before the barrier (HDF5 orders its ranks so), so they are read again. A
     * read-only file keeps its cache: no rank of the job can write it through this handle. */
    for (size_t i = 0; i < n; i++)
        if (all[i]->cache && (all[i]->amode & MPI_MODE_RDONLY) == 0)
            rfs_cache_invalidate(all[i]->cache);
    for (size_t i = 0; i < n; i++)
        if (lazy && lazy[i])
            mp_fence_collect(all[i]);
    free(lazy);
    free(all);
    MP_TRACE_END("MPI_Barrier");
    return rc;
}
