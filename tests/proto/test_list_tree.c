/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* LIST_TREE (docs/protocol.md "LIST_TREE"): the request round-trips, a reply's directory blocks
 * are built and read back, and every block a hostile server could send to steer a client
 * outside its target or past the body is refused: '..', '.', empty parts, a leading or
 * trailing '/', NUL, lengths and counts that run past the body. */
#include "proto_util.h"

static uint8_t buf[FRAME_BUF];

static void test_request_roundtrip(void **state)
{
    (void)state;
    rfs_req r = {.op = RFS_OP_LIST_TREE, .id = 9}, o;
    r.u.list.path = wpath("/data/run");
    r.u.list.start = 12288;
    size_t n = frame_req(&r, NULL, buf, sizeof buf);
    assert_int_equal(unframe_req(buf, n, &o), RFS_OK);
    assert_int_equal(o.op, RFS_OP_LIST_TREE);
    assert_int_equal(o.u.list.start, 12288);
    assert_int_equal(o.u.list.path.len, 9);
    assert_memory_equal(o.u.list.path.s, "/data/run", 9);
    r.u.list.path = wpath("");
    assert_int_not_equal(rfs_req_encode(&r, NULL, buf, sizeof buf, &n), RFS_OK);
}

/* A block for rel with the given entry names (files, and "d*" directories). */
static size_t block(uint8_t *out, size_t cap, const char *rel, const char **names, int n)
{
    size_t used = rfs_ltree_block_head(rel, strlen(rel), (uint32_t)n, out, cap);
    assert_true(used > 0);
    for (int i = 0; i < n; i++) {
        rfs_list_entry e = {.name = wpath(names[i]),
                            .type = names[i][0] == 'd' ? RFS_TYPE_DIR : RFS_TYPE_FILE,
                            .size = 10u * (uint64_t)i};
        size_t k = rfs_list_entry_encode(&e, out + used, cap - used);
        assert_true(k > 0);
        used += k;
    }
    return used;
}

static void test_blocks_roundtrip(void **state)
{
    (void)state;
    const char *top[] = {"a.txt", "dsub", "b.bin"}, *sub[] = {"x", "deep"}, *deep[] = {0};
    size_t n = block(buf, sizeof buf, "", top, 3);
    n += block(buf + n, sizeof buf - n, "dsub", sub, 2);
    n += block(buf + n, sizeof buf - n, "dsub/deep", deep, 0);
    const uint8_t *p = buf;
    size_t rem = n;
    const char *want[] = {"", "dsub", "dsub/deep"};
    const uint32_t counts[] = {3, 2, 0};
    for (int b = 0; b < 3; b++) {
        rfs_wpath rel;
        uint32_t count;
        const uint8_t *entries;
        size_t elen;
        assert_int_equal(rfs_ltree_block_next(&p, &rem, &rel, &count, &entries, &elen), RFS_OK);
        assert_int_equal(rel.len, strlen(want[b]));
        assert_memory_equal(rel.s, want[b], rel.len);
        assert_int_equal(count, counts[b]);
        for (uint32_t i = 0; i < count; i++) {
            rfs_list_entry e;
            assert_int_equal(rfs_list_entry_next(&entries, &elen, &e), RFS_OK);
        }
        assert_int_equal(elen, 0);
    }
    assert_int_equal(rem, 0);
    /* a header that does not fit is not written */
    assert_int_equal(rfs_ltree_block_head("abc", 3, 0, buf, 8), 0);
}

static int parse_one(const uint8_t *b, size_t n)
{
    rfs_wpath rel;
    uint32_t count;
    const uint8_t *entries;
    size_t elen;
    return rfs_ltree_block_next(&b, &n, &rel, &count, &entries, &elen);
}

/* A block whose directory name is raw bytes (the encoder would not write these). */
static size_t raw_block(uint8_t *out, const char *rel, size_t rel_len, uint32_t count)
{
    out[0] = (uint8_t)(rel_len & 0xff);
    out[1] = (uint8_t)(rel_len >> 8);
    memcpy(out + 2, rel, rel_len);
    memset(out + 2 + rel_len, 0, 4);
    out[2 + rel_len] = (uint8_t)count;
    return rel_len + 6;
}

static void test_hostile_blocks_refused(void **state)
{
    (void)state;
    static const struct {
        const char *rel;
        size_t len;
    } bad[] = {{"..", 2}, {".", 1},   {"a/../b", 6}, {"a//b", 4}, {"/etc", 4},
               {"a/", 2}, {"a/.", 3}, {"a\0b", 3},   {"../x", 4}, {"x/..", 4}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n = raw_block(buf, bad[i].rel, bad[i].len, 0);
        if (parse_one(buf, n) != RFS_E_PROTO)
            fail_msg("directory name %zu ('%.*s') accepted", i, (int)bad[i].len, bad[i].rel);
    }
    /* a fine name parses (the control) */
    assert_int_equal(parse_one(buf, raw_block(buf, "a/b.c/d", 7, 0)), RFS_OK);
    /* a name longer than the body, a count with no entries behind it, a truncated header */
    size_t n = raw_block(buf, "abc", 3, 0);
    assert_int_equal(parse_one(buf, n - 1), RFS_E_PROTO);
    buf[0] = 200;
    assert_int_equal(parse_one(buf, n), RFS_E_PROTO);
    n = raw_block(buf, "abc", 3, 2);
    assert_int_equal(parse_one(buf, n), RFS_E_PROTO);
    assert_int_equal(parse_one(buf, 1), RFS_E_PROTO);
    /* a count over the reply limit is refused before any entry is read */
    n = raw_block(buf, "abc", 3, 0);
    buf[2 + 3 + 3] = 0x7f;
    assert_int_equal(parse_one(buf, n), RFS_E_PROTO);
    /* an entry whose own name is a path */
    const char *one[] = {"ok"};
    n = block(buf, sizeof buf, "d", one, 1);
    memcpy(buf + n - 2, "..", 2);
    assert_int_equal(parse_one(buf, n), RFS_E_PROTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_roundtrip),
        cmocka_unit_test(test_blocks_roundtrip),
        cmocka_unit_test(test_hostile_blocks_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
