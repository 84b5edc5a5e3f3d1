/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Replies: every op's success reply and error replies round-trip; LIST entries encode and
 * iterate; HELLO negotiation picks the right version and frame size. */
#include "proto_util.h"

static uint8_t buf[FRAME_BUF];

static void roundtrip(const rfs_rep *in, rfs_rep *out)
{
    size_t n = frame_rep(in, buf, sizeof buf);
    rfs_hdr h;
    assert_int_equal(rfs_hdr_decode(buf, RFS_FRAME_HARD_MAX, &h), RFS_OK);
    assert_int_equal(h.flags, RFS_F_REPLY);
    assert_int_equal(h.status, in->status);
    assert_int_equal(rfs_rep_decode(&h, buf + RFS_HDR_SIZE, n - RFS_HDR_SIZE, out), RFS_OK);
    assert_int_equal(out->op, in->op);
    assert_int_equal(out->id, in->id);
    assert_int_equal(out->status, in->status);
    assert_int_equal(out->data_len, in->data_len);
    if (in->data_len)
        assert_memory_equal(out->data, in->data, in->data_len);
}

static void test_hello_auth(void **state)
{
    rfs_rep r = {.op = RFS_OP_HELLO, .id = 1}, o;
    r.u.hello.version = 1;
    r.u.hello.features = RFS_FEAT_VIEWS | 0x8000;
    r.u.hello.max_frame = RFS_FRAME_MIN;
    r.u.hello.auth_required = 1;
    memset(r.u.hello.nonce, 0x5A, RFS_NONCE_LEN);
    roundtrip(&r, &o);
    assert_int_equal(o.u.hello.version, 1);
    assert_int_equal(o.u.hello.features, RFS_FEAT_VIEWS | 0x8000);
    assert_int_equal(o.u.hello.max_frame, RFS_FRAME_MIN);
    assert_int_equal(o.u.hello.auth_required, 1);
    assert_memory_equal(o.u.hello.nonce, r.u.hello.nonce, RFS_NONCE_LEN);

    rfs_rep a = {.op = RFS_OP_AUTH, .id = 2};
    memset(a.u.auth.server_mac, 0xC3, RFS_MAC_LEN);
    roundtrip(&a, &o);
    assert_memory_equal(o.u.auth.server_mac, a.u.auth.server_mac, RFS_MAC_LEN);
}

/* PLACE: where a server group serves a rank. The address is bounded and plain; a process
 * outside the group or an odd byte is a malformed reply, and encoders refuse what decoders
 * would. */
static void test_place(void **state)
{
    rfs_rep r = {.op = RFS_OP_PLACE, .id = 3}, o;
    r.u.place.index = 2;
    r.u.place.count = 4;
    r.u.place.addr = (rfs_wpath){"node7.example:7072", 18};
    roundtrip(&r, &o);
    assert_int_equal(o.u.place.index, 2);
    assert_int_equal(o.u.place.count, 4);
    assert_int_equal(o.u.place.addr.len, 18);
    assert_memory_equal(o.u.place.addr.s, "node7.example:7072", 18);
    r.u.place.addr = (rfs_wpath){"[::1]:7070", 10};
    roundtrip(&r, &o);
    r.u.place.addr = (rfs_wpath){NULL, 0}; /* stay */
    roundtrip(&r, &o);
    assert_int_equal(o.u.place.addr.len, 0);

    size_t n;
    r.u.place.index = 4; /* not in the group */
    assert_int_equal(rfs_rep_encode(&r, buf, sizeof buf, &n), RFS_E_INVAL);
    r.u.place.index = 0;
    r.u.place.addr = (rfs_wpath){"host name:1", 11};
    assert_int_equal(rfs_rep_encode(&r, buf, sizeof buf, &n), RFS_E_INVAL);
    static char longer[RFS_PLACE_MAX_ADDR + 1];
    memset(longer, 'a', sizeof longer);
    r.u.place.addr = (rfs_wpath){longer, sizeof longer};
    assert_int_equal(rfs_rep_encode(&r, buf, sizeof buf, &n), RFS_E_INVAL);

    /* decoding: a valid frame, then a byte of its address turned into a space */
    r.u.place.addr = (rfs_wpath){"h:1", 3};
    n = frame_rep(&r, buf, sizeof buf);
    rfs_hdr h;
    assert_int_equal(rfs_hdr_decode(buf, RFS_FRAME_HARD_MAX, &h), RFS_OK);
    buf[n - 2] = ' ';
    assert_int_equal(rfs_rep_decode(&h, buf + RFS_HDR_SIZE, n - RFS_HDR_SIZE, &o), RFS_E_PROTO);
    buf[RFS_HDR_SIZE + 4] = 0; /* count 0 */
    buf[n - 2] = ':';
    assert_int_equal(rfs_rep_decode(&h, buf + RFS_HDR_SIZE, n - RFS_HDR_SIZE, &o), RFS_E_PROTO);
}

