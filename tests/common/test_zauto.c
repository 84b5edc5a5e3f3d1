/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* common/zauto.c's auto decision: rfs_zauto_pick with fixed estimates (the pipeline's slowest
 * stage decides, a change needs a clear gain), and through rfs_zstate_pack as the senders call it: random bytes
 * stay raw and are looked at less and less; a smooth field on a slow link goes out with the
 * codec of the best ratio, and keeps it frame after frame; a link faster than any codec keeps
 * auto off; a link that slows down turns it on. Speeds are measured, so each case is set where
 * the outcome does not depend on how fast this machine compresses (a slow link makes the
 * link the slowest stage of every codec's pipeline; a huge one makes it none). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/compress.h"
#include "common/zauto.h"

#define FRAME ((size_t)1 << 20)
#define ALL_CODECS                                                           \
    (1u << RFS_CODEC_LZ4 | 1u << RFS_CODEC_ZSTD | 1u << RFS_CODEC_LZ4_SHUF | \
     1u << RFS_CODEC_ZSTD_SHUF)

/* What a simulation's doubles look like: a diffusing front, smooth behind it (neighbours share
 * their high bytes), zero ahead of it. */
static void *smooth_frame(void)
{
    size_t count = FRAME / sizeof(double);
    double *d = malloc(FRAME);
    assert_non_null(d);
    for (size_t i = 0; i < count; i++)
        d[i] =
            i < count / 2 ? exp(-(double)i / 40000.0) * (1.0 + 0.01 * sin((double)i / 97.0)) : 0.0;
    return d;
}

static void *random_frame(void)
{
    uint64_t *w = malloc(FRAME), x = 0x9e3779b97f4a7c15u;
    assert_non_null(w);
    for (size_t i = 0; i < FRAME / 8; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        w[i] = x;
    }
    return w;
}

/* Packs `frames` copies of src at link rate B; returns the codecs chosen, as a bit set. */
static unsigned pack_frames(rfs_zstate *z, const void *src, int frames, double B)
{
    unsigned seen = 0;
    for (int i = 0; i < frames; i++) {
        rfs_packed pk;
        rfs_zstate_pack(z, ALL_CODECS, B, src, FRAME, &pk);
        seen |= 1u << pk.codec;
        if (pk.codec) {
            uint8_t *back = malloc(FRAME);
            assert_non_null(back);
            assert_int_equal(rfs_codec_decompress(pk.codec, back, FRAME, pk.data, pk.len), 0);
            assert_memory_equal(back, src, FRAME);
            free(back);
        }
    }
    return seen;
}

static void test_random_stays_raw(void **state)
{
    (void)state;
    void *r = random_frame();
    rfs_zstate *z = rfs_zstate_new(RFS_Z_AUTO, 1);
    assert_int_equal(pack_frames(z, r, 64, 1e6), 1u); /* codec 0 only */
    rfs_zstats st;
    rfs_zstate_stats(z, &st);
    assert_int_equal(st.packed, 0);
    assert_int_equal(st.choice, 0);
    /* sampled at frames 0, 16 and 48 (intervals doubling from 8 MiB); the next is 64 MiB on */
    assert_false(rfs_zstate_wants(z, FRAME));
    rfs_zstate_free(z);
    free(r);
}

static void test_smooth_on_a_slow_link_takes_the_best_ratio_and_keeps_it(void **state)
{
    (void)state;
    void *d = smooth_frame();
    /* the ratios each codec gets on this frame: on a 1 MB/s link the link is every pipeline's
     * slowest stage, so the best ratio carries the most */
    double best = 0;
    for (unsigned k = RFS_CODEC_LZ4; k <= RFS_CODEC_ZSTD_SHUF; k++) {
        size_t cap = rfs_codec_bound(k, FRAME);
        void *out = malloc(cap);
        assert_non_null(out);
        size_t c = rfs_codec_compress(k, 1, out, cap, d, FRAME);
        if (c && (double)FRAME / (double)c > best)
            best = (double)FRAME / (double)c;
        free(out);
    }
    assert_true(best > 2.0);
    rfs_zstate *z = rfs_zstate_new(RFS_Z_AUTO, 1);
    pack_frames(z, d, 3, 1e6);
    rfs_zstats st;
    rfs_zstate_stats(z, &st);
    assert_true(st.packed >= 2); /* on from the first sampled frame or the next */
    unsigned first = st.choice;
    assert_true(first != 0);
    /* the chosen codec's ratio, or one within the 10% a change of choice needs */
    assert_true((double)st.raw_bytes / (double)st.wire_bytes > best / 1.15);
    /* 100 more frames (every other codec resampled every 64 MiB): one codec throughout */
    unsigned seen = pack_frames(z, d, 100, 1e6);
    assert_int_equal(seen, 1u << first);
    rfs_zstate_free(z);
    free(d);
}

static void test_fast_link_keeps_it_off_and_a_slow_one_turns_it_on(void **state)
{
    (void)state;
    void *d = smooth_frame();
    rfs_zstate *z = rfs_zstate_new(RFS_Z_AUTO, 1);
    /* 1 TB/s: no codec's compression keeps up */
    assert_int_equal(pack_frames(z, d, 16, 1e12), 1u);
    rfs_zstats st;
    rfs_zstate_stats(z, &st);
    assert_int_equal(st.packed, 0);
    /* the link turns slow (another transfer took it): the next sample turns compression on */
    unsigned seen = pack_frames(z, d, 40, 1e6);
    assert_true(seen & ~1u);
    rfs_zstate_stats(z, &st);
    assert_true(st.choice != 0);
    rfs_zstate_free(z);
    free(d);
}

/* Estimates as the jacobi3d field gave them on this testbed's client (per thread, with four
 * streams sharing two cores): zstd compresses 3.67x at 400 MB/s, lz4 after the shuffle 2.35x
 * at 2000 MB/s, zstd after it 2.38x at 1000 MB/s; all decompress faster than the link. */
static void jacobi_estimates(rfs_zest e[RFS_CODEC_LAST + 1])
{
    memset(e, 0, sizeof(rfs_zest) * (RFS_CODEC_LAST + 1));
    e[RFS_CODEC_ZSTD] = (rfs_zest){1, 3.67, 400e6, 1500e6};
    e[RFS_CODEC_LZ4_SHUF] = (rfs_zest){1, 2.35, 2000e6, 3000e6};
    e[RFS_CODEC_LZ4] = (rfs_zest){1, 2.10, 640e6, 3000e6};
    e[RFS_CODEC_ZSTD_SHUF] = (rfs_zest){1, 2.38, 1000e6, 2000e6};
}

static void test_pick_by_the_pipelines_slowest_stage(void **state)
{
    (void)state;
    rfs_zest e[RFS_CODEC_LAST + 1];
    jacobi_estimates(e);
    /* 120 MB/s (a 1 Gbit/s link on one stream): zstd carries min(400, 3.67 x 120 = 440) = 400
     * MB/s, lz4+shuffle min(2000, 282) = 282. The serial sum 1/Sc + 1/(rB) + 1/Sd ranks them
     * the other way round (4.6 ns against 4.9 ns a byte), which is what made auto flip. */
    assert_int_equal(rfs_zauto_pick(e, ALL_CODECS, 0, 120e6), RFS_CODEC_ZSTD);
    assert_int_equal(rfs_zauto_pick(e, ALL_CODECS, RFS_CODEC_LZ4_SHUF, 120e6), RFS_CODEC_ZSTD);
    /* 30 MB/s (a quarter of it): the link is every pipeline's slowest stage: best ratio */
    assert_int_equal(rfs_zauto_pick(e, ALL_CODECS, 0, 30e6), RFS_CODEC_ZSTD);
    /* 600 MB/s: zstd's compression is the bottleneck (400), zstd+shuffle's too (1000),
     * lz4+shuffle carries 1410 */
    assert_int_equal(rfs_zauto_pick(e, ALL_CODECS, RFS_CODEC_ZSTD, 600e6), RFS_CODEC_LZ4_SHUF);
    /* a receiver without zstd: the best of what it takes */
    assert_int_equal(rfs_zauto_pick(e, 1u << RFS_CODEC_LZ4 | 1u << RFS_CODEC_LZ4_SHUF, 0, 120e6),
                     RFS_CODEC_LZ4_SHUF);
    /* 5 GB/s: nothing keeps up with the link; no estimate of it: raw */
    assert_int_equal(rfs_zauto_pick(e, ALL_CODECS, RFS_CODEC_ZSTD, 5e9), 0);
    assert_int_equal(rfs_zauto_pick(e, ALL_CODECS, RFS_CODEC_ZSTD, 0), 0);
}

static void test_pick_needs_a_clear_gain_to_change(void **state)
{
    (void)state;
    rfs_zest e[RFS_CODEC_LAST + 1];
    jacobi_estimates(e);
    /* at 160 MB/s zstd carries 400, zstd+shuffle 381: within 10%, whichever is on stays on */
    assert_int_equal(rfs_zauto_pick(e, ALL_CODECS, RFS_CODEC_ZSTD_SHUF, 160e6),
                     RFS_CODEC_ZSTD_SHUF);
    assert_int_equal(rfs_zauto_pick(e, ALL_CODECS, RFS_CODEC_ZSTD, 160e6), RFS_CODEC_ZSTD);
    /* at 120 MB/s zstd+shuffle carries 286: zstd's 400 is a clear gain */
    assert_int_equal(rfs_zauto_pick(e, ALL_CODECS, RFS_CODEC_ZSTD_SHUF, 120e6), RFS_CODEC_ZSTD);
    /* switching on needs 10% over raw; staying on only more than raw */
    rfs_zest one[RFS_CODEC_LAST + 1] = {0};
    one[RFS_CODEC_LZ4] = (rfs_zest){1, 1.05, 1000e6, 3000e6};
    assert_int_equal(rfs_zauto_pick(one, ALL_CODECS, 0, 100e6), 0);
    assert_int_equal(rfs_zauto_pick(one, ALL_CODECS, RFS_CODEC_LZ4, 100e6), RFS_CODEC_LZ4);
    one[RFS_CODEC_LZ4].ratio = 0.99; /* the data turned incompressible */
    assert_int_equal(rfs_zauto_pick(one, ALL_CODECS, RFS_CODEC_LZ4, 100e6), 0);
    /* a codec slower than the link is dropped at once, even with a good ratio */
    one[RFS_CODEC_LZ4] = (rfs_zest){1, 4.0, 90e6, 3000e6};
    assert_int_equal(rfs_zauto_pick(one, ALL_CODECS, RFS_CODEC_LZ4, 100e6), 0);
    /* decompression is a stage too */
    one[RFS_CODEC_LZ4] = (rfs_zest){1, 4.0, 1000e6, 80e6};
    assert_int_equal(rfs_zauto_pick(one, ALL_CODECS, 0, 100e6), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_stays_raw),
        cmocka_unit_test(test_smooth_on_a_slow_link_takes_the_best_ratio_and_keeps_it),
        cmocka_unit_test(test_fast_link_keeps_it_off_and_a_slow_one_turns_it_on),
        cmocka_unit_test(test_pick_by_the_pipelines_slowest_stage),
        cmocka_unit_test(test_pick_needs_a_clear_gain_to_change),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
