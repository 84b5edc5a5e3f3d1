/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Error handlers on rfs files. An MPI_Errhandler does not reveal its function, so we record
 * every file errhandler the application creates (MPI_File_create_errhandler) and call the
 * function ourselves. We also count references the way MPI does (creator + each rfs file using
 * it + each handle returned by get_errhandler), holding back the real MPI_Errhandler_free until
 * the last one goes, so a handler the application freed while a file still uses it stays valid.
 * Invariant: refs > 0 exactly when we hold one real MPI reference for all of them. Entries stay
 * in the table (refs 0) so the function is still known if MPI_FILE_NULL keeps the handler. */
#include "mpiio/mpiio_internal.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct user_errh {
    MPI_Errhandler eh;
    MPI_File_errhandler_function *fn;
    int refs;
} user_errh;

static pthread_mutex_t eh_mu = PTHREAD_MUTEX_INITIALIZER;
static user_errh *tab;
static size_t ntab, captab;

static user_errh *find(MPI_Errhandler eh)
{
    for (size_t i = 0; i < ntab; i++)
        if (tab[i].eh == eh)
            return &tab[i];
    return NULL;
}

static int is_fatal(MPI_Errhandler eh)
{
    if (eh == MPI_ERRORS_ARE_FATAL)
        return 1;
#ifdef MPI_ERRORS_ABORT
    if (eh == MPI_ERRORS_ABORT)
        return 1;
#endif
    return 0;
}

/* Adds a reference to eh if it is a user file errhandler we know; returns its function. */
static MPI_File_errhandler_function *ref_errh(MPI_Errhandler eh)
{
    pthread_mutex_lock(&eh_mu);
    user_errh *u = find(eh);
    MPI_File_errhandler_function *fn = NULL;
    if (u && u->refs > 0) {
        u->refs++;
        fn = u->fn;
    }
    pthread_mutex_unlock(&eh_mu);
    return fn;
}

/* Drops a reference; the real free happens with the last one. */
static void unref_errh(MPI_Errhandler eh)
{
    pthread_mutex_lock(&eh_mu);
    user_errh *u = find(eh);
    int release = 0;
    if (u && u->refs > 0 && --u->refs == 0)
        release = 1;
    pthread_mutex_unlock(&eh_mu);
    if (release)
        MP_REAL(PMPI_Errhandler_free)(&eh);
}

void mp_errh_inherit(mp_file *f)
{
    /* A new file takes the handler currently set on MPI_FILE_NULL (default ERRORS_RETURN). */
    MPI_Errhandler eh = MPI_ERRORS_RETURN;
    if (MP_REAL(PMPI_File_get_errhandler)(MPI_FILE_NULL, &eh) != MPI_SUCCESS)
        eh = MPI_ERRORS_RETURN;
    /* The real get gave us one real reference: it backs our count if we held none. */
    pthread_mutex_lock(&eh_mu);
    user_errh *u = find(eh);
    MPI_File_errhandler_function *fn = u ? u->fn : NULL;
    int drop_real = 0;
    if (u)
        drop_real = u->refs++ > 0;
    pthread_mutex_unlock(&eh_mu);
    if (drop_real || (!u && eh != MPI_ERRORS_RETURN && !is_fatal(eh))) {
        MPI_Errhandler tmp = eh;
        MP_REAL(PMPI_Errhandler_free)(&tmp);
    }
    f->errh = eh;
    f->errfn = fn;
}

void mp_errh_release(mp_file *f)
{
    if (f->errfn)
        unref_errh(f->errh);
    f->errfn = NULL;
    f->errh = MPI_ERRORS_RETURN;
}

int mp_raise(mp_file *f, int code)
{
    if (code == MPI_SUCCESS)
        return code;
    if (!f)
        return mp_raise_null(code);
    if (f->errfn) {
        MPI_File fh = (MPI_File)f;
        int c = code;
        f->errfn(&fh, &c);
        return code;
    }
    if (is_fatal(f->errh)) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS)
            snprintf(msg, sizeof msg, "error %d", code);
        fprintf(stderr, "librfs-mpiio: fatal error on %s (rank %d): %s\n", f->name, f->rank, msg);
        fflush(stderr);
        /* MPI_ERRORS_ABORT (MPI 4) aborts the file's group, MPI_ERRORS_ARE_FATAL everything. */
        MPI_Abort(f->errh == MPI_ERRORS_ARE_FATAL ? MPI_COMM_WORLD : f->comm, code);
    }
    return code;
}

