/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Collective I/O: two-phase aggregation among the client ranks (PMPI collectives on the file's
 * private communicator).
 *
 *  1. Every rank maps its access to file runs and all ranks exchange [start, end).
 *  2. romio_cb_{read,write}: disable -> independent; automatic -> independent when the ranges do
 *     not interleave (or in atomic mode, where each access is locked on its own).
 *  3. Otherwise [min start, max end) is split evenly over the aggregators (aggr.c: one per node
 *     by default, cb_nodes spread over the nodes when given); each aggregator
 *     handles its file domain in rounds of cb_buffer_size bytes. Per round, ranks send the pieces
 *     that fall in each aggregator's window (all-to-all of counts, of (offset,len) lists, and for
 *     writes of the data); an aggregator sorts and merges them and issues ONE list I/O for the
 *     bytes present. Holes are never read and written back: that read-modify-write would cross
 *     the network, so list I/O replaces ROMIO's data sieving here.
 *     Writes of several rounds are pipelined (wpipe.c): up to rfs_cb_pipeline rounds' list
 *     writes are in flight while the next round is exchanged.
 *  4. Reads: the aggregator reads the union of requested runs and sends each rank its bytes; the
 *     end of file seen by any aggregator is agreed, so every rank's count stops there.
 * Errors anywhere are agreed at the end so all ranks return the same outcome. Memory: the few
 * words per rank a call needs are taken once per call; each round's buffers (piece lists, data,
 * the aggregator's list I/O) are taken before any data moves and the ranks agree on the result,
 * so a rank that cannot get them makes every rank stop with MPI_ERR_NO_MEM instead of leaving
 * the others waiting in an exchange (or killing the job).
 * Here: the choice between independent and two-phase, and the rounds. The planning is in
 * coll_plan.c, a round's exchange in coll_exchange.c, the aggregators' I/O in coll_io.c. */
#include "mpiio/coll_internal.h"
#include "mpiio/fence.h"

#include "cache/cache.h"
#include "common/log.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* This rank's (start, end) of the access as the other ranks must see it: a rank whose view has
 * overlapping runs sends its start negated, so that every rank learns from this one exchange
 * to go independent (two-phase needs runs that do not overlap: mp_coll_my_pieces' cursor
 * passes a run that lies inside an earlier, longer one). */
static void my_range(const mp_view *v, const rfs_extent *runs, size_t nruns, int64_t se[2])
{
    se[0] = INT64_MAX;
    se[1] = INT64_MIN;
    if (!nruns)
        return;
    se[0] = (int64_t)runs[0].offset;
    se[1] = (int64_t)(runs[nruns - 1].offset + runs[nruns - 1].length);
    for (size_t i = 0; v->overlap && i < nruns; i++)
        if ((int64_t)(runs[i].offset + runs[i].length) > se[1])
            se[1] = (int64_t)(runs[i].offset + runs[i].length);
    if (v->overlap)
        se[0] = -1 - se[0];
}

/* Every rank's range (cs->all, allgathered): the union [*gmin, *gmax) and whether some rank's
 * view overlaps itself. */
static int ranges_of_all(coll_scratch *cs, int P, int64_t *gmin, int64_t *gmax)
{
    int overlaps = 0;
    for (int j = 0; j < P; j++)
        if (cs->all[2 * j] < 0) {
            overlaps = 1;
            cs->all[2 * j] = -1 - cs->all[2 * j];
        }
    *gmin = INT64_MAX;
    *gmax = INT64_MIN;
    for (int j = 0; j < P; j++)
        if (cs->all[2 * j] < cs->all[2 * j + 1]) {
            *gmin = mp_min64(*gmin, cs->all[2 * j]);
            *gmax = cs->all[2 * j + 1] > *gmax ? cs->all[2 * j + 1] : *gmax;
        }
    return overlaps;
}

/* Bytes moved: everything for writes; for reads, the stream up to the end of file. */
static int64_t stream_moved(int is_write, const rfs_extent *runs, size_t nruns, int64_t eof)
{
    int64_t moved = 0;
    for (size_t i = 0; i < nruns; i++) {
        int64_t ro = (int64_t)runs[i].offset, rl = (int64_t)runs[i].length;
        if (is_write || ro + rl <= eof) {
            moved += rl;
            continue;
        }
        if (eof > ro)
            moved += eof - ro;
        break;
    }
    return moved;
}

