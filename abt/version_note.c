/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Replay safety: the version of a file the layer below reported after ABT's writes, noted in
 * the journal's table without a round trip (abt/journal.h). */

#include "abt/engine_parts.h"

static int read_below_version(void *ctx, rfs_journal_version *v)
{
    rfs_io *b = ctx;
    rfs_io_version iv;
    int rc = b->ops->version(b, &iv);
    v->size = iv.size;
    v->mtime_ns = iv.mtime_ns;
    return rc;
}

int rfs_abt_note_version(abt_file *f)
{
    if (atomic_load(&f->versions) < 0)
        return 0;
    int rc = rfs_journal_note(f->name, read_below_version, f->below);
    if (rc == RFS_OK) {
        atomic_store(&f->versions, 1);
        return 1;
    }
    if (rc != RFS_E_BUSY)
        atomic_store(&f->versions, -1); /* an older server: STAT probes from now on */
    rfs_clear_error();
    return 0;
}
