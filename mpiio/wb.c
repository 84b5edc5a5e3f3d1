/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The MPI side of write-behind (wb.h). */
#include "mpiio/wb.h"

#include "wbehind/wbehind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mp_wb {
    rfs_io *io; /* the layer in f->io's stack */
    MPI_Comm node;
    MPI_Win win;
    void **segs;
} mp_wb;

static int wanted(const mp_file *f)
{
    const mp_hints *h = &f->hints;
    if (h->write_behind == MP_DISABLE)
        return 0;
    /* ABT buffers the writes already; server views need the layer below to see views. */
    if (h->abt == MP_ENABLE || h->view_mode == MP_VIEW_SERVER)
        return 0;
    return (f->amode & (MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR)) != MPI_MODE_RDONLY;
}

static int agree_all(mp_file *f, int v)
{
    int all = 0;
    PMPI_Allreduce(&v, &all, 1, MPI_INT, MPI_MIN, f->comm);
    return all;
}

int mp_wb_open(mp_file *f, int ok)
{
    if (!agree_all(f, ok && wanted(f)))
        return MPI_SUCCESS;
    mp_wb *wb = calloc(1, sizeof *wb);
    int good = wb != NULL;
    MPI_Comm node = MPI_COMM_NULL;
    if (PMPI_Comm_split_type(f->comm, MPI_COMM_TYPE_SHARED, f->rank, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS)
        node = MPI_COMM_NULL;
    int nrank = 0, nsize = 1;
    if (node != MPI_COMM_NULL) {
        PMPI_Comm_rank(node, &nrank);
        PMPI_Comm_size(node, &nsize);
    }
    good = good && node != MPI_COMM_NULL;
    const mp_hints *h = &f->hints;
    uint64_t bufsz = (uint64_t)h->wb_buffer_size;
    size_t segsz = rfs_wb_segment_size(nsize, bufsz);
    void *mine = NULL;
    MPI_Win win = MPI_WIN_NULL;
    int wrc = MPI_ERR_OTHER;
    if (node != MPI_COMM_NULL) {
        /* A failure must come back here, not through the communicator's (fatal) handler. */
        PMPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
        wrc = PMPI_Win_allocate_shared((MPI_Aint)segsz, 64, MPI_INFO_NULL, node, &mine, &win);
    }
    good = good && wrc == MPI_SUCCESS;
    if (good) {
        memset(mine, 0, segsz);
        wb->segs = calloc((size_t)nsize, sizeof *wb->segs);
        good = wb->segs != NULL;
        for (int r = 0; good && r < nsize; r++) {
            MPI_Aint sz;
            int du;
            PMPI_Win_shared_query(win, r, &sz, &du, &wb->segs[r]);
        }
    }
    /* Every segment is zeroed before any rank's layer looks at it. */
    if (!agree_all(f, good))
        goto without;
    rfs_wb_config c = {
        .rank = nrank,
        .nranks = nsize,
        .segments = wb->segs,
        .page_size = (uint64_t)h->wb_page_size,
        .buffer_size = bufsz,
        .max_memory = (uint64_t)h->wb_max_memory,
        .automatic = h->write_behind == MP_AUTO,
        .timeout_ms = h->io_timeout_ms,
        .rt = f->rt,
        .stats_name = mp_stats_enabled() || mp_trace_enabled() ? f->name : NULL,
    };
    rfs_io *io = NULL;
    int rc = rfs_wb_wrap(f->io, &c, &io);
    if (!agree_all(f, rc == RFS_OK)) {
        if (rc == RFS_OK) {
            /* Nobody has written yet: stopped, it passes every op through and no longer
             * looks at the segments. */
            rfs_wb_detach(io);
            f->io = io;
        }
        rfs_clear_error();
        goto without;
    }
    wb->io = io;
    wb->node = node;
    wb->win = win;
    f->io = io;
    f->wb = wb;
    return MPI_SUCCESS;
without:
    /* Plain direct writes: correct, only without the buffering. */
    if (wrc == MPI_SUCCESS)
        PMPI_Win_free(&win);
    if (node != MPI_COMM_NULL)
        PMPI_Comm_free(&node);
    if (wb)
        free(wb->segs);
    free(wb);
    return MPI_SUCCESS;
}

void mp_wb_close(mp_file *f, int collective)
{
    mp_wb *wb = f->wb;
    if (!wb)
        return;
    rfs_wb_flush_mine(wb->io);
    if (collective && wb->node != MPI_COMM_NULL)
        PMPI_Barrier(wb->node);
    rfs_wb_detach(wb->io);
    if (collective && wb->node != MPI_COMM_NULL) {
        /* Every owner has stopped before any segment goes. */
        PMPI_Barrier(wb->node);
        PMPI_Win_free(&wb->win);
        PMPI_Comm_free(&wb->node);
    }
    free(wb->segs);
    free(wb);
    f->wb = NULL;
}

void mp_wb_atomic(mp_file *f, int flag)
{
    if (f->wb)
        rfs_wb_set_enabled(f->wb->io, !flag);
}
