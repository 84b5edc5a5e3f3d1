/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* What augment (manifest/augment.c) and trim (manifest/trim.c) share (manifest/ops.c,
 * manifest/tpc_copy.c). */
#ifndef RFS_MANIFEST_OPS_INTERNAL_H
#define RFS_MANIFEST_OPS_INTERNAL_H

#include "manifest/manifest.h"
#include "rfs/rfs_io.h"

#define MF_OPS_NAME_MAX (RFSM_MAX_URL + RFSM_MAX_PATH + 2)

/* The rfs name of object i of m. */
int mf_ops_object_name(const rfsm *m, uint32_t i, char *out, size_t cap);
/* The manifest's home handle (read-write: the update writes it) and its content. */
int mf_ops_load(const char *name, const rfs_options *opts, rfs_io **home, rfsm **m);
/* Closes and frees what mf_ops_load gave, keeping the thread's error. */
void mf_ops_unload(rfs_io *home, rfsm *m);
/* Has the server of rfs name `to` pull the object `from` whole, server to server (verified
 * against the source's checksum, synced before it replaces anything at `to`); *bytes the
 * size copied. */
int mf_tpc_copy(const char *from, const char *to, const rfs_options *opts, uint64_t *bytes);

#endif
