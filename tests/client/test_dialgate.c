/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* client/dialgate.c: what a file's first connection tells the dials beside it. The waits
 * must end in every outcome of the first dial, or an open would hang. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "client/client.h"

static void test_rtt_then_hello(void **state)
{
    (void)state;
    rfs_dial_gate g;
    rfs_gate_init(&g);
    rfs_gate_tell_rtt(&g, 50.5);
    rfs_gate_tell_rtt(&g, 1.0); /* only the first report counts */
    assert_true(rfs_gate_wait_rtt(&g) == 50.5);
    rfs_gate_tell_hello(&g, RFS_FEAT_XSTREAM, 0);
    uint32_t f = 0;
    assert_int_equal(rfs_gate_wait_hello(&g, &f), 0);
    assert_int_equal(f, RFS_FEAT_XSTREAM);
    rfs_gate_destroy(&g);
}

static void test_failure_before_connect_ends_both_waits(void **state)
{
    (void)state;
    rfs_dial_gate g;
    rfs_gate_init(&g);
    rfs_gate_tell_hello(&g, RFS_FEAT_XSTREAM, 1);
    assert_true(rfs_gate_wait_rtt(&g) < 0);
    uint32_t f = 123;
    assert_int_equal(rfs_gate_wait_hello(&g, &f), -1);
    assert_int_equal(f, 0); /* a failed dial's features are never used for the mark */
    rfs_gate_destroy(&g);
}

static void test_done_without_dial_ends_both_waits(void **state)
{
    (void)state;
    rfs_dial_gate g;
    rfs_gate_init(&g);
    rfs_gate_tell_done(&g); /* a pooled connection was found: nothing was dialled */
    assert_true(rfs_gate_wait_rtt(&g) < 0);
    uint32_t f = 7;
    assert_int_equal(rfs_gate_wait_hello(&g, &f), -1);
    assert_int_equal(f, 0);
    rfs_gate_destroy(&g);
}

typedef struct waiter {
    rfs_dial_gate *g;
    int rc;
    uint32_t features;
} waiter;

static void *wait_hello_main(void *arg)
{
    waiter *w = arg;
    w->rc = rfs_gate_wait_hello(w->g, &w->features);
    return NULL;
}

static void test_waiters_woken_by_hello(void **state)
{
    (void)state;
    rfs_dial_gate g;
    rfs_gate_init(&g);
    waiter w[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        w[i] = (waiter){.g = &g, .rc = 99};
        assert_int_equal(pthread_create(&th[i], NULL, wait_hello_main, &w[i]), 0);
    }
    rfs_gate_tell_rtt(&g, 25.0);
    rfs_gate_tell_hello(&g, 0x3ff, 0);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].rc, 0);
        assert_int_equal(w[i].features, 0x3ff);
    }
    rfs_gate_destroy(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rtt_then_hello),
        cmocka_unit_test(test_failure_before_connect_ends_both_waits),
        cmocka_unit_test(test_done_without_dial_ends_both_waits),
        cmocka_unit_test(test_waiters_woken_by_hello),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