int mp_raise_null(int code)
{
    /* Dispatched here rather than with MPI_File_call_errhandler(MPI_FILE_NULL): Open MPI
     * rejects MPI_FILE_NULL there (MPI_ERR_ARG, fatal on MPI_COMM_WORLD). */
    if (code == MPI_SUCCESS)
        return code;
    MPI_Errhandler eh = MPI_ERRORS_RETURN;
    if (MP_REAL(PMPI_File_get_errhandler)(MPI_FILE_NULL, &eh) != MPI_SUCCESS)
        return code;
    pthread_mutex_lock(&eh_mu);
    user_errh *u = find(eh);
    MPI_File_errhandler_function *fn = u ? u->fn : NULL;
    pthread_mutex_unlock(&eh_mu);
    int fatal = is_fatal(eh);
    if (eh != MPI_ERRORS_RETURN && !fatal) {
        MPI_Errhandler tmp = eh; /* drop the reference get_errhandler gave us */
        MP_REAL(PMPI_Errhandler_free)(&tmp);
    }
    if (fn) {
        MPI_File fh = MPI_FILE_NULL;
        int c = code;
        fn(&fh, &c);
    } else if (fatal) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS)
            snprintf(msg, sizeof msg, "error %d", code);
        fprintf(stderr, "librfs-mpiio: fatal error: %s\n", msg);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, code);
    }
    return code;
}

/* ---- intercepted API ---- */

int MPI_File_create_errhandler(MPI_File_errhandler_function *fn, MPI_Errhandler *eh)
{
    int rc = MP_REAL(PMPI_File_create_errhandler)(fn, eh);
    if (rc != MPI_SUCCESS)
        return rc;
    pthread_mutex_lock(&eh_mu);
    if (ntab == captab) {
        size_t nc = captab ? captab * 2 : 8;
        user_errh *nt = realloc(tab, nc * sizeof *nt);
        if (!nt) {
            pthread_mutex_unlock(&eh_mu);
            return MPI_ERR_NO_MEM;
        }
        tab = nt;
        captab = nc;
    }
    user_errh *old = find(*eh); /* a handle value MPI reused after a real free */
    if (old)
        *old = (user_errh){*eh, fn, 1};
    else
        tab[ntab++] = (user_errh){*eh, fn, 1};
    pthread_mutex_unlock(&eh_mu);
    return MPI_SUCCESS;
}
int PMPI_File_create_errhandler(MPI_File_errhandler_function *fn, MPI_Errhandler *eh)
    __attribute__((alias("MPI_File_create_errhandler")));

int MPI_Errhandler_free(MPI_Errhandler *eh)
{
    pthread_mutex_lock(&eh_mu);
    user_errh *u = find(*eh);
    int known = u && u->refs > 0, release = 0;
    if (known && --u->refs == 0)
        release = 1;
    pthread_mutex_unlock(&eh_mu);
    if (!known || release)
        return MP_REAL(PMPI_Errhandler_free)(eh);
    *eh = MPI_ERRHANDLER_NULL;
    return MPI_SUCCESS;
}
int PMPI_Errhandler_free(MPI_Errhandler *eh) __attribute__((alias("MPI_Errhandler_free")));

int MPI_File_set_errhandler(MPI_File fh, MPI_Errhandler eh)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_set_errhandler)(fh, eh);
    MPI_File_errhandler_function *fn = ref_errh(eh);
    if (!fn && eh != MPI_ERRORS_RETURN && !is_fatal(eh))
        return mp_raise(f,
                        mp_error_code(MPI_ERR_ARG, "rfs: %s: not a file error handler", f->name));
    mp_errh_release(f);
    f->errh = eh;
    f->errfn = fn;
    return MPI_SUCCESS;
}
int PMPI_File_set_errhandler(MPI_File fh, MPI_Errhandler eh)
    __attribute__((alias("MPI_File_set_errhandler")));

int MPI_File_get_errhandler(MPI_File fh, MPI_Errhandler *eh)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_get_errhandler)(fh, eh);
    if (f->errfn)
        ref_errh(f->errh); /* the caller owns a new reference */
    *eh = f->errh;
    return MPI_SUCCESS;
}
int PMPI_File_get_errhandler(MPI_File fh, MPI_Errhandler *eh)
    __attribute__((alias("MPI_File_get_errhandler")));

int MPI_File_call_errhandler(MPI_File fh, int code)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_call_errhandler)(fh, code);
    mp_raise(f, code);
    return MPI_SUCCESS;
}
int PMPI_File_call_errhandler(MPI_File fh, int code)
    __attribute__((alias("MPI_File_call_errhandler")));
