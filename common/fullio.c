/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "fullio.h"

#include <errno.h>
#include <unistd.h>

ssize_t rfs_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* off < 0: a stream at its current position. */
static int write_all(int fd, const void *buf, size_t len, int64_t off)
{
    size_t put = 0;
    while (put < len) {
        ssize_t n =
            off < 0 ? write(fd, (const char *)buf + put, len - put)
                    : pwrite(fd, (const char *)buf + put, len - put, (off_t)(off + (int64_t)put));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        put += (size_t)n;
    }
    return 0;
}

int rfs_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
    return write_all(fd, buf, len, (int64_t)off);
}

int rfs_write_full(int fd, const void *buf, size_t len)
{
    return write_all(fd, buf, len, -1);
}
