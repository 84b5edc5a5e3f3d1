/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Requests: every op encodes to a frame that decodes back to the same fields, and the byte
 * layout matches docs/protocol.md. */
#include "proto_util.h"

#include <stdlib.h>

static uint8_t buf[FRAME_BUF];

static void roundtrip(const rfs_req *in, const uint64_t *ext, rfs_req *out)
{
    size_t n = frame_req(in, ext, buf, sizeof buf);
    assert_int_equal(unframe_req(buf, n, out), RFS_OK);
    assert_int_equal(out->op, in->op);
    assert_int_equal(out->id, in->id);
    assert_int_equal(out->data_len, in->data_len);
    if (in->data_len)
        assert_memory_equal(out->data, in->data, in->data_len);
}

static void test_hello_auth_ping(void **state)
{
    rfs_req r = {.op = RFS_OP_HELLO, .id = 1}, o;
    r.u.hello.min_version = 1;
    r.u.hello.max_version = 3;
    r.u.hello.max_frame = RFS_FRAME_DEFAULT;
    roundtrip(&r, NULL, &o);
    assert_int_equal(o.u.hello.min_version, 1);
    assert_int_equal(o.u.hello.max_version, 3);
    assert_int_equal(o.u.hello.max_frame, RFS_FRAME_DEFAULT);

    rfs_req a = {.op = RFS_OP_AUTH, .id = 2};
    for (int i = 0; i < 32; i++) {
        a.u.auth.client_nonce[i] = (uint8_t)i;
        a.u.auth.mac[i] = (uint8_t)(255 - i);
    }
    roundtrip(&a, NULL, &o);
    assert_memory_equal(o.u.auth.client_nonce, a.u.auth.client_nonce, 32);
    assert_memory_equal(o.u.auth.mac, a.u.auth.mac, 32);

    rfs_req p = {
        .op = RFS_OP_PING, .id = 0xFFFFFFFFu, .data = (const uint8_t *)"echo", .data_len = 4};
    roundtrip(&p, NULL, &o);
    rfs_req e = {.op = RFS_OP_PING, .id = 4};
    roundtrip(&e, NULL, &o);
    assert_null(o.data);
}

static void test_open_and_fh_ops(void **state)
{
    rfs_req r = {.op = RFS_OP_OPEN, .id = 10}, o;
    r.u.open.path = wpath("/run42/out.h5");
    r.u.open.flags = RFS_O_RDWR | RFS_O_CREAT | RFS_O_TRUNC;
    r.u.open.mode = 0644;
    roundtrip(&r, NULL, &o);
    assert_wpath(o.u.open.path, "/run42/out.h5");
    assert_int_equal(o.u.open.flags, RFS_O_RDWR | RFS_O_CREAT | RFS_O_TRUNC);
    assert_int_equal(o.u.open.mode, 0644);
    /* The path points into the frame, not at the caller's string. */
    assert_true((const uint8_t *)o.u.open.path.s > buf &&
                (const uint8_t *)o.u.open.path.s < buf + sizeof buf);

    const uint16_t fh_ops[] = {RFS_OP_CLOSE, RFS_OP_SYNC, RFS_OP_GET_SIZE};
    for (size_t i = 0; i < 3; i++) {
        rfs_req f = {.op = fh_ops[i], .id = 11};
        f.u.fh.fh = 77 + (uint32_t)i;
        roundtrip(&f, NULL, &o);
        assert_int_equal(o.u.fh.fh, 77 + i);
    }
    const uint16_t size_ops[] = {RFS_OP_SET_SIZE, RFS_OP_PREALLOCATE};
    for (size_t i = 0; i < 2; i++) {
        rfs_req s = {.op = size_ops[i], .id = 12};
        s.u.size.fh = 5;
        s.u.size.size = 0x123456789ull;
        roundtrip(&s, NULL, &o);
        assert_int_equal(o.u.size.fh, 5);
        assert_int_equal(o.u.size.size, 0x123456789ull);
    }
}

static void test_pread_pwrite(void **state)
{
    rfs_req r = {.op = RFS_OP_PREAD, .id = 20}, o;
    r.u.pread.fh = 3;
    r.u.pread.off = 1ull << 40;
    r.u.pread.len = 1u << 20;
    roundtrip(&r, NULL, &o);
    assert_int_equal(o.u.pread.fh, 3);
    assert_int_equal(o.u.pread.off, 1ull << 40);
    assert_int_equal(o.u.pread.len, 1u << 20);

    uint8_t data[1000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 7);
    rfs_req w = {.op = RFS_OP_PWRITE, .id = 21, .data = data, .data_len = sizeof data};
    w.u.pwrite.fh = 4;
    w.u.pwrite.off = 12345;
    roundtrip(&w, NULL, &o);
    assert_int_equal(o.u.pwrite.fh, 4);
    assert_int_equal(o.u.pwrite.off, 12345);
}

