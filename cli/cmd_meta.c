/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs ls / stat / rm / mkdir: metadata operations, one library call each (mkdir -p: one per
 * path component). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/escape.h"

static char type_char(uint32_t type)
{
    return type == RFS_TYPE_DIR ? 'd' : type == RFS_TYPE_FILE ? '-' : '?';
}

static const char *type_name(uint32_t type)
{
    return type == RFS_TYPE_DIR ? "directory" : type == RFS_TYPE_FILE ? "regular file" : "other";
}

/* Local time "YYYY-MM-DD HH:MM:SS", plus nanoseconds and zone when `precise`. */
static void format_mtime(int64_t ns, int precise, char *out, size_t cap)
{
    time_t s = (time_t)(ns / 1000000000);
    long frac = (long)(ns % 1000000000);
    if (frac < 0) {
        frac += 1000000000;
        s -= 1;
    }
    struct tm tm;
    if (!localtime_r(&s, &tm)) {
        snprintf(out, cap, "%" PRId64 "ns", ns);
        return;
    }
    char date[64], zone[16];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
    if (!precise) {
        snprintf(out, cap, "%s", date);
        return;
    }
    strftime(zone, sizeof zone, "%z", &tm);
    snprintf(out, cap, "%s.%09ld %s", date, frac, zone);
}

static void print_entry(const cli_ctx *c, const char *name, const rfs_stat_info *st)
{
    char when[64], shown[4 * 256 + 1]; /* a LIST name is at most 255 bytes, 4 per escape */
    format_mtime(st->mtime_ns, 0, when, sizeof when);
    cli_escape(name, shown, sizeof shown); /* names come from the server: no raw controls */
    if (c->o.human) {
        char size[32];
        cli_human_size(st->size, size, sizeof size);
        printf("%c %6s  %s  %s\n", type_char(st->type), size, when, shown);
    } else {
        printf("%c %14" PRIu64 "  %s  %s\n", type_char(st->type), st->size, when, shown);
    }
}

/* --json: {"server": ..., "path": ..., "entries": [...]} */
static void json_listing_open(const rfs_name *n)
{
    char server[300];
    cli_server_str(n, server, sizeof server);
    printf("{\"server\": ");
    cli_json_string(stdout, server);
    printf(", \"path\": ");
    cli_json_string(stdout, n->path);
    printf(", \"entries\": [");
}

typedef struct listing {
    size_t n, cap;
    char **names;
    rfs_stat_info *st;
    int oom;
} listing;

static int collect(void *ctx, const char *entry, const rfs_stat_info *st)
{
    listing *l = ctx;
    if (strcmp(entry, ".") == 0 || strcmp(entry, "..") == 0)
        return 0;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        char **nn = realloc(l->names, nc * sizeof *nn);
        if (nn)
            l->names = nn;
        rfs_stat_info *ns = nn ? realloc(l->st, nc * sizeof *ns) : NULL;
        if (!nn || !ns) {
            l->oom = 1;
            return 1;
        }
        l->st = ns;
        l->cap = nc;
    }
    if (!(l->names[l->n] = strdup(entry))) {
        l->oom = 1;
        return 1;
    }
    l->st[l->n++] = *st;
    return 0;
}

static const listing *sort_target;
static int by_name(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    return strcmp(sort_target->names[i], sort_target->names[j]);
}

