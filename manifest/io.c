/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The logical file as an rfs_io (docs/manifest.md): a request's logical ranges are cut into
 * runs per stripe column, and each column's runs become one request to one object (list I/O
 * when there are several), every object's request at once. Writes go to each live replica
 * of the columns they touch; reads to the live replica of each column whose server's round
 * trip is lowest (mf_read_start), the next one taking over when it fails. A replica that misses a write is given up, the object ranges it
 * missed recorded in the manifest at the next merge (sync, flush, close) and the failure
 * reported at the next sync or close (the write itself succeeded: another replica has the
 * bytes). An incomplete replica still serves reads that avoid every range it misses. */
#include "manifest/mf_internal.h"
#include "manifest/store.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

static mf_file *MF(rfs_io *io)
{
    return (mf_file *)io;
}

void mf_obj_missed(mf_file *f, uint32_t i, uint64_t off, uint64_t len, int whole)
{
    mf_obj *o = &f->objs[i];
    if (whole) {
        rfsm_rangeset_free(&o->missed);
        o->missed.whole = 1;
    } else {
        rfsm_rangeset_add(&o->missed, off, len);
    }
    o->pending = 1;
    f->dirty = 1;
}

void mf_obj_failed(mf_file *f, uint32_t i, int rc, int incomplete)
{
    rfs_status st;
    rfs_status_save(&st, rc);
    pthread_mutex_lock(&f->mu);
    f->objs[i].gone = 1;
    if (incomplete && !f->objs[i].reported) {
        f->objs[i].reported = 1;
        if (f->deferred.rc == RFS_OK) {
            f->deferred.rc = rc;
            snprintf(f->deferred.msg, sizeof f->deferred.msg,
                     "%s:%s: replica %s%s is incomplete (given up; the manifest records what "
                     "it misses): %s",
                     f->io.server, f->io.path, f->m->servers[f->m->objects[i].server],
                     f->m->objects[i].path, st.msg);
        }
    }
    pthread_mutex_unlock(&f->mu);
    rfs_status_raise(&st);
}

/* The object's handle if this process may use it. */
static rfs_io *usable(mf_file *f, uint32_t i)
{
    pthread_mutex_lock(&f->mu);
    rfs_io *io = f->objs[i].gone ? NULL : f->objs[i].io;
    pthread_mutex_unlock(&f->mu);
    return io;
}

/* ---- cutting a request into per-column runs ---- */

typedef struct piece {
    uint64_t obj_off, len;
    size_t pos;
    uint32_t extent, column;
    size_t seq; /* order in the request: runs of a column stay in it */
} piece;

typedef struct cutter {
    piece *v;
    size_t n, cap;
    size_t pos; /* where the current logical range's bytes start in the caller's buffer */
    uint64_t base;
} cutter;

static int add_piece(void *ctx, const rfsm_piece *p)
{
    cutter *c = ctx;
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 16;
        piece *nv = realloc(c->v, nc * sizeof *nv);
        if (!nv)
            return RFS_E_NOMEM;
        c->v = nv;
        c->cap = nc;
    }
    c->v[c->n] = (piece){p->obj_off, p->len,    c->pos + (size_t)(p->log_off - c->base),
                         p->extent,  p->column, c->n};
    c->n++;
    return 0;
}

static int by_column(const void *a, const void *b)
{
    const piece *x = a, *y = b;
    if (x->extent != y->extent)
        return x->extent < y->extent ? -1 : 1;
    if (x->column != y->column)
        return x->column < y->column ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* One column's share of a request. */
typedef struct group {
    uint32_t extent, column;
    mf_run *runs;
    size_t nruns;
    uint64_t bytes;
} group;

typedef struct plan {
    cutter c;
    mf_run *runs;
    group *g;
    size_t ng;
} plan;

static void plan_free(plan *p)
{
    free(p->c.v);
    free(p->runs);
    free(p->g);
}

/* Cuts the logical ranges ext[0..n) (their bytes packed in the caller's buffer) into groups. */
static int plan_make(const mf_file *f, const rfs_extent *ext, size_t n, plan *p)
{
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < n; i++) {
        p->c.base = ext[i].offset;
        if (rfsm_map(f->m, ext[i].offset, ext[i].length, add_piece, &p->c) != 0)
            return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
        p->c.pos += (size_t)ext[i].length;
    }
    qsort(p->c.v, p->c.n, sizeof *p->c.v, by_column);
    p->runs = malloc((p->c.n ? p->c.n : 1) * sizeof *p->runs);
    p->g = malloc((p->c.n ? p->c.n : 1) * sizeof *p->g);
    if (!p->runs || !p->g)
        return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
    for (size_t k = 0; k < p->c.n; k++) {
        const piece *x = &p->c.v[k];
        if (!p->ng || p->g[p->ng - 1].extent != x->extent || p->g[p->ng - 1].column != x->column)
            p->g[p->ng++] = (group){x->extent, x->column, &p->runs[k], 0, 0};
        p->runs[k] = (mf_run){x->obj_off, x->len, x->pos};
        p->g[p->ng - 1].nruns++;
        p->g[p->ng - 1].bytes += x->len;
    }
    return RFS_OK;
}

/* ---- one object's part of a request ---- */

typedef struct job {
    mf_file *f;
    const group *g;
    uint32_t obj; /* writes: the replica; reads: the one that answered */
    uint8_t *buf; /* the caller's packed buffer */
    int write;
    rfs_status st;
} job;

/* The runs of g on object io: a read fills the runs' bytes in buf, zeros where the object
 * ends early (a hole: bytes of the column never written). */
