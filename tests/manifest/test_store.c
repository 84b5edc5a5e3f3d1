/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Merging a process's changes into the stored manifest (manifest/store.c) over an in-memory
 * file that counts the calls: a delta that changes nothing is settled under the shared lock
 * with one read, a growing one under the exclusive lock with one read, one write and one sync
 * (the length set only when the manifest shrank), and what is stored afterwards decodes to
 * the merged manifest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "manifest/manifest.h"
#include "manifest/store.h"
#include "tests/manifest/memfile.h"

static char *servers2[] = {"rfs://127.0.0.1:7001", "rfs://127.0.0.1:7002"};

/* A memfile holding a 2x2 striped manifest of logical size `size`. */
static memfile *stored(uint64_t size)
{
    rfsm_layout l = {servers2, 2, 4096, 2, 2};
    rfsm *m = NULL;
    assert_int_equal(rfsm_make_striped(&l, "/run/out.rfsm", &m), RFS_OK);
    m->size = size;
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(rfsm_encode(m, "test", &buf, &len), RFS_OK);
    rfsm_free(m);
    memfile *f = mem_new();
    memcpy(f->data, buf, len);
    f->size = len;
    free(buf);
    return f;
}

static rfsm *decoded(memfile *f)
{
    rfsm *m = NULL;
    assert_int_equal(rfsm_decode(f->data, (size_t)f->size, "test", &m), RFS_OK);
    return m;
}

static void test_covered_delta_takes_shared_lock_only(void **state)
{
    (void)state;
    memfile *f = stored(10000);
    rfsm_delta d = {.written_end = 5000, .seen_size = 10000};
    rfsm *merged = NULL;
    assert_int_equal(rfsm_store_merge(&f->io, &d, &merged), RFS_OK);
    assert_int_equal(merged->size, 10000);
    assert_int_equal(f->shared_locks, 1);
    assert_int_equal(f->excl_locks, 0);
    assert_int_equal(f->unlocks, 1);
    assert_int_equal(f->reads, 1); /* a small manifest: no size query */
    assert_int_equal(f->sizes, 0);
    assert_int_equal(f->writes + f->syncs + f->set_sizes, 0);
    rfsm_free(merged);
    free(f);
}

static void test_growing_delta_writes_once(void **state)
{
    (void)state;
    memfile *f = stored(10000);
    uint64_t len = f->size;
    rfsm *before = decoded(f);
    rfsm_delta d = {.written_end = 20000, .seen_size = 10000};
    rfsm *merged = NULL;
    assert_int_equal(rfsm_store_merge(&f->io, &d, &merged), RFS_OK);
    assert_int_equal(f->shared_locks, 0); /* past what it saw: straight to the exclusive lock */
    assert_int_equal(f->excl_locks, 1);
    assert_int_equal(f->unlocks, 1);
    assert_int_equal(f->reads, 1);
    assert_int_equal(f->writes, 1);
    assert_int_equal(f->syncs, 1);
    assert_int_equal(f->set_sizes, 0); /* same length */
    assert_int_equal(f->size, len);
    rfsm *after = decoded(f);
    assert_int_equal(after->size, 20000);
    assert_int_equal(after->generation, before->generation + 1);
    assert_int_equal(merged->size, 20000);
    rfsm_free(before);
    rfsm_free(after);
    rfsm_free(merged);
    free(f);
}

/* The file was truncated by another process since this one looked: the shared check finds a
 * change, and the exclusive merge makes it. */
static void test_shared_check_falls_back_to_exclusive(void **state)
{
    (void)state;
    memfile *f = stored(100);
    rfsm *base = decoded(f); /* the manifest as this process loaded it at open */
    uint32_t stale[1] = {3};
    rfsm_delta d = {
        .written_end = 900, .seen_size = 1000, .base = base, .stale = stale, .nstale = 1};
    assert_int_equal(rfsm_store_merge(&f->io, &d, NULL), RFS_OK);
    assert_int_equal(f->shared_locks, 1);
    assert_int_equal(f->excl_locks, 1);
    assert_int_equal(f->unlocks, 2);
    assert_int_equal(f->writes, 1);
    rfsm *after = decoded(f);
    assert_int_equal(after->size, 900);
    assert_true(after->objects[3].flags & RFSM_OBJ_STALE);
    rfsm_free(after);
    /* the same again changes nothing: shared lock, no write */
    assert_int_equal(rfsm_store_merge(&f->io, &d, NULL), RFS_OK);
    assert_int_equal(f->shared_locks, 2);
    assert_int_equal(f->excl_locks, 1);
    assert_int_equal(f->writes, 1);
    rfsm_free(base);
    free(f);
}

/* A truncation never takes the shared shortcut; it sets the size even below what was seen. */
static void test_truncate_sets_size(void **state)
{
    (void)state;
    memfile *f = stored(50000);
    rfsm_delta d = {.truncate = 1, .truncate_to = 10, .seen_size = 50000};
    assert_int_equal(rfsm_store_merge(&f->io, &d, NULL), RFS_OK);
    assert_int_equal(f->shared_locks, 0);
    assert_int_equal(f->excl_locks, 1);
    rfsm *after = decoded(f);
    assert_int_equal(after->size, 10);
    rfsm_free(after);
    free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_covered_delta_takes_shared_lock_only),
        cmocka_unit_test(test_growing_delta_writes_once),
        cmocka_unit_test(test_shared_check_falls_back_to_exclusive),
        cmocka_unit_test(test_truncate_sets_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
