/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs manifest augment (ops.h): plans against the manifest as loaded, copies each object
 * server to server, then records the new and repaired replicas under the manifest's update
 * lock, only if no writer merged meanwhile (the copies might miss its writes). */
#include "manifest/ops.h"
#include "manifest/ops_internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "manifest/store.h"

typedef struct copy_plan {
    uint32_t extent, column;
    uint32_t src;                 /* the complete replica copied from (the first that worked) */
    uint32_t target;              /* repair: the incomplete object; else RFSM_NO_OBJECT */
    char path[RFSM_MAX_PATH + 1]; /* the object's path on the new server */
    uint64_t bytes;
} copy_plan;

/* The slot of column c of extent e held by an object on server url, or -1. */
static int slot_on(const rfsm *m, const rfsm_extent *e, uint32_t c, const char *url)
{
    for (uint32_t r = 0; r < e->replicas; r++) {
        uint32_t oi = rfsm_object_of(e, c, r);
        if (oi != RFSM_NO_OBJECT && !strcmp(m->servers[m->objects[oi].server], url))
            return (int)r;
    }
    return -1;
}

static int path_taken(const rfsm *m, const char *path)
{
    for (uint32_t i = 0; i < m->nobjects; i++)
        if (!strcmp(m->objects[i].path, path))
            return 1;
    return 0;
}

/* What augment does for each column it touches, or why it cannot. */
static int plan_augment(const char *name, const rfsm *m, const char *base, const char *url,
                        int column, copy_plan **out, size_t *nout)
{
    size_t cap = 0;
    for (uint32_t x = 0; x < m->nextents; x++)
        cap += m->extents[x].stripe_count;
    copy_plan *v = calloc(cap ? cap : 1, sizeof *v);
    if (!v)
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", name);
    size_t n = 0;
    int found = column == RFSM_ALL_COLUMNS;
    for (uint32_t x = 0; x < m->nextents; x++) {
        const rfsm_extent *e = &m->extents[x];
        for (uint32_t c = 0; c < e->stripe_count; c++) {
            if (column != RFSM_ALL_COLUMNS && (uint32_t)column != c)
                continue;
            found = 1;
            copy_plan *p = &v[n];
            *p = (copy_plan){
                .extent = x, .column = c, .src = RFSM_NO_OBJECT, .target = RFSM_NO_OBJECT};
            int r = slot_on(m, e, c, url);
            if (r >= 0) {
                uint32_t oi = rfsm_object_of(e, c, (uint32_t)r);
                if (!(m->objects[oi].flags & RFSM_OBJ_STALE)) {
                    if (column == RFSM_ALL_COLUMNS)
                        continue; /* holds this one complete already: nothing to do here */
                    free(v);
                    return rfs_fail(RFS_E_EXIST,
                                    "%s: %s already holds a complete replica of column %u (%s)",
                                    name, url, c, m->objects[oi].path);
                }
                p->target = oi;
                snprintf(p->path, sizeof p->path, "%s", m->objects[oi].path);
            } else {
                if (e->replicas >= RFSM_MAX_REPLICAS) {
                    int empty = 0;
                    for (uint32_t k = 0; k < e->replicas; k++)
                        empty |= rfsm_object_of(e, c, k) == RFSM_NO_OBJECT;
                    if (!empty) {
                        free(v);
                        return rfs_fail(RFS_E_INVAL, "%s: column %u has %u replicas already", name,
                                        c, RFSM_MAX_REPLICAS);
                    }
                }
                for (uint32_t k = 0;; k++) {
                    if (snprintf(p->path, sizeof p->path, "%s.c%u.r%u", base, c, k) >=
                        (int)sizeof p->path) {
                        free(v);
                        return rfs_fail(RFS_E_NAME, "%s: path too long for an object name", name);
                    }
                    if (!path_taken(m, p->path))
                        break;
                }
            }
            for (uint32_t k = 0; k < e->replicas && p->src == RFSM_NO_OBJECT; k++) {
                uint32_t oi = rfsm_object_of(e, c, k);
                if (oi != RFSM_NO_OBJECT && !(m->objects[oi].flags & RFSM_OBJ_STALE))
                    p->src = oi;
            }
            if (p->src == RFSM_NO_OBJECT) {
                free(v);
                return rfs_fail(RFS_E_NOENT,
                                "%s: column %u has no complete replica to copy from "
                                "(every one is incomplete)",
                                name, c);
            }
            n++;
        }
    }
    if (!found) {
        free(v);
        return rfs_fail(RFS_E_INVAL, "%s: no column %d (the file has %u)", name, column,
                        m->nextents ? m->extents[0].stripe_count : 0);
    }
    if (n == 0) {
        free(v);
        return rfs_fail(RFS_E_EXIST, "%s: %s already holds a complete replica of every column",
                        name, url);
    }
    *out = v;
    *nout = n;
    return RFS_OK;
}