static int object_io(rfs_io *io, const group *g, uint8_t *buf, int write)
{
    size_t done = 0;
    if (g->nruns == 1) {
        const mf_run *r = &g->runs[0];
        if (write)
            return io->ops->pwrite(io, buf + r->pos, (size_t)r->len, r->obj_off, &done);
        int rc = io->ops->pread(io, buf + r->pos, (size_t)r->len, r->obj_off, &done);
        if (rc == RFS_OK && done < r->len)
            memset(buf + r->pos + done, 0, (size_t)r->len - done);
        return rc;
    }
    rfs_extent *ext = malloc(g->nruns * sizeof *ext);
    struct iovec *mem = malloc(g->nruns * sizeof *mem);
    uint8_t *tmp = !write ? malloc((size_t)g->bytes) : NULL;
    int rc;
    if (!ext || !mem || (!write && !tmp)) {
        rc = rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", io->server, io->path);
        goto out;
    }
    for (size_t k = 0; k < g->nruns; k++) {
        ext[k] = (rfs_extent){g->runs[k].obj_off, g->runs[k].len};
        mem[k] = (struct iovec){buf + g->runs[k].pos, (size_t)g->runs[k].len};
    }
    if (write) {
        rc = io->ops->pwritev_gather(io, ext, g->nruns, mem, g->nruns, &done);
        goto out;
    }
    rc = io->ops->preadv(io, ext, g->nruns, tmp, &done);
    if (rc == RFS_OK) {
        size_t at = 0;
        for (size_t k = 0; k < g->nruns; k++) {
            size_t l = (size_t)g->runs[k].len;
            size_t have = done > at ? (done - at < l ? done - at : l) : 0;
            memcpy(mem[k].iov_base, tmp + at, have);
            memset((uint8_t *)mem[k].iov_base + have, 0, l - have);
            at += l;
        }
    }
out:
    free(ext);
    free(mem);
    free(tmp);
    return rc;
}

static void *write_job(void *arg)
{
    job *j = arg;
    rfs_io *io = usable(j->f, j->obj);
    int rc = io ? object_io(io, j->g, j->buf, 1) : RFS_E_IO;
    rfs_status_save(&j->st, rc);
    return NULL;
}

/* The replica slot of column c that serves object bytes [off, off+len): a complete live one
 * first, else a live incomplete one that does not miss them; UINT32_MAX when none does. */
static uint32_t holder(mf_file *f, const rfsm_extent *e, uint32_t c, uint64_t off, uint64_t len)
{
    for (uint32_t k = 0; k < 2 * e->replicas; k++) {
        uint32_t oi = rfsm_object_of(e, c, k % e->replicas);
        if (oi == RFSM_NO_OBJECT)
            continue;
        const rfsm_object *mo = &f->m->objects[oi];
        int incomplete = (mo->flags & RFSM_OBJ_STALE) != 0;
        if (incomplete != (k >= e->replicas) || (incomplete && rfsm_object_misses(mo, off, len)))
            continue;
        if (usable(f, oi))
            return k % e->replicas;
    }
    return UINT32_MAX;
}

/* No one replica holds all of g's runs (incomplete ones miss some): each run is read from
 * the first replica that holds it, one request per replica. A replica that fails is given up
 * and its runs are placed again; each round gives one up, so at most `replicas` rounds. */
static int read_by_runs(job *j)
{
    mf_file *f = j->f;
    const group *g = j->g;
    const rfsm_extent *e = &f->m->extents[g->extent];
    uint32_t *who = malloc(g->nruns * sizeof *who);
    mf_run *sub = malloc(g->nruns * sizeof *sub);
    uint8_t *done = calloc(g->nruns, 1);
    rfs_status last = {RFS_OK, ""};
    int failed = 1;
    int rc = who && sub && done
                 ? RFS_OK
                 : rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
    for (uint32_t round = 0; rc == RFS_OK && round <= e->replicas; round++) {
        for (size_t x = 0; x < g->nruns && rc == RFS_OK; x++) {
            if (done[x])
                continue;
            who[x] = holder(f, e, g->column, g->runs[x].obj_off, g->runs[x].len);
            if (who[x] == UINT32_MAX)
                rc = rfs_fail(RFS_E_IO,
                              "%s:%s: no replica of stripe column %u holds object bytes "
                              "[%llu, +%llu) (the incomplete ones miss them: rfs manifest "
                              "augment repairs them)",
                              f->io.server, f->io.path, g->column,
                              (unsigned long long)g->runs[x].obj_off,
                              (unsigned long long)g->runs[x].len);
        }
        failed = 0;
        for (uint32_t r = 0; rc == RFS_OK && r < e->replicas; r++) {
            group sg = {g->extent, g->column, sub, 0, 0};
            for (size_t x = 0; x < g->nruns; x++)
                if (!done[x] && who[x] == r) {
                    sub[sg.nruns++] = g->runs[x];
                    sg.bytes += g->runs[x].len;
                }
            if (!sg.nruns)
                continue;
            uint32_t oi = rfsm_object_of(e, g->column, r);
            rfs_io *io = usable(f, oi);
            int orc = io ? object_io(io, &sg, j->buf, 0)
                         : rfs_fail(RFS_E_IO, "%s:%s: replica given up", f->io.server, f->io.path);
            if (orc != RFS_OK) {
                rfs_status_save(&last, orc);
                if (e->replicas > 1)
                    mf_obj_failed(f, oi, orc, 0);
                failed = 1;
                continue;
            }
            for (size_t x = 0; x < g->nruns; x++)
                done[x] |= who[x] == r;
        }
        if (rc == RFS_OK && !failed)
            break;
    }
    if (rc == RFS_OK && failed) /* a lone replica's failure, or rounds used up */
        rc = rfs_fail(last.rc,
                      "%s:%s: the replicas of stripe column %u that hold its bytes failed; the "
                      "last: %s",
                      f->io.server, f->io.path, g->column, last.msg);
    free(who);
    free(sub);
    free(done);
    return rc;
}

