/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The manifest's codecs and layout (manifest/format.c, layout.c, json.c): a striped manifest
 * survives encode/decode, ranges map onto the right objects and offsets, and the decoder
 * refuses every kind of hostile manifest with its own error class and a message saying what
 * is wrong, keeping nothing of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/crc32c.h"
#include "manifest/manifest.h"
#include "manifest/mf_internal.h"
#include "rfs/rfs.h"
#include "tests/client/io_slots.h"

static char *servers3[] = {"rfs://127.0.0.1:7001", "rfs://127.0.0.1:7002", "rfs://[::1]:7003"};

static rfsm *striped(uint32_t count, uint32_t replicas, uint64_t ss)
{
    rfsm_layout l = {servers3, 3, ss, count, replicas};
    rfsm *m = NULL;
    assert_int_equal(rfsm_make_striped(&l, "/run/out.rfsm", &m), RFS_OK);
    return m;
}

static void encoded(const rfsm *m, uint8_t **buf, size_t *len)
{
    assert_int_equal(rfsm_encode(m, "test", buf, len), RFS_OK);
}

static void test_roundtrip(void **state)
{
    (void)state;
    rfsm *m = striped(3, 2, 4096);
    m->size = 123456;
    m->objects[3].flags = RFSM_OBJ_STALE;
    uint8_t *b;
    size_t n;
    encoded(m, &b, &n);
    rfsm *d = NULL;
    assert_int_equal(rfsm_decode(b, n, "test", &d), RFS_OK);
    assert_int_equal(d->size, 123456);
    assert_int_equal(d->nservers, 3);
    assert_string_equal(d->servers[2], "rfs://[::1]:7003");
    assert_int_equal(d->nobjects, 6);
    assert_string_equal(d->objects[5].path, "/run/out.rfsm.c2.r1");
    assert_int_equal(d->objects[5].server, 0); /* column 2, replica 1: (2 + 1) % 3 */
    assert_int_equal(d->objects[3].flags, RFSM_OBJ_STALE);
    assert_int_equal(d->nextents, 1);
    assert_int_equal(d->extents[0].stripe_size, 4096);
    assert_int_equal(rfsm_object_of(&d->extents[0], 1, 1), 3);
    /* the same bytes again */
    uint8_t *b2;
    size_t n2;
    encoded(d, &b2, &n2);
    assert_int_equal(n, n2);
    assert_memory_equal(b, b2, n);
    free(b);
    free(b2);
    rfsm_free(m);
    rfsm_free(d);
}

typedef struct seen {
    rfsm_piece p[16];
    int n;
} seen;

static int collect(void *ctx, const rfsm_piece *p)
{
    seen *s = ctx;
    assert_true(s->n < 16);
    s->p[s->n++] = *p;
    return 0;
}

static void test_map(void **state)
{
    (void)state;
    rfsm *m = striped(2, 1, 100);
    seen s = {0};
    /* [150, 420): unit 1 (col 1, row 0) from 50, unit 2 (col 0, row 1), 3 (col 1, row 1),
     * 4 (col 0, row 2) up to 20 */
    assert_int_equal(rfsm_map(m, 150, 270, collect, &s), 0);
    assert_int_equal(s.n, 4);
    assert_int_equal(s.p[0].column, 1);
    assert_int_equal(s.p[0].obj_off, 50);
    assert_int_equal(s.p[0].len, 50);
    assert_int_equal(s.p[1].column, 0);
    assert_int_equal(s.p[1].obj_off, 100);
    assert_int_equal(s.p[2].column, 1);
    assert_int_equal(s.p[2].obj_off, 100);
    assert_int_equal(s.p[3].column, 0);
    assert_int_equal(s.p[3].obj_off, 200);
    assert_int_equal(s.p[3].len, 20);
    /* object sizes of a 420-byte file: column 0 has units 0, 2, 4 (20 bytes), column 1 has 1, 3 */
    assert_int_equal(rfsm_column_bytes(&m->extents[0], 0, 420), 220);
    assert_int_equal(rfsm_column_bytes(&m->extents[0], 1, 420), 200);
    assert_int_equal(rfsm_column_bytes(&m->extents[0], 1, 150), 50);
    assert_int_equal(rfsm_column_bytes(&m->extents[0], 1, 0), 0);
    rfsm_free(m);
    /* a unit size that does not divide 2^62 still covers the whole range */
    m = striped(3, 1, 1000);
    rfsm_free(m);
}

