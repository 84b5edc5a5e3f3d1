/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "clock.h"

int64_t rfs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int rfs_cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    int rc = pthread_condattr_init(&a);
    if (rc != 0)
        return rc;
    rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc;
}

struct timespec rfs_deadline_at(int64_t at_ns)
{
    if (at_ns < 0)
        at_ns = 0;
    struct timespec ts = {.tv_sec = (time_t)(at_ns / 1000000000),
                          .tv_nsec = (long)(at_ns % 1000000000)};
    return ts;
}

struct timespec rfs_deadline_ms(int64_t ms)
{
    int64_t now = rfs_now_ns();
    /* INT64_MAX ns is 292 years of uptime: far enough to mean "no deadline". */
    if (ms < 0)
        ms = 0;
    int64_t at = ms > (INT64_MAX - now) / 1000000 ? INT64_MAX : now + ms * 1000000;
    return rfs_deadline_at(at);
}
