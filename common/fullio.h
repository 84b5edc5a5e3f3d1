/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Positioned reads and writes that finish the job: short transfers and EINTR are retried. */
#ifndef RFS_COMMON_FULLIO_H
#define RFS_COMMON_FULLIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads until len bytes or end of file. Returns the bytes read, or -1 with errno. */
ssize_t rfs_pread_full(int fd, void *buf, size_t len, uint64_t off);
/* Writes all len bytes. Returns 0, or -1 with errno (EIO when a write makes no progress). */
int rfs_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);
/* The same for a stream (pipe, terminal) at its current position. */
int rfs_write_full(int fd, const void *buf, size_t len);

#endif
