/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Blocking independent data access: checks, memory packing, atomic-mode locks, status. */
#include "mpiio/mpiio_internal.h"

#include <stdlib.h>

int mp_check_access(mp_file *f, int is_write, int explicit_offset)
{
    int acc = f->amode & (MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR);
    if (is_write && acc == MPI_MODE_RDONLY)
        return mp_error_code(MPI_ERR_READ_ONLY, "rfs: %s: write to a file opened MPI_MODE_RDONLY",
                             f->name);
    if (!is_write && acc == MPI_MODE_WRONLY)
        return mp_error_code(MPI_ERR_ACCESS, "rfs: %s: read from a file opened MPI_MODE_WRONLY",
                             f->name);
    if (explicit_offset && (f->amode & MPI_MODE_SEQUENTIAL))
        return mp_error_code(MPI_ERR_UNSUPPORTED_OPERATION,
                             "rfs: %s: explicit offsets or individual file pointers on a file "
                             "opened MPI_MODE_SEQUENTIAL",
                             f->name);
    return MPI_SUCCESS;
}

void mp_set_status(MPI_Status *st, int64_t bytes)
{
    if (st == MPI_STATUS_IGNORE)
        return;
    MPI_Status_set_elements_x(st, MPI_BYTE, (MPI_Count)bytes);
    MPI_Status_set_cancelled(st, 0);
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
}

int mp_indep_io(mp_file *f, int is_write, uint64_t pos, mp_buf *b, size_t *done)
{
    *done = 0;
    mp_view *v = mp_view_get(f);
    int rc = MP_NOT_GATHERED;
    if (is_write && !f->atomic)
        rc = mp_gather_write(f, v, pos, b, done);
    if (rc == MP_NOT_GATHERED) {
        int pack = is_write ? mp_buf_pack(b) : MPI_SUCCESS;
        if (pack != MPI_SUCCESS) {
            mp_view_put(f, v);
            return mp_error_code(pack, "rfs: %s: cannot pack the data of this access", f->name);
        }
        uint64_t lo = 0, hi = 0;
        rc = f->atomic ? mp_atomic_lock(f, v, is_write, pos, (uint64_t)b->len, &lo, &hi) : RFS_OK;
        if (rc == RFS_OK) {
            rc = mp_stream_io(f, v, is_write, pos, b->data, (size_t)b->len, done);
            if (f->atomic)
                mp_atomic_unlock(f, lo, hi);
        }
    }
    mp_view_put(f, v);
    return rc == RFS_OK ? MPI_SUCCESS
                        : mp_io_error(f, rc, is_write ? "write" : "read", rfs_last_error());
}

int mp_access(mp_file *f, int is_write, uint64_t pos, void *buf, MPI_Count count, MPI_Datatype type,
              MPI_Status *st, int64_t *got)
{
    mp_buf b;
    *got = 0;
    int rc = is_write ? mp_buf_for_write_lazy(&b, buf, count, type, f->view->rep)
                      : mp_buf_for_read(&b, buf, count, type, f->view->rep);
    if (rc != MPI_SUCCESS)
        return mp_error_code(rc, "rfs: %s: bad count or datatype for this access", f->name);
    size_t done = 0;
    rc = mp_indep_io(f, is_write, pos, &b, &done);
    if (rc != MPI_SUCCESS) {
        mp_buf_free(&b);
        mp_set_status(st, 0);
        return rc;
    }
    if (!is_write)
        rc = mp_buf_finish_read(&b, (int64_t)done);
    mp_buf_free(&b);
    mp_set_status(st, mp_datarep_memory_bytes(b.rep, type, (int64_t)done));
    *got = (int64_t)done;
    return rc;
}
