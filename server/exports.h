/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Export roots (docs/operations.md "Identities and exports"). Without --export lines rfsd
 * serves one unnamed export, --root, and client paths are relative to it (as always). With
 * them, the first component of a client path names the export ("/scratch/run42/out.h5" is
 * run42/out.h5 beneath the export "scratch") and "/" is a directory listing the exports the
 * identity may use. The table is built once at start and never changes (a reload keeps it). */
#ifndef RFSD_EXPORTS_H
#define RFSD_EXPORTS_H

#include <stdint.h>

#include "confine.h"
#include "rfs/rfs.h"
#include "server.h"

#define RFSD_EXPORT_NAME_MAX 64u

struct rfsd_quota;
struct rfsd_conn;

typedef struct rfsd_export {
    unsigned index;                      /* bit in an identity's rights masks */
    char name[RFSD_EXPORT_NAME_MAX + 1]; /* "" for the --root export */
    char *path;                          /* the directory on the server (never shown to clients) */
    int root_fd;                         /* O_PATH|O_DIRECTORY, opened once */
    struct rfsd_quota *quota;            /* NULL: no quota */
} rfsd_export;

/* What an operation needs of the identity's rights on the export it names. */
enum { RFSD_NEED_READ = 1, RFSD_NEED_WRITE = 2 };

/* Opens the export roots of cfg (--export lines, else --root) and counts the usage of those
 * with a quota. 0, or -1 after a message on stderr. */
int rfsd_exports_init(const rfsd_config *cfg);
/* 1 when exports are named (--export). */
int rfsd_exports_named(void);
unsigned rfsd_exports_count(void);
const rfsd_export *rfsd_export_at(unsigned i);
/* The export called name, or NULL. */
const rfsd_export *rfsd_export_find(const char *name);
/* 1 if the --export specs equal those rfsd started with (a reload cannot change exports). */
int rfsd_exports_same(const rfsd_config *cfg);
/* syncfs on every export's file system (shutdown). */
void rfsd_exports_sync(void);
/* Closes the roots. */
void rfsd_exports_close(void);

/* Resolves a client path for connection c: the export it lies in (*ex; NULL for "/" when
 * exports are named, allowed only when top is 1: STAT and LIST of the export list), the path
 * beneath that export's root (p->rel; p->shown keeps the client's whole path), and the
 * identity's right to do `need` there: RFS_E_ACCESS when it has no right on that export,
 * RFS_E_ROFS when it may only read, each naming the identity and the export. */
int rfsd_resolve(const struct rfsd_conn *c, const rfs_wpath *w, int need, int top, rfsd_path *p,
                 const rfsd_export **ex);
/* The rights an OPEN with these RFS_O_* flags needs. */
int rfsd_open_need(uint32_t flags);

/* "/" when exports are named: LIST gives one directory entry per export the identity may use,
 * STAT a directory. */
int rfsd_top_list(const struct rfsd_conn *c, uint32_t start, uint8_t *out, size_t cap, size_t *used,
                  uint32_t *count, uint32_t *next);
void rfsd_top_stat(rfs_stat_info *st);

#endif
