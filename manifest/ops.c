/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Augment and trim (ops.h). Both plan against the manifest as loaded, act (copies first for
 * augment; nothing before the manifest update for trim), then apply the change under the
 * manifest's update lock to the manifest as stored at that moment, checking again that it
 * still holds: a writer that merged meanwhile makes augment fail rather than record a replica
 * that may miss its writes. */
#include "manifest/ops.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client.h"
#include "client/tpc.h"
#include "common/err.h"
#include "manifest/manifest.h"
#include "manifest/store.h"
#include "rfs/rfs_io.h"
#include "rfs/rfs_manifest.h"

#define NAME_MAX_LEN (RFSM_MAX_URL + RFSM_MAX_PATH + 2)
#define POLL_FIRST_MS 2
#define POLL_MAX_MS 100
#define COPY_STREAMS 4 /* connections per copy, as rfs cp's server-to-server copies */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static int object_name(const rfsm *m, uint32_t i, char *out, size_t cap)
{
    int w = snprintf(out, cap, "%s%s", m->servers[m->objects[i].server], m->objects[i].path);
    return w > 0 && (size_t)w < cap ? RFS_OK : rfs_fail(RFS_E_NAME, "object name too long");
}

/* The manifest's home handle (read-write: the update writes it) and its content. */
static int load(const char *name, const rfs_options *opts, rfs_io **home, rfsm **m)
{
    *home = NULL;
    *m = NULL;
    if (!rfs_is_manifest_name(name))
        return rfs_fail(RFS_E_NAME, "%s: not a manifest name (rfs://HOST:PORT/PATH.rfsm)", name);
    int rc = rfs_io_open_remote(name, RFS_O_RDWR, 0, opts, home);
    if (rc == RFS_OK && (rc = rfsm_store_load(*home, m)) != RFS_OK) {
        rfs_status st;
        rfs_status_save(&st, rc);
        (*home)->ops->close(*home);
        *home = NULL;
        rc = rfs_status_raise(&st);
    }
    return rc;
}

static void unload(rfs_io *home, rfsm *m)
{
    rfs_status st;
    rfs_status_save(&st, RFS_OK);
    if (home)
        home->ops->close(home);
    rfsm_free(m);
    rfs_status_raise(&st);
}

/* ---- augment ---- */

typedef struct copy_plan {
    uint32_t extent, column;
    uint32_t src;                 /* object index of the complete replica copied from */
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
                    snprintf(p->path, sizeof p->path, "%s.c%u.r%u", base, c, k);
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

/* Has the server of `to` pull object `from` whole (verified against the source's checksum,
 * synced before it replaces anything at `to`). */
static int tpc_copy(const char *from, const char *to, const rfs_options *opts, uint64_t *bytes)
{
    rfs_name src, dst;
    int rc = rfs_parse_name(from, &src);
    if (rc == RFS_OK)
        rc = rfs_parse_name(to, &dst);
    if (rc != RFS_OK)
        return rc;
    /* The object's directory may not exist on the new server yet (as mkdir -p). */
    char *slash = strrchr(dst.path, '/');
    if (slash && slash != dst.path) {
        *slash = 0;
        const char *dir = dst.path;
        int res = RFS_OK;
        rfs_mkdir_many(to, &dir, &res, 1, 0777 | RFS_MKDIR_PARENTS, opts);
        rfs_clear_error();
        *slash = '/';
    }
    rfs_tpc_grant_info g;
    rc = rfs_tpc_grant(from, opts, COPY_STREAMS, &g);
    if (rc != RFS_OK)
        return rfs_fail_cause(rc, "%s: no copy grant", from);
    rfs_tpc_pull *p = NULL;
    rc = rfs_tpc_pull_begin(to, opts, src.host, src.port, src.path, &g,
                            RFS_TPC_VERIFY | RFS_TPC_SYNC, 0644, COPY_STREAMS, &p);
    explicit_bzero(g.key, sizeof g.key);
    if (rc != RFS_OK)
        return rfs_fail_cause(rc, "%s: server-to-server copy from %s", to, from);
    int finished = 0, wait = POLL_FIRST_MS;
    uint64_t done = 0, total = 0;
    uint32_t crc = 0;
    for (;;) { /* ends: the pull finishes, fails, or its connection does (io timeout) */
        rc = rfs_tpc_pull_poll(p, &finished, &done, &total, &crc);
        if (rc != RFS_OK || finished)
            break;
        sleep_ms(wait);
        wait = wait * 2 > POLL_MAX_MS ? POLL_MAX_MS : wait * 2;
    }
    rfs_tpc_pull_end(p);
    if (rc != RFS_OK)
        return rfs_fail_cause(rc, "%s: server-to-server copy from %s", to, from);
    *bytes = total;
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
    rc = load(name, opts, &home, &m);
    if (rc == RFS_OK)
        rc = plan_augment(name, m, n.path, url, column, &v, &nv);
    size_t copied = 0;
    for (; rc == RFS_OK && copied < nv; copied++) {
        copy_plan *p = &v[copied];
        char from[NAME_MAX_LEN], to[NAME_MAX_LEN];
        rc = object_name(m, p->src, from, sizeof from);
        if (rc == RFS_OK && snprintf(to, sizeof to, "%s%s", url, p->path) >= (int)sizeof to)
            rc = rfs_fail(RFS_E_NAME, "%s: object name too long", name);
        if (rc == RFS_OK)
            rc = tpc_copy(from, to, opts, &p->bytes);
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
            char to[NAME_MAX_LEN];
            if (v[k].target == RFSM_NO_OBJECT && !(named && named[k]) &&
                snprintf(to, sizeof to, "%s%s", url, v[k].path) < (int)sizeof to)
                rfs_delete(to, opts);
        }
        rc = rfs_status_raise(&st);
    }
    free(named);
    free(v);
    unload(home, m);
    return rc;
}

/* ---- trim ---- */

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
        char on[NAME_MAX_LEN];
        if (object_name(m, i, on, sizeof on) == RFS_OK && (t->names[t->nnames] = strdup(on)))
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
    int rc = load(name, opts, &home, &m);
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
    unload(home, m);
    if (rc == RFS_OK && first.rc != RFS_OK)
        rc = rfs_status_raise(&first);
    return rc;
}