typedef struct augment_ctx {
    const char *name, *url;
    uint64_t generation; /* as planned: a merge since means writes the copies may miss */
    const rfsm *planned;
    copy_plan *v;
    size_t n;
    uint8_t *named; /* refused: the new objects the stored manifest names (another augment's) */
} augment_ctx;

/* Server url's index in m's table, added when missing. */
static int server_index(rfsm *m, const char *url, uint32_t *out)
{
    for (uint32_t i = 0; i < m->nservers; i++)
        if (!strcmp(m->servers[i], url))
            return *out = i, RFS_OK;
    if (m->nservers >= RFSM_MAX_SERVERS)
        return rfs_fail(RFS_E_INVAL, "the manifest names %u servers already", RFSM_MAX_SERVERS);
    char **nv = realloc(m->servers, (m->nservers + 1) * sizeof *nv);
    if (!nv)
        return RFS_E_NOMEM;
    m->servers = nv;
    if (!(m->servers[m->nservers] = strdup(url)))
        return RFS_E_NOMEM;
    *out = m->nservers++;
    return RFS_OK;
}

/* A new object in column c of extent e: an empty slot of c, else one more replica slot in
 * every column (the others' new slot empty). */
static int place(rfsm_extent *e, uint32_t c, uint32_t obj)
{
    for (uint32_t r = 0; r < e->replicas; r++)
        if (rfsm_object_of(e, c, r) == RFSM_NO_OBJECT) {
            e->objects[(size_t)c * e->replicas + r] = obj;
            return RFS_OK;
        }
    if (e->replicas >= RFSM_MAX_REPLICAS)
        return rfs_fail(RFS_E_INVAL, "column %u has %u replicas already", c, RFSM_MAX_REPLICAS);
    uint32_t nr = e->replicas + 1;
    uint32_t *v = malloc((size_t)e->stripe_count * nr * sizeof *v);
    if (!v)
        return RFS_E_NOMEM;
    for (uint32_t k = 0; k < e->stripe_count; k++) {
        for (uint32_t r = 0; r < e->replicas; r++)
            v[(size_t)k * nr + r] = rfsm_object_of(e, k, r);
        v[(size_t)k * nr + e->replicas] = k == c ? obj : RFSM_NO_OBJECT;
    }
    free(e->objects);
    e->objects = v;
    e->replicas = nr;
    return RFS_OK;
}

static int apply_augment(rfsm *m, void *arg)
{
    augment_ctx *a = arg;
    if (m->generation != a->generation) {
        /* Another augment of the same replica may have committed these very paths: its
         * objects are not this one's to delete. */
        for (size_t k = 0; k < a->n; k++)
            a->named[k] = rfsm_find_object(m, a->url, a->v[k].path) != RFSM_NO_OBJECT;
        return rfs_fail(RFS_E_BUSY,
                        "%s: the file changed during the copies (manifest generation %llu, "
                        "now %llu): a writer may have written bytes the new replicas miss; "
                        "nothing recorded, run augment again",
                        a->name, (unsigned long long)a->generation,
                        (unsigned long long)m->generation);
    }
    /* Same generation: the layout and every object are as planned. */
    for (size_t k = 0; k < a->n; k++) {
        copy_plan *p = &a->v[k];
        if (p->target != RFSM_NO_OBJECT) {
            rfsm_object_clear_missing(&m->objects[p->target]);
            continue;
        }
        uint32_t si = 0;
        int rc = server_index(m, a->url, &si);
        if (rc != RFS_OK)
            return rc == RFS_E_NOMEM ? rfs_fail(rc, "%s: out of memory", a->name) : rc;
        rfsm_object *nv = realloc(m->objects, (m->nobjects + 1) * sizeof *nv);
        if (!nv)
            return rfs_fail(RFS_E_NOMEM, "%s: out of memory", a->name);
        m->objects = nv;
        m->objects[m->nobjects] = (rfsm_object){.server = si, .path = strdup(p->path)};
        if (!m->objects[m->nobjects].path)
            return rfs_fail(RFS_E_NOMEM, "%s: out of memory", a->name);
        uint32_t obj = m->nobjects++;
        rc = place(&m->extents[p->extent], p->column, obj);
        if (rc != RFS_OK)
            return rc == RFS_E_NOMEM ? rfs_fail(rc, "%s: out of memory", a->name) : rc;
    }
    return 1;
}

