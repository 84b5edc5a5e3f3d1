/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The byte ranges an incomplete replica missed (docs/manifest.md "Consistency"): each process
 * collects them as its writes miss a replica, the manifest keeps their union per object. Both
 * are bounded: ranges that touch are coalesced, and past RFSM_MAX_MISSING ranges the set
 * becomes "the whole object", which costs a whole re-copy later but never a wrong read. */
#include "manifest/manifest.h"

#include <stdlib.h>
#include <string.h>

/* Inserts [off, off+len) into the sorted, disjoint, non-touching list v[0..*n), merging
 * what it meets or touches. Returns -1 when the list would pass max (or no memory). */
static int insert(rfsm_range **v, uint32_t *n, uint32_t *cap, uint64_t off, uint64_t len,
                  uint32_t max)
{
    if (len == 0)
        return 0;
    uint64_t end = off + len;
    /* The first range that ends at or after off (binary search: a list I/O request inserts
     * many runs). */
    uint32_t lo = 0, top = *n;
    while (lo < top) {
        uint32_t mid = lo + (top - lo) / 2;
        if ((*v)[mid].off + (*v)[mid].len < off)
            lo = mid + 1;
        else
            top = mid;
    }
    uint32_t hi = lo; /* ranges [lo, hi) meet or touch the new one */
    while (hi < *n && (*v)[hi].off <= end)
        hi++;
    if (hi > lo) {
        uint64_t s = (*v)[lo].off < off ? (*v)[lo].off : off;
        uint64_t e = (*v)[hi - 1].off + (*v)[hi - 1].len;
        if (e < end)
            e = end;
        (*v)[lo] = (rfsm_range){s, e - s};
        memmove(&(*v)[lo + 1], &(*v)[hi], (*n - hi) * sizeof **v);
        *n -= hi - lo - 1;
        return 0;
    }
    if (*n >= max)
        return -1;
    if (*n == *cap) {
        uint32_t nc = *cap ? *cap * 2 : 8;
        if (nc > max)
            nc = max;
        rfsm_range *nv = realloc(*v, nc * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv;
        *cap = nc;
    }
    memmove(&(*v)[lo + 1], &(*v)[lo], (*n - lo) * sizeof **v);
    (*v)[lo] = (rfsm_range){off, len};
    (*n)++;
    return 0;
}

void rfsm_rangeset_add(rfsm_rangeset *s, uint64_t off, uint64_t len)
{
    if (s->whole)
        return;
    if (off >= RFSM_MAX_SIZE)
        return;
    if (len > RFSM_MAX_SIZE - off)
        len = RFSM_MAX_SIZE - off;
    if (insert(&s->v, &s->n, &s->cap, off, len, RFSM_MAX_MISSING) != 0) {
        free(s->v);
        *s = (rfsm_rangeset){.whole = 1};
    }
}

void rfsm_rangeset_free(rfsm_rangeset *s)
{
    free(s->v);
    *s = (rfsm_rangeset){0};
}

int rfsm_object_misses(const rfsm_object *o, uint64_t off, uint64_t len)
{
    if (!(o->flags & RFSM_OBJ_STALE))
        return 0;
    if (o->nmissing == 0)
        return 1;
    uint64_t end = off + len;
    for (uint32_t i = 0; i < o->nmissing; i++)
        if (o->missing[i].off < end && off < o->missing[i].off + o->missing[i].len)
            return 1;
    return 0;
}

int rfsm_object_add_missing(rfsm_object *o, const rfsm_rangeset *s)
{
    int was_stale = (o->flags & RFSM_OBJ_STALE) != 0;
    if (was_stale && o->nmissing == 0)
        return 0; /* wholly suspect already */
    if (!s->whole && s->n == 0)
        return 0; /* a replica given up that missed nothing is still complete */
    if (s->whole) {
        free(o->missing);
        o->missing = NULL;
        o->nmissing = 0;
        o->flags |= RFSM_OBJ_STALE;
        return 1;
    }
    uint32_t cap = o->nmissing, n = o->nmissing;
    rfsm_range *v = o->missing;
    o->missing = NULL;
    int changed = !was_stale;
    for (uint32_t i = 0; i < s->n; i++) {
        /* Changed unless a stored range covers it already. */
        int covered = 0;
        for (uint32_t k = 0; k < n && !covered; k++)
            covered = v[k].off <= s->v[i].off && s->v[i].off + s->v[i].len <= v[k].off + v[k].len;
        changed |= !covered;
        if (insert(&v, &n, &cap, s->v[i].off, s->v[i].len, RFSM_MAX_MISSING) != 0) {
            free(v);
            o->nmissing = 0;
            o->flags |= RFSM_OBJ_STALE;
            return 1;
        }
    }
    o->missing = v;
    o->nmissing = n;
    o->flags |= RFSM_OBJ_STALE;
    return changed;
}

void rfsm_object_clear_missing(rfsm_object *o)
{
    free(o->missing);
    o->missing = NULL;
    o->nmissing = 0;
    o->flags &= ~RFSM_OBJ_STALE;
}

uint64_t rfsm_object_missing_bytes(const rfsm_object *o)
{
    if (!(o->flags & RFSM_OBJ_STALE))
        return 0;
    if (o->nmissing == 0)
        return UINT64_MAX;
    uint64_t t = 0;
    for (uint32_t i = 0; i < o->nmissing; i++)
        t += o->missing[i].len;
    return t;
}
