/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* MPI_File_* entry points of collective access: read_all/write_all (individual pointer),
 * read_at_all/write_at_all, and their split forms (_begin does the whole operation, _end
 * returns its status), plus PMPI_ aliases and large-count variants where declared. */
#include "mpiio/mpiio_internal.h"

static int at_all(mp_file *f, int is_write, MPI_Offset off, void *buf, MPI_Count count,
                  MPI_Datatype type, MPI_Status *st)
{
    int code = MPI_SUCCESS;
    if (f->amode & MPI_MODE_SEQUENTIAL)
        code = mp_check_access(f, is_write, 1);
    else if (off < 0)
        code = mp_error_code(MPI_ERR_ARG, "rfs: %s: negative offset", f->name);
    int64_t got;
    /* A rank with a bad argument still takes part (with no data) so the others do not hang. */
    int crc = mp_coll_access(f, is_write, code ? 0 : (uint64_t)off * (uint64_t)f->view->etype_size,
                             buf, code ? 0 : count, type, st, &got);
    return mp_raise(f, code ? code : crc);
}

static int ptr_all(mp_file *f, int is_write, void *buf, MPI_Count count, MPI_Datatype type,
                   MPI_Status *st)
{
    int code = (f->amode & MPI_MODE_SEQUENTIAL) ? mp_check_access(f, is_write, 1) : MPI_SUCCESS;
    int64_t got = 0, es = f->view->etype_size;
    int crc = mp_coll_access(f, is_write, (uint64_t)f->ind_ptr * (uint64_t)es, buf,
                             code ? 0 : count, type, st, &got);
    f->ind_ptr += got / es;
    return mp_raise(f, code ? code : crc);
}

#define AT_ALL(name, rw, cnt_t, cbuf) MP_AT_ENTRY(name, at_all, rw, cnt_t, cbuf)
#define PTR_ALL(name, rw, cnt_t, cbuf) MP_PTR_ENTRY(name, ptr_all, rw, cnt_t, cbuf)

AT_ALL(MPI_File_read_at_all, 0, int, MP_NOCONST)
AT_ALL(MPI_File_write_at_all, 1, int, const)
PTR_ALL(MPI_File_read_all, 0, int, MP_NOCONST)
PTR_ALL(MPI_File_write_all, 1, int, const)
#if MP_HAVE_FILE_C
AT_ALL(MPI_File_read_at_all_c, 0, MPI_Count, MP_NOCONST)
AT_ALL(MPI_File_write_at_all_c, 1, MPI_Count, const)
PTR_ALL(MPI_File_read_all_c, 0, MPI_Count, MP_NOCONST)
PTR_ALL(MPI_File_write_all_c, 1, MPI_Count, const)
#endif

/* ---- split collectives ---- */
static int begin_check(mp_file *f)
{
    if (!f->split_active)
        return MPI_SUCCESS;
    return mp_error_code(MPI_ERR_OTHER,
                         "rfs: %s: a split collective is already active on this "
                         "file",
                         f->name);
}

#define AT_BEGIN(name, rw, cnt_t, cbuf)                                                           \
    int name(MPI_File fh, MPI_Offset off, cbuf void *buf, cnt_t count, MPI_Datatype type)         \
    {                                                                                             \
        mp_file *f = mp_file_of(fh);                                                              \
        if (!f)                                                                                   \
            return MP_REAL(P##name)(fh, off, buf, count, type);                                   \
        int c = begin_check(f);                                                                   \
        if (c)                                                                                    \
            return mp_raise(f, c);                                                                \
        f->split_active = 1;                                                                      \
        f->split_err = at_all(f, rw, off, (void *)buf, (MPI_Count)count, type, &f->split_status); \
        return f->split_err;                                                                      \
    }                                                                                             \
    MP_ALIAS(name, (MPI_File fh, MPI_Offset off, cbuf void *buf, cnt_t count, MPI_Datatype type))

#define PTR_BEGIN(name, rw, cnt_t, cbuf)                                                      \
    int name(MPI_File fh, cbuf void *buf, cnt_t count, MPI_Datatype type)                     \
    {                                                                                         \
        mp_file *f = mp_file_of(fh);                                                          \
        if (!f)                                                                               \
            return MP_REAL(P##name)(fh, buf, count, type);                                    \
        int c = begin_check(f);                                                               \
        if (c)                                                                                \
            return mp_raise(f, c);                                                            \
        f->split_active = 1;                                                                  \
        f->split_err = ptr_all(f, rw, (void *)buf, (MPI_Count)count, type, &f->split_status); \
        return f->split_err;                                                                  \
    }                                                                                         \
    MP_ALIAS(name, (MPI_File fh, cbuf void *buf, cnt_t count, MPI_Datatype type))

AT_BEGIN(MPI_File_read_at_all_begin, 0, int, MP_NOCONST)
AT_BEGIN(MPI_File_write_at_all_begin, 1, int, const)
PTR_BEGIN(MPI_File_read_all_begin, 0, int, MP_NOCONST)
PTR_BEGIN(MPI_File_write_all_begin, 1, int, const)
MP_SPLIT_END(MPI_File_read_at_all_end, MP_NOCONST)
MP_SPLIT_END(MPI_File_write_at_all_end, const)
MP_SPLIT_END(MPI_File_read_all_end, MP_NOCONST)
MP_SPLIT_END(MPI_File_write_all_end, const)
#if MP_HAVE_FILE_C
AT_BEGIN(MPI_File_read_at_all_begin_c, 0, MPI_Count, MP_NOCONST)
AT_BEGIN(MPI_File_write_at_all_begin_c, 1, MPI_Count, const)
PTR_BEGIN(MPI_File_read_all_begin_c, 0, MPI_Count, MP_NOCONST)
PTR_BEGIN(MPI_File_write_all_begin_c, 1, MPI_Count, const)
#endif
