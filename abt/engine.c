/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The ABT engine's lifecycle: starting it with the first file's settings, keeping the list of
 * files not yet closed below, finalize (waits for every queued write and deferred close, stops
 * the threads, closes the journal) and the statistics. The engine's parts: queue.c (writes
 * cut into chunks and queued), place.c (a new chunk's buffer or journal room), pool.c (the
 * buffers), staging.c (the journal's room and appends), sender.c and complete.c (delivery),
 * version_note.c (replay safety), stager.c (eq. (1)), waits.c (what the rfs_io ops wait for).
 *
 * Ordering rule: chunks are dispatched in FIFO order, and a chunk is never sent while an
 * earlier chunk of the same file that overlaps it is still queued or in flight. Several
 * chunks are in flight at once (one per sender thread), which keeps a long-RTT link busy;
 * non-overlapping writes may complete in any order, which MPI semantics allow. */

#include "abt/engine_parts.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/err.h"

abt_engine rfs_abt_engine = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
};

/* work and done are waited on with deadlines: monotonic, so made at run time (once: the
 * engine may start again after a finalize). */
static pthread_once_t conds_once = PTHREAD_ONCE_INIT;
static void conds_init(void)
{
    rfs_cond_init_monotonic(&E.work);
    rfs_cond_init_monotonic(&E.done);
}

double rfs_abt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    uint64_t kb = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %" SCNu64, &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb ? kb * 1024u : (uint64_t)1 << 30;
}

void rfs_abt_config_default(rfs_abt_config *c)
{
    *c = (rfs_abt_config){
        .buffer_size = RFS_ABT_DEFAULT_BUFFER,
        .threads = RFS_ABT_DEFAULT_THREADS,
        .background_staging = 1,
        .local_ranks = 1,
        .wait_timeout_s = RFS_ABT_DEFAULT_WAIT_TIMEOUT_MS / 1000.0,
    };
}

static void resolve_staging_dir(const char *hint, char *out, size_t cap)
{
    const char *d = hint && *hint ? hint : getenv("RFS_STAGING_DIR");
    if (!d || !*d)
        d = getenv("TMPDIR");
    if (!d || !*d)
        d = "/tmp";
    snprintf(out, cap, "%s", d);
}