static void *read_job(void *arg)
{
    job *j = arg;
    mf_file *f = j->f;
    const rfsm_extent *e = &f->m->extents[j->g->extent];
    rfs_status last = {RFS_OK, ""};
    int tried = 0, missing = 0;
    uint32_t start = e->replicas > 1 ? mf_read_start(f, e, j->g->column) : 0;
    for (uint32_t k = 0; k < 2 * e->replicas; k++) {
        /* First pass the complete replicas; second pass the incomplete ones, each only when
         * none of its missing ranges meets the runs (it holds exactly those bytes). Each pass
         * starts at the fastest replica and goes round the others in slot order. */
        uint32_t r = (k + start) % e->replicas;
        uint32_t oi = rfsm_object_of(e, j->g->column, r);
        if (oi == RFSM_NO_OBJECT)
            continue;
        const rfsm_object *mo = &f->m->objects[oi];
        int incomplete = (mo->flags & RFSM_OBJ_STALE) != 0;
        if (incomplete != (k >= e->replicas))
            continue;
        int misses = 0;
        for (size_t x = 0; incomplete && x < j->g->nruns && !misses; x++)
            misses = rfsm_object_misses(mo, j->g->runs[x].obj_off, j->g->runs[x].len);
        missing |= misses;
        if (misses)
            continue;
        rfs_io *io = usable(f, oi);
        if (!io)
            continue;
        tried = 1;
        int rc = object_io(io, j->g, j->buf, 0);
        if (rc == RFS_OK) {
            j->obj = oi;
            j->st.rc = RFS_OK;
            return NULL;
        }
        rfs_status_save(&last, rc);
        /* Another replica takes over; a lone copy is not given up (its connection may come
         * back, and the next access should try it again). */
        if (e->replicas > 1)
            mf_obj_failed(f, oi, rc, 0);
    }
    if (!tried && missing)
        rfs_status_save(&j->st, read_by_runs(j));
    else if (!tried)
        rfs_status_save(&j->st,
                        rfs_fail(RFS_E_IO, "%s:%s: no live replica of stripe column %u left",
                                 f->io.server, f->io.path, j->g->column));
    else if (e->replicas > 1)
        rfs_status_save(&j->st, rfs_fail(last.rc,
                                         "%s:%s: every replica of stripe column %u "
                                         "failed; the last: %s",
                                         f->io.server, f->io.path, j->g->column, last.msg));
    else
        j->st = last;
    return NULL;
}

/* ---- reads and writes ---- */

static uint64_t known_size(mf_file *f)
{
    pthread_mutex_lock(&f->mu);
    uint64_t s = f->size > f->written_end ? f->size : f->written_end;
    pthread_mutex_unlock(&f->mu);
    return s;
}

/* The size in the stored manifest (other processes' synced writes), merged into ours. */
static int refresh_size(mf_file *f, uint64_t *size)
{
    rfsm *m = NULL;
    int rc = rfsm_store_load(f->home, &m);
    if (rc != RFS_OK)
        return rc;
    /* The stored size is the truth for what was merged (it may have shrunk: another process
     * truncated); only this process's writes not merged yet may reach further. */
    pthread_mutex_lock(&f->mu);
    f->size = m->size;
    pthread_mutex_unlock(&f->mu);
    rc = mf_log_adopt(f, m); /* other processes' overlays, merged with that size */
    rfsm_free(m);
    *size = known_size(f);
    return rc;
}

/* The stripes' part of a read (overlays resolved above it, manifest/log.c). */
int mf_stripe_read(mf_file *f, const rfs_extent *list, size_t nl, void *buf, uint64_t total)
{
    plan p;
    int rc = plan_make(f, list, nl, &p);
    job *jobs = rc == RFS_OK ? calloc(p.ng ? p.ng : 1, sizeof *jobs) : NULL;
    if (rc == RFS_OK && !jobs)
        rc = rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
    if (rc == RFS_OK) {
        /* Bytes in no extent read as zeros (none in a striped layout: its extent is all). */
        uint64_t mapped = 0;
        for (size_t k = 0; k < p.ng; k++)
            mapped += p.g[k].bytes;
        if (mapped < total)
            memset(buf, 0, (size_t)total);
        for (size_t k = 0; k < p.ng; k++)
            jobs[k] = (job){.f = f, .g = &p.g[k], .buf = buf};
        mf_parallel(f->rt, read_job, jobs, sizeof *jobs, p.ng);
        for (size_t k = 0; k < p.ng && rc == RFS_OK; k++)
            if (jobs[k].st.rc != RFS_OK)
                rc = rfs_status_raise(&jobs[k].st);
    }
    free(jobs);
    plan_free(&p);
    return rc;
}

