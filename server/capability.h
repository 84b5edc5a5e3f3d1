/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Capabilities, rfsd's side (docs/security.md "Capabilities", docs/protocol.md
 * "Capabilities"): this server's Ed25519 signing key (made on first start in --state-dir),
 * the issuers it trusts (--cap-trust), CAP_ISSUE (sign a capability or a lease), CAP_AUTH (a
 * connection authenticated by a capability: confined to its file and right), CAP_REVOKE and
 * the persistent, bounded list of revoked serials of this server's capabilities. */
#ifndef RFSD_CAPABILITY_H
#define RFSD_CAPABILITY_H

#include <stdint.h>

#include "identity.h"
#include "proto/proto.h"
#include "server.h"

#define RFSD_CAP_MAX_TRUST 64u        /* --cap-trust keys */
#define RFSD_CAP_LEASE_S_DEFAULT 300u /* --cap-lease-s */

struct rfsd_conn;

/* Loads or makes the signing key, the trusted keys and the revocation list. 0, or -1 after
 * a message on stderr. */
int rfsd_cap_init(const rfsd_config *cfg);
/* rfsd --print-cap-key: prints this server's public key (making the key when missing). */
int rfsd_cap_print_key(const rfsd_config *cfg);
void rfsd_cap_clear(void);
/* Unix seconds as capabilities and object leases count them (--cap-clock-offset-s moves it). */
uint64_t rfsd_cap_now(void);

/* CAP_AUTH: verifies the capability in q; on success *who is confined to it and rep is the
 * reply. RFS_E_AUTH with a message saying why otherwise. */
int rfsd_cap_auth(const rfs_req *q, rfsd_who *who, rfs_rep *rep);
/* CAP_ISSUE and CAP_REVOKE. *buf is the reply's memory (freed with the job). */
int rfsd_cap_issue(struct rfsd_conn *c, const rfs_req *q, rfs_rep *rep, uint8_t **buf);
int rfsd_cap_revoke(struct rfsd_conn *c, const rfs_req *q);
/* Before every request of a connection authenticated by a capability: its expiry, a
 * revocation since (this server's capabilities), and the ops it may never send. */
int rfsd_cap_gate(const struct rfsd_conn *c, const rfs_req *q);
/* May who, confined to a capability, reach the path `shown` with `need` (RFSD_NEED_*)? */
int rfsd_cap_confine(const rfsd_who *who, const char *shown, int need);

#endif
