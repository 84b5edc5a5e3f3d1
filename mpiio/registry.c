/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Which MPI_File values are ours. A handle value is only compared, never dereferenced, until it
 * is found in the table, so foreign (MPI library) handles are safe to look up. */
#include "mpiio/mpiio_internal.h"
#include "mpiio/fence.h"

#include <stdlib.h>
#include <string.h>

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static mp_file **files;
static size_t nfiles, capfiles;

/* Fortran indices: base well above the small table indices MPICH and Open MPI hand out. */
#define MP_FORTRAN_BASE 0x40000000
#define MP_FORTRAN_MAX 65536
static mp_file *fortran_tab[MP_FORTRAN_MAX];

void mp_files_add(mp_file *f)
{
    pthread_mutex_lock(&reg_mu);
    if (nfiles == capfiles) {
        size_t nc = capfiles ? capfiles * 2 : 16;
        mp_file **nf = realloc(files, nc * sizeof *nf);
        if (!nf)
            abort();
        files = nf;
        capfiles = nc;
    }
    files[nfiles++] = f;
    pthread_mutex_unlock(&reg_mu);
}

void mp_files_remove(mp_file *f)
{
    pthread_mutex_lock(&reg_mu);
    for (size_t i = 0; i < nfiles; i++)
        if (files[i] == f) {
            memmove(&files[i], &files[i + 1], (nfiles - i - 1) * sizeof *files);
            nfiles--;
            break;
        }
    pthread_mutex_unlock(&reg_mu);
}

mp_file *mp_file_of(MPI_File fh)
{
    mp_file *r = mp_file_peek(fh);
    if (r)
        __atomic_store_n(&r->size_at_open_valid, 0, __ATOMIC_RELAXED);
    return r;
}

mp_file *mp_file_peek(MPI_File fh)
{
    mp_file *r = NULL;
    pthread_mutex_lock(&reg_mu);
    for (size_t i = 0; i < nfiles; i++)
        if ((void *)files[i] == (void *)fh) {
            r = files[i];
            break;
        }
    pthread_mutex_unlock(&reg_mu);
    return r;
}

mp_file **mp_files_all(size_t *n)
{
    pthread_mutex_lock(&reg_mu);
    mp_file **out = malloc((nfiles ? nfiles : 1) * sizeof *out);
    if (out) {
        if (nfiles) /* files is NULL before the first open: memcpy needs a valid pointer */
            memcpy(out, files, nfiles * sizeof *out);
        *n = nfiles;
    } else {
        *n = 0;
    }
    pthread_mutex_unlock(&reg_mu);
    return out;
}

MPI_Fint mp_fortran_index(mp_file *f)
{
    pthread_mutex_lock(&reg_mu);
    if (!f->fidx) {
        for (int i = 0; i < MP_FORTRAN_MAX; i++)
            if (!fortran_tab[i]) {
                fortran_tab[i] = f;
                f->fidx = MP_FORTRAN_BASE + i;
                break;
            }
    }
    int r = f->fidx;
    pthread_mutex_unlock(&reg_mu);
    return (MPI_Fint)r;
}

int mp_is_fortran_index(MPI_Fint i)
{
    return i >= MP_FORTRAN_BASE && i < MP_FORTRAN_BASE + MP_FORTRAN_MAX;
}

mp_file *mp_file_of_fortran(MPI_Fint i)
{
    if (!mp_is_fortran_index(i))
        return NULL;
    pthread_mutex_lock(&reg_mu);
    mp_file *f = fortran_tab[i - MP_FORTRAN_BASE];
    pthread_mutex_unlock(&reg_mu);
    return f;
}

void mp_fortran_release(mp_file *f)
{
    pthread_mutex_lock(&reg_mu);
    if (f->fidx)
        fortran_tab[f->fidx - MP_FORTRAN_BASE] = NULL;
    f->fidx = 0;
    pthread_mutex_unlock(&reg_mu);
}

void mp_files_forget_sizes(void)
{
    size_t n = 0;
    mp_file **all = mp_files_all(&n);
    for (size_t i = 0; all && i < n; i++) {
        __atomic_store_n(&all[i]->size_at_open_valid, 0, __ATOMIC_RELAXED);
        mp_fence_size_changed(all[i], 0, 0, 0);
    }
    free(all);
}