static int do_read(mf_file *f, const rfs_extent *ext, size_t n, void *buf, size_t *done)
{
    uint64_t lo, hi;
    rfs_extents_span(ext, n, &lo, &hi);
    uint64_t size = known_size(f);
    int rc;
    if (n && hi > size && (rc = refresh_size(f, &size)) != RFS_OK)
        return rc;
    /* A read stops at the end of the file: ranges up to the first byte beyond it. */
    size_t keep = 0;
    uint64_t total = 0;
    rfs_extent cut = {0, 0};
    for (; keep < n; keep++) {
        if (ext[keep].offset >= size)
            break;
        if (ext[keep].length > size - ext[keep].offset) {
            cut = (rfs_extent){ext[keep].offset, size - ext[keep].offset};
            total += cut.length;
            break;
        }
        total += ext[keep].length;
    }
    rfs_extent *list = (rfs_extent *)ext;
    size_t nl = keep;
    if (cut.length) {
        list = malloc((keep + 1) * sizeof *list);
        if (!list)
            return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
        memcpy(list, ext, keep * sizeof *list);
        list[keep] = cut;
        nl = keep + 1;
    }
    rc = mf_log_read(f, list, nl, buf, total);
    if (rc == RFS_E_NOENT && f->has_logs) {
        /* a log named by the overlays this process saw was compacted away meanwhile: the
         * stored manifest says where those bytes are now */
        rfsm *m = NULL;
        rc = rfsm_store_load(f->home, &m);
        if (rc == RFS_OK)
            rc = mf_log_adopt(f, m);
        rfsm_free(m);
        if (rc == RFS_OK)
            rc = mf_log_read(f, list, nl, buf, total);
    }
    if (list != ext)
        free(list);
    if (done)
        *done = rc == RFS_OK ? (size_t)total : 0;
    return rc;
}

/* What a write missed: every replica of g's column that did not take g's runs (its write
 * failed, or it was given up or known incomplete before) records them, for the next merge. */
static void record_missed(mf_file *f, const group *g, const job *jobs, size_t nj)
{
    const rfsm_extent *e = &f->m->extents[g->extent];
    pthread_mutex_lock(&f->mu);
    for (uint32_t r = 0; r < e->replicas; r++) {
        uint32_t oi = rfsm_object_of(e, g->column, r);
        if (oi == RFSM_NO_OBJECT)
            continue;
        int took = 0;
        for (size_t j = 0; j < nj && !took; j++)
            took = jobs[j].g == g && jobs[j].obj == oi && jobs[j].st.rc == RFS_OK;
        for (size_t x = 0; !took && x < g->nruns; x++)
            mf_obj_missed(f, oi, g->runs[x].obj_off, g->runs[x].len, 0);
    }
    pthread_mutex_unlock(&f->mu);
}

/* The dirty mapping of a write (mpiio-logistical-networking.txt sec. 4, LN_Sync): the runs
 * of g, written to the replicas this process knows, kept until the next merge. */
static void record_written(mf_file *f, const group *g)
{
    pthread_mutex_lock(&f->mu);
    rfsm_rangeset *w = &f->written[f->col_base[g->extent] + g->column];
    for (size_t x = 0; x < g->nruns; x++)
        rfsm_rangeset_add(w, g->runs[x].obj_off, g->runs[x].len);
    f->wrote = 1; /* merged by the next sync or close (a flush need not: it costs a round trip) */
    pthread_mutex_unlock(&f->mu);
}

static int do_write(mf_file *f, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    if (done)
        *done = 0;
    if ((f->flags & RFS_O_ACCMODE) == RFS_O_RDONLY)
        return rfs_fail(RFS_E_ROFS, "%s:%s: opened read-only", f->io.server, f->io.path);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ext[i].offset > RFSM_MAX_SIZE || ext[i].length > RFSM_MAX_SIZE - ext[i].offset)
            return rfs_fail(RFS_E_FBIG, "%s:%s: write beyond 2^62", f->io.server, f->io.path);
        total += ext[i].length;
    }
    if (!mf_log_wanted(f))
        return mf_stripe_write(f, ext, n, buf, done);
    int rc = mf_log_write(f, ext, n, buf, total);
    if (rc == RFS_OK && done)
        *done = (size_t)total;
    return rc;
}

