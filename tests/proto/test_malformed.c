/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Malformed input: every bad header, body, length or field gets the documented error code,
 * and a bounded deterministic loop of random bytes never breaks the decoders' invariants. */
#include "proto_util.h"

#include "tests/fuzz/frame_check.h"

#include <stdlib.h>

static uint8_t buf[FRAME_BUF];

/* A valid frame to corrupt: PREAD, 16-byte body. */
static size_t good_pread(void)
{
    rfs_req r = {.op = RFS_OP_PREAD, .id = 7};
    r.u.pread.fh = 1;
    r.u.pread.off = 0;
    r.u.pread.len = 100;
    return frame_req(&r, NULL, buf, sizeof buf);
}

static int hdr(uint32_t max_frame)
{
    rfs_hdr h;
    return rfs_hdr_decode(buf, max_frame, &h);
}

/* Decodes buf as a request whose header is valid; returns the body decoder's code. */
static int req_rc(size_t n)
{
    rfs_req r;
    return unframe_req(buf, n, &r);
}

static int rep_rc(size_t n)
{
    rfs_rep r;
    return unframe_rep(buf, n, &r);
}

static void test_header(void **state)
{
    good_pread();
    assert_int_equal(hdr(RFS_FRAME_DEFAULT), RFS_OK);

    buf[0] ^= 1; /* magic */
    assert_int_equal(hdr(RFS_FRAME_DEFAULT), RFS_E_PROTO);
    good_pread();
    put_le16(buf + 4, 2); /* version */
    assert_int_equal(hdr(RFS_FRAME_DEFAULT), RFS_E_VERSION);
    put_le16(buf + 4, 0);
    assert_int_equal(hdr(RFS_FRAME_DEFAULT), RFS_E_VERSION);
    good_pread();
    put_le16(buf + 8, 0x8000); /* unknown flag bit */
    assert_int_equal(hdr(RFS_FRAME_DEFAULT), RFS_E_PROTO);
    good_pread();
    put_le16(buf + 10, 1); /* reserved */
    assert_int_equal(hdr(RFS_FRAME_DEFAULT), RFS_E_PROTO);
    good_pread();
    const uint16_t unknown_ops[] = {0, 9, 34, 39, 43, 49, 56, 0xFFFF};
    for (size_t i = 0; i < sizeof unknown_ops / sizeof unknown_ops[0]; i++) {
        put_le16(buf + 6, unknown_ops[i]);
        assert_int_equal(hdr(RFS_FRAME_DEFAULT), RFS_E_PROTO);
    }
    /* Even on failure the raw fields are reported, so a server can answer the id. */
    rfs_hdr h;
    assert_int_equal(rfs_hdr_decode(buf, RFS_FRAME_DEFAULT, &h), RFS_E_PROTO);
    assert_int_equal(h.req_id, 7);
    assert_int_equal(h.body_len, 16);

    /* body_len against the frame limit, including the u32 wrap-around case. */
    good_pread();
    put_le32(buf + 20, RFS_PRE_HELLO_MAX - RFS_HDR_SIZE);
    assert_int_equal(hdr(RFS_PRE_HELLO_MAX), RFS_OK);
    put_le32(buf + 20, RFS_PRE_HELLO_MAX - RFS_HDR_SIZE + 1);
    assert_int_equal(hdr(RFS_PRE_HELLO_MAX), RFS_E_TOOBIG);
    put_le32(buf + 20, 0xFFFFFFFFu);
    assert_int_equal(hdr(RFS_FRAME_DEFAULT), RFS_E_TOOBIG);
    put_le32(buf + 20, 0xFFFFFFFFu - RFS_HDR_SIZE + 1); /* 24 + len wraps a u32 to 0 */
    assert_int_equal(hdr(0xFFFFFFFFu), RFS_E_TOOBIG);
    /* max_frame above the hard limit is capped. */
    put_le32(buf + 20, RFS_FRAME_HARD_MAX);
    assert_int_equal(hdr(0xFFFFFFFFu), RFS_E_TOOBIG);
}