static void test_make_refuses_bad_layouts(void **state)
{
    (void)state;
    rfsm *m = NULL;
    rfsm_layout l = {servers3, 3, 4096, 4, 1}; /* more columns than servers */
    assert_int_equal(rfsm_make_striped(&l, "/a.rfsm", &m), RFS_E_INVAL);
    l.stripe_count = 2;
    l.replicas = 4; /* more replicas than servers */
    assert_int_equal(rfsm_make_striped(&l, "/a.rfsm", &m), RFS_E_INVAL);
    l.replicas = 1;
    l.stripe_size = 0;
    assert_int_equal(rfsm_make_striped(&l, "/a.rfsm", &m), RFS_E_INVAL);
    assert_null(m);
}

static void test_json(void **state)
{
    (void)state;
    rfsm *m = striped(2, 2, 65536);
    m->size = 10;
    m->objects[1].flags = RFSM_OBJ_STALE;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    rfsm_write_json(f, m);
    fclose(f);
    assert_non_null(strstr(text, "\"size\": 10,"));
    assert_non_null(strstr(text, "\"path\": \"/run/out.rfsm.c0.r1\", \"complete\": false"));
    assert_non_null(strstr(text, "\"columns\": [[0, 1], [2, 3]]"));
    free(text);
    rfsm_free(m);
}

/* ---- hostile manifests ---- */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}
static void reseal(uint8_t *b, size_t n)
{
    put32(b + n - 4, rfs_crc32c(0, b, n - 4));
}

/* The first extent's fields start after the servers and objects of striped(2, 1, 4096). */
static size_t extent_at(const rfsm *m)
{
    size_t at = RFSM_HEADER_LEN;
    for (uint32_t i = 0; i < m->nservers; i++)
        at += 2 + strlen(m->servers[i]);
    for (uint32_t i = 0; i < m->nobjects; i++)
        at += 14 + strlen(m->objects[i].path) + 16 * m->objects[i].nmissing;
    return at;
}

static void refused(const uint8_t *b, size_t n, int want, const char *words)
{
    rfsm *d = (rfsm *)1;
    assert_int_equal(rfsm_decode(b, n, "hostile", &d), want);
    assert_null(d);
    if (!strstr(rfs_last_error(), words))
        fail_msg("message \"%s\" does not say \"%s\"", rfs_last_error(), words);
}

/* A valid encoding of a 2-column manifest, to spoil. */
static uint8_t *good(size_t *n, rfsm **m)
{
    *m = striped(2, 1, 4096);
    uint8_t *b;
    encoded(*m, &b, n);
    return b;
}

static void test_rejects_bad_checksum(void **state)
{
    (void)state;
    rfsm *m;
    size_t n;
    uint8_t *b = good(&n, &m);
    b[RFSM_HEADER_LEN + 3] ^= 1;
    refused(b, n, RFS_E_PROTO, "bad checksum");
    free(b);
    rfsm_free(m);
}

static void test_rejects_truncated(void **state)
{
    (void)state;
    rfsm *m;
    size_t n;
    uint8_t *b = good(&n, &m);
    refused(b, n - 7, RFS_E_PROTO, "truncated");
    refused(b, 20, RFS_E_PROTO, "truncated");
    refused(b, 3, RFS_E_PROTO, "not a manifest");
    /* a consistent but shorter manifest: the header's length and CRC made to match, the
     * extent table cut */
    size_t cut = n - 8;
    put32(b + 8, (uint32_t)cut);
    reseal(b, cut);
    refused(b, cut, RFS_E_PROTO, "truncated");
    free(b);
    rfsm_free(m);
}

static void test_rejects_unknown_version(void **state)
{
    (void)state;
    rfsm *m;
    size_t n;
    uint8_t *b = good(&n, &m);
    b[4] = 4; /* 3 is log-structured writes' (test_log.c) */
    reseal(b, n);
    refused(b, n, RFS_E_VERSION, "version 4");
    free(b);
    rfsm_free(m);
}

static void test_rejects_huge_counts(void **state)
{
    (void)state;
    rfsm *m;
    size_t n;
    uint8_t *b = good(&n, &m);
    put32(b + 16, 0xffffffffu); /* objects */
    reseal(b, n);
    refused(b, n, RFS_E_TOOBIG, "counts out of range");
    put32(b + 16, m->nobjects);
    put32(b + 20, 60000); /* extents: within the limit, far beyond the data */
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "do not fit");
    free(b);
    rfsm_free(m);
}

