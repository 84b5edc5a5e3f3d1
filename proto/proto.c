/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Frame header, HELLO negotiation, extents, LIST entries and the field checks
 * shared by the request and reply codecs (request.c, reply.c). Byte layouts: docs/protocol.md. */
#include "proto/proto.h"
#include "proto/wire.h"

#include "common/err.h"

#include <stdint.h>
#include <string.h>

void rfs_hdr_encode(uint8_t out[RFS_HDR_SIZE], const rfs_hdr *h)
{
    le32_put(out, RFS_MAGIC);
    le16_put(out + 4, h->version);
    le16_put(out + 6, h->op);
    le16_put(out + 8, h->flags);
    le16_put(out + 10, 0);
    le32_put(out + 12, h->req_id);
    le32_put(out + 16, h->status);
    le32_put(out + 20, h->body_len);
}

void rfs_hdr_peek(const uint8_t in[RFS_HDR_SIZE], uint32_t *magic, uint16_t *op, uint32_t *req_id)
{
    *magic = le32_get(in);
    *op = le16_get(in + 6);
    *req_id = le32_get(in + 12);
}

/* h is filled with the raw fields whenever the magic matches, even on failure, so a server can
 * still answer req_id (and knows body_len, to skip the body or to give up). */
int rfs_hdr_decode(const uint8_t in[RFS_HDR_SIZE], uint32_t max_frame, rfs_hdr *h)
{
    memset(h, 0, sizeof *h);
    uint32_t magic = le32_get(in);
    if (magic != RFS_MAGIC)
        return rfs_fail(RFS_E_PROTO, "frame header: bad magic 0x%08x (not an rfs peer?)", magic);
    h->version = le16_get(in + 4);
    h->op = le16_get(in + 6);
    h->flags = le16_get(in + 8);
    uint16_t reserved = le16_get(in + 10);
    h->req_id = le32_get(in + 12);
    h->status = le32_get(in + 16);
    h->body_len = le32_get(in + 20);

    if (h->version != RFS_PROTO_VERSION)
        return rfs_fail(RFS_E_VERSION, "frame header: protocol version %u, this peer speaks %u",
                        h->version, RFS_PROTO_VERSION);
    if (reserved != 0 || (h->flags & ~(RFS_F_REPLY | RFS_F_SUM | RFS_F_PACK | RFS_F_VER |
                                       RFS_F_EXTRA | RFS_F_ZOK | RFS_F_ZSHUF | RFS_F_COLL)) != 0)
        return rfs_fail(RFS_E_PROTO,
                        "frame header: reserved bits set (flags 0x%04x, reserved 0x%04x)", h->flags,
                        reserved);
    if (!rfs_op_known(h->op))
        return rfs_fail(RFS_E_PROTO, "frame header: unknown op %u", h->op);
    if ((h->flags & RFS_F_SUM) && h->body_len < RFS_SUM_LEN)
        return rfs_fail(RFS_E_PROTO, "frame header: %s frame with a checksum but %u body bytes",
                        rfs_op_name(h->op), h->body_len);
    uint64_t limit = max_frame < RFS_FRAME_HARD_MAX ? max_frame : RFS_FRAME_HARD_MAX;
    if ((uint64_t)RFS_HDR_SIZE + h->body_len > limit)
        return rfs_fail(RFS_E_TOOBIG,
                        "frame header: %s frame of %llu bytes over the %llu-byte limit",
                        rfs_op_name(h->op), (unsigned long long)RFS_HDR_SIZE + h->body_len,
                        (unsigned long long)limit);
    return RFS_OK;
}

int rfs_hello_choose(uint16_t min_version, uint16_t max_version, uint32_t client_max_frame,
                     uint32_t server_max_frame, uint16_t *version, uint32_t *max_frame)
{
    /* This build speaks exactly one version; later builds pick the highest common one. */
    if (min_version > RFS_PROTO_VERSION || max_version < RFS_PROTO_VERSION)
        return rfs_fail(RFS_E_VERSION, "HELLO: client speaks versions %u..%u, server speaks %u",
                        min_version, max_version, RFS_PROTO_VERSION);
    *version = RFS_PROTO_VERSION;
    uint32_t m = client_max_frame < server_max_frame ? client_max_frame : server_max_frame;
    if (m > RFS_FRAME_HARD_MAX)
        m = RFS_FRAME_HARD_MAX;
    if (m < RFS_FRAME_MIN)
        m = RFS_FRAME_MIN;
    *max_frame = m;
    return RFS_OK;
}

