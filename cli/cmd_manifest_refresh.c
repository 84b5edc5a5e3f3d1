/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs manifest refresh URL [--extend T]: renews the lease of every object of a logical file
 * on its data server (OBJ_LEASE; docs/manifest.md "Leases"), as IBP's exNode refresh renews
 * its allocations. A data server deletes an object whose lease lapsed only when started with
 * --reclaim-expired. With a capability, the objects are reached with a lease of it. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/escape.h"
#include "client/cap.h"
#include "common/capability.h"
#include "common/err.h"
#include "manifest/manifest.h"
#include "manifest/mf_internal.h"
#include "manifest/store.h"

#define DEFAULT_EXTEND_S (30 * 86400)

static void when(uint64_t t, char *out, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || !strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, cap, "@%llu", (unsigned long long)t);
}

/* Leases one object (server URL + path) until `until`; CLI_EXIT_FAIL, said, when refused. */
static int lease_one(cli_ctx *c, const char *server, const char *path, const rfs_options *oo,
                     uint64_t until, const char *end)
{
    char name[RFSM_MAX_URL + RFSM_MAX_PATH + 2], shown[4 * sizeof name + 1];
    snprintf(name, sizeof name, "%s%s", server, path);
    cli_escape(name, shown, sizeof shown);
    uint64_t kept = 0;
    if (rfs_obj_lease(name, oo, until, &kept) != RFS_OK) {
        fprintf(stderr, "rfs %s refresh: %s: %s\n", c->cmd, shown, rfs_last_error());
        return CLI_EXIT_FAIL;
    }
    if (!c->o.quiet)
        printf("%s  leased until %s\n", shown, end);
    return CLI_EXIT_OK;
}

int cli_manifest_refresh(cli_ctx *c, const char *url, const rfs_name *n)
{
    uint64_t until = (uint64_t)time(NULL) + DEFAULT_EXTEND_S;
    if (c->o.expires && cli_parse_time(c->o.expires, &until))
        return cli_usage(c->cmd,
                         "--extend needs 90s, 30m, 12h, 7d, @UNIX_SECONDS or "
                         "YYYY-MM-DDTHH:MM:SSZ, got '%s'",
                         c->o.expires);
    rfs_io *home = NULL;
    int rc = rfs_io_open_remote(url, RFS_O_RDONLY, 0, &c->ropts, &home);
    rfsm *m = NULL;
    if (rc == RFS_OK) {
        rc = rfsm_store_load(home, &m);
        rfs_status st;
        rfs_status_save(&st, rc);
        home->ops->close(home);
        rc = rfs_status_raise(&st);
    }
    rfs_options oo = c->ropts;
    char lease[RFS_CAP_MAX_LEN + 1];
    if (rc == RFS_OK)
        rc = mf_cap_lease(url, &c->ropts, RFS_CAP_WRITE, lease, sizeof lease, &oo);
    if (rc != RFS_OK) {
        rfsm_free(m);
        return cli_fail_remote(c, n, rc, NULL);
    }
    int status = CLI_EXIT_OK;
    char end[64];
    when(until, end, sizeof end);
    for (uint32_t i = 0; i < m->nobjects; i++)
        status |=
            lease_one(c, m->servers[m->objects[i].server], m->objects[i].path, &oo, until, end);
    /* the log objects of log-structured writes are the file's bytes too */
    for (uint32_t i = 0; i < m->nlogs; i++)
        status |= lease_one(c, m->servers[m->logs[i].server], m->logs[i].path, &oo, until, end);
    explicit_bzero(lease, sizeof lease);
    rfsm_free(m);
    if (fflush(stdout) != 0)
        status = CLI_EXIT_FAIL;
    return status;
}
