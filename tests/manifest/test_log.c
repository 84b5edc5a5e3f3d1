/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Log-structured writes in the manifest (manifest/overlay.c, format.c version 3, store.c's
 * merge of overlays): overlays put over older ones resolve as a byte-by-byte model says (a
 * later write wins, stripes where none covers), several processes' overlays merge into one
 * stored list whose reads give each byte its last writer, a truncation cuts them, the merge
 * compacts past RFSM_COMPACT_AT, version 3 survives encode/decode and is written only when
 * there are logs, and the decoder refuses hostile log and overlay tables with a message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/crc32c.h"
#include "manifest/manifest.h"
#include "manifest/store.h"
#include "rfs/rfs.h"
#include "tests/manifest/memfile.h"

static char *servers2[] = {"rfs://127.0.0.1:7001", "rfs://127.0.0.1:7002"};

static rfsm *striped(void)
{
    rfsm_layout l = {servers2, 2, 4096, 2, 1};
    rfsm *m = NULL;
    assert_int_equal(rfsm_make_striped(&l, "/run/out.rfsm", &m), RFS_OK);
    return m;
}

/* ---- the byte model: owner of each logical byte (log << 32 | log byte), 0: stripes ---- */

#define MODEL_BYTES 512u

typedef struct model {
    uint64_t who[MODEL_BYTES];
} model;

static void model_put(model *md, rfsm_overlay o)
{
    for (uint64_t i = 0; i < o.len; i++)
        md->who[o.off + i] = ((uint64_t)(o.log + 1) << 32) | (o.log_off + i);
}

/* Every byte of [0, MODEL_BYTES) resolved through v matches the model. */
static void check_against(const model *md, const rfsm_overlay *v, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) /* normalized */
        assert_true(v[i].off >= v[i - 1].off + v[i - 1].len);
    rfs_extent all = {0, MODEL_BYTES};
    rfsm_resolved *r = NULL;
    size_t nr = 0;
    assert_int_equal(rfsm_resolve(v, n, &all, 1, &r, &nr), RFS_OK);
    size_t pos = 0;
    for (size_t k = 0; k < nr; k++) {
        assert_int_equal(r[k].pos, pos); /* in buffer order, no gap */
        for (uint64_t i = 0; i < r[k].len; i++) {
            uint64_t want = md->who[pos + i];
            if (r[k].log == RFSM_NO_OBJECT) {
                assert_int_equal(want, 0);
                assert_int_equal(r[k].src + i, pos + i); /* stripes at the logical offset */
            } else {
                assert_int_equal(want >> 32, (uint64_t)r[k].log + 1);
                assert_int_equal(want & 0xFFFFFFFFu, r[k].src + i);
            }
        }
        pos += (size_t)r[k].len;
    }
    assert_int_equal(pos, MODEL_BYTES);
    free(r);
}

static void test_put_overlaps_later_wins(void **state)
{
    (void)state;
    model md = {{0}};
    rfsm_overlay *v = NULL;
    uint32_t n = 0, cap = 0;
    /* an overlay split by a later one inside it, then one over a boundary, then one covering
     * two whole */
    rfsm_overlay seq[] = {
        {100, 200, 0, 0}, {150, 10, 0, 1}, {290, 40, 200, 0}, {90, 80, 1000, 2}, {400, 5, 7, 1},
    };
    for (size_t i = 0; i < sizeof seq / sizeof *seq; i++) {
        assert_int_equal(rfsm_overlay_put(&v, &n, &cap, seq[i]), RFS_OK);
        model_put(&md, seq[i]);
        check_against(&md, v, n);
    }
    free(v);
}

/* A sequential writer's overlays (adjacent logically and in its log) stay one. */
static void test_put_joins_continuations(void **state)
{
    (void)state;
    rfsm_overlay *v = NULL;
    uint32_t n = 0, cap = 0;
    for (uint64_t k = 0; k < 100; k++)
        assert_int_equal(rfsm_overlay_put(&v, &n, &cap, (rfsm_overlay){k * 10, 10, k * 10, 3}),
                         RFS_OK);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].len, 1000);
    /* strided (holes between): one each */
    for (uint64_t k = 0; k < 10; k++)
        assert_int_equal(
            rfsm_overlay_put(&v, &n, &cap, (rfsm_overlay){5000 + k * 20, 10, 1000 + k * 10, 3}),
            RFS_OK);
    assert_int_equal(n, 11);
    free(v);
}

