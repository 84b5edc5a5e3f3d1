/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* common/err.c: messages, per-thread last error, wire and errno mappings. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"

static void test_strerror(void **state)
{
    for (int i = 0; i < RFS_ERR_COUNT; i++) {
        const char *m = rfs_strerror(-i);
        assert_non_null(m);
        assert_true(strlen(m) > 0);
        assert_string_not_equal(m, "unknown error");
        for (int j = 0; j < i; j++)
            assert_string_not_equal(m, rfs_strerror(-j));
    }
    assert_string_equal(rfs_strerror(1), "unknown error");
    assert_string_equal(rfs_strerror(-RFS_ERR_COUNT), "unknown error");
    assert_string_equal(rfs_strerror(-1000000), "unknown error");
}

static void test_fail_and_clear(void **state)
{
    assert_int_equal(rfs_fail(RFS_E_NOENT, "%s: %s: no such file", "host:1", "/a"), RFS_E_NOENT);
    assert_string_equal(rfs_last_error(), "host:1: /a: no such file");
    rfs_clear_error();
    assert_string_equal(rfs_last_error(), "");
    /* Over-long messages are truncated, never overflow. */
    char big[5000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    rfs_fail(RFS_E_IO, "%s", big);
    size_t n = strlen(rfs_last_error());
    assert_true(n > 100 && n < sizeof big - 1);
}

static void *other_thread(void *arg)
{
    /* A fresh thread has no message of its own, whatever the main thread set. */
    *(int *)arg = rfs_last_error()[0] == '\0';
    rfs_fail(RFS_E_BUSY, "set in thread");
    return NULL;
}

static void test_thread_local(void **state)
{
    rfs_fail(RFS_E_IO, "main thread message");
    pthread_t t;
    int clean = 0;
    assert_int_equal(pthread_create(&t, NULL, other_thread, &clean), 0);
    pthread_join(t, NULL);
    assert_true(clean);
    assert_string_equal(rfs_last_error(), "main thread message");
}

static void test_wire(void **state)
{
    for (int i = 0; i < RFS_ERR_COUNT; i++)
        assert_int_equal(rfs_err_from_wire(rfs_err_to_wire(-i)), -i);
    assert_int_equal(rfs_err_to_wire(RFS_E_AUTH), 4);
    assert_int_equal(rfs_err_to_wire(5), 0); /* positive values are not errors */
    assert_int_equal(rfs_err_from_wire(RFS_ERR_COUNT), RFS_E_IO);
    assert_int_equal(rfs_err_from_wire(0xFFFFFFFFu), RFS_E_IO);
}

static void test_errno(void **state)
{
    assert_int_equal(rfs_err_from_errno(0), RFS_OK);
    assert_int_equal(rfs_err_from_errno(ENOENT), RFS_E_NOENT);
    assert_int_equal(rfs_err_from_errno(EEXIST), RFS_E_EXIST);
    assert_int_equal(rfs_err_from_errno(EACCES), RFS_E_ACCESS);
    assert_int_equal(rfs_err_from_errno(ELOOP), RFS_E_ACCESS);
    assert_int_equal(rfs_err_from_errno(EXDEV), RFS_E_ACCESS);
    assert_int_equal(rfs_err_from_errno(EROFS), RFS_E_ROFS);
    assert_int_equal(rfs_err_from_errno(EBADF), RFS_E_BADF);
    assert_int_equal(rfs_err_from_errno(ENOSPC), RFS_E_NOSPC);
    assert_int_equal(rfs_err_from_errno(EDQUOT), RFS_E_DQUOT);
    assert_int_equal(rfs_err_from_errno(EISDIR), RFS_E_ISDIR);
    assert_int_equal(rfs_err_from_errno(ENOTDIR), RFS_E_NOTDIR);
    assert_int_equal(rfs_err_from_errno(ENOTEMPTY), RFS_E_NOTEMPTY);
    assert_int_equal(rfs_err_from_errno(EFBIG), RFS_E_FBIG);
    assert_int_equal(rfs_err_from_errno(ETIMEDOUT), RFS_E_TIMEOUT);
    assert_int_equal(rfs_err_from_errno(ECONNREFUSED), RFS_E_CONN);
    assert_int_equal(rfs_err_from_errno(EPIPE), RFS_E_CONN);
    assert_int_equal(rfs_err_from_errno(EIO), RFS_E_IO);
    assert_int_equal(rfs_err_from_errno(12345), RFS_E_IO);
}

/* A saved status survives later calls and comes back whole; the first of several wins. */
static void test_status(void **state)
{
    rfs_status st;
    assert_int_equal(rfs_status_save(&st, rfs_fail(RFS_E_CONN, "srv:1: /f: connection lost")),
                     RFS_E_CONN);
    rfs_fail(RFS_E_IO, "a later call's message");
    assert_int_equal(rfs_status_raise(&st), RFS_E_CONN);
    assert_string_equal(rfs_last_error(), "srv:1: /f: connection lost");

    rfs_status first = {RFS_OK, ""};
    rfs_clear_error();
    assert_int_equal(rfs_status_first(&first, RFS_OK), RFS_OK);
    rfs_fail(RFS_E_NOSPC, "stream 1: no space");
    assert_int_equal(rfs_status_first(&first, RFS_E_NOSPC), RFS_E_NOSPC);
    rfs_fail(RFS_E_CONN, "stream 2: lost");
    assert_int_equal(rfs_status_first(&first, RFS_E_CONN), RFS_E_NOSPC);
    assert_string_equal(first.msg, "stream 1: no space");

    /* A message of the largest size survives a save and a raise uncut. */
    char big[RFS_ERRMSG_MAX + 100];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    rfs_fail(RFS_E_IO, "%s", big);
    rfs_status_save(&st, RFS_E_IO);
    rfs_clear_error();
    rfs_status_raise(&st);
    assert_int_equal(strlen(rfs_last_error()), RFS_ERRMSG_MAX - 1);
}

static void test_fail_cause(void **state)
{
    rfs_fail(RFS_E_CONN, "connection refused");
    assert_int_equal(rfs_fail_cause(RFS_E_CONN, "handshake with %s failed", "h:7"), RFS_E_CONN);
    assert_string_equal(rfs_last_error(), "handshake with h:7 failed: connection refused");
    /* A what that fills the buffer leaves no room for the why, and nothing overflows. */
    char big[RFS_ERRMSG_MAX + 100];
    memset(big, 'w', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    rfs_fail_cause(RFS_E_IO, "%s", big);
    assert_int_equal(strlen(rfs_last_error()), RFS_ERRMSG_MAX - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror),     cmocka_unit_test(test_fail_and_clear),
        cmocka_unit_test(test_thread_local), cmocka_unit_test(test_wire),
        cmocka_unit_test(test_errno),        cmocka_unit_test(test_status),
        cmocka_unit_test(test_fail_cause),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
