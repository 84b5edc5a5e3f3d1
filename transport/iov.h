/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Walking a caller's iovec list as a send takes it in pieces (TCP, TLS and UCX send loops). */
#ifndef RFS_TRANSPORT_IOV_H
#define RFS_TRANSPORT_IOV_H

#include <stddef.h>
#include <sys/uio.h>

/* Moves the position (*i, *done) in iov[0..n) past `bytes` just sent: after a partial send,
 * iov[*i] still has its first *done bytes behind it. */
static inline void rfs_iov_advance(const struct iovec *iov, int n, int *i, size_t *done,
                                   size_t bytes)
{
    while (*i < n) {
        size_t avail = iov[*i].iov_len - *done;
        if (bytes < avail) {
            *done += bytes;
            return;
        }
        bytes -= avail;
        (*i)++;
        *done = 0;
    }
}

#endif
