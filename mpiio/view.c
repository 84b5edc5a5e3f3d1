/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* File views. set_view encodes the filetype once (rfs_dt_encode_mpi), flattens it locally for
 * client-side mapping, and marks it unsent: the server learns it with the next access
 * (engine.c). Views are reference counted because nonblocking operations in flight keep using
 * the view they started with. */
#include "mpiio/mpiio_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/debug.h"
#include "dtype/encode_mpi.h"

static int is_named(MPI_Datatype t)
{
    int ni, na, nd, comb;
    if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return 0;
    return comb == MPI_COMBINER_NAMED;
}

/* MPI offers no query; packing nothing checks it in both MPICH and Open MPI (Open MPI's
 * MPI_Pack_size does not), and reports through MPI_COMM_SELF's handler, which must not abort
 * the program here. */
static int committed(MPI_Datatype t)
{
    if (is_named(t))
        return 1;
    MPI_Errhandler old;
    char in, out;
    int pos = 0;
    PMPI_Comm_get_errhandler(MPI_COMM_SELF, &old);
    PMPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int ok = PMPI_Pack(&in, 0, t, &out, 1, &pos, MPI_COMM_SELF) == MPI_SUCCESS;
    PMPI_Comm_set_errhandler(MPI_COMM_SELF, old);
    PMPI_Errhandler_free(&old);
    return ok;
}

/* Overlapping runs are allowed for reading only (MPI-4 sec. 14.3), and displacements must
 * still not decrease. */
static int overlap_ok(const mp_file *f, const rfs_flat *fl)
{
    if (!(f->amode & MPI_MODE_RDONLY) || fl->n == 0 || fl->off[0] < 0 || fl->extent <= 0)
        return 0;
    for (size_t i = 1; i < fl->n; i++)
        if (fl->off[i] < fl->off[i - 1])
            return 0;
    return 1;
}

void mp_view_free(mp_view *v)
{
    if (!v)
        return;
    if (v->etype != MPI_DATATYPE_NULL && !is_named(v->etype))
        PMPI_Type_free(&v->etype);
    if (v->filetype != MPI_DATATYPE_NULL && !is_named(v->filetype))
        PMPI_Type_free(&v->filetype);
    if (v->user_etype != MPI_DATATYPE_NULL && !is_named(v->user_etype))
        PMPI_Type_free(&v->user_etype);
    if (v->user_filetype != MPI_DATATYPE_NULL && !is_named(v->user_filetype))
        PMPI_Type_free(&v->user_filetype);
    rfs_flat_free(v->flat);
    free(v->enc);
    free(v);
}

mp_view *mp_view_get(mp_file *f)
{
    pthread_mutex_lock(&f->mu);
    mp_view *v = f->view;
    RFS_REF_GET(v->refs);
    pthread_mutex_unlock(&f->mu);
    return v;
}

/* Releases a reference. The last one frees the view; the datatype frees are MPI calls, so a view
 * is only ever released for the last time in an application thread (set_view, close, or a
 * completion run by the wait functions), never by an I/O thread. */
void mp_view_put(mp_file *f, mp_view *v)
{
    pthread_mutex_lock(&f->mu);
    int last = RFS_REF_PUT(v->refs) == 0;
    pthread_mutex_unlock(&f->mu);
    if (last) {
        RFS_REF_DEAD(v->refs);
        mp_view_free(v);
    }
}

static int install(mp_file *f, mp_view *v)
{
    pthread_mutex_lock(&f->mu);
    mp_view *old = f->view;
    v->refs = 1;
    v->slot = -1;
    f->view = v;
    pthread_mutex_unlock(&f->mu);
    if (old)
        mp_view_put(f, old);
    return MPI_SUCCESS;
}

int mp_view_default(mp_file *f)
{
    mp_view *v = calloc(1, sizeof *v);
    if (!v)
        return MPI_ERR_NO_MEM;
    v->etype = MPI_BYTE;
    v->filetype = MPI_BYTE;
    v->user_etype = v->user_filetype = MPI_DATATYPE_NULL;
    v->etype_size = 1;
    v->contig = 1;
    return install(f, v);
}

