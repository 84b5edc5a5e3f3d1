/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Node shared memory for the layers whose ranks exchange through it (write-behind, wb.c; the
 * collaborative cache, ccache.c): one segment per rank of a node, reachable by every rank of the
 * node. Only these functions call MPI, in the application's thread, at open and close. */
#ifndef RFS_MPIIO_SHM_H
#define RFS_MPIIO_SHM_H

#include "mpiio/mpiio_internal.h"

typedef struct mp_shm {
    MPI_Comm node; /* the ranks of f->comm sharing this node's memory */
    MPI_Win win;
    void **segs;    /* size segments; segs[r] is node rank r's */
    int rank, size; /* in node */
    int whole;      /* 1: every rank of f->comm is on this node (agreed by all ranks) */
} mp_shm;

/* The segment size for a node of nsize ranks, and in *zero how many of its first bytes must be
 * zeroed before any rank uses it (the rest is never read before it is written). */
typedef size_t (*mp_shm_size_fn)(int nsize, const mp_file *f, size_t *zero);

/* Collective over f->comm, on every rank whatever its own state: want says whether this rank
 * wants the segments; every rank gets them (each zeroed as size_of says before any rank returns) or, when a
 * rank does not want them or any step fails somewhere, none (0 everywhere, *s untouched). */
int mp_shm_open(mp_file *f, int want, mp_shm_size_fn size_of, mp_shm *s);
/* Collective 1: the group waits for every rank before the segments are freed; 0 (finalize):
 * only this rank's bookkeeping goes (the memory stays until the process ends). */
void mp_shm_close(mp_shm *s, int collective);
/* MPI_MIN of v over f->comm. */
int mp_shm_agree(mp_file *f, int v);

#endif
