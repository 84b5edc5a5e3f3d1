/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs share URL --read|--write|--manage [--expires T]: prints a capability for the file,
 * signed by its home server; rfs share --revoke CAP URL: revokes one there
 * (docs/security.md "Capabilities"). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "client/cap.h"
#include "common/capability.h"

#define DEFAULT_EXPIRES_S (24 * 3600)

/* "90s", "30m", "12h", "7d", "3600" (seconds from now), "@UNIX" or "YYYY-MM-DDTHH:MM:SSZ". */
int cli_parse_time(const char *s, uint64_t *out)
{
    time_t now = time(NULL);
    char *end;
    if (s[0] == '@') {
        errno = 0;
        unsigned long long v = strtoull(s + 1, &end, 10);
        if (errno || end == s + 1 || *end)
            return -1;
        *out = v;
        return 0;
    }
    if (isdigit((unsigned char)s[0]) && strchr(s, '-')) {
        struct tm tm;
        memset(&tm, 0, sizeof tm);
        end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!end || (*end && strcmp(end, "Z")))
            return -1;
        time_t t = timegm(&tm);
        if (t == (time_t)-1)
            return -1;
        *out = (uint64_t)t;
        return 0;
    }
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || v > 100ull * 365 * 86400)
        return -1;
    unsigned long long mul = !*end || !strcmp(end, "s") ? 1
                             : !strcmp(end, "m")        ? 60
                             : !strcmp(end, "h")        ? 3600
                             : !strcmp(end, "d")        ? 86400
                                                        : 0;
    if (!mul)
        return -1;
    *out = (uint64_t)now + v * mul;
    return 0;
}

static int revoke(cli_ctx *c, const char *url, const rfs_name *name)
{
    rfs_cap_parsed p;
    if (rfs_cap_parse(c->o.revoke, &p) != RFS_OK) {
        fprintf(stderr, "rfs %s: --revoke: %s\n", c->cmd, rfs_last_error());
        return CLI_EXIT_USAGE;
    }
    int rc = rfs_cap_revoke_at(url, &c->ropts, c->o.revoke);
    if (rc != RFS_OK)
        return cli_fail_remote(c, name, rc, NULL);
    if (!c->o.quiet)
        fprintf(stderr, "rfs %s: revoked the %s capability for %s\n", c->cmd,
                rfs_cap_right_name(p.cap.right), p.cap.path);
    return CLI_EXIT_OK;
}

int cli_cmd_share(cli_ctx *c)
{
    char url[4400];
    rfs_name name;
    if (cli_url_normalize(c->cmd, c->o.args[0], url, sizeof url, &name))
        return CLI_EXIT_USAGE;
    if (c->o.revoke) {
        if (c->o.share_right || c->o.expires)
            return cli_usage(c->cmd, "--revoke takes no right and no --expires");
        return revoke(c, url, &name);
    }
    if (!c->o.share_right)
        return cli_usage(c->cmd, "give the right to share: --read, --write or --manage");
    if (c->o.lease && c->o.expires)
        return cli_usage(c->cmd, "a lease lasts what the server says: no --expires");
    uint64_t expires = (uint64_t)time(NULL) + DEFAULT_EXPIRES_S;
    if (c->o.expires && cli_parse_time(c->o.expires, &expires))
        return cli_usage(c->cmd,
                         "--expires needs 90s, 30m, 12h, 7d, @UNIX_SECONDS or "
                         "YYYY-MM-DDTHH:MM:SSZ, got '%s'",
                         c->o.expires);
    char cap[RFS_CAP_MAX_LEN + 1];
    int rc = rfs_cap_request(url, &c->ropts, c->o.share_right, c->o.lease, c->o.lease ? 0 : expires,
                             cap, sizeof cap);
    if (rc != RFS_OK)
        return cli_fail_remote(c, &name, rc, NULL);
    rfs_cap_parsed p;
    if (rfs_cap_parse(cap, &p) == RFS_OK && !c->o.quiet) {
        char when[64];
        time_t t = (time_t)(c->o.lease ? p.cap.auth_until : p.cap.expires);
        struct tm tm;
        if (!gmtime_r(&t, &tm) || !strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm))
            snprintf(when, sizeof when, "@%llu", (unsigned long long)p.cap.expires);
        fprintf(stderr, "rfs %s: %s %s for %s until %s\n", c->cmd, rfs_cap_right_name(p.cap.right),
                c->o.lease ? "lease (new connections)" : "capability", p.cap.path, when);
    }
    int ok = printf("%s\n", cap) > 0 && fflush(stdout) == 0;
    explicit_bzero(cap, sizeof cap);
    if (!ok) {
        fprintf(stderr, "rfs %s: cannot write the capability\n", c->cmd);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}
