/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Frame checksums on rfsd's replies (docs/protocol.md, "Frame checksums"). */
#include "wire.h"

#include "common/err.h"
#include "common/log.h"

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
