/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Preloaded into rfsd to give it a quota the kernel here cannot (no CONFIG_QUOTA):
 *   RFS_TEST_QUOTA_BYTES=N   a pwrite that would take a regular file beyond N bytes writes
 *                            what fits and then fails with EDQUOT, as a hard block quota does.
 * Only the errno matters to the test: it follows the real path from the server's backend to
 * the application's MPI error class. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);

static ssize_t limited(pwrite_fn real, int fd, const void *buf, size_t n, off_t off)
{
    const char *q = getenv("RFS_TEST_QUOTA_BYTES");
    struct stat st;
    if (!q || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return real(fd, buf, n, off);
    off_t limit = (off_t)strtoll(q, NULL, 10);
    if (off + (off_t)n <= limit)
        return real(fd, buf, n, off);
    if (off < limit)
        return real(fd, buf, (size_t)(limit - off), off); /* short: the next call fails */
    errno = EDQUOT;
    return -1;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    static pwrite_fn real;
    if (!real)
        real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite");
    return limited(real, fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    static pwrite_fn real;
    if (!real)
        real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite64");
    return limited(real, fd, buf, n, off);
}
