/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Internal to proto/: little-endian cursors and the field checks shared by the request and
 * reply codecs. Encoders and decoders call the same checks so that whatever decodes also
 * re-encodes to the same bytes (the fuzz target asserts this). */
#ifndef RFS_PROTO_WIRE_H
#define RFS_PROTO_WIRE_H

#include "proto/proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void le16_put(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void le32_put(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void le64_put(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t le16_get(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t le32_get(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t le64_get(const uint8_t *p)
{
    return (uint64_t)le32_get(p) | (uint64_t)le32_get(p + 4) << 32;
}

/* Read cursor over a body. Every get checks the remaining length first; after a failed get
 * the cursor is marked bad and all later gets fail too, so decoders check once at the end
 * of the fixed fields. */
typedef struct rd {
    const uint8_t *p;
    size_t rem;
    bool bad;
} rd;

static inline const uint8_t *rd_take(rd *r, size_t n)
{
    if (r->bad || r->rem < n) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *q = r->p;
    r->p += n;
    r->rem -= n;
    return q;
}
static inline uint16_t rd_u16(rd *r)
{
    const uint8_t *q = rd_take(r, 2);
    return q ? le16_get(q) : 0;
}
static inline uint32_t rd_u32(rd *r)
{
    const uint8_t *q = rd_take(r, 4);
    return q ? le32_get(q) : 0;
}
static inline uint64_t rd_u64(rd *r)
{
    const uint8_t *q = rd_take(r, 8);
    return q ? le64_get(q) : 0;
}
static inline void rd_bytes(rd *r, uint8_t *dst, size_t n)
{
    const uint8_t *q = rd_take(r, n);
    if (q)
        memcpy(dst, q, n);
}

/* Write cursor. Writes past cap are dropped and remembered, reported once by the caller. */
typedef struct wr {
    uint8_t *p;
    size_t cap;
    size_t n;
    bool full;
} wr;

static inline uint8_t *wr_take(wr *w, size_t n)
{
    if (w->full || w->cap - w->n < n) {
        w->full = true;
        return NULL;
    }
    uint8_t *q = w->p + w->n;
    w->n += n;
    return q;
}
static inline void wr_u16(wr *w, uint16_t v)
{
    uint8_t *q = wr_take(w, 2);
    if (q)
        le16_put(q, v);
}
static inline void wr_u32(wr *w, uint32_t v)
{
    uint8_t *q = wr_take(w, 4);
    if (q)
        le32_put(q, v);
}
static inline void wr_u64(wr *w, uint64_t v)
{
    uint8_t *q = wr_take(w, 8);
    if (q)
        le64_put(q, v);
}
static inline void wr_bytes(wr *w, const void *src, size_t n)
{
    uint8_t *q = wr_take(w, n);
    if (q && n)
        memmove(q, src, n); /* memmove: LIST entries may already sit in place */
}

/* Shared checks; each returns 0 or a negative rfs_err with the thread's message set. */
int rfs_wire_check_path(uint16_t op, const char *field, const rfs_wpath *p);
int rfs_wire_check_range(uint16_t op, const char *field, uint64_t off, uint64_t len);
/* Validates count extents (wire bytes when wire != NULL, else host pairs) and sums their
 * lengths with overflow checks. */
int rfs_wire_extents_total(uint16_t op, uint32_t count, const uint8_t *wire, const uint64_t *host,
                           uint64_t *total);
/* Walks a LIST reply's entries: exactly count valid entries must fill len bytes. */
int rfs_wire_check_list(const uint8_t *entries, size_t len, uint32_t count);

/* Largest payload a single frame can carry: what a read may ask for in one request. */
#define RFS_WIRE_MAX_BODY (RFS_FRAME_HARD_MAX - RFS_HDR_SIZE)

#endif
