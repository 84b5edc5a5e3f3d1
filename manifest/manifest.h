/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The manifest of one logical file stored over several servers (docs/manifest.md; the exNode
 * of mpiio-logistical-networking.txt sec. 3): which servers hold which objects, and which
 * bytes of which objects are which logical bytes, with replicas. Pure data and codecs, no I/O:
 * the binary form (manifest/format.c) is what lives on the home server, the JSON form
 * (manifest/json.c) is for people and tools, and the layout functions (manifest/layout.c)
 * build a striped manifest and map logical ranges onto objects. */
#ifndef RFS_MANIFEST_MANIFEST_H
#define RFS_MANIFEST_MANIFEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rfs/rfs.h"

/* Binary format: "RFSM", version 2 (docs/manifest.md "Binary form"); version 1 (no missing
 * ranges, no empty replica slots) is still read, and written back as version 2. Version 3
 * adds the log objects and overlay extents of log-structured writes after the extent table;
 * only a manifest that has some is written as version 3, so that clients reading versions 1
 * and 2 only keep reading every other file (and refuse a version 3 one by its version). */
#define RFSM_MAGIC "RFSM"
#define RFSM_VERSION 2u
#define RFSM_VERSION_1 1u
#define RFSM_VERSION_3 3u
#define RFSM_HEADER_LEN 40u
#define RFSM_TRAILER_LEN 4u /* CRC-32C of every byte before it */

/* Hard limits: a manifest over any of them is refused whole, before anything is allocated
 * for it, so a hostile manifest costs at most RFSM_MAX_BYTES of memory. */
#define RFSM_MAX_BYTES (16u << 20)
#define RFSM_MAX_SERVERS 256u
#define RFSM_MAX_OBJECTS 65536u
#define RFSM_MAX_EXTENTS 65536u
#define RFSM_MAX_REPLICAS 16u
#define RFSM_MAX_STRIPE_COUNT 256u
#define RFSM_MAX_URL 512u
#define RFSM_MAX_PATH 4095u
/* Missing ranges one incomplete replica records; past it, the whole object counts as missing
 * (bounded memory in every process and in the manifest, whatever the write pattern). */
#define RFSM_MAX_MISSING 1024u
/* Logical offsets end below 2^62: far beyond any file, and room above for the byte the
 * manifest's update lock takes on the home server (manifest/store.c). */
#define RFSM_MAX_SIZE (1ull << 62)
#define RFSM_MAX_STRIPE_SIZE (1ull << 30)
/* Log objects and overlay extents a manifest may hold (docs/manifest.md "Log-structured
 * writes"). The merge compacts well before the overlay limit (RFSM_COMPACT_AT). */
#define RFSM_MAX_LOGS 4096u
#define RFSM_MAX_OVERLAYS 65536u
#define RFSM_COMPACT_AT 4096u

/* Object flags. */
#define RFSM_OBJ_STALE \
    0x1u /* a write to this replica failed: it misses the bytes `missing` names */
#define RFSM_OBJ_KNOWN_FLAGS RFSM_OBJ_STALE

/* A replica slot of an extent that holds no object (a replica trimmed from one column only,
 * or added to another only). Every column keeps at least one object. */
#define RFSM_NO_OBJECT 0xFFFFFFFFu

/* Bytes [off, off+len) of an object (object offsets, not logical ones). */
typedef struct rfsm_range {
    uint64_t off, len;
} rfsm_range;

typedef struct rfsm_object {
    uint32_t server; /* index into servers */
    uint32_t flags;  /* RFSM_OBJ_* */
    char *path;      /* absolute path on that server */
    /* Of a STALE object: the bytes it missed, sorted, disjoint, not touching, at most
     * RFSM_MAX_MISSING; none (nmissing 0) means the whole object is suspect. A complete
     * object has none. */
    uint32_t nmissing;
    rfsm_range *missing;
} rfsm_object;

/* Logical bytes [off, off+len) striped RAID-0 fashion over stripe_count columns of
 * stripe_size units, each column kept by `replicas` objects: logical byte off+x is in unit
 * u = x / stripe_size, column u % stripe_count, at object offset
 * obj_off + (u / stripe_count) * stripe_size + x % stripe_size. A plain mapping of a range
 * onto one object is the case stripe_count 1. */
