/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Log-structured writes (docs/manifest.md "Log-structured writes"; the noncontiguous write of
 * mpiio-logistical-networking.txt Fig. 10): a write, a list of ranges too, is packed already
 * in the caller's buffer, so it goes as ONE append to this process's log object, and each of
 * its ranges becomes an overlay mapping logical bytes onto the log. The overlays reach the
 * stored manifest with the process's other changes at sync, flush and close (store.c), and
 * every read resolves them over the stripes. Compaction copies overlay bytes into the stripes
 * and drops the overlays and the logs nobody holds open. */
#include "manifest/mf_internal.h"
#include "manifest/store.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/uio.h>

#include "client/client.h"

/* ---- the logs this process knows ---- */

/* The index of log (server, path) in f->logs, added when new; log_mu held. */
static int logref(mf_file *f, const char *server, const char *path, uint32_t *idx)
{
    for (uint32_t i = 0; i < f->nlogs; i++)
        if (!strcmp(f->logs[i].path, path) && !strcmp(f->logs[i].server, server)) {
            *idx = i;
            return RFS_OK;
        }
    if (strlen(server) > RFSM_MAX_URL)
        return rfs_fail(RFS_E_NAME, "%s: log server URL too long", server);
    if (f->nlogs == f->logcap) {
        uint32_t nc = f->logcap ? f->logcap * 2 : 8;
        mf_logref *nv = realloc(f->logs, nc * sizeof *nv);
        if (!nv)
            return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
        f->logs = nv;
        f->logcap = nc;
    }
    mf_logref *r = &f->logs[f->nlogs];
    memset(r, 0, sizeof *r);
    snprintf(r->server, sizeof r->server, "%s", server);
    if (!(r->path = strdup(path)))
        return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
    *idx = f->nlogs++;
    return RFS_OK;
}

/* The rfs name of log i; log_mu held. */
static int log_name(const mf_file *f, uint32_t i, char *out, size_t cap)
{
    int w = snprintf(out, cap, "%s%s", f->logs[i].server, f->logs[i].path);
    return w > 0 && (size_t)w < cap ? RFS_OK : rfs_fail(RFS_E_NAME, "log name too long");
}

/* Log i's handle, opened (read-only: another process's log) on first use. */
static int log_io(mf_file *f, uint32_t i, rfs_io **out)
{
    pthread_mutex_lock(&f->log_mu);
    int rc = RFS_OK;
    if (!f->logs[i].io) {
        char name[RFSM_MAX_URL + RFSM_MAX_PATH + 2];
        rc = log_name(f, i, name, sizeof name);
        if (rc == RFS_OK)
            rc = rfs_io_open_remote_in(f->rt, name, RFS_O_RDONLY, 0, &f->obj_opts, &f->logs[i].io);
        if (rc != RFS_OK)
            rc = rfs_fail_cause(rc, "%s:%s: log object %s", f->io.server, f->io.path, name);
    }
    *out = f->logs[i].io;
    pthread_mutex_unlock(&f->log_mu);
    return rc;
}

/* Makes this process's log object: numbered by a counter on the manifest file so that the
 * processes of one job spread over the servers (log k on server k % nservers), with a random
 * tail so that numbers counted again after every process closed never meet an old log. It
 * keeps a shared lock on it while open: a compaction deletes only logs it can lock alone.
 * log_mu held. */
