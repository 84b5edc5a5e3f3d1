/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The manifest layer's open file (manifest/io.c, open.c, parallel.c). */
#ifndef RFS_MANIFEST_MF_INTERNAL_H
#define RFS_MANIFEST_MF_INTERNAL_H

#include <pthread.h>

#include "client/runtime.h"
#include "common/err.h"
#include "manifest/manifest.h"
#include "rfs/rfs_manifest.h"

/* One object of the manifest as this process uses it. */
typedef struct mf_obj {
    rfs_io *io;   /* NULL: not open (its server failed at open, or it is stale) */
    int gone;     /* an operation on it failed: never used again by this process */
    int reported; /* its failure is the deferred one, or was reported: not again */
    /* Object ranges this process wrote to its column but not to it (its write failed, or it
     * was given up or known incomplete already), not merged into the manifest yet; whole when
     * a flush or sync of it failed (anything may be lost) or past RFSM_MAX_MISSING ranges. */
    int pending;
    rfsm_rangeset missed;
    /* An incomplete replica this process truncated to 0 (an O_TRUNC open): empty, so complete
     * again; the merge clears what the manifest says it misses (before adding `missed`). */
    int cleared;
    /* Its server's round trip (ms), measured right after the open; -1: unknown. Reads of a
     * replicated column start at the replica of the lowest (mf_fastest_replica). */
    double rtt_ms;
} mf_obj;

typedef struct mf_file {
    rfs_io io;
    rfs_runtime *rt;
    unsigned flags;
    pthread_mutex_t mu; /* guards what follows but m's immutable layout */
    rfsm *m;            /* as loaded at open (the layout never changes while open) */
    uint64_t size;      /* the logical size last seen in the stored manifest */
    rfs_io *home;       /* the manifest file */
    mf_obj *objs;       /* m->nobjects */
    uint64_t written_end;
    int dirty; /* something to merge: writes past size, missed ranges, written ranges */
    /* The dirty mapping (LN_Sync's): per column of each extent (columns of extent x start at
     * col_base[x]), the object ranges this process wrote since its last merge, so that a
     * replica added since it opened (which its writes never reached) is marked as missing
     * them. Coalesced and bounded as missing ranges are. */
    rfsm_rangeset *written;
    uint32_t *col_base;
    uint32_t ncols;
    int wrote; /* written holds ranges */
    rfs_status deferred;
} mf_file;

/* A job per object: the runs of one request that fall in one column (on one object). */
typedef struct mf_run {
    uint64_t obj_off, len;
    size_t pos; /* in the caller's packed buffer */
} mf_run;

/* Replica choice for reads (manifest/replica_pick.c). rtt_ms[r] of slot r: a round trip in
 * ms, MF_RTT_UNKNOWN (a candidate with no measure) or MF_NOT_CANDIDATE. Returns the slot to
 * try first: the first candidate in slot order, replaced by a later one only if that one's
 * round trip is lower by both MF_RTT_MARGIN (a factor) and MF_RTT_MIN_GAP_MS, so that noise
 * between equally near servers never moves reads around; 0 when there is no candidate. */
#define MF_RTT_UNKNOWN (-1.0)
#define MF_NOT_CANDIDATE (-2.0)
#define MF_RTT_MARGIN 1.25
#define MF_RTT_MIN_GAP_MS 0.2
uint32_t mf_fastest_replica(const double *rtt_ms, uint32_t n);
/* The slot of column c's replicas a read tries first: the fastest (as above) of the live
 * complete ones. */
uint32_t mf_read_start(mf_file *f, const rfsm_extent *e, uint32_t c);

/* Opens the objects and the manifest (manifest/open.c). */
int mf_open(rfs_runtime *rt, const char *name, unsigned flags, unsigned mode,
            const rfs_options *opts, const rfs_manifest_params *p, mf_file **out);

/* Marks object i given up (and, when writing, to be reported incomplete at the next sync):
 * f->mu not held. rc and the thread's message are kept as the deferred failure when none is
 * kept yet. What it missed is recorded by mf_obj_missed. */
void mf_obj_failed(mf_file *f, uint32_t i, int rc, int incomplete);
/* Object i missed object bytes [off, off+len) (len past 2^62: everything from off), or
 * everything when whole: recorded for the next merge. f->mu held. */
void mf_obj_missed(mf_file *f, uint32_t i, uint64_t off, uint64_t len, int whole);

/* Runs fn(arg + k * size) for k in [0, n) at once on the runtime's workers (the caller runs
 * the first); returns when all are done. */
void mf_parallel(rfs_runtime *rt, void *(*fn)(void *), void *arg, size_t size, size_t n);

const rfs_io_ops *mf_ops(void);

/* With a capability in o (manifest/cap_lease.c): a lease of it with `right` for the data
 * servers, signed by the home server of name, into lease (cap bytes), and objects->token
 * pointing to it. Without one, nothing changes (the data servers take the same token). */
int mf_cap_lease(const char *name, const rfs_options *o, unsigned right, char *lease, size_t cap,
                 rfs_options *objects);

#endif