static void test_truncated_bodies(void **state)
{
    /* Every op with fixed fields: each shorter body is refused, whether or not the header
     * admits the truncation. */
    const uint16_t ops[] = {RFS_OP_HELLO,     RFS_OP_AUTH,      RFS_OP_OPEN,   RFS_OP_CLOSE,
                            RFS_OP_PREAD,     RFS_OP_PWRITE,    RFS_OP_PREADV, RFS_OP_SET_SIZE,
                            RFS_OP_STAT,      RFS_OP_RENAME,    RFS_OP_MKDIR,  RFS_OP_LIST,
                            RFS_OP_COUNTER,   RFS_OP_LOCK,      RFS_OP_UNLOCK, RFS_OP_SET_VIEW,
                            RFS_OP_VIEW_READ, RFS_OP_VIEW_WRITE};
    const uint64_t ext[] = {0, 1};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        rfs_req r = {.op = ops[k], .id = 1};
        r.u.hello.min_version = 1; /* harmless for the other ops: union overlap is rewritten */
        switch (ops[k]) {
        case RFS_OP_HELLO:
            r.u.hello.max_version = 1;
            r.u.hello.max_frame = RFS_FRAME_MIN;
            break;
        case RFS_OP_OPEN:
            memset(&r.u, 0, sizeof r.u);
            r.u.open.flags = 1;
            r.u.open.path = wpath("/p");
            break;
        case RFS_OP_STAT: r.u.path.path = wpath("/p"); break;
        case RFS_OP_RENAME:
            r.u.rename.from = wpath("/p");
            r.u.rename.to = wpath("/q");
            break;
        case RFS_OP_MKDIR:
            memset(&r.u, 0, sizeof r.u);
            r.u.mkdir.path = wpath("/p");
            break;
        case RFS_OP_LIST:
            memset(&r.u, 0, sizeof r.u);
            r.u.list.path = wpath("/p");
            break;
        case RFS_OP_PREADV:
            memset(&r.u, 0, sizeof r.u);
            r.u.iov.count = 1;
            break;
        case RFS_OP_LOCK:
            memset(&r.u, 0, sizeof r.u);
            r.u.lock.mode = RFS_LOCK_SHARED;
            break;
        case RFS_OP_SET_VIEW:
            memset(&r.u, 0, sizeof r.u);
            r.data = (const uint8_t *)"e";
            r.data_len = 1;
            break;
        default: memset(&r.u, 0, sizeof r.u); break;
        }
        size_t n = frame_req(&r, ext, buf, sizeof buf);
        assert_int_equal(req_rc(n), RFS_OK);
        size_t fixed = n - r.data_len;
        for (size_t cut = RFS_HDR_SIZE; cut < fixed; cut++) {
            rfs_hdr h;
            assert_int_equal(rfs_hdr_decode(buf, RFS_FRAME_HARD_MAX, &h), RFS_OK);
            rfs_req o;
            /* Header says the full length, fewer bytes arrived. */
            assert_int_equal(rfs_req_decode(&h, buf + RFS_HDR_SIZE, cut - RFS_HDR_SIZE, &o),
                             RFS_E_PROTO);
            /* Header itself announces the shorter body. */
            h.body_len = (uint32_t)(cut - RFS_HDR_SIZE);
            int rc = rfs_req_decode(&h, buf + RFS_HDR_SIZE, cut - RFS_HDR_SIZE, &o);
            /* SET_VIEW/VIEW_WRITE/PWRITE cut inside the fixed part is PROTO; a cut that
             * leaves a valid shorter request can only happen with payload ops. */
            assert_int_not_equal(rc, RFS_OK);
        }
    }
}

