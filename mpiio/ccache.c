/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The MPI side of the collaborative cache (ccache.h). */
#include "mpiio/ccache.h"

#include "ccache/ccache.h"
#include "mpiio/shm.h"

#include <stdlib.h>

typedef struct mp_cc {
    rfs_io *io; /* the layer in f->io's stack */
    mp_shm shm;
} mp_cc;

/* rfs_cache=auto: only where one shared copy of pages helps and no explicit choice says
 * otherwise: files both read and written (MPI_MODE_RDWR) by several ranks, without write-behind
 * or the read cache asked for (docs/hints.md "Collaborative cache"). */
static int wanted(const mp_file *f)
{
    const mp_hints *h = &f->hints;
    if (h->ccache == MP_DISABLE)
        return 0;
    /* ABT buffers the writes itself; server views need the layer below to see views. */
    if (h->abt == MP_ENABLE || h->view_mode == MP_VIEW_SERVER)
        return 0;
    if (h->ccache == MP_ENABLE)
        return 1;
    int size = 1;
    PMPI_Comm_size(f->comm, &size);
    return size > 1 && (f->amode & MPI_MODE_RDWR) && h->write_behind == MP_DISABLE &&
           h->cache_read != MP_ENABLE;
}

/* Only the metadata is zeroed: the pages' bytes are touched (and counted in RSS) as they are
 * used. */
static size_t seg_size(int nsize, const mp_file *f, size_t *zero)
{
    if (nsize > RFS_CC_MAX_RANKS)
        return 0;
    uint64_t page = (uint64_t)f->hints.cc_page_size, mem = (uint64_t)f->hints.cc_max_memory;
    *zero = rfs_cc_meta_size(nsize, page, mem);
    return rfs_cc_segment_size(nsize, page, mem);
}

int mp_cc_open(mp_file *f, int ok)
{
    mp_shm shm;
    if (!mp_shm_open(f, ok && wanted(f), seg_size, &shm))
        return MPI_SUCCESS;
    /* Ranks on other nodes would each cache their own copies: the per-process path instead. */
    if (!shm.whole) {
        mp_shm_close(&shm, 1);
        return MPI_SUCCESS;
    }
    mp_cc *cc = calloc(1, sizeof *cc);
    rfs_cc_config c = {
        .rank = shm.rank,
        .nranks = shm.size,
        .segments = shm.segs,
        .page_size = (uint64_t)f->hints.cc_page_size,
        .max_memory = (uint64_t)f->hints.cc_max_memory,
        .timeout_ms = f->hints.io_timeout_ms,
        .write_only = (f->amode & MPI_MODE_WRONLY) != 0,
        /* the OPEN reply's size when the server gave one: no round trip */
        .size = f->size_at_open_valid ? (int64_t)f->size_at_open : -1,
        .stats_name = mp_stats_enabled() || mp_trace_enabled() ? f->name : NULL,
    };
    rfs_io *io = NULL;
    int rc = cc ? rfs_cc_wrap(f->io, &c, &io) : RFS_E_NOMEM;
    if (rc == RFS_OK)
        f->io = io; /* from here it owns the layer below */
    if (!mp_shm_agree(f, rc == RFS_OK)) {
        /* Nobody has written yet: detached, it passes every op through. */
        if (rc == RFS_OK)
            rfs_cc_detach(io);
        rfs_clear_error();
        PMPI_Barrier(shm.node);
        mp_shm_close(&shm, 1);
        free(cc);
        return MPI_SUCCESS;
    }
    cc->io = io;
    cc->shm = shm;
    f->cc = cc;
    return MPI_SUCCESS;
}

void mp_cc_close(mp_file *f, int collective)
{
    mp_cc *cc = f->cc;
    if (!cc)
        return;
    rfs_cc_flush_mine(cc->io); /* a failure stays for the close of f->io to report */
    rfs_clear_error();
    if (collective)
        PMPI_Barrier(cc->shm.node);
    rfs_cc_detach(cc->io);
    if (collective)
        PMPI_Barrier(cc->shm.node); /* nobody looks at a segment any more */
    mp_shm_close(&cc->shm, collective);
    free(cc);
    f->cc = NULL;
}

void mp_cc_atomic(mp_file *f, int flag)
{
    mp_cc *cc = f->cc;
    if (!cc)
        return;
    rfs_cc_set_enabled(cc->io, !flag);
    if (flag) {
        /* Every rank's dirty bytes are on the server: the pages may go, and must, since
         * accesses now bypass them and would leave them stale. */
        PMPI_Barrier(cc->shm.node);
        rfs_cc_drop_own(cc->io);
    }
}
