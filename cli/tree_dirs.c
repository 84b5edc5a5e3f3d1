/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* `rfs cp -r LOCAL_DIR rfs://...`: the remote directories of the whole tree are made before
 * any file is sent, one pipelined batch of MKDIRs per level of the tree (rfs_mkdir_many), so
 * a tree of many directories costs a round trip per level, not one per directory (100
 * directories over a 50 ms link: 5 s of waiting before this, 0.05 s now). A level waits for
 * the one above: the server may run one connection's requests in any order. */
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
        return 0;  /* links are not followed (FTW_PHYS): the walk in cmd_cp.c does not either */
    if (ftw->level >= TREE_MAX_LEVELS)
        return 0;  /* cmd_cp.c refuses such depths itself */
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

int cli_premake_dirs(cli_ctx *c, const char *local_root, const char *dest_url, const rfs_name *dn)
{
    root_len = strlen(local_root);
    while (root_len > 1 && local_root[root_len - 1] == '/')
        root_len--;
    oom = 0;
    if (nftw(local_root, visit, 32, FTW_PHYS) != 0 || oom) {
        clear();
        return -1;  /* the ordinary walk reports what is wrong, directory by directory */
    }
    size_t base = strlen(dn->path);
    while (base > 1 && dn->path[base - 1] == '/')
        base--;
    int made = 0;
    for (size_t k = 1; k < TREE_MAX_LEVELS && levels[k].n; k++) {
        dir_list *l = &levels[k];
        const char **paths = calloc(l->n, sizeof *paths);
        int *res = calloc(l->n, sizeof *res);
        int ok = paths && res;
        for (size_t i = 0; ok && i < l->n; i++) {
            size_t len = base + strlen(l->v[i]) + 1;
            char *p = malloc(len);
            if (!p || len > RFS_MAX_PATH + 1) {
                free(p);
                ok = 0;
                break;
            }
            snprintf(p, len, "%.*s%s", (int)base, dn->path, l->v[i]);
            paths[i] = p;
        }
        if (ok)
            rfs_mkdir_many(dest_url, paths, res, l->n, 0777, &c->ropts);
        for (size_t i = 0; i < l->n && paths; i++) {
            ok = ok && (res[i] == RFS_OK || res[i] == RFS_E_EXIST);
            free((void *)paths[i]);
        }
        free(paths);
        free(res);
        if (!ok)
            break;  /* the ordinary walk makes (and reports) the rest */
        made++;
    }
    clear();
    return made;
}