static void test_data_replies(void **state)
{
    static uint8_t data[50000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i ^ (i >> 8));
    const uint16_t ops[] = {RFS_OP_PING, RFS_OP_PREAD, RFS_OP_PREADV, RFS_OP_VIEW_READ};
    for (size_t i = 0; i < 4; i++) {
        rfs_rep r = {.op = ops[i], .id = 10 + (uint32_t)i, .data = data, .data_len = sizeof data},
                o;
        roundtrip(&r, &o);
        rfs_rep e = {.op = ops[i], .id = 20}; /* empty read: EOF */
        roundtrip(&e, &o);
        assert_null(o.data);
    }
}

static void test_value_replies(void **state)
{
    rfs_rep o;
    const uint16_t ops[] = {RFS_OP_PWRITE, RFS_OP_PWRITEV, RFS_OP_VIEW_WRITE, RFS_OP_GET_SIZE,
                            RFS_OP_COUNTER};
    for (size_t i = 0; i < 5; i++) {
        rfs_rep r = {.op = ops[i], .id = 30};
        r.u.u64.value = 0xFEDCBA9876543210ull;
        roundtrip(&r, &o);
        assert_true(o.u.u64.value == 0xFEDCBA9876543210ull);
    }
    rfs_rep op = {.op = RFS_OP_OPEN, .id = 31};
    op.u.open.fh = 17;
    op.u.open.size = 1ull << 45;
    roundtrip(&op, &o);
    assert_int_equal(o.u.open.fh, 17);
    assert_int_equal(o.u.open.size, 1ull << 45);

    rfs_rep st = {.op = RFS_OP_STAT, .id = 32};
    st.u.stat.type = RFS_TYPE_DIR;
    st.u.stat.mode = 0750;
    st.u.stat.size = 4096;
    st.u.stat.mtime_ns = -1234567890123LL; /* before 1970 is legal */
    roundtrip(&st, &o);
    assert_int_equal(o.u.stat.type, RFS_TYPE_DIR);
    assert_int_equal(o.u.stat.mode, 0750);
    assert_int_equal(o.u.stat.size, 4096);
    assert_true(o.u.stat.mtime_ns == -1234567890123LL);
}

static void test_empty_replies(void **state)
{
    const uint16_t ops[] = {RFS_OP_CLOSE,  RFS_OP_SYNC,    RFS_OP_SET_SIZE, RFS_OP_PREALLOCATE,
                            RFS_OP_DELETE, RFS_OP_RENAME,  RFS_OP_MKDIR,    RFS_OP_LOCK,
                            RFS_OP_UNLOCK, RFS_OP_SET_VIEW};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        rfs_rep r = {.op = ops[i], .id = 40}, o;
        size_t n = frame_rep(&r, buf, sizeof buf);
        assert_int_equal(n, RFS_HDR_SIZE);
        roundtrip(&r, &o);
    }
}