void rfs_extent_at(const uint8_t *ext, uint32_t i, uint64_t *off, uint64_t *len)
{
    const uint8_t *p = ext + (size_t)i * RFS_EXTENT_WIRE;
    *off = le64_get(p);
    *len = le64_get(p + 8);
}

/* ---- shared field checks ---- */

int rfs_wire_check_path(uint16_t op, const char *field, const rfs_wpath *p)
{
    if (p->len == 0 || p->s == NULL)
        return rfs_fail(RFS_E_INVAL, "%s: empty %s", rfs_op_name(op), field);
    if (p->len > RFS_MAX_PATH)
        return rfs_fail(RFS_E_TOOBIG, "%s: %s of %u bytes (limit %u)", rfs_op_name(op), field,
                        p->len, RFS_MAX_PATH);
    if (memchr(p->s, '\0', p->len))
        return rfs_fail(RFS_E_INVAL, "%s: %s contains a NUL byte", rfs_op_name(op), field);
    return RFS_OK;
}

/* Offsets travel as u64 but files are addressed with off_t: every byte of [off, off+len)
 * must stay at or below INT64_MAX. */
int rfs_wire_check_range(uint16_t op, const char *field, uint64_t off, uint64_t len)
{
    if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
        return rfs_fail(RFS_E_FBIG, "%s: %s %llu+%llu beyond the largest file offset",
                        rfs_op_name(op), field, (unsigned long long)off, (unsigned long long)len);
    return RFS_OK;
}

int rfs_wire_extents_total(uint16_t op, uint32_t count, const uint8_t *wire, const uint64_t *host,
                           uint64_t *total)
{
    if (count > RFS_MAX_EXTENTS)
        return rfs_fail(RFS_E_TOOBIG, "%s: %u extents (limit %u)", rfs_op_name(op), count,
                        RFS_MAX_EXTENTS);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t off, len;
        if (wire) {
            rfs_extent_at(wire, i, &off, &len);
        } else {
            off = host[2 * (size_t)i];
            len = host[2 * (size_t)i + 1];
        }
        int rc = rfs_wire_check_range(op, "extent", off, len);
        if (rc)
            return rc;
        if (len > UINT64_MAX - sum)
            return rfs_fail(RFS_E_TOOBIG, "%s: extent lengths overflow", rfs_op_name(op));
        sum += len;
    }
    *total = sum;
    return RFS_OK;
}

/* ---- LIST entries ---- */

static int check_name(const char *s, uint16_t len)
{
    if (len == 0 || len > RFS_MAX_NAME)
        return rfs_fail(len ? RFS_E_TOOBIG : RFS_E_PROTO, "LIST: entry name of %u bytes", len);
    /* A name is one directory entry: never a path, never "." or "..", so a client that
     * recreates a listing locally cannot be steered outside its target directory. */
    if (memchr(s, '\0', len) || memchr(s, '/', len))
        return rfs_fail(RFS_E_PROTO, "LIST: entry name contains NUL or '/'");
    if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
        return rfs_fail(RFS_E_PROTO, "LIST: entry name is '.' or '..'");
    return RFS_OK;
}

static int check_type(uint32_t type)
{
    return type >= RFS_TYPE_FILE && type <= RFS_TYPE_OTHER;
}

size_t rfs_list_entry_encode(const rfs_list_entry *e, uint8_t *out, size_t cap)
{
    if (!e->name.s || check_name(e->name.s, e->name.len) || !check_type(e->type))
        return 0;
    size_t need = RFS_LIST_ENTRY_FIXED + e->name.len;
    if (cap < need)
        return 0;
    le32_put(out, e->type);
    le32_put(out + 4, e->mode);
    le64_put(out + 8, e->size);
    le64_put(out + 16, (uint64_t)e->mtime_ns);
    le16_put(out + 24, e->name.len);
    memcpy(out + RFS_LIST_ENTRY_FIXED, e->name.s, e->name.len);
    return need;
}