/* The stripes' part of a write: to every live replica of the columns it touches. */
int mf_stripe_write(mf_file *f, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    if (done)
        *done = 0;
    uint64_t lo, hi, total = 0;
    rfs_extents_span(ext, n, &lo, &hi);
    for (size_t i = 0; i < n; i++)
        total += ext[i].length;
    plan p;
    int rc = plan_make(f, ext, n, &p);
    size_t nj = 0;
    for (size_t k = 0; rc == RFS_OK && k < p.ng; k++)
        nj += f->m->extents[p.g[k].extent].replicas;
    job *jobs = rc == RFS_OK ? calloc(nj ? nj : 1, sizeof *jobs) : NULL;
    if (rc == RFS_OK && !jobs)
        rc = rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
    if (rc == RFS_OK) {
        size_t k = 0;
        for (size_t gi = 0; gi < p.ng; gi++) {
            const rfsm_extent *e = &f->m->extents[p.g[gi].extent];
            for (uint32_t r = 0; r < e->replicas; r++) {
                uint32_t oi = rfsm_object_of(e, p.g[gi].column, r);
                if (oi != RFSM_NO_OBJECT && usable(f, oi))
                    jobs[k++] =
                        (job){.f = f, .g = &p.g[gi], .obj = oi, .buf = (uint8_t *)buf, .write = 1};
            }
        }
        nj = k;
        mf_parallel(f->rt, write_job, jobs, sizeof *jobs, nj);
        /* Each column needs one replica that took the bytes: its replicas that failed are
         * given up and marked incomplete (reported at sync or close). A column none took
         * fails the write now, its replicas left as they are (no complete copy to prefer). */
        rfs_status lost = {RFS_OK, ""};
        for (size_t gi = 0; gi < p.ng; gi++) {
            const job *fail = NULL;
            int ok = 0;
            for (size_t j = 0; j < nj; j++) {
                if (jobs[j].g != &p.g[gi])
                    continue;
                if (jobs[j].st.rc == RFS_OK)
                    ok = 1;
                else
                    fail = &jobs[j];
            }
            if (!ok) {
                if (fail)
                    rfs_status_first(&lost, rfs_status_raise(&fail->st));
                else
                    rfs_status_first(&lost, rfs_fail(RFS_E_IO,
                                                     "%s:%s: no live replica of stripe "
                                                     "column %u left",
                                                     f->io.server, f->io.path, p.g[gi].column));
                continue;
            }
            for (size_t j = 0; j < nj; j++)
                if (jobs[j].g == &p.g[gi] && jobs[j].st.rc != RFS_OK) {
                    rfs_status_raise(&jobs[j].st);
                    mf_obj_failed(f, jobs[j].obj, jobs[j].st.rc, 1);
                }
            record_missed(f, &p.g[gi], jobs, nj);
            record_written(f, &p.g[gi]);
        }
        if (lost.rc != RFS_OK)
            rc = rfs_status_raise(&lost);
    }
    free(jobs);
    plan_free(&p);
    if (rc != RFS_OK)
        return rc;
    /* Any write that reaches past what this process wrote since its last merge is merged at
     * the next flush, even below the size it last saw: another process may have truncated
     * the file since (the merge costs no write-back when the stored size covers it). */
    pthread_mutex_lock(&f->mu);
    if (hi > f->written_end && total) {
        f->written_end = hi;
        f->dirty = 1;
    }
    pthread_mutex_unlock(&f->mu);
    if (done)
        *done = (size_t)total;
    return RFS_OK;
}

static int m_pread(rfs_io *io, void *buf, size_t len, uint64_t off, size_t *done)
{
    rfs_extent e = {off, len};
    return do_read(MF(io), &e, 1, buf, done);
}

static int m_pwrite(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done)
{
    rfs_extent e = {off, len};
    return do_write(MF(io), &e, len ? 1 : 0, buf, done);
}

static int m_preadv(rfs_io *io, const rfs_extent *ext, size_t n, void *buf, size_t *done)
{
    return do_read(MF(io), ext, n, buf, done);
}

static int m_pwritev(rfs_io *io, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    return do_write(MF(io), ext, n, buf, done);
}

/* ---- sync, flush, size ---- */

typedef struct obj_job {
    mf_file *f;
    uint32_t obj;
    int op; /* 0 flush, 1 sync, 2 set_size */
    uint64_t size;
    rfs_status st;
} obj_job;

static void *obj_job_run(void *arg)
{
    obj_job *j = arg;
    rfs_io *io = usable(j->f, j->obj);
    int rc = RFS_OK;
    if (io)
        rc = j->op == 0   ? io->ops->flush(io, 1)
             : j->op == 1 ? io->ops->sync(io)
                          : io->ops->set_size(io, j->size);
    rfs_status_save(&j->st, rc);
    return NULL;
}

/* The op on every live object at once; a replica that fails it is given up and marked
 * incomplete (reported as deferred), a lone copy's failure is returned. */
static int all_objects(mf_file *f, int op, uint64_t logical_size)
{
    rfsm *m = f->m;
    obj_job *jobs = calloc(m->nobjects ? m->nobjects : 1, sizeof *jobs);
    if (!jobs)
        return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
    size_t n = 0;
    for (uint32_t x = 0; x < m->nextents; x++) {
        const rfsm_extent *e = &m->extents[x];
        for (uint32_t c = 0; c < e->stripe_count; c++)
            for (uint32_t r = 0; r < e->replicas; r++)
                if (rfsm_object_of(e, c, r) != RFSM_NO_OBJECT)
                    jobs[n++] = (obj_job){.f = f,
                                          .obj = rfsm_object_of(e, c, r),
                                          .op = op,
                                          .size = rfsm_column_bytes(e, c, logical_size)};
    }
    mf_parallel(f->rt, obj_job_run, jobs, sizeof *jobs, n);
    rfs_status first = {RFS_OK, ""};
    int writing = (f->flags & RFS_O_ACCMODE) != RFS_O_RDONLY;
    for (size_t k = 0; k < n; k++) {
        if (jobs[k].st.rc == RFS_OK)
            continue;
        uint32_t oi = jobs[k].obj;
        int replicated = 0;
        for (uint32_t x = 0; x < m->nextents; x++)
            replicated |= m->extents[x].replicas > 1;
        rfs_status_raise(&jobs[k].st);
        if (replicated && writing) {
            /* A failed flush, sync or resize may have lost anything: the whole object. */
            pthread_mutex_lock(&f->mu);
            mf_obj_missed(f, oi, 0, 0, 1);
            pthread_mutex_unlock(&f->mu);
        }
        if (replicated)
            mf_obj_failed(f, oi, jobs[k].st.rc, writing);
        else
            rfs_status_first(&first, jobs[k].st.rc);
    }
    free(jobs);
    return first.rc == RFS_OK ? RFS_OK : rfs_status_raise(&first);
}

int mf_sync_objects(mf_file *f)
{
    return all_objects(f, 1, 0);
}

