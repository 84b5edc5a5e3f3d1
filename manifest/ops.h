/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Changing a logical file's replicas (docs/manifest.md "Augment and trim"; the exNode's
 * augment and trim of mpiio-logistical-networking.txt sec. 3): adding a replica of a column
 * on another server by a server-to-server copy from a complete one (the data never pass
 * through this client), which also repairs an incomplete replica, and removing replicas.
 * Used by `rfs manifest augment|trim`; not in librfs's public API. */
#ifndef RFS_MANIFEST_OPS_H
#define RFS_MANIFEST_OPS_H

#include <stdint.h>
#include <stdio.h>

#include "rfs/rfs.h"

/* Every column (of every extent), or only this one. */
#define RFSM_ALL_COLUMNS (-1)
#define RFSM_ANY_REPLICA (-1)

/* Each replica copied: told as it is done (to print a line; may be NULL). */
typedef struct rfsm_copy_note {
    uint32_t column;
    const char *from; /* source object's rfs name */
    const char *to;   /* the new or repaired object's rfs name */
    uint64_t bytes;   /* copied (always the whole object: a third-party copy is whole-file) */
    int repair;       /* 1: an incomplete replica made complete again */
    uint64_t missed;  /* a repair: the bytes it was recorded to miss (UINT64_MAX: all) */
} rfsm_copy_note;
typedef void (*rfsm_copy_fn)(void *ctx, const rfsm_copy_note *n);

/* Adds a replica of each column (or of `column`) on server `server` ("rfs://host:port", any
 * path ignored), copied by server `server` itself from a complete replica (TPC_GRANT at the
 * source, TPC_PULL at `server`: rfsd --tpc on there); a column whose replica on `server` is
 * incomplete is repaired the same way, in place. Then records it in the manifest under its
 * update lock. Errors, the manifest unchanged then: no complete replica of a column to copy
 * from, `server` already holding a complete replica of `column` (of every column, without
 * one), a copy that failed, the file changed by a writer during the copies. */
int rfsm_augment(const char *name, const char *server, int column, const rfs_options *opts,
                 rfsm_copy_fn note, void *ctx);

/* Removes from the manifest the replicas on `server` (or, server NULL, replica slot
 * `replica`) of each column (or of `column`), then deletes their objects. Refused, nothing
 * changed: a column it would leave without a replica, or (unless force) without a complete
 * one. *removed counts the objects taken out. */
int rfsm_trim(const char *name, const char *server, int replica, int column, int force,
              const rfs_options *opts, uint32_t *removed);

#endif
