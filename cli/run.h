/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* `rfs run` (cmd_run.c, run_find.c): start an MPI launcher with the librfs-mpiio.so built for
 * its MPI preloaded in every rank. */
#ifndef RFS_CLI_RUN_H
#define RFS_CLI_RUN_H

#include <stddef.h>

typedef enum run_mpi { RUN_UNKNOWN, RUN_MPICH, RUN_OPENMPI } run_mpi;

const char *run_mpi_name(run_mpi m);
/* Which MPI the launcher (a name on PATH or a path) starts: by its name, the name it links
 * to, else its --version output. */
run_mpi run_launcher_mpi(const char *launcher);
/* Which MPI the librfs-mpiio.so at path was built for (RUN_UNKNOWN: not one). */
run_mpi run_lib_mpi(const char *path);
/* The build for mpi: $RFS_MPIIO_DIR/{mpich,openmpi}/, $RFS_MPIIO_DIR/, PREFIX/lib/rfs/{mpich,
 * openmpi}/ for an rfs in PREFIX/bin, the build tree rfs is in and its sibling trees build/,
 * build-ompi/, build-mpich/. Returns 0 with the path in out, or -1; looked lists the places
 * tried, for the message. */
int run_find_lib(run_mpi mpi, char *out, size_t cap, char *looked, size_t lcap);

#endif
