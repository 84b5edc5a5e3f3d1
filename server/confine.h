/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Confinement of client paths to the export root. Every path a client sends is resolved by the
 * kernel with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) from the root's directory fd, so
 * `..`, absolute symlinks and symlinks that climb out are refused during the walk itself (no
 * check-then-use race). Operations on a name (unlink, rename, mkdir) open the parent that way
 * and then use the *at() call on the last component, which is never followed. */
#ifndef RFSD_CONFINE_H
#define RFSD_CONFINE_H

#include <stddef.h>
#include <sys/types.h>

#include "proto/proto.h"

/* The client's path as shown in messages (NUL-terminated copy of the wire bytes) and the
 * root-relative form used for resolution ("/run42/out.h5" -> "run42/out.h5", "/" -> "."). */
typedef struct rfsd_path {
    char shown[RFS_MAX_PATH + 1];
    char rel[RFS_MAX_PATH + 2];
} rfsd_path;

/* 0 or RFS_E_INVAL (empty, NUL inside, too long). */
int rfsd_path_from_wire(const rfs_wpath *w, rfsd_path *p);

/* openat2 beneath root_fd. Errors carry a message naming p->shown (never the root). */
int rfsd_open_beneath(int root_fd, const rfsd_path *p, int flags, mode_t mode, int *fd_out);

/* Opens the parent directory of p beneath root_fd (O_PATH) and points *last at the final
 * component inside p->rel (which is modified: the separator is cut). Refuses a last
 * component of "", "." or "..". */
int rfsd_open_parent(int root_fd, rfsd_path *p, int *dir_fd, const char **last);

/* Message + rfs_err for a failed syscall on p (EXDEV/ELOOP -> escape message). */
int rfsd_path_fail(const rfsd_path *p, const char *what, int e);

#endif
