/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The monotonic clock every deadline and duration uses, client and server alike. */
#ifndef RFS_COMMON_CLOCK_H
#define RFS_COMMON_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t rfs_now_ns(void);

#endif