static void test_rejects_overflowing_extent(void **state)
{
    (void)state;
    rfsm *m;
    size_t n;
    uint8_t *b = good(&n, &m);
    size_t e = extent_at(m);
    put64(b + e + 8, UINT64_MAX - 5); /* length: off + len wraps */
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "beyond the largest logical offset");
    put64(b + e + 8, 4096);
    put64(b + e + 16, (1ull << 62) - 10); /* object offset at the edge */
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "object offsets beyond");
    free(b);
    rfsm_free(m);
}

static void test_rejects_out_of_range_indices(void **state)
{
    (void)state;
    rfsm *m;
    size_t n;
    uint8_t *b = good(&n, &m);
    size_t e = extent_at(m);
    put32(b + e + 40, 7); /* column 0's object */
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "beyond the object table");
    put32(b + e + 40, 1); /* both columns on object 1 */
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "twice");
    free(b);
    rfsm_free(m);
    /* an object on a server that is not in the table */
    b = good(&n, &m);
    put32(b + RFSM_HEADER_LEN + 2 + strlen(m->servers[0]) + 2 + strlen(m->servers[1]) + 2 +
              strlen(m->servers[2]),
          9);
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "beyond the server table");
    free(b);
    rfsm_free(m);
}

static void test_rejects_overlapping_extents(void **state)
{
    (void)state;
    rfsm *m = striped(1, 1, 4096);
    /* two extents of one object each: [0, 100) and [50, 150) */
    rfsm_extent *x = realloc(m->extents, 2 * sizeof *x);
    assert_non_null(x);
    m->extents = x;
    m->extents[0].len = 100;
    uint32_t *o = malloc(sizeof *o);
    *o = 0;
    m->extents[1] = m->extents[0];
    m->extents[1].off = 50;
    m->extents[1].objects = o;
    m->nextents = 2;
    uint8_t *b;
    size_t n;
    assert_int_equal(rfsm_encode(m, "test", &b, &n), RFS_E_PROTO);
    assert_non_null(strstr(rfs_last_error(), "overlaps"));
    /* the same as bytes: encoded while valid, then the second extent moved onto the first */
    m->extents[1].off = 100;
    encoded(m, &b, &n);
    put64(b + n - 4 - 4 - 40, 50);
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "overlaps");
    free(b);
    rfsm_free(m);
}

static void test_rejects_size_and_flags(void **state)
{
    (void)state;
    rfsm *m = striped(1, 1, 4096);
    m->extents[0].len = 100;
    m->size = 101;
    uint8_t *b;
    size_t n;
    assert_int_equal(rfsm_encode(m, "test", &b, &n), RFS_E_PROTO);
    m->size = 100;
    encoded(m, &b, &n);
    put64(b + 24, 200);
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "beyond the last extent");
    put64(b + 24, 100);
    b[6] = 1; /* header flags */
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "header flags");
    b[6] = 0;
    /* object flags: after the server table, the first object's flags word */
    size_t o = RFSM_HEADER_LEN;
    for (uint32_t i = 0; i < m->nservers; i++)
        o += 2 + strlen(m->servers[i]);
    put32(b + o + 4, 0x80);
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "unknown flags");
    free(b);
    rfsm_free(m);
}

static void test_rejects_bad_strings(void **state)
{
    (void)state;
    rfsm *m;
    size_t n;
    uint8_t *b = good(&n, &m);
    /* the first server URL's length made longer than the data */
    b[RFSM_HEADER_LEN] = 0xff;
    b[RFSM_HEADER_LEN + 1] = 0xff;
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "server 0");
    free(b);
    rfsm_free(m);
    b = good(&n, &m);
    b[RFSM_HEADER_LEN + 2] = 'x'; /* "xfs://..." */
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "not an rfs://HOST:PORT");
    free(b);
    rfsm_free(m);
}

/* ---- missing ranges (version 2) ---- */

static void test_rangeset_coalesces_and_caps(void **state)
{
    (void)state;
    rfsm_rangeset s = {0};
    rfsm_rangeset_add(&s, 100, 10);
    rfsm_rangeset_add(&s, 0, 10);
    rfsm_rangeset_add(&s, 10, 5);   /* touches [0, 10): one range [0, 15) */
    rfsm_rangeset_add(&s, 105, 20); /* overlaps [100, 110): [100, 125) */
    rfsm_rangeset_add(&s, 50, 0);   /* empty: nothing */
    assert_int_equal(s.n, 2);
    assert_false(s.whole);
    assert_int_equal(s.v[0].off, 0);
    assert_int_equal(s.v[0].len, 15);
    assert_int_equal(s.v[1].off, 100);
    assert_int_equal(s.v[1].len, 25);
    rfsm_rangeset_add(&s, 12, 100); /* bridges both */
    assert_int_equal(s.n, 1);
    assert_int_equal(s.v[0].len, 125);
    /* past the cap, the whole object: memory stays bounded whatever the pattern */
    for (uint64_t k = 0; k <= RFSM_MAX_MISSING; k++)
        rfsm_rangeset_add(&s, 1000 + 2 * k, 1);
    assert_true(s.whole);
    assert_int_equal(s.n, 0);
    rfsm_rangeset_free(&s);
    /* a range running past 2^62 is cut there */
    rfsm_rangeset_add(&s, 4096, UINT64_MAX);
    assert_int_equal(s.v[0].len, RFSM_MAX_SIZE - 4096);
    rfsm_rangeset_free(&s);
}

