/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs manifest trim (ops.h): the replicas taken out of the manifest under its update lock
 * (checked there against the stored manifest: never a column's last replica, nor its last
 * complete one without force), then their objects deleted. */
#include "manifest/ops.h"
#include "manifest/ops_internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "manifest/store.h"

typedef struct trim_ctx {
    const char *name, *url; /* url NULL: by replica slot */
    int replica, column, force;
    /* chosen in the stored manifest: the objects to delete afterwards */
    char **names;
    uint32_t nnames;
} trim_ctx;

static int chosen(const trim_ctx *t, const rfsm *m, uint32_t c, uint32_t r, uint32_t oi)
{
    if (oi == RFSM_NO_OBJECT || (t->column != RFSM_ALL_COLUMNS && (uint32_t)t->column != c))
        return 0;
    if (t->url)
        return !strcmp(m->servers[m->objects[oi].server], t->url);
    return (uint32_t)t->replica == r;
}

/* Object i out of m's table; indices above it move down by one. */
static void remove_object(rfsm *m, uint32_t i)
{
    free(m->objects[i].path);
    free(m->objects[i].missing);
    memmove(&m->objects[i], &m->objects[i + 1], (m->nobjects - i - 1) * sizeof *m->objects);
    m->nobjects--;
    for (uint32_t x = 0; x < m->nextents; x++) {
        rfsm_extent *e = &m->extents[x];
        for (size_t k = 0; k < (size_t)e->stripe_count * e->replicas; k++)
            if (e->objects[k] != RFSM_NO_OBJECT && e->objects[k] > i)
                e->objects[k]--;
    }
}

/* Each column's replicas packed to the front of its slots (their order, which reads follow,
 * kept), then the slots no column uses any more go. */
static void compact_slots(rfsm_extent *e)
{
    uint32_t width = 0;
    for (uint32_t c = 0; c < e->stripe_count; c++) {
        uint32_t *row = &e->objects[(size_t)c * e->replicas], k = 0;
        for (uint32_t r = 0; r < e->replicas; r++)
            if (row[r] != RFSM_NO_OBJECT)
                row[k++] = row[r];
        for (uint32_t r = k; r < e->replicas; r++)
            row[r] = RFSM_NO_OBJECT;
        if (k > width)
            width = k;
    }
    /* Rows re-laid at the new width, front to back (width <= replicas: in place). */
    for (uint32_t c = 0; c < e->stripe_count; c++)
        for (uint32_t r = 0; r < width; r++)
            e->objects[(size_t)c * width + r] = e->objects[(size_t)c * e->replicas + r];
    e->replicas = width;
}