/* Random puts by several logs against the model (bounded, reproducible). */
static void test_put_random_against_model(void **state)
{
    (void)state;
    model md = {{0}};
    rfsm_overlay *v = NULL;
    uint32_t n = 0, cap = 0;
    uint32_t seed = 12345;
    uint64_t log_end[4] = {0};
    for (int round = 0; round < 2000; round++) {
        seed = seed * 1103515245u + 12345u;
        uint32_t log = (seed >> 8) % 4;
        uint64_t off = (seed >> 12) % MODEL_BYTES;
        uint64_t len = 1 + (seed >> 20) % 64;
        if (off + len > MODEL_BYTES)
            len = MODEL_BYTES - off;
        rfsm_overlay o = {off, len, log_end[log], log};
        log_end[log] += len;
        assert_int_equal(rfsm_overlay_put(&v, &n, &cap, o), RFS_OK);
        model_put(&md, o);
        if (round % 50 == 0)
            check_against(&md, v, n);
    }
    check_against(&md, v, n);
    /* a cut: the model's bytes past it back to the stripes */
    rfsm_overlays_cut(v, &n, 300);
    for (uint32_t i = 300; i < MODEL_BYTES; i++)
        md.who[i] = 0;
    check_against(&md, v, n);
    free(v);
}

/* A list of ranges (an MPI-IO view's) resolves piece by piece in packed order. */
static void test_resolve_list(void **state)
{
    (void)state;
    rfsm_overlay v[] = {{10, 10, 0, 0}, {30, 10, 10, 1}};
    rfs_extent ext[] = {{5, 10}, {25, 20}};
    rfsm_resolved *r = NULL;
    size_t nr = 0;
    assert_int_equal(rfsm_resolve(v, 2, ext, 2, &r, &nr), RFS_OK);
    /* [5,10) stripes, [10,15) log 0 at 0, then [25,30) stripes, [30,40) log 1, [40,45) */
    assert_int_equal(nr, 5);
    assert_int_equal(r[0].log, RFSM_NO_OBJECT);
    assert_int_equal(r[0].len, 5);
    assert_int_equal(r[1].log, 0);
    assert_int_equal(r[1].pos, 5);
    assert_int_equal(r[1].src, 0);
    assert_int_equal(r[2].log, RFSM_NO_OBJECT);
    assert_int_equal(r[2].pos, 10);
    assert_int_equal(r[2].src, 25);
    assert_int_equal(r[3].log, 1);
    assert_int_equal(r[3].src, 10);
    assert_int_equal(r[3].len, 10);
    assert_int_equal(r[4].src, 40);
    free(r);
}

/* ---- the binary form ---- */

static rfsm *with_logs(void)
{
    rfsm *m = striped();
    m->size = 1000;
    uint32_t i0 = 0, i1 = 0;
    assert_int_equal(rfsm_add_log(m, servers2[1], "/run/out.rfsm.l0.0000abcd", 300, &i0), RFS_OK);
    assert_int_equal(rfsm_add_log(m, servers2[0], "/run/out.rfsm.l1.00001234", 50, &i1), RFS_OK);
    uint32_t cap = 0;
    assert_int_equal(
        rfsm_overlay_put(&m->overlays, &m->noverlays, &cap, (rfsm_overlay){100, 200, 0, i0}),
        RFS_OK);
    assert_int_equal(
        rfsm_overlay_put(&m->overlays, &m->noverlays, &cap, (rfsm_overlay){900, 50, 0, i1}),
        RFS_OK);
    return m;
}