/* With lazy barriers (fence.c: every rank on this node, writes that return early), a two-phase
 * write neither waits for the ranks' early-returned writes at its start nor for the
 * aggregators' writes at its end: each rank publishes its unanswered ranges at both points, as
 * MPI_Barrier does (the same decision on every rank: two-phase is chosen from allgathered
 * ranges), and a later request of any rank on those bytes waits until they are
 * answered (an aggregator's own writes, on its own connection, stay in order anyway). Periodic
 * collective snapshots then stream instead of paying a round trip each. Without it the ranks
 * wait at both points: another rank's request could reach the server first over another
 * connection. */
static int lazy_coll_write(const mp_file *f, int is_write)
{
    return is_write && f->fence != NULL;
}

/* The two-phase access of this rank's runs (t: its per-rank scratch is set up). Returns the
 * local error code; *moved gets the stream bytes moved. */
static int two_phase(tp *t, mp_file *f, int is_write, int code, int64_t gmin, int64_t gmax,
                     rfs_extent *runs, size_t nruns, char *data, int64_t *moved)
{
    /* This rank's bytes go out over an aggregator's connection. Its own early-returned writes
     * must be in the file first, or they could land after the aggregator's write of the same
     * bytes (a collective read did this before the exchange). */
    if (lazy_coll_write(f, is_write)) {
        mp_fence_publish(f, f->comm);
        PMPI_Barrier(f->comm);
        mp_fence_collect(f);
    } else if (is_write && code == MPI_SUCCESS) {
        code = mp_flush_writes(f);
    }
    mp_coll_plan(t, f, is_write, gmin, gmax, runs, nruns, data);
    int stop = 0;
    for (int64_t r = 0; r < t->rounds && !stop; r++) {
        int e = mp_coll_round(t, r, &stop);
        if (e != MPI_SUCCESS && code == MPI_SUCCESS)
            code = e;
    }
    if (t->pipe) {
        rfs_status failed;
        int e = mp_wpipe_finish(t->pipe, &failed);
        if (e != RFS_OK && code == MPI_SUCCESS)
            code = mp_io_error(f, e, "collective write", failed.msg);
    }
    /* An aggregator's writes carry other ranks' bytes over its own connection: the write
     * window must not let them return unanswered, or a later request of the rank whose bytes
     * they are (another aggregator next time, or its own independent write) could reach the
     * server first over another connection and be overwritten by them. */
    if (is_write && t->my_aggr >= 0 && code == MPI_SUCCESS && !lazy_coll_write(f, is_write))
        code = mp_flush_writes(f);
    /* This rank's bytes reached the file through aggregators, past its own read cache. */
    if (is_write && f->cache)
        rfs_cache_invalidate(f->cache);
    int64_t eof = t->eof;
    if (!is_write)
        PMPI_Allreduce(&t->eof, &eof, 1, MPI_INT64_T, MPI_MIN, f->comm);
    *moved = stream_moved(is_write, runs, nruns, eof);
    mp_coll_round_mem_free(&t->mem);
    free(t->runpos);
    free(t->cursor);
    free(t->aggr);
    return code;
}

/* The memory side of the access (b) and this rank's file runs; on failure the rank still takes
 * part, with nothing. Returns the local error code. */
static int prepare(mp_file *f, int is_write, int surely_indep, uint64_t pos, void *buf,
                   MPI_Count count, MPI_Datatype type, mp_view *v, mp_buf *b, rfs_extent **runs,
                   size_t *nruns)
{
    int code = mp_check_access(f, is_write, 0);
    /* A collective read sees what every rank wrote before it (the ranks' early-returned
     * writes are confirmed here, before the exchange that precedes any aggregator's read). */
    if (!is_write && code == MPI_SUCCESS)
        code = mp_flush_writes(f);
    if (code == MPI_SUCCESS) {
        int e = !is_write      ? mp_buf_for_read(b, buf, count, type, f->view->rep)
                : surely_indep ? mp_buf_for_write_lazy(b, buf, count, type, f->view->rep)
                               : mp_buf_for_write(b, buf, count, type, f->view->rep);
        if (e != MPI_SUCCESS)
            code = mp_error_code(e, "rfs: %s: bad count or datatype for this access", f->name);
    }
    if (code != MPI_SUCCESS)
        b->len = 0;
    *runs = NULL;
    *nruns = 0;
    if (b->len > 0) {
        int e = mp_view_runs(v, pos, (uint64_t)b->len, runs, nruns);
        if (e != RFS_OK) {
            code = mp_io_error(f, e, "collective access", rfs_last_error());
            b->len = 0;
            *nruns = 0;
        }
    }
    return code;
}

