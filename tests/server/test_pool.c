/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The worker pool's fair scheduling (server/pool.c) and the per-address counters
 * (server/peraddr.c). Work items block on a gate the test opens, so "running at once" is
 * observed exactly, without timing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>

#include "peraddr.h"
#include "pool.h"

typedef struct item {
    rfsd_work work;
    rfsd_pool *pool;
    rfsd_lane *lane;
    int tag;
} item;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int gate_open;
static int running[2], started[2], max_running[2];

static void run_item(rfsd_work *w)
{
    item *it = (item *)w;
    pthread_mutex_lock(&mu);
    started[it->tag]++;
    if (++running[it->tag] > max_running[it->tag])
        max_running[it->tag] = running[it->tag];
    pthread_cond_broadcast(&cv);
    while (!gate_open && it->tag == 0) /* lane 0's items hold their worker until released */
        pthread_cond_wait(&cv, &mu);
    running[it->tag]--;
    pthread_mutex_unlock(&mu);
    rfsd_pool_done(it->pool, it->lane);
}

static void reset(void)
{
    gate_open = 0;
    for (int i = 0; i < 2; i++)
        running[i] = started[i] = max_running[i] = 0;
}

/* Waits until lane `tag` has started n items (the pool makes progress on its own). */
static void wait_started(int tag, int n)
{
    pthread_mutex_lock(&mu);
    while (started[tag] < n)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

static void open_gate(void)
{
    pthread_mutex_lock(&mu);
    gate_open = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void submit(rfsd_pool *p, rfsd_lane *l, item *it, int tag)
{
    it->work.run = run_item;
    it->pool = p;
    it->lane = l;
    it->tag = tag;
    rfsd_pool_submit(p, l, &it->work);
}

/* A lane never runs more than cap items at once, and another lane's item gets a worker while
 * the first lane still has items waiting. */
static void test_cap_and_newcomer(void **st)
{
    (void)st;
    reset();
    rfsd_pool *p;
    assert_int_equal(rfsd_pool_start(16, 3, &p), 0);
    rfsd_lane a = {0}, b = {0};
    item ia[20], ib[1];
    for (int i = 0; i < 20; i++)
        submit(p, &a, &ia[i], 0);
    wait_started(0, 3);
    submit(p, &b, &ib[0], 1);
    wait_started(1, 1); /* would hang if b waited behind a's queue */
    pthread_mutex_lock(&mu);
    assert_int_equal(max_running[0], 3);
    assert_int_equal(started[0], 3);
    pthread_mutex_unlock(&mu);
    open_gate();
    wait_started(0, 20);
    rfsd_pool_stop(p);
    assert_int_equal(max_running[0], 3);
}

/* With no cap in the way, a busy lane still leaves the pool's reserve (an eighth, here 2 of
 * 16) to lanes with nothing running. */
static void test_reserve_for_idle_lanes(void **st)
{
    (void)st;
    reset();
    rfsd_pool *p;
    assert_int_equal(rfsd_pool_start(16, 16, &p), 0);
    rfsd_lane a = {0}, b = {0};
    item ia[30], ib[1];
    for (int i = 0; i < 30; i++)
        submit(p, &a, &ia[i], 0);
    wait_started(0, 14);
    submit(p, &b, &ib[0], 1);
    wait_started(1, 1);
    pthread_mutex_lock(&mu);
    assert_int_equal(started[0], 14);
    pthread_mutex_unlock(&mu);
    open_gate();
    wait_started(0, 30);
    rfsd_pool_stop(p);
}

static void test_per_address_counts(void **st)
{
    (void)st;
    unsigned n;
    rfsd_addr *a1 = rfsd_addr_connect("10.0.0.1:5000", 2, &n);
    rfsd_addr *a2 = rfsd_addr_connect("10.0.0.1:5001", 2, &n);
    assert_non_null(a1);
    assert_ptr_equal(a1, a2);
    assert_null(rfsd_addr_connect("10.0.0.1:5002", 2, &n));
    assert_int_equal(n, 2);
    rfsd_addr *v6 = rfsd_addr_connect("[::1]:7000", 2, &n); /* another address */
    assert_non_null(v6);
    assert_string_equal(rfsd_addr_name(v6), "::1");
    assert_string_equal(rfsd_addr_name(a1), "10.0.0.1");
    assert_int_equal(rfsd_addr_open(a1, 2), 1);
    assert_int_equal(rfsd_addr_open(a2, 2), 1);
    assert_int_equal(rfsd_addr_open(a1, 2), 0);
    rfsd_addr_close(a1);
    assert_int_equal(rfsd_addr_open(a2, 2), 1);
    rfsd_addr_close(a1);
    rfsd_addr_close(a1);
    rfsd_addr_disconnect(a2);
    assert_non_null(a2 = rfsd_addr_connect("10.0.0.1:5003", 2, &n));
    rfsd_addr_disconnect(a1);
    rfsd_addr_disconnect(a2);
    rfsd_addr_disconnect(v6);
    /* every connection gone: the entries are free for other addresses */
    assert_non_null(a1 = rfsd_addr_connect("10.0.0.9:1", 1, &n));
    assert_int_equal(n, 0);
    rfsd_addr_disconnect(a1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap_and_newcomer),
        cmocka_unit_test(test_reserve_for_idle_lanes),
        cmocka_unit_test(test_per_address_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
