/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Lazy barriers: see fence.h for what and why. Only mp_fence_open/publish/collect/close run
 * MPI (application thread); the rfs_io ops and the helper thread touch shared memory only. */
#include "mpiio/fence.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Ranges a rank publishes per barrier; more are merged into fewer, larger ones (a larger range
 * only makes others wait more often, never less, but a merged range covers other ranks'
 * bytes in between: HDF5's chunks of four ranks interleave, so there must be room for the
 * chunks of the datasets still in ABT's queue). */
#define PUB_RANGES 256
/* Ranges a rank keeps of its own unanswered writes; more are merged like published ones. */
#define OWN_RANGES 1024

/* One rank's slot in node shared memory. Barrier e uses half e & 1: a rank cannot publish
 * barrier e+2 before every rank has left barrier e+1, so nobody still reads e's half then. */
typedef struct slot {
    uint64_t epoch[2];
    uint64_t n[2];
    uint64_t lo[2][PUB_RANGES], hi[2][PUB_RANGES];
    uint64_t answered; /* every write issued before barrier `answered` is answered */
    /* The file's size as this rank can vouch for it (local_size): the size at open or after
     * its last size change (base) and the end of its furthest write since (end), valid while
     * `size_epoch` (size changes passed) matches the reader's and none of its calls failed. */
    uint64_t size_base, size_end, size_epoch;
    uint32_t size_unknown;
} slot;

typedef struct own_range {
    uint64_t lo, hi, epoch; /* epoch: barriers passed when it was issued */
} own_range;

typedef struct mp_fence {
    rfs_io io; /* first member: the rfs_io handed to the layer above */
    rfs_io *below;
    MPI_Win win;
    slot **slots; /* every rank's slot */
    int rank, size;
    int timeout_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    own_range own[OWN_RANGES];
    int n_own;
    uint64_t epoch; /* barriers passed (application thread) */
    /* Per rank: the barrier whose ranges we must see answered (0: none), and the ranges. */
    uint64_t *need;
    uint64_t *n_need;
    uint64_t (*lo)[PUB_RANGES], (*hi)[PUB_RANGES];
    /* The helper thread: waits for this rank's writes to be answered after each barrier. */
    rfs_task th;         /* a worker of the file's runtime */
    uint64_t want, done; /* barriers whose writes to wait for / known answered */
    uint64_t want_mark;  /* the layer below's write mark at barrier `want` */
    int stop;
    uint64_t waits, waited_ns; /* RFS_STATS */
    uint64_t sizes_known;      /* get_size answered by local_size (RFS_STATS) */
    int issuing;               /* writes noted in own[] and not yet returned from below (mu) */
} mp_fence;

static mp_fence *FC(rfs_io *io)
{
    return (mp_fence *)io;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- own writes ---- */

static void merge_into(own_range *r, const own_range *s)
{
    if (s->lo < r->lo)
        r->lo = s->lo;
    if (s->hi > r->hi)
        r->hi = s->hi;
    if (s->epoch > r->epoch)
        r->epoch = s->epoch;
}

/* Sorts r[0..n) by start and merges the ranges closest to each other until at most max
 * are left; returns how many. */
static int shrink(own_range *r, int n, int max)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && r[j].lo < r[j - 1].lo; j--) {
            own_range t = r[j];
            r[j] = r[j - 1];
            r[j - 1] = t;
        }
    while (n > max) {
        int best = 0;
        uint64_t best_gap = UINT64_MAX;
        for (int i = 0; i + 1 < n; i++) {
            uint64_t gap = r[i + 1].lo > r[i].hi ? r[i + 1].lo - r[i].hi : 0;
            if (gap < best_gap)
                best_gap = gap, best = i;
        }
        merge_into(&r[best], &r[best + 1]);
        memmove(&r[best + 1], &r[best + 2], (size_t)(n - best - 2) * sizeof *r);
        n--;
    }
    return n;
}

