/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The manifest's binary form (docs/manifest.md "Binary form"): little-endian, a fixed header
 * with the counts, the server table, the object table, the extent table, and a CRC-32C of it
 * all. The decoder trusts nothing: every count is checked against the limits and against the
 * bytes left before anything is allocated for it, and the decoded manifest must then pass the
 * same invariants the encoder asks of a manifest built in memory (rfsm_validate). */
#include "manifest/manifest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/err.h"
#include "rfs/rfs.h"

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

void rfsm_free(rfsm *m)
{
    if (!m)
        return;
    for (uint32_t i = 0; m->servers && i < m->nservers; i++)
        free(m->servers[i]);
    for (uint32_t i = 0; m->objects && i < m->nobjects; i++) {
        free(m->objects[i].path);
        free(m->objects[i].missing);
    }
    for (uint32_t i = 0; m->extents && i < m->nextents; i++)
        free(m->extents[i].objects);
    for (uint32_t i = 0; m->logs && i < m->nlogs; i++)
        free(m->logs[i].path);
    free(m->servers);
    free(m->objects);
    free(m->extents);
    free(m->logs);
    free(m->overlays);
    free(m);
}

/* ---- invariants ---- */

static int bad(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(const char *what, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return rfs_fail(RFS_E_PROTO, "manifest %s: %s", what, why);
}

static int check_extent(const rfsm *m, uint32_t i, const char *what)
{
    const rfsm_extent *e = &m->extents[i];
    if (e->len == 0)
        return bad(what, "extent %llu is empty", (unsigned long long)i);
    if (e->off >= RFSM_MAX_SIZE || e->len > RFSM_MAX_SIZE - e->off)
        return bad(what, "extent %llu ends beyond the largest logical offset (2^62)",
                   (unsigned long long)i);
    if (e->stripe_size == 0 || e->stripe_size > RFSM_MAX_STRIPE_SIZE)
        return bad(what, "extent %llu has stripe size %llu (1 B .. 1 GiB)", (unsigned long long)i,
                   (unsigned long long)e->stripe_size);
    if (e->stripe_count == 0 || e->stripe_count > RFSM_MAX_STRIPE_COUNT)
        return bad(what, "extent %llu has stripe count %llu (1 .. 256)", (unsigned long long)i,
                   (unsigned long long)e->stripe_count);
    if (e->replicas == 0 || e->replicas > RFSM_MAX_REPLICAS)
        return bad(what, "extent %llu has %llu replicas (1 .. 16)", (unsigned long long)i,
                   (unsigned long long)e->replicas);
    /* The object offset of the extent's last byte (row * unit size <= its logical offset,
     * so nothing here overflows) must stay below 2^62 too. */
    uint64_t last = e->len - 1, unit = last / e->stripe_size;
    uint64_t obj_last = (unit / e->stripe_count) * e->stripe_size + last % e->stripe_size;
    if (e->obj_off >= RFSM_MAX_SIZE || obj_last >= RFSM_MAX_SIZE - e->obj_off)
        return bad(what, "extent %llu reaches object offsets beyond 2^62", (unsigned long long)i);
    if (i > 0) {
        const rfsm_extent *p = &m->extents[i - 1];
        if (e->off < p->off + p->len)
            return bad(what, "extent %llu overlaps or precedes extent %llu", (unsigned long long)i,
                       (unsigned long long)i - 1);
    }
    size_t n = (size_t)e->stripe_count * e->replicas;
    for (uint32_t c = 0; c < e->stripe_count; c++) {
        int any = 0;
        for (uint32_t r = 0; r < e->replicas; r++)
            any |= rfsm_object_of(e, c, r) != RFSM_NO_OBJECT;
        if (!any)
            return bad(what, "extent %llu: column %llu has no replica", (unsigned long long)i,
                       (unsigned long long)c);
    }
    for (size_t k = 0; k < n; k++) {
        if (e->objects[k] == RFSM_NO_OBJECT)
            continue; /* an empty slot */
        if (e->objects[k] >= m->nobjects)
            return bad(what, "extent %llu names object %llu, beyond the object table",
                       (unsigned long long)i, (unsigned long long)e->objects[k]);
        /* A column's replicas on one object would be no replicas at all, and two columns on
         * one object would overwrite each other. */
        for (size_t j = 0; j < k; j++)
            if (e->objects[j] == e->objects[k])
                return bad(what, "extent %llu names object %llu twice", (unsigned long long)i,
                           (unsigned long long)e->objects[k]);
    }
    return RFS_OK;
}

/* An incomplete object's missing ranges: sorted, disjoint and not touching (as the merge
 * leaves them), none empty, inside 2^62; a complete object has none. */
static int check_missing(const rfsm_object *o, uint32_t i, const char *what)
{
    if (o->nmissing && !(o->flags & RFSM_OBJ_STALE))
        return bad(what, "object %llu is complete but names missing ranges", (unsigned long long)i);
    if (o->nmissing > RFSM_MAX_MISSING)
        return bad(what, "object %llu names %llu missing ranges (limit %u)", (unsigned long long)i,
                   (unsigned long long)o->nmissing, RFSM_MAX_MISSING);
    for (uint32_t k = 0; k < o->nmissing; k++) {
        const rfsm_range *r = &o->missing[k];
        if (r->len == 0 || r->off >= RFSM_MAX_SIZE || r->len > RFSM_MAX_SIZE - r->off)
            return bad(what, "object %llu: missing range %llu is empty or passes 2^62",
                       (unsigned long long)i, (unsigned long long)k);
        if (k > 0 && r->off <= o->missing[k - 1].off + o->missing[k - 1].len)
            return bad(
                what,
                "object %llu: missing range %llu overlaps, touches or precedes the one before",
                (unsigned long long)i, (unsigned long long)k);
    }
    return RFS_OK;
}

/* Version 3's log objects and overlays: every overlay inside the file (its end within the
 * size), sorted and not overlapping, naming bytes its log object records. */
static int check_logs(const rfsm *m, const char *what)
{
    if (m->nlogs > RFSM_MAX_LOGS || m->noverlays > RFSM_MAX_OVERLAYS)
        return bad(what, "%llu log objects and %llu overlays (limits %u, %u)",
                   (unsigned long long)m->nlogs, (unsigned long long)m->noverlays, RFSM_MAX_LOGS,
                   RFSM_MAX_OVERLAYS);
    for (uint32_t i = 0; i < m->nlogs; i++) {
        const rfsm_log *l = &m->logs[i];
        size_t pl = strlen(l->path);
        if (l->server >= m->nservers)
            return bad(what, "log %llu is on server %llu, beyond the server table",
                       (unsigned long long)i, (unsigned long long)l->server);
        if (pl == 0 || pl > RFSM_MAX_PATH || l->path[0] != '/')
            return bad(what, "log %llu has no absolute path (%llu bytes)", (unsigned long long)i,
                       (unsigned long long)pl);
        if (l->len > RFSM_MAX_SIZE)
            return bad(what, "log %llu records %llu bytes, beyond 2^62", (unsigned long long)i,
                       (unsigned long long)l->len);
    }
    for (uint32_t i = 0; i < m->noverlays; i++) {
        const rfsm_overlay *o = &m->overlays[i];
        if (o->len == 0 || o->off >= RFSM_MAX_SIZE || o->len > RFSM_MAX_SIZE - o->off)
            return bad(what, "overlay %llu is empty or ends beyond 2^62", (unsigned long long)i);
        if (o->off + o->len > m->size)
            return bad(what, "overlay %llu ends at %llu, beyond the size %llu",
                       (unsigned long long)i, (unsigned long long)(o->off + o->len),
                       (unsigned long long)m->size);
        if (o->log >= m->nlogs)
            return bad(what, "overlay %llu names log %llu, beyond the log table",
                       (unsigned long long)i, (unsigned long long)o->log);
        const rfsm_log *l = &m->logs[o->log];
        if (o->log_off > l->len || o->len > l->len - o->log_off)
            return bad(what,
                       "overlay %llu names log bytes [%llu, +%llu), beyond the %llu bytes its log "
                       "records",
                       (unsigned long long)i, (unsigned long long)o->log_off,
                       (unsigned long long)o->len, (unsigned long long)l->len);
        if (i > 0 && o->off < m->overlays[i - 1].off + m->overlays[i - 1].len)
            return bad(what, "overlay %llu overlaps or precedes overlay %llu",
                       (unsigned long long)i, (unsigned long long)i - 1);
    }
    return RFS_OK;
}

int rfsm_validate(const rfsm *m, const char *what)
{
    if (m->nservers == 0 || m->nservers > RFSM_MAX_SERVERS)
        return bad(what, "%llu servers (1 .. 256)", (unsigned long long)m->nservers);
    if (m->nobjects > RFSM_MAX_OBJECTS)
        return bad(what, "%llu objects (limit %llu)", (unsigned long long)m->nobjects,
                   (unsigned long long)RFSM_MAX_OBJECTS);
    if (m->nextents > RFSM_MAX_EXTENTS)
        return bad(what, "%llu extents (limit %llu)", (unsigned long long)m->nextents,
                   (unsigned long long)RFSM_MAX_EXTENTS);
    for (uint32_t i = 0; i < m->nservers; i++) {
        char url[RFSM_MAX_URL + 2];
        size_t l = strlen(m->servers[i]);
        if (l == 0 || l > RFSM_MAX_URL)
            return bad(what, "server %llu has a URL of %llu bytes", (unsigned long long)i,
                       (unsigned long long)l);
        memcpy(url, m->servers[i], l);
        memcpy(url + l, "/", 2);
        rfs_name n;
        if (rfs_parse_name(url, &n) != RFS_OK || strcmp(n.path, "/") != 0)
            return bad(what, "server %s is not an rfs://HOST:PORT URL", m->servers[i]);
    }
    for (uint32_t i = 0; i < m->nobjects; i++) {
        const rfsm_object *o = &m->objects[i];
        size_t l = strlen(o->path);
        if (o->server >= m->nservers)
            return bad(what, "object %llu is on server %llu, beyond the server table",
                       (unsigned long long)i, (unsigned long long)o->server);
        if (o->flags & ~RFSM_OBJ_KNOWN_FLAGS)
            return bad(what, "object %llu has unknown flags 0x%llx", (unsigned long long)i,
                       (unsigned long long)o->flags);
        if (l == 0 || l > RFSM_MAX_PATH || o->path[0] != '/')
            return bad(what, "object %llu has no absolute path (%llu bytes)", (unsigned long long)i,
                       (unsigned long long)l);
        int rc = check_missing(o, i, what);
        if (rc != RFS_OK)
            return rc;
    }
    for (uint32_t i = 0; i < m->nextents; i++) {
        int rc = check_extent(m, i, what);
        if (rc != RFS_OK)
            return rc;
    }
    uint64_t end =
        m->nextents ? m->extents[m->nextents - 1].off + m->extents[m->nextents - 1].len : 0;
    if (m->size > end)
        return bad(what, "size %llu lies beyond the last extent's end %llu",
                   (unsigned long long)m->size, (unsigned long long)end);
    return check_logs(m, what);
}

/* ---- decoding ---- */

typedef struct rd {
    const uint8_t *p;
    size_t left;
} rd;

static int take(rd *r, size_t n, const uint8_t **out)
{
    if (r->left < n)
        return -1;
    *out = r->p;
    r->p += n;
    r->left -= n;
    return 0;
}

/* A length-prefixed string of at most max bytes, without NUL bytes; NULL when truncated, too
 * long or out of memory (*why says which). */
static char *take_str(rd *r, size_t max, const char **why)
{
    const uint8_t *p;
    if (take(r, 2, &p) != 0) {
        *why = "truncated";
        return NULL;
    }
    size_t l = get16(p);
    if (l == 0 || l > max) {
        *why = "a string of a length out of range";
        return NULL;
    }
    if (take(r, l, &p) != 0) {
        *why = "truncated";
        return NULL;
    }
    if (memchr(p, 0, l)) {
        *why = "a NUL byte inside a string";
        return NULL;
    }
    char *s = malloc(l + 1);
    if (!s) {
        *why = "out of memory";
        return NULL;
    }
    memcpy(s, p, l);
    s[l] = 0;
    return s;
}

/* Version 3's log table and overlay table, each count checked against its limit and the
 * bytes left before its table is allocated. */
static int decode_logs(rd *r, rfsm *m, const char *what)
{
    const char *why = "truncated";
    const uint8_t *p;
    if (take(r, 4, &p) != 0)
        return bad(what, "truncated before the log table");
    uint32_t nl = get32(p);
    if (nl > RFSM_MAX_LOGS)
        return rfs_fail(RFS_E_TOOBIG, "manifest %s: %llu log objects (limit %u)", what,
                        (unsigned long long)nl, RFSM_MAX_LOGS);
    if ((uint64_t)nl * 15 > r->left)
        return bad(what, "truncated: %llu log objects do not fit in the data",
                   (unsigned long long)nl);
    m->logs = calloc(nl ? nl : 1, sizeof *m->logs);
    if (!m->logs)
        return rfs_fail(RFS_E_NOMEM, "manifest %s: out of memory", what);
    for (uint32_t i = 0; i < nl; i++) {
        if (take(r, 4, &p) != 0)
            return bad(what, "log %llu is truncated", (unsigned long long)i);
        m->logs[i].server = get32(p);
        if (!(m->logs[i].path = take_str(r, RFSM_MAX_PATH, &why)))
            return bad(what, "log %llu: %s", (unsigned long long)i, why);
        m->nlogs = i + 1; /* its path is m's to free from here */
        if (take(r, 8, &p) != 0)
            return bad(what, "log %llu is truncated", (unsigned long long)i);
        m->logs[i].len = get64(p);
    }
    if (take(r, 4, &p) != 0)
        return bad(what, "truncated before the overlay table");
    uint32_t no = get32(p);
    if (no > RFSM_MAX_OVERLAYS)
        return rfs_fail(RFS_E_TOOBIG, "manifest %s: %llu overlay extents (limit %u)", what,
                        (unsigned long long)no, RFSM_MAX_OVERLAYS);
    if ((uint64_t)no * 28 > r->left)
        return bad(what, "truncated: %llu overlay extents do not fit in the data",
                   (unsigned long long)no);
    m->overlays = malloc((no ? no : 1) * sizeof *m->overlays);
    if (!m->overlays)
        return rfs_fail(RFS_E_NOMEM, "manifest %s: out of memory", what);
    take(r, (size_t)no * 28, &p);
    for (uint32_t i = 0; i < no; i++, p += 28)
        m->overlays[i] = (rfsm_overlay){get64(p), get64(p + 8), get64(p + 16), get32(p + 24)};
    m->noverlays = no;
    return RFS_OK;
}

static int decode_body(rd *r, rfsm *m, unsigned version, const char *what)
{
    const char *why = "truncated";
    const uint8_t *p;
    /* Each table entry takes at least this many bytes: a count beyond what is left is refused
     * before its table is allocated. */
    if ((uint64_t)m->nservers * 3 > r->left)
        return bad(what, "truncated: %llu servers do not fit in the data",
                   (unsigned long long)m->nservers);
    m->servers = calloc(m->nservers ? m->nservers : 1, sizeof *m->servers);
    if (!m->servers)
        return rfs_fail(RFS_E_NOMEM, "manifest %s: out of memory", what);
    for (uint32_t i = 0; i < m->nservers; i++)
        if (!(m->servers[i] = take_str(r, RFSM_MAX_URL, &why)))
            return bad(what, "server %llu: %s", (unsigned long long)i, why);
    if ((uint64_t)m->nobjects * (version == RFSM_VERSION_1 ? 11 : 15) > r->left)
        return bad(what, "truncated: %llu objects do not fit in the data",
                   (unsigned long long)m->nobjects);
    m->objects = calloc(m->nobjects ? m->nobjects : 1, sizeof *m->objects);
    if (!m->objects)
        return rfs_fail(RFS_E_NOMEM, "manifest %s: out of memory", what);
    for (uint32_t i = 0; i < m->nobjects; i++) {
        if (take(r, 8, &p) != 0)
            return bad(what, "object %llu is truncated", (unsigned long long)i);
        m->objects[i].server = get32(p);
        m->objects[i].flags = get32(p + 4);
        if (!(m->objects[i].path = take_str(r, RFSM_MAX_PATH, &why)))
            return bad(what, "object %llu: %s", (unsigned long long)i, why);
        if (version == RFSM_VERSION_1)
            continue;
        if (take(r, 4, &p) != 0)
            return bad(what, "object %llu is truncated", (unsigned long long)i);
        uint32_t nm = get32(p);
        if (nm > RFSM_MAX_MISSING)
            return rfs_fail(RFS_E_TOOBIG,
                            "manifest %s: object %llu names %llu missing ranges (limit %u)", what,
                            (unsigned long long)i, (unsigned long long)nm, RFSM_MAX_MISSING);
        if (take(r, (size_t)nm * 16, &p) != 0)
            return bad(what, "object %llu's missing ranges are truncated", (unsigned long long)i);
        if (nm) {
            m->objects[i].missing = malloc(nm * sizeof *m->objects[i].missing);
            if (!m->objects[i].missing)
                return rfs_fail(RFS_E_NOMEM, "manifest %s: out of memory", what);
            m->objects[i].nmissing = nm;
            for (uint32_t k = 0; k < nm; k++)
                m->objects[i].missing[k] = (rfsm_range){get64(p + 16 * k), get64(p + 16 * k + 8)};
        }
    }
    if ((uint64_t)m->nextents * 44 > r->left)
        return bad(what, "truncated: %llu extents do not fit in the data",
                   (unsigned long long)m->nextents);
    m->extents = calloc(m->nextents ? m->nextents : 1, sizeof *m->extents);
    if (!m->extents)
        return rfs_fail(RFS_E_NOMEM, "manifest %s: out of memory", what);
    for (uint32_t i = 0; i < m->nextents; i++) {
        rfsm_extent *e = &m->extents[i];
        if (take(r, 40, &p) != 0)
            return bad(what, "extent %llu is truncated", (unsigned long long)i);
        e->off = get64(p);
        e->len = get64(p + 8);
        e->obj_off = get64(p + 16);
        e->stripe_size = get64(p + 24);
        e->stripe_count = get32(p + 32);
        e->replicas = get32(p + 36);
        if (e->stripe_count == 0 || e->stripe_count > RFSM_MAX_STRIPE_COUNT || e->replicas == 0 ||
            e->replicas > RFSM_MAX_REPLICAS)
            return bad(what, "extent %llu: stripe count or replicas out of range (%llu)",
                       (unsigned long long)i, (unsigned long long)e->stripe_count * e->replicas);
        size_t n = (size_t)e->stripe_count * e->replicas;
        if (take(r, n * 4, &p) != 0)
            return bad(what, "extent %llu's object list is truncated", (unsigned long long)i);
        e->objects = malloc(n * sizeof *e->objects);
        if (!e->objects)
            return rfs_fail(RFS_E_NOMEM, "manifest %s: out of memory", what);
        for (size_t k = 0; k < n; k++) {
            e->objects[k] = get32(p + 4 * k);
            if (version == RFSM_VERSION_1 && e->objects[k] == RFSM_NO_OBJECT)
                return bad(what, "extent %llu has an empty replica slot (version 1 has none)",
                           (unsigned long long)i);
        }
    }
    if (version == RFSM_VERSION_3) {
        int rc = decode_logs(r, m, what);
        if (rc != RFS_OK)
            return rc;
    }
    if (r->left != 0)
        return bad(what, "%llu bytes follow the %s table", (unsigned long long)r->left,
                   version == RFSM_VERSION_3 ? "overlay" : "extent");
    return RFS_OK;
}

int rfsm_decode(const void *buf, size_t len, const char *what, rfsm **out)
{
    const uint8_t *b = buf;
    *out = NULL;
    if (len < 6 || memcmp(b, RFSM_MAGIC, 4) != 0)
        return rfs_fail(RFS_E_PROTO, "manifest %s: not a manifest (no RFSM magic)", what);
    unsigned version = get16(b + 4);
    if (version != RFSM_VERSION && version != RFSM_VERSION_1 && version != RFSM_VERSION_3)
        return rfs_fail(RFS_E_VERSION,
                        "manifest %s: version %u, this client reads versions %u to %u only", what,
                        version, RFSM_VERSION_1, RFSM_VERSION_3);
    if (len < RFSM_HEADER_LEN + RFSM_TRAILER_LEN)
        return bad(what, "truncated: %llu bytes, less than a header", (unsigned long long)len);
    if (len > RFSM_MAX_BYTES)
        return rfs_fail(RFS_E_TOOBIG, "manifest %s: %zu bytes, over the limit of %u", what, len,
                        RFSM_MAX_BYTES);
    uint32_t total = get32(b + 8);
    if (total != len)
        return bad(what, "truncated or padded: the header says %llu bytes, there are %llu",
                   (unsigned long long)total, (unsigned long long)len);
    uint32_t crc = get32(b + len - RFSM_TRAILER_LEN);
    uint32_t want = rfs_crc32c(0, b, len - RFSM_TRAILER_LEN);
    if (crc != want)
        return bad(what, "bad checksum 0x%08llx (the data give 0x%08llx)", (unsigned long long)crc,
                   (unsigned long long)want);
    unsigned flags = get16(b + 6);
    if (flags != 0)
        return bad(what, "unknown header flags 0x%llx", (unsigned long long)flags);
    rfsm *m = calloc(1, sizeof *m);
    if (!m)
        return rfs_fail(RFS_E_NOMEM, "manifest %s: out of memory", what);
    m->nservers = get32(b + 12);
    m->nobjects = get32(b + 16);
    m->nextents = get32(b + 20);
    m->size = get64(b + 24);
    m->generation = get64(b + 32);
    int rc;
    if (m->nservers == 0 || m->nservers > RFSM_MAX_SERVERS || m->nobjects > RFSM_MAX_OBJECTS ||
        m->nextents > RFSM_MAX_EXTENTS) {
        rc = rfs_fail(RFS_E_TOOBIG,
                      "manifest %s: counts out of range (%u servers, %u objects, %u extents; "
                      "limits 1..%u, %u, %u)",
                      what, m->nservers, m->nobjects, m->nextents, RFSM_MAX_SERVERS,
                      RFSM_MAX_OBJECTS, RFSM_MAX_EXTENTS);
        /* nothing was allocated for the tables: free only the header */
        m->nservers = m->nobjects = m->nextents = 0;
        rfsm_free(m);
        return rc;
    }
    rd r = {b + RFSM_HEADER_LEN, len - RFSM_HEADER_LEN - RFSM_TRAILER_LEN};
    rc = decode_body(&r, m, version, what);
    if (rc == RFS_OK)
        rc = rfsm_validate(m, what);
    if (rc != RFS_OK) {
        rfsm_free(m);
        return rc;
    }
    *out = m;
    return RFS_OK;
}

/* ---- encoding ---- */

int rfsm_encode(const rfsm *m, const char *what, uint8_t **out, size_t *len)
{
    int rc = rfsm_validate(m, what);
    if (rc != RFS_OK)
        return rc;
    uint64_t n = RFSM_HEADER_LEN + RFSM_TRAILER_LEN;
    for (uint32_t i = 0; i < m->nservers; i++)
        n += 2 + strlen(m->servers[i]);
    for (uint32_t i = 0; i < m->nobjects; i++)
        n += 14 + strlen(m->objects[i].path) + 16ull * m->objects[i].nmissing;
    for (uint32_t i = 0; i < m->nextents; i++)
        n += 40 + 4ull * m->extents[i].stripe_count * m->extents[i].replicas;
    int v3 = rfsm_has_logs(m);
    if (v3) {
        n += 8 + 28ull * m->noverlays;
        for (uint32_t i = 0; i < m->nlogs; i++)
            n += 14 + strlen(m->logs[i].path);
    }
    if (n > RFSM_MAX_BYTES)
        return rfs_fail(RFS_E_TOOBIG, "manifest %s: would be %llu bytes, over the limit of %u",
                        what, (unsigned long long)n, RFSM_MAX_BYTES);
    uint8_t *b = calloc(1, (size_t)n);
    if (!b)
        return rfs_fail(RFS_E_NOMEM, "manifest %s: out of memory", what);
    memcpy(b, RFSM_MAGIC, 4);
    put16(b + 4, v3 ? RFSM_VERSION_3 : RFSM_VERSION);
    put16(b + 6, 0);
    put32(b + 8, (uint32_t)n);
    put32(b + 12, m->nservers);
    put32(b + 16, m->nobjects);
    put32(b + 20, m->nextents);
    put64(b + 24, m->size);
    put64(b + 32, m->generation);
    uint8_t *p = b + RFSM_HEADER_LEN;
    for (uint32_t i = 0; i < m->nservers; i++) {
        size_t l = strlen(m->servers[i]);
        put16(p, (uint16_t)l);
        memcpy(p + 2, m->servers[i], l);
        p += 2 + l;
    }
    for (uint32_t i = 0; i < m->nobjects; i++) {
        size_t l = strlen(m->objects[i].path);
        put32(p, m->objects[i].server);
        put32(p + 4, m->objects[i].flags);
        put16(p + 8, (uint16_t)l);
        memcpy(p + 10, m->objects[i].path, l);
        p += 10 + l;
        put32(p, m->objects[i].nmissing);
        p += 4;
        for (uint32_t k = 0; k < m->objects[i].nmissing; k++, p += 16) {
            put64(p, m->objects[i].missing[k].off);
            put64(p + 8, m->objects[i].missing[k].len);
        }
    }
    for (uint32_t i = 0; i < m->nextents; i++) {
        const rfsm_extent *e = &m->extents[i];
        put64(p, e->off);
        put64(p + 8, e->len);
        put64(p + 16, e->obj_off);
        put64(p + 24, e->stripe_size);
        put32(p + 32, e->stripe_count);
        put32(p + 36, e->replicas);
        p += 40;
        for (size_t k = 0; k < (size_t)e->stripe_count * e->replicas; k++, p += 4)
            put32(p, e->objects[k]);
    }
    if (v3) {
        put32(p, m->nlogs);
        p += 4;
        for (uint32_t i = 0; i < m->nlogs; i++) {
            size_t l = strlen(m->logs[i].path);
            put32(p, m->logs[i].server);
            put16(p + 4, (uint16_t)l);
            memcpy(p + 6, m->logs[i].path, l);
            put64(p + 6 + l, m->logs[i].len);
            p += 14 + l;
        }
        put32(p, m->noverlays);
        p += 4;
        for (uint32_t i = 0; i < m->noverlays; i++, p += 28) {
            put64(p, m->overlays[i].off);
            put64(p + 8, m->overlays[i].len);
            put64(p + 16, m->overlays[i].log_off);
            put32(p + 24, m->overlays[i].log);
        }
    }
    put32(p, rfs_crc32c(0, b, (size_t)n - RFSM_TRAILER_LEN));
    *out = b;
    *len = (size_t)n;
    return RFS_OK;
}
