/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Capabilities, the client's part (docs/security.md "Capabilities"): ask a file's home server
 * to sign a capability or a lease (CAP_ISSUE), or to revoke one (CAP_REVOKE). Using one needs
 * nothing here: a capability given where a token goes (rfs_options.token, $RFS_CAP,
 * $RFS_TOKEN) authenticates with CAP_AUTH (handshake.c). Internal to librfs and the rfs
 * command (not in librfs.map). */
#ifndef RFS_CLIENT_CAP_H
#define RFS_CLIENT_CAP_H

#include <stddef.h>
#include <stdint.h>

#include "rfs/rfs.h"

struct rfs_copts;

/* A capability (lease: a lease of the connection's own capability or identity) for the file
 * of `name` with right 1 read, 2 write, 3 manage, until `expires` (Unix seconds; 0 with a
 * lease: the capability's own expiry). out: at least RFS_CAP_MAX_LEN + 1 bytes. */
int rfs_cap_request(const char *name, const rfs_options *opts, unsigned right, int lease,
                    uint64_t expires, char *out, size_t outcap);
/* Records cap as revoked on the server of name (its issuer). */
int rfs_cap_revoke_at(const char *name, const rfs_options *opts, const char *cap);
/* Sets the lease of the object `name` on its data server to `expires` (Unix seconds; 0: no
 * lease, kept for ever); *kept is what the server recorded (OBJ_LEASE). */
int rfs_obj_lease(const char *name, const rfs_options *opts, uint64_t expires, uint64_t *kept);
/* Leases the manifest layer handed to a file's objects, with what renews them: the home
 * server's name and the capability they were made from (a bounded table in this process;
 * the oldest entry goes first, its capability wiped). A connection that recovers with a lease
 * gets a fresh one first (rfs_cap_lease_renew), so a lost data-server connection comes back
 * even after the lease's window for new connections has passed. */
void rfs_cap_lease_remember(const char *lease, const char *home, const rfs_options *parent,
                            unsigned right);
/* When o authenticates with a remembered lease: asks its home server for a new one and puts
 * it in o->token. RFS_OK also when there is nothing to renew. */
int rfs_cap_lease_renew(struct rfs_copts *o);
/* The length of cap without the trailing newline, spaces and carriage returns a capability
 * pasted from a file or a terminal brings along. */
size_t rfs_cap_trimmed_len(const char *cap);
/* 1 when opts (or the environment) make connections authenticate with a capability. */
int rfs_cap_in_use(const rfs_options *opts);

#endif
