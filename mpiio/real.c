/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The MPI library's own functions. We define MPI_File_x and PMPI_File_x (and the request
 * completion calls), so the library's versions are found with dlsym(RTLD_NEXT): the next
 * definition after ours in the lookup order, which is the MPI library's. */
#include "mpiio/mpiio_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

void *mp_real_lookup(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        /* Without it we cannot pass anything through: a broken install, say so and stop. */
        fprintf(stderr, "librfs-mpiio: cannot find %s in the MPI library: %s\n", name, dlerror());
        abort();
    }
    return p;
}

int64_t mp_min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}
