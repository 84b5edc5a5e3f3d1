/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Export roots and the resolution of a client path to (export, path beneath it, rights).
 * Confinement within an export is confine.c's openat2(RESOLVE_BENEATH) from that export's own
 * root descriptor: a path naming one export can never reach another one through `..` or a
 * symbolic link, whatever the directories' layout on the server. */
#include "exports.h"
#include "capability.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "conn.h"
#include "quota.h"

static rfsd_export table[RFSD_MAX_EXPORTS];
static unsigned count;
static int named;
static const rfsd_config *start_cfg;

int rfsd_exports_named(void)
{
    return named;
}
unsigned rfsd_exports_count(void)
{
    return count;
}
const rfsd_export *rfsd_export_at(unsigned i)
{
    return i < count ? &table[i] : NULL;
}

const rfsd_export *rfsd_export_find(const char *name)
{
    for (unsigned i = 0; named && i < count; i++)
        if (!strcmp(table[i].name, name))
            return &table[i];
    return NULL;
}

/* "10G" -> 10737418240 (K, M, G, T: powers of 1024). 0, or -1. */
static int parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'K':
    case 'k':
        shift = 10;
        end++;
        break;
    case 'M':
    case 'm':
        shift = 20;
        end++;
        break;
    case 'G':
    case 'g':
        shift = 30;
        end++;
        break;
    case 'T':
    case 't':
        shift = 40;
        end++;
        break;
    default: break;
    }
    if (*end || v > (UINT64_MAX >> 1) >> shift)
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

