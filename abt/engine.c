/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The ABT engine's lifecycle: one per runtime (its part), started by the first file opened
 * in it and joined by later ones (each file keeps its own buffer size, staging directory,
 * threads and staging hints; the memory cap is shared), keeping the list of files not yet
 * closed below, finalize (waits for every queued write and deferred close, stops
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

/* Every live engine of the process, for the one thing that names no runtime: a delete of a
 * file waits for that file's queued writes in all of them (rfs_abt_wait_name_all). reg_mu is
 * taken before an engine's mu. */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static abt_engine *reg_head;

static void *engine_make(rfs_runtime *rt)
{
    abt_engine *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    pthread_mutex_init(&e->mu, NULL);
    /* work and done are waited on with deadlines: monotonic */
    rfs_cond_init_monotonic(&e->work);
    rfs_cond_init_monotonic(&e->done);
    e->rt = rt;
    pthread_mutex_lock(&reg_mu);
    e->reg_next = reg_head;
    reg_head = e;
    pthread_mutex_unlock(&reg_mu);
    return e;
}

void rfs_abt_wait_name_all(const char *name)
{
    pthread_mutex_lock(&reg_mu);
    for (abt_engine *e = reg_head; e; e = e->reg_next)
        rfs_abt_wait_name(e, name);
    pthread_mutex_unlock(&reg_mu);
}

/* With the runtime: what is queued is delivered first (an error nobody heard of yet is lost
 * with it, as after a program that never called rfs_abt_finalize). */
static void engine_destroy(void *part)
{
    abt_engine *e = part;
    if (rfs_abt_finalize_engine(e) != RFS_OK)
        rfs_clear_error();
    pthread_mutex_lock(&reg_mu);
    for (abt_engine **p = &reg_head; *p; p = &(*p)->reg_next)
        if (*p == e) {
            *p = e->reg_next;
            break;
        }
    pthread_mutex_unlock(&reg_mu);
    for (abt_stage *st = e->stages, *next; st; st = next) {
        next = st->next;
        free(st);
    }
    pthread_cond_destroy(&e->done);
    pthread_cond_destroy(&e->work);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

static const rfs_runtime_part_desc engine_desc = {
    .name = "ABT engine",
    .make = engine_make,
    .destroy = engine_destroy,
};

abt_engine *rfs_abt_engine_of(const rfs_abt_config *c)
{
    rfs_runtime *rt = c->rt ? c->rt : rfs_runtime_default();
    return rt ? rfs_runtime_part(rt, &engine_desc) : NULL;
}

abt_engine *rfs_abt_engine_peek(rfs_runtime *rt)
{
    if (!rt && !(rt = rfs_runtime_default()))
        return NULL;
    return rfs_runtime_part_peek(rt, &engine_desc);
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

/* The engine's staging directory of that name, made on first use (mu held). The journal in
 * it is opened when something is first staged or reserved there (staging.c). */
static abt_stage *stage_of(abt_engine *e, const char *hint)
{
    char dir[sizeof e->stages->dir];
    resolve_staging_dir(hint, dir, sizeof dir);
    abt_stage **p = &e->stages;
    for (; *p; p = &(*p)->next)
        if (strcmp((*p)->dir, dir) == 0)
            return *p;
    abt_stage *st = calloc(1, sizeof *st);
    if (st) {
        memcpy(st->dir, dir, sizeof st->dir);
        *p = st;
    }
    return st;
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
static int add_senders(abt_engine *e, int want)
{
    while (e->n_threads < want &&
           rfs_task_start(e->rt, &e->threads[e->n_threads], abt_sender_main, e) == 0)
        e->n_threads++;
    return e->n_threads;
}

uint64_t rfs_abt_buffer_size(const rfs_abt_config *c)
{
    uint64_t b = c->buffer_size ? c->buffer_size : RFS_ABT_DEFAULT_BUFFER;
    return b < 4096 ? 4096 : b;
}

/* The phase hints describe the program's output phases, not a file: the first file that
 * gives one sets it (mu held). */
static void take_phase_hints(abt_engine *e, const rfs_abt_config *c)
{
    if (e->hint_interval <= 0 && c->interval_s > 0)
        e->hint_interval = c->interval_s;
    if (!e->hint_output && c->output_bytes)
        e->hint_output = c->output_bytes;
}

/* Raises the cap for a later file that gives rfs_abt_max_memory, adds senders for it. */
static int engine_join(abt_engine *e, const rfs_abt_config *c)
{
    if (c->max_memory > e->cap_bytes)
        abt_pool_set_cap(e, c->max_memory);
    take_phase_hints(e, c);
    add_senders(e, threads_wanted(c)); /* fewer than asked: the file shares those running */
    return RFS_OK;
}

int rfs_abt_engine_start(abt_engine *e, const rfs_abt_config *c, abt_stage **stage)
{
    pthread_mutex_lock(&e->mu);
    uint64_t bsz = rfs_abt_buffer_size(c);
    if (bsz > e->buf_max)
        e->buf_max = bsz;
    if (!(*stage = stage_of(e, c->staging_dir))) {
        pthread_mutex_unlock(&e->mu);
        return rfs_fail(RFS_E_NOMEM, "ABT: out of memory");
    }
    if (e->started) {
        int rc = engine_join(e, c);
        pthread_mutex_unlock(&e->mu);
        return rc;
    }
    uint64_t cap = c->max_memory;
    if (!cap) {
        int ranks = c->local_ranks > 0 ? c->local_ranks : 1;
        cap = (uint64_t)((double)mem_available() * RFS_ABT_DEFAULT_MEM_SHARE) / (uint64_t)ranks;
        if (cap > RFS_ABT_DEFAULT_MEM_MAX)
            cap = RFS_ABT_DEFAULT_MEM_MAX;
    }
    /* A cap the user gave is memory meant for ABT: touch all of it up front, in buffers of
     * the size of the file that starts the engine. */
    e->prefault_bytes = c->max_memory ? cap : RFS_ABT_DEFAULT_PREFAULT;
    e->prefault_size = bsz;
    e->hint_interval = 0;
    e->hint_output = 0;
    take_phase_hints(e, c);
    rfs_abt_phases_init(&e->phases, 0.1);
    e->computing_since = -1;
    e->stop = 0;
    e->final_err = RFS_OK;
    e->bx = e->bw = 0;
    e->delivered = e->failures = 0;
    e->last_failed = 0;
    e->bx_win_start = -1;
    e->bx_win_bytes = e->bx_period_bytes = 0;
    memset(&e->stats, 0, sizeof e->stats);
    abt_pool_set_cap(e, cap);
    /* The threads are workers of the engine's runtime: signals blocked, reused after
     * finalize. */
    e->n_threads = 0;
    int started = add_senders(e, threads_wanted(c));
    if (started == 0 || rfs_task_start(e->rt, &e->stager, abt_stager_main, e) != 0) {
        e->stop = 1;
        pthread_cond_broadcast(&e->work);
        pthread_mutex_unlock(&e->mu);
        for (int i = 0; i < started; i++)
            rfs_task_join(&e->threads[i]);
        return rfs_fail(RFS_E_NOMEM, "ABT: cannot start background threads");
    }
    e->started = 1;
    pthread_mutex_unlock(&e->mu);
    return RFS_OK;
}

void rfs_abt_register_file(abt_file *f)
{
    abt_engine *e = f->e;
    e->bg_files += f->bg_staging;
    f->next_open = e->open_files;
    f->prev_open = NULL;
    if (e->open_files)
        e->open_files->prev_open = f;
    e->open_files = f;
}

void rfs_abt_unregister_file(abt_file *f)
{
    abt_engine *e = f->e;
    e->bg_files -= f->bg_staging;
    if (f->prev_open)
        f->prev_open->next_open = f->next_open;
    else
        e->open_files = f->next_open;
    if (f->next_open)
        f->next_open->prev_open = f->prev_open;
}

static int any_closing(abt_engine *e)
{
    for (abt_file *f = e->open_files; f; f = f->next_open)
        if (f->closing)
            return 1;
    return 0;
}

int rfs_abt_finalize_engine(abt_engine *e)
{
    pthread_mutex_lock(&e->mu);
    if (!e->started) {
        pthread_mutex_unlock(&e->mu);
        return RFS_OK;
    }
    while (e->head || any_closing(e))
        pthread_cond_wait(&e->done, &e->mu);
    e->stop = 1;
    pthread_cond_broadcast(&e->work);
    pthread_mutex_unlock(&e->mu);
    for (int i = 0; i < e->n_threads; i++)
        rfs_task_join(&e->threads[i]);
    rfs_task_join(&e->stager);

    pthread_mutex_lock(&e->mu);
    int err = e->final_err;
    char msg[RFS_ERRMSG_MAX];
    const char *where = NULL; /* the staging directory `rfs recover` must look in */
    snprintf(msg, sizeof msg, "%s", e->final_msg);
    for (abt_file *f = e->open_files; f && err == RFS_OK; f = f->next_open)
        if (f->err != RFS_OK) {
            err = f->err;
            where = f->stage->dir;
            snprintf(msg, sizeof msg, "%s: %s", f->name, f->errmsg);
        }
    for (abt_stage *st = e->stages; st; st = st->next) {
        if (!st->journal)
            continue;
        abt_release_reserve(st);
        char path[4200];
        snprintf(path, sizeof path, "%s", st->journal->path);
        if (rfs_journal_close(st->journal)) {
            if (err == RFS_OK) {
                err = RFS_E_IO;
                snprintf(msg, sizeof msg, "undelivered writes remain in %s", path);
            }
            if (!where)
                where = st->dir;
        }
        st->journal = NULL;
    }
    if (!where)
        where = e->stages ? e->stages->dir : "";
    abt_pool_release_all(e);
    e->started = 0;
    char dir[sizeof e->stages->dir];
    snprintf(dir, sizeof dir, "%s", where);
    pthread_mutex_unlock(&e->mu);
    if (err != RFS_OK)
        return rfs_fail(err, "%s (run `rfs recover %s` once the server is reachable)", msg, dir);
    return RFS_OK;
}

int rfs_abt_finalize_in(rfs_runtime *rt)
{
    abt_engine *e = rfs_abt_engine_peek(rt);
    return e ? rfs_abt_finalize_engine(e) : RFS_OK;
}

int rfs_abt_finalize(void)
{
    return rfs_abt_finalize_in(NULL);
}

void rfs_abt_get_stats_in(rfs_runtime *rt, rfs_abt_stats *s)
{
    abt_engine *e = rfs_abt_engine_peek(rt);
    if (!e) {
        memset(s, 0, sizeof *s);
        return;
    }
    pthread_mutex_lock(&e->mu);
    *s = e->stats;
    s->phases = e->phases.phases;
    if (!s->interval_s)
        s->interval_s = e->phases.interval;
    if (!s->output_bytes)
        s->output_bytes = (uint64_t)e->phases.output;
    pthread_mutex_unlock(&e->mu);
}

void rfs_abt_get_stats(rfs_abt_stats *s)
{
    rfs_abt_get_stats_in(NULL, s);
}
