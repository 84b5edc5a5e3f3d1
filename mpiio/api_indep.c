/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* MPI_File_* entry points for independent access: explicit offsets and the individual file
 * pointer (read/write/seek/get_position/get_byte_offset), with their PMPI_ aliases and, where
 * mpi.h declares them, the MPI-4 large-count (_c) variants. */
#include "mpiio/mpiio_internal.h"

#include <limits.h>

static int at_io(mp_file *f, int is_write, MPI_Offset off, void *buf, MPI_Count count,
                 MPI_Datatype type, MPI_Status *st)
{
    int rc = mp_check_access(f, is_write, 1);
    if (rc == MPI_SUCCESS && off < 0)
        rc = mp_error_code(MPI_ERR_ARG, "rfs: %s: negative offset", f->name);
    if (rc != MPI_SUCCESS)
        return mp_raise(f, rc);
    int64_t got;
    rc = mp_access(f, is_write, (uint64_t)off * (uint64_t)f->view->etype_size, buf, count, type, st,
                   &got);
    return mp_raise(f, rc);
}

static int ptr_io(mp_file *f, int is_write, void *buf, MPI_Count count, MPI_Datatype type,
                  MPI_Status *st)
{
    int rc = mp_check_access(f, is_write, 1);
    if (rc != MPI_SUCCESS)
        return mp_raise(f, rc);
    int64_t got = 0, es = f->view->etype_size;
    rc = mp_access(f, is_write, (uint64_t)f->ind_ptr * (uint64_t)es, buf, count, type, st, &got);
    f->ind_ptr += got / es;
    return mp_raise(f, rc);
}

#define AT_FN(name, rw, cnt_t, cbuf) MP_AT_ENTRY(name, at_io, rw, cnt_t, cbuf)
#define PTR_FN(name, rw, cnt_t, cbuf) MP_PTR_ENTRY(name, ptr_io, rw, cnt_t, cbuf)

AT_FN(MPI_File_read_at, 0, int, MP_NOCONST)
AT_FN(MPI_File_write_at, 1, int, const)
PTR_FN(MPI_File_read, 0, int, MP_NOCONST)
PTR_FN(MPI_File_write, 1, int, const)
#if MP_HAVE_FILE_C
AT_FN(MPI_File_read_at_c, 0, MPI_Count, MP_NOCONST)
AT_FN(MPI_File_write_at_c, 1, MPI_Count, const)
PTR_FN(MPI_File_read_c, 0, MPI_Count, MP_NOCONST)
PTR_FN(MPI_File_write_c, 1, MPI_Count, const)
#endif

int MPI_File_seek(MPI_File fh, MPI_Offset off, int whence)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_seek)(fh, off, whence);
    if (f->amode & MPI_MODE_SEQUENTIAL)
        return mp_raise(f, mp_error_code(MPI_ERR_UNSUPPORTED_OPERATION,
                                         "rfs: %s: seek on a MPI_MODE_SEQUENTIAL file", f->name));
    int64_t es = f->view->etype_size, np;
    if (whence == MPI_SEEK_SET) {
        np = off;
    } else if (whence == MPI_SEEK_CUR) {
        np = f->ind_ptr + off;
    } else if (whence == MPI_SEEK_END) {
        uint64_t size = 0;
        int rc = f->io->ops->get_size(f->io, &size);
        if (rc != RFS_OK)
            return mp_raise(f, mp_io_error(f, rc, "get_size", rfs_last_error()));
        np = (mp_view_eof_pos(f->view, (int64_t)size) + es - 1) / es + off;
    } else {
        return mp_raise(f, mp_error_code(MPI_ERR_ARG, "rfs: %s: bad whence %d", f->name, whence));
    }
    if (np < 0)
        return mp_raise(f,
                        mp_error_code(MPI_ERR_ARG, "rfs: %s: seek to a negative offset", f->name));
    f->ind_ptr = np;
    return MPI_SUCCESS;
}
MP_ALIAS(MPI_File_seek, (MPI_File fh, MPI_Offset off, int whence))

int MPI_File_get_position(MPI_File fh, MPI_Offset *off)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_get_position)(fh, off);
    *off = f->ind_ptr;
    return MPI_SUCCESS;
}
MP_ALIAS(MPI_File_get_position, (MPI_File fh, MPI_Offset *off))

typedef struct first_run {
    uint64_t off;
    int any;
} first_run;

static int take_first(void *ctx, uint64_t off, uint64_t len)
{
    first_run *r = ctx;
    r->off = off;
    r->any = 1;
    return 1;
}

int MPI_File_get_byte_offset(MPI_File fh, MPI_Offset off, MPI_Offset *disp)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_get_byte_offset)(fh, off, disp);
    if (off < 0)
        return mp_raise(f, mp_error_code(MPI_ERR_ARG, "rfs: %s: negative offset", f->name));
    mp_view *v = f->view;
    uint64_t pos = (uint64_t)off * (uint64_t)v->etype_size;
    if (v->contig) {
        *disp = v->disp + (MPI_Offset)pos;
        return MPI_SUCCESS;
    }
    first_run r = {0};
    rfs_flat_map(v->flat, (uint64_t)v->disp, pos, 1, take_first, &r);
    *disp = (MPI_Offset)r.off;
    return MPI_SUCCESS;
}
MP_ALIAS(MPI_File_get_byte_offset, (MPI_File fh, MPI_Offset off, MPI_Offset *disp))
