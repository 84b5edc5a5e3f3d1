/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Identities (docs/security.md "Identities"): named tokens, each with read-only or read-write
 * rights on exports. A client says nothing but its AUTH MAC (the protocol is unchanged): rfsd
 * finds the identity whose token produced it. --token-file is one identity, "default", with
 * read-write rights on every export; --no-auth makes every client "anonymous" with the same
 * rights. SIGHUP builds the table again; connections of an identity that was removed or
 * changed are closed, the others continue. */
#ifndef RFSD_IDENTITY_H
#define RFSD_IDENTITY_H

#include <stdint.h>

#include "common/auth.h"
#include "common/capability.h"
#include "proto/proto.h"
#include "server.h"

#define RFSD_IDENT_NAME_MAX 64u

/* What a connection knows of its identity, copied at AUTH and never changed afterwards (a
 * reload that changes the identity closes the connection instead). */
typedef struct rfsd_who {
    char name[RFSD_IDENT_NAME_MAX + 1];
    uint64_t serial;       /* this version of the identity (a reload compares) */
    uint64_t rmask, wmask; /* exports it may read / write, by export index */
    /* Set for a connection authenticated by a third-party-copy grant (TPC_AUTH, tpc_grant.h):
     * it may only read this one path, exactly as the grant names it. */
    int granted;
    char grant_path[RFS_MAX_PATH + 1];
    /* Set for a connection authenticated by a capability (CAP_AUTH, capability.h): it may
     * reach cap.path (and a manifest's objects) with cap.right, until cap.expires. */
    int capped;
    int cap_local; /* issued by this server: its revocations apply at once */
    rfs_cap cap;
} rfsd_who;

/* Builds the table from cfg (after rfsd_exports_init). 0, or -1 after a message on stderr. */
int rfsd_ident_init(const rfsd_config *cfg);
/* AUTH: the identity whose token makes mac over the nonces, and the server's proof for the
 * client made with that token. 0, or -1 when no token matches. */
int rfsd_ident_auth(const uint8_t *server_nonce, const uint8_t *client_nonce, const uint8_t *mac,
                    rfsd_who *who, uint8_t server_mac[RFS_AUTH_MAC]);
/* Without authentication (--no-auth). */
void rfsd_ident_anonymous(rfsd_who *who);
/* SIGHUP: reads the options again (argv as rfsd was started, so --config is read again) and
 * replaces the identities; with --token-file alone, reads that file again. Connections whose
 * identity is gone or changed are closed. A configuration with errors changes nothing. */
void rfsd_ident_reload(rfsd_server *srv, int argc, char **argv);
/* Forgets every token (exit). */
void rfsd_ident_clear(void);

#endif