static int make_own_log(mf_file *f)
{
    int64_t seq = 0;
    rfs_io *home = f->home;
    if (home->ops->counter(home, MF_LOG_COUNTER_KEY, 0, 1, &seq) != RFS_OK) {
        rfs_clear_error(); /* no counters there: the random tail alone picks the server */
        seq = -1;
    }
    int rc = RFS_OK;
    for (int attempt = 0; attempt < 8; attempt++) {
        uint32_t tail = 0;
        if (getrandom(&tail, sizeof tail, 0) != (ssize_t)sizeof tail)
            tail = (uint32_t)(uintptr_t)f ^ (uint32_t)attempt * 2654435761u;
        uint64_t k = seq >= 0 ? (uint64_t)seq : tail;
        const char *server = f->m->servers[k % f->m->nservers];
        char path[RFSM_MAX_PATH + 1];
        int w =
            snprintf(path, sizeof path, "%s.l%llu.%08x", f->io.path, (unsigned long long)k, tail);
        if (w <= 0 || (size_t)w >= sizeof path)
            return rfs_fail(RFS_E_NAME, "%s:%s: log name too long", f->io.server, f->io.path);
        char name[RFSM_MAX_URL + RFSM_MAX_PATH + 2];
        snprintf(name, sizeof name, "%s%s", server, path);
        rfs_io *io = NULL;
        rc = rfs_io_open_remote_in(f->rt, name, RFS_O_RDWR | RFS_O_CREAT | RFS_O_EXCL, f->obj_mode,
                                   &f->obj_opts, &io);
        if (rc == RFS_E_NOENT) {
            /* no directory there yet (no stripe object on that server): made as mkdir -p */
            char dir[RFSM_MAX_PATH + 1];
            snprintf(dir, sizeof dir, "%s", path);
            char *slash = strrchr(dir, '/');
            if (slash && slash != dir) {
                *slash = 0;
                const char *d = dir;
                int res = RFS_OK;
                rfs_mkdir_many(name, &d, &res, 1, 0777 | RFS_MKDIR_PARENTS, &f->obj_opts);
                rc = rfs_io_open_remote_in(f->rt, name, RFS_O_RDWR | RFS_O_CREAT | RFS_O_EXCL,
                                           f->obj_mode, &f->obj_opts, &io);
            }
        }
        if (rc == RFS_E_EXIST) {
            rfs_clear_error();
            continue;
        }
        if (rc != RFS_OK)
            return rfs_fail_cause(rc, "%s:%s: making the log object %s", f->io.server, f->io.path,
                                  name);
        rc = io->ops->lock(io, RFSM_LOCK_OFF, 1, RFS_LOCK_SHARED, 0);
        uint32_t idx = 0;
        if (rc == RFS_OK)
            rc = logref(f, server, path, &idx);
        if (rc != RFS_OK) {
            rfs_status st;
            rfs_status_save(&st, rc);
            io->ops->close(io);
            rfs_delete(name, &f->obj_opts);
            return rfs_status_raise(&st);
        }
        f->logs[idx].io = io;
        f->own_log = idx;
        return RFS_OK;
    }
    return rfs_fail(RFS_E_EXIST, "%s:%s: no free log object name", f->io.server, f->io.path);
}

/* ---- open and close ---- */

int mf_log_init(mf_file *f, const rfs_manifest_params *p, const rfs_options *objects, unsigned mode)
{
    f->own_log = RFSM_NO_OBJECT;
    f->obj_mode = mode;
    f->obj_opts = *objects;
    if (objects->token && objects->token == f->lease) {
        f->obj_opts.token = f->lease;
    } else if (objects->token) {
        if (!(f->own_token = strdup(objects->token)))
            return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
        f->obj_opts.token = f->own_token;
    }
    if (objects->compress) {
        if (!(f->own_compress = strdup(objects->compress)))
            return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
        f->obj_opts.compress = f->own_compress;
    }
    f->log_mode = p && p->log;
    if (f->log_mode && (f->flags & RFS_O_ACCMODE) != RFS_O_RDONLY) {
        for (uint32_t x = 0; x < f->m->nextents; x++)
            if (f->m->extents[x].replicas > 1)
                return rfs_fail(RFS_E_INVAL,
                                "%s:%s: rfs_manifest_mode=log is refused on a replicated file "
                                "(%u replicas): a log object is a single copy, and its bytes "
                                "would have none",
                                f->io.server, f->io.path, f->m->extents[x].replicas);
    }
    return mf_log_adopt(f, f->m);
}

void mf_log_close(mf_file *f)
{
    for (uint32_t i = 0; i < f->nlogs; i++) {
        if (f->logs[i].io && f->logs[i].io->ops->close(f->logs[i].io) != RFS_OK)
            rfs_clear_error(); /* a log's bytes are synced by the merges that name them */
        free(f->logs[i].path);
    }
    free(f->logs);
    free(f->ov);
    free(f->pend);
    for (uint32_t i = 0; i < f->ndropped; i++)
        free(f->dropped[i]);
    free(f->dropped);
    explicit_bzero(f->lease, sizeof f->lease);
    if (f->own_token) {
        explicit_bzero(f->own_token, strlen(f->own_token));
        free(f->own_token);
    }
    free(f->own_compress);
}

int mf_log_wanted(mf_file *f)
{
    pthread_mutex_lock(&f->mu);
    int w = f->log_mode || f->nov > 0;
    pthread_mutex_unlock(&f->mu);
    return w;
}

/* ---- the view reads resolve ---- */

