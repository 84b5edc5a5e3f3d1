/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs du URL: bytes and files under a remote path, walked with LIST (one request per
 * directory; entries' sizes come with the listing). Like du: a line per directory, deepest
 * first, then the total; -s only the total; -H human sizes; --json one document. Symbolic
 * links and other non-regular entries count as entries of size 0 and are never followed, so
 * the walk ends. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/escape.h"

#define DU_MAX_DEPTH 512

typedef struct du_totals {
    uint64_t bytes, files, dirs;
} du_totals;

typedef struct du_walk {
    cli_ctx *c;
    rfs_name root;
    char server[300];
    int first_json;
    int failed;
} du_walk;

typedef struct dir_list {
    size_t n, cap;
    char **sub;     /* subdirectory names */
    du_totals here; /* files directly in this directory */
    int oom;
} dir_list;

static int take(void *ctx, const char *entry, const rfs_stat_info *st)
{
    dir_list *d = ctx;
    if (strcmp(entry, ".") == 0 || strcmp(entry, "..") == 0)
        return 0;
    if (st->type != RFS_TYPE_DIR) {
        d->here.files++;
        d->here.bytes += st->type == RFS_TYPE_FILE ? st->size : 0;
        return 0;
    }
    if (d->n == d->cap) {
        size_t nc = d->cap ? 2 * d->cap : 16;
        char **ns = realloc(d->sub, nc * sizeof *ns);
        if (!ns) {
            d->oom = 1;
            return 1;
        }
        d->sub = ns;
        d->cap = nc;
    }
    if (!(d->sub[d->n] = strdup(entry))) {
        d->oom = 1;
        return 1;
    }
    d->n++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void report(du_walk *w, const char *path, const du_totals *t)
{
    if (w->c->o.json) {
        printf("%s\n    {\"path\": ", w->first_json ? "" : ",");
        w->first_json = 0;
        cli_json_string(stdout, path);
        printf(", \"bytes\": %" PRIu64 ", \"files\": %" PRIu64 ", \"directories\": %" PRIu64 "}",
               t->bytes, t->files, t->dirs);
        return;
    }
    char size[32], shown[4 * 4096 + 1];
    if (w->c->o.human)
        cli_human_size(t->bytes, size, sizeof size);
    else
        snprintf(size, sizeof size, "%" PRIu64, t->bytes);
    cli_escape(path, shown, sizeof shown);
    printf("%s\t%s\n", size, shown);
}

static int walk(du_walk *w, const char *path, int depth, du_totals *out)
{
    char url[4400];
    if (snprintf(url, sizeof url, "rfs:%s:%s", w->server, path) >= (int)sizeof url)
        return cli_usage(w->c->cmd, "path too long: %s", path);
    dir_list d = {0};
    int rc = rfs_list(url, &w->c->ropts, take, &d);
    int status = CLI_EXIT_OK;
    if (rc == RFS_E_NOTDIR && depth == 0) {
        rfs_stat_info st;
        rc = rfs_stat(url, &w->c->ropts, &st);
        if (rc == RFS_OK) {
            out->files = 1;
            out->bytes = st.type == RFS_TYPE_FILE ? st.size : 0;
        }
    }
    if (d.oom) {
        fprintf(stderr, "rfs du: out of memory listing %s\n", url);
        status = CLI_EXIT_FAIL;
    } else if (rc != RFS_OK) {
        rfs_name n = w->root;
        snprintf(n.path, sizeof n.path, "%s", path);
        status = cli_fail_remote(w->c, &n, rc, NULL);
    }
    if (status == CLI_EXIT_OK && rc == RFS_OK && !(depth == 0 && out->files)) {
        *out = d.here;
        if (d.n > 1)
            qsort(d.sub, d.n, sizeof *d.sub, by_name); /* the server lists in no order */
        for (size_t i = 0; i < d.n && status == CLI_EXIT_OK; i++) {
            char sub[4400];
            int r = snprintf(sub, sizeof sub, "%s%s%s", path,
                             path[strlen(path) - 1] == '/' ? "" : "/", d.sub[i]);
            if (r >= (int)sizeof sub || depth + 1 > DU_MAX_DEPTH) {
                fprintf(stderr, "rfs du: %s: too deep or too long a path; not counted\n", path);
                w->failed = 1;
                continue;
            }
            du_totals t = {0};
            int st = walk(w, sub, depth + 1, &t);
            if (st == CLI_EXIT_USAGE)
                status = st;
            else if (st != CLI_EXIT_OK)
                w->failed = 1; /* like du: say so, count the rest */
            out->bytes += t.bytes;
            out->files += t.files;
            out->dirs += t.dirs + 1;
            if (st == CLI_EXIT_OK && !w->c->o.summary)
                report(w, sub, &t);
        }
    }
    for (size_t i = 0; i < d.n; i++)
        free(d.sub[i]);
    free(d.sub);
    return status;
}

int cli_cmd_du(cli_ctx *c)
{
    char url[4400];
    du_walk w = {.c = c, .first_json = 1};
    if (cli_url_normalize(c->cmd, c->o.args[0], url, sizeof url, &w.root))
        return CLI_EXIT_USAGE;
    cli_server_str(&w.root, w.server, sizeof w.server);
    if (c->o.json)
        printf("{\"server\": \"%s\", \"entries\": [", w.server);
    du_totals t = {0};
    int status = walk(&w, w.root.path, 0, &t);
    if (status == CLI_EXIT_OK)
        report(&w, w.root.path, &t);
    if (c->o.json)
        printf("\n  ]}\n");
    if (status == CLI_EXIT_OK && w.failed)
        status = CLI_EXIT_FAIL;
    if (fflush(stdout) != 0 && status == CLI_EXIT_OK)
        status = CLI_EXIT_FAIL;
    return status;
}
