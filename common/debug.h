/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Debug assertions on lock ownership and reference counts. They are compiled in when
 * RFS_DEBUG_CHECKS is defined (Debug builds and the sanitizer builds, see CMakeLists.txt) and
 * compile to nothing otherwise; a failed one prints where and aborts.
 *
 * RFS_ASSERT_HELD(&mutex): at the top of a function documented "caller holds mutex". glibc
 * records the kernel id of the thread that owns a pthread mutex in the mutex itself (for every
 * mutex type, and pthread_cond_wait keeps it right), so the check needs no wrapper type and no
 * change to how the code locks: every existing lock and wait call stays as it is.
 *
 * Reference counts: RFS_REF_GET(count) where a reference is taken, RFS_REF_PUT(count) where one
 * is dropped (its value is the count left), RFS_REF_DEAD(count) just before the object is freed.
 * A count is never negative, never dropped from zero, and a freed object's count holds a poison
 * value, so a get or put on it while the memory is not yet reused fails the check. */
#ifndef RFS_COMMON_DEBUG_H
#define RFS_COMMON_DEBUG_H

#include <pthread.h>

/* Prints "rfs: debug check failed: what (file:line)" and aborts. */
_Noreturn void rfs_debug_fail(const char *what, const char *file, int line);

/* Larger than any real count, small enough for an int; the poison is above it. */
#define RFS_REF_LIMIT (1 << 30)
#define RFS_REF_POISON 0x7EADBEEF

#ifdef RFS_DEBUG_CHECKS
/* 1 if the calling thread owns m (0 where the C library does not say: the check is skipped). */
int rfs_mutex_held_by_me(pthread_mutex_t *m);

#define RFS_DEBUG_CHECK(cond) ((cond) ? (void)0 : rfs_debug_fail(#cond, __FILE__, __LINE__))
#define RFS_ASSERT_HELD(m) RFS_DEBUG_CHECK(rfs_mutex_held_by_me(m))
/* Counts are int or unsigned: compared as long long, so a negative int shows as one. */
#define RFS_REF_GET(r) \
    (RFS_DEBUG_CHECK((long long)(r) >= 0 && (long long)(r) < RFS_REF_LIMIT), ++(r))
#define RFS_REF_PUT(r) \
    (RFS_DEBUG_CHECK((long long)(r) > 0 && (long long)(r) < RFS_REF_LIMIT), --(r))
#define RFS_REF_DEAD(r) (RFS_DEBUG_CHECK((r) == 0), (r) = RFS_REF_POISON)
#else
#define RFS_DEBUG_CHECK(cond) ((void)0)
#define RFS_ASSERT_HELD(m) ((void)0)
#define RFS_REF_GET(r) (++(r))
#define RFS_REF_PUT(r) (--(r))
#define RFS_REF_DEAD(r) ((void)0)
#endif

#endif
