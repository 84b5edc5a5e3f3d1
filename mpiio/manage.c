/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* File manipulation, info, consistency and handle conversion for rfs files: set_size,
 * preallocate, get_size, get_group, get_amode, set_info, get_info, set/get_atomicity, sync,
 * c2f/f2c. Collective calls agree on errors so every rank reports the same outcome. */
#include "mpiio/mpiio_internal.h"
#include "mpiio/fence.h"
#include "mpiio/ccache.h"
#include "mpiio/wb.h"

#include "cache/cache.h"

static int size_op(mp_file *f, MPI_Offset size, int prealloc)
{
    /* All ranks pass the same size; one rank changes the file. */
    /* Every rank's nonblocking and early-returned writes land before rank 0 changes the
     * size (the Allreduce below orders them). */
    mp_nb_drain(f);
    int code = mp_flush_writes(f);
    MPI_Offset mm[2] = {size, -size}, red[2];
    PMPI_Allreduce(mm, red, 2, MPI_OFFSET, MPI_MAX, f->comm);
    if (code == MPI_SUCCESS && size < 0)
        code = mp_error_code(MPI_ERR_ARG, "rfs: %s: negative size", f->name);
    else if (code == MPI_SUCCESS && red[0] != -red[1])
        code = mp_error_code(MPI_ERR_NOT_SAME, "rfs: %s: ranks passed different sizes", f->name);
    else if (code == MPI_SUCCESS &&
             (f->amode & (MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR)) == MPI_MODE_RDONLY)
        code = mp_error_code(MPI_ERR_READ_ONLY, "rfs: %s: file opened MPI_MODE_RDONLY", f->name);
    else if (code == MPI_SUCCESS && (f->amode & MPI_MODE_SEQUENTIAL))
        code = mp_error_code(MPI_ERR_UNSUPPORTED_OPERATION,
                             "rfs: %s: size change on a MPI_MODE_SEQUENTIAL file", f->name);
    if (code == MPI_SUCCESS && f->rank == 0) {
        rfs_io *io = f->io;
        int rc;
        /* A layer without preallocation at least makes the file that long (never shrinks
         * it): rfs_io_gen_preallocate. */
        rc = prealloc ? io->ops->preallocate(io, (uint64_t)size)
                      : io->ops->set_size(io, (uint64_t)size);
        if (rc != RFS_OK)
            code = mp_io_error(f, rc, prealloc ? "preallocate" : "set_size", rfs_last_error());
    }
    /* Noted before the agreement, which every rank enters after noting: once any rank is
     * past it, every rank's published size has moved on (fence.c, local_size). */
    if (code == MPI_SUCCESS)
        mp_fence_size_changed(f, (uint64_t)size, !prealloc, 1);
    code = mp_agree_error(f, f->comm, code);
    if (code != MPI_SUCCESS)
        mp_fence_size_changed(f, (uint64_t)size, !prealloc, 0);
    return mp_raise(f, code);
}

int MPI_File_set_size(MPI_File fh, MPI_Offset size)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_set_size)(fh, size);
    MP_TRACE_BEGIN("MPI_File_set_size");
    int rc = size_op(f, size, 0);
    MP_TRACE_END("MPI_File_set_size");
    return rc;
}
MP_ALIAS(MPI_File_set_size, (MPI_File fh, MPI_Offset size))

int MPI_File_preallocate(MPI_File fh, MPI_Offset size)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_preallocate)(fh, size);
    MP_TRACE_BEGIN("MPI_File_preallocate");
    int rc = size_op(f, size, 1);
    MP_TRACE_END("MPI_File_preallocate");
    return rc;
}
MP_ALIAS(MPI_File_preallocate, (MPI_File fh, MPI_Offset size))

/* get_size right after open: HDF5 asks for the size as its first call on a file it opened,
 * one round trip per file on a WAN. When writes return early (the write window, ABT) the
 * OPEN reply's size answers that first call: the MPI standard counts get_size as a read of
 * the whole file, which sees other ranks' writes only after sync-barrier-sync (and rfs after
 * their MPI_Barrier too, which clears it); a program that orders ranks by messages alone is
 * already told to turn early writes off (docs/mpiio.md). Any other call on the file clears
 * it (mp_file_of). */
static int size_right_after_open(mp_file *f, uint64_t *s)
{
    if (!__atomic_exchange_n(&f->size_at_open_valid, 0, __ATOMIC_RELAXED))
        return 0;
    *s = f->size_at_open;
    return 1;
}

int MPI_File_get_size(MPI_File fh, MPI_Offset *size)
{
    mp_file *f = mp_file_peek(fh);
    if (!f)
        return MP_REAL(PMPI_File_get_size)(fh, size);
    uint64_t s = 0;
    MP_TRACE_BEGIN("MPI_File_get_size");
    int rc = size_right_after_open(f, &s) ? RFS_OK : f->io->ops->get_size(f->io, &s);
    MP_TRACE_END("MPI_File_get_size");
    if (rc != RFS_OK)
        return mp_raise(f, mp_io_error(f, rc, "get_size", rfs_last_error()));
    *size = (MPI_Offset)s;
    return MPI_SUCCESS;
}
MP_ALIAS(MPI_File_get_size, (MPI_File fh, MPI_Offset *size))