static void test_trailing_garbage(void **state)
{
    size_t n = good_pread();
    buf[n] = 0xEE;
    put_le32(buf + 20, 17);
    assert_int_equal(req_rc(n + 1), RFS_E_PROTO);

    rfs_rep c = {.op = RFS_OP_CLOSE, .id = 1};
    n = frame_rep(&c, buf, sizeof buf);
    buf[n] = 0;
    put_le32(buf + 20, 1);
    assert_int_equal(rep_rc(n + 1), RFS_E_PROTO);

    rfs_rep e = {.op = RFS_OP_CLOSE, .id = 1, .status = 11};
    e.u.err.s = "io";
    e.u.err.len = 2;
    n = frame_rep(&e, buf, sizeof buf);
    buf[n] = 'x';
    put_le32(buf + 20, 5);
    assert_int_equal(rep_rc(n + 1), RFS_E_PROTO);
}

static void test_direction(void **state)
{
    size_t n = good_pread();
    rfs_hdr h;
    assert_int_equal(rfs_hdr_decode(buf, RFS_FRAME_DEFAULT, &h), RFS_OK);
    rfs_rep p;
    assert_int_equal(rfs_rep_decode(&h, buf + RFS_HDR_SIZE, n - RFS_HDR_SIZE, &p), RFS_E_PROTO);
    h.flags = RFS_F_REPLY;
    rfs_req r;
    assert_int_equal(rfs_req_decode(&h, buf + RFS_HDR_SIZE, n - RFS_HDR_SIZE, &r), RFS_E_PROTO);
    h.flags = 0;
    h.status = 3; /* requests carry no status */
    assert_int_equal(rfs_req_decode(&h, buf + RFS_HDR_SIZE, n - RFS_HDR_SIZE, &r), RFS_E_PROTO);
}

/* STAT request with a hand-made path field. */
static size_t stat_frame(uint16_t declared, const char *bytes, size_t nbytes)
{
    rfs_hdr h = {.version = 1, .op = RFS_OP_STAT, .req_id = 1, .body_len = (uint32_t)(2 + nbytes)};
    rfs_hdr_encode(buf, &h);
    put_le16(buf + RFS_HDR_SIZE, declared);
    memcpy(buf + RFS_HDR_SIZE + 2, bytes, nbytes);
    return RFS_HDR_SIZE + 2 + nbytes;
}

static void test_paths(void **state)
{
    assert_int_equal(req_rc(stat_frame(2, "/a", 2)), RFS_OK);
    assert_int_equal(req_rc(stat_frame(0, "", 0)), RFS_E_INVAL);
    assert_int_equal(req_rc(stat_frame(3, "/\0a", 3)), RFS_E_INVAL);
    assert_int_equal(req_rc(stat_frame(5, "/a", 2)), RFS_E_PROTO); /* runs past body */
    assert_int_equal(req_rc(stat_frame(1, "/a", 2)), RFS_E_PROTO); /* trailing byte */
    static char big[RFS_MAX_PATH + 1];
    memset(big, 'p', sizeof big);
    assert_int_equal(req_rc(stat_frame(RFS_MAX_PATH + 1, big, sizeof big)), RFS_E_TOOBIG);
    assert_int_equal(req_rc(stat_frame(0xFFFF, big, 10)), RFS_E_PROTO);

    size_t n;
    rfs_req r = {.op = RFS_OP_DELETE};
    r.u.path.path.s = big;
    r.u.path.path.len = RFS_MAX_PATH + 1;
    assert_int_equal(rfs_req_encode(&r, NULL, buf, sizeof buf, &n), RFS_E_TOOBIG);
}

/* PREADV/PWRITEV request with raw extents and data bytes. */
static size_t iov_frame(uint16_t op, uint32_t count, const uint64_t *ext, size_t next, size_t ndata)
{
    size_t body = 8 + next * 16 + ndata;
    rfs_hdr h = {.version = 1, .op = op, .req_id = 1, .body_len = (uint32_t)body};
    rfs_hdr_encode(buf, &h);
    uint8_t *p = buf + RFS_HDR_SIZE;
    put_le32(p, 1);
    put_le32(p + 4, count);
    for (size_t i = 0; i < next; i++) {
        put_le64(p + 8 + 16 * i, ext[2 * i]);
        put_le64(p + 16 + 16 * i, ext[2 * i + 1]);
    }
    memset(p + 8 + 16 * next, 'd', ndata);
    return RFS_HDR_SIZE + body;
}

