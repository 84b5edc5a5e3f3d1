/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static atomic_int current = RFS_LOG_WARN;
static const char *const names[] = {"error", "warn", "info", "debug"};

void rfs_log_set_level(int level)
{
    atomic_store(&current, level);
}
int rfs_log_level(void)
{
    return atomic_load(&current);
}

int rfs_log_parse_level(const char *s)
{
    for (int i = 0; i <= RFS_LOG_DEBUG; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

void rfs_log(int level, const char *fmt, ...)
{
    if (level > atomic_load(&current))
        return;
    char line[2048];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    /* ISO 8601 in UTC: lines from hosts in other time zones, and from days apart, still sort
     * and compare. */
    int n = snprintf(
        line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ rfs %s: ", tm.tm_year + 1900,
        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
        names[level < 0   ? 0
              : level > 3 ? 3
                          : level]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    /* One fputs per line so concurrent threads do not interleave within a line. */
    size_t len = strlen(line);
    line[len] = '\n';
    line[len + 1] = '\0';
    fputs(line, stderr);
}
