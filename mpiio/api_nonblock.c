/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* MPI_File_i* entry points. Independent ones run in the I/O threads (nonblock.c); the file
 * pointers move when the call is made, as MPI specifies. Collective ones (iread_all...) do the
 * collective part now and return an already completed request. */
#include "mpiio/mpiio_internal.h"

static int i_at(mp_file *f, int is_write, MPI_Offset off, void *buf, MPI_Count count,
                MPI_Datatype type, MPI_Request *req)
{
    int rc = mp_check_access(f, is_write, 1);
    if (rc == MPI_SUCCESS && off < 0)
        rc = mp_error_code(MPI_ERR_ARG, "rfs: %s: negative offset", f->name);
    if (rc == MPI_SUCCESS)
        rc = mp_nb_start(f, is_write, (uint64_t)off * (uint64_t)f->view->etype_size, buf, count,
                         type, req);
    return mp_raise(f, rc);
}

static int i_ptr(mp_file *f, int is_write, void *buf, MPI_Count count, MPI_Datatype type,
                 MPI_Request *req)
{
    int rc = mp_check_access(f, is_write, 1);
    int64_t bytes = 0, es = f->view->etype_size;
    if (rc == MPI_SUCCESS && mp_type_bytes(f->view->rep, type, count, &bytes) != MPI_SUCCESS)
        rc = mp_error_code(MPI_ERR_TYPE, "rfs: %s: bad count or datatype", f->name);
    if (rc == MPI_SUCCESS) {
        rc = mp_nb_start(f, is_write, (uint64_t)f->ind_ptr * (uint64_t)es, buf, count, type, req);
        if (rc == MPI_SUCCESS)
            f->ind_ptr += bytes / es;
    }
    return mp_raise(f, rc);
}

static int i_shared(mp_file *f, int is_write, void *buf, MPI_Count count, MPI_Datatype type,
                    MPI_Request *req)
{
    int rc = mp_check_access(f, is_write, 0);
    int64_t bytes = 0, es = f->view->etype_size, start = 0;
    if (rc == MPI_SUCCESS && mp_type_bytes(f->view->rep, type, count, &bytes) != MPI_SUCCESS)
        rc = mp_error_code(MPI_ERR_TYPE, "rfs: %s: bad count or datatype", f->name);
    if (rc == MPI_SUCCESS)
        rc = mp_shared_fetch_add(f, bytes / es, &start);
    if (rc == MPI_SUCCESS)
        rc = mp_nb_start(f, is_write, (uint64_t)start * (uint64_t)es, buf, count, type, req);
    return mp_raise(f, rc);
}

static int i_at_all(mp_file *f, int is_write, MPI_Offset off, void *buf, MPI_Count count,
                    MPI_Datatype type, MPI_Request *req)
{
    int code = (f->amode & MPI_MODE_SEQUENTIAL) ? mp_check_access(f, is_write, 1) : MPI_SUCCESS;
    if (code == MPI_SUCCESS && off < 0)
        code = mp_error_code(MPI_ERR_ARG, "rfs: %s: negative offset", f->name);
    int64_t got = 0;
    int crc = mp_coll_access(f, is_write, code ? 0 : (uint64_t)off * (uint64_t)f->view->etype_size,
                             buf, code ? 0 : count, type, MPI_STATUS_IGNORE, &got);
    return mp_raise(f, mp_nb_completed(f, code ? code : crc,
                                       mp_datarep_memory_bytes(f->view->rep, type, got), req));
}

static int i_ptr_all(mp_file *f, int is_write, void *buf, MPI_Count count, MPI_Datatype type,
                     MPI_Request *req)
{
    int code = (f->amode & MPI_MODE_SEQUENTIAL) ? mp_check_access(f, is_write, 1) : MPI_SUCCESS;
    int64_t got = 0, es = f->view->etype_size;
    int crc = mp_coll_access(f, is_write, (uint64_t)f->ind_ptr * (uint64_t)es, buf,
                             code ? 0 : count, type, MPI_STATUS_IGNORE, &got);
    f->ind_ptr += got / es;
    return mp_raise(f, mp_nb_completed(f, code ? code : crc,
                                       mp_datarep_memory_bytes(f->view->rep, type, got), req));
}