int rfs_list_entry_next(const uint8_t **p, size_t *rem, rfs_list_entry *e)
{
    memset(e, 0, sizeof *e);
    if (*rem < RFS_LIST_ENTRY_FIXED)
        return rfs_fail(RFS_E_PROTO, "LIST: truncated entry (%zu bytes left)", *rem);
    const uint8_t *q = *p;
    e->type = le32_get(q);
    e->mode = le32_get(q + 4);
    e->size = le64_get(q + 8);
    e->mtime_ns = (int64_t)le64_get(q + 16);
    e->name.len = le16_get(q + 24);
    if (!check_type(e->type))
        return rfs_fail(RFS_E_PROTO, "LIST: entry type %u", e->type);
    if (*rem - RFS_LIST_ENTRY_FIXED < e->name.len)
        return rfs_fail(RFS_E_PROTO, "LIST: entry name runs past the body");
    e->name.s = (const char *)q + RFS_LIST_ENTRY_FIXED;
    int rc = check_name(e->name.s, e->name.len);
    if (rc)
        return rc;
    size_t used = RFS_LIST_ENTRY_FIXED + e->name.len;
    *p += used;
    *rem -= used;
    return RFS_OK;
}

int rfs_ltree_block_next(const uint8_t **p, size_t *rem, rfs_wpath *rel, uint32_t *count,
                         const uint8_t **entries, size_t *entries_len)
{
    if (*rem < 2)
        return rfs_fail(RFS_E_PROTO, "LIST_TREE: truncated block (%zu bytes left)", *rem);
    const uint8_t *q = *p;
    uint16_t len = le16_get(q);
    if (len > RFS_MAX_PATH || *rem - 2 < (size_t)len + 4)
        return rfs_fail(RFS_E_PROTO, "LIST_TREE: directory name of %u bytes runs past the body",
                        len);
    rel->s = (const char *)q + 2;
    rel->len = len;
    /* each '/'-separated part is one LIST name: no empty part, no "." or "..", no NUL */
    for (size_t a = 0; a < len;) {
        const char *slash = memchr(rel->s + a, '/', len - a);
        size_t b = slash ? (size_t)(slash - rel->s) : len;
        int rc = check_name(rel->s + a, (uint16_t)(b - a));
        if (rc)
            return rfs_fail(RFS_E_PROTO, "LIST_TREE: bad directory name: %s", rfs_last_error());
        a = b + 1;
        if (slash && a == len)
            return rfs_fail(RFS_E_PROTO, "LIST_TREE: directory name ends in '/'");
    }
    *count = le32_get(q + 2 + len);
    if (*count > RFS_LTREE_MAX_ENTRIES)
        return rfs_fail(RFS_E_PROTO, "LIST_TREE: %u entries in one directory", *count);
    const uint8_t *e0 = q + 2 + len + 4, *e = e0;
    size_t left = *rem - 2 - len - 4;
    for (uint32_t i = 0; i < *count; i++) {
        rfs_list_entry ent;
        int rc = rfs_list_entry_next(&e, &left, &ent);
        if (rc)
            return rc;
    }
    *entries = e0;
    *entries_len = (size_t)(e - e0);
    *p = e;
    *rem = left;
    return RFS_OK;
}

size_t rfs_ltree_block_head(const char *rel, size_t rel_len, uint32_t count, uint8_t *out,
                            size_t cap)
{
    if (rel_len > RFS_MAX_PATH || cap < rel_len + 6)
        return 0;
    le16_put(out, (uint16_t)rel_len);
    memcpy(out + 2, rel, rel_len);
    le32_put(out + 2 + rel_len, count);
    return rel_len + 6;
}

int rfs_wire_check_list(const uint8_t *entries, size_t len, uint32_t count)
{
    if (count > RFS_LIST_MAX_ENTRIES)
        return rfs_fail(RFS_E_TOOBIG, "LIST: %u entries (limit %u)", count, RFS_LIST_MAX_ENTRIES);
    const uint8_t *p = entries;
    size_t rem = len;
    for (uint32_t i = 0; i < count; i++) {
        rfs_list_entry e;
        int rc = rfs_list_entry_next(&p, &rem, &e);
        if (rc)
            return rc;
    }
    if (rem != 0)
        return rfs_fail(RFS_E_PROTO, "LIST: %zu bytes after the last of %u entries", rem, count);
    return RFS_OK;
}