static void test_v3_roundtrip_and_v2_without_logs(void **state)
{
    (void)state;
    rfsm *plain = striped();
    uint8_t *b = NULL;
    size_t n = 0;
    assert_int_equal(rfsm_encode(plain, "t", &b, &n), RFS_OK);
    assert_int_equal(b[4], RFSM_VERSION); /* no logs: still version 2 */
    free(b);
    rfsm_free(plain);

    rfsm *m = with_logs();
    assert_int_equal(rfsm_encode(m, "t", &b, &n), RFS_OK);
    assert_int_equal(b[4], RFSM_VERSION_3);
    rfsm *d = NULL;
    assert_int_equal(rfsm_decode(b, n, "t", &d), RFS_OK);
    assert_int_equal(d->nlogs, 2);
    assert_string_equal(d->logs[0].path, "/run/out.rfsm.l0.0000abcd");
    assert_int_equal(d->logs[0].server, 1);
    assert_int_equal(d->logs[0].len, 300);
    assert_int_equal(d->noverlays, 2);
    assert_int_equal(d->overlays[1].off, 900);
    assert_int_equal(d->overlays[1].log, 1);
    uint8_t *b2 = NULL;
    size_t n2 = 0;
    assert_int_equal(rfsm_encode(d, "t", &b2, &n2), RFS_OK);
    assert_int_equal(n, n2);
    assert_memory_equal(b, b2, n);
    /* the JSON form shows them */
    char *txt = NULL;
    size_t tl = 0;
    FILE *out = open_memstream(&txt, &tl);
    rfsm_write_json(out, d);
    fclose(out);
    assert_non_null(strstr(txt, "\"version\": 3"));
    assert_non_null(strstr(txt, "\"overlays\": [{\"offset\": 100, \"length\": 200, \"log\": 0, "
                                "\"log_offset\": 0}"));
    assert_non_null(strstr(txt, "\"path\": \"/run/out.rfsm.l1.00001234\", \"length\": 50}"));
    free(txt);
    free(b);
    free(b2);
    rfsm_free(m);
    rfsm_free(d);
}

/* Re-signs a changed encoding (so the checksum does not hide what the decoder checks). */
static void resign(uint8_t *b, size_t n)
{
    uint32_t c = rfs_crc32c(0, b, n - 4);
    for (int i = 0; i < 4; i++)
        b[n - 4 + i] = (uint8_t)(c >> (8 * i));
}