#define I_AT(name, fn, rw, cnt_t, cbuf)                                                          \
    int name(MPI_File fh, MPI_Offset off, cbuf void *buf, cnt_t count, MPI_Datatype type,        \
             MPI_Request *req)                                                                   \
    {                                                                                            \
        mp_file *f = mp_file_of(fh);                                                             \
        if (!f)                                                                                  \
            return MP_REAL(P##name)(fh, off, buf, count, type, req);                             \
        return fn(f, rw, off, (void *)buf, (MPI_Count)count, type, req);                         \
    }                                                                                            \
    MP_ALIAS(name, (MPI_File fh, MPI_Offset off, cbuf void *buf, cnt_t count, MPI_Datatype type, \
                    MPI_Request *req))

#define I_PTR(name, fn, rw, cnt_t, cbuf)                                                    \
    int name(MPI_File fh, cbuf void *buf, cnt_t count, MPI_Datatype type, MPI_Request *req) \
    {                                                                                       \
        mp_file *f = mp_file_of(fh);                                                        \
        if (!f)                                                                             \
            return MP_REAL(P##name)(fh, buf, count, type, req);                             \
        return fn(f, rw, (void *)buf, (MPI_Count)count, type, req);                         \
    }                                                                                       \
    MP_ALIAS(name, (MPI_File fh, cbuf void *buf, cnt_t count, MPI_Datatype type, MPI_Request *req))

I_AT(MPI_File_iread_at, i_at, 0, int, MP_NOCONST)
I_AT(MPI_File_iwrite_at, i_at, 1, int, const)
I_AT(MPI_File_iread_at_all, i_at_all, 0, int, MP_NOCONST)
I_AT(MPI_File_iwrite_at_all, i_at_all, 1, int, const)
I_PTR(MPI_File_iread, i_ptr, 0, int, MP_NOCONST)
I_PTR(MPI_File_iwrite, i_ptr, 1, int, const)
I_PTR(MPI_File_iread_all, i_ptr_all, 0, int, MP_NOCONST)
I_PTR(MPI_File_iwrite_all, i_ptr_all, 1, int, const)
I_PTR(MPI_File_iread_shared, i_shared, 0, int, MP_NOCONST)
I_PTR(MPI_File_iwrite_shared, i_shared, 1, int, const)
#if MP_HAVE_FILE_C
I_AT(MPI_File_iread_at_c, i_at, 0, MPI_Count, MP_NOCONST)
I_AT(MPI_File_iwrite_at_c, i_at, 1, MPI_Count, const)
I_AT(MPI_File_iread_at_all_c, i_at_all, 0, MPI_Count, MP_NOCONST)
I_AT(MPI_File_iwrite_at_all_c, i_at_all, 1, MPI_Count, const)
I_PTR(MPI_File_iread_c, i_ptr, 0, MPI_Count, MP_NOCONST)
I_PTR(MPI_File_iwrite_c, i_ptr, 1, MPI_Count, const)
I_PTR(MPI_File_iread_all_c, i_ptr_all, 0, MPI_Count, MP_NOCONST)
I_PTR(MPI_File_iwrite_all_c, i_ptr_all, 1, MPI_Count, const)
I_PTR(MPI_File_iread_shared_c, i_shared, 0, MPI_Count, MP_NOCONST)
I_PTR(MPI_File_iwrite_shared_c, i_shared, 1, MPI_Count, const)
#endif

/* Data representations other than "native" are not supported: registering one is allowed (the
 * MPI library keeps it), but set_view on an rfs file refuses it. Nothing to intercept. */