/* Builds the view (without installing it). Returns MPI_SUCCESS or an error code. */
static int build_view(mp_file *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                      mp_view **out)
{
    MPI_Count esz = 0, fsz = 0;
    /* Error classes as ROMIO gives them (tests/mpiio/t_parity.c): a missing type or sizes that
     * do not fit are bad arguments, an uncommitted type a bad type. */
    if (etype == MPI_DATATYPE_NULL || filetype == MPI_DATATYPE_NULL)
        return mp_error_code(MPI_ERR_ARG, "rfs: %s: set_view: null etype or filetype", f->name);
    if (!committed(etype) || !committed(filetype) || PMPI_Type_size_x(etype, &esz) != MPI_SUCCESS ||
        PMPI_Type_size_x(filetype, &fsz) != MPI_SUCCESS)
        return mp_error_code(MPI_ERR_TYPE,
                             "rfs: %s: set_view: invalid or uncommitted etype or "
                             "filetype",
                             f->name);
    if (esz <= 0 || fsz <= 0 || fsz % esz)
        return mp_error_code(MPI_ERR_ARG,
                             "rfs: %s: set_view: filetype size %lld is not a positive multiple "
                             "of the etype size %lld",
                             f->name, (long long)fsz, (long long)esz);
    mp_view *v = calloc(1, sizeof *v);
    if (!v)
        return MPI_ERR_NO_MEM;
    v->user_etype = v->user_filetype = MPI_DATATYPE_NULL;
    v->disp = disp;
    v->etype_size = esz;
    v->etype = etype;
    v->filetype = filetype;
    int code = MPI_SUCCESS;
    if (!is_named(etype) && PMPI_Type_dup(etype, &v->etype) != MPI_SUCCESS)
        v->etype = MPI_DATATYPE_NULL, code = MPI_ERR_TYPE;
    if (!is_named(filetype) && PMPI_Type_dup(filetype, &v->filetype) != MPI_SUCCESS)
        v->filetype = MPI_DATATYPE_NULL, code = MPI_ERR_TYPE;
    if (code != MPI_SUCCESS) {
        mp_view_free(v);
        return mp_error_code(code, "rfs: %s: set_view: cannot duplicate the datatypes", f->name);
    }
    int erc = rfs_dt_encode_mpi(filetype, &v->enc, &v->enc_len);
    if (erc != MPI_SUCCESS) {
        mp_view_free(v);
        return mp_error_code(erc, "rfs: %s: set_view: cannot encode the filetype: %s", f->name,
                             rfs_last_error());
    }
    int rc = rfs_flat_from_encoding(v->enc, v->enc_len, &v->flat);
    if (rc != RFS_OK) {
        mp_view_free(v);
        return mp_error_code(MPI_ERR_TYPE, "rfs: %s: set_view: cannot describe the filetype: %s",
                             f->name, rfs_last_error()[0] ? rfs_last_error() : rfs_strerror(rc));
    }
    /* FNV-1a over the displacement and the encoding: server slots are matched by it. */
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof disp; i++)
        h = (h ^ (uint8_t)((uint64_t)disp >> (8 * i))) * 1099511628211ull;
    for (size_t i = 0; i < v->enc_len; i++)
        h = (h ^ v->enc[i]) * 1099511628211ull;
    v->hash = h;
    rfs_flat *fl = v->flat;
    if (fl->n == 1 && fl->off[0] == 0 && fl->len[0] == fl->extent) {
        v->contig = 1; /* plain bytes: no need to tell the server or map anything */
    } else if (!fl->monotonic && overlap_ok(f, fl)) {
        v->overlap = 1;
    } else if (!fl->monotonic || fl->n == 0 || fl->off[0] < 0 || fl->extent <= 0) {
        /* MPI asks only for nonnegative, nondecreasing displacements: data may lie outside
         * [lb, lb+extent) (HDF5 builds such types for chunked datasets), tiles still start at
         * disp + k*extent. ROMIO answers MPI_ERR_IO here; so do we. */
        mp_view_free(v);
        return mp_error_code(MPI_ERR_IO,
                             "rfs: %s: set_view: the filetype's displacements must be nonnegative "
                             "and nondecreasing%s",
                             f->name,
                             (f->amode & MPI_MODE_RDONLY) ? ""
                                                          : ", without overlaps on a file "
                                                            "open for writing");
    }
    *out = v;
    return MPI_SUCCESS;
}