typedef struct rfsm_extent {
    uint64_t off, len;
    uint64_t obj_off;
    uint64_t stripe_size;
    uint32_t stripe_count, replicas;
    uint32_t *objects; /* stripe_count * replicas: column c's replica r is objects[c*replicas+r] */
} rfsm_extent;

/* A log object: one process's appended packed writes (one per process per open in log
 * mode), on one server, never replicated. `len` is how many of its bytes overlays may name. */
typedef struct rfsm_log {
    uint32_t server;
    char *path;
    uint64_t len;
} rfsm_log;

/* Logical bytes [off, off+len) are bytes [log_off, log_off+len) of log object `log`, over
 * whatever the stripes hold there. Overlays apply in order: a later one wins where they
 * overlap (the order of the merges that brought them). */
typedef struct rfsm_overlay {
    uint64_t off, len;
    uint64_t log_off;
    uint32_t log;
} rfsm_overlay;

typedef struct rfsm {
    uint64_t size;       /* logical end of file */
    uint64_t generation; /* counts updates of the stored manifest */
    uint32_t nservers, nobjects, nextents;
    char **servers; /* "rfs://host:port" (or rfss:, rfs+ucx:), no path */
    rfsm_object *objects;
    rfsm_extent *extents; /* sorted by off, not overlapping */
    /* Version 3: log objects and the overlays over the stripes, every overlay's end within
     * size and its log bytes within its log's len. */
    uint32_t nlogs, noverlays;
    rfsm_log *logs;
    rfsm_overlay *overlays;
} rfsm;

void rfsm_free(rfsm *m);

/* Strict decoder: RFS_OK and a new manifest in *out, or RFS_E_PROTO (RFS_E_VERSION for an
 * unknown version, RFS_E_TOOBIG over a limit) with a message naming what is wrong: truncated
 * data, bad checksum, unknown flags, counts over the limits or beyond the data, an index out
 * of range, overlapping or overflowing extents, a size beyond the extents. `what` names the
 * manifest in messages. Nothing of a refused manifest is kept. */
int rfsm_decode(const void *buf, size_t len, const char *what, rfsm **out);
/* Checks the invariants rfsm_decode enforces on a manifest built in memory. */
int rfsm_validate(const rfsm *m, const char *what);
/* Encodes (after rfsm_validate) into a new buffer *out of *len bytes (free()). */
int rfsm_encode(const rfsm *m, const char *what, uint8_t **out, size_t *len);
/* The JSON form (docs/manifest.md "JSON form"). */
void rfsm_write_json(FILE *out, const rfsm *m);

/* A striped layout as the hints rfs_servers, rfs_stripe_size, rfs_stripe_count and
 * rfs_replicas describe it. */
typedef struct rfsm_layout {
    char **servers; /* data servers, "rfs://host:port"; servers[0] the first column's */
    uint32_t nservers;
    uint64_t stripe_size;
    uint32_t stripe_count, replicas;
} rfsm_layout;

/* The first_server of a new file's layout for rfs_manifest_params.depot_slot: 0 for slot 0
 * (the first server), else (slot - 1) % nservers. */
uint32_t rfsm_first_server(unsigned depot_slot, uint32_t nservers);

/* 1 MiB: docs/manifest.md "Why 1 MiB". */
#define RFSM_DEFAULT_STRIPE_SIZE (1ull << 20)

/* A new manifest of one extent [0, RFSM_MAX_SIZE) striped as l says, its objects named
 * `<base>.c<column>.r<replica>` on server (first_server + column + replica) % nservers
 * (depot reordering, docs/manifest.md "Where a new file starts"; rfsm_make_striped: 0, column
 * 0 on servers[0]). The placement is recorded object by object, so readers need no rule to
 * find it. */
int rfsm_make_striped_at(const rfsm_layout *l, uint32_t first_server, const char *base, rfsm **out);
int rfsm_make_striped(const rfsm_layout *l, const char *base, rfsm **out);

/* One contiguous piece of a logical range inside one column of one extent. */
typedef struct rfsm_piece {
    uint64_t log_off; /* logical offset */
    uint64_t obj_off; /* offset in the column's objects */
    uint64_t len;
    uint32_t extent, column;
} rfsm_piece;

/* Calls fn for each piece of [off, off+len) in logical order; bytes outside every extent are
 * skipped (fn is told nothing of them). fn's non-zero return stops the walk and is returned. */