/* Copies column p->column to `to` from its complete replicas in slot order, the next one
 * when a copy fails (its server may be the one lost: the reason to augment); p->src is the
 * one that worked. The first failure is returned when every one failed. */
static int copy_column(const rfsm *m, copy_plan *p, const char *to, const rfs_options *opts,
                       char *from, size_t cap)
{
    const rfsm_extent *e = &m->extents[p->extent];
    rfs_status first = {RFS_OK, ""};
    for (uint32_t r = 0; r < e->replicas; r++) {
        uint32_t oi = rfsm_object_of(e, p->column, r);
        if (oi == RFSM_NO_OBJECT || (m->objects[oi].flags & RFSM_OBJ_STALE))
            continue;
        int rc = mf_ops_object_name(m, oi, from, cap);
        if (rc == RFS_OK)
            rc = mf_tpc_copy(from, to, opts, &p->bytes);
        if (rc == RFS_OK) {
            p->src = oi;
            return RFS_OK;
        }
        rfs_status_first(&first, rc);
    }
    return rfs_status_raise(&first);
}

int rfsm_augment(const char *name, const char *server, int column, const rfs_options *opts,
                 rfsm_copy_fn note, void *ctx)
{
    char url[RFSM_MAX_URL + 1];
    if (!server || rfsm_server_of_name(server, url, sizeof url) != RFS_OK)
        return rfs_fail(RFS_E_NAME, "%s: --server '%s' is not an rfs://HOST:PORT name", name,
                        server ? server : "");
    rfs_name n;
    int rc = rfs_parse_name(name, &n);
    if (rc != RFS_OK)
        return rc;
    rfs_io *home = NULL;
    rfsm *m = NULL;
    copy_plan *v = NULL;
    size_t nv = 0;
    rc = mf_ops_load(name, opts, &home, &m);
    /* A replica of the stripes would not hold the bytes overlays map onto log objects (which
     * have one copy each): those go into the stripes first. */
    if (rc == RFS_OK && rfsm_has_logs(m))
        rc = rfs_fail(RFS_E_INVAL,
                      "%s: the file has %u overlay extents in %u log objects (log-structured "
                      "writes), which a new replica would not hold: run rfs manifest compact "
                      "%s first",
                      name, m->noverlays, m->nlogs, name);
    if (rc == RFS_OK)
        rc = plan_augment(name, m, n.path, url, column, &v, &nv);
    size_t copied = 0;
    for (; rc == RFS_OK && copied < nv; copied++) {
        copy_plan *p = &v[copied];
        char from[MF_OPS_NAME_MAX], to[MF_OPS_NAME_MAX];
        if (snprintf(to, sizeof to, "%s%s", url, p->path) >= (int)sizeof to)
            rc = rfs_fail(RFS_E_NAME, "%s: object name too long", name);
        if (rc == RFS_OK)
            rc = copy_column(m, p, to, opts, from, sizeof from);
        if (rc == RFS_OK && note) {
            rfsm_copy_note cn = {p->column,
                                 from,
                                 to,
                                 p->bytes,
                                 p->target != RFSM_NO_OBJECT,
                                 p->target != RFSM_NO_OBJECT
                                     ? rfsm_object_missing_bytes(&m->objects[p->target])
                                     : 0};
            note(ctx, &cn);
        }
    }
    uint8_t *named = rc == RFS_OK ? calloc(nv ? nv : 1, 1) : NULL;
    if (rc == RFS_OK && !named)
        rc = rfs_fail(RFS_E_NOMEM, "%s: out of memory", name);
    if (rc == RFS_OK) {
        augment_ctx a = {name, url, m->generation, m, v, nv, named};
        rc = rfsm_store_update(home, apply_augment, &a, NULL);
    }
    if (rc != RFS_OK && v) {
        /* New objects the manifest does not name are taken away again (a repaired one stays:
         * still marked incomplete, its new bytes harm nobody). */
        rfs_status st;
        rfs_status_save(&st, rc);
        for (size_t k = 0; k < copied && k < nv; k++) {
            char to[MF_OPS_NAME_MAX];
            if (v[k].target == RFSM_NO_OBJECT && !(named && named[k]) &&
                snprintf(to, sizeof to, "%s%s", url, v[k].path) < (int)sizeof to)
                rfs_delete(to, opts);
        }
        rc = rfs_status_raise(&st);
    }
    free(named);
    free(v);
    mf_ops_unload(home, m);
    return rc;
}
