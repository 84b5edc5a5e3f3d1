/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Small-read latency through the rfs C API, for bench/roundtrip:
 *   lat URL N      opens URL read-only and times N 4-byte rfs_pread calls (after N/10 warm-up
 *                  calls) at offsets spread over the file; prints
 *                  {"median_us":..,"p10_us":..,"p90_us":..,"n":N}
 * The token comes from $RFS_TOKEN as for every rfs client. Built by run.py against librfs. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rfs/rfs.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc != 3 || atoi(argv[2]) <= 0) {
        fprintf(stderr, "usage: lat URL N\n");
        return 2;
    }
    int n = atoi(argv[2]);
    rfs_file *f;
    int rc = rfs_open(argv[1], RFS_O_RDONLY, 0, NULL, &f);
    if (rc != RFS_OK) {
        fprintf(stderr, "lat: %s\n", rfs_last_error());
        return 1;
    }
    uint64_t size = 0;
    if (rfs_get_size(f, &size) != RFS_OK || size < 4) {
        fprintf(stderr, "lat: %s: file too small or size unknown\n", argv[1]);
        return 1;
    }
    double *t = malloc(sizeof(double) * (size_t)n);
    char buf[4];
    for (int i = 0; i < n + n / 10; i++) {
        uint64_t off = ((uint64_t)i * 4096u) % (size - 3);
        size_t done = 0;
        double t0 = now_us();
        rc = rfs_pread(f, buf, 4, off, &done);
        double dt = now_us() - t0;
        if (rc != RFS_OK || done != 4) {
            fprintf(stderr, "lat: pread: %s\n", rc ? rfs_last_error() : "short read");
            return 1;
        }
        if (i >= n / 10)
            t[i - n / 10] = dt;
    }
    rfs_close(f);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    printf("{\"median_us\": %.3f, \"p10_us\": %.3f, \"p90_us\": %.3f, \"n\": %d}\n", t[n / 2],
           t[n / 10], t[n * 9 / 10], n);
    free(t);
    return 0;
}
