/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs manifest show URL [--json] | ls DIR-URL: what a logical file over several servers is
 * made of (manifest/, docs/manifest.md), read from its manifest on the home server under the
 * manifest's shared lock, as the library reads it. augment | trim: its replicas changed
 * (manifest/ops.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/escape.h"
#include "common/err.h"
#include "manifest/manifest.h"
#include "manifest/ops.h"
#include "manifest/store.h"
#include "rfs/rfs_manifest.h"

static int load(cli_ctx *c, const char *url, rfsm **m)
{
    rfs_io *home = NULL;
    int rc = rfs_io_open_remote(url, RFS_O_RDONLY, 0, &c->ropts, &home);
    if (rc != RFS_OK)
        return rc;
    rc = rfsm_store_load(home, m);
    rfs_status st;
    rfs_status_save(&st, rc);
    home->ops->close(home);
    return rfs_status_raise(&st);
}

static uint32_t incomplete(const rfsm *m)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->nobjects; i++)
        n += (m->objects[i].flags & RFSM_OBJ_STALE) != 0;
    return n;
}

/* What an incomplete replica misses: its object ranges, or that it is wholly suspect. */
static void print_missing(const rfsm_object *o)
{
    if (!(o->flags & RFSM_OBJ_STALE))
        return;
    if (o->nmissing == 0) {
        printf("    missing: all (re-copied whole by augment)\n");
        return;
    }
    printf("    missing %llu bytes in %u ranges:", (unsigned long long)rfsm_object_missing_bytes(o),
           o->nmissing);
    for (uint32_t k = 0; k < o->nmissing && k < 8; k++)
        printf(" %llu+%llu", (unsigned long long)o->missing[k].off,
               (unsigned long long)o->missing[k].len);
    printf("%s\n", o->nmissing > 8 ? " ... (--json lists them all)" : "");
}

static void print_text(const char *url, const rfsm *m)
{
    char shown[4 * 4400 + 1];
    cli_escape(url, shown, sizeof shown);
    printf("%s: size %llu, generation %llu, %u servers, %u objects (%u incomplete)\n", shown,
           (unsigned long long)m->size, (unsigned long long)m->generation, m->nservers, m->nobjects,
           incomplete(m));
    for (uint32_t x = 0; x < m->nextents; x++) {
        const rfsm_extent *e = &m->extents[x];
        printf("extent %u: logical %llu +%llu at object offset %llu, %u columns of %llu-byte "
               "units, %u replicas\n",
               x, (unsigned long long)e->off, (unsigned long long)e->len,
               (unsigned long long)e->obj_off, e->stripe_count, (unsigned long long)e->stripe_size,
               e->replicas);
        for (uint32_t col = 0; col < e->stripe_count; col++) {
            for (uint32_t r = 0; r < e->replicas; r++) {
                if (rfsm_object_of(e, col, r) == RFSM_NO_OBJECT)
                    continue; /* an empty slot */
                const rfsm_object *o = &m->objects[rfsm_object_of(e, col, r)];
                char p[4 * 4096 + 1];
                cli_escape(o->path, p, sizeof p);
                printf("  column %u replica %u: %s%s  %s\n", col, r, m->servers[o->server], p,
                       (o->flags & RFSM_OBJ_STALE) ? "INCOMPLETE" : "complete");
                print_missing(o);
            }
        }
    }
    if (rfsm_has_logs(m)) {
        uint64_t bytes = 0;
        for (uint32_t i = 0; i < m->noverlays; i++)
            bytes += m->overlays[i].len;
        printf("log-structured writes: %u overlay extents (%llu bytes) over the stripes, in %u "
               "log objects (rfs manifest compact copies them into the stripes)\n",
               m->noverlays, (unsigned long long)bytes, m->nlogs);
        for (uint32_t i = 0; i < m->nlogs; i++) {
            char p[4 * 4096 + 1];
            cli_escape(m->logs[i].path, p, sizeof p);
            printf("  log %u: %s%s  %llu bytes\n", i, m->servers[m->logs[i].server], p,
                   (unsigned long long)m->logs[i].len);
        }
    }
}