static void test_extents(void **state)
{
    const uint64_t ok[] = {0, 4, 100, 6};
    assert_int_equal(req_rc(iov_frame(RFS_OP_PWRITEV, 2, ok, 2, 10)), RFS_OK);
    assert_int_equal(req_rc(iov_frame(RFS_OP_PREADV, 2, ok, 2, 0)), RFS_OK);
    /* Data length mismatch, both ways. */
    assert_int_equal(req_rc(iov_frame(RFS_OP_PWRITEV, 2, ok, 2, 9)), RFS_E_PROTO);
    assert_int_equal(req_rc(iov_frame(RFS_OP_PWRITEV, 2, ok, 2, 11)), RFS_E_PROTO);
    /* PREADV carries no data. */
    assert_int_equal(req_rc(iov_frame(RFS_OP_PREADV, 2, ok, 2, 1)), RFS_E_PROTO);
    /* Count larger than the extents present. */
    assert_int_equal(req_rc(iov_frame(RFS_OP_PREADV, 3, ok, 2, 0)), RFS_E_PROTO);
    /* Count over the limit, whatever follows. */
    assert_int_equal(req_rc(iov_frame(RFS_OP_PREADV, RFS_MAX_EXTENTS + 1, ok, 2, 0)), RFS_E_TOOBIG);
    assert_int_equal(req_rc(iov_frame(RFS_OP_PWRITEV, 0xFFFFFFFFu, ok, 2, 0)), RFS_E_TOOBIG);
    /* An extent past the largest offset. */
    const uint64_t far[] = {(uint64_t)INT64_MAX, 1};
    assert_int_equal(req_rc(iov_frame(RFS_OP_PREADV, 1, far, 1, 0)), RFS_E_FBIG);
    const uint64_t huge[] = {UINT64_MAX, 0};
    assert_int_equal(req_rc(iov_frame(RFS_OP_PREADV, 1, huge, 1, 0)), RFS_E_FBIG);
    /* Lengths each legal, but their sum overflows a u64. */
    const uint64_t wrap[] = {0, (uint64_t)INT64_MAX, 0, (uint64_t)INT64_MAX,
                             0, (uint64_t)INT64_MAX};
    assert_int_equal(req_rc(iov_frame(RFS_OP_PWRITEV, 3, wrap, 3, 0)), RFS_E_TOOBIG);
    assert_int_equal(req_rc(iov_frame(RFS_OP_PREADV, 3, wrap, 3, 0)), RFS_E_TOOBIG);
    /* PREADV asking for more than one reply frame can carry. */
    const uint64_t toomuch[] = {0, RFS_FRAME_HARD_MAX};
    assert_int_equal(req_rc(iov_frame(RFS_OP_PREADV, 1, toomuch, 1, 0)), RFS_E_TOOBIG);
    /* Same checks on the encoder side. */
    size_t n;
    rfs_req r = {.op = RFS_OP_PREADV};
    r.u.iov.count = 3;
    assert_int_equal(rfs_req_encode(&r, wrap, buf, sizeof buf, &n), RFS_E_TOOBIG);
    r.u.iov.count = RFS_MAX_EXTENTS + 1;
    assert_int_equal(rfs_req_encode(&r, NULL, buf, sizeof buf, &n), RFS_E_TOOBIG);
}

