/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* CHMOD (26) and STATFS (27): request and reply round trips, the documented byte layouts, and
 * the malformed forms (mode bits outside 07777, free above total, truncated or padded bodies). */
#include "proto_util.h"

static uint8_t buf[FRAME_BUF];

static void test_chmod_request(void **state)
{
    (void)state;
    rfs_req r = {.op = RFS_OP_CHMOD, .id = 5}, o;
    r.u.mkdir.mode = 0640;
    r.u.mkdir.path = wpath("/a/b");
    size_t n = frame_req(&r, NULL, buf, sizeof buf);
    assert_int_equal(n, RFS_HDR_SIZE + 6 + 4);
    assert_int_equal(rfs_req_encoded_size(&r), n);
    /* u32 mode, u16 len, path */
    const uint8_t want[10] = {0xA0, 0x01, 0, 0, 4, 0, '/', 'a', '/', 'b'};
    assert_memory_equal(buf + RFS_HDR_SIZE, want, sizeof want);
    assert_int_equal(buf[6], 26);
    assert_int_equal(unframe_req(buf, n, &o), RFS_OK);
    assert_int_equal(o.u.mkdir.mode, 0640);
    assert_wpath(o.u.mkdir.path, "/a/b");
    assert_string_equal(rfs_op_name(RFS_OP_CHMOD), "CHMOD");
    assert_true(rfs_op_known(RFS_OP_CHMOD));
    assert_false(rfs_op_has(RFS_OP_CHMOD, RFS_OPF_PRE_AUTH));
    /* mode bits beyond 07777 are refused by the encoder and the decoder */
    r.u.mkdir.mode = 010000;
    size_t m;
    assert_int_equal(rfs_req_encode(&r, NULL, buf, sizeof buf, &m), RFS_E_INVAL);
    r.u.mkdir.mode = 0640;
    n = frame_req(&r, NULL, buf, sizeof buf);
    put_le32(buf + RFS_HDR_SIZE, 010000);
    assert_int_equal(unframe_req(buf, n, &o), RFS_E_INVAL);
}

static void test_statfs_request_and_reply(void **state)
{
    (void)state;
    rfs_req r = {.op = RFS_OP_STATFS, .id = 6}, o;
    r.u.path.path = wpath("/");
    size_t n = frame_req(&r, NULL, buf, sizeof buf);
    assert_int_equal(n, RFS_HDR_SIZE + 3);
    assert_int_equal(unframe_req(buf, n, &o), RFS_OK);
    assert_wpath(o.u.path.path, "/");
    assert_string_equal(rfs_op_name(RFS_OP_STATFS), "STATFS");

    rfs_rep p = {.op = RFS_OP_STATFS, .id = 6}, q;
    p.u.statfs.total = 1000;
    p.u.statfs.free = 600;
    p.u.statfs.avail = 500;
    p.u.statfs.files = 70;
    p.u.statfs.files_free = 7;
    n = frame_rep(&p, buf, sizeof buf);
    assert_int_equal(n, RFS_HDR_SIZE + 40); /* u64 total, free, avail, files, files_free */
    assert_int_equal(buf[RFS_HDR_SIZE], 0xE8);
    assert_int_equal(buf[RFS_HDR_SIZE + 1], 0x03);
    assert_int_equal(unframe_rep(buf, n, &q), RFS_OK);
    assert_true(q.u.statfs.total == 1000 && q.u.statfs.free == 600 && q.u.statfs.avail == 500);
    assert_true(q.u.statfs.files == 70 && q.u.statfs.files_free == 7);
    /* impossible numbers from a server are a protocol error, not a negative "used" */
    put_le64(buf + RFS_HDR_SIZE + 8, 2000);
    assert_int_equal(unframe_rep(buf, n, &q), RFS_E_PROTO);
    n = frame_rep(&p, buf, sizeof buf);
    put_le64(buf + RFS_HDR_SIZE + 32, 71);
    assert_int_equal(unframe_rep(buf, n, &q), RFS_E_PROTO);
    /* a truncated body */
    n = frame_rep(&p, buf, sizeof buf);
    put_le32(buf + 20, 39);
    assert_int_not_equal(unframe_rep(buf, n - 1, &q), RFS_OK);
}

static void test_write_file_request(void **state)
{
    (void)state;
    rfs_req r = {.op = RFS_OP_WRITE_FILE, .id = 7}, o;
    r.u.write_file.flags = RFS_WF_EXCL | RFS_WF_SYNC;
    r.u.write_file.mode = 0600;
    r.u.write_file.path = wpath("/f");
    const uint8_t data[3] = {'a', 'b', 'c'};
    r.data = data;
    r.data_len = 3;
    size_t n = frame_req(&r, NULL, buf, sizeof buf);
    assert_int_equal(n, RFS_HDR_SIZE + 10 + 2 + 3);
    /* u32 flags, u32 mode, u16 len, path */
    const uint8_t want[12] = {3, 0, 0, 0, 0x80, 0x01, 0, 0, 2, 0, '/', 'f'};
    assert_memory_equal(buf + RFS_HDR_SIZE, want, sizeof want);
    assert_int_equal(unframe_req(buf, n, &o), RFS_OK);
    assert_int_equal(o.u.write_file.flags, 3);
    assert_int_equal(o.u.write_file.mode, 0600);
    assert_wpath(o.u.write_file.path, "/f");
    assert_int_equal(o.data_len, 3);
    assert_memory_equal(o.data, "abc", 3);
    assert_string_equal(rfs_op_name(RFS_OP_WRITE_FILE), "WRITE_FILE");
    /* unknown flags and mode bits are refused both ways */
    size_t m;
    r.u.write_file.flags = RFS_WF_PARENTS; /* known since RFS_FEAT_WPARENTS */
    assert_int_equal(rfs_req_encode(&r, NULL, buf, sizeof buf, &m), RFS_OK);
    r.u.write_file.flags = 8;
    assert_int_equal(rfs_req_encode(&r, NULL, buf, sizeof buf, &m), RFS_E_INVAL);
    r.u.write_file.flags = 0;
    n = frame_req(&r, NULL, buf, sizeof buf);
    put_le32(buf + RFS_HDR_SIZE, 16);
    assert_int_equal(unframe_req(buf, n, &o), RFS_E_INVAL);
    put_le32(buf + RFS_HDR_SIZE, 0);
    put_le32(buf + RFS_HDR_SIZE + 4, 010000);
    assert_int_equal(unframe_req(buf, n, &o), RFS_E_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_file_request),
        cmocka_unit_test(test_chmod_request),
        cmocka_unit_test(test_statfs_request_and_reply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
