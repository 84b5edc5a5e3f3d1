/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The manifest layer's open file (manifest/io.c, open.c, parallel.c). */
#ifndef RFS_MANIFEST_MF_INTERNAL_H
#define RFS_MANIFEST_MF_INTERNAL_H

#include <pthread.h>

#include "client/runtime.h"
#include "common/capability.h"
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

/* A log object this process knows (its own, or one an overlay names), opened on first use. */
typedef struct mf_logref {
    char server[RFSM_MAX_URL + 1];
    char *path;
    rfs_io *io;
} mf_logref;

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
    /* Log-structured writes (manifest/log.c). log_mu (taken before mu, never after) guards
     * logs, nlogs and their handles; mu guards the rest. */
    int log_mode;         /* this open appends every write to its own log object */
    unsigned obj_mode;    /* the objects' permissions */
    rfs_options obj_opts; /* what the objects were opened with (logs are opened later) */
    char lease[RFS_CAP_MAX_LEN + 1];
    /* obj_opts' strings, owned here: the caller's rfs_options need not outlive the open */
    char *own_token, *own_compress;
    pthread_mutex_t log_mu;
    mf_logref *logs;
    uint32_t nlogs, logcap;
    uint32_t own_log; /* index in logs; RFSM_NO_OBJECT: none made yet */
    uint64_t log_len; /* bytes of the own log handed out so far */
    /* What reads resolve (normalized, log = index in logs): the stored manifest's overlays as
     * last seen, with this process's own not merged yet put over them. */
    rfsm_overlay *ov;
    uint32_t nov, ovcap;
    rfsm_overlay *pend; /* the own overlays not merged yet (normalized, log = own_log) */
    uint32_t npend, pendcap;
    int has_logs;   /* the manifest last seen has logs: flushes look at it again */
    int adopted;    /* a stored manifest was taken since the flag was last cleared */
    char **dropped; /* rfs names of logs a compaction dropped, to delete once stored */
    uint32_t ndropped;
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

/* The stripes' own read and write paths (manifest/io.c), below overlays: ext[0..n) with their
 * bytes packed in buf (total of them), every range within the file for a read. */
int mf_stripe_read(mf_file *f, const rfs_extent *ext, size_t n, void *buf, uint64_t total);
int mf_stripe_write(mf_file *f, const rfs_extent *ext, size_t n, const void *buf, size_t *done);
/* Syncs every live stripe object (manifest/io.c). */
int mf_sync_objects(mf_file *f);

/* ---- log-structured writes (manifest/log.c) ---- */

/* Pending own overlays past which a write merges at once (bounds this process's memory). */
#define MF_MAX_PENDING 4096u
/* A compaction copies at most this many bytes per round (bounds its memory). */
#define MF_COMPACT_CHUNK ((uint64_t)64 << 20)
/* The counter key on the manifest file that numbers log objects (even: MPI-IO's shared file
 * pointer keys are odd). */
#define MF_LOG_COUNTER_KEY 0x4C4F4730u

/* At open, after the objects: keeps what later log opens need, refuses log mode on a
 * replicated file, and takes the overlays of f->m. */
int mf_log_init(mf_file *f, const rfs_manifest_params *p, const rfs_options *objects,
                unsigned mode);
void mf_log_close(mf_file *f);
/* 1 when this process's writes go to its log: log mode, or overlays this process sees (a
 * direct write under one would stay hidden by it). */
int mf_log_wanted(mf_file *f);
/* Appends the packed bytes of ext[0..n) as one write to the own log, mapped at once for this
 * process's reads and at the next merge for everyone's. */
int mf_log_write(mf_file *f, const rfs_extent *ext, size_t n, const void *buf, uint64_t total);
/* A read of ranges within the file: the overlays' bytes from their logs (one list read per
 * log), the rest from the stripes. */
int mf_log_read(mf_file *f, const rfs_extent *ext, size_t n, void *buf, uint64_t total);
/* Takes m's logs and overlays as the stored ones (the own pending ones stay over them). */
int mf_log_adopt(mf_file *f, const rfsm *m);
/* A truncation to size: the own pending overlays and the view cut there. */
void mf_log_cut(mf_file *f, uint64_t size);
/* The store's compaction hook (rfsm_delta.compact): ctx is the mf_file. */
int mf_log_compact_locked(rfsm *m, void *ctx);
/* After a compaction: deletes the log objects it dropped when the manifest without them was
 * stored, else only lets them go. */
int mf_log_delete_dropped(mf_file *f, int stored);

/* With a capability in o (manifest/cap_lease.c): a lease of it with `right` for the data
 * servers, signed by the home server of name, into lease (cap bytes), and objects->token
 * pointing to it. Without one, nothing changes (the data servers take the same token). */
int mf_cap_lease(const char *name, const rfs_options *o, unsigned right, char *lease, size_t cap,
                 rfs_options *objects);

#endif