static void test_field_values(void **state)
{
    rfs_req r;
    size_t n;
    /* HELLO: version range and max frame bounds. */
    rfs_req h = {.op = RFS_OP_HELLO};
    h.u.hello.min_version = 1;
    h.u.hello.max_version = 1;
    h.u.hello.max_frame = RFS_FRAME_MIN;
    n = frame_req(&h, NULL, buf, sizeof buf);
    put_le32(buf + RFS_HDR_SIZE + 4, RFS_FRAME_MIN - 1);
    assert_int_equal(req_rc(n), RFS_E_INVAL);
    put_le32(buf + RFS_HDR_SIZE + 4, RFS_FRAME_HARD_MAX + 1);
    assert_int_equal(req_rc(n), RFS_E_TOOBIG);
    put_le32(buf + RFS_HDR_SIZE + 4, RFS_FRAME_HARD_MAX);
    assert_int_equal(req_rc(n), RFS_OK);
    put_le16(buf + RFS_HDR_SIZE, 2); /* min 2 > max 1 */
    assert_int_equal(req_rc(n), RFS_E_INVAL);
    put_le16(buf + RFS_HDR_SIZE, 0);
    assert_int_equal(req_rc(n), RFS_E_INVAL);

    /* OPEN flags and mode. */
    rfs_req o = {.op = RFS_OP_OPEN};
    o.u.open.flags = RFS_O_WRONLY;
    o.u.open.path = wpath("/f");
    n = frame_req(&o, NULL, buf, sizeof buf);
    put_le32(buf + RFS_HDR_SIZE, 0x40 | RFS_O_WRONLY);
    assert_int_equal(req_rc(n), RFS_E_INVAL);
    put_le32(buf + RFS_HDR_SIZE, RFS_O_CREAT);
    assert_int_equal(req_rc(n), RFS_E_INVAL);
    put_le32(buf + RFS_HDR_SIZE, RFS_O_WRONLY);
    put_le32(buf + RFS_HDR_SIZE + 4, 010000);
    assert_int_equal(req_rc(n), RFS_E_INVAL);

    /* PREAD offsets and length. */
    size_t p = good_pread();
    put_le64(buf + RFS_HDR_SIZE + 4, (uint64_t)INT64_MAX);
    assert_int_equal(req_rc(p), RFS_E_FBIG);
    put_le64(buf + RFS_HDR_SIZE + 4, 0);
    put_le32(buf + RFS_HDR_SIZE + 12, RFS_FRAME_HARD_MAX);
    assert_int_equal(req_rc(p), RFS_E_TOOBIG);

    /* COUNTER set flag, LOCK mode. */
    rfs_req c = {.op = RFS_OP_COUNTER};
    n = frame_req(&c, NULL, buf, sizeof buf);
    put_le32(buf + RFS_HDR_SIZE + 8, 2);
    assert_int_equal(req_rc(n), RFS_E_INVAL);
    rfs_req l = {.op = RFS_OP_LOCK};
    l.u.lock.mode = RFS_LOCK_SHARED;
    n = frame_req(&l, NULL, buf, sizeof buf);
    put_le32(buf + RFS_HDR_SIZE + 20, 3);
    assert_int_equal(req_rc(n), RFS_E_INVAL);

    /* SET_VIEW needs an encoding; fixed-size ops refuse extra bytes. */
    rfs_req s = {.op = RFS_OP_SET_VIEW, .data = (const uint8_t *)"e", .data_len = 1};
    n = frame_req(&s, NULL, buf, sizeof buf);
    put_le32(buf + 20, 16);
    assert_int_equal(req_rc(n - 1), RFS_E_INVAL);
    (void)r;
}

