/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* LIST_TREE (docs/protocol.md "LIST_TREE"): a directory's listing and then its descendants',
 * breadth first, in one reply, as long as whole listings fit. A recursive copy then learns a
 * tree of a few thousand entries in one round trip instead of one per level. The walk never
 * leaves the export (each directory is opened beneath its root, symlinks are listed as
 * "other" and never entered) and is bounded by the reply's size (the client's budget, the
 * frame limit, RFS_LTREE_MAX_BYTES) and entry count. */
#include "list_tree.h"

#include "backend.h"
#include "common/err.h"
#include "exports.h"

#include <stdlib.h>
#include <string.h>

/* Directories still to list: their paths below the listed one, in the order found. */
typedef struct todo {
    char **v;
    size_t head, n, cap;
} todo;

static int todo_push(todo *t, const char *rel, size_t rel_len, const char *name, size_t len)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **v = realloc(t->v, cap * sizeof *v);
        if (!v)
            return -1;
        t->v = v;
        t->cap = cap;
    }
    char *s = malloc(rel_len + 1 + len + 1);
    if (!s)
        return -1;
    size_t k = 0;
    if (rel_len) {
        memcpy(s, rel, rel_len);
        s[rel_len] = '/';
        k = rel_len + 1;
    }
    memcpy(s + k, name, len);
    s[k + len] = '\0';
    t->v[t->n++] = s;
    return 0;
}

static void todo_free(todo *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i]);
    free(t->v);
}

/* p below base by rel ("" for base itself); 0, or -1 when the path would be too long. */
static int path_below(const rfsd_path *base, const char *rel, rfsd_path *p)
{
    *p = *base;
    if (!rel[0])
        return 0;
    size_t rl = strlen(rel), a = strlen(p->rel), b = strlen(p->shown);
    if (a + 1 + rl > RFS_MAX_PATH || b + 1 + rl > RFS_MAX_PATH)
        return -1;
    p->rel[a] = '/';
    memcpy(p->rel + a + 1, rel, rl + 1);
    p->shown[b] = '/';
    memcpy(p->shown + b + 1, rel, rl + 1);
    return 0;
}

/* Enqueues the directories among a block's entries. */
static int queue_dirs(todo *t, const char *rel, const uint8_t *entries, size_t len, uint32_t count)
{
    size_t rl = strlen(rel);
    for (uint32_t i = 0; i < count; i++) {
        rfs_list_entry e;
        if (rfs_list_entry_next(&entries, &len, &e))
            return -1;
        if (e.type == RFS_TYPE_DIR && todo_push(t, rel, rl, e.name.s, e.name.len))
            return -1;
    }
    return 0;
}

/* Directories that did not fit (or could not be listed) before the walk gives up: each costs
 * a read of up to a page of entries, which a tree of many large directories must not turn
 * into a walk of everything. */
#define LTREE_MAX_SKIPS 8

int rfsd_list_tree(rfsd_conn *c, const rfs_req *q, rfs_rep *rep, uint8_t **buf)
{
    rfsd_path base;
    const rfsd_export *ex;
    int rc = rfsd_resolve(c, &q->u.list.path, RFSD_NEED_READ, 1, &base, &ex);
    if (rc)
        return rc;
    if (!ex) /* the list of exports is short and has a LIST of its own */
        return rfs_fail(RFS_E_UNSUPPORTED, "%s: LIST_TREE of the export list", base.shown);
    size_t cap = c->max_frame - RFS_HDR_SIZE - RFS_SUM_LEN;
    if (cap > RFS_LTREE_MAX_BYTES)
        cap = RFS_LTREE_MAX_BYTES;
    if (q->u.list.start && q->u.list.start < cap) /* the client's budget: 0 for none */
        cap = q->u.list.start;
    *buf = malloc(cap);
    todo t = {0};
    if (!*buf || todo_push(&t, "", 0, "", 0)) {
        todo_free(&t);
        return rfs_fail(RFS_E_NOMEM, "%s: server out of memory", base.shown);
    }
    size_t used = 0;
    uint32_t entries = 0;
    int skipped = 0;
    for (; t.head < t.n && skipped <= LTREE_MAX_SKIPS; t.head++) {
        const char *rel = t.v[t.head];
        rfsd_path p;
        size_t rl = strlen(rel), head = rl + 6;
        if (path_below(&base, rel, &p) || used + head + RFS_LIST_ENTRY_FIXED + 1 > cap) {
            skipped++;
            continue;
        }
        size_t got;
        uint32_t count, next;
        rc = rfsd_be_list(ex->root_fd, &p, 0, *buf + used + head, cap - used - head, &got, &count,
                          &next);
        /* A directory is sent whole or not at all: the client lists the others itself (and
         * what is below them). */
        if (rc || next || entries + count > RFS_LTREE_MAX_ENTRIES) {
            if (t.head == 0 && rc) { /* the listed directory's own failure is the answer */
                todo_free(&t);
                return rc;
            }
            rfs_clear_error();
            rc = RFS_OK;
            skipped++;
            continue;
        }
        rfs_ltree_block_head(rel, rl, count, *buf + used, head);
        if (queue_dirs(&t, rel, *buf + used + head, got, count)) {
            todo_free(&t);
            return rfs_fail(RFS_E_NOMEM, "%s: server out of memory", base.shown);
        }
        used += head + got;
        entries += count;
    }
    todo_free(&t);
    rep->data = *buf;
    rep->data_len = (uint32_t)used;
    return RFS_OK;
}
