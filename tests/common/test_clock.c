/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* common/clock.c: deadlines on the monotonic clock and condition variables that wait on it.
 * No test sleeps: deadlines are checked against clock readings taken around them, and waits
 * are on deadlines already past. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "common/clock.h"

static int64_t ns_of(struct timespec ts)
{
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ns_of(ts);
}

static void test_deadline_at_is_normalised(void **state)
{
    struct timespec ts = rfs_deadline_at(3 * 1000000000LL + 999999999);
    assert_int_equal(ts.tv_sec, 3);
    assert_int_equal(ts.tv_nsec, 999999999);
    ts = rfs_deadline_at(-5);
    assert_int_equal(ts.tv_sec, 0);
    assert_int_equal(ts.tv_nsec, 0);
}

/* The deadline is ms after a monotonic reading taken between the two around the call. */
static void test_deadline_ms_is_monotonic(void **state)
{
    int64_t before = mono_ns();
    struct timespec ts = rfs_deadline_ms(1500);
    int64_t after = mono_ns();
    int64_t at = ns_of(ts);
    assert_true(at >= before + 1500 * 1000000LL);
    assert_true(at <= after + 1500 * 1000000LL);
    assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
    /* rfs_now_ns reads the same clock */
    int64_t now = rfs_now_ns();
    assert_true(now >= before && now <= mono_ns());
}

/* "Never" saturates instead of wrapping into the past; a negative wait is now. */
static void test_deadline_ms_extremes(void **state)
{
    struct timespec far = rfs_deadline_ms(INT64_MAX);
    assert_int_equal(ns_of(far), INT64_MAX);
    int64_t before = mono_ns();
    int64_t at = ns_of(rfs_deadline_ms(-1000));
    assert_true(at >= before && at <= mono_ns());
}

/* A monotonic deadline already past ends the wait at once. */
static void test_timedwait_past_deadline(void **state)
{
    pthread_cond_t cv;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    assert_int_equal(rfs_cond_init_monotonic(&cv), 0);
    struct timespec ts = rfs_deadline_at(rfs_now_ns() - 1);
    pthread_mutex_lock(&mu);
    assert_int_equal(pthread_cond_timedwait(&cv, &mu, &ts), ETIMEDOUT);
    pthread_mutex_unlock(&mu);
    pthread_cond_destroy(&cv);
}

/* A deadline an hour ahead on the monotonic clock (uptime + 1 h) is decades past on the wall
 * clock (1970 + uptime): a variable on the wall clock returns ETIMEDOUT at once, one on the
 * monotonic clock waits until a second thread wakes it. */
typedef struct waker {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int waiting, woken;
} waker;

static void *wake_main(void *arg)
{
    waker *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->waiting)
        pthread_cond_wait(&w->cv, &w->mu); /* the waiter holds mu until it waits */
    w->woken = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void test_cond_waits_on_monotonic_clock(void **state)
{
    waker w = {.mu = PTHREAD_MUTEX_INITIALIZER};
    assert_int_equal(rfs_cond_init_monotonic(&w.cv), 0);
    pthread_t th;
    pthread_mutex_lock(&w.mu);
    assert_int_equal(pthread_create(&th, NULL, wake_main, &w), 0);
    struct timespec ts = rfs_deadline_ms(3600 * 1000);
    int rc = 0;
    w.waiting = 1;
    pthread_cond_broadcast(&w.cv);
    while (!w.woken && rc == 0)
        rc = pthread_cond_timedwait(&w.cv, &w.mu, &ts);
    pthread_mutex_unlock(&w.mu);
    pthread_join(th, NULL);
    assert_int_equal(rc, 0);
    assert_true(w.woken);
    pthread_cond_destroy(&w.cv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deadline_at_is_normalised),
        cmocka_unit_test(test_deadline_ms_is_monotonic),
        cmocka_unit_test(test_deadline_ms_extremes),
        cmocka_unit_test(test_timedwait_past_deadline),
        cmocka_unit_test(test_cond_waits_on_monotonic_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
