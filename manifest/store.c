/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The manifest file on the home server: loads under a shared lock, merges under an exclusive
 * one. The lock is the server's byte-range lock on the manifest file itself at RFSM_LOCK_OFF,
 * held by the open handle: every process that opened the logical file has its own handle, so
 * updates from several processes (MPI ranks) follow one another, and a reader never sees a
 * manifest half rewritten. */
#include "manifest/store.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"

static int lock(rfs_io *home, unsigned mode)
{
    int rc = home->ops->lock(home, RFSM_LOCK_OFF, 1, mode, RFSM_LOCK_WAIT_MS);
    if (rc != RFS_OK)
        return rfs_fail_cause(rc, "%s:%s: manifest lock", home->server, home->path);
    return RFS_OK;
}

static void unlock(rfs_io *home)
{
    rfs_status keep;
    rfs_status_save(&keep, RFS_OK);
    home->ops->unlock(home, RFSM_LOCK_OFF, 1); /* a lost connection drops it anyway */
    rfs_status_raise(&keep);
}

/* A first read of this many bytes gets a whole manifest of a few servers (most of them) in
 * one round trip; a larger one costs a size query and a second read. */
#define FIRST_READ 65536u

/* The stored bytes, decoded, and their length; the caller holds a lock. */
static int read_locked(rfs_io *home, rfsm **out, size_t *stored_len)
{
    char what[4400];
    snprintf(what, sizeof what, "%s:%s", home->server, home->path);
    uint8_t *buf = malloc(FIRST_READ);
    if (!buf)
        return rfs_fail(RFS_E_NOMEM, "manifest %s: out of memory", what);
    size_t got = 0;
    int rc = home->ops->pread(home, buf, FIRST_READ, 0, &got);
    if (rc == RFS_OK && got == FIRST_READ) {
        uint64_t size = 0;
        rc = home->ops->get_size(home, &size);
        if (rc == RFS_OK && size > RFSM_MAX_BYTES)
            rc = rfs_fail(RFS_E_TOOBIG, "manifest %s: %llu bytes, over the limit of %u", what,
                          (unsigned long long)size, RFSM_MAX_BYTES);
        uint8_t *all = rc == RFS_OK && size > FIRST_READ ? realloc(buf, (size_t)size) : NULL;
        if (rc == RFS_OK && size > FIRST_READ && !all)
            rc = rfs_fail(RFS_E_NOMEM, "manifest %s: out of memory", what);
        if (all) {
            buf = all;
            size_t more = 0;
            rc = home->ops->pread(home, buf + FIRST_READ, (size_t)size - FIRST_READ, FIRST_READ,
                                  &more);
            got += more;
        }
    }
    if (rc == RFS_OK)
        rc = rfsm_decode(buf, got, what, out);
    free(buf);
    if (stored_len)
        *stored_len = got;
    return rc;
}

int rfsm_store_load(rfs_io *home, rfsm **out)
{
    int rc = lock(home, RFS_LOCK_SHARED);
    if (rc != RFS_OK)
        return rc;
    rc = read_locked(home, out, NULL);
    unlock(home);
    return rc;
}

/* Writes m over the stored manifest of stored_len bytes, and syncs it. */
static int write_locked(rfs_io *home, rfsm *m, size_t stored_len)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    char what[4400];
    snprintf(what, sizeof what, "%s:%s", home->server, home->path);
    int rc = rfsm_encode(m, what, &buf, &len);
    if (rc == RFS_E_TOOBIG) {
        /* Missing ranges of many objects outgrew the manifest's limit: each incomplete object
         * becomes wholly suspect instead (a whole re-copy later, never a wrong read): what is
         * left is the manifest's layout, 4 bytes more per object than version 1's. */
        for (uint32_t i = 0; i < m->nobjects; i++) {
            free(m->objects[i].missing);
            m->objects[i].missing = NULL;
            m->objects[i].nmissing = 0;
        }
        rfs_clear_error();
        rc = rfsm_encode(m, what, &buf, &len);
    }
    size_t done = 0;
    if (rc == RFS_OK)
        rc = home->ops->pwrite(home, buf, len, 0, &done);
    free(buf);
    /* Only a shorter manifest needs its length set (a size or flag change keeps the length). */
    if (rc == RFS_OK && len < stored_len)
        rc = home->ops->set_size(home, len);
    if (rc == RFS_OK)
        rc = home->ops->sync(home);
    return rc;
}

