/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* common/crc32c.c: the published check value, chaining, and the slicing path against a plain
 * bit-by-bit reference at every length and alignment around the 8-byte steps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/crc32c.h"

static uint32_t reference(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
}

static void test_check_value(void **state)
{
    (void)state;
    assert_int_equal(rfs_crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(rfs_crc32c(0, "", 0), 0);
    /* RFC 3720 B.4: 32 bytes of zeros. */
    uint8_t z[32] = {0};
    assert_int_equal(rfs_crc32c(0, z, sizeof z), 0x8A9136AAu);
}

static void test_chaining_and_alignment(void **state)
{
    (void)state;
    uint8_t buf[300];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 131u + 7u);
    for (size_t off = 0; off < 9; off++)
        for (size_t n = 0; n + off <= 70; n++)
            assert_int_equal(rfs_crc32c(0, buf + off, n), reference(buf + off, n));
    uint32_t whole = rfs_crc32c(0, buf, sizeof buf);
    for (size_t cut = 0; cut <= sizeof buf; cut += 13)
        assert_int_equal(rfs_crc32c(rfs_crc32c(0, buf, cut), buf + cut, sizeof buf - cut), whole);
}

/* The three-lane hardware path over lengths around its 3 KiB blocks, at odd alignments and
 * with a running seed, against the portable path and the bit-by-bit reference. */
static void test_lanes_agree(void **state)
{
    (void)state;
    static uint8_t buf[20000];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    const size_t lens[] = {3071, 3072, 3073, 6143, 6144, 6151, 9216, 12000, 19990};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
        for (size_t off = 0; off < 9; off += 3) {
            uint32_t want = reference(buf + off, lens[k]);
            assert_int_equal(rfs_crc32c(0, buf + off, lens[k]), want);
            assert_int_equal(rfs_crc32c_portable(0, buf + off, lens[k]), want);
            uint32_t seed = rfs_crc32c(0, buf, 5);
            assert_int_equal(rfs_crc32c(seed, buf + off, lens[k]),
                             rfs_crc32c_portable(seed, buf + off, lens[k]));
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_value),
        cmocka_unit_test(test_chaining_and_alignment),
        cmocka_unit_test(test_lanes_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