int mf_log_adopt(mf_file *f, const rfsm *m)
{
    uint32_t *map = malloc((m->nlogs ? m->nlogs : 1) * sizeof *map);
    rfsm_overlay *v = malloc((m->noverlays ? m->noverlays : 1) * sizeof *v);
    if (!map || !v) {
        free(map);
        free(v);
        return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
    }
    int rc = RFS_OK;
    pthread_mutex_lock(&f->log_mu);
    for (uint32_t i = 0; i < m->nlogs && rc == RFS_OK; i++)
        rc = logref(f, m->servers[m->logs[i].server], m->logs[i].path, &map[i]);
    pthread_mutex_unlock(&f->log_mu);
    uint32_t n = m->noverlays, cap = n ? n : 1;
    for (uint32_t i = 0; i < n; i++) {
        v[i] = m->overlays[i];
        v[i].log = map[v[i].log];
    }
    pthread_mutex_lock(&f->mu);
    /* the own overlays not merged yet go over the stored ones, as the merge will put them */
    for (uint32_t i = 0; i < f->npend && rc == RFS_OK; i++)
        rc = rfsm_overlay_put(&v, &n, &cap, f->pend[i]);
    if (rc == RFS_OK) {
        free(f->ov);
        f->ov = v;
        f->nov = n;
        f->ovcap = cap;
        f->has_logs = rfsm_has_logs(m);
        f->adopted = 1;
        v = NULL;
    }
    pthread_mutex_unlock(&f->mu);
    free(v);
    free(map);
    return rc;
}

void mf_log_cut(mf_file *f, uint64_t size)
{
    pthread_mutex_lock(&f->mu);
    rfsm_overlays_cut(f->pend, &f->npend, size);
    rfsm_overlays_cut(f->ov, &f->nov, size);
    pthread_mutex_unlock(&f->mu);
}

/* ---- writes ---- */

int mf_log_write(mf_file *f, const rfs_extent *ext, size_t n, const void *buf, uint64_t total)
{
    if (total == 0)
        return RFS_OK;
    pthread_mutex_lock(&f->log_mu);
    int rc = f->own_log == RFSM_NO_OBJECT ? make_own_log(f) : RFS_OK;
    rfs_io *io = rc == RFS_OK ? f->logs[f->own_log].io : NULL;
    uint32_t own = f->own_log;
    pthread_mutex_unlock(&f->log_mu);
    if (rc != RFS_OK)
        return rc;
    /* Its place in the log first: concurrent writes of this process append side by side. */
    pthread_mutex_lock(&f->mu);
    uint64_t base = f->log_len;
    int room = total <= RFSM_MAX_SIZE - base;
    if (room)
        f->log_len += total;
    pthread_mutex_unlock(&f->mu);
    if (!room)
        return rfs_fail(RFS_E_FBIG, "%s:%s: the log object passed 2^62 bytes", f->io.server,
                        f->io.path);
    size_t done = 0;
    rc = io->ops->pwrite(io, buf, (size_t)total, base, &done);
    if (rc != RFS_OK)
        return rfs_fail_cause(rc, "%s:%s: appending to the log object", f->io.server, f->io.path);
    pthread_mutex_lock(&f->mu);
    uint64_t pos = 0, hi = 0;
    for (size_t i = 0; i < n && rc == RFS_OK; i++) {
        rfsm_overlay o = {ext[i].offset, ext[i].length, base + pos, own};
        pos += ext[i].length;
        if (!o.len)
            continue;
        if (o.off + o.len > hi)
            hi = o.off + o.len;
        rc = rfsm_overlay_put(&f->pend, &f->npend, &f->pendcap, o);
        if (rc == RFS_OK)
            rc = rfsm_overlay_put(&f->ov, &f->nov, &f->ovcap, o);
    }
    if (hi > f->written_end)
        f->written_end = hi;
    f->dirty = 1;
    int full = f->npend >= MF_MAX_PENDING;
    pthread_mutex_unlock(&f->mu);
    if (rc != RFS_OK)
        return rfs_fail_cause(rc, "%s:%s: mapping a log write", f->io.server, f->io.path);
    /* Bounded: this many overlays go to the manifest now (flush merges, keeping no error). */
    if (full)
        return f->io.ops->flush(&f->io, 1);
    return RFS_OK;
}

/* ---- reads ---- */

/* The pieces of v from `which` (a log index, or RFSM_NO_OBJECT: the stripes) as extents of
 * that source, and a buffer for their bytes in that order (*k 0: none). */
