/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Bandwidth of one request size through the rfs C API, for bench/ucx:
 *   bw URL SIZE write|read
 * write: creates URL and times rfs_pwrite calls of SIZE bytes at consecutive offsets, one at a
 * time, until 256 MiB (at least 8 calls, at most 4096) have gone; read: times rfs_pread calls
 * of SIZE bytes over the file the write left (run write first). A warm-up call is not timed.
 * Prints {"size":..,"op":..,"calls":..,"mib_s":..}. The token comes from $RFS_TOKEN. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rfs/rfs.h"

#define TOTAL ((uint64_t)256 << 20)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    long long sz = argc == 4 ? atoll(argv[2]) : 0;
    int writing = argc == 4 && !strcmp(argv[3], "write");
    if (sz <= 0 || (!writing && strcmp(argv[3], "read"))) {
        fprintf(stderr, "usage: bw URL SIZE write|read\n");
        return 2;
    }
    size_t size = (size_t)sz;
    uint64_t calls = TOTAL / size;
    calls = calls < 8 ? 8 : calls > 4096 ? 4096 : calls;
    char *buf = malloc(size);
    if (!buf)
        return 1;
    for (size_t i = 0; i < size; i++)
        buf[i] = (char)(i * 131u + 7u);
    rfs_file *f;
    unsigned flags = writing ? RFS_O_WRONLY | RFS_O_CREAT | RFS_O_TRUNC : RFS_O_RDONLY;
    if (rfs_open(argv[1], flags, 0644, NULL, &f) != RFS_OK) {
        fprintf(stderr, "bw: %s\n", rfs_last_error());
        return 1;
    }
    double t0 = 0;
    for (uint64_t i = 0; i <= calls; i++) {
        if (i == 1)
            t0 = now_s(); /* call 0 warms up */
        uint64_t off = (i % calls) * size;
        size_t done = 0;
        int rc =
            writing ? rfs_pwrite(f, buf, size, off, &done) : rfs_pread(f, buf, size, off, &done);
        if (rc != RFS_OK || done != size) {
            fprintf(stderr, "bw: %s: %s\n", argv[3], rc ? rfs_last_error() : "short transfer");
            return 1;
        }
    }
    double dt = now_s() - t0;
    if (rfs_close(f) != RFS_OK) {
        fprintf(stderr, "bw: close: %s\n", rfs_last_error());
        return 1;
    }
    printf("{\"size\": %zu, \"op\": \"%s\", \"calls\": %llu, \"mib_s\": %.1f}\n", size, argv[3],
           (unsigned long long)calls, (double)calls * (double)size / (1 << 20) / dt);
    free(buf);
    return 0;
}
