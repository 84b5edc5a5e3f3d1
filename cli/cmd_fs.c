/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs chmod MODE URL and rfs df URL: permission bits of a remote file, and the space left on
 * the server's file system (the two questions before a big transfer: may the others read it,
 * and will it fit). MODE is octal (640) or symbolic like chmod's (u+x, go-w, a=r,u+w). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* Applies a symbolic mode to cur; returns -1 if it does not parse. */
static int symbolic(const char *s, unsigned cur, int is_dir, unsigned *out)
{
    unsigned mode = cur & 07777;
    while (*s) {
        unsigned who = 0;
        for (; strchr("ugoa", *s) && *s; s++)
            who |= *s == 'u' ? 04700u : *s == 'g' ? 02070u : *s == 'o' ? 01007u : 07777u;
        if (!who)
            who = 07777u;
        if (*s != '+' && *s != '-' && *s != '=')
            return -1;
        while (*s == '+' || *s == '-' || *s == '=') {
            char op = *s++;
            unsigned bits = 0;
            for (; *s && strchr("rwxXst", *s); s++) {
                switch (*s) {
                case 'r': bits |= 0444; break;
                case 'w': bits |= 0222; break;
                case 'x': bits |= 0111; break;
                case 'X': bits |= (is_dir || (cur & 0111)) ? 0111 : 0; break;
                case 's': bits |= 06000; break;
                case 't': bits |= 01000; break;
                }
            }
            bits &= who;
            if (op == '+')
                mode |= bits;
            else if (op == '-')
                mode &= ~bits;
            else
                mode = (mode & ~(who & 0777u)) | bits;
        }
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    *out = mode;
    return 0;
}

int cli_cmd_chmod(cli_ctx *c)
{
    const char *ms = c->o.args[0];
    char url[4400];
    rfs_name name;
    if (cli_url_normalize(c->cmd, c->o.args[1], url, sizeof url, &name))
        return CLI_EXIT_USAGE;
    unsigned mode;
    char *end;
    unsigned long v = strtoul(ms, &end, 8);
    if (*ms >= '0' && *ms <= '7' && *end == '\0') {
        if (v > 07777)
            return cli_usage(c->cmd, "mode %s is over 7777", ms);
        mode = (unsigned)v;
    } else {
        rfs_stat_info st;
        int rc = rfs_stat(url, &c->ropts, &st);
        if (rc != RFS_OK)
            return cli_fail_remote(c, &name, rc, NULL);
        if (symbolic(ms, st.mode, st.type == RFS_TYPE_DIR, &mode))
            return cli_usage(c->cmd, "bad mode '%s' (octal like 640, or like u+x,go-w)", ms);
    }
    int rc = rfs_chmod(url, mode, &c->ropts);
    return rc == RFS_OK ? CLI_EXIT_OK : cli_fail_remote(c, &name, rc, NULL);
}

int cli_cmd_df(cli_ctx *c)
{
    char url[4400], server[300];
    rfs_name name;
    if (cli_url_normalize(c->cmd, c->o.args[0], url, sizeof url, &name))
        return CLI_EXIT_USAGE;
    rfs_fs_info fs;
    int rc = rfs_statfs(url, &c->ropts, &fs);
    if (rc != RFS_OK)
        return cli_fail_remote(c, &name, rc, NULL);
    cli_server_str(&name, server, sizeof server);
    uint64_t used = fs.total_bytes - fs.free_bytes;
    if (c->o.json) {
        printf("{\"server\": ");
        cli_json_string(stdout, server);
        printf(", \"path\": ");
        cli_json_string(stdout, name.path);
        printf(", \"total_bytes\": %" PRIu64 ", \"used_bytes\": %" PRIu64
               ", \"avail_bytes\": %" PRIu64 ", \"files\": %" PRIu64 ", \"files_free\": %" PRIu64
               "}\n",
               fs.total_bytes, used, fs.avail_bytes, fs.files, fs.files_free);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    char t[32], u[32], a[32];
    if (c->o.human) {
        cli_human_size(fs.total_bytes, t, sizeof t);
        cli_human_size(used, u, sizeof u);
        cli_human_size(fs.avail_bytes, a, sizeof a);
    } else { /* like df: 1K blocks */
        snprintf(t, sizeof t, "%" PRIu64, fs.total_bytes / 1024);
        snprintf(u, sizeof u, "%" PRIu64, used / 1024);
        snprintf(a, sizeof a, "%" PRIu64, fs.avail_bytes / 1024);
    }
    /* Use% as df computes it: used over what users could have (used + avail), rounded up. */
    uint64_t base = used + fs.avail_bytes;
    unsigned pct = base ? (unsigned)((used * 100 + base - 1) / base) : 0;
    printf("%-24s %14s %14s %14s %4s %12s %12s\n", "Server", c->o.human ? "Size" : "1K-blocks",
           "Used", "Available", "Use%", "Inodes", "IFree");
    printf("%-24s %14s %14s %14s %3u%% %12" PRIu64 " %12" PRIu64 "\n", server, t, u, a, pct,
           fs.files, fs.files_free);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
