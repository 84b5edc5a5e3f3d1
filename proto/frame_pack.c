/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Compressed payloads (docs/protocol.md, "Compressed payloads"): a frame with RFS_F_PACK has a
 * 12-byte pack header right after the frame header (after the checksum field when the frame has
 * one): u8 codec, 3 zero bytes, u32 fields_len, u32 raw_len; then the op's fixed fields as they
 * are, then the payload compressed. Unpacked, the frame must be what it would have been without
 * compression, and that must fit the connection's frame limit: the declared size is checked
 * before any decompression, so a small frame can never make the receiver allocate more. */
#include "proto/proto.h"
#include "proto/wire.h"

#include "common/err.h"

#include <string.h>

int rfs_frame_add_pack(uint8_t *frame, size_t *len, size_t cap, unsigned codec, uint32_t raw_len,
                       uint32_t packed_len)
{
    if (*len < RFS_HDR_SIZE || *len + RFS_PACK_HDR > cap)
        return rfs_fail(RFS_E_TOOBIG, "no room for the pack header");
    uint16_t flags = (uint16_t)(frame[8] | frame[9] << 8);
    uint32_t body = le32_get(frame + 20);
    size_t fields = *len - RFS_HDR_SIZE;
    if (flags & (RFS_F_PACK | RFS_F_SUM))
        return rfs_fail(RFS_E_INVAL, "pack a frame before its checksum, and once");
    if ((uint64_t)fields + raw_len != body)
        return rfs_fail(RFS_E_INVAL, "pack: %zu field bytes and %u payload bytes, header says %u",
                        fields, raw_len, body);
    if (codec < RFS_CODEC_ID_LZ4 || codec > RFS_CODEC_ID_ZSTD_SHUF)
        return rfs_fail(RFS_E_INVAL, "pack: unknown codec %u", codec);
    flags |= RFS_F_PACK;
    frame[8] = (uint8_t)flags;
    frame[9] = (uint8_t)(flags >> 8);
    le32_put(frame + 20, (uint32_t)(RFS_PACK_HDR + fields + packed_len));
    memmove(frame + RFS_HDR_SIZE + RFS_PACK_HDR, frame + RFS_HDR_SIZE, fields);
    uint8_t *p = frame + RFS_HDR_SIZE;
    p[0] = (uint8_t)codec;
    p[1] = p[2] = p[3] = 0;
    le32_put(p + 4, (uint32_t)fields);
    le32_put(p + 8, raw_len);
    *len += RFS_PACK_HDR;
    return RFS_OK;
}

int rfs_frame_pack_info(const rfs_hdr *h, const uint8_t *body, size_t len, uint32_t max_frame,
                        rfs_pack_info *pi)
{
    memset(pi, 0, sizeof *pi);
    const char *name = rfs_op_name(h->op);
    int reply = (h->flags & RFS_F_REPLY) != 0;
    if (!rfs_op_has(h->op, reply ? RFS_OPF_REP_PACK : RFS_OPF_PACK) || (reply && h->status != 0))
        return rfs_fail(RFS_E_PROTO,
                        "%s %s: only write requests and successful read replies "
                        "may be compressed",
                        name, reply ? "reply" : "request");
    const char *kind = reply ? "reply" : "request";
    if (len < RFS_PACK_HDR)
        return rfs_fail(RFS_E_PROTO, "%s %s: %zu body bytes, too short for its pack header", name,
                        kind, len);
    pi->codec = body[0];
    pi->fields_len = le32_get(body + 4);
    pi->raw_len = le32_get(body + 8);
    if (body[1] || body[2] || body[3])
        return rfs_fail(RFS_E_PROTO, "%s %s: pack header reserved bytes set", name, kind);
    if (pi->codec < RFS_CODEC_ID_LZ4 || pi->codec > RFS_CODEC_ID_ZSTD_SHUF)
        return rfs_fail(RFS_E_INVAL, "%s %s: unknown compression codec %u", name, kind, pi->codec);
    if (pi->fields_len > len - RFS_PACK_HDR)
        return rfs_fail(RFS_E_PROTO,
                        "%s %s: pack header says %u field bytes, the frame has "
                        "%zu",
                        name, kind, pi->fields_len, len - RFS_PACK_HDR);
    uint64_t unpacked = (uint64_t)RFS_HDR_SIZE + pi->fields_len + pi->raw_len;
    uint64_t limit = max_frame < RFS_FRAME_HARD_MAX ? max_frame : RFS_FRAME_HARD_MAX;
    if (unpacked > limit)
        return rfs_fail(RFS_E_TOOBIG,
                        "%s %s: declares %u payload bytes once decompressed, "
                        "%llu with the frame, over the %llu-byte frame limit",
                        name, kind, pi->raw_len, (unsigned long long)unpacked,
                        (unsigned long long)limit);
    pi->fields = body + RFS_PACK_HDR;
    pi->packed = pi->fields + pi->fields_len;
    pi->packed_len = (uint32_t)(len - RFS_PACK_HDR - pi->fields_len);
    if (pi->raw_len && !pi->packed_len)
        return rfs_fail(RFS_E_PROTO, "%s %s: %u payload bytes declared, none sent", name, kind,
                        pi->raw_len);
    return RFS_OK;
}
