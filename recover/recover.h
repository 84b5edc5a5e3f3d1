/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Delivery of what ABT journals (abt/journal.h) hold after their writer died: the library
 * behind `rfs recover`. Above abt/ (it reads its journals) and client/ (it delivers through it);
 * only the CLI and tests call it. */
#ifndef RFS_RECOVER_H
#define RFS_RECOVER_H

#include <stdint.h>

#include "rfs/rfs.h"

/* `rfs recover` (docs/abt.md "The journal and recovery"). For every *.rfsj file in dir:
 * - a file that is not a journal (no valid header) is left alone and counted in not_journals;
 * - a journal locked by another process (its live writer, or another recover) is skipped;
 * - otherwise every record is verified (CRC-32C); the records before the first bad one that are
 *   not yet delivered are written to their files in the original write order, each marked done
 *   in the journal once the server acknowledged it (so nothing is applied twice);
 * - before the first write to a file, its size and mtime on the server must equal the version
 *   the writer recorded after its last delivery (or one recorded by another journal of dir, or
 *   left by this run), else the journal is kept and nothing of it replayed, unless force;
 * - a fully delivered journal is removed; one with a corrupt record is renamed *.rfsj.corrupt;
 *   one whose delivery failed is kept as it is, for a later run.
 * Returns RFS_OK when every journal was delivered or skipped as held, else the first error
 * (each problem is also passed to note, one line naming journal, file, server and cause). */
typedef void (*rfs_abt_progress_fn)(void *ctx, const char *name, uint64_t bytes_done);
typedef void (*rfs_abt_note_fn)(void *ctx, const char *line);
typedef struct rfs_abt_recover_opts {
    const rfs_options *opts; /* for connecting to the servers (NULL: defaults, $RFS_TOKEN*) */
    const char *to;          /* NULL, or "rfs:HOST:PORT": deliver to this server instead of
                              * the one named in the journal (same paths) */
    int force;               /* replay even onto files changed since the writer's last delivery */
    rfs_abt_progress_fn progress; /* may be NULL: called after each record */
    rfs_abt_note_fn note;         /* may be NULL: problems are logged as warnings */
    void *ctx;
} rfs_abt_recover_opts;
typedef struct rfs_abt_recover_result {
    uint64_t records, bytes; /* delivered */
    unsigned journals_done;  /* fully delivered and removed */
    unsigned journals_held;  /* skipped: locked by another process */
    unsigned journals_kept;  /* kept: corrupt, refused or failed */
    unsigned not_journals;   /* *.rfsj files that are not journals, left alone */
} rfs_abt_recover_result;
int rfs_abt_recover(const char *dir, const rfs_abt_recover_opts *ro, rfs_abt_recover_result *res);

#endif
