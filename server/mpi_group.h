/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfsd --mpi: the start of a server group under mpiexec (docs/design.md "Scaling out: rfsd
 * as an MPI job"). MPI is used only here, before any thread starts: each process learns its
 * rank, listens, and the processes exchange their addresses; then MPI is finalized, so a
 * process that dies later takes nothing of the others with it. Built only when CMake finds
 * MPI (RFSD_HAVE_MPI); without it --mpi is refused at start. */
#ifndef RFSD_MPI_GROUP_H
#define RFSD_MPI_GROUP_H

#include <stddef.h>

#include "server.h"

/* MPI_Init, then listens on cfg->listen (its port plus the rank on this node when not 0),
 * exchanges addresses (rfsd_group_set) and finalizes MPI. *lfd and addr (cap bytes) get the
 * listening socket and its address. 0, or -1 after a message (this process then exits 2, and
 * mpiexec ends the others). */
int rfsd_mpi_start(int *argc, char ***argv, const rfsd_config *cfg, int *lfd, char *addr,
                   size_t cap);

#endif