static int keep_type(MPI_Datatype t, MPI_Datatype *out)
{
    if (is_named(t)) {
        *out = t;
        return MPI_SUCCESS;
    }
    return PMPI_Type_dup(t, out) == MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_TYPE;
}

/* The view in the file's representation: the types laid out with its sizes (datarep.c) and
 * the types given kept for get_view. Types the representation cannot handle are refused
 * before anything is built, with the type's name. */
static int file_view(mp_file *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                     const mp_datarep *rep, mp_view **out)
{
    if (!rep || etype == MPI_DATATYPE_NULL || filetype == MPI_DATATYPE_NULL || !committed(etype) ||
        !committed(filetype))
        return build_view(f, disp, etype, filetype, out); /* which reports bad types */
    int code = mp_datarep_check(rep, etype, f->name);
    if (code == MPI_SUCCESS)
        code = mp_datarep_check(rep, filetype, f->name);
    if (code != MPI_SUCCESS)
        return code;
    MPI_Datatype fe = etype, ft = filetype;
    code = mp_datarep_file_type(rep, etype, &fe);
    if (code == MPI_SUCCESS)
        code = mp_datarep_file_type(rep, filetype, &ft);
    if (code != MPI_SUCCESS)
        code = mp_error_code(MPI_ERR_UNSUPPORTED_DATAREP,
                             "rfs: %s: set_view: cannot lay the "
                             "etype and filetype out in data representation \"%s\"",
                             f->name, mp_datarep_name(rep));
    else
        code = build_view(f, disp, fe, ft, out);
    /* Predefined types are kept as they are, derived ones as our duplicates. */
    if (code == MPI_SUCCESS && fe != etype)
        code = keep_type(etype, &(*out)->user_etype);
    if (code == MPI_SUCCESS && ft != filetype)
        code = keep_type(filetype, &(*out)->user_filetype);
    if (code != MPI_SUCCESS && *out) {
        mp_view_free(*out);
        *out = NULL;
    }
    if (fe != etype)
        PMPI_Type_free(&fe);
    if (ft != filetype)
        PMPI_Type_free(&ft);
    return code;
}

static int set_view(mp_file *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                    const char *datarep, MPI_Info info)
{
    mp_view *v = NULL;
    const mp_datarep *rep = NULL;
    int code = mp_datarep_find(datarep, &rep);
    if (code == MPI_SUCCESS && disp == MPI_DISPLACEMENT_CURRENT) {
        if (!(f->amode & MPI_MODE_SEQUENTIAL)) {
            code = mp_error_code(MPI_ERR_ARG,
                                 "rfs: %s: MPI_DISPLACEMENT_CURRENT needs "
                                 "MPI_MODE_SEQUENTIAL",
                                 f->name);
        } else {
            int64_t cur = 0;
            code = mp_shared_fetch_add(f, 0, &cur);
            disp = f->view->disp + cur * f->view->etype_size;
        }
    } else if (code == MPI_SUCCESS && disp < 0) {
        code = mp_error_code(MPI_ERR_ARG, "rfs: %s: negative displacement", f->name);
    }
    mp_nb_drain(f);
    if (code == MPI_SUCCESS)
        code = file_view(f, disp, etype, filetype, rep, &v);
    if (code == MPI_SUCCESS) {
        v->rep = rep;
        snprintf(v->datarep, sizeof v->datarep, "%s", datarep);
    }
    code = mp_agree_error(f, f->comm, code);
    if (code != MPI_SUCCESS) {
        mp_view_free(v);
        return mp_raise(f, code);
    }
    mp_hints_apply_info(&f->hints, info);
    install(f, v);
    f->ind_ptr = 0;
    /* The shared pointer restarts at 0 too; usually without any request (shared.c). */
    code = mp_shared_reset(f);
    return mp_raise(f, code);
}
int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                      const char *datarep, MPI_Info info)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_set_view)(fh, disp, etype, filetype, datarep, info);
    MP_TRACE_BEGIN("MPI_File_set_view");
    int rc = set_view(f, disp, etype, filetype, datarep, info);
    MP_TRACE_END("MPI_File_set_view");
    return rc;
}
int PMPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                       const char *datarep, MPI_Info info)
    __attribute__((alias("MPI_File_set_view")));