/* The deferred failure, once. */
static int take_deferred(mf_file *f)
{
    rfs_status st = {RFS_OK, ""};
    pthread_mutex_lock(&f->mu);
    if (f->deferred.rc != RFS_OK) {
        st = f->deferred;
        f->deferred.rc = RFS_OK;
    }
    pthread_mutex_unlock(&f->mu);
    return st.rc == RFS_OK ? RFS_OK : rfs_status_raise(&st);
}

/* Merges this process's size and the ranges its writes missed on replicas into the stored
 * manifest (the dirty-mapping merge of LN_Sync): the missed ranges are taken out of the
 * objects here and put back when the merge fails, so each is merged once. */
static int merge(mf_file *f, int truncate, uint64_t to, int with_written)
{
    /* This process's log, when it has one: durable before the manifest maps bytes of it. */
    char log_server[RFSM_MAX_URL + 1] = "", log_path[RFSM_MAX_PATH + 1] = "";
    rfs_io *log = NULL;
    pthread_mutex_lock(&f->log_mu);
    if (f->own_log != RFSM_NO_OBJECT) {
        snprintf(log_server, sizeof log_server, "%s", f->logs[f->own_log].server);
        snprintf(log_path, sizeof log_path, "%s", f->logs[f->own_log].path);
        log = f->logs[f->own_log].io;
    }
    pthread_mutex_unlock(&f->log_mu);
    if (log && with_written) {
        int lrc = log->ops->sync(log);
        if (lrc != RFS_OK)
            return rfs_fail_cause(lrc, "%s:%s: syncing the log object", f->io.server, f->io.path);
    }
    pthread_mutex_lock(&f->mu);
    if (!f->dirty && !truncate && !(with_written && f->wrote)) {
        pthread_mutex_unlock(&f->mu);
        return RFS_OK;
    }
    uint32_t n = f->m->nobjects ? f->m->nobjects : 1;
    uint32_t *stale = malloc(n * sizeof *stale);
    rfsm_rangeset *missed = calloc(n, sizeof *missed);
    uint8_t *cleared = calloc(n, 1);
    rfsm_rangeset *written = calloc(f->ncols ? f->ncols : 1, sizeof *written);
    if (!stale || !missed || !cleared || !written) {
        pthread_mutex_unlock(&f->mu);
        free(stale);
        free(missed);
        free(cleared);
        free(written);
        return rfs_fail(RFS_E_NOMEM, "%s:%s: out of memory", f->io.server, f->io.path);
    }
    /* Taken out (this merge sends them), put back if it fails. */
    memcpy(written, f->written, f->ncols * sizeof *written);
    memset(f->written, 0, f->ncols * sizeof *written);
    f->wrote = 0;
    rfsm_delta d = {.written_end = f->written_end,
                    .truncate = truncate,
                    .truncate_to = to,
                    .seen_size = f->size,
                    .base = f->m,
                    .stale = stale,
                    .missed = missed,
                    .cleared = cleared,
                    .written = written,
                    .log_server = log ? log_server : NULL,
                    .log_path = log ? log_path : NULL,
                    .log_len = f->log_len,
                    .overlays = f->pend,
                    .noverlays = f->npend};
    /* Taken out with the rest; a writer compacts when the overlays grow too many. */
    rfsm_overlay *taken = f->pend;
    uint32_t ntaken = f->npend, takencap = f->pendcap;
    f->pend = NULL;
    f->npend = f->pendcap = 0;
    if ((f->flags & RFS_O_ACCMODE) != RFS_O_RDONLY) {
        d.compact = mf_log_compact_locked;
        d.compact_ctx = f;
    }
    for (uint32_t i = 0; i < f->m->nobjects; i++) {
        if (!f->objs[i].pending)
            continue;
        cleared[d.nstale] = (uint8_t)f->objs[i].cleared;
        f->objs[i].cleared = 0;
        stale[d.nstale] = i;
        missed[d.nstale++] = f->objs[i].missed;
        f->objs[i].missed = (rfsm_rangeset){0};
        f->objs[i].pending = 0;
    }
    f->dirty = 0;
    pthread_mutex_unlock(&f->mu);
    rfsm *merged = NULL;
    int rc = rfsm_store_merge(f->home, &d, &merged);
    rfs_status drop_st;
    rfs_status_save(&drop_st, mf_log_delete_dropped(f, rc == RFS_OK));
    pthread_mutex_lock(&f->mu);
    if (rc == RFS_OK) {
        f->size = merged->size;
        /* Merged: the stored size covers these writes now (and a later truncation by another
         * process must not be undone by them). */
        if (f->written_end <= d.written_end)
            f->written_end = 0;
        free(taken);
        taken = NULL;
    } else {
        /* the taken overlays again, under the ones written meanwhile */
        for (uint32_t k = 0; k < f->npend; k++)
            if (rfsm_overlay_put(&taken, &ntaken, &takencap, f->pend[k]) != RFS_OK)
                rfs_clear_error(); /* out of memory: those bytes stay in the view only */
        free(f->pend);
        f->pend = taken;
        f->npend = ntaken;
        f->pendcap = takencap;
        f->dirty = 1; /* tried again by the next sync or close */
        for (size_t k = 0; k < d.nstale; k++) {
            uint32_t i = stale[k];
            f->objs[i].cleared |= cleared[k];
            f->objs[i].pending = 1;
            if (missed[k].whole)
                mf_obj_missed(f, i, 0, 0, 1);
            for (uint32_t x = 0; x < missed[k].n; x++)
                mf_obj_missed(f, i, missed[k].v[x].off, missed[k].v[x].len, 0);
        }
        f->wrote = 1;
        for (uint32_t k = 0; k < f->ncols; k++) {
            if (written[k].whole) {
                rfsm_rangeset_free(&f->written[k]);
                f->written[k].whole = 1;
            }
            for (uint32_t x = 0; x < written[k].n; x++)
                rfsm_rangeset_add(&f->written[k], written[k].v[x].off, written[k].v[x].len);
        }
    }
    pthread_mutex_unlock(&f->mu);
    if (rc == RFS_OK) {
        rc = mf_log_adopt(f, merged); /* what the others merged, and a compaction */
        rfsm_free(merged);
    }
    if (rc == RFS_OK && drop_st.rc != RFS_OK)
        rc = rfs_status_raise(&drop_st);
    for (uint32_t k = 0; k < f->ncols; k++)
        rfsm_rangeset_free(&written[k]);
    free(written);
    for (size_t k = 0; k < d.nstale; k++)
        rfsm_rangeset_free(&missed[k]);
    free(stale);
    free(missed);
    free(cleared);
    return rc;
}

