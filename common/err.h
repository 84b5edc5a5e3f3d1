/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Error codes <-> messages, and the per-thread "last error" message every layer sets. */
#ifndef RFS_COMMON_ERR_H
#define RFS_COMMON_ERR_H

#include "rfs/rfs.h"

/* Sets this thread's last-error message (printf format) and returns err, so callers can write
 * `return rfs_fail(RFS_E_NOENT, "%s: %s: no such file", server, path);` */
int rfs_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Clears the message. */
void rfs_clear_error(void);
/* Maps an errno value to an rfs_err. */
int rfs_err_from_errno(int e);
/* Wire status (positive) <-> rfs_err (negative). Unknown codes map to RFS_E_IO. */
static inline unsigned rfs_err_to_wire(int err) { return err < 0 ? (unsigned)(-err) : 0u; }
int rfs_err_from_wire(unsigned status);

#endif
