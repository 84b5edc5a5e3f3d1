/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The CHECKSUM op (25): request and reply round trips, the documented byte layout, and every
 * way a CHECKSUM frame can be malformed (docs/protocol.md, "CHECKSUM"). */
#include "proto_util.h"

static uint8_t buf[FRAME_BUF];

static rfs_req good_req(void)
{
    rfs_req r = {.op = RFS_OP_CHECKSUM, .id = 9};
    r.u.checksum.fh = 4;
    r.u.checksum.algo = RFS_SUM_CRC32C;
    r.u.checksum.off = 1ull << 33;
    r.u.checksum.len = RFS_CHECKSUM_MAX_LEN;
    r.u.checksum.seed = 0xE3069283u;
    return r;
}

static rfs_rep good_rep(void)
{
    rfs_rep r = {.op = RFS_OP_CHECKSUM, .id = 9};
    r.u.checksum.algo = RFS_SUM_CRC32C;
    r.u.checksum.len = 12345;
    r.u.checksum.value = 0xFFFFFFFFu;
    return r;
}

static void test_request_roundtrip_and_bytes(void **state)
{
    (void)state;
    rfs_req r = good_req(), o;
    size_t n = frame_req(&r, NULL, buf, sizeof buf);
    assert_int_equal(n, RFS_HDR_SIZE + 32);
    assert_int_equal(rfs_req_encoded_size(&r), n);
    /* u32 fh, u32 algo, u64 off, u64 len, u64 seed */
    const uint8_t want[32] = {4, 0, 0, 0,    1, 0, 0, 0, 0,    0,    0,    0,    2, 0, 0, 0,
                              0, 0, 0, 0x40, 0, 0, 0, 0, 0x83, 0x92, 0x06, 0xE3, 0, 0, 0, 0};
    assert_memory_equal(buf + RFS_HDR_SIZE, want, sizeof want);
    assert_int_equal(buf[6], 25);
    assert_int_equal(unframe_req(buf, n, &o), RFS_OK);
    assert_int_equal(o.u.checksum.fh, 4);
    assert_int_equal(o.u.checksum.algo, RFS_SUM_CRC32C);
    assert_true(o.u.checksum.off == 1ull << 33);
    assert_true(o.u.checksum.len == RFS_CHECKSUM_MAX_LEN);
    assert_true(o.u.checksum.seed == 0xE3069283u);
    /* An empty range is legal (the value is then the seed). */
    r.u.checksum.len = 0;
    n = frame_req(&r, NULL, buf, sizeof buf);
    assert_int_equal(unframe_req(buf, n, &o), RFS_OK);
    assert_string_equal(rfs_op_name(RFS_OP_CHECKSUM), "CHECKSUM");
    assert_true(rfs_op_known(RFS_OP_CHECKSUM));
    assert_false(rfs_op_has(RFS_OP_CHECKSUM, RFS_OPF_PRE_AUTH));
}

static void test_reply_roundtrip_and_bytes(void **state)
{
    (void)state;
    rfs_rep r = good_rep(), o;
    size_t n = frame_rep(&r, buf, sizeof buf);
    assert_int_equal(n, RFS_HDR_SIZE + 20);
    /* u32 algo, u64 len, u64 value */
    const uint8_t want[20] = {1, 0, 0,    0,    0x39, 0x30, 0, 0, 0, 0,
                              0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0};
    assert_memory_equal(buf + RFS_HDR_SIZE, want, sizeof want);
    assert_int_equal(unframe_rep(buf, n, &o), RFS_OK);
    assert_int_equal(o.u.checksum.algo, RFS_SUM_CRC32C);
    assert_int_equal(o.u.checksum.len, 12345);
    assert_int_equal(o.u.checksum.value, 0xFFFFFFFFu);
}

/* Field values out of range: refused by the encoder and, written by hand, by the decoder. */
static void expect_req_refused(rfs_req bad, int code)
{
    size_t n;
    int rc = rfs_req_encode(&bad, NULL, buf, sizeof buf, &n);
    assert_int_equal(rc, code == RFS_E_FBIG ? RFS_E_INVAL : code);
    rfs_req ok = good_req(), o;
    n = frame_req(&ok, NULL, buf, sizeof buf);
    uint8_t *b = buf + RFS_HDR_SIZE;
    put_le32(b + 4, bad.u.checksum.algo);
    put_le64(b + 8, bad.u.checksum.off);
    put_le64(b + 16, bad.u.checksum.len);
    put_le64(b + 24, bad.u.checksum.seed);
    assert_int_equal(unframe_req(buf, n, &o), code);
}

static void test_request_field_limits(void **state)
{
    (void)state;
    rfs_req r = good_req();
    r.u.checksum.algo = 2;
    expect_req_refused(r, RFS_E_INVAL);
    r = good_req();
    r.u.checksum.algo = 0;
    expect_req_refused(r, RFS_E_INVAL);
    r = good_req();
    r.u.checksum.seed = 1ull << 32;
    expect_req_refused(r, RFS_E_INVAL);
    r = good_req();
    r.u.checksum.len = (uint64_t)RFS_CHECKSUM_MAX_LEN + 1;
    expect_req_refused(r, RFS_E_TOOBIG);
    r = good_req();
    r.u.checksum.len = UINT64_MAX;
    expect_req_refused(r, RFS_E_TOOBIG);
    r = good_req();
    r.u.checksum.off = (uint64_t)INT64_MAX;
    r.u.checksum.len = 1;
    expect_req_refused(r, RFS_E_FBIG);
    r = good_req();
    r.u.checksum.off = UINT64_MAX;
    r.u.checksum.len = 0;
    expect_req_refused(r, RFS_E_FBIG);
}

