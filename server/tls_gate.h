/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* TLS on rfsd's port (docs/protocol.md "TLS"): with a certificate, TLS starts at the first
 * byte, like HTTPS. A client on the wrong side of that (plaintext to a TLS server, TLS to a
 * plaintext one) is told so once, in plaintext rfs framing it or its TLS library recognises,
 * rather than left with a broken handshake or a reset. */
#ifndef RFSD_TLS_GATE_H
#define RFSD_TLS_GATE_H

#include <stdint.h>

#include "conn.h"
#include "transport/tls.h"

/* A TLS record of type handshake starts with this byte; no rfs frame does (its magic starts
 * with 'R'). */
#define RFSD_TLS_RECORD 0x16

/* TLS server: waits (within the handshake timeout) for the client's first byte. 0: a TLS
 * ClientHello follows; -1: the peer left, or spoke plaintext rfs and was answered "server
 * requires TLS". */
int rfsd_tls_gate(rfsd_conn *c);
/* Plaintext server, whose reader read a TLS record's first bytes as a frame header: answers
 * "this server does not offer TLS" and takes in what the client sent, so the close that
 * follows is not a reset that could destroy the answer. */
void rfsd_tls_refuse(rfsd_conn *c, uint16_t raw_op, uint32_t raw_id);

#endif
