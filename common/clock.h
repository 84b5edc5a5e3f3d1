/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The monotonic clock every deadline and duration uses, client and server alike. */
#ifndef RFS_COMMON_CLOCK_H
#define RFS_COMMON_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t rfs_now_ns(void);

/* Timed waits: a wall clock stepped by NTP or by hand must neither stretch nor cut a timeout,
 * so every condition variable that pthread_cond_timedwait waits on is made here (its clock
 * CLOCK_MONOTONIC) and every deadline comes from rfs_deadline_*. */
int rfs_cond_init_monotonic(pthread_cond_t *cv);
/* The timespec of the monotonic instant at_ns (negative: 0). */
struct timespec rfs_deadline_at(int64_t at_ns);
/* The monotonic instant ms milliseconds from now (a huge ms saturates, never wraps). */
struct timespec rfs_deadline_ms(int64_t ms);

#endif