static void test_bad_replies(void **state)
{
    /* Error message over the limit, or with a NUL. */
    rfs_hdr h = {.version = 1,
                 .op = RFS_OP_STAT,
                 .flags = RFS_F_REPLY,
                 .req_id = 1,
                 .status = 1,
                 .body_len = 2 + RFS_MAX_MSG + 1};
    rfs_hdr_encode(buf, &h);
    put_le16(buf + RFS_HDR_SIZE, RFS_MAX_MSG + 1);
    memset(buf + RFS_HDR_SIZE + 2, 'm', RFS_MAX_MSG + 1);
    assert_int_equal(rep_rc(RFS_HDR_SIZE + h.body_len), RFS_E_TOOBIG);
    h.body_len = 5;
    rfs_hdr_encode(buf, &h);
    put_le16(buf + RFS_HDR_SIZE, 3);
    memcpy(buf + RFS_HDR_SIZE + 2, "a\0b", 3);
    assert_int_equal(rep_rc(RFS_HDR_SIZE + 5), RFS_E_PROTO);
    put_le16(buf + RFS_HDR_SIZE, 4); /* longer than the body */
    assert_int_equal(rep_rc(RFS_HDR_SIZE + 5), RFS_E_PROTO);

    /* HELLO reply: feature bits a newer server may set are accepted; frame bounds, auth flag. */
    rfs_rep hr = {.op = RFS_OP_HELLO};
    hr.u.hello.version = 1;
    hr.u.hello.max_frame = RFS_FRAME_DEFAULT;
    size_t n = frame_rep(&hr, buf, sizeof buf);
    put_le16(buf + RFS_HDR_SIZE + 2, 0xffff);
    assert_int_equal(rep_rc(n), RFS_OK);
    put_le16(buf + RFS_HDR_SIZE + 2, 0);
    put_le32(buf + RFS_HDR_SIZE + 4, 100);
    assert_int_equal(rep_rc(n), RFS_E_PROTO);
    put_le32(buf + RFS_HDR_SIZE + 4, RFS_FRAME_DEFAULT);
    put_le32(buf + RFS_HDR_SIZE + 8, 2);
    assert_int_equal(rep_rc(n), RFS_E_PROTO);

    /* STAT type. */
    rfs_rep st = {.op = RFS_OP_STAT};
    st.u.stat.type = RFS_TYPE_FILE;
    n = frame_rep(&st, buf, sizeof buf);
    put_le32(buf + RFS_HDR_SIZE, 9);
    assert_int_equal(rep_rc(n), RFS_E_PROTO);
    st.u.stat.type = 0;
    assert_int_equal(rfs_rep_encode(&st, buf, sizeof buf, &n), RFS_E_INVAL);

    /* Empty/value replies with payload. */
    rfs_rep c = {.op = RFS_OP_GET_SIZE};
    n = frame_rep(&c, buf, sizeof buf);
    assert_int_equal(n, RFS_HDR_SIZE + 8);
    put_le32(buf + 20, 7);
    assert_int_equal(rep_rc(n - 1), RFS_E_PROTO);
}

/* LIST reply with hand-made entries. */
static size_t list_frame(uint32_t count, const uint8_t *entries, size_t len)
{
    rfs_hdr h = {.version = 1,
                 .op = RFS_OP_LIST,
                 .flags = RFS_F_REPLY,
                 .req_id = 1,
                 .body_len = (uint32_t)(8 + len)};
    rfs_hdr_encode(buf, &h);
    put_le32(buf + RFS_HDR_SIZE, count);
    put_le32(buf + RFS_HDR_SIZE + 4, 0);
    memcpy(buf + RFS_HDR_SIZE + 8, entries, len);
    return RFS_HDR_SIZE + 8 + len;
}

static size_t raw_entry(uint8_t *p, uint32_t type, const char *name, size_t len)
{
    memset(p, 0, RFS_LIST_ENTRY_FIXED);
    put_le32(p, type);
    put_le16(p + 24, (uint16_t)len);
    memcpy(p + RFS_LIST_ENTRY_FIXED, name, len);
    return RFS_LIST_ENTRY_FIXED + len;
}

