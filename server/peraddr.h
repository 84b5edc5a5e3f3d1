/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Limits per client address (docs/security.md "Per-address limits"): connections and open
 * files of all connections from one address, so that one client cannot take the whole
 * connection table or the descriptors by spreading itself over many connections. The port is
 * ignored. Each live address has one entry, held by its connections (at most RFSD_MAX_CONNS
 * entries, so the table cannot grow). */
#ifndef RFSD_PERADDR_H
#define RFSD_PERADDR_H

#define RFSD_DEFAULT_CONNS_PER_ADDR 256u     /* --max-conns-per-addr */
#define RFSD_DEFAULT_HANDLES_PER_ADDR 16384u /* --max-handles-per-addr */

typedef struct rfsd_addr rfsd_addr;

/* peer: "ADDR:PORT" or "[ADDR]:PORT". Counts a new connection from its address and returns
 * the address's entry, or NULL when the address already has max connections (*count gets
 * their number) or the table is full. */
rfsd_addr *rfsd_addr_connect(const char *peer, unsigned max, unsigned *count);
/* The connection has ended (its files closed before). */
void rfsd_addr_disconnect(rfsd_addr *a);
/* Counts one more open file of the address: 1, or 0 when it already has max. */
int rfsd_addr_open(rfsd_addr *a, unsigned max);
void rfsd_addr_close(rfsd_addr *a);
/* Admits one of the address's connections as an additional stream: 1, or 0 when the
 * address already has max of them (*count gets their number). */
int rfsd_addr_take_stream(rfsd_addr *a, unsigned max, unsigned *count);
/* An additional stream of the address has ended (before rfsd_addr_disconnect). */
void rfsd_addr_drop_stream(rfsd_addr *a);
/* The limit of additional streams (--max-stream-conns-per-addr; default half of the
 * per-address connections, at least 1). */
unsigned rfsd_stream_share(unsigned max_stream_conns, unsigned max_conns);
/* The address without the port, for messages. */
const char *rfsd_addr_name(const rfsd_addr *a);
/* Drops the port (and IPv6 brackets) of a peer name. */
void rfsd_addr_of(const char *peer, char *out, unsigned long cap);

#endif
