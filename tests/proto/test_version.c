/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* File versions in replies (docs/protocol.md "File versions"): a request with RFS_F_VER, the
 * reply's 16-byte version block right after the header (after the checksum field), on success
 * and error replies, byte for byte; and every misuse refused by encoder and decoder. */
#include "proto_util.h"

static uint8_t buf[FRAME_BUF];

static uint64_t le64_at(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static rfs_hdr header_of(const uint8_t *frame)
{
    rfs_hdr h;
    assert_int_equal(rfs_hdr_decode(frame, RFS_FRAME_HARD_MAX, &h), RFS_OK);
    return h;
}

static void test_request_asks(void **state)
{
    (void)state;
    static const uint8_t data[5] = {1, 2, 3, 4, 5};
    rfs_req q = {.op = RFS_OP_PWRITE, .id = 7, .want_ver = 1, .data = data, .data_len = 5};
    q.u.pwrite.fh = 3;
    q.u.pwrite.off = 100;
    size_t n = frame_req(&q, NULL, buf, sizeof buf);
    rfs_hdr h = header_of(buf);
    assert_int_equal(h.flags, RFS_F_VER);
    assert_int_equal(h.body_len, 12 + 5); /* the flag adds no bytes to a request */
    rfs_req o;
    assert_int_equal(unframe_req(buf, n, &o), RFS_OK);
    assert_int_equal(o.want_ver, 1);
    assert_int_equal(o.u.pwrite.off, 100);
    assert_int_equal(o.data_len, 5);
    assert_memory_equal(o.data, data, 5);

    /* without it: what an older client sends, decoded as not asking */
    q.want_ver = 0;
    n = frame_req(&q, NULL, buf, sizeof buf);
    assert_int_equal(header_of(buf).flags, 0);
    assert_int_equal(unframe_req(buf, n, &o), RFS_OK);
    assert_int_equal(o.want_ver, 0);

    /* every versioned op may ask, SET_SIZE and OPEN among them */
    rfs_req s = {.op = RFS_OP_SET_SIZE, .id = 8, .want_ver = 1};
    s.u.size.fh = 1;
    s.u.size.size = 4096;
    n = frame_req(&s, NULL, buf, sizeof buf);
    assert_int_equal(unframe_req(buf, n, &o), RFS_OK);
    assert_int_equal(o.want_ver, 1);
    assert_int_equal(o.u.size.size, 4096);
    rfs_req op = {.op = RFS_OP_OPEN, .id = 9, .want_ver = 1};
    op.u.open.flags = RFS_O_RDWR;
    op.u.open.path = wpath("/a");
    n = frame_req(&op, NULL, buf, sizeof buf);
    assert_int_equal(unframe_req(buf, n, &o), RFS_OK);
    assert_int_equal(o.want_ver, 1);
}

static void test_request_misuse(void **state)
{
    (void)state;
    /* a STAT or a read has no version to give: the encoder refuses, the decoder too */
    rfs_req q = {.op = RFS_OP_STAT, .id = 1, .want_ver = 1};
    q.u.path.path = wpath("/a");
    size_t n = 0;
    assert_int_equal(rfs_req_encode(&q, NULL, buf, sizeof buf, &n), RFS_E_INVAL);
    q.want_ver = 0;
    n = frame_req(&q, NULL, buf, sizeof buf);
    put_le16(buf + 8, RFS_F_VER);
    rfs_req o;
    assert_int_equal(unframe_req(buf, n, &o), RFS_E_PROTO);
    assert_non_null(strstr(rfs_last_error(), "version"));

    rfs_req r = {.op = RFS_OP_PREAD, .id = 2};
    r.u.pread.len = 10;
    n = frame_req(&r, NULL, buf, sizeof buf);
    put_le16(buf + 8, RFS_F_VER);
    assert_int_equal(unframe_req(buf, n, &o), RFS_E_PROTO);
}

static void test_write_reply_layout(void **state)
{
    (void)state;
    rfs_rep r = {.op = RFS_OP_PWRITE, .id = 42, .has_ver = 1};
    r.u.u64.value = 65536;
    r.ver.size = 0x0102030405060708ull;
    r.ver.mtime_ns = 1764115200123456789ll;
    size_t n = frame_rep(&r, buf, sizeof buf);
    assert_int_equal(n, RFS_HDR_SIZE + RFS_VER_LEN + 8);
    rfs_hdr h = header_of(buf);
    assert_int_equal(h.flags, RFS_F_REPLY | RFS_F_VER);
    assert_int_equal(h.body_len, RFS_VER_LEN + 8);
    /* the block leads: size, mtime, then the op's own fields as without it */
    assert_int_equal(le64_at(buf + 24), 0x0102030405060708ull);
    assert_int_equal(le64_at(buf + 32), 1764115200123456789ull);
    assert_int_equal(le64_at(buf + 40), 65536);
    rfs_rep o;
    assert_int_equal(unframe_rep(buf, n, &o), RFS_OK);
    assert_int_equal(o.has_ver, 1);
    assert_int_equal(o.ver.size, 0x0102030405060708ull);
    assert_int_equal(o.ver.mtime_ns, 1764115200123456789ll);
    assert_int_equal(o.u.u64.value, 65536);

    /* an older server's reply: no block, no version */
    r.has_ver = 0;
    n = frame_rep(&r, buf, sizeof buf);
    assert_int_equal(n, RFS_HDR_SIZE + 8);
    assert_int_equal(unframe_rep(buf, n, &o), RFS_OK);
    assert_int_equal(o.has_ver, 0);
    assert_int_equal(o.u.u64.value, 65536);
}

static void test_other_replies(void **state)
{
    (void)state;
    rfs_rep o;
    /* SET_SIZE's reply is otherwise empty: just the block */
    rfs_rep s = {.op = RFS_OP_SET_SIZE, .id = 1, .has_ver = 1};
    s.ver.size = 10;
    s.ver.mtime_ns = -1500000000ll; /* before 1970: i64 on the wire */
    size_t n = frame_rep(&s, buf, sizeof buf);
    assert_int_equal(header_of(buf).body_len, RFS_VER_LEN);
    assert_int_equal(unframe_rep(buf, n, &o), RFS_OK);
    assert_int_equal(o.has_ver, 1);
    assert_int_equal(o.ver.size, 10);
    assert_int_equal(o.ver.mtime_ns, -1500000000ll);

    rfs_rep op = {.op = RFS_OP_OPEN, .id = 2, .has_ver = 1};
    op.u.open.fh = 9;
    op.u.open.size = 777;
    op.ver.size = 777;
    op.ver.mtime_ns = 5;
    n = frame_rep(&op, buf, sizeof buf);
    assert_int_equal(header_of(buf).body_len, RFS_VER_LEN + 12);
    assert_int_equal(unframe_rep(buf, n, &o), RFS_OK);
    assert_int_equal(o.u.open.fh, 9);
    assert_int_equal(o.u.open.size, 777);
    assert_int_equal(o.ver.size, 777);
    assert_int_equal(o.ver.mtime_ns, 5);

    const uint16_t ops[] = {RFS_OP_PWRITEV, RFS_OP_VIEW_WRITE, RFS_OP_PREALLOCATE};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        rfs_rep w = {.op = ops[i], .id = 3, .has_ver = 1};
        w.ver.size = 100 + i;
        w.ver.mtime_ns = 200;
        n = frame_rep(&w, buf, sizeof buf);
        assert_int_equal(unframe_rep(buf, n, &o), RFS_OK);
        assert_int_equal(o.has_ver, 1);
        assert_int_equal(o.ver.size, 100 + i);
    }
}

