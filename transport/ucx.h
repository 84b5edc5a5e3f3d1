/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* UCX transport (docs/protocol.md "Transports", docs/design.md "Transport and TLS"): the same
 * byte stream as TCP, carried as UCP active messages between two workers (rendezvous for large
 * ones, fetched into the reader's buffer where it waits for them), so RDMA hardware is used
 * where UCX finds it and TCP where it does not. A TCP connection to the listener bootstraps it
 * (the workers' addresses are exchanged over it) and stays open as the peer's liveness signal.
 * Every connection has a UCP worker of its own; t->fd is readable when the connection wants
 * looking at (wants() always asks for POLLIN).
 *
 * Built only when CMake finds libucx (RFS_WITH_UCX); otherwise every function here fails with
 * a message saying the build has no UCX (ucx_none.c). */
#ifndef RFS_TRANSPORT_UCX_H
#define RFS_TRANSPORT_UCX_H

#include "transport/transport.h"

/* 1 when this build has UCX support. */
int rfs_ucx_built(void);

/* Connects to an rfsd UCX listener; within o->connect_timeout_ms the endpoint is wired up
 * (a flush completes), so a port that does not serve UCX fails here, as RFS_E_CONN. */
int rfs_ucx_connect(const char *host, unsigned port, const rfs_transport_opts *o,
                    rfs_transport **out);

/* Inline vs direct for the client's writes (docs/design.md "UCX"): a payload (iovec element)
 * of at least this many bytes is sent by rendezvous straight from the caller's buffer, and
 * write_all returns once the peer has fetched it; smaller ones are copied into messages.
 * Process-wide; $RFS_UCX_INLINE_MAX sets it first, the MPI-IO hint rfs_ucx_inline_max (this
 * setter) after. 0: every payload direct; RFS_UCX_INLINE_NEVER: none. */
#define RFS_UCX_INLINE_NEVER ((size_t)1 << 40)
void rfs_ucx_set_inline_max(size_t bytes);
size_t rfs_ucx_inline_max(void);
/* Parses a value of it (decimal bytes): RFS_OK, or RFS_E_INVAL with a message. */
int rfs_ucx_parse_inline_max(const char *v, size_t *out);

/* 1 when t is a UCX transport. */
int rfs_ucx_is(const rfs_transport *t);
/* Server shutdown: reads end (as at end of stream) while replies still go out. */
void rfs_ucx_stop_reading(rfs_transport *t);

/* Server side: a listener on host:port (port 0: any free one). */
typedef struct rfs_ucx_listener rfs_ucx_listener;
int rfs_ucx_listen(const char *host, unsigned port, rfs_ucx_listener **out);
/* Poll it for POLLIN, then take requests (rfs_ucx_pending_peer, then accept or refuse) until
 * none is pending. */
int rfs_ucx_listener_fd(const rfs_ucx_listener *l);
/* "host:port" it listens on (the port chosen when 0 was asked for). */
void rfs_ucx_listener_addr(const rfs_ucx_listener *l, char *buf, size_t cap);
/* One pending connection request: 1 with *out (nonblocking, peer set to "ip:port"), 0 when
 * there is none, or a negative rfs_err (that request is dropped, the listener carries on).
 * Waits up to 2 s for the client's half of the bootstrap. */
int rfs_ucx_accept(rfs_ucx_listener *l, rfs_transport **out);
/* The next pending request refused (limits): the client's connect fails at once, its
 * message saying why. 1 refused, 0 none pending. */
int rfs_ucx_refuse(rfs_ucx_listener *l, const char *why);
/* Peer of the next pending request ("ip:port"), 0; or 1 when none is pending. */
int rfs_ucx_pending_peer(rfs_ucx_listener *l, char *peer, size_t cap);
void rfs_ucx_listener_free(rfs_ucx_listener *l);

#endif