static void test_object_missing_merge(void **state)
{
    (void)state;
    rfsm_object o = {.server = 0, .flags = 0, .path = "/x"};
    rfsm_rangeset s = {0};
    assert_int_equal(rfsm_object_add_missing(&o, &s), 0); /* missed nothing: still complete */
    assert_int_equal(o.flags, 0);
    rfsm_rangeset_add(&s, 4096, 4096);
    assert_int_equal(rfsm_object_add_missing(&o, &s), 1);
    assert_int_equal(o.flags, RFSM_OBJ_STALE);
    assert_int_equal(rfsm_object_add_missing(&o, &s), 0); /* covered already */
    assert_true(rfsm_object_misses(&o, 8191, 1));
    assert_false(rfsm_object_misses(&o, 8192, 100));
    assert_false(rfsm_object_misses(&o, 0, 4096));
    rfsm_rangeset_free(&s);
    rfsm_rangeset_add(&s, 8192, 10); /* another process's: merged into one range */
    assert_int_equal(rfsm_object_add_missing(&o, &s), 1);
    assert_int_equal(o.nmissing, 1);
    assert_int_equal(o.missing[0].len, 4106);
    assert_int_equal(rfsm_object_missing_bytes(&o), 4106);
    rfsm_rangeset_free(&s);
    s.whole = 1;
    assert_int_equal(rfsm_object_add_missing(&o, &s), 1);
    assert_int_equal(o.nmissing, 0);
    assert_true(rfsm_object_misses(&o, 0, 1));
    assert_int_equal(rfsm_object_missing_bytes(&o), UINT64_MAX);
    rfsm_object_clear_missing(&o);
    assert_int_equal(o.flags, 0);
    assert_false(rfsm_object_misses(&o, 0, 1));
}

/* A 2x2 manifest whose object 1 misses two ranges and whose column 1 lost replica 0. */
static rfsm *with_missing(void)
{
    rfsm *m = striped(2, 2, 4096);
    rfsm_rangeset s = {0};
    rfsm_rangeset_add(&s, 0, 100);
    rfsm_rangeset_add(&s, 8192, 4096);
    assert_int_equal(rfsm_object_add_missing(&m->objects[1], &s), 1);
    rfsm_rangeset_free(&s);
    m->extents[0].objects[2] = RFSM_NO_OBJECT;
    return m;
}

static void test_roundtrip_missing_and_empty_slot(void **state)
{
    (void)state;
    rfsm *m = with_missing();
    uint8_t *b;
    size_t n;
    encoded(m, &b, &n);
    assert_int_equal(b[4], RFSM_VERSION);
    rfsm *d = NULL;
    assert_int_equal(rfsm_decode(b, n, "test", &d), RFS_OK);
    assert_int_equal(d->objects[1].nmissing, 2);
    assert_int_equal(d->objects[1].missing[1].off, 8192);
    assert_int_equal(d->objects[1].missing[1].len, 4096);
    assert_int_equal(rfsm_object_of(&d->extents[0], 1, 0), RFSM_NO_OBJECT);
    assert_int_equal(rfsm_object_of(&d->extents[0], 1, 1), 3);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    rfsm_write_json(f, d);
    fclose(f);
    assert_non_null(strstr(text, "\"complete\": false, \"missing\": [[0, 100], [8192, 4096]]"));
    assert_non_null(strstr(text, "\"columns\": [[0, 1], [null, 3]]"));
    free(text);
    free(b);
    rfsm_free(d);
    rfsm_free(m);
}