static void test_bad_list(void **state)
{
    uint8_t e[600];
    size_t n = raw_entry(e, RFS_TYPE_FILE, "ok", 2);
    assert_int_equal(rep_rc(list_frame(1, e, n)), RFS_OK);
    assert_int_equal(rep_rc(list_frame(2, e, n)), RFS_E_PROTO);     /* count > entries */
    assert_int_equal(rep_rc(list_frame(0, e, n)), RFS_E_PROTO);     /* bytes after entries */
    assert_int_equal(rep_rc(list_frame(1, e, n - 1)), RFS_E_PROTO); /* truncated name */
    assert_int_equal(rep_rc(list_frame(1, e, 10)), RFS_E_PROTO);    /* truncated fixed part */
    assert_int_equal(rep_rc(list_frame(RFS_LIST_MAX_ENTRIES + 1, e, n)), RFS_E_TOOBIG);
    n = raw_entry(e, RFS_TYPE_FILE, "../x", 4);
    assert_int_equal(rep_rc(list_frame(1, e, n)), RFS_E_PROTO);
    n = raw_entry(e, RFS_TYPE_FILE, "..", 2);
    assert_int_equal(rep_rc(list_frame(1, e, n)), RFS_E_PROTO);
    n = raw_entry(e, RFS_TYPE_FILE, "a\0", 2);
    assert_int_equal(rep_rc(list_frame(1, e, n)), RFS_E_PROTO);
    n = raw_entry(e, RFS_TYPE_FILE, "", 0);
    assert_int_equal(rep_rc(list_frame(1, e, n)), RFS_E_PROTO);
    n = raw_entry(e, 0, "x", 1);
    assert_int_equal(rep_rc(list_frame(1, e, n)), RFS_E_PROTO);
    char longname[RFS_MAX_NAME + 1];
    memset(longname, 'n', sizeof longname);
    n = raw_entry(e, RFS_TYPE_FILE, longname, sizeof longname);
    assert_int_equal(rep_rc(list_frame(1, e, n)), RFS_E_TOOBIG);
    n = raw_entry(e, RFS_TYPE_FILE, longname, RFS_MAX_NAME);
    assert_int_equal(rep_rc(list_frame(1, e, n)), RFS_OK);
}

/* xorshift64*: deterministic, so a failure reproduces. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

static void test_random_garbage(void **state)
{
    static const uint16_t ops[] = {1,  2,  3,  10, 11, 12, 13, 14, 15, 16, 17, 18,
                                   19, 20, 21, 22, 23, 24, 30, 31, 32, 40, 41, 42};
    uint8_t frame[512];
    int decoded = 0;
    for (int iter = 0; iter < 200000; iter++) {
        size_t len = RFS_HDR_SIZE + (size_t)(rnd() % (sizeof frame - RFS_HDR_SIZE));
        for (size_t i = 0; i < len; i++)
            frame[i] = (uint8_t)rnd();
        /* Mostly plausible headers, so the body decoders get exercised too. */
        if (iter % 8 != 0) {
            rfs_hdr h = {.version = 1,
                         .op = ops[rnd() % 24],
                         .flags = (uint16_t)(rnd() & 1),
                         .req_id = (uint32_t)iter,
                         .status = (rnd() % 4 == 0) ? 12 : 0,
                         .body_len = (uint32_t)(len - RFS_HDR_SIZE)};
            rfs_hdr_encode(frame, &h);
            /* Small path/count/length fields make valid bodies likelier. */
            if (len > RFS_HDR_SIZE + 12 && rnd() % 2) {
                for (size_t i = RFS_HDR_SIZE; i + 2 <= len; i += 2 + rnd() % 6)
                    if (rnd() % 3 == 0)
                        frame[i + 1] = 0;
            }
        }
        decoded += rfs_check_frames(frame, len);
    }
    /* The loop is only meaningful if some random frames were valid. */
    assert_true(decoded > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_truncated_bodies),
        cmocka_unit_test(test_trailing_garbage),
        cmocka_unit_test(test_direction),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_extents),
        cmocka_unit_test(test_field_values),
        cmocka_unit_test(test_bad_replies),
        cmocka_unit_test(test_bad_list),
        cmocka_unit_test(test_random_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
