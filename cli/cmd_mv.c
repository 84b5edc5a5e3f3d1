/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs mv URL DEST: a rename on the server (no data moves). DEST is a path on the same server
 * or an rfs name of it; an existing directory receives the source under its own name, as mv
 * does. A destination on another server is refused: that is a copy, not a rename. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

/* The destination path on src's server, or -1 after a usage message. */
static int dest_path(cli_ctx *c, const rfs_name *src, const char *arg, char *path, size_t cap)
{
    if (rfs_is_name(arg)) {
        char url[4400];
        rfs_name d;
        if (cli_url_normalize(c->cmd, arg, url, sizeof url, &d))
            return -1;
        if (strcmp(d.host, src->host) != 0 || d.port != src->port) {
            cli_usage(c->cmd,
                      "%s is on another server than the source: mv renames on one "
                      "server (copy with get and put, then rm)",
                      arg);
            return -1;
        }
        snprintf(path, cap, "%s", d.path);
        return 0;
    }
    if (arg[0] != '/') {
        cli_usage(c->cmd,
                  "destination '%s' must be an absolute path on the server or an rfs "
                  "name",
                  arg);
        return -1;
    }
    snprintf(path, cap, "%s", arg);
    return 0;
}

int cli_cmd_mv(cli_ctx *c)
{
    char url[4400], path[4400], durl[4400], server[300];
    rfs_name src;
    if (cli_url_normalize(c->cmd, c->o.args[0], url, sizeof url, &src))
        return CLI_EXIT_USAGE;
    if (dest_path(c, &src, c->o.args[1], path, sizeof path))
        return CLI_EXIT_USAGE;
    cli_server_str(&src, server, sizeof server);
    rfs_name dst = src;
    snprintf(durl, sizeof durl, "rfs:%s:%s", server, path);
    rfs_stat_info st;
    int rc = rfs_stat(durl, &c->ropts, &st);
    if (rc == RFS_OK && st.type == RFS_TYPE_DIR) {
        if (cli_url_join_basename(durl, sizeof durl, src.path) || rfs_parse_name(durl, &dst))
            return cli_usage(c->cmd, "cannot put %s into %s", src.path, path);
        snprintf(path, sizeof path, "%s", dst.path);
        rc = rfs_stat(durl, &c->ropts, &st);
    }
    snprintf(dst.path, sizeof dst.path, "%s", path);
    if (rc == RFS_OK && c->o.no_clobber) {
        fprintf(stderr, "rfs mv: %s:%s exists (not overwritten: --no-clobber)\n", server, path);
        return CLI_EXIT_FAIL;
    }
    if (rc != RFS_OK && rc != RFS_E_NOENT)
        return cli_fail_remote(c, &dst, rc, NULL);
    rc = rfs_rename(url, path, &c->ropts);
    return rc == RFS_OK ? CLI_EXIT_OK : cli_fail_remote(c, &src, rc, NULL);
}
