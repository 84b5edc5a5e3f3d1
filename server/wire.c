/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Frame checksums on rfsd's replies (docs/protocol.md, "Frame checksums"). */
#include "wire.h"

#include "common/compress.h"
#include "common/err.h"
#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rfsd_wire_seal(rfsd_conn *c, rfsd_out *o)
{
    if (!atomic_load_explicit(&c->sums, memory_order_relaxed))
        return;
    /* ops.c sends no payload from a file on such a connection: its bytes are not in memory */
    if (o->file_fd < 0 &&
        rfs_frame_add_sum(o->head, &o->head_len, sizeof o->head, o->tail, o->tail_len) == RFS_OK)
        return;
    RFS_LOGE("%s: cannot add the checksum to a reply (%s); dropping the connection", c->peer,
             o->file_fd >= 0 ? "payload from a file" : rfs_last_error());
    shutdown(c->fd, SHUT_RDWR);
}

int rfsd_wire_unpack(rfsd_conn *c, rfs_hdr *h, uint8_t **body, const uint8_t **fields, size_t *len)
{
    rfs_pack_info pi;
    int rc = rfs_frame_pack_info(h, *fields, *len, c->max_frame, &pi);
    if (rc)
        return rc;
    size_t n = (size_t)pi.fields_len + pi.raw_len;
    uint8_t *nb = malloc(n ? n : 1);
    if (!nb)
        return rfs_fail(RFS_E_NOMEM, "server out of memory for a %zu-byte decompressed frame", n);
    memcpy(nb, pi.fields, pi.fields_len);
    if ((rc = rfs_codec_decompress(pi.codec, nb + pi.fields_len, pi.raw_len, pi.packed,
                                   pi.packed_len))) {
        char why[RFS_MAX_MSG];
        snprintf(why, sizeof why, "%s", rfs_last_error());
        free(nb);
        return rfs_fail(rc, "%s request: %s; nothing of it was applied", rfs_op_name(h->op), why);
    }
    free(*body);
    *body = nb;
    *fields = nb;
    *len = n;
    h->flags &= (uint16_t)~RFS_F_PACK;
    h->body_len = (uint32_t)n;
    return RFS_OK;
}
