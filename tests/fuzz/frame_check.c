/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* See frame_check.h. Uses abort() rather than assert() so the checks stay in release builds. */
#include "frame_check.h"

#include "common/compress.h"
#include "common/err.h"
#include "proto/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

static int inside(const void *p, size_t n, const uint8_t *body, size_t len)
{
    if (n == 0)
        return 1;
    const uint8_t *q = p;
    return q >= body && q <= body + len && n <= (size_t)(body + len - q);
}

static int known_error(int rc)
{
    return rc == RFS_E_PROTO || rc == RFS_E_VERSION || rc == RFS_E_TOOBIG || rc == RFS_E_INVAL ||
           rc == RFS_E_FBIG;
}

static void check_path(const rfs_wpath *p, const uint8_t *body, size_t len)
{
    CHECK(p->len >= 1 && p->len <= RFS_MAX_PATH);
    CHECK(inside(p->s, p->len, body, len));
    CHECK(memchr(p->s, '\0', p->len) == NULL);
}

static void check_req_ptrs(const rfs_req *r, const uint8_t *body, size_t len)
{
    CHECK(inside(r->data, r->data_len, body, len));
    switch (r->op) {
    case RFS_OP_OPEN: check_path(&r->u.open.path, body, len); break;
    case RFS_OP_STAT:
    case RFS_OP_DELETE:
    case RFS_OP_STATFS: check_path(&r->u.path.path, body, len); break;
    case RFS_OP_RENAME:
        check_path(&r->u.rename.from, body, len);
        check_path(&r->u.rename.to, body, len);
        break;
    case RFS_OP_MKDIR:
    case RFS_OP_CHMOD: check_path(&r->u.mkdir.path, body, len); break;
    case RFS_OP_WRITE_FILE: check_path(&r->u.write_file.path, body, len); break;
    case RFS_OP_READ_FILE: check_path(&r->u.read_file.path, body, len); break;
    case RFS_OP_LIST:
    case RFS_OP_LIST_TREE: check_path(&r->u.list.path, body, len); break;
    case RFS_OP_OBJ_LEASE: check_path(&r->u.obj_lease.path, body, len); break;
    case RFS_OP_CAP_ISSUE:
        check_path(&r->u.cap_issue.path, body, len);
        CHECK(r->u.cap_issue.right >= 1 && r->u.cap_issue.right <= 3);
        CHECK((r->u.cap_issue.flags & ~RFS_CAP_ISSUE_LEASE) == 0);
        break;
    case RFS_OP_CAP_AUTH:
    case RFS_OP_CAP_REVOKE: /* printable, no space, within the limit */
        CHECK(r->u.cap.str.len >= 1 && r->u.cap.str.len <= RFS_CAP_WIRE_MAX);
        CHECK(inside(r->u.cap.str.s, r->u.cap.str.len, body, len));
        for (unsigned i = 0; i < r->u.cap.str.len; i++)
            CHECK(r->u.cap.str.s[i] > 0x20 && r->u.cap.str.s[i] < 0x7f);
        break;
    case RFS_OP_PREADV:
    case RFS_OP_PWRITEV: {
        CHECK(r->u.iov.count <= RFS_MAX_EXTENTS);
        CHECK(inside(r->u.iov.ext, (size_t)r->u.iov.count * RFS_EXTENT_WIRE, body, len));
        uint64_t sum = 0;
        for (uint32_t i = 0; i < r->u.iov.count; i++) {
            uint64_t off, l;
            rfs_extent_at(r->u.iov.ext, i, &off, &l);
            CHECK(off <= (uint64_t)INT64_MAX && l <= (uint64_t)INT64_MAX - off);
            sum += l;
        }
        CHECK(sum == r->u.iov.total);
        if (r->op == RFS_OP_PWRITEV)
            CHECK(sum == r->data_len);
        break;
    }
    default: break;
    }
}

static void check_request(const rfs_hdr *h, const uint8_t *frame, size_t flen)
{
    const uint8_t *body = frame + RFS_HDR_SIZE;
    size_t len = flen - RFS_HDR_SIZE;
    rfs_req r;
    int rc = rfs_req_decode(h, body, len, &r);
    if (rc) {
        CHECK(known_error(rc));
        return;
    }
    check_req_ptrs(&r, body, len);
    size_t cap = rfs_req_encoded_size(&r);
    CHECK(cap >= RFS_HDR_SIZE && cap <= flen);
    uint8_t *out = malloc(cap);
    CHECK(out);
    size_t n = 0;
    CHECK(rfs_req_encode(&r, NULL, out, cap, &n) == RFS_OK);
    CHECK(n == cap);
    CHECK(n + r.data_len == flen);
    CHECK(memcmp(out, frame, n) == 0);
    CHECK(r.data == NULL || r.data == frame + n);
    free(out);
}