typedef struct pieces {
    rfs_extent *ext;
    size_t k;
    uint8_t *tmp;
    uint64_t bytes;
} pieces;

static int gather(mf_file *f, const rfsm_resolved *v, size_t nv, uint32_t which, pieces *p)
{
    *p = (pieces){0};
    for (size_t i = 0; i < nv; i++)
        if (v[i].log == which) {
            p->k++;
            p->bytes += v[i].len;
        }
    if (p->k == 0)
        return RFS_OK;
    p->ext = malloc(p->k * sizeof *p->ext);
    p->tmp = malloc(p->bytes ? (size_t)p->bytes : 1);
    if (!p->ext || !p->tmp) {
        free(p->ext);
        free(p->tmp);
        *p = (pieces){0};
        return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
    }
    size_t k = 0;
    for (size_t i = 0; i < nv; i++)
        if (v[i].log == which)
            p->ext[k++] = (rfs_extent){v[i].src, v[i].len};
    return RFS_OK;
}

/* Copies the bytes read into p->tmp to their places in buf (when rc is RFS_OK); frees p. */
static int scatter(const rfsm_resolved *v, size_t nv, uint32_t which, pieces *p, uint8_t *buf,
                   int rc)
{
    size_t at = 0;
    for (size_t i = 0; rc == RFS_OK && i < nv; i++)
        if (v[i].log == which) {
            memcpy(buf + v[i].pos, p->tmp + at, (size_t)v[i].len);
            at += (size_t)v[i].len;
        }
    free(p->ext);
    free(p->tmp);
    return rc;
}

/* Reads the pieces of one log (log == which) into their places in buf: one list read. */
static int read_log_pieces(mf_file *f, uint32_t which, const rfsm_resolved *v, size_t nv,
                           uint8_t *buf)
{
    rfs_io *io = NULL;
    int rc = log_io(f, which, &io);
    if (rc != RFS_OK)
        return rc;
    pieces p;
    if ((rc = gather(f, v, nv, which, &p)) != RFS_OK || p.k == 0)
        return rc;
    size_t done = 0;
    rc = p.k == 1 ? io->ops->pread(io, p.tmp, (size_t)p.bytes, p.ext[0].offset, &done)
                  : io->ops->preadv(io, p.ext, p.k, p.tmp, &done);
    if (rc == RFS_OK && done < p.bytes)
        rc = rfs_fail(RFS_E_IO, "%s:%s: log object %s holds fewer bytes than the manifest maps",
                      f->io.server, f->io.path, f->logs[which].path);
    return scatter(v, nv, which, &p, buf, rc);
}

/* The stripe pieces of v, read as one request through the stripes' path into buf. */
static int read_stripe_pieces(mf_file *f, const rfsm_resolved *v, size_t nv, uint8_t *buf)
{
    pieces p;
    int rc = gather(f, v, nv, RFSM_NO_OBJECT, &p);
    if (rc != RFS_OK || p.k == 0)
        return rc;
    rc = mf_stripe_read(f, p.ext, p.k, p.tmp, p.bytes);
    return scatter(v, nv, RFSM_NO_OBJECT, &p, buf, rc);
}

int mf_log_read(mf_file *f, const rfs_extent *ext, size_t n, void *buf, uint64_t total)
{
    pthread_mutex_lock(&f->mu);
    rfsm_resolved *v = NULL;
    size_t nv = 0;
    int rc = f->nov ? rfsm_resolve(f->ov, f->nov, ext, n, &v, &nv) : RFS_OK;
    pthread_mutex_unlock(&f->mu);
    if (rc != RFS_OK)
        return rfs_fail_cause(rc, "%s:%s: resolving overlays", f->io.server, f->io.path);
    size_t logged = 0;
    for (size_t i = 0; i < nv; i++)
        logged += v[i].log != RFSM_NO_OBJECT;
    if (logged == 0) { /* no overlay meets it: the stripes' own path, as it came */
        free(v);
        return mf_stripe_read(f, ext, n, buf, total);
    }
    rc = read_stripe_pieces(f, v, nv, buf);
    /* each log once, in the order its first piece comes */
    for (size_t i = 0; i < nv && rc == RFS_OK; i++) {
        if (v[i].log == RFSM_NO_OBJECT)
            continue;
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
            first = v[j].log != v[i].log;
        if (first)
            rc = read_log_pieces(f, v[i].log, v, nv, buf);
    }
    free(v);
    return rc;
}