static void test_error_replies(void **state)
{
    rfs_rep r = {.op = RFS_OP_OPEN, .id = 50, .status = rfs_err_to_wire(RFS_E_NOENT)}, o;
    r.u.err.s = "/a/b: no such file";
    r.u.err.len = (uint16_t)strlen(r.u.err.s);
    roundtrip(&r, &o);
    assert_int_equal(rfs_err_from_wire(o.status), RFS_E_NOENT);
    assert_int_equal(o.u.err.len, r.u.err.len);
    assert_memory_equal(o.u.err.s, r.u.err.s, r.u.err.len);

    /* Empty message. */
    rfs_rep e = {.op = RFS_OP_PING, .id = 51, .status = 12};
    roundtrip(&e, &o);
    assert_int_equal(o.u.err.len, 0);

    /* Over-long messages are cut at RFS_MAX_MSG, and not inside a UTF-8 sequence. */
    static char longmsg[3000];
    longmsg[0] = 'x'; /* odd start so that byte RFS_MAX_MSG falls mid-sequence */
    for (size_t i = 1; i + 1 < sizeof longmsg; i += 2) {
        longmsg[i] = (char)0xC3; /* "é" = C3 A9 */
        longmsg[i + 1] = (char)0xA9;
    }
    rfs_rep l = {.op = RFS_OP_STAT, .id = 52, .status = 11};
    l.u.err.s = longmsg;
    l.u.err.len = (uint16_t)sizeof longmsg;
    size_t n = frame_rep(&l, buf, sizeof buf);
    assert_int_equal(unframe_rep(buf, n, &o), RFS_OK);
    assert_int_equal(o.u.err.len, RFS_MAX_MSG - 1);
    assert_true(((unsigned char)o.u.err.s[o.u.err.len - 1] & 0xC0) != 0xC0);

    /* A message is cut at an embedded NUL. */
    rfs_rep z = {.op = RFS_OP_STAT, .id = 53, .status = 11};
    z.u.err.s = "abc\0def";
    z.u.err.len = 7;
    n = frame_rep(&z, buf, sizeof buf);
    assert_int_equal(unframe_rep(buf, n, &o), RFS_OK);
    assert_int_equal(o.u.err.len, 3);

    /* An error reply may echo an op this peer does not know (the server answering junk). */
    rfs_rep u = {.op = 999, .id = 54, .status = 12};
    assert_int_equal(rfs_rep_encode(&u, buf, sizeof buf, &n), RFS_OK);
}

static void test_list(void **state)
{
    const char *names[] = {"a.txt", "sub", "ü-long-name-with-unicode"};
    uint8_t entries[1024];
    size_t used = 0;
    for (int i = 0; i < 3; i++) {
        rfs_list_entry e = {.name = wpath(names[i]),
                            .type = i == 1 ? RFS_TYPE_DIR : RFS_TYPE_FILE,
                            .mode = 0644,
                            .size = 100u * (uint64_t)i,
                            .mtime_ns = 1000 + i};
        size_t n = rfs_list_entry_encode(&e, entries + used, sizeof entries - used);
        assert_int_equal(n, RFS_LIST_ENTRY_FIXED + strlen(names[i]));
        used += n;
    }
    /* No room -> 0, nothing written. */
    rfs_list_entry big = {.name = wpath("zzzz"), .type = RFS_TYPE_FILE};
    assert_int_equal(rfs_list_entry_encode(&big, entries, RFS_LIST_ENTRY_FIXED + 3), 0);
    /* Invalid names are refused. */
    rfs_list_entry bad = {.name = wpath("a/b"), .type = RFS_TYPE_FILE};
    assert_int_equal(rfs_list_entry_encode(&bad, entries + used, sizeof entries - used), 0);
    bad.name = wpath("..");
    assert_int_equal(rfs_list_entry_encode(&bad, entries + used, sizeof entries - used), 0);

    rfs_rep r = {.op = RFS_OP_LIST, .id = 60}, o;
    r.u.list.count = 3;
    r.u.list.next = 1024;
    r.u.list.entries = entries;
    r.u.list.entries_len = (uint32_t)used;
    roundtrip(&r, &o);
    assert_int_equal(o.u.list.count, 3);
    assert_int_equal(o.u.list.next, 1024);
    const uint8_t *p = o.u.list.entries;
    size_t rem = o.u.list.entries_len;
    for (int i = 0; i < 3; i++) {
        rfs_list_entry e;
        assert_int_equal(rfs_list_entry_next(&p, &rem, &e), RFS_OK);
        assert_wpath(e.name, names[i]);
        assert_int_equal(e.type, i == 1 ? RFS_TYPE_DIR : RFS_TYPE_FILE);
        assert_int_equal(e.size, 100u * (uint64_t)i);
        assert_true(e.mtime_ns == 1000 + i);
    }
    assert_int_equal(rem, 0);

    /* Entries built in place after the fixed fields (memmove path). */
    size_t fixed = RFS_HDR_SIZE + 8;
    memmove(buf + fixed, entries, used);
    r.u.list.entries = buf + fixed;
    size_t n;
    assert_int_equal(rfs_rep_encode(&r, buf, sizeof buf, &n), RFS_OK);
    assert_int_equal(n, fixed + used);
    assert_int_equal(unframe_rep(buf, n, &o), RFS_OK);
    assert_int_equal(o.u.list.count, 3);

    /* Empty last page. */
    rfs_rep e = {.op = RFS_OP_LIST, .id = 61};
    e.u.list.entries = entries;
    roundtrip(&e, &o);
    assert_int_equal(o.u.list.count, 0);
    assert_int_equal(o.u.list.next, 0);
}

