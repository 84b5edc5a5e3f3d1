/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs errors -> MPI error codes. Each failure gets a code of the right MPI error class whose
 * MPI_Error_string names server, path and cause. Codes come from a small ring per class
 * (MPI_Add_error_code cannot be undone, so we reuse them): the last MP_CODES_PER_CLASS messages
 * of each class stay readable.
 *
 * We also keep the messages ourselves and answer MPI_Error_string for our codes: MPICH 4.0 gives
 * codes added to a predefined class no dynamic marker, and its MPI_Error_string then prints an
 * unrelated internal "error stack" instead of the string we added. */
#include "mpiio/mpiio_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MP_CODES_PER_CLASS 8
#define MP_MAX_CLASSES 48

typedef struct class_ring {
    int cls;
    int ncodes;
    int next;
    int codes[MP_CODES_PER_CLASS];
    char msgs[MP_CODES_PER_CLASS][MPI_MAX_ERROR_STRING];
} class_ring;

static pthread_mutex_t err_mu = PTHREAD_MUTEX_INITIALIZER;
static class_ring rings[MP_MAX_CLASSES];
static int nrings;

int mp_class_of(int e)
{
    switch (e) {
    case RFS_OK: return MPI_SUCCESS;
    case RFS_E_NOENT: return MPI_ERR_NO_SUCH_FILE;
    case RFS_E_EXIST: return MPI_ERR_FILE_EXISTS;
    case RFS_E_ACCESS:
    case RFS_E_AUTH: return MPI_ERR_ACCESS;
    case RFS_E_ROFS: return MPI_ERR_READ_ONLY;
    case RFS_E_INVAL:
    case RFS_E_TOOBIG:
    case RFS_E_FBIG: return MPI_ERR_ARG;
    case RFS_E_NOSPC: return MPI_ERR_NO_SPACE;
    case RFS_E_DQUOT: return MPI_ERR_QUOTA;
    case RFS_E_ISDIR:
    case RFS_E_NOTDIR:
    case RFS_E_NAME: return MPI_ERR_BAD_FILE;
    case RFS_E_NOMEM: return MPI_ERR_NO_MEM;
    case RFS_E_BADF: return MPI_ERR_FILE;
    case RFS_E_UNSUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
    default: return MPI_ERR_IO; /* IO, PROTO, CONN, TIMEOUT, BUSY, VERSION, NOTEMPTY */
    }
}

/* Returns the slot for a new message in cls, and its code (cls itself if none can be made). */
static char *code_for_class(int cls, int *out)
{
    class_ring *r = NULL;
    for (int i = 0; i < nrings; i++)
        if (rings[i].cls == cls)
            r = &rings[i];
    if (!r) {
        if (nrings == MP_MAX_CLASSES) {
            *out = cls;
            return NULL;
        }
        r = &rings[nrings++];
        r->cls = cls;
    }
    int slot;
    if (r->ncodes < MP_CODES_PER_CLASS) {
        int code;
        if (MPI_Add_error_code(cls, &code) != MPI_SUCCESS) {
            *out = cls;
            return NULL;
        }
        slot = r->ncodes++;
        r->codes[slot] = code;
        r->next = r->ncodes % MP_CODES_PER_CLASS;
    } else {
        slot = r->next;
        r->next = (r->next + 1) % MP_CODES_PER_CLASS;
    }
    *out = r->codes[slot];
    return r->msgs[slot];
}

int mp_error_code(int cls, const char *fmt, ...)
{
    char msg[MPI_MAX_ERROR_STRING];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return cls;
    pthread_mutex_lock(&err_mu);
    /* A code of ours already says what failed more precisely than a caller further up. */
    for (int i = 0; i < nrings; i++)
        for (int j = 0; j < rings[i].ncodes; j++)
            if (rings[i].codes[j] == cls) {
                pthread_mutex_unlock(&err_mu);
                return cls;
            }
    int code;
    char *slot = code_for_class(cls, &code);
    if (slot) {
        snprintf(slot, MPI_MAX_ERROR_STRING, "%s", msg);
        MPI_Add_error_string(code, msg);
    }
    pthread_mutex_unlock(&err_mu);
    return code;
}

int MPI_Error_string(int code, char *s, int *len)
{
    int found = 0;
    pthread_mutex_lock(&err_mu);
    for (int i = 0; i < nrings && !found; i++)
        for (int j = 0; j < rings[i].ncodes; j++)
            if (rings[i].codes[j] == code) {
                snprintf(s, MPI_MAX_ERROR_STRING, "%s", rings[i].msgs[j]);
                *len = (int)strlen(s);
                found = 1;
                break;
            }
    pthread_mutex_unlock(&err_mu);
    return found ? MPI_SUCCESS : MP_REAL(PMPI_Error_string)(code, s, len);
}
int PMPI_Error_string(int code, char *s, int *len) __attribute__((alias("MPI_Error_string")));

int mp_io_error(const mp_file *f, int rfs_err, const char *what, const char *rfs_msg)
{
    const char *server = f && f->io ? f->io->server : "?";
    const char *path = f && f->io ? f->io->path : (f ? f->name : "?");
    if (rfs_msg && rfs_msg[0])
        return mp_error_code(mp_class_of(rfs_err), "rfs %s: %s", what, rfs_msg);
    return mp_error_code(mp_class_of(rfs_err), "rfs %s: %s:%s: %s", what, server, path,
                         rfs_strerror(rfs_err));
}
