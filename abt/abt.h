/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Active buffering with threads (rfs-abt.txt sec. 2.2, 3.2, 5.2) as a stacked rfs_io layer.
 *
 * Writes are copied into buffers of the file's size from its runtime's pool (allocated on
 * demand up to a memory cap shared by the runtime's files) and the call returns; background
 * threads send the buffered writes to the layer below in order. When the cap is reached, the
 * write goes to a local journal file in the file's staging directory instead (foreground
 * staging). During computation phases a stager moves buffered data to the journal ahead of
 * the next output phase as eq. (1) says (background staging). Errors of background writes
 * surface at the next sync or close of the file, or at rfs_abt_finalize; unsent staged data
 * stays in the journal for `rfs recover`.
 * Background threads never call MPI.
 */
#ifndef RFS_ABT_H
#define RFS_ABT_H

#include <stdint.h>

#include "rfs/rfs_io.h"

typedef struct rfs_abt_config {
    uint64_t buffer_size;    /* bytes per buffer (hint rfs_abt_buffer_size) */
    uint64_t max_memory;     /* cap on buffer memory (hint rfs_abt_max_memory); 0: default */
    const char *staging_dir; /* hint rfs_staging_dir; NULL: $RFS_STAGING_DIR, $TMPDIR, /tmp */
    int threads;             /* background sender threads (hint rfs_abt_threads) */
    int defer_close;         /* close returns once writes are queued (hint rfs_defer_close) */
    int background_staging;  /* eq. (1) stager on/off (hint rfs_abt_bg_staging) */
    double interval_s;       /* I: time between output phases; 0: learn it */
    uint64_t output_bytes;   /* N: bytes per output phase; 0: learn it */
    int sync_staging;        /* fdatasync staged data before the write returns */
    int local_ranks;         /* processes sharing this node's memory (for the default cap) */
    double wait_timeout_s;   /* how long a write may wait for buffer or staging space while
                              * nothing is delivered (hint rfs_abt_wait_timeout_ms) */
    struct rfs_runtime *rt;  /* whose engine the file joins, whose workers run it
                              * (client/runtime.h); NULL: the default runtime */
} rfs_abt_config;

#define RFS_ABT_DEFAULT_BUFFER (4u << 20)
#define RFS_ABT_DEFAULT_THREADS 4
/* A write that finds neither buffer nor staging space waits at most this long without a
 * delivery before it fails (docs/abt.md "When staging is full"). */
#define RFS_ABT_DEFAULT_WAIT_TIMEOUT_MS 60000
/* Default cap: this share of MemAvailable, divided among the node's ranks, and at most
 * RFS_ABT_DEFAULT_MEM_MAX per process (ABT is on by default: it must not take memory the
 * application will want; foreground staging covers bigger outputs). */
#define RFS_ABT_DEFAULT_MEM_SHARE 0.25
#define RFS_ABT_DEFAULT_MEM_MAX (256ull << 20)
/* Buffers touched in the background when the engine starts, so the first output phase does
 * not pay first-touch page faults: the whole cap when rfs_abt_max_memory is given, else at
 * most this much (docs/abt.md "Buffers and the queue"). */
#define RFS_ABT_DEFAULT_PREFAULT (32ull << 20)

void rfs_abt_config_default(rfs_abt_config *c);

/* Stacks ABT over `below` (takes ownership). `name` is the rfs name used to reopen the file
 * when the journal is replayed. The file joins the engine of c->rt (each runtime has one):
 * its buffer size, staging directory, threads, staging and close hints are its own; the
 * memory cap is the engine's, set by the first file and raised by a later one that gives
 * rfs_abt_max_memory; the phase hints (interval, output) come from the first file that gives
 * them. */
int rfs_abt_wrap(rfs_io *below, const char *name, const rfs_abt_config *c, rfs_io **out);
/* ABT's op table, for a list of layers that a name op (rfs_io_remove) goes through. */
const rfs_io_ops *rfs_abt_ops(void);

/* Waits for every queued operation (including deferred closes) of the engine of rt (NULL:
 * the default runtime), stops its threads, removes its journals if nothing is left in them.
 * Returns the first error not yet reported (message in rfs_last_error) or RFS_OK. Safe to
 * call when ABT was never used; the engine starts again with the next file. Destroying a
 * runtime finalizes its engine too. */
struct rfs_runtime;
int rfs_abt_finalize_in(struct rfs_runtime *rt);
/* rfs_abt_finalize_in(NULL): the default runtime's (MPI_Finalize). */
int rfs_abt_finalize(void);

typedef struct rfs_abt_stats {
    uint64_t bytes_buffered;  /* copied into memory buffers */
    uint64_t bytes_staged_fg; /* written to the journal because the memory cap was reached */
    uint64_t bytes_staged_bg; /* moved from memory to the journal by the eq. (1) stager */
    uint64_t bytes_sent;      /* delivered to the layer below */
    uint64_t bytes_failed;    /* whose background write failed (kept in the journal) */
    uint64_t memory_cap, memory_peak;
    double remote_bw, staging_bw; /* measured Bx and Bw, bytes/s (0: not measured yet) */
    double interval_s;            /* learned I */
    uint64_t output_bytes;        /* learned N */
    uint64_t phases;              /* output phases seen */
    double enqueue_s;             /* application-thread time inside ABT's write calls (copy
                                   * into buffers, foreground staging): ABT's visible cost */
    double thread_cpu_s;          /* CPU time of ABT's own threads (senders, stager, pool
                                   * filler), summed when they exit at rfs_abt_finalize */
    uint64_t bytes_prefaulted;    /* buffer memory touched in the background before use */
} rfs_abt_stats;
/* The statistics of rt's engine (NULL: the default runtime); zeros when it never ran. */
void rfs_abt_get_stats_in(struct rfs_runtime *rt, rfs_abt_stats *s);
void rfs_abt_get_stats(rfs_abt_stats *s);

#endif