static void test_hello_choose(void **state)
{
    uint16_t v;
    uint32_t m;
    assert_int_equal(rfs_hello_choose(1, 5, 8u << 20, 4u << 20, &v, &m), RFS_OK);
    assert_int_equal(v, 1);
    assert_int_equal(m, 4u << 20);
    assert_int_equal(rfs_hello_choose(1, 1, RFS_FRAME_MIN, 4u << 20, &v, &m), RFS_OK);
    assert_int_equal(m, RFS_FRAME_MIN);
    assert_int_equal(rfs_hello_choose(2, 3, 4u << 20, 4u << 20, &v, &m), RFS_E_VERSION);
    assert_int_equal(rfs_hello_choose(0, 0, 4u << 20, 4u << 20, &v, &m), RFS_E_VERSION);
}

static void test_op_names(void **state)
{
    assert_string_equal(rfs_op_name(RFS_OP_HELLO), "HELLO");
    assert_string_equal(rfs_op_name(RFS_OP_PWRITEV), "PWRITEV");
    assert_string_equal(rfs_op_name(RFS_OP_VIEW_WRITE), "VIEW_WRITE");
    assert_string_equal(rfs_op_name(0), "UNKNOWN");
    assert_string_equal(rfs_op_name(39), "UNKNOWN");
    assert_string_equal(rfs_op_name(RFS_OP_SESSION), "SESSION");
    assert_true(rfs_op_known(RFS_OP_LIST));
    assert_true(rfs_op_known(RFS_OP_SESSION));
    assert_false(rfs_op_known(9));
    assert_true(rfs_op_known(RFS_OP_CAP_AUTH));
    assert_true(rfs_op_has(RFS_OP_CAP_AUTH, RFS_OPF_PRE_AUTH));
    assert_true(rfs_op_known(RFS_OP_COLL_JOIN));
    assert_true(rfs_op_known(RFS_OP_PLACE));
    assert_true(rfs_op_known(RFS_OP_TPC_AUTH));
    assert_true(rfs_op_has(RFS_OP_TPC_AUTH, RFS_OPF_PRE_AUTH));
    assert_false(rfs_op_has(RFS_OP_TPC_PULL, RFS_OPF_PRE_AUTH));
    assert_string_equal(rfs_op_name(RFS_OP_TPC_GRANT), "TPC_GRANT");
    assert_true(rfs_op_has(RFS_OP_PING, RFS_OPF_PRE_AUTH));
    assert_false(rfs_op_has(RFS_OP_OPEN, RFS_OPF_PRE_AUTH));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello_auth),    cmocka_unit_test(test_place),
        cmocka_unit_test(test_data_replies),  cmocka_unit_test(test_value_replies),
        cmocka_unit_test(test_empty_replies), cmocka_unit_test(test_error_replies),
        cmocka_unit_test(test_list),          cmocka_unit_test(test_hello_choose),
        cmocka_unit_test(test_op_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
