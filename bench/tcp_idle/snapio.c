/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Periodic snapshots through the rfs C API, for bench/tcp_idle:
 *   snapio URL write|read SIZE_KIB COUNT PAUSE_MS
 * writes (or reads back) COUNT snapshots of SIZE_KIB each at consecutive offsets of one file,
 * pausing PAUSE_MS between them as an application computing between checkpoints would, and
 * prints {"ms": [t1, t2, ...]}: the time of each rfs_pwrite / rfs_pread call. All calls use one
 * connection, so every call after the first finds it idle for PAUSE_MS. Token from $RFS_TOKEN. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rfs/rfs.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc != 6 || (strcmp(argv[2], "write") && strcmp(argv[2], "read")) || atol(argv[3]) <= 0 ||
        atoi(argv[4]) <= 0 || atoi(argv[5]) < 0) {
        fprintf(stderr, "usage: snapio URL write|read SIZE_KIB COUNT PAUSE_MS\n");
        return 2;
    }
    int writing = !strcmp(argv[2], "write");
    size_t len = (size_t)atol(argv[3]) * 1024;
    int count = atoi(argv[4]);
    long pause_ms = atol(argv[5]);
    char *buf = malloc(len);
    double *ms = malloc(sizeof(double) * (size_t)count);
    if (!buf || !ms) {
        fprintf(stderr, "snapio: out of memory\n");
        return 1;
    }
    memset(buf, 0x5a, len);
    rfs_file *f;
    unsigned flags = writing ? RFS_O_WRONLY | RFS_O_CREAT | RFS_O_TRUNC : RFS_O_RDONLY;
    if (rfs_open(argv[1], flags, 0644, NULL, &f) != RFS_OK) {
        fprintf(stderr, "snapio: %s\n", rfs_last_error());
        return 1;
    }
    for (int i = 0; i < count; i++) {
        if (i > 0 && pause_ms > 0) {
            struct timespec p = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
            nanosleep(&p, NULL); /* the application's computation between snapshots */
        }
        size_t done = 0;
        double t0 = now_ms();
        int rc = writing ? rfs_pwrite(f, buf, len, (uint64_t)i * len, &done)
                         : rfs_pread(f, buf, len, (uint64_t)i * len, &done);
        ms[i] = now_ms() - t0;
        if (rc != RFS_OK || done != len) {
            fprintf(stderr, "snapio: %s %d: %s\n", argv[2], i, rc ? rfs_last_error() : "short");
            return 1;
        }
    }
    if (rfs_close(f) != RFS_OK) {
        fprintf(stderr, "snapio: close: %s\n", rfs_last_error());
        return 1;
    }
    printf("{\"ms\": [");
    for (int i = 0; i < count; i++)
        printf("%s%.3f", i ? ", " : "", ms[i]);
    printf("]}\n");
    return 0;
}