/* ---- compaction ---- */

/* Copies the bytes of overlays v[0..n) (logical order, not overlapping) into the stripes,
 * at most MF_COMPACT_CHUNK bytes a round (an overlay larger than that in pieces). */
static int copy_to_stripes(mf_file *f, const rfsm_overlay *v, uint32_t n, const uint32_t *map)
{
    uint8_t *buf = NULL;
    rfs_extent *ext = malloc((n ? n : 1) * sizeof *ext);
    rfsm_resolved *pieces = malloc((n ? n : 1) * sizeof *pieces);
    int rc = ext && pieces
                 ? RFS_OK
                 : rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
    /* These stripe writes move bytes the stored size covers already: they are no writes of
     * this process's to merge (a size they raised later could undo another's truncation). */
    pthread_mutex_lock(&f->mu);
    uint64_t written_end = f->written_end;
    pthread_mutex_unlock(&f->mu);
    uint32_t i = 0;
    uint64_t part = 0; /* bytes of v[i] copied already */
    while (rc == RFS_OK && i < n) {
        size_t k = 0;
        uint64_t bytes = 0;
        while (i < n && bytes < MF_COMPACT_CHUNK) {
            uint64_t len = v[i].len - part;
            if (len > MF_COMPACT_CHUNK - bytes)
                len = MF_COMPACT_CHUNK - bytes;
            ext[k] = (rfs_extent){v[i].off + part, len};
            pieces[k] = (rfsm_resolved){(size_t)bytes, len, v[i].log_off + part, map[v[i].log]};
            k++;
            bytes += len;
            part += len;
            if (part == v[i].len) {
                i++;
                part = 0;
            }
        }
        uint8_t *nb = realloc(buf, (size_t)bytes);
        if (!nb) {
            rc = rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
            break;
        }
        buf = nb;
        for (size_t x = 0; x < k && rc == RFS_OK; x++) {
            int first = 1;
            for (size_t y = 0; y < x && first; y++)
                first = pieces[y].log != pieces[x].log;
            if (first)
                rc = read_log_pieces(f, pieces[x].log, pieces, k, buf);
        }
        size_t done = 0;
        if (rc == RFS_OK)
            rc = mf_stripe_write(f, ext, k, buf, &done);
    }
    pthread_mutex_lock(&f->mu);
    f->written_end = written_end;
    pthread_mutex_unlock(&f->mu);
    free(buf);
    free(ext);
    free(pieces);
    return rc;
}

int mf_log_compact_locked(rfsm *m, void *ctx)
{
    mf_file *f = ctx;
    if (!rfsm_has_logs(m))
        return 0;
    if ((f->flags & RFS_O_ACCMODE) == RFS_O_RDONLY)
        return rfs_fail(RFS_E_ROFS, "%s:%s: compaction needs the file open for writing",
                        f->io.server, f->io.path);
    uint32_t *map = malloc((m->nlogs ? m->nlogs : 1) * sizeof *map);
    uint8_t *drop = calloc(m->nlogs ? m->nlogs : 1, 1);
    char **names = calloc(m->nlogs ? m->nlogs : 1, sizeof *names);
    int rc = map && drop && names
                 ? RFS_OK
                 : rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
    pthread_mutex_lock(&f->log_mu);
    for (uint32_t i = 0; i < m->nlogs && rc == RFS_OK; i++)
        rc = logref(f, m->servers[m->logs[i].server], m->logs[i].path, &map[i]);
    pthread_mutex_unlock(&f->log_mu);
    if (rc == RFS_OK)
        rc = copy_to_stripes(f, m->overlays, m->noverlays, map);
    if (rc == RFS_OK && m->noverlays)
        rc = mf_sync_objects(f); /* durable in the stripes before the overlays go */
    /* A log goes with its overlays unless its writer still holds it open (its shared lock):
     * it may append more, to be mapped at its next merge. */
    uint32_t ndrop = 0;
    for (uint32_t i = 0; i < m->nlogs && rc == RFS_OK; i++) {
        if (map[i] == f->own_log)
            continue;
        rfs_io *io = NULL;
        int orc = log_io(f, map[i], &io);
        if (orc != RFS_OK) {
            rfs_clear_error();
            /* gone already (deleted after a compaction whose manifest write was lost): its
             * entry goes, nothing to delete */
            drop[i] = orc == RFS_E_NOENT;
            continue;
        }
        if (io->ops->lock(io, RFSM_LOCK_OFF, 1, RFS_LOCK_EXCL, 0) != RFS_OK) {
            rfs_clear_error(); /* in use */
            continue;
        }
        char name[RFSM_MAX_URL + RFSM_MAX_PATH + 2];
        pthread_mutex_lock(&f->log_mu);
        int nrc = log_name(f, map[i], name, sizeof name);
        pthread_mutex_unlock(&f->log_mu);
        if (nrc != RFS_OK || !(names[ndrop] = strdup(name))) {
            rfs_clear_error();
            continue;
        }
        ndrop++;
        drop[i] = 1;
    }
    if (rc != RFS_OK) {
        for (uint32_t i = 0; i < ndrop; i++)
            free(names[i]);
        free(names);
        free(map);
        free(drop);
        return rc;
    }
    m->noverlays = 0;
    uint32_t keep = 0;
    for (uint32_t i = 0; i < m->nlogs; i++) {
        if (drop[i]) {
            free(m->logs[i].path);
            continue;
        }
        m->logs[keep++] = m->logs[i];
    }
    m->nlogs = keep;
    /* deleted once the manifest without them is stored (mf_log_delete_dropped) */
    pthread_mutex_lock(&f->mu);
    for (uint32_t i = 0; i < f->ndropped; i++)
        free(f->dropped[i]);
    free(f->dropped);
    f->dropped = names;
    f->ndropped = ndrop;
    pthread_mutex_unlock(&f->mu);
    free(map);
    free(drop);
    return 1;
}

