/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The MPI side of write-behind (wb.h). */
#include "mpiio/wb.h"

#include "mpiio/shm.h"
#include "wbehind/wbehind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mp_wb {
    rfs_io *io; /* the layer in f->io's stack (NULL: only prepared, mp_wb_prepare) */
    mp_shm shm;
    int have_shm; /* prepared: the segments were made */
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

/* What the hints alone decide, the same on every rank: write-behind will be wanted unless
 * the open fails (the collaborative cache, which excludes it, is wanted with
 * rfs_write_behind on only when rfs_cache=enable). */
int mp_wb_preparable(const mp_file *f)
{
    return f->hints.ccache != MP_ENABLE && wanted(f);
}

static size_t seg_size(int nsize, const mp_file *f, size_t *zero)
{
    return *zero = rfs_wb_segment_size(nsize, (uint64_t)f->hints.wb_buffer_size);
}

void mp_wb_prepare(mp_file *f)
{
    mp_wb *pre = calloc(1, sizeof *pre);
    /* (every rank takes part, even one without memory for pre: the ranks must agree) */
    int have = mp_shm_open(f, pre != NULL, seg_size, pre ? &pre->shm : &(mp_shm){0});
    if (pre) {
        pre->have_shm = have;
        f->wb = pre;
    }
}

int mp_wb_open(mp_file *f, int ok)
{
    mp_shm shm;
    mp_wb *pre = f->wb;
    f->wb = NULL;
    if (pre) {
        int have = pre->have_shm;
        shm = pre->shm;
        free(pre);
        if (!have)
            return MPI_SUCCESS;
    } else if (!mp_shm_open(f, ok && wanted(f), seg_size, &shm)) {
        return MPI_SUCCESS; /* plain direct writes: correct, only without the buffering */
    }
    const mp_hints *h = &f->hints;
    mp_wb *wb = ok && wanted(f) ? calloc(1, sizeof *wb) : NULL;
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

void mp_wb_close_begin(mp_file *f)
{
    mp_wb *wb = f->wb;
    if (!wb)
        return;
    rfs_wb_flush_closing(wb->io);
    PMPI_Barrier(wb->shm.node);
    rfs_wb_detach(wb->io);
    /* the segments stay: an owner's close may still hand a failure over (mp_wb_closed) */
}

int mp_wb_closed(mp_file *f, int code)
{
    mp_wb *wb = f->wb;
    if (!wb)
        return code;
    PMPI_Barrier(wb->shm.node); /* every owner has closed and handed over its failure */
    int owner = -1;
    int e = rfs_wb_closing_error(wb->shm.segs, wb->shm.rank, wb->shm.size,
                                 (uint64_t)f->hints.wb_buffer_size, &owner);
    if (e != RFS_OK && code == MPI_SUCCESS)
        code = mp_error_code(mp_class_of(e),
                             "rfs close: %s: rank %d (of this node) failed to write write-behind "
                             "pages holding this rank's bytes: %s",
                             f->name, owner, rfs_strerror(e));
    mp_shm_close(&wb->shm, 1);
    free(wb);
    f->wb = NULL;
    return code;
}

void mp_wb_atomic(mp_file *f, int flag)
{
    if (f->wb)
        rfs_wb_set_enabled(f->wb->io, !flag);
}
