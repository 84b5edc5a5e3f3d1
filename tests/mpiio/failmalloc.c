/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Preloaded into MPI test programs to make one rank run out of memory on purpose:
 *   RFS_TEST_FAIL_MALLOC_ABOVE=BYTES   allocations of at least BYTES fail (NULL, ENOMEM)
 *   RFS_TEST_FAIL_MALLOC_TIMES=K       ... the first K of them only (default 1)
 *   RFS_TEST_FAIL_MALLOC_RANK=R        ... only in the rank whose launcher-given rank is R
 *                                      (PMI_RANK for MPICH, OMPI_COMM_WORLD_RANK for Open MPI)
 * Each refusal is reported on stderr, so a test can tell that the failure it provoked happened.
 * Smaller allocations, and every allocation once K refusals are spent, go to glibc. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);

static atomic_int left = -1; /* refusals still to make; -1: settings not read yet */
static size_t threshold;

static void settings(void)
{
    if (atomic_load(&left) != -1)
        return;
    const char *above = getenv("RFS_TEST_FAIL_MALLOC_ABOVE");
    const char *times = getenv("RFS_TEST_FAIL_MALLOC_TIMES");
    const char *want = getenv("RFS_TEST_FAIL_MALLOC_RANK");
    const char *rank = getenv("PMI_RANK");
    if (!rank)
        rank = getenv("OMPI_COMM_WORLD_RANK");
    int k = 0;
    if (above && *above && (!want || (rank && !strcmp(want, rank)))) {
        threshold = (size_t)strtoull(above, NULL, 10);
        k = times && *times ? atoi(times) : 1;
    }
    atomic_store(&left, k);
}

static int refuse(size_t n)
{
    settings();
    if (threshold == 0 || n < threshold)
        return 0;
    int cur = atomic_load(&left);
    while (cur > 0)
        if (atomic_compare_exchange_weak(&left, &cur, cur - 1)) {
            char msg[96];
            int len = snprintf(msg, sizeof msg, "failmalloc: refused %zu bytes\n", n);
            if (write(2, msg, (size_t)len) < 0) {
                /* nothing to do: the refusal stands */
            }
            errno = ENOMEM;
            return 1;
        }
    return 0;
}

void *malloc(size_t n)
{
    return refuse(n) ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        total = (size_t)-1;
    return refuse(total) ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    return refuse(n) ? NULL : __libc_realloc(p, n);
}
