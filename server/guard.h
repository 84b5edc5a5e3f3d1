/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Host safety checks on what clients ask of the export (docs/security.md, "Hostile
 * authenticated clients"): modes of new files and directories, and growth of files against the
 * export file system's free-space reserve. */
#ifndef RFSD_GUARD_H
#define RFSD_GUARD_H

#include <stdint.h>

#include "server.h"

/* The mode a new file (is_dir 0) or directory gets: set-uid and set-gid always cleared, and
 * sticky on files, unless the server runs with --allow-setid. */
uint32_t rfsd_guard_mode(const rfsd_config *cfg, uint32_t mode, int is_dir);
/* RFS_OK if growing fd's file to new_size (PREALLOCATE, SET_SIZE) leaves at least
 * --reserve-bytes free on the export's file system; RFS_E_DQUOT naming the reserve otherwise.
 * Shrinking, or no reserve configured, is always allowed. */
int rfsd_guard_grow(const rfsd_config *cfg, int fd, const char *shown, uint64_t new_size);

#endif
