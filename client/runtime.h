/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The client runtime (docs/design.md "The client runtime"): one object that owns what the
 * client's layers used to keep in process globals of their own, in the spirit of Margo's
 * instance: the connection pool (pool.c) and one executor of worker threads (exec.c) that
 * runs every background job of the library (ABT's senders and stager, nonblocking I/O, the
 * collective write pipe, the lazy barrier's helper, prefetches, a file's extra streams,
 * parallel connects). Every worker has all signals blocked: library threads never take the
 * application's signals.
 *
 * Files opened through the public API (rfs_open, MPI_File_open) use the process's default
 * runtime, made on first use and never destroyed. Tests make their own (rfs_runtime_create)
 * and destroy it, instead of resetting globals. Not installed: the public API is unchanged. */
#ifndef RFS_CLIENT_RUNTIME_H
#define RFS_CLIENT_RUNTIME_H

#include <pthread.h>

typedef struct rfs_runtime rfs_runtime;

/* A job for the executor, owned by whoever starts it (no allocation per job); it must stay
 * in place until rfs_task_join returned. */
typedef struct rfs_task {
    void *(*fn)(void *);
    void *arg;
    void *ret;
    int done;              /* under the executor's lock */
    struct rfs_task *next; /* queue of jobs no worker has taken yet */
    rfs_runtime *rt;
} rfs_task;

/* The process's runtime (made on first use; never destroyed, its idle workers end with the
 * process). NULL only when it could not be made (out of memory). */
rfs_runtime *rfs_runtime_default(void);
/* A runtime of its own (tests, tools that want their connections apart). */
int rfs_runtime_create(rfs_runtime **out);
/* Destroys the layers' parts (newest first: ABT's finalize delivers what is queued), closes
 * the pooled connections and ends the idle workers. Every file opened in rt must be closed
 * and every task joined first. */
void rfs_runtime_destroy(rfs_runtime *rt);

/* Runs fn(arg) on a worker of rt: an idle one, else a new one (jobs are never queued behind
 * running ones, so a job may wait for another job, as a sender waits for work). Returns 0,
 * or an errno value when no worker could be started (the caller then does the work itself
 * or fails, as it did when pthread_create failed). */
int rfs_task_start(rfs_runtime *rt, rfs_task *t, void *(*fn)(void *), void *arg);
/* Waits until the task's fn returned; gives its result. */
void *rfs_task_join(rfs_task *t);

/* Opening in a runtime (rt NULL: the default one): rfs_open, rfs_io_open_remote and
 * rfs_io_open_deferred of rfs.h/rfs_io.h, whose files then use rt's connections and
 * workers. */
struct rfs_file;
struct rfs_io;
struct rfs_options;
int rfs_open_in(rfs_runtime *rt, const char *name, unsigned flags, unsigned mode,
                const struct rfs_options *opts, struct rfs_file **out);
int rfs_io_open_remote_in(rfs_runtime *rt, const char *name, unsigned flags, unsigned mode,
                          const struct rfs_options *opts, struct rfs_io **out);
/* The smoothed round trip (ms) of a remote rfs_io's first connection as the kernel measures
 * it; -1 for another kind of rfs_io or when unknown. Call it when no other thread may be
 * replacing that connection (the manifest layer does, right after opening an object). */
double rfs_io_remote_rtt_ms(struct rfs_io *io);
int rfs_io_open_deferred_in(rfs_runtime *rt, const char *name, unsigned flags, unsigned mode,
                            const struct rfs_options *opts, struct rfs_io **out);

/* Parts: what a layer above client/ keeps per runtime (ABT's engine, the read cache's pool,
 * MPI-IO's nonblocking queue). client/ cannot name those layers, so each owns a slot of its
 * own, keyed by its descriptor: the runtime makes the part on first use and destroys it with
 * itself, parts made later first (a layer's part may use those of the layers below it). */
typedef struct rfs_runtime_part_desc {
    const char *name;               /* for messages */
    void *(*make)(rfs_runtime *rt); /* NULL when out of memory; called under the runtime's
                                     * parts lock: it must not take another part */
    void (*destroy)(void *part);    /* waits for the part's jobs, frees it */
} rfs_runtime_part_desc;
#define RFS_RUNTIME_MAX_PARTS 8
/* rt's part of desc, made now if it has none (NULL: out of memory). */
void *rfs_runtime_part(rfs_runtime *rt, const rfs_runtime_part_desc *desc);
/* rt's part of desc, or NULL when it was never made (nothing is made). */
void *rfs_runtime_part_peek(rfs_runtime *rt, const rfs_runtime_part_desc *desc);

/* Counters, for tests and RFS_STATS: workers alive, of them idle, and threads ever made. */
typedef struct rfs_runtime_stats {
    int workers, idle;
    unsigned long started;
} rfs_runtime_stats;
void rfs_runtime_get_stats(rfs_runtime *rt, rfs_runtime_stats *s);

#endif