static void check_reply(const rfs_hdr *h, const uint8_t *frame, size_t flen)
{
    const uint8_t *body = frame + RFS_HDR_SIZE;
    size_t len = flen - RFS_HDR_SIZE;
    rfs_rep r;
    int rc = rfs_rep_decode(h, body, len, &r);
    if (rc) {
        CHECK(known_error(rc));
        return;
    }
    CHECK(inside(r.data, r.data_len, body, len));
    if (r.status != 0) {
        CHECK(r.u.err.len <= RFS_MAX_MSG);
        CHECK(inside(r.u.err.s, r.u.err.len, body, len));
    } else if (r.op == RFS_OP_LIST) {
        CHECK(r.u.list.count <= RFS_LIST_MAX_ENTRIES);
        CHECK(inside(r.u.list.entries, r.u.list.entries_len, body, len));
        const uint8_t *p = r.u.list.entries;
        size_t rem = r.u.list.entries_len;
        for (uint32_t i = 0; i < r.u.list.count; i++) {
            rfs_list_entry e;
            CHECK(rfs_list_entry_next(&p, &rem, &e) == RFS_OK);
            CHECK(e.name.len >= 1 && e.name.len <= RFS_MAX_NAME);
            CHECK(inside(e.name.s, e.name.len, body, len));
            CHECK(memchr(e.name.s, '/', e.name.len) == NULL);
        }
        CHECK(rem == 0);
    } else if (r.op == RFS_OP_LIST_TREE) {
        /* whatever blocks parse stay inside the body, with names that are relative paths */
        const uint8_t *p = r.data;
        size_t rem = r.data_len;
        rfs_wpath rel;
        uint32_t count;
        const uint8_t *entries;
        size_t elen;
        while (rem && rfs_ltree_block_next(&p, &rem, &rel, &count, &entries, &elen) == RFS_OK) {
            CHECK(inside(rel.s, rel.len, body, len) && inside(entries, elen, body, len));
            CHECK(!rel.len || (rel.s[0] != '/' && rel.s[rel.len - 1] != '/'));
            CHECK(count <= RFS_LTREE_MAX_ENTRIES);
        }
    }
    uint8_t *out = malloc(flen);
    CHECK(out);
    size_t n = 0;
    CHECK(rfs_rep_encode(&r, out, flen, &n) == RFS_OK);
    CHECK(n + r.data_len == flen);
    CHECK(memcmp(out, frame, n) == 0);
    free(out);
}

/* Walks raw bytes as LIST entries: must stop cleanly, never read past the end. */
static void check_entries(const uint8_t *data, size_t size)
{
    const uint8_t *p = data;
    size_t rem = size;
    for (int i = 0; i < 64 && rem > 0; i++) {
        rfs_list_entry e;
        const uint8_t *before = p;
        if (rfs_list_entry_next(&p, &rem, &e) != RFS_OK) {
            CHECK(p == before);
            break;
        }
        CHECK(p > before && p <= data + size && rem == (size_t)(data + size - p));
        CHECK(inside(e.name.s, e.name.len, data, size));
    }
}

static int check_plain(const rfs_hdr *h, const uint8_t *frame, size_t flen)
{
    rfs_req r;
    rfs_rep p;
    int okq = rfs_req_decode(h, frame + RFS_HDR_SIZE, h->body_len, &r) == RFS_OK;
    int okp = rfs_rep_decode(h, frame + RFS_HDR_SIZE, h->body_len, &p) == RFS_OK;
    CHECK(!(okq && okp)); /* the reply flag decides which one a frame is */
    check_request(h, frame, flen);
    check_reply(h, frame, flen);
    return okq + okp;
}

/* A compressed frame: the pack header is refused with a documented code, or it describes
 * pieces inside the body and a frame within the limit; then decompression (into exactly
 * raw_len bytes, never more) fails cleanly or yields a frame the plain checks accept. */
