/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* CRC-32C speed (common/crc32c.c): the SSE4.2 three-lane path and the portable slicing-by-8
 * path over one 4 MiB frame-sized buffer, repeated; prints JSON with GB/s of each, medians of
 * the repetitions. Built and run by bench/compress/run.py. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/crc32c.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double speed(uint32_t (*fn)(uint32_t, const void *, size_t), const unsigned char *buf,
                    size_t len, int passes, volatile uint32_t *sink)
{
    double t[9];
    for (int r = 0; r < 9; r++) {
        double t0 = now();
        uint32_t c = 0;
        for (int i = 0; i < passes; i++)
            c = fn(c, buf, len);
        t[r] = now() - t0;
        *sink ^= c;
    }
    qsort(t, 9, sizeof t[0], cmp);
    return (double)len * passes / t[4] / 1e9;
}

int main(void)
{
    size_t len = (size_t)4 << 20;
    unsigned char *buf = malloc(len);
    if (!buf)
        return 1;
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)(i * 2654435761u >> 13);
    volatile uint32_t sink = 0;
    double hw = speed(rfs_crc32c, buf, len, 64, &sink);
    double sw = speed(rfs_crc32c_portable, buf, len, 8, &sink);
    printf("{\"frame_bytes\": %zu, \"crc32c_gbps\": %.2f, \"crc32c_portable_gbps\": %.2f}\n", len,
           hw, sw);
    free(buf);
    return 0;
}
