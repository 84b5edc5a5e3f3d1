/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Depot reordering (manifest/layout.c, docs/manifest.md "Where a new file starts"): the slot
 * a creator gives picks the server of column 0, the other columns and replicas follow in
 * turn on distinct servers, the placement survives encode/decode (so every reader agrees),
 * and the mapping of logical bytes onto columns does not depend on it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "manifest/manifest.h"
#include "rfs/rfs.h"

static char *servers4[] = {"rfs://127.0.0.1:7001", "rfs://127.0.0.1:7002", "rfs://127.0.0.1:7003",
                           "rfs://127.0.0.1:7004"};

static rfsm *made(uint32_t count, uint32_t replicas, uint32_t first)
{
    rfsm_layout l = {servers4, 4, 4096, count, replicas};
    rfsm *m = NULL;
    assert_int_equal(rfsm_make_striped_at(&l, first, "/fpp/out.rfsm", &m), RFS_OK);
    return m;
}

static void test_slot_to_first_server(void **state)
{
    (void)state;
    assert_int_equal(rfsm_first_server(0, 4), 0); /* no reordering: the first server */
    for (unsigned rank = 0; rank < 12; rank++)    /* MPI-IO gives world rank + 1 */
        assert_int_equal(rfsm_first_server(rank + 1, 4), rank % 4);
    assert_int_equal(rfsm_first_server(7, 1), 0);
    assert_int_equal(rfsm_first_server(5, 0), 0); /* no servers: refused later, no division */
    assert_int_equal(rfsm_first_server(0xFFFFFFFFu, 3), (0xFFFFFFFFu - 1) % 3);
}

static void test_columns_follow_the_first(void **state)
{
    (void)state;
    for (uint32_t first = 0; first < 6; first++) { /* 4 and 5 wrap to 0 and 1 */
        for (uint32_t count = 1; count <= 4; count++) {
            for (uint32_t replicas = 1; replicas <= 4; replicas++) {
                rfsm *m = made(count, replicas, first);
                const rfsm_extent *e = &m->extents[0];
                for (uint32_t c = 0; c < count; c++) {
                    unsigned seen = 0;
                    for (uint32_t r = 0; r < replicas; r++) {
                        uint32_t s = m->objects[rfsm_object_of(e, c, r)].server;
                        assert_int_equal(s, (first + c + r) % 4);
                        assert_false(seen & (1u << s)); /* a column's replicas apart */
                        seen |= 1u << s;
                    }
                }
                rfsm_free(m);
            }
        }
    }
}

/* Four single-column files, one per rank as MPI-IO makes them: four different servers. */
static void test_small_files_spread(void **state)
{
    (void)state;
    unsigned used = 0;
    for (unsigned rank = 0; rank < 4; rank++) {
        rfsm *m = made(4, 1, rfsm_first_server(rank + 1, 4));
        /* a file smaller than a stripe unit lives in column 0 alone */
        used |= 1u << m->objects[rfsm_object_of(&m->extents[0], 0, 0)].server;
        rfsm_free(m);
    }
    assert_int_equal(used, 0xF);
}

static int piece_column(void *ctx, const rfsm_piece *p)
{
    uint32_t *cols = ctx;
    cols[p->log_off / 4096] = p->column;
    return 0;
}

static void test_survives_encode_and_maps_alike(void **state)
{
    (void)state;
    rfsm *m = made(3, 2, 2);
    uint8_t *b = NULL;
    size_t n = 0;
    assert_int_equal(rfsm_encode(m, "test", &b, &n), RFS_OK);
    rfsm *d = NULL;
    assert_int_equal(rfsm_decode(b, n, "test", &d), RFS_OK);
    for (uint32_t i = 0; i < m->nobjects; i++) {
        assert_int_equal(d->objects[i].server, m->objects[i].server);
        assert_string_equal(d->objects[i].path, m->objects[i].path);
    }
    assert_int_equal(d->objects[rfsm_object_of(&d->extents[0], 0, 0)].server, 2);
    /* columns are a property of logical offsets alone: same with or without reordering */
    rfsm *plain = made(3, 2, 0);
    uint32_t a[9], z[9];
    assert_int_equal(rfsm_map(d, 0, 9 * 4096, piece_column, a), 0);
    assert_int_equal(rfsm_map(plain, 0, 9 * 4096, piece_column, z), 0);
    for (int i = 0; i < 9; i++)
        assert_int_equal(a[i], z[i]);
    free(b);
    rfsm_free(d);
    rfsm_free(m);
    rfsm_free(plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_to_first_server),
        cmocka_unit_test(test_columns_follow_the_first),
        cmocka_unit_test(test_small_files_spread),
        cmocka_unit_test(test_survives_encode_and_maps_alike),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