/* mu held. */
static void note_own(mp_fence *fc, uint64_t lo, uint64_t hi)
{
    if (hi <= lo)
        return;
    own_range r = {lo, hi, fc->epoch};
    for (int i = 0; i < fc->n_own; i++) {
        own_range *o = &fc->own[i];
        if (o->epoch == r.epoch && o->lo <= hi && lo <= o->hi) {
            merge_into(o, &r);
            return;
        }
    }
    if (fc->n_own == OWN_RANGES)
        fc->n_own = shrink(fc->own, fc->n_own, OWN_RANGES / 2);
    fc->own[fc->n_own++] = r;
}

/* Notes a write's ranges before it is issued; issued() when below has returned. */
static void note_extents(mp_fence *fc, const rfs_extent *ext, size_t n)
{
    pthread_mutex_lock(&fc->mu);
    fc->issuing++;
    if (n <= 8) {
        for (size_t i = 0; i < n; i++)
            note_own(fc, ext[i].offset, ext[i].offset + ext[i].length);
    } else {
        uint64_t lo, hi;
        rfs_extents_span(ext, n, &lo, &hi);
        note_own(fc, lo, hi);
    }
    pthread_mutex_unlock(&fc->mu);
}

static void issued(mp_fence *fc)
{
    pthread_mutex_lock(&fc->mu);
    fc->issuing--;
    pthread_mutex_unlock(&fc->mu);
}

/* ---- other ranks' writes ---- */

/* 1 if rank r's published ranges overlap [lo, hi) (mu held). */
static int touches(const mp_fence *fc, int r, uint64_t lo, uint64_t hi)
{
    for (uint64_t i = 0; i < fc->n_need[r]; i++)
        if (fc->lo[r][i] < hi && lo < fc->hi[r][i])
            return 1;
    return 0;
}

/* Waits until no other rank has unanswered writes published at the last barrier on
 * [lo, hi). RFS_OK, or RFS_E_TIMEOUT when a rank's writes stay unanswered for the I/O
 * timeout (the rank is gone or its server connection is stuck). */
static int wait_others(mp_fence *fc, uint64_t lo, uint64_t hi)
{
    for (int r = 0; r < fc->size; r++) {
        pthread_mutex_lock(&fc->mu);
        uint64_t need = fc->need[r] && touches(fc, r, lo, hi) ? fc->need[r] : 0;
        pthread_mutex_unlock(&fc->mu);
        if (!need)
            continue;
        uint64_t t0 = now_ns(), sleep_ns = 20000;
        int counted = 0;
        while (__atomic_load_n(&fc->slots[r]->answered, __ATOMIC_ACQUIRE) < need) {
            if (!counted) {
                counted = 1;
                pthread_mutex_lock(&fc->mu);
                fc->waits++;
                pthread_mutex_unlock(&fc->mu);
            }
            if (fc->timeout_ms > 0 && now_ns() - t0 > (uint64_t)fc->timeout_ms * 1000000ull)
                return rfs_fail(RFS_E_TIMEOUT,
                                "%s:%s: rank %d's writes before the last "
                                "MPI_Barrier or collective write were not "
                                "answered within %d ms",
                                fc->io.server, fc->io.path, r, fc->timeout_ms);
            struct timespec ts = {0, (long)sleep_ns};
            nanosleep(&ts, NULL);
            if (sleep_ns < 1000000)
                sleep_ns *= 2;
        }
        pthread_mutex_lock(&fc->mu);
        if (counted)
            fc->waited_ns += now_ns() - t0;
        if (fc->need[r] == need)
            fc->need[r] = 0;
        pthread_mutex_unlock(&fc->mu);
    }
    return RFS_OK;
}

static int wait_extents(mp_fence *fc, const rfs_extent *ext, size_t n)
{
    uint64_t lo, hi;
    rfs_extents_span(ext, n, &lo, &hi);
    return n ? wait_others(fc, lo, hi) : RFS_OK;
}

