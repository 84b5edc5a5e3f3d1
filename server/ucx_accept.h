/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfsd --ucx-listen: UCX clients beside the TCP ones (docs/protocol.md "Transports"). The
 * acceptor polls the listener's descriptor with the TCP socket's; each request passes the same
 * connection-table and per-address limits as a TCP connection, then runs as any connection
 * does (HELLO, AUTH, SESSION unchanged). */
#ifndef RFSD_UCX_ACCEPT_H
#define RFSD_UCX_ACCEPT_H

#include "server.h"
#include "transport/ucx.h"

/* Listens on spec ("HOST:PORT", "[v6]:PORT", port 0: any); writes the address into addr.
 * 0, or -1 with the reason logged. */
int rfsd_ucx_listen(const char *spec, char *addr, size_t cap, rfs_ucx_listener **out);
/* The listener's descriptor was readable: takes every pending request. */
void rfsd_ucx_accept_ready(rfsd_server *srv, rfs_ucx_listener *l);

#endif