int mp_coll_access(mp_file *f, int is_write, uint64_t pos, void *buf, MPI_Count count,
                   MPI_Datatype type, MPI_Status *st, int64_t *got)
{
    *got = 0;
    mp_buf b;
    memset(&b, 0, sizeof b);
    int mode = is_write ? f->hints.cb_write : f->hints.cb_read;
    /* Known to go independent: a write may then be gathered instead of packed (mp_indep_io). */
    int surely_indep = f->size == 1 || mode == MP_DISABLE || f->atomic;
    mp_view *v = mp_view_get(f);
    rfs_extent *runs;
    size_t nruns;
    int code = prepare(f, is_write, surely_indep, pos, buf, count, type, v, &b, &runs, &nruns);
    int P = f->size;
    tp t;
    memset(&t, 0, sizeof t);
    coll_scratch cs;
    mp_coll_scratch_init(&cs, &t, P);
    int64_t se[2];
    my_range(v, runs, nruns, se);
    PMPI_Allgather(se, 2, MPI_INT64_T, cs.all, 2, MPI_INT64_T, f->comm);
    int64_t gmin, gmax;
    int overlaps = ranges_of_all(&cs, P, &gmin, &gmax);
    int use_indep =
        surely_indep || overlaps || (mode == MP_AUTO && !mp_coll_interleaved(cs.all, P, cs.sorted));

    int64_t moved = 0;
    int lazy = 0; /* the aggregators' writes are published rather than waited for */
    /* the server group's MPI-IO aggregates instead of the ranks (srvcoll.c); atomic mode and
     * romio_cb_*=disable keep the independent path they ask for */
    int on_server = gmin < gmax && f->srv_coll && !surely_indep;
    if (gmin >= gmax) {
        /* nobody accesses anything */
    } else if (on_server) {
        if (f->rank == 0)
            RFS_LOGD("mpiio: %s: collective %s: on the server group", f->name,
                     is_write ? "write" : "read");
        if (is_write && code == MPI_SUCCESS)
            code = mp_flush_writes(f);
        code = mp_srv_coll_access(f, is_write, code, runs, nruns, b.data, &moved);
    } else if (use_indep) {
        if (f->rank == 0)
            RFS_LOGD("mpiio: %s: collective %s: independent", f->name, is_write ? "write" : "read");
        if (b.len > 0 && code == MPI_SUCCESS) {
            size_t done = 0;
            code = mp_indep_io(f, is_write, pos, &b, &done);
            moved = (int64_t)done;
        }
    } else {
        code = two_phase(&t, f, is_write, code, gmin, gmax, runs, nruns, b.data, &moved);
        lazy = lazy_coll_write(f, is_write);
    }
    free(runs);
    free(cs.block);
    mp_view_put(f, v);
    if (lazy)
        mp_fence_publish(f, f->comm); /* the aggregators' unanswered writes */
    code = mp_agree_error(f, f->comm, code);
    if (lazy)
        mp_fence_collect(f);
    if (code == MPI_SUCCESS && !is_write)
        code = mp_buf_finish_read(&b, moved);
    mp_buf_free(&b);
    mp_set_status(st, code == MPI_SUCCESS ? mp_datarep_memory_bytes(b.rep, type, moved) : 0);
    *got = code == MPI_SUCCESS ? moved : 0;
    return code;
}

int mp_split_end(mp_file *f, MPI_Status *st)
{
    if (!f->split_active)
        return mp_raise(f, mp_error_code(MPI_ERR_OTHER,
                                         "rfs: %s: split collective _end without "
                                         "_begin",
                                         f->name));
    f->split_active = 0;
    if (st != MPI_STATUS_IGNORE)
        *st = f->split_status;
    return f->split_err;
}
