/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Third-party copy, source side (docs/protocol.md "Third-party copy"): TPC_GRANT gives the
 * client a one-time read capability for one path, which it hands to the destination server;
 * that server then authenticates here with TPC_AUTH and the grant's key instead of a token.
 * A grant is bound to the exact path string, admits `uses` connections (the pull's streams),
 * reads only, and lapses after RFSD_TPC_GRANT_TTL_MS; it lives only in this process's memory,
 * in a table of bounded size (the oldest grant makes room for a new one). */
#ifndef RFSD_TPC_GRANT_H
#define RFSD_TPC_GRANT_H

#include <stdint.h>

#include "identity.h"
#include "proto/proto.h"

#define RFSD_TPC_GRANT_TTL_MS 60000u
#define RFSD_TPC_MAX_GRANTS 1024u

struct rfsd_conn;

/* TPC_GRANT: checks that c may read the path (as an OPEN for reading would) and that it is a
 * regular file, then fills rep with a fresh grant. */
int rfsd_tpc_grant(struct rfsd_conn *c, const rfs_req *q, rfs_rep *rep);
/* TPC_AUTH: the grant named in q, if live and the MAC over the nonces is made with its key,
 * loses one use; *who becomes a read-only identity for its path and server_mac the proof
 * for the peer. RFS_OK, or RFS_E_AUTH with a message saying why (unknown, expired, used up,
 * wrong key). */
int rfsd_tpc_auth(const uint8_t *server_nonce, const rfs_req *q, rfsd_who *who,
                  uint8_t server_mac[RFS_MAC_LEN]);
/* Forgets every grant (exit). */
void rfsd_tpc_grants_clear(void);

#endif