static int name_ok(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n <= RFSD_EXPORT_NAME_MAX && strcmp(s, ".") && strcmp(s, "..") &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

static int open_root(rfsd_export *ex, const char *what)
{
    ex->root_fd = open(ex->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (ex->root_fd < 0) {
        fprintf(stderr, "rfsd: %s %s: %s\n", what, ex->path, strerror(errno));
        return -1;
    }
    return 0;
}

/* One --export "NAME DIR [quota=BYTES]". */
static int add_named(const char *spec)
{
    char buf[4096 + 256];
    if (strlen(spec) >= sizeof buf) {
        fprintf(stderr, "rfsd: --export: longer than %zu bytes\n", sizeof buf - 1);
        return -1;
    }
    strcpy(buf, spec);
    char *save = NULL, *name = strtok_r(buf, " \t", &save), *dir = strtok_r(NULL, " \t", &save);
    if (!name || !dir || !name_ok(name)) {
        fprintf(stderr,
                "rfsd: --export '%s': expected 'NAME DIR [quota=BYTES]' with NAME of 1..%u "
                "letters, digits, '.', '_' or '-' (not . or ..)\n",
                spec, RFSD_EXPORT_NAME_MAX);
        return -1;
    }
    if (rfsd_export_find(name)) {
        fprintf(stderr, "rfsd: --export: two exports are named '%s'\n", name);
        return -1;
    }
    uint64_t quota = 0;
    int has_quota = 0;
    for (char *kv = strtok_r(NULL, " \t", &save); kv; kv = strtok_r(NULL, " \t", &save)) {
        if (strncmp(kv, "quota=", 6) || has_quota || parse_bytes(kv + 6, &quota)) {
            fprintf(stderr,
                    "rfsd: export %s: unknown, repeated or malformed setting '%s' "
                    "(expected quota=BYTES, e.g. quota=500G)\n",
                    name, kv);
            return -1;
        }
        has_quota = 1;
    }
    rfsd_export *ex = &table[count];
    memset(ex, 0, sizeof *ex);
    ex->index = count;
    snprintf(ex->name, sizeof ex->name, "%s", name);
    if (!(ex->path = strdup(dir))) {
        fprintf(stderr, "rfsd: out of memory\n");
        return -1;
    }
    char what[RFSD_EXPORT_NAME_MAX + 16];
    snprintf(what, sizeof what, "export %s:", name);
    if (open_root(ex, what))
        return -1;
    named = 1;
    count++;
    if (has_quota && !(ex->quota = rfsd_quota_start(name, dir, quota)))
        return -1;
    return 0;
}

int rfsd_exports_init(const rfsd_config *cfg)
{
    start_cfg = cfg;
    if (!cfg->nexports) {
        rfsd_export *ex = &table[0];
        memset(ex, 0, sizeof *ex);
        if (!(ex->path = strdup(cfg->root)) || open_root(ex, "--root"))
            return -1;
        count = 1;
        return 0;
    }
    for (unsigned i = 0; i < cfg->nexports; i++)
        if (add_named(cfg->exports[i]))
            return -1;
    return 0;
}

int rfsd_exports_same(const rfsd_config *cfg)
{
    if (cfg->nexports != start_cfg->nexports)
        return 0;
    if (!cfg->nexports)
        return cfg->root && start_cfg->root && !strcmp(cfg->root, start_cfg->root);
    for (unsigned i = 0; i < cfg->nexports; i++)
        if (strcmp(cfg->exports[i], start_cfg->exports[i]))
            return 0;
    return 1;
}

void rfsd_exports_sync(void)
{
    for (unsigned i = 0; i < count; i++) {
        /* What was acknowledged reaches the disk before we say we are done. */
        int dfd = open(table[i].path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            continue;
        if (syncfs(dfd) != 0)
            RFS_LOGW("syncing the file system of export %s: %s",
                     table[i].name[0] ? table[i].name : table[i].path, strerror(errno));
        close(dfd);
    }
}

void rfsd_exports_close(void)
{
    for (unsigned i = 0; i < count; i++)
        if (table[i].root_fd >= 0)
            close(table[i].root_fd);
}

int rfsd_open_need(uint32_t flags)
{
    const uint32_t changes = RFS_O_CREAT | RFS_O_EXCL | RFS_O_TRUNC | RFS_O_APPEND;
    return (flags & RFS_O_ACCMODE) != RFS_O_RDONLY || (flags & changes) ? RFSD_NEED_WRITE
                                                                        : RFSD_NEED_READ;
}

static int check_rights(const rfsd_conn *c, const rfsd_export *ex, int need, const char *shown)
{
    uint64_t bit = (uint64_t)1 << ex->index;
    const char *what = named ? "export " : "the export";
    const char *name = named ? ex->name : "";
    if (!(c->who.rmask & bit))
        return rfs_fail(RFS_E_ACCESS, "%s: identity %s has no access to %s%s", shown, c->who.name,
                        what, name);
    if (need == RFSD_NEED_WRITE && !(c->who.wmask & bit))
        return rfs_fail(RFS_E_ROFS, "%s: %s%s is read-only for identity %s", shown, what, name,
                        c->who.name);
    return RFS_OK;
}

int rfsd_resolve(const rfsd_conn *c, const rfs_wpath *w, int need, int top, rfsd_path *p,
                 const rfsd_export **ex)
{
    int rc = rfsd_path_from_wire(w, p);
    if (rc)
        return rc;
    /* A grant's connection reads its one path and nothing else (docs/security.md) */
    if (c->who.granted && (need != RFSD_NEED_READ || strcmp(p->shown, c->who.grant_path) != 0))
        return rfs_fail(RFS_E_ACCESS,
                        "%s: this connection was authenticated by a third-party "
                        "copy grant and may only read %s",
                        p->shown, c->who.grant_path);
    if (c->who.capped && (rc = rfsd_cap_confine(&c->who, p->shown, need)))
        return rc;
    if (!named) {
        *ex = &table[0];
        return check_rights(c, *ex, need, p->shown);
    }
    /* p->rel has no leading '/': its first component is the export */
    char *rel = p->rel;
    size_t n = strcspn(rel, "/");
    if (!strcmp(rel, ".")) {
        *ex = NULL;
        if (top && need == RFSD_NEED_READ)
            return RFS_OK;
        return rfs_fail(need == RFSD_NEED_WRITE ? RFS_E_ROFS : RFS_E_ISDIR,
                        "%s: the top level only lists the exports%s; name a path inside one "
                        "(rfs:host:port:/EXPORT/path)",
                        p->shown, need == RFSD_NEED_WRITE ? " and cannot be changed" : "");
    }
    char name[RFSD_EXPORT_NAME_MAX + 1];
    const rfsd_export *found = NULL;
    if (n <= RFSD_EXPORT_NAME_MAX) {
        memcpy(name, rel, n);
        name[n] = '\0';
        found = rfsd_export_find(name);
    }
    if (!found)
        return rfs_fail(RFS_E_NOENT,
                        "%s: no export named '%.*s' on this server (rfs ls "
                        "rfs:host:port:/ lists those you may use)",
                        p->shown, (int)(n > RFSD_EXPORT_NAME_MAX ? RFSD_EXPORT_NAME_MAX : n), rel);
    if ((rc = check_rights(c, found, need, p->shown)))
        return rc;
    const char *rest = rel + n;
    while (*rest == '/')
        rest++;
    memmove(rel, *rest ? rest : ".", strlen(*rest ? rest : ".") + 1);
    *ex = found;
    return RFS_OK;
}

void rfsd_top_stat(rfs_stat_info *st)
{
    memset(st, 0, sizeof *st);
    st->type = RFS_TYPE_DIR;
    st->mode = 0555;
}

int rfsd_top_list(const rfsd_conn *c, uint32_t start, uint8_t *out, size_t cap, size_t *used,
                  uint32_t *count_out, uint32_t *next)
{
    *used = 0;
    *count_out = 0;
    *next = 0;
    uint32_t index = 0;
    for (unsigned i = 0; i < count; i++) {
        if (!(c->who.rmask & ((uint64_t)1 << table[i].index)))
            continue; /* an identity sees only the exports it may use */
        if (index++ < start)
            continue;
        struct stat s;
        rfs_list_entry e = {0};
        e.name.s = table[i].name;
        e.name.len = (uint16_t)strlen(table[i].name);
        e.type = RFS_TYPE_DIR;
        e.mode = 0755;
        if (fstat(table[i].root_fd, &s) == 0) {
            e.mode = (uint32_t)(s.st_mode & 07777);
            e.mtime_ns = (int64_t)s.st_mtim.tv_sec * 1000000000 + s.st_mtim.tv_nsec;
        }
        size_t k = rfs_list_entry_encode(&e, out + *used, cap - *used);
        if (k == 0) {
            *next = index - 1;
            break;
        }
        *used += k;
        (*count_out)++;
    }
    return RFS_OK;
}