int rfsm_store_update(rfs_io *home, rfsm_update_fn fn, void *ctx, rfsm **merged)
{
    int rc = lock(home, RFS_LOCK_EXCL);
    if (rc != RFS_OK)
        return rc;
    rfsm *m = NULL;
    size_t stored_len = 0;
    rc = read_locked(home, &m, &stored_len);
    if (rc == RFS_OK) {
        int changed = fn(m, ctx);
        if (changed < 0) {
            rc = changed;
        } else if (changed) {
            /* Nothing new (the stored manifest covers it already): no write, no sync. */
            m->generation++;
            rc = write_locked(home, m, stored_len);
        }
    }
    unlock(home);
    if (rc == RFS_OK && merged)
        *merged = m;
    else
        rfsm_free(m);
    return rc;
}

uint32_t rfsm_find_object(const rfsm *m, const char *server, const char *path)
{
    for (uint32_t i = 0; i < m->nobjects; i++)
        if (!strcmp(m->objects[i].path, path) && !strcmp(m->servers[m->objects[i].server], server))
            return i;
    return RFSM_NO_OBJECT;
}

/* The log and overlays of d over m's, then d's truncation: 1 when m changed, or an error. */
static int apply_log(rfsm *m, const rfsm_delta *d)
{
    int changed = 0;
    if (d->log_server && d->log_path) {
        uint32_t had = m->nlogs, idx = 0;
        uint64_t was = 0;
        uint32_t k = rfsm_find_log(m, d->log_server, d->log_path);
        if (k != RFSM_NO_OBJECT)
            was = m->logs[k].len;
        int rc = rfsm_add_log(m, d->log_server, d->log_path, d->log_len, &idx);
        if (rc != RFS_OK)
            return rc;
        changed = m->nlogs != had || m->logs[idx].len != was;
        uint32_t cap = m->noverlays;
        for (size_t i = 0; i < d->noverlays; i++) {
            rfsm_overlay o = d->overlays[i];
            o.log = idx;
            if (o.log_off > m->logs[idx].len || o.len > m->logs[idx].len - o.log_off)
                return rfs_fail(RFS_E_INVAL, "an overlay names bytes beyond its log's length");
            if ((rc = rfsm_overlay_put(&m->overlays, &m->noverlays, &cap, o)) != RFS_OK)
                return rc;
            changed = 1;
        }
    }
    if (d->truncate) {
        uint32_t n = m->noverlays;
        uint64_t last = n ? m->overlays[n - 1].off + m->overlays[n - 1].len : 0;
        rfsm_overlays_cut(m->overlays, &m->noverlays, d->truncate_to);
        changed |= m->noverlays != n || (n && last > d->truncate_to);
    }
    return changed;
}

