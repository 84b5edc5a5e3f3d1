/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Overlays of log-structured writes (docs/manifest.md "Log-structured writes"): the list of
 * logical ranges whose bytes live in log objects rather than in the stripes. It is kept
 * normalized (sorted by offset, not overlapping) by putting each new overlay over the older
 * ones, so that a read finds what covers it by binary search and the list never holds bytes
 * nobody can read any more. Pure data, no I/O. */
#include "manifest/manifest.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"

int rfsm_has_logs(const rfsm *m)
{
    return m->nlogs > 0 || m->noverlays > 0;
}

uint32_t rfsm_find_log(const rfsm *m, const char *server, const char *path)
{
    for (uint32_t i = 0; i < m->nlogs; i++)
        if (!strcmp(m->logs[i].path, path) && !strcmp(m->servers[m->logs[i].server], server))
            return i;
    return RFSM_NO_OBJECT;
}

int rfsm_add_log(rfsm *m, const char *server, const char *path, uint64_t len, uint32_t *idx)
{
    uint32_t i = rfsm_find_log(m, server, path);
    if (i != RFSM_NO_OBJECT) {
        if (m->logs[i].len < len)
            m->logs[i].len = len;
        *idx = i;
        return RFS_OK;
    }
    uint32_t s = 0;
    while (s < m->nservers && strcmp(m->servers[s], server) != 0)
        s++;
    if (s == m->nservers)
        return rfs_fail(RFS_E_INVAL, "log %s%s is on a server the manifest does not name", server,
                        path);
    if (m->nlogs >= RFSM_MAX_LOGS)
        return rfs_fail(RFS_E_TOOBIG,
                        "the manifest holds %u log objects already (the limit): rfs manifest "
                        "compact drops the unused ones",
                        m->nlogs);
    rfsm_log *nv = realloc(m->logs, (m->nlogs + 1) * sizeof *nv);
    char *p = strdup(path);
    if (nv)
        m->logs = nv;
    if (!nv || !p) {
        free(p);
        return rfs_fail(RFS_E_NOMEM, "out of memory");
    }
    m->logs[m->nlogs] = (rfsm_log){s, p, len};
    *idx = m->nlogs++;
    return RFS_OK;
}

