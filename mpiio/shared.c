/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Shared file pointer: a counter kept by the server (rfs_io counter op: atomic fetch-and-add),
 * in etype units of the current view. Each collective open picks a fresh random key, so two
 * independent opens of the same file do not share a pointer. Ordered mode: an exclusive scan of
 * the sizes gives each rank its place, one counter update claims the whole block.
 *
 * Round trips: the pointer is `shared_base + counter(shared_key)`, and a key the server has
 * never seen reads 0. So MPI_MODE_APPEND starts the pointer at the end of file with no request
 * (base = size), and set_view puts it back to 0 with no request either: if no rank moved it
 * since it was last 0 nothing is to be done, else every rank switches to the next fresh key
 * (key0 + 2, key0 + 4, ...; all odd, never 0, distinct within one open). The server keeps a
 * counter per key used while the file is open anywhere, so after MP_SHARED_MAX_KEYS fresh keys
 * rank 0 resets the current counter instead (one round trip, as before). */
#include "mpiio/mpiio_internal.h"

#define MP_SHARED_MAX_KEYS 32

static int counter_op(mp_file *f, int set, int64_t delta, int64_t *old)
{
    if (!(f->io->features & RFS_IO_F_COUNTERS))
        return mp_error_code(MPI_ERR_UNSUPPORTED_OPERATION,
                             "rfs: %s: the shared file pointer needs the counter operation, "
                             "which this I/O layer does not provide",
                             f->name);
    /* A failed request may still have reached the server: count the pointer as moved. */
    if (set || delta != 0)
        f->shared_dirty = 1;
    int64_t dummy;
    int rc = f->io->ops->counter(f->io, f->shared_key, set, delta, old ? old : &dummy);
    if (rc != RFS_OK)
        return mp_io_error(f, rc, "shared file pointer", rfs_last_error());
    return MPI_SUCCESS;
}

int mp_shared_fetch_add(mp_file *f, int64_t delta, int64_t *old)
{
    int64_t c = 0;
    int rc = counter_op(f, 0, delta, &c);
    /* unsigned arithmetic, as the server's counter: wrap-around is defined */
    *old = (int64_t)((uint64_t)f->shared_base + (uint64_t)c);
    return rc;
}

int mp_shared_set(mp_file *f, int64_t value)
{
    return counter_op(f, 1, (int64_t)((uint64_t)value - (uint64_t)f->shared_base), NULL);
}

void mp_shared_init(mp_file *f, uint32_t key, int64_t start)
{
    f->shared_key0 = key | 1u; /* never 0, which other tools might use */
    f->shared_key = f->shared_key0;
    f->shared_keys_used = 0;
    f->shared_base = start;
    f->shared_dirty = 0;
}

int mp_shared_reset(mp_file *f)
{
    /* Every rank's shared-pointer accesses before this collective call have completed
     * (blocking ones returned, nonblocking ones were drained), so "nobody moved it" is exact. */
    int moved = f->shared_dirty || f->shared_base != 0, any = 0;
    PMPI_Allreduce(&moved, &any, 1, MPI_INT, MPI_LOR, f->comm);
    f->shared_base = 0;
    if (!any)
        return MPI_SUCCESS; /* the counter still reads 0 */
    f->shared_dirty = 0;
    if (f->shared_keys_used < MP_SHARED_MAX_KEYS) {
        f->shared_keys_used++;
        f->shared_key = f->shared_key0 + 2u * (uint32_t)f->shared_keys_used;
        return MPI_SUCCESS;
    }
    int code = MPI_SUCCESS;
    if (f->rank == 0 && (code = counter_op(f, 1, 0, NULL)) == MPI_SUCCESS)
        f->shared_dirty = 0; /* on failure it stays moved: the next set_view tries again */
    /* Collective outcome; it also orders the reset before any rank's next shared access. */
    return mp_agree_error(f, f->comm, code);
}

static int shared_io(mp_file *f, int is_write, void *buf, MPI_Count count, MPI_Datatype type,
                     MPI_Status *st)
{
    int rc = mp_check_access(f, is_write, 0);
    int64_t bytes = 0;
    if (rc == MPI_SUCCESS && mp_type_bytes(f->view->rep, type, count, &bytes) != MPI_SUCCESS)
        rc = mp_error_code(MPI_ERR_TYPE, "rfs: %s: bad count or datatype", f->name);
    if (rc != MPI_SUCCESS)
        return mp_raise(f, rc);
    int64_t es = f->view->etype_size, start = 0, got;
    rc = mp_shared_fetch_add(f, bytes / es, &start);
    if (rc == MPI_SUCCESS)
        rc = mp_access(f, is_write, (uint64_t)start * (uint64_t)es, buf, count, type, st, &got);
    return mp_raise(f, rc);
}

/* Ordered access: positions from an exclusive scan; then a collective access. */
static int ordered_io(mp_file *f, int is_write, void *buf, MPI_Count count, MPI_Datatype type,
                      MPI_Status *st)
{
    int rc = mp_check_access(f, is_write, 0);
    int64_t bytes = 0;
    if (rc == MPI_SUCCESS && mp_type_bytes(f->view->rep, type, count, &bytes) != MPI_SUCCESS)
        rc = mp_error_code(MPI_ERR_TYPE, "rfs: %s: bad count or datatype", f->name);
    int64_t es = f->view->etype_size, mine = bytes / es, before = 0, total = 0, base = 0;
    PMPI_Exscan(&mine, &before, 1, MPI_INT64_T, MPI_SUM, f->comm);
    if (f->rank == 0)
        before = 0; /* Exscan leaves rank 0's result undefined */
    PMPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, f->comm);
    if (f->rank == 0 && rc == MPI_SUCCESS)
        rc = mp_shared_fetch_add(f, total, &base);
    int64_t msg[2] = {base, rc};
    PMPI_Bcast(msg, 2, MPI_INT64_T, 0, f->comm);
    if (rc == MPI_SUCCESS && msg[1] != MPI_SUCCESS)
        rc = (int)msg[1];
    /* Every rank takes part in the collective access, even after an error, so none hangs. */
    int64_t got;
    int crc = mp_coll_access(f, is_write, (uint64_t)(msg[0] + before) * (uint64_t)es, buf,
                             rc == MPI_SUCCESS ? count : 0, type, st, &got);
    return mp_raise(f, rc != MPI_SUCCESS ? rc : crc);
}