/* A PWRITE head decoded before its data are read gives what the whole frame would, and is
 * refused for what the whole frame would be refused for. */
static void test_pwrite_head(void **state)
{
    (void)state;
    static uint8_t data[5000];
    rfs_req w = {.op = RFS_OP_PWRITE, .id = 22, .data = data, .data_len = sizeof data};
    w.u.pwrite.fh = 9;
    w.u.pwrite.off = 1ull << 33;
    uint8_t buf[FRAME_BUF];
    size_t n = frame_req(&w, NULL, buf, sizeof buf);
    rfs_hdr h;
    assert_int_equal(rfs_hdr_decode(buf, RFS_FRAME_DEFAULT, &h), RFS_OK);
    assert_int_equal(n, RFS_HDR_SIZE + RFS_PWRITE_FIXED + sizeof data);
    rfs_req o;
    assert_int_equal(rfs_req_decode_pwrite_head(&h, buf + RFS_HDR_SIZE, &o), RFS_OK);
    assert_int_equal(o.id, 22);
    assert_int_equal(o.u.pwrite.fh, 9);
    assert_int_equal(o.u.pwrite.off, 1ull << 33);
    assert_int_equal(o.data_len, sizeof data);
    assert_null(o.data);

    /* a range past the largest file offset */
    rfs_hdr far = h;
    uint8_t fixed[RFS_PWRITE_FIXED];
    memcpy(fixed, buf + RFS_HDR_SIZE, sizeof fixed);
    for (int i = 0; i < 8; i++)
        fixed[4 + i] = i == 7 ? 0x7f : 0xff;
    assert_int_not_equal(rfs_req_decode_pwrite_head(&far, fixed, &o), RFS_OK);
    /* not a PWRITE, or too short to hold the fixed fields */
    rfs_hdr other = h;
    other.op = RFS_OP_PREAD;
    assert_int_equal(rfs_req_decode_pwrite_head(&other, buf + RFS_HDR_SIZE, &o), RFS_E_PROTO);
    rfs_hdr shorty = h;
    shorty.body_len = RFS_PWRITE_FIXED - 1;
    assert_int_equal(rfs_req_decode_pwrite_head(&shorty, buf + RFS_HDR_SIZE, &o), RFS_E_PROTO);
}

static void test_preadv_pwritev(void **state)
{
    const uint64_t ext[] = {0, 10, 100, 20, 1ull << 33, 5};
    rfs_req r = {.op = RFS_OP_PREADV, .id = 30}, o;
    r.u.iov.fh = 9;
    r.u.iov.count = 3;
    roundtrip(&r, ext, &o);
    assert_int_equal(o.u.iov.fh, 9);
    assert_int_equal(o.u.iov.count, 3);
    assert_int_equal(o.u.iov.total, 35);
    for (uint32_t i = 0; i < 3; i++) {
        uint64_t off, len;
        rfs_extent_at(o.u.iov.ext, i, &off, &len);
        assert_int_equal(off, ext[2 * i]);
        assert_int_equal(len, ext[2 * i + 1]);
    }

    uint8_t data[35];
    memset(data, 0xAB, sizeof data);
    rfs_req w = {.op = RFS_OP_PWRITEV, .id = 31, .data = data, .data_len = 35};
    w.u.iov.fh = 9;
    w.u.iov.count = 3;
    roundtrip(&w, ext, &o);
    assert_int_equal(o.u.iov.total, 35);
    uint64_t off, len;
    rfs_extent_at(o.u.iov.ext, 2, &off, &len);
    assert_int_equal(off, 1ull << 33);
    assert_int_equal(len, 5);
    /* Extents sit right before the data. */
    assert_ptr_equal(o.u.iov.ext + 3 * RFS_EXTENT_WIRE, o.data);
}

/* Zero-copy send: without ext_src the caller sends the extents itself, after the fixed part. */
static void test_pwritev_caller_sends_extents(void **state)
{
    const uint64_t ext[] = {8, 4, 64, 4};
    uint8_t wire_ext[32];
    for (int i = 0; i < 4; i++)
        put_le64(wire_ext + 8 * i, ext[i]);
    uint8_t data[8] = "abcdefgh";
    rfs_req w = {.op = RFS_OP_PWRITEV, .id = 32, .data = data, .data_len = 8};
    w.u.iov.fh = 1;
    w.u.iov.count = 2;
    size_t n = 0;
    assert_int_equal(rfs_req_encode(&w, NULL, buf, sizeof buf, &n), RFS_OK);
    assert_int_equal(n, RFS_HDR_SIZE + 8);
    memcpy(buf + n, wire_ext, 32);
    memcpy(buf + n + 32, data, 8);
    rfs_req o;
    assert_int_equal(unframe_req(buf, n + 40, &o), RFS_OK);
    assert_int_equal(o.u.iov.total, 8);
    assert_memory_equal(o.data, "abcdefgh", 8);
    /* rfs_req_encoded_size reports the buffer an encode with extents needs. */
    assert_int_equal(rfs_req_encoded_size(&w), RFS_HDR_SIZE + 8 + 32);
}

