/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Opening a logical file: its manifest (made once, by whichever process gets there first),
 * then every object that is not known incomplete, all at once. */
#include "manifest/layer.h"
#include "manifest/mf_internal.h"
#include "manifest/modes.h"
#include "manifest/store.h"

#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "common/capability.h"
#include "proto/proto.h"

int rfs_is_manifest_name(const char *name)
{
    rfs_name n;
    if (!name || !rfs_is_name(name) || rfs_parse_name(name, &n) != RFS_OK)
        return 0;
    size_t l = strlen(n.path);
    return l > 5 && strcmp(n.path + l - 5, ".rfsm") == 0;
}

/* The data servers of a new file: params->servers split at commas, else the home server. */
static int layout_of(const char *name, const rfs_manifest_params *p, rfsm_layout *l, char ***list)
{
    memset(l, 0, sizeof *l);
    const char *s = p && p->servers && *p->servers ? p->servers : name;
    size_t cap = 1;
    for (const char *c = s; *c; c++)
        cap += *c == ',';
    if (cap > RFSM_MAX_SERVERS)
        return rfs_fail(RFS_E_INVAL, "%s: rfs_servers lists more than %u servers", name,
                        RFSM_MAX_SERVERS);
    char **v = calloc(cap, sizeof *v);
    char *copy = strdup(s);
    int rc = v && copy ? RFS_OK : rfs_fail(RFS_E_NOMEM, "%s: out of memory", name);
    char *save = NULL;
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && rc == RFS_OK;
         tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        char url[RFSM_MAX_URL + 1];
        if (rfsm_server_of_name(tok, url, sizeof url) != RFS_OK) {
            rc = rfs_fail(RFS_E_NAME, "%s: rfs_servers: '%s' is not an rfs://HOST:PORT name", name,
                          tok);
            break;
        }
        if (!(v[l->nservers] = strdup(url)))
            rc = rfs_fail(RFS_E_NOMEM, "%s: out of memory", name);
        else
            l->nservers++;
    }
    free(copy);
    if (rc == RFS_OK && l->nservers == 0)
        rc = rfs_fail(RFS_E_INVAL, "%s: rfs_servers names no server", name);
    l->servers = v;
    l->stripe_size = p && p->stripe_size ? p->stripe_size : RFSM_DEFAULT_STRIPE_SIZE;
    l->stripe_count = p && p->stripe_count > 0 ? (uint32_t)p->stripe_count : l->nservers;
    l->replicas = p && p->replicas > 0 ? (uint32_t)p->replicas : 1;
    if (p && (p->stripe_count < 0 || p->replicas < 0))
        rc = rfs_fail(RFS_E_INVAL, "%s: negative rfs_stripe_count or rfs_replicas", name);
    *list = v;
    return rc;
}

