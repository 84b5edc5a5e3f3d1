/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* See shuffle.h. Both directions walk the elements in blocks so that each byte plane is
 * written (or read) in runs of BLOCK bytes rather than one byte per cache line. */
#include "common/shuffle.h"

#include <string.h>

#define BLOCK 256

void rfs_shuffle(uint8_t *dst, const uint8_t *src, size_t n, unsigned elem)
{
    if (elem < 2) {
        memcpy(dst, src, n);
        return;
    }
    size_t m = n / elem;
    for (size_t i0 = 0; i0 < m; i0 += BLOCK) {
        size_t i1 = i0 + BLOCK < m ? i0 + BLOCK : m;
        for (unsigned b = 0; b < elem; b++) {
            uint8_t *d = dst + (size_t)b * m;
            const uint8_t *s = src + b;
            for (size_t i = i0; i < i1; i++)
                d[i] = s[i * elem];
        }
    }
    memcpy(dst + m * elem, src + m * elem, n - m * elem);
}

void rfs_unshuffle(uint8_t *dst, const uint8_t *src, size_t n, unsigned elem)
{
    if (elem < 2) {
        memcpy(dst, src, n);
        return;
    }
    size_t m = n / elem;
    for (size_t i0 = 0; i0 < m; i0 += BLOCK) {
        size_t i1 = i0 + BLOCK < m ? i0 + BLOCK : m;
        for (unsigned b = 0; b < elem; b++) {
            const uint8_t *s = src + (size_t)b * m;
            uint8_t *d = dst + b;
            for (size_t i = i0; i < i1; i++)
                d[i * elem] = s[i];
        }
    }
    memcpy(dst + m * elem, src + m * elem, n - m * elem);
}