/* Version 1 bytes of m (no missing ranges): the object entries without their range count. */
static uint8_t *as_version_1(const rfsm *m, size_t *n)
{
    uint8_t *b;
    size_t len;
    encoded(m, &b, &len);
    size_t at = RFSM_HEADER_LEN;
    for (uint32_t i = 0; i < m->nservers; i++)
        at += 2 + strlen(m->servers[i]);
    for (uint32_t i = 0; i < m->nobjects; i++) {
        at += 10 + strlen(m->objects[i].path);
        memmove(b + at, b + at + 4, len - at - 4);
        len -= 4;
    }
    b[4] = RFSM_VERSION_1;
    put32(b + 8, (uint32_t)len);
    reseal(b, len);
    *n = len;
    return b;
}

static void test_reads_version_1(void **state)
{
    (void)state;
    rfsm *m = striped(2, 2, 4096);
    m->objects[3].flags = RFSM_OBJ_STALE; /* version 1's incomplete: the whole object */
    size_t n;
    uint8_t *b = as_version_1(m, &n);
    rfsm *d = NULL;
    assert_int_equal(rfsm_decode(b, n, "v1", &d), RFS_OK);
    assert_int_equal(d->objects[3].flags, RFSM_OBJ_STALE);
    assert_int_equal(d->objects[3].nmissing, 0);
    assert_true(rfsm_object_misses(&d->objects[3], 0, 1));
    rfsm_free(d);
    /* an empty slot is version 2's: refused in version 1 */
    m->extents[0].objects[0] = RFSM_NO_OBJECT;
    free(b);
    b = as_version_1(m, &n);
    refused(b, n, RFS_E_PROTO, "version 1 has none");
    free(b);
    rfsm_free(m);
}

static void test_rejects_bad_missing(void **state)
{
    (void)state;
    rfsm *m = with_missing();
    /* overlapping (as bytes: the second range moved onto the first) */
    uint8_t *b;
    size_t n;
    encoded(m, &b, &n);
    size_t o = RFSM_HEADER_LEN;
    for (uint32_t i = 0; i < m->nservers; i++)
        o += 2 + strlen(m->servers[i]);
    o += 14 + strlen(m->objects[0].path); /* object 1 starts here */
    size_t ranges = o + 10 + strlen(m->objects[1].path) + 4;
    put64(b + ranges + 16, 50);
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "overlaps, touches or precedes");
    put64(b + ranges + 16, 100); /* touching [0, 100) */
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "overlaps, touches or precedes");
    put64(b + ranges + 16, 8192);
    put64(b + ranges + 24, 0); /* empty */
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "empty or passes 2^62");
    put64(b + ranges + 24, UINT64_MAX - 100); /* wraps */
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "empty or passes 2^62");
    put64(b + ranges + 24, 4096);
    put32(b + o + 4, 0); /* complete, yet naming ranges */
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "complete but names missing ranges");
    put32(b + o + 4, RFSM_OBJ_STALE);
    put32(b + ranges - 4, 0xffffff00u); /* a count over the limit: refused before allocating */
    reseal(b, n);
    refused(b, n, RFS_E_TOOBIG, "missing ranges (limit");
    put32(b + ranges - 4, 900); /* within the limit, beyond the data */
    reseal(b, n);
    refused(b, n, RFS_E_PROTO, "truncated");
    free(b);
    /* a column with no replica left */
    m->extents[0].objects[3] = RFSM_NO_OBJECT;
    assert_int_equal(rfsm_encode(m, "test", &b, &n), RFS_E_PROTO);
    assert_non_null(strstr(rfs_last_error(), "column 1 has no replica"));
    rfsm_free(m);
}

/* The layer names every slot of rfs_io_ops (a NULL one is called by the layer above: the
 * MPI-IO layer's collective open crashed on the slots a later op table gained). */
static void test_layer_names_every_slot(void **state)
{
    (void)state;
    assert_io_slots_named(mf_ops());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layer_names_every_slot),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_map),
        cmocka_unit_test(test_make_refuses_bad_layouts),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_rangeset_coalesces_and_caps),
        cmocka_unit_test(test_object_missing_merge),
        cmocka_unit_test(test_roundtrip_missing_and_empty_slot),
        cmocka_unit_test(test_reads_version_1),
        cmocka_unit_test(test_rejects_bad_missing),
        cmocka_unit_test(test_rejects_bad_checksum),
        cmocka_unit_test(test_rejects_truncated),
        cmocka_unit_test(test_rejects_unknown_version),
        cmocka_unit_test(test_rejects_huge_counts),
        cmocka_unit_test(test_rejects_overflowing_extent),
        cmocka_unit_test(test_rejects_out_of_range_indices),
        cmocka_unit_test(test_rejects_overlapping_extents),
        cmocka_unit_test(test_rejects_size_and_flags),
        cmocka_unit_test(test_rejects_bad_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