int MPI_File_get_view(MPI_File fh, MPI_Offset *disp, MPI_Datatype *etype, MPI_Datatype *filetype,
                      char *datarep)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_get_view)(fh, disp, etype, filetype, datarep);
    mp_view *v = f->view;
    *disp = v->disp;
    if (v->user_etype != MPI_DATATYPE_NULL || v->user_filetype != MPI_DATATYPE_NULL) {
        /* The representation changed the layout: give back what set_view was given. */
        MPI_Datatype e = v->user_etype != MPI_DATATYPE_NULL ? v->user_etype : v->etype;
        MPI_Datatype t = v->user_filetype != MPI_DATATYPE_NULL ? v->user_filetype : v->filetype;
        if ((!is_named(e) && PMPI_Type_dup(e, etype) != MPI_SUCCESS) ||
            (!is_named(t) && PMPI_Type_dup(t, filetype) != MPI_SUCCESS))
            return mp_raise(f, MPI_ERR_INTERN);
        if (is_named(e))
            *etype = e;
        if (is_named(t))
            *filetype = t;
        strcpy(datarep, v->datarep);
        return MPI_SUCCESS;
    }
    /* Derived types come back as new duplicates the caller frees; predefined ones as they are. */
    if (is_named(v->etype))
        *etype = v->etype;
    else if (PMPI_Type_dup(v->etype, etype) != MPI_SUCCESS)
        return mp_raise(f, MPI_ERR_INTERN);
    if (is_named(v->filetype))
        *filetype = v->filetype;
    else if (PMPI_Type_dup(v->filetype, filetype) != MPI_SUCCESS)
        return mp_raise(f, MPI_ERR_INTERN);
    strcpy(datarep, v->datarep[0] ? v->datarep : "native");
    return MPI_SUCCESS;
}
int PMPI_File_get_view(MPI_File fh, MPI_Offset *disp, MPI_Datatype *etype, MPI_Datatype *filetype,
                       char *datarep) __attribute__((alias("MPI_File_get_view")));

int MPI_File_get_type_extent(MPI_File fh, MPI_Datatype type, MPI_Aint *extent)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_get_type_extent)(fh, type, extent);
    int rc = mp_datarep_extent(f->view->rep, type, extent);
    return rc == MPI_SUCCESS ? rc : mp_raise(f, mp_error_code(rc, "rfs: bad datatype"));
}
int PMPI_File_get_type_extent(MPI_File fh, MPI_Datatype type, MPI_Aint *extent)
    __attribute__((alias("MPI_File_get_type_extent")));

#if MP_HAVE_FILE_C
int MPI_File_get_type_extent_c(MPI_File fh, MPI_Datatype type, MPI_Count *extent)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_get_type_extent_c)(fh, type, extent);
    MPI_Aint ext = 0;
    int rc = mp_datarep_extent(f->view->rep, type, &ext);
    *extent = ext;
    return rc == MPI_SUCCESS ? rc : mp_raise(f, mp_error_code(rc, "rfs: bad datatype"));
}
int PMPI_File_get_type_extent_c(MPI_File fh, MPI_Datatype type, MPI_Count *extent)
    __attribute__((alias("MPI_File_get_type_extent_c")));
#endif