MP_PTR_ENTRY(MPI_File_read_shared, shared_io, 0, int, MP_NOCONST)
MP_PTR_ENTRY(MPI_File_write_shared, shared_io, 1, int, const)
MP_PTR_ENTRY(MPI_File_read_ordered, ordered_io, 0, int, MP_NOCONST)
MP_PTR_ENTRY(MPI_File_write_ordered, ordered_io, 1, int, const)
#if MP_HAVE_FILE_C
MP_PTR_ENTRY(MPI_File_read_shared_c, shared_io, 0, MPI_Count, MP_NOCONST)
MP_PTR_ENTRY(MPI_File_write_shared_c, shared_io, 1, MPI_Count, const)
MP_PTR_ENTRY(MPI_File_read_ordered_c, ordered_io, 0, MPI_Count, MP_NOCONST)
MP_PTR_ENTRY(MPI_File_write_ordered_c, ordered_io, 1, MPI_Count, const)
#endif

/* Split ordered collectives: _begin does the whole operation, _end hands back its status. */
static int split_begin(mp_file *f, int is_write, void *buf, MPI_Count count, MPI_Datatype type)
{
    if (f->split_active)
        return mp_raise(f, mp_error_code(MPI_ERR_OTHER,
                                         "rfs: %s: a split collective is already "
                                         "active on this file",
                                         f->name));
    f->split_active = 1;
    f->split_err = ordered_io(f, is_write, buf, count, type, &f->split_status);
    return f->split_err;
}

#define SPLIT_BEGIN(name, rw, cnt_t, cbuf)                                \
    int name(MPI_File fh, cbuf void *buf, cnt_t count, MPI_Datatype type) \
    {                                                                     \
        mp_file *f = mp_file_of(fh);                                      \
        if (!f)                                                           \
            return MP_REAL(P##name)(fh, buf, count, type);                \
        return split_begin(f, rw, (void *)buf, (MPI_Count)count, type);   \
    }                                                                     \
    MP_ALIAS(name, (MPI_File fh, cbuf void *buf, cnt_t count, MPI_Datatype type))

SPLIT_BEGIN(MPI_File_read_ordered_begin, 0, int, MP_NOCONST)
SPLIT_BEGIN(MPI_File_write_ordered_begin, 1, int, const)
MP_SPLIT_END(MPI_File_read_ordered_end, MP_NOCONST)
MP_SPLIT_END(MPI_File_write_ordered_end, const)
#if MP_HAVE_FILE_C
SPLIT_BEGIN(MPI_File_read_ordered_begin_c, 0, MPI_Count, MP_NOCONST)
SPLIT_BEGIN(MPI_File_write_ordered_begin_c, 1, MPI_Count, const)
#endif

/* The view's end of file in etypes (rounded up), as seek END on the individual pointer. */
static int eof_etypes(mp_file *f, int64_t *out)
{
    uint64_t size = 0;
    int rc = f->io->ops->get_size(f->io, &size);
    if (rc != RFS_OK)
        return mp_io_error(f, rc, "get_size", rfs_last_error());
    int64_t es = f->view->etype_size;
    *out = (mp_view_eof_pos(f->view, (int64_t)size) + es - 1) / es;
    return MPI_SUCCESS;
}

int MPI_File_seek_shared(MPI_File fh, MPI_Offset off, int whence)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_seek_shared)(fh, off, whence);
    int rc = MPI_SUCCESS;
    /* Every rank's earlier shared-pointer accesses happen before the move. */
    PMPI_Barrier(f->comm);
    if (f->rank == 0) {
        int64_t np = 0, cur = 0;
        if (whence == MPI_SEEK_SET) {
            np = off;
        } else if (whence == MPI_SEEK_CUR) {
            rc = mp_shared_fetch_add(f, 0, &cur);
            np = cur + off;
        } else if (whence == MPI_SEEK_END) {
            rc = eof_etypes(f, &cur);
            np = cur + off;
        } else {
            rc = mp_error_code(MPI_ERR_ARG, "rfs: %s: bad whence %d", f->name, whence);
        }
        if (rc == MPI_SUCCESS && np < 0)
            rc = mp_error_code(MPI_ERR_ARG, "rfs: %s: seek to a negative offset", f->name);
        if (rc == MPI_SUCCESS)
            rc = mp_shared_set(f, np);
    }
    /* Collective: everyone learns the outcome, and nobody moves the pointer before it is set. */
    rc = mp_agree_error(f, f->comm, rc);
    return mp_raise(f, rc);
}
MP_ALIAS(MPI_File_seek_shared, (MPI_File fh, MPI_Offset off, int whence))

int MPI_File_get_position_shared(MPI_File fh, MPI_Offset *off)
{
    mp_file *f = mp_file_of(fh);
    if (!f)
        return MP_REAL(PMPI_File_get_position_shared)(fh, off);
    int64_t cur = 0;
    int rc = mp_shared_fetch_add(f, 0, &cur);
    *off = cur;
    return mp_raise(f, rc);
}
MP_ALIAS(MPI_File_get_position_shared, (MPI_File fh, MPI_Offset *off))