static void test_request_structure(void **state)
{
    (void)state;
    rfs_req r = good_req(), o;
    size_t n = frame_req(&r, NULL, buf, sizeof buf);
    rfs_hdr h;
    assert_int_equal(rfs_hdr_decode(buf, RFS_FRAME_HARD_MAX, &h), RFS_OK);
    /* Every truncation, whether or not the header admits it. */
    for (size_t cut = 0; cut < n - RFS_HDR_SIZE; cut++) {
        assert_int_equal(rfs_req_decode(&h, buf + RFS_HDR_SIZE, cut, &o), RFS_E_PROTO);
        rfs_hdr s = h;
        s.body_len = (uint32_t)cut;
        assert_int_equal(rfs_req_decode(&s, buf + RFS_HDR_SIZE, cut, &o), RFS_E_PROTO);
    }
    /* A byte too many: CHECKSUM has no payload. */
    buf[n] = 0;
    h.body_len++;
    assert_int_equal(rfs_req_decode(&h, buf + RFS_HDR_SIZE, h.body_len, &o), RFS_E_PROTO);
    h.body_len--;
    /* A request carrying the reply flag, or a status. */
    h.flags = RFS_F_REPLY;
    assert_int_equal(rfs_req_decode(&h, buf + RFS_HDR_SIZE, h.body_len, &o), RFS_E_PROTO);
    h.flags = 0;
    h.status = 1;
    assert_int_equal(rfs_req_decode(&h, buf + RFS_HDR_SIZE, h.body_len, &o), RFS_E_PROTO);
    /* The encoder refuses a payload. */
    r.data = (const uint8_t *)"x";
    r.data_len = 1;
    assert_int_equal(rfs_req_encode(&r, NULL, buf, sizeof buf, &n), RFS_E_INVAL);
    /* A 32-byte request body is not a valid reply (20 bytes), and vice versa. */
    rfs_req q = good_req();
    n = frame_req(&q, NULL, buf, sizeof buf);
    assert_int_equal(rfs_hdr_decode(buf, RFS_FRAME_HARD_MAX, &h), RFS_OK);
    h.flags = RFS_F_REPLY;
    rfs_rep p;
    assert_int_equal(rfs_rep_decode(&h, buf + RFS_HDR_SIZE, h.body_len, &p), RFS_E_PROTO);
}

static void test_reply_malformed(void **state)
{
    (void)state;
    rfs_rep r = good_rep(), o;
    size_t n = frame_rep(&r, buf, sizeof buf);
    rfs_hdr h;
    assert_int_equal(rfs_hdr_decode(buf, RFS_FRAME_HARD_MAX, &h), RFS_OK);
    for (size_t cut = 0; cut < n - RFS_HDR_SIZE; cut++) {
        rfs_hdr s = h;
        s.body_len = (uint32_t)cut;
        assert_int_equal(rfs_rep_decode(&s, buf + RFS_HDR_SIZE, cut, &o), RFS_E_PROTO);
    }
    buf[n] = 0;
    h.body_len++;
    assert_int_equal(rfs_rep_decode(&h, buf + RFS_HDR_SIZE, h.body_len, &o), RFS_E_PROTO);
    h.body_len--;
    uint8_t *b = buf + RFS_HDR_SIZE;
    put_le32(b, 7); /* unknown algorithm */
    assert_int_equal(rfs_rep_decode(&h, b, h.body_len, &o), RFS_E_PROTO);
    put_le32(b, RFS_SUM_CRC32C);
    put_le64(b + 12, 1ull << 32); /* not a 32-bit CRC */
    assert_int_equal(rfs_rep_decode(&h, b, h.body_len, &o), RFS_E_PROTO);
    put_le64(b + 12, 5);
    put_le64(b + 4, (uint64_t)RFS_CHECKSUM_MAX_LEN + 1); /* covers more than a request may ask */
    assert_int_equal(rfs_rep_decode(&h, b, h.body_len, &o), RFS_E_PROTO);
    put_le64(b + 4, 5);
    assert_int_equal(rfs_rep_decode(&h, b, h.body_len, &o), RFS_OK);
    /* The encoder refuses the same values with RFS_E_INVAL. */
    rfs_rep e = good_rep();
    e.u.checksum.value = 1ull << 32;
    assert_int_equal(rfs_rep_encode(&e, buf, sizeof buf, &n), RFS_E_INVAL);
    e = good_rep();
    e.u.checksum.algo = 0;
    assert_int_equal(rfs_rep_encode(&e, buf, sizeof buf, &n), RFS_E_INVAL);
    /* Error replies to CHECKSUM have the usual shape. */
    rfs_rep er = {.op = RFS_OP_CHECKSUM, .id = 3, .status = rfs_err_to_wire(RFS_E_ACCESS)};
    er.u.err.s = "/a: opened write-only";
    er.u.err.len = (uint16_t)strlen(er.u.err.s);
    n = frame_rep(&er, buf, sizeof buf);
    assert_int_equal(unframe_rep(buf, n, &o), RFS_OK);
    assert_int_equal(rfs_err_from_wire(o.status), RFS_E_ACCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_roundtrip_and_bytes),
        cmocka_unit_test(test_reply_roundtrip_and_bytes),
        cmocka_unit_test(test_request_field_limits),
        cmocka_unit_test(test_request_structure),
        cmocka_unit_test(test_reply_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
