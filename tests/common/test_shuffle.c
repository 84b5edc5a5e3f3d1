/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* common/shuffle.c and the shuffled codecs of common/compress.c: the byte planes against a
 * plain reference at lengths around the element and block sizes; compress/decompress round
 * trips; a corrupt or lying shuffled payload refused like a plain one; what a smooth field of
 * doubles gains; the compression modes' spelling both ways. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/compress.h"
#include "common/err.h"
#include "common/shuffle.h"
#include "common/zauto.h"

static void test_planes_match_reference(void **state)
{
    (void)state;
    static const size_t lens[] = {0, 1, 7, 8, 9, 63, 64, 2047, 2048, 2049, 8 * 256 * 3 + 5};
    for (unsigned elem = 1; elem <= 8; elem *= 2) {
        for (size_t t = 0; t < sizeof lens / sizeof lens[0]; t++) {
            size_t n = lens[t];
            uint8_t *src = malloc(n + 1), *sh = malloc(n + 1), *back = malloc(n + 1);
            assert_non_null(src);
            for (size_t i = 0; i < n; i++)
                src[i] = (uint8_t)(i * 37u + 11u);
            rfs_shuffle(sh, src, n, elem);
            size_t m = elem > 1 ? n / elem : n;
            for (size_t i = 0; elem > 1 && i < m; i++)
                for (unsigned b = 0; b < elem; b++)
                    assert_int_equal(sh[(size_t)b * m + i], src[i * elem + b]);
            if (elem > 1) /* the tail stays put */
                assert_memory_equal(sh + m * elem, src + m * elem, n - m * elem);
            else if (n)
                assert_memory_equal(sh, src, n);
            rfs_unshuffle(back, sh, n, elem);
            if (n)
                assert_memory_equal(back, src, n);
            free(src);
            free(sh);
            free(back);
        }
    }
}

/* A diffusing front: what a simulation's doubles look like (smooth behind the front, where
 * neighbours share their high bytes; zero ahead of it). */
static double *smooth(size_t count)
{
    double *d = malloc(count * sizeof *d);
    for (size_t i = 0; i < count; i++)
        d[i] =
            i < count / 2 ? exp(-(double)i / 20000.0) * (1.0 + 0.01 * sin((double)i / 97.0)) : 0.0;
    return d;
}

static void test_codecs_round_trip(void **state)
{
    (void)state;
    size_t count = 1 << 17;
    size_t n = count * sizeof(double) + 3; /* a tail that is not a whole element */
    uint8_t *src = malloc(n);
    double *d = smooth(count);
    memcpy(src, d, count * sizeof *d);
    memcpy(src + count * sizeof *d, "end", 3);
    size_t wire[RFS_CODEC_LAST + 1] = {0};
    for (unsigned codec = RFS_CODEC_LZ4; codec <= RFS_CODEC_LAST; codec++) {
        assert_true(rfs_codec_known(codec));
        size_t cap = rfs_codec_bound(codec, n);
        uint8_t *dst = malloc(cap), *back = malloc(n);
        size_t c = rfs_codec_compress(codec, 1, dst, cap, src, n);
        assert_true(c > 0 && c < n);
        wire[codec] = c;
        memset(back, 0xEE, n);
        assert_int_equal(rfs_codec_decompress(codec, back, n, dst, c), RFS_OK);
        assert_memory_equal(back, src, n);
        /* a declared size the stream does not have, and a truncated stream */
        assert_int_equal(rfs_codec_decompress(codec, back, n - 8, dst, c), RFS_E_PROTO);
        assert_non_null(
            strstr(rfs_last_error(),
                   codec == RFS_CODEC_LZ4 || codec == RFS_CODEC_LZ4_SHUF ? "lz4" : "zstd"));
        assert_int_equal(rfs_codec_decompress(codec, back, n, dst, c / 2), RFS_E_PROTO);
        free(dst);
        free(back);
    }
    assert_false(rfs_codec_known(0));
    assert_false(rfs_codec_known(RFS_CODEC_LAST + 1));
    /* the point of the shuffle: lz4 does better on the byte planes of smooth doubles */
    assert_true(wire[RFS_CODEC_LZ4_SHUF] < wire[RFS_CODEC_LZ4]);
    assert_string_equal(rfs_codec_name(RFS_CODEC_ZSTD_SHUF), "zstd+shuffle");
    free(src);
    free(d);
}

static void test_mode_spelling(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        unsigned mode;
        int level;
        const char *name;
    } ok[] = {
        {"auto", RFS_Z_AUTO, 1, "auto"},
        {"none", RFS_Z_NONE, 1, "none"},
        {"lz4", RFS_Z_LZ4, 1, "lz4"},
        {"zstd:7", RFS_Z_ZSTD, 7, "zstd:7"},
        {"lz4+shuffle", RFS_Z_LZ4_SHUF, 1, "lz4+shuffle"},
        {"zstd+shuffle", RFS_Z_ZSTD_SHUF, 1, "zstd+shuffle"},
        {"zstd:19+shuffle", RFS_Z_ZSTD_SHUF, 19, "zstd:19+shuffle"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        unsigned mode;
        int level;
        char name[32];
        assert_int_equal(rfs_zmode_parse(ok[i].in, &mode, &level), RFS_OK);
        assert_int_equal(mode, ok[i].mode);
        assert_int_equal(level, ok[i].level);
        rfs_zmode_name(mode, level, name, sizeof name);
        assert_string_equal(name, ok[i].name);
    }
    static const char *bad[] = {"+shuffle",
                                "lz4+",
                                "shuffle",
                                "zstd:0+shuffle",
                                "zstd:+shuffle",
                                "auto+shuffle",
                                "none+shuffle",
                                "lz4+shuffle+shuffle",
                                "zstd:123456789+shuffle",
                                "lz4 +shuffle"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned mode;
        int level;
        assert_int_equal(rfs_zmode_parse(bad[i], &mode, &level), RFS_E_INVAL);
    }
}

/* A fixed shuffled codec the receiver does not take falls back to its plain codec. */
static void test_fixed_shuffle_falls_back(void **state)
{
    (void)state;
    size_t count = 1 << 15;
    double *d = smooth(count);
    rfs_zstate *z = rfs_zstate_new(RFS_Z_LZ4_SHUF, 1);
    rfs_packed pk;
    rfs_zstate_pack(z, 1u << RFS_CODEC_LZ4 | 1u << RFS_CODEC_ZSTD, 1e6, d, count * sizeof *d, &pk);
    assert_int_equal(pk.codec, RFS_CODEC_LZ4);
    rfs_zstate_pack(z, 1u << RFS_CODEC_LZ4 | 1u << RFS_CODEC_LZ4_SHUF, 1e6, d, count * sizeof *d,
                    &pk);
    assert_int_equal(pk.codec, RFS_CODEC_LZ4_SHUF);
    rfs_zstate_free(z);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_planes_match_reference),
        cmocka_unit_test(test_codecs_round_trip),
        cmocka_unit_test(test_mode_spelling),
        cmocka_unit_test(test_fixed_shuffle_falls_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