static void free_list(char **v, uint32_t n)
{
    for (uint32_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

/* Writes a new manifest for name unless one exists (RFS_E_EXIST then). */
static int create_manifest(const char *name, unsigned mode, const rfs_options *opts,
                           const rfs_manifest_params *p)
{
    rfs_name n;
    int rc = rfs_parse_name(name, &n);
    if (rc != RFS_OK)
        return rc;
    rfsm_layout l;
    char **list = NULL;
    rfsm *m = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    rc = layout_of(name, p, &l, &list);
    if (rc == RFS_OK)
        rc = rfsm_make_striped_at(&l, rfsm_first_server(p ? p->depot_slot : 0, l.nservers), n.path,
                                  &m);
    if (rc == RFS_OK)
        rc = rfsm_encode(m, name, &buf, &len);
    if (rc == RFS_OK)
        rc = rfs_write_file(name, buf, len, mode ? mode : 0644,
                            RFS_WRITE_EXCL | RFS_WRITE_SYNC | RFS_WRITE_PARENTS, opts);
    free(buf);
    rfsm_free(m);
    free_list(list, l.nservers);
    return rc;
}

/* The rfs name of object i. */
static int object_name(const rfsm *m, uint32_t i, char *out, size_t cap)
{
    int w = snprintf(out, cap, "%s%s", m->servers[m->objects[i].server], m->objects[i].path);
    return w > 0 && (size_t)w < cap ? RFS_OK : rfs_fail(RFS_E_NAME, "object name too long");
}

typedef struct open_job {
    mf_file *f;
    uint32_t obj;
    unsigned flags, mode;
    const rfs_options *opts;
    rfs_status st;
} open_job;

static void *open_one(void *arg)
{
    open_job *j = arg;
    char name[RFSM_MAX_URL + RFSM_MAX_PATH + 2];
    int rc = object_name(j->f->m, j->obj, name, sizeof name);
    rfs_io *io = NULL;
    if (rc == RFS_OK)
        rc = rfs_io_open_remote_in(j->f->rt, name, j->flags, j->mode, j->opts, &io);
    if (rc == RFS_E_NOENT && (j->flags & RFS_O_CREAT)) {
        /* The directory is missing on this data server: made (as mkdir -p), then again. */
        rfs_name n;
        rfs_parse_name(name, &n);
        char *slash = strrchr(n.path, '/');
        if (slash && slash != n.path) {
            *slash = 0;
            const char *dir = n.path;
            int res = RFS_OK;
            rfs_mkdir_many(name, &dir, &res, 1, 0777 | RFS_MKDIR_PARENTS, j->opts);
            rc = rfs_io_open_remote_in(j->f->rt, name, j->flags, j->mode, j->opts, &io);
        }
    }
    rfs_status_save(&j->st, rc);
    j->f->objs[j->obj].io = io;
    /* measured now, while no request can be replacing the connection */
    j->f->objs[j->obj].rtt_ms = io ? rfs_io_remote_rtt_ms(io) : MF_RTT_UNKNOWN;
    return NULL;
}

/* Opens the objects that are not known incomplete, all at once; a replicated column may lose
 * some (they are given up, and incomplete when writing), but every column keeps one. */
static int open_objects(mf_file *f, unsigned flags, unsigned mode, const rfs_options *opts,
                        int truncating)
{
    rfsm *m = f->m;
    open_job *jobs = calloc(m->nobjects ? m->nobjects : 1, sizeof *jobs);
    if (!jobs)
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", f->io.path);
    size_t n = 0;
    int reading = (flags & RFS_O_ACCMODE) == RFS_O_RDONLY;
    for (uint32_t i = 0; i < m->nobjects; i++) {
        /* An incomplete replica is never written again (until augment repairs it); a reader
         * still uses one that names what it misses, for the bytes outside those ranges. */
        int stale = (m->objects[i].flags & RFSM_OBJ_STALE) != 0;
        if (stale && (!reading || m->objects[i].nmissing == 0)) {
            f->objs[i].gone = 1;
            /* A truncating open opens it anyway: emptied, it is complete again. */
            if (!truncating || reading)
                continue;
        }
        jobs[n++] = (open_job){.f = f, .obj = i, .flags = flags, .mode = mode, .opts = opts};
    }
    mf_parallel(f->rt, open_one, jobs, sizeof *jobs, n);
    int rc = RFS_OK;
    for (size_t k = 0; k < n && rc == RFS_OK; k++) {
        if (jobs[k].st.rc == RFS_OK)
            continue;
        if (f->objs[jobs[k].obj].gone) {
            rfs_clear_error(); /* an incomplete one opened to be emptied: stays as it was */
            continue;
        }
        rfs_status_raise(&jobs[k].st);
        mf_obj_failed(f, jobs[k].obj, jobs[k].st.rc, (flags & RFS_O_ACCMODE) != RFS_O_RDONLY);
    }
    /* Every column of every extent needs one replica to work with. */
    for (uint32_t x = 0; x < m->nextents && rc == RFS_OK; x++) {
        const rfsm_extent *e = &m->extents[x];
        for (uint32_t c = 0; c < e->stripe_count && rc == RFS_OK; c++) {
            int live = 0;
            for (uint32_t r = 0; r < e->replicas; r++) {
                uint32_t oi = rfsm_object_of(e, c, r);
                live |= oi != RFSM_NO_OBJECT && f->objs[oi].io && !f->objs[oi].gone;
            }
            if (live)
                continue;
            const open_job *why = NULL;
            for (size_t k = 0; k < n; k++)
                if (jobs[k].st.rc != RFS_OK && jobs[k].obj == rfsm_object_of(e, c, 0) &&
                    jobs[k].obj != RFSM_NO_OBJECT)
                    why = &jobs[k];
            rc = rfs_fail(why ? why->st.rc : RFS_E_IO,
                          "%s:%s: no replica of stripe column %u is available (%s)", f->io.server,
                          f->io.path, c, why ? why->st.msg : "every replica is marked incomplete");
        }
    }
    free(jobs);
    return rc;
}

int mf_open(rfs_runtime *rt, const char *name, unsigned flags, unsigned mode,
            const rfs_options *opts, const rfs_manifest_params *p, mf_file **out)
{
    *out = NULL;
    if (!rfs_is_manifest_name(name))
        return rfs_fail(RFS_E_NAME, "%s: not a manifest name (rfs://HOST:PORT/PATH.rfsm)", name);
    unsigned acc = flags & RFS_O_ACCMODE;
    unsigned home_flags = acc == RFS_O_RDONLY ? RFS_O_RDONLY : RFS_O_RDWR;
    rfs_options o = opts ? *opts : (rfs_options){0};
    rfs_io *home = NULL;
    int rc = rfs_io_open_remote_in(rt, name, home_flags, 0, &o, &home);
    if (rc == RFS_OK && (flags & RFS_O_CREAT) && (flags & RFS_O_EXCL)) {
        home->ops->close(home);
        return rfs_fail(RFS_E_EXIST, "%s: exists (exclusive create)", name);
    }
    if (rc == RFS_E_NOENT && (flags & RFS_O_CREAT)) {
        rc = create_manifest(name, mode, &o, p);
        if (rc == RFS_E_EXIST && (flags & RFS_O_EXCL))
            return rc;
        if (rc == RFS_OK || rc == RFS_E_EXIST) /* made here, or by another process just now */
            rc = rfs_io_open_remote_in(rt, name, home_flags, 0, &o, &home);
    }
    if (rc != RFS_OK)
        return rc;
    mf_file *f = calloc(1, sizeof *f);
    if (!f) {
        home->ops->close(home);
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", name);
    }
    f->io.ops = mf_ops();
    f->io.features = RFS_IO_F_LOCKS | RFS_IO_F_COUNTERS;
    memcpy(f->io.server, home->server, sizeof f->io.server);
    memcpy(f->io.path, home->path, sizeof f->io.path);
    f->rt = rt;
    f->flags = flags;
    f->home = home;
    f->deferred.rc = RFS_OK;
    f->own_log = RFSM_NO_OBJECT;
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_init(&f->log_mu, NULL);
    rc = rfsm_store_load(home, &f->m);
    if (rc == RFS_OK) {
        f->size = f->m->size;
        f->objs = calloc(f->m->nobjects ? f->m->nobjects : 1, sizeof *f->objs);
        f->col_base = calloc(f->m->nextents ? f->m->nextents : 1, sizeof *f->col_base);
        for (uint32_t x = 0; f->col_base && x < f->m->nextents; x++) {
            f->col_base[x] = f->ncols;
            f->ncols += f->m->extents[x].stripe_count;
        }
        f->written = calloc(f->ncols ? f->ncols : 1, sizeof *f->written);
        if (!f->objs || !f->col_base || !f->written)
            rc = rfs_fail(RFS_E_NOMEM, "%s: out of memory", name);
    }
    if (rc == RFS_OK) {
        /* A replicated column fails over at once rather than waiting for a lost server to come
         * back (docs/manifest.md "Failures"); an unreplicated one waits as any file does. */
        uint32_t maxrep = 1;
        for (uint32_t x = 0; x < f->m->nextents; x++)
            if (f->m->extents[x].replicas > maxrep)
                maxrep = f->m->extents[x].replicas;
        rfs_options oo = o;
        if (maxrep > 1)
            oo.retry_timeout_ms = -1;
        /* Writes wait for their replies: the layer above sees a write in the file when it
         * returns (no write marks to follow several servers' windows). */
        oo.write_window = 0;
        unsigned of = acc == RFS_O_RDONLY ? RFS_O_RDONLY : RFS_O_RDWR | RFS_O_CREAT;
        /* the lease is kept (wiped at close): log objects are opened later with it */
        rc = mf_cap_lease(name, &o, acc == RFS_O_RDONLY ? RFS_CAP_READ : RFS_CAP_WRITE, f->lease,
                          sizeof f->lease, &oo);
        if (rc == RFS_OK)
            rc = open_objects(f, of, mode ? mode : 0644, &oo, (flags & RFS_O_TRUNC) != 0);
        if (rc == RFS_OK)
            rc = mf_log_init(f, p, &oo, mode ? mode : 0644);
    }
    if (rc == RFS_OK && (flags & RFS_O_TRUNC) && acc != RFS_O_RDONLY)
        rc = f->io.ops->set_size(&f->io, 0);
    if (rc != RFS_OK) {
        rfs_status st;
        rfs_status_save(&st, rc);
        f->deferred.rc = RFS_OK;
        f->dirty = 0;
        f->io.ops->close(&f->io);
        return rfs_status_raise(&st);
    }
    *out = f;
    return RFS_OK;
}

int rfs_manifest_open_in(rfs_runtime *rt, const char *name, unsigned flags, unsigned mode,
                         const rfs_options *opts, const rfs_manifest_params *params, rfs_io **out)
{
    mf_file *f = NULL;
    if (!rt && !(rt = rfs_runtime_default()))
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", name);
    int rc = mf_open(rt, name, flags, mode, opts, params, &f);
    *out = rc == RFS_OK ? &f->io : NULL;
    return rc == RFS_OK ? mf_stack_modes(params, out) : rc;
}

int rfs_io_open_manifest(const char *name, unsigned flags, unsigned mode, const rfs_options *opts,
                         const rfs_manifest_params *params, rfs_io **out)
{
    return rfs_manifest_open_in(NULL, name, flags, mode, opts, params, out);
}

const rfs_io_ops *rfs_manifest_io_ops(void)
{
    return mf_ops();
}

int rfs_manifest_delete(const char *name, const rfs_options *opts)
{
    if (!rfs_is_manifest_name(name))
        return rfs_fail(RFS_E_NAME, "%s: not a manifest name (rfs://HOST:PORT/PATH.rfsm)", name);
    rfs_io *home = NULL;
    int rc = rfs_io_open_remote(name, RFS_O_RDONLY, 0, opts, &home);
    rfsm *m = NULL;
    if (rc == RFS_OK) {
        rc = rfsm_store_load(home, &m);
        home->ops->close(home);
    }
    rfs_status first = {RFS_OK, ""};
    rfs_options oo = opts ? *opts : (rfs_options){0};
    char lease[RFS_CAP_MAX_LEN + 1];
    if (rc == RFS_OK)
        rc = mf_cap_lease(name, &oo, RFS_CAP_WRITE, lease, sizeof lease, &oo);
    for (uint32_t i = 0; rc == RFS_OK && i < m->nobjects; i++) {
        char on[RFSM_MAX_URL + RFSM_MAX_PATH + 2];
        int orc = object_name(m, i, on, sizeof on);
        if (orc == RFS_OK)
            orc = rfs_delete(on, &oo);
        if (orc != RFS_OK && orc != RFS_E_NOENT)
            rfs_status_first(&first, orc);
    }
    /* and the log objects of log-structured writes */
    for (uint32_t i = 0; rc == RFS_OK && i < m->nlogs; i++) {
        char on[RFSM_MAX_URL + RFSM_MAX_PATH + 2];
        int w = snprintf(on, sizeof on, "%s%s", m->servers[m->logs[i].server], m->logs[i].path);
        int orc = w > 0 && (size_t)w < sizeof on ? rfs_delete(on, &oo)
                                                 : rfs_fail(RFS_E_NAME, "log name too long");
        if (orc != RFS_OK && orc != RFS_E_NOENT)
            rfs_status_first(&first, orc);
    }
    explicit_bzero(lease, sizeof lease);
    rfsm_free(m);
    /* The manifest goes last, and only when every object went: objects it no longer names
     * would be left on their servers for nobody to find. */
    if (rc == RFS_OK && first.rc != RFS_OK)
        return rfs_status_raise(&first);
    if (rc == RFS_OK)
        rc = rfs_delete(name, opts);
    return rc;
}
