/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The manifest fuzz target's checker (tests/fuzz/manifest_check.c) without libFuzzer: every
 * seed of tests/fuzz/corpus_manifest is accepted, and a bounded, reproducible run of
 * mutations of them (bytes flipped, counts and lengths set to edge values, cuts; half of them
 * with length and CRC made to match again) never breaks an invariant. Usage: test_manifest_corpus CORPUS_DIR */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "manifest_check.h"

#define MUTATIONS_PER_SEED 20000

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const uint32_t edges[] = {0, 1, 2, 0xff, 0xffff, 0x10000, 0x7fffffff, 0xffffffff};

static void mutate(uint8_t *b, size_t n, size_t *len)
{
    *len = n;
    switch (next() % 4) {
    case 0: /* flip a byte */ b[next() % n] ^= (uint8_t)(1 + next() % 255); break;
    case 1: { /* a 32-bit edge value anywhere */
        size_t at = next() % (n - 3);
        uint32_t v = edges[next() % (sizeof edges / sizeof edges[0])];
        memcpy(b + at, &v, 4);
        break;
    }
    case 2: /* cut */ *len = next() % n; break;
    default: /* a byte set to 0xff */ b[next() % n] = 0xff; break;
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (!d) {
        perror(argv[1]);
        return 1;
    }
    int seeds = 0, accepted = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        static uint8_t seed[1 << 16], work[1 << 16];
        size_t n = fread(seed, 1, sizeof seed, f);
        fclose(f);
        seeds++;
        if (!rfsm_check_bytes(seed, n)) {
            fprintf(stderr, "seed %s is refused\n", path);
            return 1;
        }
        for (int k = 0; k < MUTATIONS_PER_SEED && n > 8; k++) {
            size_t len;
            memcpy(work, seed, n);
            mutate(work, n, &len);
            /* Half of them made consistent again (length field, CRC), so that the checks
             * past the checksum see them. */
            if (k % 2 && len >= 44) {
                uint32_t l = (uint32_t)len, crc;
                memcpy(work + 8, &l, 4);
                crc = rfs_crc32c(0, work, len - 4);
                memcpy(work + len - 4, &crc, 4);
            }
            accepted += rfsm_check_bytes(work, len);
        }
    }
    closedir(d);
    if (seeds == 0) {
        fprintf(stderr, "no seeds in %s\n", argv[1]);
        return 1;
    }
    printf("%d seeds, %d mutations accepted (the rest refused): OK\n", seeds, accepted);
    return 0;
}
