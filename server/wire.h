/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The encoding of data frames on rfsd's side: checksums and compressed payloads (docs/protocol.md
 * "Frame checksums", "Compressed payloads").
 * A connection checksums its replies once the client sent a checksummed frame (c->sums). */
#ifndef RFSD_WIRE_H
#define RFSD_WIRE_H

#include <sys/socket.h>

#include "conn.h"

/* Adds the checksum to an encoded reply when the connection uses them. */
void rfsd_wire_seal(rfsd_conn *c, rfsd_out *o);
/* A request with RFS_F_PACK (its checksum already checked and stripped): decompresses it into
 * a new body holding the fixed fields and the raw payload, within the frame limit, and makes
 * *body, *fields, *len and h describe that frame as if it had come uncompressed. The old body is
 * freed. On failure (bomb, corrupt or unknown codec) nothing changes and the error names it. */
int rfsd_wire_unpack(rfsd_conn *c, rfs_hdr *h, uint8_t **body, const uint8_t **fields, size_t *len);

#endif
