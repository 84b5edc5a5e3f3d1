/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* `rfs cp -r LOCAL_DIR rfs://...`: the remote directories of the whole tree are made before
 * any file is sent, in pipelined batches of MKDIRs (rfs_mkdir_many), so a tree of many
 * directories costs a round trip, not one per directory (100 directories over a 50 ms link:
 * 5 s of waiting before this, 0.05 s now). The server may run one connection's requests in
 * any order, so each MKDIR asks for its missing parents too (RFS_MKDIR_PARENTS) and all go at
 * once; a server that does not know the flag gets one batch per level, each waiting for the
 * one above. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "client/client.h"

#define TREE_MAX_LEVELS 256

typedef struct dir_list {
    char **v;
    size_t n, cap;
} dir_list;

static dir_list levels[TREE_MAX_LEVELS];
static size_t root_len;
static int oom;

static int visit(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    if (flag != FTW_D || ftw->level == 0)
        return 0; /* links are not followed (FTW_PHYS): the walk in cmd_cp.c does not either */
    if (ftw->level >= TREE_MAX_LEVELS)
        return 0; /* cmd_cp.c refuses such depths itself */
    dir_list *l = &levels[ftw->level];
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return oom = 1;
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(path + root_len)))
        return oom = 1;
    l->n++;
    return 0;
}

static void clear(void)
{
    for (size_t k = 0; k < TREE_MAX_LEVELS; k++) {
        for (size_t i = 0; i < levels[k].n; i++)
            free(levels[k].v[i]);
        free(levels[k].v);
        levels[k] = (dir_list){0};
    }
}

/* One pipelined batch: the directories of levels [from, to] under dest_path[0..base).
 * Returns -1 when all are there, 0 when the server refused the mode as unknown (an older
 * server: RFS_MKDIR_PARENTS), 1 on any other failure. */
static int make_levels(cli_ctx *c, const char *dest_url, const char *dest_path, size_t base,
                       size_t from, size_t to, unsigned mode)
{
    size_t n = 0;
    for (size_t k = from; k <= to; k++)
        n += levels[k].n;
    const char **paths = calloc(n ? n : 1, sizeof *paths);
    int *res = calloc(n ? n : 1, sizeof *res);
    int ok = paths && res, refused = 0;
    size_t got = 0;
    for (size_t k = from; ok && k <= to; k++)
        for (size_t i = 0; ok && i < levels[k].n; i++) {
            size_t len = base + strlen(levels[k].v[i]) + 1;
            char *p = malloc(len);
            if (!p || len > RFS_MAX_PATH + 1) {
                free(p);
                ok = 0;
                break;
            }
            snprintf(p, len, "%.*s%s", (int)base, dest_path, levels[k].v[i]);
            paths[got++] = p;
        }
    if (ok)
        rfs_mkdir_many(dest_url, paths, res, got, mode, &c->ropts);
    for (size_t i = 0; i < got; i++) {
        refused |= res[i] == RFS_E_INVAL && (mode & RFS_MKDIR_PARENTS);
        ok = ok && (res[i] == RFS_OK || res[i] == RFS_E_EXIST);
        free((void *)paths[i]);
    }
    free(paths);
    free(res);
    rfs_clear_error();
    return ok ? -1 : refused ? 0 : 1;
}

int cli_premake_dirs(cli_ctx *c, const char *local_root, const char *dest_url, const rfs_name *dn,
                     int *levels_out)
{
    *levels_out = -1;
    root_len = strlen(local_root);
    while (root_len > 1 && local_root[root_len - 1] == '/')
        root_len--;
    oom = 0;
    if (nftw(local_root, visit, 32, FTW_PHYS) != 0 || oom) {
        clear();
        return -1; /* the ordinary walk reports what is wrong, directory by directory */
    }
    size_t base = strlen(dn->path);
    while (base > 1 && dn->path[base - 1] == '/')
        base--;
    size_t nlevels = 0;
    while (nlevels + 1 < TREE_MAX_LEVELS && levels[nlevels + 1].n)
        nlevels++;
    *levels_out = (int)nlevels;
    int made = 0;
    int older = make_levels(c, dest_url, dn->path, base, 1, nlevels, 0777 | RFS_MKDIR_PARENTS);
    if (older < 0)
        made = (int)nlevels;
    else
        for (size_t k = 1; k <= nlevels && make_levels(c, dest_url, dn->path, base, k, k, 0777) < 0;
             k++)
            made++; /* a failed level: the ordinary walk makes (and reports) the rest */
    clear();
    return made;
}
