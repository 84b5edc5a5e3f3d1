/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Compressed read replies (docs/protocol.md "Compressed payloads", rfsd --compress-reads): a
 * read whose request says the client takes a compressed reply (RFS_F_ZOK) may be answered
 * with its payload packed, as a client's writes may be. The decision is common/zauto.h's, per
 * open file, against the connection's measured drain rate, so a fast link or incompressible
 * data keep the raw path (and sendfile). */
#ifndef RFSD_ZREPLY_H
#define RFSD_ZREPLY_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"

/* 1 when the n-byte reply to q must be read into memory to be looked at (compressed or
 * sampled); 0: it goes raw unseen (the caller may sendfile it), counted as such. */
int rfsd_zreply_wants(rfsd_conn *c, rfsd_handle *h, const rfs_req *q, size_t n);
/* rep->data (rep->data_len bytes, in *buf which the caller frees after the reply) is packed
 * when that pays: *buf then holds the compressed bytes and rep says how it was packed. An
 * allocation failure leaves the reply raw. */
void rfsd_zreply_pack(rfsd_conn *c, rfsd_handle *h, const rfs_req *q, rfs_rep *rep, uint8_t **buf);
/* The handle's state, at its end. */
void rfsd_zreply_free(rfsd_handle *h);

#endif
