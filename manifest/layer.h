/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The manifest layer for the layers above it (mpiio/, cli/): opening in a runtime of theirs,
 * and its op table for a delete's list of layers (rfs_io_remove). */
#ifndef RFS_MANIFEST_LAYER_H
#define RFS_MANIFEST_LAYER_H

#include "client/runtime.h"
#include "rfs/rfs_manifest.h"

/* rfs_io_open_manifest in runtime rt (NULL: the default one). */
int rfs_manifest_open_in(rfs_runtime *rt, const char *name, unsigned flags, unsigned mode,
                         const rfs_options *opts, const rfs_manifest_params *params, rfs_io **out);
/* The layer's op table: its remove deletes a .rfsm name's objects and manifest, and passes
 * any other name on. */
const rfs_io_ops *rfs_manifest_io_ops(void);

#endif