static int show(cli_ctx *c, const char *url, const rfs_name *n)
{
    rfsm *m = NULL;
    int rc = load(c, url, &m);
    if (rc != RFS_OK)
        return cli_fail_remote(c, n, rc, NULL);
    if (c->o.json)
        rfsm_write_json(stdout, m);
    else
        print_text(url, m);
    rfsm_free(m);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

typedef struct names {
    char **v;
    size_t n, cap;
    int oom;
} names;

static int collect(void *ctx, const char *entry, const rfs_stat_info *st)
{
    names *l = ctx;
    size_t len = strlen(entry);
    if (st->type != RFS_TYPE_FILE || len <= 5 || strcmp(entry + len - 5, ".rfsm") != 0)
        return 0;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        char **nv = realloc(l->v, nc * sizeof *nv);
        if (!nv) {
            l->oom = 1;
            return 1;
        }
        l->v = nv;
        l->cap = nc;
    }
    if (!(l->v[l->n] = strdup(entry))) {
        l->oom = 1;
        return 1;
    }
    l->n++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One line (or JSON object) per manifest in the directory; one that cannot be read says why
 * and makes the exit status 1, the others are still listed. */
static int list(cli_ctx *c, const char *url, const rfs_name *n)
{
    names l = {0};
    int rc = rfs_list(url, &c->ropts, collect, &l);
    if (rc != RFS_OK || l.oom) {
        for (size_t i = 0; i < l.n; i++)
            free(l.v[i]);
        free(l.v);
        if (l.oom)
            return cli_fail_local(c, "listing", 12 /* ENOMEM */);
        return cli_fail_remote(c, n, rc, NULL);
    }
    qsort(l.v, l.n, sizeof *l.v, by_name);
    int status = CLI_EXIT_OK;
    if (c->o.json)
        printf("{\"manifests\": [");
    for (size_t i = 0; i < l.n; i++) {
        char full[4400 + 256];
        size_t ul = strlen(url);
        snprintf(full, sizeof full, "%s%s%s", url, ul && url[ul - 1] == '/' ? "" : "/", l.v[i]);
        rfsm *m = NULL;
        rc = load(c, full, &m);
        char shown[4 * 256 + 1];
        cli_escape(l.v[i], shown, sizeof shown);
        if (rc != RFS_OK) {
            fprintf(stderr, "rfs manifest ls: %s: %s\n", shown, rfs_last_error());
            status = CLI_EXIT_FAIL;
            continue;
        }
        const rfsm_extent *e = m->nextents ? &m->extents[0] : NULL;
        if (c->o.json) {
            printf("%s\n  {\"name\": ", i ? "," : "");
            cli_json_string(stdout, l.v[i]);
            printf(", \"size\": %llu, \"servers\": %u, \"stripe_size\": %llu, "
                   "\"stripe_count\": %u, \"replicas\": %u, \"incomplete\": %u}",
                   (unsigned long long)m->size, m->nservers,
                   (unsigned long long)(e ? e->stripe_size : 0), e ? e->stripe_count : 0,
                   e ? e->replicas : 0, incomplete(m));
        } else {
            printf("%14llu  %u x %llu  r%u  %s  %s\n", (unsigned long long)m->size,
                   e ? e->stripe_count : 0, (unsigned long long)(e ? e->stripe_size : 0),
                   e ? e->replicas : 0, incomplete(m) ? "INCOMPLETE" : "complete", shown);
        }
        rfsm_free(m);
    }
    if (c->o.json)
        printf("%s]}\n", l.n ? "\n" : "");
    for (size_t i = 0; i < l.n; i++)
        free(l.v[i]);
    free(l.v);
    if (fflush(stdout) != 0)
        status = CLI_EXIT_FAIL;
    return status;
}

/* ---- augment, trim ---- */

static void copied(void *ctx, const rfsm_copy_note *n)
{
    cli_ctx *c = ctx;
    if (c->o.quiet)
        return;
    if (n->repair && n->missed != UINT64_MAX)
        printf("column %u: repaired %s from %s: the whole object re-copied (%llu bytes; it "
               "missed %llu)\n",
               n->column, n->to, n->from, (unsigned long long)n->bytes,
               (unsigned long long)n->missed);
    else if (n->repair)
        printf("column %u: repaired %s from %s: the whole object re-copied (%llu bytes)\n",
               n->column, n->to, n->from, (unsigned long long)n->bytes);
    else
        printf("column %u: new replica %s copied from %s (%llu bytes)\n", n->column, n->to, n->from,
               (unsigned long long)n->bytes);
}

static int augment(cli_ctx *c, const char *url, const rfs_name *n)
{
    if (!c->o.server)
        return cli_usage(c->cmd, "augment needs --server rfs://HOST:PORT");
    if (c->o.replica >= 0 || c->o.force)
        return cli_usage(c->cmd, "augment takes --server and --column only");
    int rc = rfsm_augment(url, c->o.server, c->o.column, &c->ropts, copied, c);
    if (rc != RFS_OK)
        return cli_fail_remote(c, n, rc, NULL);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

static int trim(cli_ctx *c, const char *url, const rfs_name *n)
{
    if (!c->o.server == (c->o.replica < 0))
        return cli_usage(c->cmd, "trim needs either --server rfs://HOST:PORT or --replica R");
    uint32_t removed = 0;
    int rc =
        rfsm_trim(url, c->o.server, c->o.replica, c->o.column, c->o.force, &c->ropts, &removed);
    if (rc != RFS_OK)
        return cli_fail_remote(c, n, rc, NULL);
    if (!c->o.quiet)
        printf("trimmed %u replica object%s\n", removed, removed == 1 ? "" : "s");
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* ---- compact ---- */

static int compact(cli_ctx *c, const char *url, const rfs_name *n)
{
    uint32_t overlays = 0, logs = 0;
    int rc = rfs_manifest_compact(url, &c->ropts, &overlays, &logs);
    if (rc != RFS_OK)
        return cli_fail_remote(c, n, rc, NULL);
    if (!c->o.quiet)
        printf("compacted %u overlay extent%s into the stripes, deleted %u log object%s\n",
               overlays, overlays == 1 ? "" : "s", logs, logs == 1 ? "" : "s");
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

int cli_cmd_manifest(cli_ctx *c)
{
    const char *sub = c->o.args[0];
    char url[4400];
    rfs_name n;
    if (cli_url_normalize(c->cmd, c->o.args[1], url, sizeof url, &n))
        return CLI_EXIT_USAGE;
    if (!strcmp(sub, "show"))
        return show(c, url, &n);
    if (!strcmp(sub, "ls"))
        return list(c, url, &n);
    if (!strcmp(sub, "augment"))
        return augment(c, url, &n);
    if (!strcmp(sub, "trim"))
        return trim(c, url, &n);
    if (!strcmp(sub, "refresh"))
        return cli_manifest_refresh(c, url, &n);
    if (!strcmp(sub, "compact"))
        return compact(c, url, &n);
    return cli_usage(c->cmd,
                     "unknown subcommand '%s' (show, ls, augment, trim, refresh or compact)", sub);
}
