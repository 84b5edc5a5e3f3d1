/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Error codes <-> messages, and the per-thread "last error" message every layer sets. */
#ifndef RFS_COMMON_ERR_H
#define RFS_COMMON_ERR_H

#include "rfs/rfs.h"

/* Bytes of an error message, NUL included: the thread's message (rfs_last_error) and every
 * copy of one are this size, so a copy never cuts what the thread had. */
#define RFS_ERRMSG_MAX 1536

/* The one way an error outlives the calls after it (each rfs call may replace the thread's
 * message): save it where it happens, pass the status by pointer to where it is reported, and
 * raise it there. Code that only needs the message text reads st->msg. */
typedef struct rfs_status {
    int rc;
    char msg[RFS_ERRMSG_MAX];
} rfs_status;

/* Sets this thread's last-error message (printf format) and returns err, so callers can write
 * `return rfs_fail(RFS_E_NOENT, "%s: %s: no such file", server, path);` */
int rfs_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Saves rc and this thread's message in st; returns rc. */
int rfs_status_save(rfs_status *st, int rc);
/* The first failure of several: saves rc and the message unless st holds a failure already.
 * Returns st->rc. (Start from `rfs_status st = {RFS_OK, ""};`.) */
int rfs_status_first(rfs_status *st, int rc);
/* Makes st this thread's error again (rfs_last_error() is its message); returns st->rc. */
int rfs_status_raise(const rfs_status *st);
/* Puts what failed in front of why: the message becomes fmt's text, ": ", and the thread's
 * message as it was (the cause). Returns err. */
int rfs_fail_cause(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Clears the message. */
void rfs_clear_error(void);
/* Maps an errno value to an rfs_err. */
int rfs_err_from_errno(int e);
/* Wire status (positive) <-> rfs_err (negative). Unknown codes map to RFS_E_IO. */
static inline unsigned rfs_err_to_wire(int err)
{
    return err < 0 ? (unsigned)(-err) : 0u;
}
int rfs_err_from_wire(unsigned status);

#endif
