/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Stacking the logical file's optional modes (manifest/modes.h) over an open logical file. */
#include "manifest/modes.h"

#include "common/err.h"

int mf_stack_modes(const rfs_manifest_params *p, rfs_io **io)
{
    if (!p || (!p->buffered && !p->sieve))
        return RFS_OK;
    size_t cap = p->buffer_size ? (size_t)p->buffer_size : RFS_MANIFEST_DEFAULT_BUFFER;
    rfs_io *top = *io, *up = NULL;
    int rc = RFS_OK;
    if (p->buffered && (rc = mf_buffered_wrap(top, cap, &up)) == RFS_OK)
        top = up;
    if (rc == RFS_OK && p->sieve && (rc = mf_sieve_wrap(top, cap, &up)) == RFS_OK)
        top = up;
    if (rc != RFS_OK) {
        rfs_status st;
        rfs_status_save(&st, rc);
        top->ops->close(top);
        *io = NULL;
        return rfs_status_raise(&st);
    }
    *io = top;
    return RFS_OK;
}