static void put64le(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put32le(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Decodes b (re-signed) and expects refusal rc with `why` in the message. */
static void refused(uint8_t *b, size_t n, int rc, const char *why)
{
    resign(b, n);
    rfsm *d = (rfsm *)1;
    assert_int_equal(rfsm_decode(b, n, "hostile", &d), rc);
    assert_null(d);
    if (!strstr(rfs_last_error(), why))
        fail_msg("message '%s' does not say '%s'", rfs_last_error(), why);
}

/* Offsets of the version 3 tables in an encoding of with_logs(). */
typedef struct v3pos {
    size_t nlogs, log0_len, log1_len, nov, ov0, ov1;
} v3pos;

static v3pos where(const uint8_t *b, size_t n)
{
    v3pos p;
    /* from the end: 2 overlays of 28 bytes, their count, after the logs */
    p.ov1 = n - 4 - 28;
    p.ov0 = p.ov1 - 28;
    p.nov = p.ov0 - 4;
    p.log1_len = p.nov - 8;
    size_t l1 = strlen("/run/out.rfsm.l1.00001234");
    p.log0_len = p.log1_len - 8 - l1 - 2 - 4;
    size_t l0 = strlen("/run/out.rfsm.l0.0000abcd");
    p.nlogs = p.log0_len - l0 - 2 - 4 - 4;
    (void)b;
    return p;
}

static void test_hostile_v3(void **state)
{
    (void)state;
    rfsm *m = with_logs();
    uint8_t *good = NULL;
    size_t n = 0;
    assert_int_equal(rfsm_encode(m, "t", &good, &n), RFS_OK);
    rfsm_free(m);
    v3pos p = where(good, n);
    uint8_t *b = malloc(n);
    /* sanity: the positions are right */
    memcpy(b, good, n);
    assert_int_equal(b[p.nlogs], 2);
    assert_int_equal(b[p.nov], 2);
    assert_int_equal(b[p.log0_len], 44); /* 300 */

    memcpy(b, good, n);
    put32le(b + p.nlogs, 0xFFFFFFFFu); /* a huge log count: refused before any allocation */
    refused(b, n, RFS_E_TOOBIG, "log objects (limit");
    memcpy(b, good, n);
    put32le(b + p.nlogs, 4000); /* within the limit, beyond the data */
    refused(b, n, RFS_E_PROTO, "do not fit");
    memcpy(b, good, n);
    put32le(b + p.nov, 0x7FFFFFFFu);
    refused(b, n, RFS_E_TOOBIG, "overlay extents (limit");
    memcpy(b, good, n);
    put32le(b + p.nov, 60000);
    refused(b, n, RFS_E_PROTO, "do not fit");
    memcpy(b, good, n);
    put64le(b + p.ov0 + 8, 400); /* overlay 0 names log bytes [0, 400) of a 300-byte log */
    refused(b, n, RFS_E_PROTO, "beyond the 300 bytes its log records");
    memcpy(b, good, n);
    put64le(b + p.ov0 + 16, UINT64_MAX - 10); /* its log offset overflowing */
    refused(b, n, RFS_E_PROTO, "beyond the 300 bytes its log records");
    memcpy(b, good, n);
    put32le(b + p.ov0 + 24, 7); /* an unknown log */
    refused(b, n, RFS_E_PROTO, "beyond the log table");
    memcpy(b, good, n);
    put64le(b + p.ov1, 150); /* overlapping overlay 0 */
    refused(b, n, RFS_E_PROTO, "overlaps or precedes");
    memcpy(b, good, n);
    put64le(b + p.ov1 + 8, (1ull << 62)); /* a length past 2^62 */
    refused(b, n, RFS_E_PROTO, "ends beyond 2^62");
    memcpy(b, good, n);
    put64le(b + p.ov1, UINT64_MAX - 20); /* an offset overflowing */
    refused(b, n, RFS_E_PROTO, "ends beyond 2^62");
    memcpy(b, good, n);
    put64le(b + p.ov1 + 8, 60); /* 900 + 60 > size 1000? no: 960; log 1 has 50 bytes */
    refused(b, n, RFS_E_PROTO, "beyond the 50 bytes");
    memcpy(b, good, n);
    put64le(b + 24, 920); /* the size cut below overlay 1's end */
    refused(b, n, RFS_E_PROTO, "beyond the size 920");
    memcpy(b, good, n);
    put64le(b + p.log1_len, (1ull << 62) + 1);
    refused(b, n, RFS_E_PROTO, "beyond 2^62");
    memcpy(b, good, n);
    put32le(b + p.log0_len - 4 - 2 - strlen("/run/out.rfsm.l0.0000abcd"), 9); /* server 9 */
    refused(b, n, RFS_E_PROTO, "beyond the server table");
    /* truncated inside the overlay table */
    memcpy(b, good, n);
    put32le(b + 8, (uint32_t)(n - 10));
    memmove(b + p.ov1 + 18, b + n - 4, 4);
    refused(b, n - 10, RFS_E_PROTO, "do not fit");
    /* a version 2 header over version 3 tables: bytes follow the extent table */
    memcpy(b, good, n);
    b[4] = RFSM_VERSION;
    refused(b, n, RFS_E_PROTO, "follow the extent table");
    /* a version this client does not know is refused by its version */
    memcpy(b, good, n);
    b[4] = 4;
    refused(b, n, RFS_E_VERSION, "reads versions 1 to 3 only");
    free(b);
    free(good);
}

/* ---- merging several processes' overlays (store.c) ---- */

static memfile *stored(void)
{
    rfsm *m = striped();
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(rfsm_encode(m, "t", &buf, &len), RFS_OK);
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
    assert_int_equal(rfsm_decode(f->data, (size_t)f->size, "t", &m), RFS_OK);
    return m;
}

/* 4 processes write interleaved 8-byte blocks of a 512-byte file (block k by process k % 4),
 * each as one strided list write into its own log; then process 0 writes bytes [60, 70)
 * again. Merged in any order, every byte resolves to its last writer's log byte. */
static void test_merge_four_interleaved(void **state)
{
    (void)state;
    memfile *f = stored();
    char path[4][64];
    model md = {{0}};
    rfsm_overlay mine[4][MODEL_BYTES / 8 / 4 + 1];
    uint32_t nmine[4] = {0};
    for (uint32_t p = 0; p < 4; p++) {
        snprintf(path[p], sizeof path[p], "/run/out.rfsm.l%u.0000000%u", p, p);
        uint64_t at = 0;
        for (uint64_t k = p; k < MODEL_BYTES / 8; k += 4, at += 8)
            mine[p][nmine[p]++] = (rfsm_overlay){k * 8, 8, at, 0};
    }
    /* merged in the order 2, 0, 3, 1 */
    static const uint32_t order[] = {2, 0, 3, 1};
    for (int i = 0; i < 4; i++) {
        uint32_t p = order[i];
        rfsm_delta d = {.written_end = MODEL_BYTES - 32 + 8 * (p + 1),
                        .log_server = servers2[p % 2],
                        .log_path = path[p],
                        .log_len = 8ull * nmine[p],
                        .overlays = mine[p],
                        .noverlays = nmine[p]};
        assert_int_equal(rfsm_store_merge(&f->io, &d, NULL), RFS_OK);
    }
    /* process 0 again: [60, 70) appended at its log's end */
    rfsm_overlay again = {60, 10, 8ull * nmine[0], 0};
    rfsm_delta d = {.log_server = servers2[0],
                    .log_path = path[0],
                    .log_len = 8ull * nmine[0] + 10,
                    .overlays = &again,
                    .noverlays = 1};
    assert_int_equal(rfsm_store_merge(&f->io, &d, NULL), RFS_OK);
    rfsm *m = decoded(f);
    assert_int_equal(m->size, MODEL_BYTES);
    assert_int_equal(m->nlogs, 4);
    /* the model in the stored manifest's log numbering */
    for (uint32_t p = 0; p < 4; p++) {
        uint32_t li = rfsm_find_log(m, servers2[p % 2], path[p]);
        assert_int_not_equal(li, RFSM_NO_OBJECT);
        for (uint32_t k = 0; k < nmine[p]; k++) {
            rfsm_overlay o = mine[p][k];
            o.log = li;
            model_put(&md, o);
        }
    }
    again.log = rfsm_find_log(m, servers2[0], path[0]); /* last: it wins */
    model_put(&md, again);
    check_against(&md, m->overlays, m->noverlays);
    rfsm_free(m);
    /* a truncation to 100 cuts them; the size is 100 */
    rfsm_delta t = {.truncate = 1, .truncate_to = 100};
    assert_int_equal(rfsm_store_merge(&f->io, &t, NULL), RFS_OK);
    m = decoded(f);
    assert_int_equal(m->size, 100);
    assert_true(m->noverlays > 0);
    assert_int_equal(m->overlays[m->noverlays - 1].off + m->overlays[m->noverlays - 1].len, 100);
    rfsm_free(m);
    free(f);
}

/* A delta naming log bytes beyond the length it gives is refused, nothing stored. */
static void test_merge_refuses_overlay_past_log(void **state)
{
    (void)state;
    memfile *f = stored();
    int writes = f->writes;
    rfsm_overlay o = {0, 100, 0, 0};
    rfsm_delta d = {.written_end = 100,
                    .log_server = servers2[0],
                    .log_path = "/run/out.rfsm.l0.0",
                    .log_len = 50,
                    .overlays = &o,
                    .noverlays = 1};
    assert_int_not_equal(rfsm_store_merge(&f->io, &d, NULL), RFS_OK);
    assert_int_equal(f->writes, writes);
    free(f);
}

/* The merge calls the compaction hook once the overlays pass RFSM_COMPACT_AT, and stores
 * what it leaves. */
static int fake_compact_calls;
static int fake_compact(rfsm *m, void *ctx)
{
    (void)ctx;
    fake_compact_calls++;
    m->noverlays = 0;
    return 1;
}

static void test_merge_compacts_past_limit(void **state)
{
    (void)state;
    memfile *f = stored();
    uint32_t n = RFSM_COMPACT_AT + 1;
    rfsm_overlay *v = calloc(n, sizeof *v);
    for (uint32_t k = 0; k < n; k++)
        v[k] = (rfsm_overlay){k * 2, 1, k, 0}; /* strided: none joins the next */
    rfsm_delta d = {.written_end = 2ull * n,
                    .log_server = servers2[0],
                    .log_path = "/run/out.rfsm.l0.0",
                    .log_len = n,
                    .overlays = v,
                    .noverlays = n - 1,
                    .compact = fake_compact};
    assert_int_equal(rfsm_store_merge(&f->io, &d, NULL), RFS_OK);
    assert_int_equal(fake_compact_calls, 0); /* at the limit: kept */
    rfsm *m = decoded(f);
    assert_int_equal(m->noverlays, n - 1);
    rfsm_free(m);
    d.overlays = v + n - 1;
    d.noverlays = 1;
    assert_int_equal(rfsm_store_merge(&f->io, &d, NULL), RFS_OK);
    assert_int_equal(fake_compact_calls, 1);
    m = decoded(f);
    assert_int_equal(m->noverlays, 0);
    assert_int_equal(m->nlogs, 1);
    rfsm_free(m);
    free(v);
    free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_overlaps_later_wins),
        cmocka_unit_test(test_put_joins_continuations),
        cmocka_unit_test(test_put_random_against_model),
        cmocka_unit_test(test_resolve_list),
        cmocka_unit_test(test_v3_roundtrip_and_v2_without_logs),
        cmocka_unit_test(test_hostile_v3),
        cmocka_unit_test(test_merge_four_interleaved),
        cmocka_unit_test(test_merge_refuses_overlay_past_log),
        cmocka_unit_test(test_merge_compacts_past_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
