/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* What the POSIX shim's files share: the C library's functions, rfs errors as errno values,
 * the client options, and the rule that decides which names are rfs names.
 * posix_shim.c serves descriptors (open/read/stat...), posix_names.c the calls that change
 * names (unlink/rename/truncate/mkdir/rmdir). */
#ifndef RFS_POSIX_SHIM_H
#define RFS_POSIX_SHIM_H

#include <stddef.h>

#include "rfs/rfs.h"

/* Big enough for any rfs name with "rfs:" put in front (paths are at most 4096 bytes). */
#define SHIM_NAME_MAX 4200

void *shim_next_fn(const char *name, const char *version);

/* The C library's fn (the next definition after ours), looked up once. */
#define REAL(fn, version)                                                   \
    (*({                                                                    \
        static __typeof__(&fn) real_ptr_;                                   \
        __typeof__(&fn) p_ = __atomic_load_n(&real_ptr_, __ATOMIC_ACQUIRE); \
        if (!p_) {                                                          \
            p_ = (__typeof__(&fn))shim_next_fn(#fn, version);               \
            __atomic_store_n(&real_ptr_, p_, __ATOMIC_RELEASE);             \
        }                                                                   \
        p_;                                                                 \
    }))

/* The errno value the kernel would give for an rfs error code. */
int shim_errno_of(int rfs_err);

/* Client options from the MPI-IO hints (RFS_HINTS' timeouts). */
void shim_options(rfs_options *o);

/* The rfs name for a POSIX name: itself if it starts with "rfs:"; for a name the C library
 * reported missing (local_missing), "rfs:" + name if that parses (a library cut the prefix
 * off); else NULL. buf (SHIM_NAME_MAX bytes) holds the result when it is not `name`. */
const char *shim_rfs_name(const char *name, int local_missing, char *buf, size_t cap);

#endif
