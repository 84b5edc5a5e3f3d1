/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* ABT internals shared by the engine (queue, pool, threads, stager) and the rfs_io ops. */
#ifndef RFS_ABT_ENGINE_H
#define RFS_ABT_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/uio.h>

#include "abt/abt.h"
#include "client/runtime.h"
#include "common/err.h"
#include "abt/journal.h"
#include "abt/model.h"

typedef struct abt_file abt_file;
typedef struct abt_engine abt_engine;

/* A staging directory of the engine and its journal (opened on first need), shared by the
 * files whose rfs_staging_dir names it. The room held ahead in the journal (see abt_reserve in
 * staging.c) is the journal's: allocated up to resv_hi; mem_need is owed to memory-held chunks
 * of its files, stage_claims to appends under way. resv_unsupported: the file system cannot
 * preallocate. Under the engine's mu. */
typedef struct abt_stage {
    struct abt_stage *next;
    char dir[4096];
    rfs_journal *journal;
    uint64_t resv_hi, mem_need, stage_claims;
    int resv_unsupported;
} abt_stage;

/* A unit of buffered output: one buffer's worth of write data plus the extents it goes to.
 * A plain pwrite is a chunk with one extent. Chunks wait in one FIFO per process. */
typedef struct abt_chunk {
    struct abt_chunk *prev, *next;
    abt_file *f;
    uint64_t seq;
    double born; /* when it was queued: senders defer it at most SEND_DEFER_MAX_S */
    rfs_extent *ext;
    uint32_t n_ext, cap_ext;
    uint64_t lo, hi; /* bounding file range of the extents */
    uint8_t *buf;    /* pool buffer, or NULL when the data is staged */
    uint64_t len;    /* data bytes */
    int staged;      /* data lives in the journal at data_off */
    uint64_t rec_off, data_off;
    int busy; /* > 0: being filled or staged by another thread: not sendable */
    int inflight;
    int answered;  /* the server answered its write (it may still be queued while
                    * the file version is asked for, see finish_chunk) */
    int sealed;    /* no more coalescing into this chunk */
    uint64_t resv; /* journal space reserved for this chunk while it is in memory */
} abt_chunk;

struct abt_file {
    rfs_io io; /* first member: the rfs_io handed to the layer above */
    rfs_io *below;
    char *name;
    int pending;     /* chunks queued or in flight */
    abt_chunk *last; /* newest chunk of this file, for coalescing small writes */
    int err;         /* first background error not yet reported */
    char errmsg[RFS_ERRMSG_MAX];
    int defer_close; /* hint rfs_defer_close */
    int closing;     /* deferred close: close below once pending reaches 0 */
    int sync_staging;
    double wait_timeout_s; /* hint rfs_abt_wait_timeout_ms */
    int threads;           /* hint rfs_abt_threads: at most this many of its chunks in flight */
    int inflight;          /* its chunks being sent (mu) */
    int bg_staging;        /* hint rfs_abt_bg_staging: the stager may move its chunks */
    abt_engine *e;         /* the engine of the file's runtime */
    abt_stage *stage;      /* hint rfs_staging_dir: where its staged data goes */
    uint64_t buf_size;     /* hint rfs_abt_buffer_size: its writes are cut into pieces of
                            * this size, each in a buffer of this size */
    /* Where the journal's versions of the file come from: 1 the replies of the deliveries
     * (below's version op, no round trip), -1 STAT probes (an older server), 0 not known yet
     * (a deferred open: probed at open, replies tried after each delivery). */
    _Atomic int versions;
    abt_file *next_open, *prev_open;
};

/* Buffers of one size (the pool holds the sizes its files asked for). */
typedef struct abt_bufclass {
    uint64_t size;
    void **free;
    uint64_t n_free, cap_free;
} abt_bufclass;

/* A runtime's ABT engine (its part, rfs_runtime_part): one FIFO of chunks, one buffer pool
 * under one memory cap, the staging journals, the senders and the stager, shared by the
 * runtime's ABT files. */
struct abt_engine {
    pthread_mutex_t mu;
    pthread_cond_t work; /* a chunk became sendable, or stop */
    pthread_cond_t done; /* a chunk left the queue */
    int started, stop;
    abt_chunk *head, *tail;
    uint64_t next_seq;
    abt_file *open_files; /* files not yet closed below (including deferred closes) */

    /* Buffer pool (pool.c): buffers allocated on demand in the sizes the files ask for, under
     * one cap in bytes (rfs-abt.txt's ABSmax: the memory ABT may take, whatever the file);
     * freed ones are kept for reuse until finalize (memory given back to the kernel costs
     * page faults to take again, and on a VM with free page reporting a host fault per page).
     * used + free + being prefaulted = alloc_bytes <= cap_bytes. The stager thread touches
     * prefault_bytes of buffers of prefault_size (the first file's) when the engine starts. */
    uint64_t cap_bytes, used_bytes, free_bytes, alloc_bytes;
    uint64_t prefault_bytes, prefault_size;
    uint64_t buf_max; /* the largest buffer size of the files so far */
    abt_bufclass *cls;
    int n_cls;