double abt_thread_cpu(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int threads_wanted(const rfs_abt_config *c)
{
    return c->threads < 1 ? 1 : c->threads > 16 ? 16 : c->threads;
}

/* Senders up to want (a file's rfs_abt_threads): each file sends at most its own number of
 * chunks at once (pick_pass), so the engine runs as many senders as the most any open or
 * earlier file asked for. Returns how many run. mu held. */
static int add_senders(int want)
{
    while (E.n_threads < want &&
           rfs_task_start(E.rt, &E.threads[E.n_threads], abt_sender_main, NULL) == 0)
        E.n_threads++;
    return E.n_threads;
}

int rfs_abt_engine_start(const rfs_abt_config *c)
{
    pthread_once(&conds_once, conds_init);
    pthread_mutex_lock(&E.mu);
    if (E.started) {
        uint64_t want = c->max_memory / E.buf_size;
        int rc = want > E.cap_bufs ? abt_pool_set_cap(want) : RFS_OK;
        add_senders(threads_wanted(c));  /* fewer than asked: the file shares those running */
        pthread_mutex_unlock(&E.mu);
        return rc;
    }
    E.buf_size = c->buffer_size ? c->buffer_size : RFS_ABT_DEFAULT_BUFFER;
    if (E.buf_size < 4096)
        E.buf_size = 4096;
    uint64_t cap = c->max_memory;
    if (!cap) {
        int ranks = c->local_ranks > 0 ? c->local_ranks : 1;
        cap = (uint64_t)((double)mem_available() * RFS_ABT_DEFAULT_MEM_SHARE) / (uint64_t)ranks;
        if (cap > RFS_ABT_DEFAULT_MEM_MAX)
            cap = RFS_ABT_DEFAULT_MEM_MAX;
    }
    if (abt_pool_set_cap(cap / E.buf_size) != RFS_OK) {
        pthread_mutex_unlock(&E.mu);
        return rfs_fail(RFS_E_NOMEM, "ABT: out of memory");
    }
    /* A cap the user gave is memory meant for ABT: touch all of it up front. */
    uint64_t prefault = c->max_memory ? cap : RFS_ABT_DEFAULT_PREFAULT;
    E.prefault_bufs = prefault / E.buf_size;
    resolve_staging_dir(c->staging_dir, E.staging_dir, sizeof E.staging_dir);
    E.hint_interval = c->interval_s;
    E.hint_output = c->output_bytes;
    rfs_abt_phases_init(&E.phases, 0.1);
    E.computing_since = -1;
    E.stop = 0;
    E.final_err = RFS_OK;
    E.bx = E.bw = 0;
    E.resv_hi = E.mem_need = E.stage_claims = 0;
    E.resv_unsupported = 0;
    E.delivered = E.failures = 0;
    E.last_failed = 0;
    E.bx_win_start = -1;
    E.bx_win_bytes = E.bx_period_bytes = 0;
    memset(&E.stats, 0, sizeof E.stats);
    E.stats.memory_cap = E.cap_bufs * E.buf_size;
    /* The threads are workers of the first file's runtime (the process's default one for
     * MPI-IO): signals blocked, reused after finalize. */
    E.rt = c->rt ? c->rt : rfs_runtime_default();
    E.n_threads = 0;
    int started = E.rt ? add_senders(threads_wanted(c)) : 0;
    if (started == 0 || rfs_task_start(E.rt, &E.stager, abt_stager_main, NULL) != 0) {
        E.stop = 1;
        pthread_cond_broadcast(&E.work);
        pthread_mutex_unlock(&E.mu);
        for (int i = 0; i < started; i++)
            rfs_task_join(&E.threads[i]);
        return rfs_fail(RFS_E_NOMEM, "ABT: cannot start background threads");
    }
    E.started = 1;
    pthread_mutex_unlock(&E.mu);
    return RFS_OK;
}

void rfs_abt_register_file(abt_file *f)
{
    E.bg_files += f->bg_staging;
    f->next_open = E.open_files;
    f->prev_open = NULL;
    if (E.open_files)
        E.open_files->prev_open = f;
    E.open_files = f;
}

void rfs_abt_unregister_file(abt_file *f)
{
    E.bg_files -= f->bg_staging;
    if (f->prev_open)
        f->prev_open->next_open = f->next_open;
    else
        E.open_files = f->next_open;
    if (f->next_open)
        f->next_open->prev_open = f->prev_open;
}

static int any_closing(void)
{
    for (abt_file *f = E.open_files; f; f = f->next_open)
        if (f->closing)
            return 1;
    return 0;
}

int rfs_abt_finalize(void)
{
    pthread_mutex_lock(&E.mu);
    if (!E.started) {
        pthread_mutex_unlock(&E.mu);
        return RFS_OK;
    }
    while (E.head || any_closing())
        pthread_cond_wait(&E.done, &E.mu);
    E.stop = 1;
    pthread_cond_broadcast(&E.work);
    pthread_mutex_unlock(&E.mu);
    for (int i = 0; i < E.n_threads; i++)
        rfs_task_join(&E.threads[i]);
    rfs_task_join(&E.stager);

    pthread_mutex_lock(&E.mu);
    int err = E.final_err;
    char msg[RFS_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%s", E.final_msg);
    for (abt_file *f = E.open_files; f && err == RFS_OK; f = f->next_open)
        if (f->err != RFS_OK) {
            err = f->err;
            snprintf(msg, sizeof msg, "%s: %s", f->name, f->errmsg);
        }
    if (E.journal) {
        abt_release_reserve();
        char path[4200];
        snprintf(path, sizeof path, "%s", E.journal->path);
        if (rfs_journal_close(E.journal) && err == RFS_OK) {
            err = RFS_E_IO;
            snprintf(msg, sizeof msg, "undelivered writes remain in %s", path);
        }
        E.journal = NULL;
    }
    abt_pool_release_all();
    E.started = 0;
    pthread_mutex_unlock(&E.mu);
    if (err != RFS_OK)
        return rfs_fail(err, "%s (run `rfs recover %s` once the server is reachable)", msg,
                        E.staging_dir);
    return RFS_OK;
}

void rfs_abt_get_stats(rfs_abt_stats *s)
{
    pthread_mutex_lock(&E.mu);
    *s = E.stats;
    s->phases = E.phases.phases;
    if (!s->interval_s)
        s->interval_s = E.phases.interval;
    if (!s->output_bytes)
        s->output_bytes = (uint64_t)E.phases.output;
    pthread_mutex_unlock(&E.mu);
}
