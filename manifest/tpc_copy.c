/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* One object copied server to server for augment (ops_internal.h): a grant from the source's
 * server, a pull by the destination's (docs/protocol.md "Third-party copy"), followed until
 * it is done; the bytes never pass through this client. */
#include "manifest/ops_internal.h"

#include <string.h>
#include <time.h>

#include "client/client.h"
#include "client/tpc.h"
#include "common/err.h"

#define POLL_FIRST_MS 2
#define POLL_MAX_MS 100
#define COPY_STREAMS 4 /* connections per copy, as rfs cp's server-to-server copies */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Has the server of `to` pull object `from` whole (verified against the source's checksum,
 * synced before it replaces anything at `to`). */
int mf_tpc_copy(const char *from, const char *to, const rfs_options *opts, uint64_t *bytes)
{
    rfs_name src, dst;
    int rc = rfs_parse_name(from, &src);
    if (rc == RFS_OK)
        rc = rfs_parse_name(to, &dst);
    if (rc != RFS_OK)
        return rc;
    /* The object's directory may not exist on the new server yet (as mkdir -p). */
    char *slash = strrchr(dst.path, '/');
    if (slash && slash != dst.path) {
        *slash = 0;
        const char *dir = dst.path;
        int res = RFS_OK;
        rfs_mkdir_many(to, &dir, &res, 1, 0777 | RFS_MKDIR_PARENTS, opts);
        rfs_clear_error();
        *slash = '/';
    }
    rfs_tpc_grant_info g;
    rc = rfs_tpc_grant(from, opts, COPY_STREAMS, &g);
    if (rc != RFS_OK)
        return rfs_fail_cause(rc, "%s: no copy grant", from);
    rfs_tpc_pull *p = NULL;
    rc = rfs_tpc_pull_begin(to, opts, src.host, src.port, src.path, &g,
                            RFS_TPC_VERIFY | RFS_TPC_SYNC, 0644, COPY_STREAMS, &p);
    explicit_bzero(g.key, sizeof g.key);
    if (rc != RFS_OK)
        return rfs_fail_cause(rc, "%s: server-to-server copy from %s", to, from);
    int finished = 0, wait = POLL_FIRST_MS;
    uint64_t done = 0, total = 0;
    uint32_t crc = 0;
    for (;;) { /* ends: the pull finishes, fails, or its connection does (io timeout) */
        rc = rfs_tpc_pull_poll(p, &finished, &done, &total, &crc);
        if (rc != RFS_OK || finished)
            break;
        sleep_ms(wait);
        wait = wait * 2 > POLL_MAX_MS ? POLL_MAX_MS : wait * 2;
    }
    rfs_tpc_pull_end(p);
    if (rc != RFS_OK)
        return rfs_fail_cause(rc, "%s: server-to-server copy from %s", to, from);
    *bytes = total;
    return RFS_OK;
}