/* The stored manifest's overlays and size again: what the other processes merged (the
 * consistency point of MPI-IO's sync-barrier-sync, docs/manifest.md "Log-structured
 * writes"). */
static int reload(mf_file *f)
{
    uint64_t size;
    return refresh_size(f, &size);
}

/* Clears the adopted flag: from here on, 1 means a merge took the stored manifest. */
static void adopted_clear(mf_file *f)
{
    pthread_mutex_lock(&f->mu);
    f->adopted = 0;
    pthread_mutex_unlock(&f->mu);
}

/* reload unless the merge just now took the stored manifest (it is as recent). */
static int reload_unless_merged(mf_file *f)
{
    pthread_mutex_lock(&f->mu);
    int fresh = f->adopted;
    pthread_mutex_unlock(&f->mu);
    return fresh ? RFS_OK : reload(f);
}

static int m_sync(rfs_io *io)
{
    mf_file *f = MF(io);
    if ((f->flags & RFS_O_ACCMODE) == RFS_O_RDONLY) {
        int rc = reload(f);
        return rc == RFS_OK ? take_deferred(f) : rc; /* nothing of a reader's to make durable */
    }
    rfs_status st = {RFS_OK, ""};
    adopted_clear(f);
    rfs_status_first(&st, all_objects(f, 1, 0));
    rfs_status_first(&st, merge(f, 0, 0, 1));
    if (st.rc == RFS_OK)
        rfs_status_first(&st, reload_unless_merged(f));
    if (st.rc == RFS_OK)
        return take_deferred(f);
    take_deferred(f); /* reported with this failure */
    return rfs_status_raise(&st);
}

/* Where the layer above makes writes visible to other processes (MPI-IO before a collective
 * access, a size change, at every MPI_Barrier), the manifest must show them too: a flush
 * merges what grew. Without report, a failure waits for the next sync or close. */
static int m_flush(rfs_io *io, int report)
{
    mf_file *f = MF(io);
    adopted_clear(f);
    int rc = all_objects(f, 0, 0);
    if (rc == RFS_OK)
        rc = merge(f, 0, 0, 0);
    pthread_mutex_lock(&f->mu);
    int logs = f->log_mode || f->has_logs;
    pthread_mutex_unlock(&f->mu);
    if (rc == RFS_OK && logs)
        rc = reload_unless_merged(f); /* the overlays other processes merged before this point */
    if (rc != RFS_OK && !report) {
        pthread_mutex_lock(&f->mu);
        rfs_status_first(&f->deferred, rc);
        pthread_mutex_unlock(&f->mu);
        return RFS_OK;
    }
    if (rc != RFS_OK || !report)
        return rc;
    return take_deferred(f);
}

static int m_get_size(rfs_io *io, uint64_t *size)
{
    return refresh_size(MF(io), size);
}

/* Truncated to 0, an incomplete replica this process holds open (an O_TRUNC open opens
 * them) misses nothing any more: it is written again from here on, and the merge tells the
 * manifest it is complete. One that cannot be truncated stays as it was. */
static void revive_emptied(mf_file *f)
{
    for (uint32_t i = 0; i < f->m->nobjects; i++) {
        pthread_mutex_lock(&f->mu);
        rfs_io *io = f->objs[i].gone ? f->objs[i].io : NULL;
        pthread_mutex_unlock(&f->mu);
        if (!io || !(f->m->objects[i].flags & RFSM_OBJ_STALE))
            continue;
        if (io->ops->set_size(io, 0) != RFS_OK) {
            rfs_clear_error();
            continue;
        }
        pthread_mutex_lock(&f->mu);
        mf_obj *o = &f->objs[i];
        o->gone = o->reported = 0;
        rfsm_rangeset_free(&o->missed);
        o->cleared = o->pending = 1;
        f->dirty = 1;
        pthread_mutex_unlock(&f->mu);
    }
}