int cli_cmd_ls(cli_ctx *c)
{
    char url[4400];
    rfs_name name;
    if (cli_url_normalize(c->cmd, c->o.args[0], url, sizeof url, &name))
        return CLI_EXIT_USAGE;
    listing l = {0};
    int rc = rfs_list(url, &c->ropts, collect, &l);
    if (rc == RFS_E_NOTDIR) {
        /* Like ls: a file lists as itself. */
        rfs_stat_info st;
        rc = rfs_stat(url, &c->ropts, &st);
        if (rc != RFS_OK)
            return cli_fail_remote(c, &name, rc, NULL);
        char base[1024];
        cli_basename(name.path, base, sizeof base);
        if (c->o.json) {
            json_listing_open(&name);
            cli_json_entry(stdout, base, &st);
            printf("]}\n");
        } else {
            print_entry(c, base, &st);
        }
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    int status = CLI_EXIT_OK;
    if (l.oom) {
        fprintf(stderr, "rfs ls: out of memory listing %s\n", url);
        status = CLI_EXIT_FAIL;
    } else if (rc != RFS_OK) {
        status = cli_fail_remote(c, &name, rc, NULL);
    } else {
        size_t *order = malloc((l.n ? l.n : 1) * sizeof *order);
        if (!order) {
            fprintf(stderr, "rfs ls: out of memory listing %s\n", url);
            status = CLI_EXIT_FAIL;
        } else {
            for (size_t i = 0; i < l.n; i++)
                order[i] = i;
            sort_target = &l;
            qsort(order, l.n, sizeof *order, by_name);
            if (c->o.json)
                json_listing_open(&name);
            for (size_t i = 0; i < l.n; i++) {
                if (!c->o.json) {
                    print_entry(c, l.names[order[i]], &l.st[order[i]]);
                    continue;
                }
                printf("%s\n  ", i ? "," : "");
                cli_json_entry(stdout, l.names[order[i]], &l.st[order[i]]);
            }
            if (c->o.json)
                printf("%s]}\n", l.n ? "\n" : "");
            free(order);
        }
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.names[i]);
    free(l.names);
    free(l.st);
    if (status == CLI_EXIT_OK && fflush(stdout) != 0)
        status = CLI_EXIT_FAIL;
    return status;
}

int cli_cmd_stat(cli_ctx *c)
{
    char url[4400];
    rfs_name name;
    if (cli_url_normalize(c->cmd, c->o.args[0], url, sizeof url, &name))
        return CLI_EXIT_USAGE;
    rfs_stat_info st;
    int rc = rfs_stat(url, &c->ropts, &st);
    if (rc != RFS_OK)
        return cli_fail_remote(c, &name, rc, NULL);
    char server[300], when[96], path[4 * 4096 + 1];
    cli_server_str(&name, server, sizeof server);
    if (c->o.json) {
        printf("{\"server\": ");
        cli_json_string(stdout, server);
        printf(", \"path\": ");
        cli_json_string(stdout, name.path);
        printf(", ");
        cli_json_fields(stdout, &st);
        printf("}\n");
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    format_mtime(st.mtime_ns, 1, when, sizeof when);
    cli_escape(name.path, path, sizeof path);
    printf("server: %s\n"
           "path:   %s\n"
           "type:   %s\n"
           "size:   %" PRIu64 "\n"
           "mode:   %04o\n"
           "mtime:  %s\n",
           server, path, type_name(st.type), st.size, (unsigned)(st.mode & 07777), when);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

int cli_cmd_rm(cli_ctx *c)
{
    char url[4400];
    rfs_name name;
    if (cli_url_normalize(c->cmd, c->o.args[0], url, sizeof url, &name))
        return CLI_EXIT_USAGE;
    int rc = rfs_delete(url, &c->ropts);
    return rc == RFS_OK ? CLI_EXIT_OK : cli_fail_remote(c, &name, rc, NULL);
}

/* "rfs:HOST:PORT:" + the first `len` bytes of path. */
static int url_with_path(const rfs_name *n, const char *path, size_t len, char *out, size_t cap)
{
    int r = strchr(n->host, ':')
                ? snprintf(out, cap, "rfs:[%s]:%u:%.*s", n->host, (unsigned)n->port, (int)len, path)
                : snprintf(out, cap, "rfs:%s:%u:%.*s", n->host, (unsigned)n->port, (int)len, path);
    return r < 0 || (size_t)r >= cap ? -1 : 0;
}

static int mkdir_parents(cli_ctx *c, const rfs_name *name)
{
    const char *p = name->path;
    size_t len = strlen(p);
    while (len > 1 && p[len - 1] == '/')
        len--;
    char url[4400];
    for (size_t i = 1; i <= len; i++) {
        if (i < len && p[i] != '/')
            continue;
        if (p[i - 1] == '/') /* "a//b": nothing between the slashes */
            continue;
        if (url_with_path(name, p, i, url, sizeof url))
            return cli_usage(c->cmd, "path too long");
        int rc = rfs_mkdir(url, 0777, &c->ropts);
        if (rc == RFS_E_EXIST) {
            rfs_stat_info st;
            rc = rfs_stat(url, &c->ropts, &st);
            if (rc == RFS_OK && st.type != RFS_TYPE_DIR)
                rc = RFS_E_NOTDIR;
        }
        if (rc != RFS_OK) {
            rfs_name part = *name;
            snprintf(part.path, sizeof part.path, "%.*s", (int)i, p);
            return cli_fail_remote(c, &part, rc, NULL);
        }
    }
    return CLI_EXIT_OK;
}

int cli_cmd_mkdir(cli_ctx *c)
{
    char url[4400];
    rfs_name name;
    if (cli_url_normalize(c->cmd, c->o.args[0], url, sizeof url, &name))
        return CLI_EXIT_USAGE;
    if (c->o.parents)
        return mkdir_parents(c, &name);
    int rc = rfs_mkdir(url, 0777, &c->ropts);
    return rc == RFS_OK ? CLI_EXIT_OK : cli_fail_remote(c, &name, rc, NULL);
}