/* A write refused (disk full) may have changed the file in part: its error reply carries the
 * version too, before the usual message. */
static void test_error_reply(void **state)
{
    (void)state;
    rfs_rep e = {.op = RFS_OP_PWRITE, .id = 5, .status = (uint32_t)-RFS_E_NOSPC, .has_ver = 1};
    e.u.err.s = "no space";
    e.u.err.len = 8;
    e.ver.size = 4096;
    e.ver.mtime_ns = 77;
    size_t n = frame_rep(&e, buf, sizeof buf);
    assert_int_equal(header_of(buf).body_len, RFS_VER_LEN + 2 + 8);
    rfs_rep o;
    assert_int_equal(unframe_rep(buf, n, &o), RFS_OK);
    assert_int_equal(o.status, (uint32_t)-RFS_E_NOSPC);
    assert_int_equal(o.has_ver, 1);
    assert_int_equal(o.ver.size, 4096);
    assert_int_equal(o.ver.mtime_ns, 77);
    assert_int_equal(o.u.err.len, 8);
    assert_memory_equal(o.u.err.s, "no space", 8);
}

/* With a checksum the order is header | crc | version | fields, and the crc covers the block. */
static void test_with_checksum(void **state)
{
    (void)state;
    rfs_rep r = {.op = RFS_OP_PWRITE, .id = 6, .has_ver = 1};
    r.u.u64.value = 3;
    r.ver.size = 3;
    r.ver.mtime_ns = 99;
    size_t n = 0;
    assert_int_equal(rfs_rep_encode(&r, buf, sizeof buf, &n), RFS_OK);
    assert_int_equal(rfs_frame_add_sum(buf, &n, sizeof buf, NULL, 0), RFS_OK);
    rfs_hdr h = header_of(buf);
    assert_int_equal(h.flags, RFS_F_REPLY | RFS_F_SUM | RFS_F_VER);
    assert_int_equal(le64_at(buf + 28), 3);
    assert_int_equal(le64_at(buf + 36), 99);
    rfs_rep o;
    assert_int_equal(unframe_rep(buf, n, &o), RFS_OK);
    assert_int_equal(o.has_ver, 1);
    assert_int_equal(o.ver.mtime_ns, 99);
    buf[36] ^= 1; /* a flipped version bit is caught like a flipped data bit */
    assert_int_equal(unframe_rep(buf, n, &o), RFS_E_IO);
}

