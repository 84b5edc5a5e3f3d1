/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Capabilities over a logical file (docs/security.md "Capabilities"): a client holding a
 * capability for a manifest shows it to the home server, and the data servers get a short
 * lease of it instead, which the home server signs. The data servers trust the home server's
 * key, so they need no account and no connection of their own to check it; a revoked
 * capability gets no more leases, so it stops opening connections on the data servers when
 * the last lease lapses (rfsd --cap-lease-s). */
#include "manifest/mf_internal.h"

#include <string.h>

#include "client/cap.h"
#include "common/capability.h"

int mf_cap_lease(const char *name, const rfs_options *o, unsigned right, char *lease, size_t cap,
                 rfs_options *objects)
{
    if (!rfs_cap_in_use(o))
        return RFS_OK; /* a token: the data servers take the same token */
    int rc = rfs_cap_request(name, o, right, 1, 0, lease, cap);
    if (rc != RFS_OK)
        return rfs_fail_cause(rc, "%s: getting a lease of the capability for the data servers",
                              name);
    objects->token = lease;
    /* a data-server connection lost later renews it on recovery (client/recover.c) */
    rfs_cap_lease_remember(lease, name, o, right);
    return RFS_OK;
}