typedef int (*rfsm_piece_fn)(void *ctx, const rfsm_piece *p);
int rfsm_map(const rfsm *m, uint64_t off, uint64_t len, rfsm_piece_fn fn, void *ctx);
/* How many bytes column `column` of extent `e` holds for logical bytes [e.off, end): the
 * size its objects have when the file ends at `end`. */
uint64_t rfsm_column_bytes(const rfsm_extent *e, uint32_t column, uint64_t end);
/* Object index of column c, replica r of extent e (RFSM_NO_OBJECT: an empty slot). */
static inline uint32_t rfsm_object_of(const rfsm_extent *e, uint32_t c, uint32_t r)
{
    return e->objects[(size_t)c * e->replicas + r];
}

/* ---- missing ranges (manifest/ranges.c) ---- */

/* A growing set of object byte ranges, coalesced as they come; past RFSM_MAX_MISSING ranges
 * (or out of memory) it becomes "whole" and forgets them. */
typedef struct rfsm_rangeset {
    rfsm_range *v;
    uint32_t n, cap;
    int whole;
} rfsm_rangeset;

void rfsm_rangeset_add(rfsm_rangeset *s, uint64_t off, uint64_t len);
void rfsm_rangeset_free(rfsm_rangeset *s);
/* 1 when [off, off+len) meets a missing range of object o (any byte, when it is wholly
 * suspect); 0 for a complete object. */
int rfsm_object_misses(const rfsm_object *o, uint64_t off, uint64_t len);
/* Marks o incomplete with the ranges of s added to what it misses (s whole, or o already
 * wholly suspect: whole). Returns 1 when o changed, 0 when it covered s already, <0 out of
 * memory (o then wholly suspect, which is always safe). */
int rfsm_object_add_missing(rfsm_object *o, const rfsm_rangeset *s);
/* o complete again (a repair copied it whole). */
void rfsm_object_clear_missing(rfsm_object *o);
/* The bytes o misses in total (UINT64_MAX: the whole object). */
uint64_t rfsm_object_missing_bytes(const rfsm_object *o);

/* ---- overlays (manifest/overlay.c) ---- */

/* 1 when m has log objects or overlays (then it is stored as version 3). */
int rfsm_has_logs(const rfsm *m);
/* The log of m on server URL `server` at `path`, or RFSM_NO_OBJECT. */
uint32_t rfsm_find_log(const rfsm *m, const char *server, const char *path);
/* Adds the log (server URL, path) to m, or raises its len to at least len when m has it;
 * its index in *idx. RFS_E_TOOBIG past RFSM_MAX_LOGS. */
int rfsm_add_log(rfsm *m, const char *server, const char *path, uint64_t len, uint32_t *idx);
/* Puts overlay o over m's overlays (sorted by offset, not overlapping: the merge keeps them
 * normalized, so a read finds its overlays by binary search): the parts of older ones it
 * covers go, and it joins a neighbour that continues it in the same log. RFS_E_TOOBIG past
 * RFSM_MAX_OVERLAYS (m unchanged), RFS_E_NOMEM. */
int rfsm_overlay_put(rfsm_overlay **v, uint32_t *n, uint32_t *cap, rfsm_overlay o);
/* Cuts every overlay of v[0..*n) at logical offset end (those wholly past it go). */
void rfsm_overlays_cut(rfsm_overlay *v, uint32_t *n, uint64_t end);

/* One piece of a request resolved through overlays: its bytes at `pos` in the request's
 * packed buffer come from log `log` at `src`, or (log RFSM_NO_OBJECT) from the stripes at
 * logical offset `src`. */
typedef struct rfsm_resolved {
    size_t pos;
    uint64_t len;
    uint64_t src;
    uint32_t log;
} rfsm_resolved;

/* Resolves logical ranges ext[0..n) (their bytes packed in that order) over the normalized
 * overlays v[0..nv): the pieces, in buffer order, into *out (malloc'd, *nout of them).
 * RFS_E_NOMEM or RFS_OK. */
int rfsm_resolve(const rfsm_overlay *v, size_t nv, const rfs_extent *ext, size_t n,
                 rfsm_resolved **out, size_t *nout);

/* Copies "rfs://host:port" (the scheme kept, path dropped) of an rfs name into out;
 * RFS_E_NAME when it is not one. */
int rfsm_server_of_name(const char *name, char *out, size_t cap);

#endif