/* ---- the helper ---- */

static void *helper_main(void *arg)
{
    mp_fence *fc = arg;
    pthread_mutex_lock(&fc->mu);
    for (;;) {
        if (fc->want > fc->done && !fc->stop) {
            uint64_t e = fc->want, mark = fc->want_mark;
            pthread_mutex_unlock(&fc->mu);
            /* Looks, without waiting in the layer below, until the writes before barrier e
             * are answered (failures stay for the next call on the file); a close that no
             * longer needs it stops the looking. */
            long sleep_ns = 20000;
            int answered = 0, stop = 0;
            while (!(answered = fc->below->ops->mark_answered(fc->below, mark)) && !stop) {
                struct timespec ts = {0, sleep_ns};
                nanosleep(&ts, NULL);
                if (sleep_ns < 1000000)
                    sleep_ns *= 2;
                pthread_mutex_lock(&fc->mu);
                stop = fc->stop;
                pthread_mutex_unlock(&fc->mu);
            }
            pthread_mutex_lock(&fc->mu);
            if (!answered)
                break;
            if (e > fc->done)
                fc->done = e;
            int k = 0;
            for (int i = 0; i < fc->n_own; i++)
                if (fc->own[i].epoch >= e)
                    fc->own[k++] = fc->own[i];
            fc->n_own = k;
            if (__atomic_load_n(&fc->slots[fc->rank]->answered, __ATOMIC_ACQUIRE) < e)
                __atomic_store_n(&fc->slots[fc->rank]->answered, e, __ATOMIC_RELEASE);
            pthread_cond_broadcast(&fc->cv);
            continue;
        }
        if (fc->stop)
            break;
        pthread_cond_wait(&fc->cv, &fc->mu);
    }
    pthread_mutex_unlock(&fc->mu);
    return NULL;
}

/* ---- the file's size without asking the server ---- */

/* HDF5 asks rank 0 for the size at every close after a barrier: a round trip per file on a
 * WAN. Every rank of the file is on this node and publishes here what it knows: the size its
 * OPEN reply reported and the end of every write it issued, so the size is the largest of
 * these, as a local file system would report it once those writes returned. Size changes
 * (collective) start a new epoch; a rank still in another epoch is in the middle of the same
 * collective call, concurrent with this one. A failed call makes its rank unable to vouch:
 * its writes may not all be in the file, so the server is asked from then on. */
static void seen_failure(mp_fence *fc)
{
    __atomic_store_n(&fc->slots[fc->rank]->size_unknown, 1, __ATOMIC_RELEASE);
}

static int noted(mp_fence *fc, int rc)
{
    if (rc != RFS_OK)
        seen_failure(fc);
    return rc;
}

