/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The MPI side of write-behind (wb.h). */
#include "mpiio/wb.h"

#include "mpiio/shm.h"
#include "wbehind/wbehind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mp_wb {
    rfs_io *io; /* the layer in f->io's stack */
    mp_shm shm;
} mp_wb;

static int wanted(const mp_file *f)
{
    const mp_hints *h = &f->hints;
    if (h->write_behind == MP_DISABLE || f->cc)
        return 0;
    /* ABT buffers the writes already; server views need the layer below to see views. */
    if (h->abt == MP_ENABLE || h->view_mode == MP_VIEW_SERVER)
        return 0;
    return (f->amode & (MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR)) != MPI_MODE_RDONLY;
}

static size_t seg_size(int nsize, const mp_file *f, size_t *zero)
{
    return *zero = rfs_wb_segment_size(nsize, (uint64_t)f->hints.wb_buffer_size);
}

int mp_wb_open(mp_file *f, int ok)
{
    mp_shm shm;
    if (!mp_shm_open(f, ok && wanted(f), seg_size, &shm))
        return MPI_SUCCESS; /* plain direct writes: correct, only without the buffering */
    const mp_hints *h = &f->hints;
    mp_wb *wb = calloc(1, sizeof *wb);
    rfs_wb_config c = {
        .rank = shm.rank,
        .nranks = shm.size,
        .segments = shm.segs,
        .page_size = (uint64_t)h->wb_page_size,
        .buffer_size = (uint64_t)h->wb_buffer_size,
        .max_memory = (uint64_t)h->wb_max_memory,
        .automatic = h->write_behind == MP_AUTO,
        .timeout_ms = h->io_timeout_ms,
        .rt = f->rt,
        .stats_name = mp_stats_enabled() || mp_trace_enabled() ? f->name : NULL,
    };
    rfs_io *io = NULL;
    int rc = wb ? rfs_wb_wrap(f->io, &c, &io) : RFS_E_NOMEM;
    if (!mp_shm_agree(f, rc == RFS_OK)) {
        if (rc == RFS_OK) {
            /* Nobody has written yet: stopped, it passes every op through and no longer
             * looks at the segments. */
            rfs_wb_detach(io);
            f->io = io;
        }
        rfs_clear_error();
        PMPI_Barrier(shm.node);
        mp_shm_close(&shm, 1);
        free(wb);
        return MPI_SUCCESS;
    }
    wb->io = io;
    wb->shm = shm;
    f->io = io;
    f->wb = wb;
    return MPI_SUCCESS;
}

void mp_wb_close(mp_file *f, int collective)
{
    mp_wb *wb = f->wb;
    if (!wb)
        return;
    rfs_wb_flush_mine(wb->io);
    if (collective)
        PMPI_Barrier(wb->shm.node);
    rfs_wb_detach(wb->io);
    if (collective)
        PMPI_Barrier(wb->shm.node); /* every owner has stopped before any segment goes */
    mp_shm_close(&wb->shm, collective);
    free(wb);
    f->wb = NULL;
}

void mp_wb_atomic(mp_file *f, int flag)
{
    if (f->wb)
        rfs_wb_set_enabled(f->wb->io, !flag);
}