static int check_packed(const rfs_hdr *h, const uint8_t *body, size_t len)
{
    rfs_pack_info pi;
    int rc = rfs_frame_pack_info(h, body, len, RFS_FRAME_HARD_MAX, &pi);
    if (rc) {
        CHECK(known_error(rc));
        return 0;
    }
    CHECK(inside(pi.fields, pi.fields_len, body, len));
    CHECK(inside(pi.packed, pi.packed_len, body, len));
    CHECK(pi.fields_len + pi.packed_len + RFS_PACK_HDR == len);
    CHECK((uint64_t)RFS_HDR_SIZE + pi.fields_len + pi.raw_len <= RFS_FRAME_HARD_MAX);
    if (pi.raw_len > (1u << 20))
        return 0; /* keep the fuzzer fast; the bound itself is checked above */
    size_t n = RFS_HDR_SIZE + pi.fields_len + pi.raw_len;
    uint8_t *plain = malloc(n);
    CHECK(plain);
    rfs_hdr ph = *h;
    ph.flags &= (uint16_t)~RFS_F_PACK;
    ph.body_len = (uint32_t)(pi.fields_len + pi.raw_len);
    rfs_hdr_encode(plain, &ph);
    memcpy(plain + RFS_HDR_SIZE, pi.fields, pi.fields_len);
    int ok = 0;
    rc = rfs_codec_decompress(pi.codec, plain + RFS_HDR_SIZE + pi.fields_len, pi.raw_len, pi.packed,
                              pi.packed_len);
    if (rc)
        CHECK(rc == RFS_E_PROTO || rc == RFS_E_TOOBIG || rc == RFS_E_NOMEM);
    else
        ok = check_plain(&ph, plain, n);
    free(plain);
    return ok;
}

/* A frame with a checksum: the checker refuses it (mismatch: RFS_E_IO) or strips it to a
 * frame without one, which must pass the plain checks and seal back to the same bytes. */
static int check_sealed(const rfs_hdr *h, const uint8_t *frame, size_t flen)
{
    rfs_hdr s = *h;
    const uint8_t *body = frame + RFS_HDR_SIZE;
    size_t len = h->body_len;
    int rc = rfs_frame_check_sum(&s, &body, &len);
    if (rc) {
        CHECK(rc == RFS_E_IO || rc == RFS_E_PROTO);
        return 0;
    }
    CHECK(body == frame + RFS_HDR_SIZE + RFS_SUM_LEN && len + RFS_HDR_SIZE + RFS_SUM_LEN == flen);
    CHECK((s.flags & RFS_F_SUM) == 0 && s.body_len == len);
    uint8_t *plain = malloc(flen);
    CHECK(plain);
    rfs_hdr_encode(plain, &s);
    memcpy(plain + RFS_HDR_SIZE, body, len);
    int ok = (s.flags & RFS_F_PACK) ? check_packed(&s, plain + RFS_HDR_SIZE, len)
                                    : check_plain(&s, plain, RFS_HDR_SIZE + len);
    size_t n = RFS_HDR_SIZE + len;
    CHECK(rfs_frame_add_sum(plain, &n, flen, NULL, 0) == RFS_OK);
    CHECK(n == flen && memcmp(plain, frame, flen) == 0);
    free(plain);
    return ok;
}

int rfs_check_frames(const uint8_t *data, size_t size)
{
    int ok = 0;
    check_entries(data, size);
    while (size >= RFS_HDR_SIZE) {
        rfs_hdr h;
        int rc = rfs_hdr_decode(data, RFS_FRAME_HARD_MAX, &h);
        rfs_hdr small;
        int rc_small = rfs_hdr_decode(data, RFS_PRE_HELLO_MAX, &small);
        /* A frame that fits the small limit fits the large one. */
        CHECK(rc_small != RFS_OK || rc == RFS_OK);
        if (rc) {
            CHECK(known_error(rc));
            return ok;
        }
        CHECK(h.version == RFS_PROTO_VERSION &&
              (h.flags & ~(RFS_F_REPLY | RFS_F_SUM | RFS_F_PACK | RFS_F_VER | RFS_F_EXTRA |
                           RFS_F_ZOK | RFS_F_ZSHUF | RFS_F_COLL)) == 0);
        size_t avail = size - RFS_HDR_SIZE;
        if (avail < h.body_len) {
            /* Truncated body: both decoders must refuse it. */
            rfs_req r;
            rfs_rep p;
            CHECK(rfs_req_decode(&h, data + RFS_HDR_SIZE, avail, &r) == RFS_E_PROTO);
            CHECK(rfs_rep_decode(&h, data + RFS_HDR_SIZE, avail, &p) == RFS_E_PROTO);
            return ok;
        }
        size_t flen = RFS_HDR_SIZE + h.body_len;
        /* Decode from a private copy so that reads past the frame are caught by ASan. */
        uint8_t *frame = malloc(flen);
        CHECK(frame);
        memcpy(frame, data, flen);
        if (h.flags & RFS_F_SUM) {
            ok += check_sealed(&h, frame, flen);
            free(frame);
            data += flen;
            size -= flen;
            continue;
        }
        ok += (h.flags & RFS_F_PACK) ? check_packed(&h, frame + RFS_HDR_SIZE, h.body_len)
                                     : check_plain(&h, frame, flen);
        free(frame);
        data += flen;
        size -= flen;
    }
    return ok;
}
