/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Small text helpers shared by the configuration readers of rfs and rfsd. */
#ifndef RFS_COMMON_TEXT_H
#define RFS_COMMON_TEXT_H

/* Cuts leading and trailing white space in place; returns the first non-blank character. */
char *rfs_trim(char *s);

#endif
