/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Checksummed frames (docs/protocol.md, "Frame checksums"): a frame with RFS_F_SUM carries
 * the CRC-32C of all its other bytes in the 4 bytes right after the header. Kept out of the
 * op encoders: any encoded frame can be sealed afterwards, and a receiver checks and strips
 * the field before the op decoder sees the body, which stays exactly as without it. */
#include "proto/proto.h"
#include "proto/wire.h"

#include "common/crc32c.h"
#include "common/err.h"

#include <string.h>

int rfs_frame_add_sum(uint8_t *frame, size_t *len, size_t cap, const void *tail, size_t tail_len)
{
    if (*len < RFS_HDR_SIZE || *len + RFS_SUM_LEN > cap)
        return rfs_fail(RFS_E_TOOBIG, "no room for the frame checksum");
    uint16_t flags = (uint16_t)(frame[8] | frame[9] << 8);
    uint32_t body = le32_get(frame + 20);
    if (flags & RFS_F_SUM)
        return rfs_fail(RFS_E_INVAL, "frame already has a checksum");
    if ((uint64_t)RFS_HDR_SIZE + body + RFS_SUM_LEN > RFS_FRAME_HARD_MAX)
        return rfs_fail(RFS_E_TOOBIG, "frame of %u body bytes too large for a checksum", body);
    flags |= RFS_F_SUM;
    frame[8] = (uint8_t)flags;
    frame[9] = (uint8_t)(flags >> 8);
    le32_put(frame + 20, body + RFS_SUM_LEN);
    memmove(frame + RFS_HDR_SIZE + RFS_SUM_LEN, frame + RFS_HDR_SIZE, *len - RFS_HDR_SIZE);
    *len += RFS_SUM_LEN;
    uint32_t crc = rfs_crc32c(0, frame, RFS_HDR_SIZE);
    crc = rfs_crc32c(crc, frame + RFS_HDR_SIZE + RFS_SUM_LEN, *len - RFS_HDR_SIZE - RFS_SUM_LEN);
    if (tail_len)
        crc = rfs_crc32c(crc, tail, tail_len);
    le32_put(frame + RFS_HDR_SIZE, crc);
    return RFS_OK;
}

uint32_t rfs_frame_sum_start(const rfs_hdr *h)
{
    uint8_t hb[RFS_HDR_SIZE];
    rfs_hdr_encode(hb, h);
    return rfs_crc32c(0, hb, sizeof hb);
}

int rfs_frame_sum_compare(const rfs_hdr *h, uint32_t carried, uint32_t computed)
{
    if (carried == computed)
        return RFS_OK;
    int reply = (h->flags & RFS_F_REPLY) != 0;
    return rfs_fail(RFS_E_IO,
                    "checksum mismatch: %s %s corrupted in transit (CRC-32C of the "
                    "frame 0x%08x, carried 0x%08x)%s",
                    rfs_op_name(h->op), reply ? "reply" : "request", computed, carried,
                    reply ? "; its data were not used" : "; nothing of it was applied");
}

void rfs_frame_strip_sum(rfs_hdr *h)
{
    h->flags &= (uint16_t)~RFS_F_SUM;
    h->body_len -= RFS_SUM_LEN;
}

int rfs_frame_check_sum(rfs_hdr *h, const uint8_t **body, size_t *len)
{
    if (!(h->flags & RFS_F_SUM))
        return RFS_OK;
    if (*len < RFS_SUM_LEN || *len != h->body_len)
        return rfs_fail(RFS_E_PROTO, "%s frame: %zu body bytes, too short for its checksum",
                        rfs_op_name(h->op), *len);
    uint32_t crc = rfs_frame_sum_start(h);
    crc = rfs_crc32c(crc, *body + RFS_SUM_LEN, *len - RFS_SUM_LEN);
    int rc = rfs_frame_sum_compare(h, le32_get(*body), crc);
    if (rc)
        return rc;
    *body += RFS_SUM_LEN;
    *len -= RFS_SUM_LEN;
    rfs_frame_strip_sum(h);
    return RFS_OK;
}
