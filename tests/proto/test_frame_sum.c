/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* proto/frame_sum.c: a sealed frame checks and strips back to the frame without a checksum;
 * any flipped byte (header, fixed fields, payload, the field itself) is RFS_E_IO; a checksum
 * flag on a body too short for the field is refused by the header decoder. */
#include "proto_util.h"

#include "common/crc32c.h"

static uint8_t frame[4096];

/* A PWRITE of 100 bytes sealed, its payload appended so the frame is contiguous. */
static size_t sealed_pwrite(uint8_t *payload)
{
    for (int i = 0; i < 100; i++)
        payload[i] = (uint8_t)(i * 7 + 3);
    rfs_req r = {.op = RFS_OP_PWRITE, .id = 9, .data = payload, .data_len = 100};
    r.u.pwrite.fh = 4;
    r.u.pwrite.off = 1000;
    size_t len;
    assert_int_equal(rfs_req_encode(&r, NULL, frame, sizeof frame, &len), RFS_OK);
    assert_int_equal(len, RFS_HDR_SIZE + RFS_PWRITE_FIXED);
    assert_int_equal(rfs_frame_add_sum(frame, &len, sizeof frame, payload, 100), RFS_OK);
    assert_int_equal(len, RFS_HDR_SIZE + RFS_SUM_LEN + RFS_PWRITE_FIXED);
    memcpy(frame + len, payload, 100);
    return len + 100;
}

static int check(size_t n, rfs_req *out)
{
    rfs_hdr h;
    int rc = rfs_hdr_decode(frame, RFS_FRAME_DEFAULT, &h);
    if (rc)
        return rc;
    const uint8_t *body = frame + RFS_HDR_SIZE;
    size_t len = n - RFS_HDR_SIZE;
    if ((rc = rfs_frame_check_sum(&h, &body, &len)))
        return rc;
    return rfs_req_decode(&h, body, len, out);
}

static void test_roundtrip(void **state)
{
    (void)state;
    uint8_t payload[100];
    size_t n = sealed_pwrite(payload);
    rfs_hdr h;
    assert_int_equal(rfs_hdr_decode(frame, RFS_FRAME_DEFAULT, &h), RFS_OK);
    assert_int_equal(h.flags, RFS_F_SUM);
    assert_int_equal(h.body_len, RFS_SUM_LEN + RFS_PWRITE_FIXED + 100);
    /* the field: CRC-32C of the header, then of everything after the field */
    uint32_t crc = rfs_crc32c(rfs_crc32c(0, frame, RFS_HDR_SIZE), frame + 28, n - 28);
    assert_int_equal(frame[24] | frame[25] << 8 | frame[26] << 16 | (uint32_t)frame[27] << 24, crc);
    rfs_req o;
    assert_int_equal(check(n, &o), RFS_OK);
    assert_int_equal(o.u.pwrite.fh, 4);
    assert_int_equal(o.u.pwrite.off, 1000);
    assert_int_equal(o.data_len, 100);
    assert_memory_equal(o.data, payload, 100);
    /* sealing twice is refused */
    size_t len = n - 100;
    assert_int_equal(rfs_frame_add_sum(frame, &len, sizeof frame, payload, 100), RFS_E_INVAL);
}

static void test_every_flipped_byte(void **state)
{
    (void)state;
    uint8_t payload[100];
    size_t n = sealed_pwrite(payload);
    for (size_t i = 0; i < n; i++) {
        if (i == 8 || i == 9)
            continue; /* flags: another frame kind, refused by the decoders (below) */
        sealed_pwrite(payload);
        frame[i] ^= 0x10;
        rfs_req o;
        int rc = check(n, &o);
        assert_true(rc != RFS_OK);
        if (i >= RFS_HDR_SIZE) /* header faults may be refused before the checksum */
            assert_int_equal(rc, RFS_E_IO);
    }
    sealed_pwrite(payload);
    frame[8] &= (uint8_t)~RFS_F_SUM; /* the flag lost: the field is read as fixed fields */
    rfs_req o;
    assert_true(check(n, &o) != RFS_OK || o.u.pwrite.off != 1000);
}

static void test_short_body(void **state)
{
    (void)state;
    rfs_hdr h = {.version = 1, .op = RFS_OP_SYNC, .flags = RFS_F_SUM, .req_id = 1, .body_len = 3};
    rfs_hdr_encode(frame, &h);
    rfs_hdr d;
    assert_int_equal(rfs_hdr_decode(frame, RFS_FRAME_DEFAULT, &d), RFS_E_PROTO);
    /* a reply sealed the same way, with its payload in the frame */
    rfs_rep r = {.op = RFS_OP_PREAD, .id = 5, .data = (const uint8_t *)"abcdef", .data_len = 6};
    size_t len;
    assert_int_equal(rfs_rep_encode(&r, frame, sizeof frame, &len), RFS_OK);
    assert_int_equal(rfs_frame_add_sum(frame, &len, sizeof frame, r.data, 6), RFS_OK);
    memcpy(frame + len, "abcdef", 6);
    assert_int_equal(rfs_hdr_decode(frame, RFS_FRAME_DEFAULT, &d), RFS_OK);
    const uint8_t *body = frame + RFS_HDR_SIZE;
    size_t blen = d.body_len;
    assert_int_equal(rfs_frame_check_sum(&d, &body, &blen), RFS_OK);
    rfs_rep o;
    assert_int_equal(rfs_rep_decode(&d, body, blen, &o), RFS_OK);
    assert_int_equal(o.data_len, 6);
    assert_memory_equal(o.data, "abcdef", 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_every_flipped_byte),
        cmocka_unit_test(test_short_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
