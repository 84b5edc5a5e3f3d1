/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The encoding of data frames on rfsd's side: checksums (docs/protocol.md "Frame checksums").
 * A connection checksums its replies once the client sent a checksummed frame (c->sums). */
#ifndef RFSD_WIRE_H
#define RFSD_WIRE_H

#include <sys/socket.h>

#include "conn.h"

/* Adds the checksum to an encoded reply when the connection uses them. */
void rfsd_wire_seal(rfsd_conn *c, rfsd_out *o);

#endif
