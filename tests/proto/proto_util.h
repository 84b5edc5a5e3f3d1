/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Helpers for the proto tests: build whole frames in a buffer and decode them back. */
#ifndef RFS_TEST_PROTO_UTIL_H
#define RFS_TEST_PROTO_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "proto/proto.h"

#define FRAME_BUF (RFS_ENC_FIXED_MAX + 64u * 1024u)

static inline rfs_wpath wpath(const char *s)
{
    rfs_wpath p = {s, (uint16_t)strlen(s)};
    return p;
}

/* Encodes r and appends its payload: a complete frame as it goes on the wire. */
static inline size_t frame_req(const rfs_req *r, const uint64_t *ext, uint8_t *buf, size_t cap)
{
    size_t n = 0;
    assert_int_equal(rfs_req_encode(r, ext, buf, cap, &n), RFS_OK);
    assert_true(n + r->data_len <= cap);
    if (r->data_len)
        memcpy(buf + n, r->data, r->data_len);
    return n + r->data_len;
}

static inline size_t frame_rep(const rfs_rep *r, uint8_t *buf, size_t cap)
{
    size_t n = 0;
    assert_int_equal(rfs_rep_encode(r, buf, cap, &n), RFS_OK);
    assert_true(n + r->data_len <= cap);
    if (r->data_len)
        memcpy(buf + n, r->data, r->data_len);
    return n + r->data_len;
}

/* Header + body decode; returns the body decoder's result (header must be fine). */
static inline int unframe_req(const uint8_t *buf, size_t n, rfs_req *r)
{
    rfs_hdr h;
    assert_true(n >= RFS_HDR_SIZE);
    assert_int_equal(rfs_hdr_decode(buf, RFS_FRAME_HARD_MAX, &h), RFS_OK);
    const uint8_t *body = buf + RFS_HDR_SIZE;
    size_t len = n - RFS_HDR_SIZE;
    int rc = rfs_frame_check_sum(&h, &body, &len); /* as a receiver does */
    return rc ? rc : rfs_req_decode(&h, body, len, r);
}

static inline int unframe_rep(const uint8_t *buf, size_t n, rfs_rep *r)
{
    rfs_hdr h;
    assert_true(n >= RFS_HDR_SIZE);
    assert_int_equal(rfs_hdr_decode(buf, RFS_FRAME_HARD_MAX, &h), RFS_OK);
    const uint8_t *body = buf + RFS_HDR_SIZE;
    size_t len = n - RFS_HDR_SIZE;
    int rc = rfs_frame_check_sum(&h, &body, &len);
    return rc ? rc : rfs_rep_decode(&h, body, len, r);
}

static inline void assert_wpath(rfs_wpath p, const char *want)
{
    assert_int_equal(p.len, strlen(want));
    assert_memory_equal(p.s, want, p.len);
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

#endif
