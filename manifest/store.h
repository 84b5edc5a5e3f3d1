/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The manifest file on its home server (docs/manifest.md "Consistency"): reading it, making
 * it once, and merging a process's changes into it by an atomic read-modify-write under a
 * byte-range lock that every updater and reader of that manifest takes. */
#ifndef RFS_MANIFEST_STORE_H
#define RFS_MANIFEST_STORE_H

#include "manifest/manifest.h"
#include "rfs/rfs_io.h"

/* The byte the update lock covers: above every logical offset (RFSM_MAX_SIZE), so it never
 * meets the application's own byte-range locks on the same handle's file. */
#define RFSM_LOCK_OFF RFSM_MAX_SIZE
/* How long an update waits for another process's (the server bounds it to 30 s). */
#define RFSM_LOCK_WAIT_MS 30000

/* Reads and decodes the manifest through its open file home (a shared lock held meanwhile). */
int rfsm_store_load(rfs_io *home, rfsm **out);

typedef int (*rfsm_update_fn)(rfsm *m, void *ctx);

/* What one process changed, to merge into the stored manifest. */
typedef struct rfsm_delta {
    uint64_t written_end; /* the logical end of this process's writes (0: none) */
    int truncate;         /* 1: the size is set to truncate_to (then written_end applies) */
    uint64_t truncate_to;
    /* Objects this process found incomplete, as indices of `base` (the manifest it loaded at
     * open: the stored one may have been augmented or trimmed since, so objects are matched
     * by server and path), each with the object ranges it missed (missed[k] of stale[k];
     * missed NULL, or a whole set: the whole object). */
    const rfsm *base;
    const uint32_t *stale;
    const rfsm_rangeset *missed;
    const uint8_t
        *cleared; /* cleared[k]: stale[k] is complete again before missed[k] (NULL: none) */
    size_t nstale;
    /* The object ranges this process wrote, per column of base's extents in order (extent 0's
     * columns, then extent 1's, ...; NULL: none): a replica of that column the stored manifest
     * has and base had not (augmented since) never got them, and is marked missing them. */
    const rfsm_rangeset *written;
    /* The stored size this process saw last (0: unknown). A delta that does not reach past
     * it most likely changes nothing: that is checked first under the shared lock, which the
     * other processes' checks share, and only a delta that does change something waits for
     * the exclusive one (docs/manifest.md "Consistency"). */
    uint64_t seen_size;
    /* Log-structured writes: this process's log object (server URL and path; NULL: none),
     * the bytes of it handed out (its recorded length is raised to that), and its overlays
     * not merged yet (their log fields ignored), put over the stored ones in order before a
     * truncation applies. */
    const char *log_server, *log_path;
    uint64_t log_len;
    const rfsm_overlay *overlays;
    size_t noverlays;
    /* Compaction (NULL: none): called under the exclusive lock on the stored manifest when
     * the overlays would pass RFSM_MAX_OVERLAYS (before the delta) or pass RFSM_COMPACT_AT or
     * the logs RFSM_MAX_LOGS - 1 (after it); returns 1 (it changed m) or an error, which
     * fails the merge. */
    rfsm_update_fn compact;
    void *compact_ctx;
} rfsm_delta;

/* Under the exclusive update lock: reads the stored manifest, applies d (size: truncate_to
 * when truncating, then at least written_end; stale objects marked, their missing ranges
 * merged) and, when that changed anything, bumps the generation, writes it back in place and
 * syncs it. *merged (may be NULL) gets the result. A delta within d->seen_size that changes
 * nothing is settled under the shared lock. */
int rfsm_store_merge(rfs_io *home, const rfsm_delta *d, rfsm **merged);

/* The general form: under the exclusive lock, fn(stored manifest, ctx) edits it in place and
 * returns 1 (changed: generation + 1, written back, synced), 0 (nothing to write) or an
 * RFS_E_* error (nothing written; the error returned). */
int rfsm_store_update(rfs_io *home, rfsm_update_fn fn, void *ctx, rfsm **merged);

/* The index in m of the object on server URL `server` at `path`, or RFSM_NO_OBJECT. */
uint32_t rfsm_find_object(const rfsm *m, const char *server, const char *path);

#endif