    abt_stage *stages; /* the staging directories of the files, each with its journal */
    /* Outcome of background writes, for writes that wait for space (place_piece). */
    uint64_t delivered, failures;
    int last_failed; /* the latest completion was a failure */
    char last_fail[512];

    int n_threads;
    rfs_runtime *rt;      /* whose part it is; its workers run the senders and the stager */
    abt_engine *reg_next; /* the process's live engines (engine.c) */
    rfs_task threads[16];
    rfs_task stager;
    int bg_files; /* open files with background staging on */
    rfs_abt_phases phases;
    double hint_interval;
    uint64_t hint_output;
    uint64_t staged_this_phase;
    double computing_since;

    /* Bandwidth estimates (bytes/s): Bx over time with at least one send in flight. */
    int n_inflight;
    /* Senders yield to the application's writes (see sendable() in engine.c). */
    int writing;           /* application threads inside rfs_abt_enqueue */
    double last_write_end; /* when the last of them returned */
    double busy_mark;
    double bx, bw;
    /* Bx window (see note_bandwidth in sender.c): opened at a completion, -1 while none is
     * open; and the bytes of the current busy period, for a first estimate. */
    double bx_win_start, bx_win_bytes, bx_period_bytes;

    int final_err; /* first error of a deferred close, reported at finalize */
    char final_msg[RFS_ERRMSG_MAX];
    rfs_abt_stats stats;
};

double rfs_abt_now(void);
/* The engine of c's runtime (made on first use; NULL: out of memory). */
abt_engine *rfs_abt_engine_of(const rfs_abt_config *c);
/* The buffer size c asks for (the default when 0; at least a page). */
uint64_t rfs_abt_buffer_size(const rfs_abt_config *c);
/* The engine of rt (NULL: the default runtime) if it was ever made, else NULL. */
abt_engine *rfs_abt_engine_peek(rfs_runtime *rt);
/* Starts e on first use (or again after a finalize): the memory cap, prefaulting and phase
 * hints from c; afterwards raises the memory cap and adds senders up to the config's threads.
 * *stage gets the staging directory of c (made on first use). */
int rfs_abt_engine_start(abt_engine *e, const rfs_abt_config *c, abt_stage **stage);
/* Where a queued write's bytes come from, in stream order: the runs of memory in iov (one
 * run for packed data; the application's own runs for a gathered write, which then needs no
 * packing copy above ABT). Consumed as the write is queued. */
typedef struct abt_src {
    const struct iovec *iov;
    size_t n;
    size_t i;  /* current run */
    size_t at; /* bytes of run i already taken */
} abt_src;
/* Waits for every queued write and deferred close of e, stops its threads, closes its
 * journals (rfs_abt_finalize). */
int rfs_abt_finalize_engine(abt_engine *e);
/* Queues a write (extents + len bytes from src). Copies the data; returns when it is
 * buffered/staged. */
int rfs_abt_enqueue(abt_file *f, const rfs_extent *ext, size_t n, abt_src *src, uint64_t len);
/* Waits until no queued chunk of f overlaps [lo, hi) (hi = UINT64_MAX: all of f). With
 * answered_enough, a chunk whose write the server has answered no longer counts: its bytes are
 * in the file (what readers and other ranks need), though the version bookkeeping after it
 * (finish_chunk) may still be under way (what sync, size changes and close wait for). */
void rfs_abt_wait_file(abt_file *f, uint64_t lo, uint64_t hi, int answered_enough);
/* Waits until every write of f queued before the call has left the queue (answered, file
 * version noted); writes queued meanwhile by other threads are not waited for (a chunk that
 * took more data since is). */
void rfs_abt_wait_queued(abt_file *f);
/* Waits until no file of this rfs name (however spelled) has writes queued or in flight: a
 * delete of the file comes after them (none lands in or re-creates the deleted file). Failed
 * ones have left the queue too (kept in the journal, reported as before). Returns at once when
 * the engine is not running. */
void rfs_abt_wait_name(abt_engine *e, const char *name);
/* The same in every live engine of the process (a delete names no runtime). */
void rfs_abt_wait_name_all(const char *name);
/* rfs_io write_mark / mark_answered: the next chunk's sequence number; 1 once every chunk of
 * f numbered below mark is answered (a chunk that took more data since counts whole). */
uint64_t rfs_abt_write_mark(abt_engine *e);
int rfs_abt_mark_answered(abt_file *f, uint64_t mark);
/* The end of f's furthest queued write (0: none), whatever its state: a size query adds it
 * to what the server reports instead of waiting for the writes. */
uint64_t rfs_abt_pending_end(abt_file *f);
/* Notes the version of f below reported (the reply of its latest answered write or size
 * change) in the journal's table, without a round trip. Returns 1 if it did, 0 when the
 * version must be asked with a STAT instead (f->versions says so from then on if the server
 * cannot report versions at all). Called without mu. */
int rfs_abt_note_version(abt_file *f);
/* Takes f's unreported background error (clearing it), or RFS_OK. */
int rfs_abt_take_error(abt_file *f);
/* The engine keeps every file until it is closed below, so finalize can wait for deferred closes. */
void rfs_abt_register_file(abt_file *f);
void rfs_abt_unregister_file(abt_file *f);

#endif
