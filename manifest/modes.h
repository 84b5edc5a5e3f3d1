/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The logical file's optional access modes (docs/manifest.md "Small writes and noncontiguous
 * reads"), each an rfs_io stacked on the one below it (the logical file, or the other mode):
 * buffered.c coalesces small writes in client memory, sieve.c reads a list of ranges as the
 * spans that cover them. Both work over any rfs_io; manifest/open.c stacks them when asked. */
#ifndef RFS_MANIFEST_MODES_H
#define RFS_MANIFEST_MODES_H

#include <stddef.h>

#include "rfs/rfs_io.h"
#include "rfs/rfs_manifest.h"

/* The default size of either mode's buffer (rfs_manifest_buffer). */
#define RFS_MANIFEST_DEFAULT_BUFFER ((size_t)4 << 20)
/* Ranges a coalescing buffer holds at most (their descriptors bound its memory too). */
#define RFS_MANIFEST_MAX_HELD_RANGES 8192u

/* Puts a coalescing layer holding at most cap bytes (>= 1) over below. On success *out owns
 * below (its close closes below); on failure below is untouched. */
int mf_buffered_wrap(rfs_io *below, size_t cap, rfs_io **out);
/* Puts a data-sieving read layer with a window of cap bytes (>= 1) over below; ownership as
 * mf_buffered_wrap. */
int mf_sieve_wrap(rfs_io *below, size_t cap, rfs_io **out);
/* Stacks the modes p asks for over *io (sieve above buffered: a sieved read then sends the
 * held writes it overlaps). On failure *io is closed and NULL. */
int mf_stack_modes(const rfs_manifest_params *p, rfs_io **io);

#endif