static int apply_trim(rfsm *m, void *arg)
{
    trim_ctx *t = arg;
    int any = 0;
    /* Check every column first: refused means nothing changed. */
    for (uint32_t x = 0; x < m->nextents; x++) {
        const rfsm_extent *e = &m->extents[x];
        for (uint32_t c = 0; c < e->stripe_count; c++) {
            uint32_t left = 0, complete = 0, gone = 0;
            for (uint32_t r = 0; r < e->replicas; r++) {
                uint32_t oi = rfsm_object_of(e, c, r);
                if (oi == RFSM_NO_OBJECT)
                    continue;
                if (chosen(t, m, c, r, oi)) {
                    gone++;
                    continue;
                }
                left++;
                complete += !(m->objects[oi].flags & RFSM_OBJ_STALE);
            }
            any |= gone > 0;
            if (!gone)
                continue;
            if (!left)
                return rfs_fail(RFS_E_INVAL,
                                "%s: column %u would have no replica left (a logical file needs "
                                "one per column: delete the file instead)",
                                t->name, c);
            if (!complete && !t->force)
                return rfs_fail(RFS_E_INVAL,
                                "%s: that would remove the last complete replica of column %u "
                                "(the others miss bytes); --force removes it anyway",
                                t->name, c);
        }
    }
    if (!any) {
        if (t->url)
            return rfs_fail(RFS_E_NOENT, "%s: %s holds no replica%s to trim", t->name, t->url,
                            t->column == RFSM_ALL_COLUMNS ? "" : " of that column");
        return rfs_fail(RFS_E_NOENT, "%s: no replica %d%s to trim", t->name, t->replica,
                        t->column == RFSM_ALL_COLUMNS ? "" : " in that column");
    }
    t->names = calloc(m->nobjects, sizeof *t->names);
    if (!t->names)
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", t->name);
    uint8_t *drop = calloc(m->nobjects, 1);
    if (!drop)
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", t->name);
    for (uint32_t x = 0; x < m->nextents; x++) {
        rfsm_extent *e = &m->extents[x];
        for (uint32_t c = 0; c < e->stripe_count; c++)
            for (uint32_t r = 0; r < e->replicas; r++) {
                uint32_t oi = rfsm_object_of(e, c, r);
                if (chosen(t, m, c, r, oi)) {
                    e->objects[(size_t)c * e->replicas + r] = RFSM_NO_OBJECT;
                    drop[oi] = 1;
                }
            }
        compact_slots(e);
    }
    /* An object no slot names any more leaves the table (its name kept to delete it). */
    for (uint32_t i = m->nobjects; i-- > 0;) {
        if (!drop[i])
            continue;
        int named = 0;
        for (uint32_t x = 0; x < m->nextents && !named; x++) {
            const rfsm_extent *e = &m->extents[x];
            for (size_t k = 0; k < (size_t)e->stripe_count * e->replicas && !named; k++)
                named = e->objects[k] == i;
        }
        if (named)
            continue;
        char on[MF_OPS_NAME_MAX];
        if (mf_ops_object_name(m, i, on, sizeof on) == RFS_OK && (t->names[t->nnames] = strdup(on)))
            t->nnames++;
        remove_object(m, i);
    }
    free(drop);
    rfs_clear_error();
    return 1;
}

int rfsm_trim(const char *name, const char *server, int replica, int column, int force,
              const rfs_options *opts, uint32_t *removed)
{
    *removed = 0;
    char url[RFSM_MAX_URL + 1];
    if (server && rfsm_server_of_name(server, url, sizeof url) != RFS_OK)
        return rfs_fail(RFS_E_NAME, "%s: --server '%s' is not an rfs://HOST:PORT name", name,
                        server);
    if (!server && replica < 0)
        return rfs_fail(RFS_E_INVAL, "%s: trim needs --server or --replica", name);
    rfs_io *home = NULL;
    rfsm *m = NULL;
    int rc = mf_ops_load(name, opts, &home, &m);
    trim_ctx t = {name, server ? url : NULL, replica, column, force, NULL, 0};
    if (rc == RFS_OK && column != RFSM_ALL_COLUMNS &&
        (m->nextents == 0 || (uint32_t)column >= m->extents[0].stripe_count))
        rc = rfs_fail(RFS_E_INVAL, "%s: no column %d (the file has %u)", name, column,
                      m->nextents ? m->extents[0].stripe_count : 0);
    if (rc == RFS_OK)
        rc = rfsm_store_update(home, apply_trim, &t, NULL);
    /* The manifest no longer names them: their objects go now. One that cannot be deleted is
     * named in the error (no reader can reach it any more; it only takes space). */
    rfs_status first = {RFS_OK, ""};
    for (uint32_t i = 0; rc == RFS_OK && i < t.nnames; i++) {
        int drc = rfs_delete(t.names[i], opts);
        if (drc != RFS_OK && drc != RFS_E_NOENT)
            rfs_status_first(&first, rfs_fail_cause(drc,
                                                    "%s: trimmed from the manifest, but its "
                                                    "object could not be deleted",
                                                    t.names[i]));
        else
            rfs_clear_error();
    }
    if (rc == RFS_OK)
        *removed = t.nnames;
    for (uint32_t i = 0; i < t.nnames; i++)
        free(t.names[i]);
    free(t.names);
    mf_ops_unload(home, m);
    if (rc == RFS_OK && first.rc != RFS_OK)
        rc = rfs_status_raise(&first);
    return rc;
}