static int m_set_size(rfs_io *io, uint64_t size)
{
    mf_file *f = MF(io);
    if ((f->flags & RFS_O_ACCMODE) == RFS_O_RDONLY)
        return rfs_fail(RFS_E_ROFS, "%s:%s: opened read-only", f->io.server, f->io.path);
    if (size > RFSM_MAX_SIZE)
        return rfs_fail(RFS_E_FBIG, "%s:%s: size beyond 2^62", f->io.server, f->io.path);
    int rc = all_objects(f, 2, size);
    if (rc != RFS_OK)
        return rc;
    if (size == 0)
        revive_emptied(f);
    /* A replica that did not take the new size (given up, or incomplete before) holds wrong
     * bytes from the new end of its column on (old ones where zeros belong), or from the old
     * end when the file grows (zeros belong there too). */
    pthread_mutex_lock(&f->mu);
    uint64_t from = size < f->size ? size : f->size;
    for (uint32_t x = 0; x < f->m->nextents; x++) {
        const rfsm_extent *e = &f->m->extents[x];
        for (uint32_t c = 0; c < e->stripe_count; c++)
            for (uint32_t r = 0; r < e->replicas; r++) {
                uint32_t oi = rfsm_object_of(e, c, r);
                if (oi != RFSM_NO_OBJECT && (f->objs[oi].gone || !f->objs[oi].io))
                    mf_obj_missed(f, oi, e->obj_off + rfsm_column_bytes(e, c, from), RFSM_MAX_SIZE,
                                  0);
            }
    }
    /* The size is set, not raised: what this process wrote before no longer counts. */
    f->written_end = 0;
    pthread_mutex_unlock(&f->mu);
    mf_log_cut(f, size);
    return merge(f, 1, size, 1);
}

/* ---- the manifest file's services ---- */

static int m_counter(rfs_io *io, uint32_t key, int set, int64_t delta, int64_t *old)
{
    rfs_io *h = MF(io)->home;
    return h->ops->counter(h, key, set, delta, old);
}

/* Application locks are taken on the manifest file, below the update lock's byte. */
static void lock_range(uint64_t *off, uint64_t *len)
{
    if (*off >= RFSM_MAX_SIZE)
        *off = RFSM_MAX_SIZE - 1;
    if (*len == 0 || *len > RFSM_MAX_SIZE - *off)
        *len = RFSM_MAX_SIZE - *off;
}

static int m_lock(rfs_io *io, uint64_t off, uint64_t len, unsigned mode, int wait_ms)
{
    rfs_io *h = MF(io)->home;
    lock_range(&off, &len);
    return h->ops->lock(h, off, len, mode, wait_ms);
}

static int m_unlock(rfs_io *io, uint64_t off, uint64_t len)
{
    rfs_io *h = MF(io)->home;
    lock_range(&off, &len);
    return h->ops->unlock(h, off, len);
}

static int m_remove(const rfs_io_ops *const *below, const char *name, const rfs_options *opts)
{
    if (rfs_is_manifest_name(name))
        return rfs_manifest_delete(name, opts);
    return rfs_io_gen_remove(below, name, opts);
}

static int m_close(rfs_io *io)
{
    mf_file *f = MF(io);
    rfs_status st = {RFS_OK, ""};
    if (f->objs) {
        rfs_status_first(&st, all_objects(f, 0, 0));
        rfs_status_first(&st, merge(f, 0, 0, 1));
        for (uint32_t i = 0; i < f->m->nobjects; i++) {
            if (!f->objs[i].io)
                continue;
            int rc = f->objs[i].io->ops->close(f->objs[i].io);
            /* A given-up replica's failure is reported already; a reader's close cannot lose
             * data (its reads returned right bytes), so a dead server it no longer needed is
             * no failure of the logical file. */
            if (!f->objs[i].gone && (f->flags & RFS_O_ACCMODE) != RFS_O_RDONLY)
                rfs_status_first(&st, rc);
        }
    }
    rfs_status dst = f->deferred;
    if (dst.rc != RFS_OK)
        rfs_status_first(&st, rfs_status_raise(&dst));
    if (f->home)
        rfs_status_first(&st, f->home->ops->close(f->home));
    for (uint32_t i = 0; f->objs && i < f->m->nobjects; i++)
        rfsm_rangeset_free(&f->objs[i].missed);
    for (uint32_t k = 0; f->written && k < f->ncols; k++)
        rfsm_rangeset_free(&f->written[k]);
    free(f->written);
    free(f->col_base);
    mf_log_close(f);
    rfsm_free(f->m);
    free(f->objs);
    pthread_mutex_destroy(&f->log_mu);
    pthread_mutex_destroy(&f->mu);
    free(f);
    return st.rc == RFS_OK ? RFS_OK : rfs_status_raise(&st);
}

static const rfs_io_ops ops = {
    .pread = m_pread,
    .pwrite = m_pwrite,
    .preadv = m_preadv,
    .pwritev = m_pwritev,
    .pwritev_gather = rfs_io_gen_pwritev_gather,
    .sync = m_sync,
    .flush = m_flush,
    .write_mark = rfs_io_gen_write_mark,
    .mark_answered = rfs_io_gen_mark_answered,
    .get_size = m_get_size,
    .set_size = m_set_size,
    .preallocate = rfs_io_gen_preallocate,
    .counter = m_counter,
    .lock = m_lock,
    .unlock = m_unlock,
    .set_view = rfs_io_gen_set_view,
    .view_read = rfs_io_gen_view_read,
    .view_write = rfs_io_gen_view_write,
    .close = m_close,
    .version = rfs_io_gen_version,
    .remove = m_remove,
    .start = rfs_io_gen_start,
    .end = rfs_io_gen_end,
    /* a logical file's collective calls are the objects' independent ones (no server group
     * sees the whole call): UNSUPPORTED sends the MPI-IO layer down its own two-phase path */
    .coll_join = rfs_io_gen_coll_join,
    .coll_listio = rfs_io_gen_coll_listio,
};

const rfs_io_ops *mf_ops(void)
{
    return &ops;
}