static void note_end(mp_fence *fc, uint64_t end)
{
    uint64_t *p = &fc->slots[fc->rank]->size_end;
    uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (end > cur &&
           !__atomic_compare_exchange_n(p, &cur, end, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
}

static uint64_t extents_end(const rfs_extent *ext, size_t n)
{
    uint64_t lo, hi;
    rfs_extents_span(ext, n, &lo, &hi);
    return hi;
}

/* 1 and *size when every rank of the file can vouch for its part; 0: ask the server. */
static int local_size(mp_fence *fc, uint64_t *size)
{
    slot *me = fc->slots[fc->rank];
    uint64_t epoch = __atomic_load_n(&me->size_epoch, __ATOMIC_ACQUIRE), s = 0;
    for (int r = 0; r < fc->size; r++) {
        slot *o = fc->slots[r];
        if (__atomic_load_n(&o->size_unknown, __ATOMIC_ACQUIRE))
            return 0;
        if (__atomic_load_n(&o->size_epoch, __ATOMIC_ACQUIRE) != epoch)
            continue;
        uint64_t base = __atomic_load_n(&o->size_base, __ATOMIC_ACQUIRE);
        uint64_t end = __atomic_load_n(&o->size_end, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&o->size_epoch, __ATOMIC_ACQUIRE) != epoch)
            continue; /* changed its size meanwhile: in the same collective call as us */
        if (base > s)
            s = base;
        if (end > s)
            s = end;
    }
    *size = s;
    return 1;
}

/* After this rank's part of a size change: set_size makes the size exactly `size`,
 * preallocate at least `size`. */
static void note_size_change(mp_fence *fc, uint64_t size, int exact)
{
    slot *me = fc->slots[fc->rank];
    uint64_t base = __atomic_load_n(&me->size_base, __ATOMIC_RELAXED);
    uint64_t end = __atomic_load_n(&me->size_end, __ATOMIC_RELAXED);
    if (!exact) {
        size = size > base ? size : base;
        size = size > end ? size : end;
    }
    __atomic_store_n(&me->size_base, size, __ATOMIC_RELEASE);
    __atomic_store_n(&me->size_end, 0, __ATOMIC_RELEASE);
    __atomic_add_fetch(&me->size_epoch, 1, __ATOMIC_ACQ_REL);
}

/* ---- rfs_io ops ---- */

static int f_pwrite(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done)
{
    mp_fence *fc = FC(io);
    rfs_extent e = {off, len};
    note_extents(fc, &e, 1);
    int rc = wait_others(fc, off, off + len);
    if (rc == RFS_OK && (rc = fc->below->ops->pwrite(fc->below, buf, len, off, done)) == RFS_OK)
        note_end(fc, off + len);
    issued(fc);
    return noted(fc, rc);
}

static int f_pwritev(rfs_io *io, const rfs_extent *ext, size_t n, const void *buf, size_t *done)
{
    mp_fence *fc = FC(io);
    note_extents(fc, ext, n);
    int rc = wait_extents(fc, ext, n);
    if (rc == RFS_OK && (rc = fc->below->ops->pwritev(fc->below, ext, n, buf, done)) == RFS_OK)
        note_end(fc, extents_end(ext, n));
    issued(fc);
    return noted(fc, rc);
}

static int f_pwritev_gather(rfs_io *io, const rfs_extent *ext, size_t n, const struct iovec *mem,
                            size_t nmem, size_t *done)
{
    mp_fence *fc = FC(io);
    note_extents(fc, ext, n);
    int rc = wait_extents(fc, ext, n);
    if (rc == RFS_OK &&
        (rc = fc->below->ops->pwritev_gather(fc->below, ext, n, mem, nmem, done)) == RFS_OK)
        note_end(fc, extents_end(ext, n));
    issued(fc);
    return noted(fc, rc);
}

static int f_pread(rfs_io *io, void *buf, size_t len, uint64_t off, size_t *done)
{
    mp_fence *fc = FC(io);
    int rc = wait_others(fc, off, off + len);
    return noted(fc, rc != RFS_OK ? rc : fc->below->ops->pread(fc->below, buf, len, off, done));
}

/* Native nonblocking accesses (rfs_io start/end) pass through: a write's range is this rank's
 * like a blocking write's, and both wait for other ranks' published writes first. */
static int f_start(rfs_io *io, unsigned how, void *buf, size_t len, uint64_t off, rfs_io_async *a)
{
    mp_fence *fc = FC(io);
    int is_write = (how & RFS_IO_ASYNC_WRITE) != 0;
    if (is_write) {
        rfs_extent e = {off, len};
        note_extents(fc, &e, 1);
    }
    int rc = wait_others(fc, off, off + len);
    if (rc == RFS_OK)
        rc = fc->below->ops->start(fc->below, how, buf, len, off, a);
    if (rc == RFS_OK && is_write)
        note_end(fc, off + len); /* as pwrite: the size this rank vouches for once it is done */
    if (is_write)
        issued(fc);
    return rc == RFS_E_UNSUPPORTED ? rc : noted(fc, rc);
}

static int f_end(rfs_io *io, rfs_io_async *a, size_t *done)
{
    mp_fence *fc = FC(io);
    return noted(fc, fc->below->ops->end(fc->below, a, done));
}

static int f_preadv(rfs_io *io, const rfs_extent *ext, size_t n, void *buf, size_t *done)
{
    mp_fence *fc = FC(io);
    int rc = wait_extents(fc, ext, n);
    return noted(fc, rc != RFS_OK ? rc : fc->below->ops->preadv(fc->below, ext, n, buf, done));
}

/* Calls that see the whole file wait for every other rank's published writes first. */
static int f_sync(rfs_io *io)
{
    mp_fence *fc = FC(io);
    int rc = wait_others(fc, 0, UINT64_MAX);
    return noted(fc, rc != RFS_OK ? rc : fc->below->ops->sync(fc->below));
}

static int f_flush(rfs_io *io, int report)
{
    mp_fence *fc = FC(io);
    return noted(fc, fc->below->ops->flush(fc->below, report));
}

/* What the ranks vouch for (local_size); else the server's size, or the end of another rank's
 * unanswered write when that is further: it is in the file once answered, as it would be
 * after the barrier that used to wait for it. */
static int f_get_size(rfs_io *io, uint64_t *size)
{
    mp_fence *fc = FC(io);
    if (local_size(fc, size)) {
        __atomic_add_fetch(&fc->sizes_known, 1, __ATOMIC_RELAXED);
        return RFS_OK;
    }
    uint64_t end = 0;
    pthread_mutex_lock(&fc->mu);
    for (int r = 0; r < fc->size; r++)
        if (fc->need[r] && __atomic_load_n(&fc->slots[r]->answered, __ATOMIC_ACQUIRE) < fc->need[r])
            for (uint64_t i = 0; i < fc->n_need[r]; i++)
                if (fc->hi[r][i] > end)
                    end = fc->hi[r][i];
    pthread_mutex_unlock(&fc->mu);
    int rc = fc->below->ops->get_size(fc->below, size);
    if (rc == RFS_OK && *size < end)
        *size = end;
    return noted(fc, rc);
}

static int f_set_size(rfs_io *io, uint64_t size)
{
    mp_fence *fc = FC(io);
    int rc = wait_others(fc, 0, UINT64_MAX);
    return noted(fc, rc != RFS_OK ? rc : fc->below->ops->set_size(fc->below, size));
}

static int f_preallocate(rfs_io *io, uint64_t size)
{
    mp_fence *fc = FC(io);
    int rc = wait_others(fc, 0, UINT64_MAX);
    return noted(fc, rc != RFS_OK ? rc : fc->below->ops->preallocate(fc->below, size));
}

/* A collective call on the server group: as the list I/O it is, with the rank's own runs. */
static int f_coll_join(rfs_io *io, const unsigned char id[16], unsigned nranks, const char *hints,
                       size_t *max_part)
{
    mp_fence *fc = FC(io);
    return fc->below->ops->coll_join(fc->below, id, nranks, hints, max_part);
}

static int f_coll_listio(rfs_io *io, int is_write, const rfs_extent *ext, size_t n, void *buf,
                         size_t *done)
{
    mp_fence *fc = FC(io);
    if (is_write)
        note_extents(fc, ext, n);
    int rc = wait_extents(fc, ext, n);
    if (rc == RFS_OK)
        rc = fc->below->ops->coll_listio(fc->below, is_write, ext, n, buf, done);
    if (is_write) {
        if (rc == RFS_OK)
            note_end(fc, extents_end(ext, n));
        issued(fc);
    }
    return noted(fc, rc);
}

static int f_counter(rfs_io *io, uint32_t key, int set, int64_t delta, int64_t *old)
{
    mp_fence *fc = FC(io);
    return fc->below->ops->counter(fc->below, key, set, delta, old);
}

static int f_lock(rfs_io *io, uint64_t off, uint64_t len, unsigned mode, int wait_ms)
{
    mp_fence *fc = FC(io);
    if (!(fc->below->features & RFS_IO_F_LOCKS)) /* its op only says so: nothing to wait for */
        return fc->below->ops->lock(fc->below, off, len, mode, wait_ms);
    int rc = wait_others(fc, 0, UINT64_MAX);
    return rc != RFS_OK ? rc : fc->below->ops->lock(fc->below, off, len, mode, wait_ms);
}

static int f_unlock(rfs_io *io, uint64_t off, uint64_t len)
{
    mp_fence *fc = FC(io);
    return fc->below->ops->unlock(fc->below, off, len);
}

static void stop_helper(mp_fence *fc)
{
    pthread_mutex_lock(&fc->mu);
    int running = !fc->stop;
    fc->stop = 1;
    pthread_cond_broadcast(&fc->cv);
    pthread_mutex_unlock(&fc->mu);
    if (running)
        rfs_task_join(&fc->th);
}

static int f_close(rfs_io *io)
{
    mp_fence *fc = FC(io);
    stop_helper(fc);
    rfs_io *below = fc->below;
    pthread_mutex_destroy(&fc->mu);
    pthread_cond_destroy(&fc->cv);
    free(fc->slots);
    free(fc->need);
    free(fc->n_need);
    free(fc->lo);
    free(fc->hi);
    free(fc);
    return below->ops->close(below);
}

/* No view ops: views are mapped above, so every request's file ranges are known here. (With
 * server views each new view's SET_VIEW waited for the previous one's reply, a round trip per
 * HDF5 dataset once barriers stopped waiting.) No write marks: only the fence itself follows
 * the marks of the layer below. */
static const rfs_io_ops fence_ops = {
    .pread = f_pread,
    .pwrite = f_pwrite,
    .preadv = f_preadv,
    .pwritev = f_pwritev,
    .pwritev_gather = f_pwritev_gather,
    .sync = f_sync,
    .flush = f_flush,
    .write_mark = rfs_io_gen_write_mark,
    .mark_answered = rfs_io_gen_mark_answered,
    .get_size = f_get_size,
    .set_size = f_set_size,
    .preallocate = f_preallocate,
    .counter = f_counter,
    .lock = f_lock,
    .unlock = f_unlock,
    .set_view = rfs_io_gen_set_view,
    .view_read = rfs_io_gen_view_read,
    .view_write = rfs_io_gen_view_write,
    .close = f_close,
    .version = rfs_io_gen_version,
    .remove = rfs_io_gen_remove,
    .start = f_start,
    .end = f_end,
    .coll_join = f_coll_join,
    .coll_listio = f_coll_listio,
};

/* ---- MPI side (application thread) ---- */

int mp_fence_open(mp_file *f, int node_ranks)
{
    const mp_hints *h = &f->hints;
    int early = h->abt == MP_ENABLE || h->write_window > 0;
    int want = h->lazy_barrier == MP_ENABLE && early && f->size > 1 && node_ranks == f->size &&
               h->view_mode != MP_VIEW_SERVER && (f->io->features & RFS_IO_F_MARKS);
    /* node_ranks and the hints are the same on every rank (hints may differ in principle:
     * agree, so that nobody waits in a window allocation alone). */
    int all = 0;
    PMPI_Allreduce(&want, &all, 1, MPI_INT, MPI_MIN, f->comm);
    if (!all)
        return MPI_SUCCESS;
    mp_fence *fc = calloc(1, sizeof *fc);
    int ok = fc != NULL;
    if (ok) {
        fc->slots = calloc((size_t)f->size, sizeof *fc->slots);
        fc->need = calloc((size_t)f->size, sizeof *fc->need);
        fc->n_need = calloc((size_t)f->size, sizeof *fc->n_need);
        fc->lo = calloc((size_t)f->size, sizeof *fc->lo);
        fc->hi = calloc((size_t)f->size, sizeof *fc->hi);
        ok = fc->slots && fc->need && fc->n_need && fc->lo && fc->hi;
    }
    slot *mine = NULL;
    /* A failure must come back here, not through the communicator's (fatal) handler. */
    MPI_Errhandler old;
    PMPI_Comm_get_errhandler(f->comm, &old);
    PMPI_Comm_set_errhandler(f->comm, MPI_ERRORS_RETURN);
    int wrc = ok ? PMPI_Win_allocate_shared((MPI_Aint)sizeof(slot), 8, MPI_INFO_NULL, f->comm,
                                            &mine, &fc->win)
                 : MPI_ERR_NO_MEM;
    PMPI_Comm_set_errhandler(f->comm, old);
    PMPI_Errhandler_free(&old);
    /* Collective: a rank that could not join makes everyone go without (no error: barriers
     * then wait as before). */
    int good = wrc == MPI_SUCCESS, allgood = 0;
    PMPI_Allreduce(&good, &allgood, 1, MPI_INT, MPI_MIN, f->comm);
    if (!allgood) {
        if (wrc == MPI_SUCCESS)
            PMPI_Win_free(&fc->win);
        if (fc) {
            free(fc->slots), free(fc->need), free(fc->n_need), free(fc->lo), free(fc->hi);
            free(fc);
        }
        return MPI_SUCCESS;
    }
    memset(mine, 0, sizeof *mine);
    /* Without the OPEN reply's size (no versions, a deferred open) this rank cannot vouch. */
    mine->size_base = f->size_at_open;
    mine->size_unknown = !f->size_at_open_valid;
    for (int r = 0; r < f->size; r++) {
        MPI_Aint sz;
        int du;
        void *base = NULL;
        PMPI_Win_shared_query(fc->win, r, &sz, &du, &base);
        fc->slots[r] = base;
    }
    /* What the layer below does not do, the layer above must not find here either (it packs
     * instead of gathering when the layer below would only pack again). */
    fc->io.ops = &fence_ops;
    fc->io.features =
        f->io->features & (RFS_IO_F_GATHER | RFS_IO_F_LOCKS | RFS_IO_F_COUNTERS | RFS_IO_F_ASYNC);
    memcpy(fc->io.server, f->io->server, sizeof fc->io.server);
    memcpy(fc->io.path, f->io->path, sizeof fc->io.path);
    fc->below = f->io;
    fc->rank = f->rank;
    fc->size = f->size;
    fc->timeout_ms = h->io_timeout_ms;
    pthread_mutex_init(&fc->mu, NULL);
    pthread_cond_init(&fc->cv, NULL);
    if (rfs_task_start(f->rt, &fc->th, helper_main, fc) != 0)
        fc->stop = 1; /* no helper: barriers would make others wait forever; agree below */
    int started = !fc->stop, allstarted = 0;
    PMPI_Allreduce(&started, &allstarted, 1, MPI_INT, MPI_MIN, f->comm);
    if (!allstarted) {
        stop_helper(fc);
        PMPI_Win_free(&fc->win);
        pthread_mutex_destroy(&fc->mu);
        pthread_cond_destroy(&fc->cv);
        free(fc->slots), free(fc->need), free(fc->n_need), free(fc->lo), free(fc->hi);
        free(fc);
        return MPI_SUCCESS;
    }
    f->io = &fc->io;
    f->fence = fc;
    return MPI_SUCCESS;
}

int mp_fence_publish(mp_file *f, MPI_Comm comm)
{
    mp_fence *fc = f->fence;
    if (!fc)
        return 0;
    int cmp = MPI_UNEQUAL;
    if (comm == MPI_COMM_NULL || PMPI_Comm_compare(comm, f->comm, &cmp) != MPI_SUCCESS ||
        (cmp != MPI_IDENT && cmp != MPI_CONGRUENT))
        return 0;
    slot *me = fc->slots[fc->rank];
    /* Every write answered already (after a sync, say): nothing to publish, however far the
     * helper is behind. Otherwise another rank would count this rank's writes as pending,
     * failed ones too (f_get_size). */
    pthread_mutex_lock(&fc->mu);
    /* (Under mu: a write noted in own[] is either still being issued, or counted in the
     * mark taken here.) */
    if (fc->issuing == 0 &&
        fc->below->ops->mark_answered(fc->below, fc->below->ops->write_mark(fc->below)))
        fc->n_own = 0;
    uint64_t e = ++fc->epoch;
    int half = (int)(e & 1);
    /* At most PUB_RANGES, the closest ones merged. */
    static own_range tmp[OWN_RANGES]; /* application thread only */
    int n = fc->n_own;
    memcpy(tmp, fc->own, (size_t)n * sizeof *tmp);
    n = shrink(tmp, n, PUB_RANGES);
    for (int i = 0; i < n; i++) {
        me->lo[half][i] = tmp[i].lo;
        me->hi[half][i] = tmp[i].hi;
    }
    me->n[half] = (uint64_t)n;
    __atomic_store_n(&me->epoch[half], e, __ATOMIC_RELEASE);
    if (n == 0 && fc->want <= fc->done) {
        /* Nothing unanswered and the helper idle: barrier e is answered already. */
        fc->done = fc->want = e;
        __atomic_store_n(&me->answered, e, __ATOMIC_RELEASE);
    } else {
        fc->want = e;
        fc->want_mark = fc->below->ops->write_mark(fc->below);
        pthread_cond_broadcast(&fc->cv);
    }
    pthread_mutex_unlock(&fc->mu);
    return 1;
}

void mp_fence_collect(mp_file *f)
{
    mp_fence *fc = f->fence;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    pthread_mutex_lock(&fc->mu);
    uint64_t e = fc->epoch;
    int half = (int)(e & 1);
    for (int r = 0; r < fc->size; r++) {
        if (r == fc->rank)
            continue;
        slot *s = fc->slots[r];
        if (__atomic_load_n(&s->epoch[half], __ATOMIC_ACQUIRE) != e) {
            /* Cannot happen when every rank passes the same barriers; be safe: wait for
             * everything of that rank. */
            fc->need[r] = e;
            fc->n_need[r] = 1;
            fc->lo[r][0] = 0;
            fc->hi[r][0] = UINT64_MAX;
            continue;
        }
        uint64_t n = s->n[half];
        if (n > PUB_RANGES)
            n = PUB_RANGES;
        fc->need[r] = n ? e : 0;
        fc->n_need[r] = n;
        for (uint64_t i = 0; i < n; i++) {
            fc->lo[r][i] = s->lo[half][i];
            fc->hi[r][i] = s->hi[half][i];
        }
    }
    pthread_mutex_unlock(&fc->mu);
}

void mp_fence_close(mp_file *f, int collective)
{
    mp_fence *fc = f->fence;
    if (!fc)
        return;
    /* Other ranks may still wait for this rank's marks until they are in close too: the
     * helper goes on marking until then, and is stopped (without waiting for the writes it
     * looks after: a deferred close must not) before the shared memory goes. */
    if (collective)
        PMPI_Barrier(f->comm);
    stop_helper(fc);
    if (mp_stats_enabled() || mp_trace_enabled())
        fprintf(stderr,
                "rfs stats %s: lazy barriers %llu, waits for other ranks' writes %llu "
                "(%.3f s), sizes known without asking %llu\n",
                f->name, (unsigned long long)fc->epoch, (unsigned long long)fc->waits,
                (double)fc->waited_ns / 1e9, (unsigned long long)fc->sizes_known);
    if (collective)
        PMPI_Win_free(&fc->win);
    f->fence = NULL;
}

void mp_fence_size_changed(mp_file *f, uint64_t size, int exact, int ok)
{
    mp_fence *fc = f->fence;
    if (!fc)
        return;
    if (ok)
        note_size_change(fc, size, exact);
    else
        seen_failure(fc);
}