static void test_reply_misuse(void **state)
{
    (void)state;
    size_t n = 0;
    rfs_rep o;
    /* STAT has its own size and mtime; GET_SIZE, reads and the rest carry no block */
    const uint16_t ops[] = {RFS_OP_STAT, RFS_OP_GET_SIZE, RFS_OP_PREAD, RFS_OP_CLOSE,
                            RFS_OP_WRITE_FILE};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        rfs_rep r = {.op = ops[i], .id = 1, .has_ver = 1};
        r.u.stat.type = RFS_TYPE_FILE;
        assert_int_equal(rfs_rep_encode(&r, buf, sizeof buf, &n), RFS_E_INVAL);
        r.has_ver = 0;
        n = frame_rep(&r, buf, sizeof buf);
        put_le16(buf + 8, RFS_F_REPLY | RFS_F_VER);
        assert_int_equal(unframe_rep(buf, n, &o), RFS_E_PROTO);
    }
    /* the flag with a body too short for the block */
    rfs_rep s = {.op = RFS_OP_SET_SIZE, .id = 2};
    n = frame_rep(&s, buf, sizeof buf);
    put_le16(buf + 8, RFS_F_REPLY | RFS_F_VER);
    assert_int_equal(unframe_rep(buf, n, &o), RFS_E_PROTO);
    /* a block without the flag is bytes the op does not have */
    s.has_ver = 1;
    n = frame_rep(&s, buf, sizeof buf);
    put_le16(buf + 8, RFS_F_REPLY);
    assert_int_equal(unframe_rep(buf, n, &o), RFS_E_PROTO);
    /* a size no file can have */
    s.ver.size = (uint64_t)INT64_MAX + 1;
    assert_int_equal(rfs_rep_encode(&s, buf, sizeof buf, &n), RFS_E_INVAL);
    s.ver.size = 1;
    n = frame_rep(&s, buf, sizeof buf);
    buf[24 + 7] = 0x80;
    assert_int_equal(unframe_rep(buf, n, &o), RFS_E_PROTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_asks),       cmocka_unit_test(test_request_misuse),
        cmocka_unit_test(test_write_reply_layout), cmocka_unit_test(test_other_replies),
        cmocka_unit_test(test_error_reply),        cmocka_unit_test(test_with_checksum),
        cmocka_unit_test(test_reply_misuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