static int apply_delta(rfsm *m, void *ctx)
{
    const rfsm_delta *d = ctx;
    uint64_t was = m->size;
    int changed = apply_log(m, d);
    if (changed < 0)
        return changed;
    if (d->truncate)
        m->size = d->truncate_to;
    if (d->written_end > m->size)
        m->size = d->written_end;
    /* Every overlay lies within the file (its writer's end came with it). */
    if (m->noverlays &&
        m->overlays[m->noverlays - 1].off + m->overlays[m->noverlays - 1].len > m->size)
        m->size = m->overlays[m->noverlays - 1].off + m->overlays[m->noverlays - 1].len;
    changed |= m->size != was;
    static const rfsm_rangeset whole = {.whole = 1};
    for (size_t i = 0; i < d->nstale; i++) {
        if (!d->base || d->stale[i] >= d->base->nobjects)
            continue;
        const rfsm_object *bo = &d->base->objects[d->stale[i]];
        /* A replica trimmed meanwhile is no longer there to mark. */
        uint32_t k = rfsm_find_object(m, d->base->servers[bo->server], bo->path);
        if (k == RFSM_NO_OBJECT)
            continue;
        if (d->cleared && d->cleared[i] && (m->objects[k].flags & RFSM_OBJ_STALE)) {
            rfsm_object_clear_missing(&m->objects[k]);
            changed = 1;
        }
        int c = rfsm_object_add_missing(&m->objects[k], d->missed ? &d->missed[i] : &whole);
        changed |= c != 0;
    }
    /* Replicas added since this process opened the file missed what it wrote. The extents and
     * columns never change while the file exists; only their replicas do. */
    for (uint32_t x = 0, flat = 0;
         d->written && d->base && x < m->nextents && x < d->base->nextents;
         flat += m->extents[x].stripe_count, x++) {
        const rfsm_extent *e = &m->extents[x];
        for (uint32_t c = 0; c < e->stripe_count; c++) {
            const rfsm_rangeset *w = &d->written[flat + c];
            if (!w->whole && w->n == 0)
                continue;
            for (uint32_t r = 0; r < e->replicas; r++) {
                uint32_t oi = rfsm_object_of(e, c, r);
                if (oi == RFSM_NO_OBJECT ||
                    rfsm_find_object(d->base, m->servers[m->objects[oi].server],
                                     m->objects[oi].path) != RFSM_NO_OBJECT)
                    continue;
                changed |= rfsm_object_add_missing(&m->objects[oi], w) != 0;
            }
        }
    }
    return changed;
}

/* apply_delta under the exclusive lock, compacting when the overlays or logs grow too many
 * (docs/manifest.md "Log-structured writes"). */
static int apply_compacting(rfsm *m, void *ctx)
{
    const rfsm_delta *d = ctx;
    int changed = 0;
    if ((uint64_t)m->noverlays + 2 * (uint64_t)d->noverlays + 2 > RFSM_MAX_OVERLAYS &&
        (changed = d->compact(m, d->compact_ctx)) < 0)
        return changed;
    int c = apply_delta(m, ctx);
    if (c < 0)
        return c;
    changed |= c;
    if (m->noverlays > RFSM_COMPACT_AT || m->nlogs >= RFSM_MAX_LOGS - 1) {
        c = d->compact(m, d->compact_ctx);
        if (c < 0)
            return c;
        changed |= c;
    }
    return changed;
}

/* Under the shared lock: the stored manifest when d changes nothing in it, else NULL. */
static int covered_shared(rfs_io *home, const rfsm_delta *d, rfsm **out)
{
    *out = NULL;
    int rc = lock(home, RFS_LOCK_SHARED);
    if (rc != RFS_OK)
        return rc;
    rfsm *m = NULL;
    rc = read_locked(home, &m, NULL);
    unlock(home);
    if (rc == RFS_OK && apply_delta(m, (void *)d) == 0) {
        /* apply_delta changed nothing in this copy: it is the stored manifest as it is */
        *out = m;
        return RFS_OK;
    }
    rfsm_free(m);
    return rc;
}

int rfsm_store_merge(rfs_io *home, const rfsm_delta *d, rfsm **merged)
{
    if (!d->truncate && d->written_end <= d->seen_size && d->noverlays == 0) {
        rfsm *m = NULL;
        int rc = covered_shared(home, d, &m);
        if (rc != RFS_OK)
            return rc;
        if (m) {
            if (merged)
                *merged = m;
            else
                rfsm_free(m);
            return RFS_OK;
        }
    }
    return rfsm_store_update(home, d->compact ? apply_compacting : apply_delta, (void *)d, merged);
}
