/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Counters and byte-range locks shared per file identity (server/fileid.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>

#include "fileid.h"
#include "rfs/rfs.h"

static int A, B; /* two lock owners: their addresses are the identities */

static void test_same_identity_same_entry(void **st)
{
    (void)st;
    rfsd_fileid *f1 = rfsd_fileid_get(1, 42, -1), *f2 = rfsd_fileid_get(1, 42, -1);
    rfsd_fileid *g = rfsd_fileid_get(2, 42, -1);
    assert_ptr_equal(f1, f2);
    assert_ptr_not_equal(f1, g);
    int64_t old;
    assert_int_equal(rfsd_counter_op(f1, 1, 0, 5, &old), RFS_OK);
    assert_int_equal(old, 0);
    assert_int_equal(rfsd_counter_op(f2, 1, 0, -2, &old), RFS_OK);
    assert_int_equal(old, 5);
    assert_int_equal(rfsd_counter_op(g, 1, 0, 0, &old), RFS_OK);
    assert_int_equal(old, 0);
    assert_int_equal(rfsd_counter_op(f1, 1, 1, INT64_MAX, &old), RFS_OK);
    assert_int_equal(old, 3);
    assert_int_equal(rfsd_counter_op(f1, 1, 0, 1, &old), RFS_OK); /* wraps, no UB */
    assert_int_equal(rfsd_counter_op(f1, 1, 0, 0, &old), RFS_OK);
    assert_int_equal(old, INT64_MIN);
    rfsd_fileid_put(f1);
    rfsd_fileid_put(f2);
    rfsd_fileid_put(g);
    /* the last put freed the counters */
    rfsd_fileid *f3 = rfsd_fileid_get(1, 42, -1);
    assert_int_equal(rfsd_counter_op(f3, 1, 0, 0, &old), RFS_OK);
    assert_int_equal(old, 0);
    rfsd_fileid_put(f3);
}

static void test_counter_limit(void **st)
{
    (void)st;
    rfsd_fileid *f = rfsd_fileid_get(3, 3, -1);
    int64_t old;
    for (uint32_t k = 0; k < RFSD_MAX_COUNTERS_PER_FILE; k++)
        assert_int_equal(rfsd_counter_op(f, k, 0, 1, &old), RFS_OK);
    assert_int_equal(rfsd_counter_op(f, 99999, 0, 1, &old), RFS_E_NOSPC);
    rfsd_fileid_put(f);
}

static void test_lock_conflicts(void **st)
{
    (void)st;
    rfsd_lock_set_max_waiters(4);
    rfsd_fileid *f = rfsd_fileid_get(4, 4, -1);
    assert_int_equal(rfsd_lock(f, &A, 0, 100, RFS_LOCK_SHARED, 0, NULL, NULL), RFS_OK);
    assert_int_equal(rfsd_lock(f, &B, 50, 100, RFS_LOCK_SHARED, 0, NULL, NULL), RFS_OK);
    assert_int_equal(rfsd_lock(f, &B, 99, 1, RFS_LOCK_EXCL, 0, NULL, NULL), RFS_E_BUSY);
    assert_int_equal(rfsd_lock(f, &A, 0, 100, RFS_LOCK_EXCL, 0, NULL, NULL), RFS_E_BUSY);
    assert_int_equal(rfsd_lock(f, &B, 150, 0, RFS_LOCK_EXCL, 0, NULL, NULL),
                     RFS_OK); /* to the end */
    assert_int_equal(rfsd_lock(f, &A, UINT64_MAX - 5, 1, RFS_LOCK_SHARED, 0, NULL, NULL),
                     RFS_E_BUSY);
    assert_int_equal(rfsd_lock(f, &A, 0, 1, 7, 0, NULL, NULL), RFS_E_INVAL);
    /* A's own locks never conflict with A */
    assert_int_equal(rfsd_lock(f, &A, 0, 10, RFS_LOCK_EXCL, 0, NULL, NULL), RFS_OK);
    rfsd_unlock_all(f, &B);
    assert_int_equal(rfsd_lock(f, &B, 150, 10, RFS_LOCK_EXCL, 0, NULL, NULL), RFS_OK);
    /* unlocking the middle of a range splits it */
    assert_int_equal(rfsd_unlock(f, &A, 20, 10), RFS_OK);
    assert_int_equal(rfsd_lock(f, &B, 20, 10, RFS_LOCK_EXCL, 0, NULL, NULL), RFS_OK);
    assert_int_equal(rfsd_lock(f, &B, 19, 1, RFS_LOCK_SHARED, 0, NULL, NULL),
                     RFS_OK); /* shared+shared */
    assert_int_equal(rfsd_lock(f, &B, 5, 1, RFS_LOCK_SHARED, 0, NULL, NULL),
                     RFS_E_BUSY); /* A excl [0,10) */
    rfsd_unlock_all(f, &A);
    rfsd_unlock_all(f, &B);
    rfsd_fileid_put(f);
}

static void test_timed_wait_is_bounded(void **st)
{
    (void)st;
    rfsd_lock_set_max_waiters(4);
    rfsd_fileid *f = rfsd_fileid_get(5, 5, -1);
    assert_int_equal(rfsd_lock(f, &A, 0, 10, RFS_LOCK_EXCL, 0, NULL, NULL), RFS_OK);
    assert_int_equal(rfsd_lock(f, &B, 0, 10, RFS_LOCK_EXCL, 50, NULL, NULL), RFS_E_BUSY);
    atomic_int cancelled = 1;
    assert_int_equal(rfsd_lock(f, &B, 0, 10, RFS_LOCK_EXCL, 30000, &cancelled, NULL), RFS_E_BUSY);
    rfsd_unlock_all(f, &A);
    rfsd_fileid_put(f);
}

typedef struct waiter {
    rfsd_fileid *f;
    int rc;
} waiter;

static void *wait_for_lock(void *arg)
{
    waiter *w = arg;
    w->rc = rfsd_lock(w->f, &B, 0, 10, RFS_LOCK_EXCL, 30000, NULL, NULL);
    return NULL;
}

static void test_waiter_granted_on_unlock(void **st)
{
    (void)st;
    rfsd_lock_set_max_waiters(4);
    rfsd_fileid *f = rfsd_fileid_get(6, 6, -1);
    assert_int_equal(rfsd_lock(f, &A, 0, 10, RFS_LOCK_EXCL, 0, NULL, NULL), RFS_OK);
    waiter w = {f, -999};
    pthread_t t;
    pthread_create(&t, NULL, wait_for_lock, &w);
    /* whether the waiter blocks before or after this unlock, it must end up holding the lock */
    assert_int_equal(rfsd_unlock(f, &A, 0, 10), RFS_OK);
    pthread_join(t, NULL);
    assert_int_equal(w.rc, RFS_OK);
    assert_int_equal(rfsd_lock(f, &A, 0, 1, RFS_LOCK_SHARED, 0, NULL, NULL), RFS_E_BUSY);
    rfsd_unlock_all(f, &B);
    rfsd_fileid_put(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_identity_same_entry),
        cmocka_unit_test(test_counter_limit),
        cmocka_unit_test(test_lock_conflicts),
        cmocka_unit_test(test_timed_wait_is_bounded),
        cmocka_unit_test(test_waiter_granted_on_unlock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