static void test_path_ops(void **state)
{
    rfs_req o;
    const uint16_t ops[] = {RFS_OP_STAT, RFS_OP_DELETE};
    for (size_t i = 0; i < 2; i++) {
        rfs_req r = {.op = ops[i], .id = 40};
        r.u.path.path = wpath("a/b/c");
        roundtrip(&r, NULL, &o);
        assert_wpath(o.u.path.path, "a/b/c");
    }
    rfs_req rn = {.op = RFS_OP_RENAME, .id = 41};
    rn.u.rename.from = wpath("/old name");
    rn.u.rename.to = wpath("/new/näme");
    roundtrip(&rn, NULL, &o);
    assert_wpath(o.u.rename.from, "/old name");
    assert_wpath(o.u.rename.to, "/new/näme");

    rfs_req mk = {.op = RFS_OP_MKDIR, .id = 42};
    mk.u.mkdir.path = wpath("/d");
    mk.u.mkdir.mode = 0755;
    roundtrip(&mk, NULL, &o);
    assert_wpath(o.u.mkdir.path, "/d");
    assert_int_equal(o.u.mkdir.mode, 0755);

    rfs_req ls = {.op = RFS_OP_LIST, .id = 43};
    ls.u.list.path = wpath("/");
    ls.u.list.start = 2048;
    roundtrip(&ls, NULL, &o);
    assert_wpath(o.u.list.path, "/");
    assert_int_equal(o.u.list.start, 2048);

    /* Longest legal path. */
    static char longp[RFS_MAX_PATH + 1];
    memset(longp, 'x', RFS_MAX_PATH);
    rfs_req st = {.op = RFS_OP_STAT, .id = 44};
    st.u.path.path = wpath(longp);
    roundtrip(&st, NULL, &o);
    assert_int_equal(o.u.path.path.len, RFS_MAX_PATH);
}

static void test_counter_lock_unlock(void **state)
{
    rfs_req c = {.op = RFS_OP_COUNTER, .id = 50}, o;
    c.u.counter.fh = 2;
    c.u.counter.key = 7;
    c.u.counter.set = 1;
    c.u.counter.delta = -42;
    roundtrip(&c, NULL, &o);
    assert_int_equal(o.u.counter.fh, 2);
    assert_int_equal(o.u.counter.key, 7);
    assert_int_equal(o.u.counter.set, 1);
    assert_true(o.u.counter.delta == -42);

    rfs_req l = {.op = RFS_OP_LOCK, .id = 51};
    l.u.lock.fh = 2;
    l.u.lock.off = 4096;
    l.u.lock.len = 8192;
    l.u.lock.mode = RFS_LOCK_EXCL;
    l.u.lock.wait_ms = 500;
    roundtrip(&l, NULL, &o);
    assert_int_equal(o.u.lock.off, 4096);
    assert_int_equal(o.u.lock.len, 8192);
    assert_int_equal(o.u.lock.mode, RFS_LOCK_EXCL);
    assert_int_equal(o.u.lock.wait_ms, 500);

    rfs_req u = {.op = RFS_OP_UNLOCK, .id = 52};
    u.u.unlock.fh = 2;
    u.u.unlock.off = 4096;
    u.u.unlock.len = 8192;
    roundtrip(&u, NULL, &o);
    assert_int_equal(o.u.unlock.fh, 2);
    assert_int_equal(o.u.unlock.off, 4096);
    assert_int_equal(o.u.unlock.len, 8192);
}

