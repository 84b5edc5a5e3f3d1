/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* On/off switches read from the environment once (RFS_TRACE, RFS_STATS): set and not "0" is
 * on. Threads of several connections ask at once and each would find the same answer, so the
 * cache is a relaxed atomic. */
#ifndef RFS_COMMON_ENVFLAG_H
#define RFS_COMMON_ENVFLAG_H

#include <stdatomic.h>

/* A flag's cache, set up unread. */
#define RFS_ENV_FLAG_INIT (-1)

/* 1 when $name is set and not "0"; the answer is kept in *cache from the first call on. */
int rfs_env_flag(atomic_int *cache, const char *name);

#endif