/* The first overlay of v[0..n) that ends after off. */
static uint32_t first_after(const rfsm_overlay *v, uint32_t n, uint64_t off)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (v[mid].off + v[mid].len <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* b continues a: logically adjacent, and adjacent in the same log. */
static int continues(const rfsm_overlay *a, const rfsm_overlay *b)
{
    return a->log == b->log && a->off + a->len == b->off && a->log_off + a->len == b->log_off;
}

int rfsm_overlay_put(rfsm_overlay **vp, uint32_t *np, uint32_t *capp, rfsm_overlay o)
{
    if (o.len == 0)
        return RFS_OK;
    rfsm_overlay *v = *vp;
    uint32_t n = *np;
    uint64_t a = o.off, b = o.off + o.len;
    uint32_t i = first_after(v, n, a), j = i;
    while (j < n && v[j].off < b)
        j++;
    /* What is left of the first and last covered ones, outside [a, b). */
    int has_l = i < j && v[i].off < a, has_r = i < j && v[j - 1].off + v[j - 1].len > b;
    rfsm_overlay l = has_l ? v[i] : o, r = has_r ? v[j - 1] : o;
    if (has_l)
        l.len = a - l.off;
    if (has_r) {
        r.log_off += b - r.off;
        r.len = r.off + r.len - b;
        r.off = b;
    }
    uint32_t put = 1 + (uint32_t)has_l + (uint32_t)has_r;
    uint64_t nn = (uint64_t)n - (j - i) + put;
    if (nn > RFSM_MAX_OVERLAYS)
        return rfs_fail(RFS_E_TOOBIG, "more than %u overlay extents", RFSM_MAX_OVERLAYS);
    if (nn > *capp) {
        uint32_t nc = *capp ? *capp : 16;
        while (nc < nn)
            nc = nc > RFSM_MAX_OVERLAYS / 2 ? RFSM_MAX_OVERLAYS : nc * 2;
        rfsm_overlay *nv = realloc(v, nc * sizeof *nv);
        if (!nv)
            return rfs_fail(RFS_E_NOMEM, "out of memory");
        *vp = v = nv;
        *capp = nc;
    }
    memmove(&v[i + put], &v[j], (n - j) * sizeof *v);
    uint32_t k = i;
    if (has_l)
        v[k++] = l;
    uint32_t at = k;
    v[k++] = o;
    if (has_r)
        v[k++] = r;
    n = (uint32_t)nn;
    /* Join the neighbours it continues (a sequential writer keeps one overlay). */
    if (at + 1 < n && continues(&v[at], &v[at + 1])) {
        v[at].len += v[at + 1].len;
        memmove(&v[at + 1], &v[at + 2], (n - at - 2) * sizeof *v);
        n--;
    }
    if (at > 0 && continues(&v[at - 1], &v[at])) {
        v[at - 1].len += v[at].len;
        memmove(&v[at], &v[at + 1], (n - at - 1) * sizeof *v);
        n--;
    }
    *np = n;
    return RFS_OK;
}

void rfsm_overlays_cut(rfsm_overlay *v, uint32_t *n, uint64_t end)
{
    uint32_t k = first_after(v, *n, end);
    /* v[k] is the first that ends past end: kept cut when it starts before end */
    if (k < *n && v[k].off < end) {
        v[k].len = end - v[k].off;
        k++;
    }
    *n = k;
}

typedef struct outv {
    rfsm_resolved *v;
    size_t n, cap;
} outv;

static int emit(outv *o, size_t pos, uint64_t len, uint64_t src, uint32_t log)
{
    if (len == 0)
        return RFS_OK;
    if (o->n && o->v[o->n - 1].log == log && o->v[o->n - 1].pos + o->v[o->n - 1].len == pos &&
        o->v[o->n - 1].src + o->v[o->n - 1].len == src) {
        o->v[o->n - 1].len += len; /* continues the last piece */
        return RFS_OK;
    }
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 16;
        rfsm_resolved *nv = realloc(o->v, nc * sizeof *nv);
        if (!nv)
            return rfs_fail(RFS_E_NOMEM, "out of memory");
        o->v = nv;
        o->cap = nc;
    }
    o->v[o->n++] = (rfsm_resolved){pos, len, src, log};
    return RFS_OK;
}

int rfsm_resolve(const rfsm_overlay *v, size_t nv, const rfs_extent *ext, size_t n,
                 rfsm_resolved **out, size_t *nout)
{
    outv o = {0};
    size_t pos = 0;
    int rc = RFS_OK;
    for (size_t x = 0; x < n && rc == RFS_OK; x++) {
        uint64_t a = ext[x].offset, b = a + ext[x].length;
        uint64_t at = a;
        for (uint32_t k = first_after(v, (uint32_t)nv, a); k < nv && v[k].off < b && rc == RFS_OK;
             k++) {
            uint64_t s = v[k].off > at ? v[k].off : at;
            uint64_t e = v[k].off + v[k].len < b ? v[k].off + v[k].len : b;
            rc = emit(&o, pos + (size_t)(at - a), s - at, at, RFSM_NO_OBJECT);
            if (rc == RFS_OK)
                rc =
                    emit(&o, pos + (size_t)(s - a), e - s, v[k].log_off + (s - v[k].off), v[k].log);
            at = e;
        }
        if (rc == RFS_OK)
            rc = emit(&o, pos + (size_t)(at - a), b - at, at, RFSM_NO_OBJECT);
        pos += (size_t)ext[x].length;
    }
    if (rc != RFS_OK) {
        free(o.v);
        return rc;
    }
    *out = o.v;
    *nout = o.n;
    return RFS_OK;
}
