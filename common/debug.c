/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The out-of-line parts of debug.h's checks. */
#include "common/debug.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

void rfs_debug_fail(const char *what, const char *file, int line)
{
    fprintf(stderr, "rfs: debug check failed: %s (%s:%d)\n", what, file, line);
    fflush(stderr);
    abort();
}

#ifdef RFS_DEBUG_CHECKS
int rfs_mutex_held_by_me(pthread_mutex_t *m)
{
#ifdef __GLIBC__
    return m->__data.__owner == (int)syscall(SYS_gettid);
#else
    (void)m;
    return 1;
#endif
}
#endif