static void test_views(void **state)
{
    const uint8_t enc[] = {1, 2, 3, 4, 5};
    rfs_req s = {.op = RFS_OP_SET_VIEW, .id = 60, .data = enc, .data_len = sizeof enc}, o;
    s.u.set_view.fh = 1;
    s.u.set_view.view_id = 3;
    s.u.set_view.disp = 1024;
    roundtrip(&s, NULL, &o);
    assert_int_equal(o.u.set_view.view_id, 3);
    assert_int_equal(o.u.set_view.disp, 1024);

    rfs_req r = {.op = RFS_OP_VIEW_READ, .id = 61};
    r.u.view_read.fh = 1;
    r.u.view_read.view_id = 3;
    r.u.view_read.pos = 99;
    r.u.view_read.len = 4000;
    roundtrip(&r, NULL, &o);
    assert_int_equal(o.u.view_read.pos, 99);
    assert_int_equal(o.u.view_read.len, 4000);

    rfs_req w = {.op = RFS_OP_VIEW_WRITE, .id = 62, .data = enc, .data_len = 3};
    w.u.view_write.fh = 1;
    w.u.view_write.view_id = 3;
    w.u.view_write.pos = 7;
    roundtrip(&w, NULL, &o);
    assert_int_equal(o.u.view_write.view_id, 3);
    assert_int_equal(o.u.view_write.pos, 7);
}

/* Pins the documented byte layout of the header and of one body. */
static void test_exact_bytes(void **state)
{
    rfs_req r = {.op = RFS_OP_PREAD, .id = 0x01020304};
    r.u.pread.fh = 0x0A0B0C0D;
    r.u.pread.off = 0x1122334455667788ull;
    r.u.pread.len = 0x00AABBCC;
    size_t n = frame_req(&r, NULL, buf, sizeof buf);
    const uint8_t want[] = {
        0x52, 0x46, 0x53, 0x31,                         /* "RFS1" */
        0x01, 0x00,                                     /* version */
        0x0C, 0x00,                                     /* op PREAD */
        0x00, 0x00, 0x00, 0x00,                         /* flags, reserved */
        0x04, 0x03, 0x02, 0x01,                         /* req_id */
        0x00, 0x00, 0x00, 0x00,                         /* status */
        0x10, 0x00, 0x00, 0x00,                         /* body_len 16 */
        0x0D, 0x0C, 0x0B, 0x0A,                         /* fh */
        0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* off */
        0xCC, 0xBB, 0xAA, 0x00,                         /* len */
    };
    assert_int_equal(n, sizeof want);
    assert_memory_equal(buf, want, sizeof want);
}

static void test_encode_rejects(void **state)
{
    size_t n;
    rfs_req r = {.op = RFS_OP_OPEN, .id = 1};
    r.u.open.flags = RFS_O_RDONLY;
    r.u.open.path = wpath("");
    assert_int_equal(rfs_req_encode(&r, NULL, buf, sizeof buf, &n), RFS_E_INVAL);
    r.u.open.path = wpath("/a");
    r.u.open.flags = 0; /* no access mode */
    assert_int_equal(rfs_req_encode(&r, NULL, buf, sizeof buf, &n), RFS_E_INVAL);
    r.u.open.flags = RFS_O_RDONLY | 0x100;
    assert_int_equal(rfs_req_encode(&r, NULL, buf, sizeof buf, &n), RFS_E_INVAL);
    r.u.open.flags = RFS_O_RDONLY;
    assert_int_equal(rfs_req_encode(&r, NULL, buf, 30, &n), RFS_E_TOOBIG); /* no room */
    assert_int_equal(n, 0);

    rfs_req u = {.op = 999};
    assert_int_equal(rfs_req_encode(&u, NULL, buf, sizeof buf, &n), RFS_E_INVAL);

    /* PWRITEV data must match the extents. */
    const uint64_t ext[] = {0, 10};
    rfs_req w = {.op = RFS_OP_PWRITEV, .data = (const uint8_t *)"x", .data_len = 1};
    w.u.iov.count = 1;
    assert_int_equal(rfs_req_encode(&w, ext, buf, sizeof buf, &n), RFS_E_INVAL);

    /* Ops without payload refuse one. */
    rfs_req c = {.op = RFS_OP_CLOSE, .data = (const uint8_t *)"x", .data_len = 1};
    assert_int_equal(rfs_req_encode(&c, NULL, buf, sizeof buf, &n), RFS_E_INVAL);

    /* Frame over the hard maximum. */
    rfs_req big = {.op = RFS_OP_PWRITE, .data = buf, .data_len = RFS_FRAME_HARD_MAX};
    assert_int_equal(rfs_req_encode(&big, NULL, buf, sizeof buf, &n), RFS_E_TOOBIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello_auth_ping), cmocka_unit_test(test_open_and_fh_ops),
        cmocka_unit_test(test_pread_pwrite),    cmocka_unit_test(test_pwrite_head),
        cmocka_unit_test(test_preadv_pwritev),  cmocka_unit_test(test_pwritev_caller_sends_extents),
        cmocka_unit_test(test_path_ops),        cmocka_unit_test(test_counter_lock_unlock),
        cmocka_unit_test(test_views),           cmocka_unit_test(test_exact_bytes),
        cmocka_unit_test(test_encode_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
