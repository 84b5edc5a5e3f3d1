/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Node shared memory segments (shm.h). */
#include "mpiio/shm.h"

#include <stdlib.h>
#include <string.h>

int mp_shm_agree(mp_file *f, int v)
{
    int all = 0;
    PMPI_Allreduce(&v, &all, 1, MPI_INT, MPI_MIN, f->comm);
    return all;
}

int mp_shm_open(mp_file *f, int want, mp_shm_size_fn size_of, mp_shm *s)
{
    if (!mp_shm_agree(f, want))
        return 0;
    MPI_Comm node = MPI_COMM_NULL;
    if (PMPI_Comm_split_type(f->comm, MPI_COMM_TYPE_SHARED, f->rank, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS)
        node = MPI_COMM_NULL;
    int nrank = 0, nsize = 1, csize = 1;
    PMPI_Comm_size(f->comm, &csize);
    if (node != MPI_COMM_NULL) {
        PMPI_Comm_rank(node, &nrank);
        PMPI_Comm_size(node, &nsize);
    }
    size_t zero = 0;
    size_t segsz = size_of(nsize, f, &zero);
    void *mine = NULL;
    void **segs = NULL;
    MPI_Win win = MPI_WIN_NULL;
    int wrc = MPI_ERR_OTHER;
    if (node != MPI_COMM_NULL && segsz > 0) {
        /* A failure must come back here, not through the communicator's (fatal) handler. */
        PMPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
        wrc = PMPI_Win_allocate_shared((MPI_Aint)segsz, 64, MPI_INFO_NULL, node, &mine, &win);
    }
    int good = wrc == MPI_SUCCESS;
    if (good) {
        memset(mine, 0, zero < segsz ? zero : segsz);
        segs = calloc((size_t)nsize, sizeof *segs);
        good = segs != NULL;
        for (int r = 0; good && r < nsize; r++) {
            MPI_Aint sz;
            int du;
            PMPI_Win_shared_query(win, r, &sz, &du, &segs[r]);
        }
    }
    /* Every segment is zeroed before any rank's layer looks at it. */
    if (!mp_shm_agree(f, good)) {
        if (wrc == MPI_SUCCESS)
            PMPI_Win_free(&win);
        if (node != MPI_COMM_NULL)
            PMPI_Comm_free(&node);
        free(segs);
        return 0;
    }
    s->node = node;
    s->win = win;
    s->segs = segs;
    s->rank = nrank;
    s->size = nsize;
    s->whole = mp_shm_agree(f, nsize == csize);
    return 1;
}

void mp_shm_close(mp_shm *s, int collective)
{
    if (collective && s->node != MPI_COMM_NULL) {
        PMPI_Win_free(&s->win);
        PMPI_Comm_free(&s->node);
    }
    free(s->segs);
    s->segs = NULL;
}