int mf_log_delete_dropped(mf_file *f, int stored)
{
    pthread_mutex_lock(&f->mu);
    char **names = f->dropped;
    uint32_t n = f->ndropped;
    f->dropped = NULL;
    f->ndropped = 0;
    pthread_mutex_unlock(&f->mu);
    rfs_status first = {RFS_OK, ""};
    for (uint32_t i = 0; i < n; i++) {
        /* our handle (and its lock) goes first; a manifest that was not stored still names
         * the log, which stays */
        pthread_mutex_lock(&f->log_mu);
        for (uint32_t k = 0; k < f->nlogs; k++) {
            char name[RFSM_MAX_URL + RFSM_MAX_PATH + 2];
            if (f->logs[k].io && log_name(f, k, name, sizeof name) == RFS_OK &&
                !strcmp(name, names[i])) {
                if (f->logs[k].io->ops->close(f->logs[k].io) != RFS_OK)
                    rfs_clear_error();
                f->logs[k].io = NULL;
            }
        }
        pthread_mutex_unlock(&f->log_mu);
        if (!stored) {
            free(names[i]);
            continue;
        }
        int rc = rfs_delete(names[i], &f->obj_opts);
        if (rc != RFS_OK && rc != RFS_E_NOENT)
            rfs_status_first(&first, rc);
        else if (rc != RFS_OK)
            rfs_clear_error();
        free(names[i]);
    }
    free(names);
    return first.rc == RFS_OK ? RFS_OK : rfs_status_raise(&first);
}

/* Counts what a compaction took away, then compacts (store hook). */
typedef struct compact_count {
    mf_file *f;
    uint32_t overlays, logs;
} compact_count;

static int compact_counting(rfsm *m, void *ctx)
{
    compact_count *c = ctx;
    uint32_t no = m->noverlays, nl = m->nlogs;
    int rc = mf_log_compact_locked(m, c->f);
    if (rc > 0) {
        c->overlays = no - m->noverlays;
        c->logs = nl - m->nlogs;
    }
    return rc;
}

int rfs_manifest_compact(const char *name, const rfs_options *opts, uint32_t *overlays,
                         uint32_t *logs)
{
    rfs_runtime *rt = rfs_runtime_default();
    if (!rt)
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", name);
    mf_file *f = NULL;
    int rc = mf_open(rt, name, RFS_O_RDWR, 0, opts, NULL, &f);
    if (rc != RFS_OK)
        return rc;
    compact_count c = {f, 0, 0};
    rc = rfsm_store_update(f->home, compact_counting, &c, NULL);
    rfs_status st;
    rfs_status_save(&st, rc);
    int drc = mf_log_delete_dropped(f, rc == RFS_OK);
    rfs_status_first(&st, drc);
    rfs_status_first(&st, f->io.ops->close(&f->io));
    if (overlays)
        *overlays = c.overlays;
    if (logs)
        *logs = c.logs;
    return st.rc == RFS_OK ? RFS_OK : rfs_status_raise(&st);
}
