/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The client's newest-version rule (client/versions.c): replies of requests in flight together
 * may arrive in any order, and the box must end with the version of the request the server
 * applied last; a request sent after a version arrived is newer whatever its numbers (a
 * truncation makes a smaller file in the same mtime tick). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "client/client.h"

static void assert_box(rfs_verbox *b, uint64_t size, int64_t mtime)
{
    assert_int_equal(b->known, 1);
    assert_int_equal(b->size, size);
    assert_int_equal(b->mtime_ns, mtime);
}

static void test_sequential_requests_replace(void **state)
{
    (void)state;
    rfs_verbox b;
    rfs_verbox_init(&b);
    uint64_t e = rfs_verbox_epoch(&b);
    rfs_verbox_note(&b, e, 1000, 50); /* OPEN */
    assert_box(&b, 1000, 50);
    e = rfs_verbox_epoch(&b);
    rfs_verbox_note(&b, e, 10, 50); /* SET_SIZE sent after it: smaller, same tick */
    assert_box(&b, 10, 50);
    e = rfs_verbox_epoch(&b);
    rfs_verbox_note(&b, e, 10, 40); /* even a clock step back, when sent after */
    assert_box(&b, 10, 40);
    rfs_verbox_destroy(&b);
}

static void test_concurrent_replies_keep_the_later(void **state)
{
    (void)state;
    rfs_verbox b;
    rfs_verbox_init(&b);
    rfs_verbox_note(&b, rfs_verbox_epoch(&b), 100, 10);
    /* three writes in flight together, all sent at this epoch */
    uint64_t e = rfs_verbox_epoch(&b);
    rfs_verbox_note(&b, e, 300, 30); /* applied last, answered first */
    assert_box(&b, 300, 30);
    rfs_verbox_note(&b, e, 200, 20); /* applied before it, answered late: ignored */
    assert_box(&b, 300, 30);
    rfs_verbox_note(&b, e, 250, 30); /* same tick, smaller file: earlier (writes only grow) */
    assert_box(&b, 300, 30);
    rfs_verbox_note(&b, e, 400, 30); /* same tick, larger: later */
    assert_box(&b, 400, 30);
    /* a request sent now is after all of them */
    rfs_verbox_note(&b, rfs_verbox_epoch(&b), 5, 30);
    assert_box(&b, 5, 30);
    rfs_verbox_destroy(&b);
}

static void test_unknown_until_a_reply(void **state)
{
    (void)state;
    rfs_verbox b;
    rfs_verbox_init(&b);
    assert_int_equal(b.known, 0);
    assert_int_equal(b.tracking, 0);
    uint64_t e = rfs_verbox_epoch(&b);
    rfs_verbox_note(&b, e + 7, 1, 1); /* any first version is taken */
    assert_box(&b, 1, 1);
    rfs_verbox_destroy(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequential_requests_replace),
        cmocka_unit_test(test_concurrent_replies_keep_the_later),
        cmocka_unit_test(test_unknown_until_a_reply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
