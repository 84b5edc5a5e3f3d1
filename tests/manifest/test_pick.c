/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Which replica a read of a replicated column tries first (manifest/replica_pick.c): the one
 * whose server's measured round trip is clearly lowest, the slot order otherwise; replicas
 * given up, not open or incomplete are never chosen. A deterministic test of a slow replica
 * over real connections needs a slow path on loopback, which this machine cannot give
 * without root namespaces: the choice is tested here, over the state open.c leaves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "manifest/mf_internal.h"

#define NC MF_NOT_CANDIDATE
#define UNK MF_RTT_UNKNOWN

static void test_clearly_faster_wins(void **state)
{
    (void)state;
    double a[] = {40.0, 5.0};
    assert_int_equal(mf_fastest_replica(a, 2), 1);
    double b[] = {5.0, 40.0, 1.0};
    assert_int_equal(mf_fastest_replica(b, 3), 2);
    double c[] = {5.0, 40.0};
    assert_int_equal(mf_fastest_replica(c, 2), 0);
}

static void test_noise_keeps_slot_order(void **state)
{
    (void)state;
    double loopback[] = {0.05, 0.02}; /* 2.5x, but 0.03 ms apart: noise */
    assert_int_equal(mf_fastest_replica(loopback, 2), 0);
    double close[] = {10.0, 9.0}; /* 1 ms apart, but only 1.11x */
    assert_int_equal(mf_fastest_replica(close, 2), 0);
    double equal[] = {3.0, 3.0, 3.0};
    assert_int_equal(mf_fastest_replica(equal, 3), 0);
}

static void test_unknown_and_excluded(void **state)
{
    (void)state;
    double unknown_first[] = {UNK, 7.0};
    assert_int_equal(mf_fastest_replica(unknown_first, 2), 1);
    double unknown_later[] = {7.0, UNK};
    assert_int_equal(mf_fastest_replica(unknown_later, 2), 0);
    double excluded[] = {NC, 30.0, 2.0};
    assert_int_equal(mf_fastest_replica(excluded, 3), 2);
    double fast_excluded[] = {30.0, NC};
    assert_int_equal(mf_fastest_replica(fast_excluded, 2), 0);
    double none[] = {NC, NC};
    assert_int_equal(mf_fastest_replica(none, 2), 0);
    double all_unknown[] = {UNK, UNK};
    assert_int_equal(mf_fastest_replica(all_unknown, 2), 0);
}

/* One column, three replicas (objects 0..2), as open.c leaves them. */
static void test_read_start_skips_unusable(void **state)
{
    (void)state;
    uint32_t slots[] = {0, 1, 2};
    rfsm_object objs[3] = {{0}};
    rfsm_extent e = {.stripe_count = 1, .replicas = 3, .objects = slots};
    rfsm m = {.nobjects = 3, .objects = objs, .extents = &e, .nextents = 1};
    mf_obj o[3] = {{0}};
    rfs_io dummy;
    mf_file f = {.m = &m, .objs = o, .mu = PTHREAD_MUTEX_INITIALIZER};
    for (int i = 0; i < 3; i++)
        o[i].io = &dummy;
    o[0].rtt_ms = 50.0;
    o[1].rtt_ms = 20.0;
    o[2].rtt_ms = 2.0;
    assert_int_equal(mf_read_start(&f, &e, 0), 2);
    o[2].gone = 1; /* given up: the next fastest */
    assert_int_equal(mf_read_start(&f, &e, 0), 1);
    objs[1].flags = RFSM_OBJ_STALE; /* incomplete: not a first choice */
    assert_int_equal(mf_read_start(&f, &e, 0), 0);
    o[0].io = NULL; /* never opened either: nothing to prefer, slot order */
    assert_int_equal(mf_read_start(&f, &e, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clearly_faster_wins),
        cmocka_unit_test(test_noise_keeps_slot_order),
        cmocka_unit_test(test_unknown_and_excluded),
        cmocka_unit_test(test_read_start_skips_unusable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
