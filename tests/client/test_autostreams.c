/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* client/autostreams.c: the rfs_streams=auto decisions, fed with delivered rates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "client/client.h"

/* Feeds one transfer's epochs; returns the streams it ran at the end. */
static int feed(rfs_auto *a, int nconn, const double *rates, int n)
{
    int probing = 0;
    int k = rfs_auto_start(a, nconn, &probing);
    if (!probing)
        return k;
    rfs_auto_probe p;
    rfs_auto_probe_init(&p, k);
    for (int i = 0; i < n && !p.done; i++)
        if (rfs_auto_probe_epoch(a, &p, nconn, rates[i], "t"))
            k = p.k;
    return k;
}

static void test_grows_while_it_pays_then_settles(void **state)
{
    (void)state;
    rfs_auto a;
    rfs_auto_init(&a);
    a.enabled = 1;
    /* warm-up, 1 stream 80 MB/s, warm, 2 give 115, warm, 3 give 118 (< +10%): settle on 2 */
    const double r[] = {10e6, 80e6, 50e6, 115e6, 90e6, 118e6, 118e6};
    assert_int_equal(feed(&a, 8, r, 7), 3);
    assert_int_equal(a.active, 2);
    assert_true(a.settled);
    /* the next transfers start with 2 and do not probe */
    int probing = 1;
    assert_int_equal(rfs_auto_start(&a, 8, &probing), 2);
    assert_false(probing);
    rfs_auto_destroy(&a);
}

static void test_no_gain_from_the_second_stream_keeps_one(void **state)
{
    (void)state;
    rfs_auto a;
    rfs_auto_init(&a);
    a.enabled = 1;
    const double r[] = {1e9, 1e9, 1e9, 1.02e9};
    assert_int_equal(feed(&a, 8, r, 4), 2);
    assert_int_equal(a.active, 1);
    assert_true(a.settled);
    rfs_auto_destroy(&a);
}

static void test_stops_at_the_connections_it_has(void **state)
{
    (void)state;
    rfs_auto a;
    rfs_auto_init(&a);
    a.enabled = 1;
    const double r[] = {0, 10, 0, 20, 0, 40, 0, 80, 0, 160};
    assert_int_equal(feed(&a, 3, r, 10), 3);
    assert_int_equal(a.active, 3);
    assert_true(a.settled);
    rfs_auto_destroy(&a);
}

static void test_a_transfer_that_ends_early_keeps_what_it_learnt(void **state)
{
    (void)state;
    rfs_auto a;
    rfs_auto_init(&a);
    a.enabled = 1;
    const double r1[] = {0, 50e6, 0}; /* ends while stream 2 warms up: not judged */
    assert_int_equal(feed(&a, 8, r1, 3), 2);
    assert_int_equal(a.active, 1);
    assert_false(a.settled);
    const double r2[] = {0, 60e6, 0, 100e6, 0, 101e6}; /* the next one goes on probing */
    assert_int_equal(feed(&a, 8, r2, 6), 3);
    assert_int_equal(a.active, 2);
    rfs_auto_destroy(&a);
}

static void test_settled_files_probe_again_after_a_while(void **state)
{
    (void)state;
    rfs_auto a;
    rfs_auto_init(&a);
    a.enabled = 1;
    a.settled = 1;
    a.active = 2;
    int probing = 0, seen = 0;
    for (int i = 0; i < 100 && !seen; i++) {
        rfs_auto_start(&a, 8, &probing);
        seen = probing;
    }
    assert_true(seen);
    rfs_auto_destroy(&a);
}

static void test_min_rtt_from_environment(void **state)
{
    (void)state;
    unsetenv("RFS_STREAMS_AUTO_MIN_RTT_US");
    assert_int_equal(rfs_auto_min_rtt_us(), 2000);
    setenv("RFS_STREAMS_AUTO_MIN_RTT_US", "0", 1);
    assert_int_equal(rfs_auto_min_rtt_us(), 0);
    setenv("RFS_STREAMS_AUTO_MIN_RTT_US", "junk", 1);
    assert_int_equal(rfs_auto_min_rtt_us(), 2000);
    unsetenv("RFS_STREAMS_AUTO_MIN_RTT_US");
}

/* Short transfers (a collective buffer's four frames, 100 ms each here) probe as a series:
 * epochs of 400 ms are four transfers. One transfer at `mbps` MB/s on the count the file
 * starts it with. */
static int short_transfer(rfs_auto *a, double mbps)
{
    int probing = 0;
    int k = rfs_auto_start(a, 8, &probing);
    if (probing)
        rfs_auto_series(a, k, (uint64_t)(mbps * 1e5), 100000000, 400000000, 8, "t");
    return k;
}

static void test_short_transfers_probe_as_a_series(void **state)
{
    (void)state;
    rfs_auto a;
    rfs_auto_init(&a);
    a.enabled = 1;
    int k = 0;
    for (int i = 0; i < 4; i++) /* the first epoch warms up: not judged */
        k = short_transfer(&a, 10);
    assert_int_equal(k, 1);
    for (int i = 0; i < 4; i++) /* 1 stream: 48 MB/s, then the next ones try 2 */
        k = short_transfer(&a, 48);
    assert_int_equal(k, 1);
    assert_int_equal(a.active, 2);
    for (int i = 0; i < 8; i++) /* warm, then 2 streams give 85: try 3 */
        k = short_transfer(&a, 85);
    assert_int_equal(k, 2);
    assert_int_equal(a.active, 3);
    for (int i = 0; i < 8; i++) /* warm, then 3 give 88 (< +10%): settle on 2 */
        k = short_transfer(&a, 88);
    assert_int_equal(k, 3);
    assert_int_equal(a.active, 2);
    assert_true(a.settled);
    int probing = 1;
    assert_int_equal(rfs_auto_start(&a, 8, &probing), 2);
    assert_false(probing);
    rfs_auto_destroy(&a);
}

static void test_a_series_restarts_when_the_count_changes_under_it(void **state)
{
    (void)state;
    rfs_auto a;
    rfs_auto_init(&a);
    a.enabled = 1;
    for (int i = 0; i < 8; i++)
        short_transfer(&a, 50);
    assert_int_equal(a.active, 2);
    /* a transfer that ran on another count (say 1, from before the change) starts over:
     * its epoch warms up again and nothing is judged from mixed counts */
    rfs_auto_series(&a, 1, 1000, 400000000, 400000000, 8, "t");
    assert_int_equal(a.series.k, 1);
    assert_true(a.series.warming == 0); /* its one epoch was the warm-up */
    assert_int_equal(a.active, 2);
    rfs_auto_destroy(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grows_while_it_pays_then_settles),
        cmocka_unit_test(test_no_gain_from_the_second_stream_keeps_one),
        cmocka_unit_test(test_stops_at_the_connections_it_has),
        cmocka_unit_test(test_a_transfer_that_ends_early_keeps_what_it_learnt),
        cmocka_unit_test(test_settled_files_probe_again_after_a_while),
        cmocka_unit_test(test_min_rtt_from_environment),
        cmocka_unit_test(test_short_transfers_probe_as_a_series),
        cmocka_unit_test(test_a_series_restarts_when_the_count_changes_under_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