int MPI_File_get_group(MPI_File fh, MPI_Group *group)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_get_group)(fh, group);
    return mp_raise(f, PMPI_Comm_group(f->comm, group));
}
MP_ALIAS(MPI_File_get_group, (MPI_File fh, MPI_Group *group))

int MPI_File_get_amode(MPI_File fh, int *amode)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_get_amode)(fh, amode);
    *amode = f->amode;
    return MPI_SUCCESS;
}
MP_ALIAS(MPI_File_get_amode, (MPI_File fh, int *amode))

int MPI_File_set_info(MPI_File fh, MPI_Info info)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_set_info)(fh, info);
    int nodes = f->hints.cb_nodes;
    mp_hints_apply_info(&f->hints, info);
    if (f->hints.cb_nodes <= 0 || f->hints.cb_nodes > f->size)
        f->hints.cb_nodes = nodes;
    return MPI_SUCCESS;
}
MP_ALIAS(MPI_File_set_info, (MPI_File fh, MPI_Info info))

int MPI_File_get_info(MPI_File fh, MPI_Info *info)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_get_info)(fh, info);
    return mp_raise(f, mp_hints_to_info(&f->hints, info));
}
MP_ALIAS(MPI_File_get_info, (MPI_File fh, MPI_Info *info))

int MPI_File_set_atomicity(MPI_File fh, int flag)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_set_atomicity)(fh, flag);
    flag = flag != 0;
    int mm[2] = {flag, -flag}, red[2], code = MPI_SUCCESS;
    PMPI_Allreduce(mm, red, 2, MPI_INT, MPI_MAX, f->comm);
    if (red[0] != -red[1])
        code = mp_error_code(MPI_ERR_NOT_SAME, "rfs: %s: ranks passed different atomicity flags",
                             f->name);
    else if (flag && !(f->io->features & RFS_IO_F_LOCKS))
        code = mp_error_code(MPI_ERR_UNSUPPORTED_OPERATION,
                             "rfs: %s: atomic mode needs byte-range "
                             "locks, which this I/O layer does not provide",
                             f->name);
    mp_nb_drain(f);
    /* Before the agreement: every rank's buffered bytes are on the server once it is over. */
    if (code == MPI_SUCCESS) {
        mp_wb_atomic(f, flag);
        mp_cc_atomic(f, flag);
    }
    code = mp_agree_error(f, f->comm, code);
    if (code == MPI_SUCCESS)
        f->atomic = flag;
    /* Atomic mode: every access must see the server's bytes of that moment (under its lock),
     * so the read cache steps aside (docs/hints.md). */
    if (code == MPI_SUCCESS && f->cache)
        rfs_cache_set_enabled(f->cache, !flag);
    return mp_raise(f, code);
}
MP_ALIAS(MPI_File_set_atomicity, (MPI_File fh, int flag))

int MPI_File_get_atomicity(MPI_File fh, int *flag)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_get_atomicity)(fh, flag);
    *flag = f->atomic;
    return MPI_SUCCESS;
}
MP_ALIAS(MPI_File_get_atomicity, (MPI_File fh, int *flag))

int MPI_File_sync(MPI_File fh)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_sync)(fh);
    MP_TRACE_BEGIN("MPI_File_sync");
    /* Readers sync too (sync-barrier-sync): layers below drop what they cached. */
    int code = MPI_SUCCESS;
    mp_nb_drain(f);
    if (code == MPI_SUCCESS) {
        int rc = f->io->ops->sync(f->io);
        if (rc != RFS_OK)
            code = mp_io_error(f, rc, "sync", rfs_last_error());
    }
    /* Collective: after it, every rank's data is on the server's disk. */
    code = mp_raise(f, mp_agree_error(f, f->comm, code));
    MP_TRACE_END("MPI_File_sync");
    return code;
}
MP_ALIAS(MPI_File_sync, (MPI_File fh))

MPI_Fint MPI_File_c2f(MPI_File fh)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_c2f)(fh);
    return mp_fortran_index(f);
}
MPI_Fint PMPI_File_c2f(MPI_File fh) __attribute__((alias("MPI_File_c2f")));

MPI_File MPI_File_f2c(MPI_Fint i)
{
    if (!mp_is_fortran_index(i))
        return MP_REAL(PMPI_File_f2c)(i);
    mp_file *f = mp_file_of_fortran(i);
    return f ? (MPI_File)f : MPI_FILE_NULL;
}
MPI_File PMPI_File_f2c(MPI_Fint i) __attribute__((alias("MPI_File_f2c")));
