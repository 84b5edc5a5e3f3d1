/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The byte engine: moves bytes [pos, pos+len) of a view's data stream to or from the file with
 * rfs_io ops only. Three paths: a contiguous view is one pread/pwrite; otherwise the view is
 * sent once to the server (set_view, lazily with the first access, as rfs-abt.txt sec. 3.1 does)
 * and view_read/view_write carry only the packed bytes; if the layer below has no view ops (or
 * the rfs_view hint says "client"), the view is mapped here and list I/O (preadv/pwritev) sends
 * only the bytes asked for. Never read-modify-write over the network.
 * Everything in this file is free of MPI calls, so the I/O threads can run it. */
#include "mpiio/mpiio_internal.h"

#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/uio.h>

#include "common/log.h"

typedef struct run_list {
    rfs_extent *ext;
    size_t n, cap;
} run_list;

static int add_run(void *ctx, uint64_t off, uint64_t len)
{
    run_list *l = ctx;
    if (len == 0)
        return 0;
    if (l->n && l->ext[l->n - 1].offset + l->ext[l->n - 1].length == off) {
        l->ext[l->n - 1].length += len;
        return 0;
    }
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        rfs_extent *ne = realloc(l->ext, nc * sizeof *ne);
        if (!ne)
            return RFS_E_NOMEM;
        l->ext = ne;
        l->cap = nc;
    }
    l->ext[l->n++] = (rfs_extent){off, len};
    return 0;
}

int mp_view_runs(const mp_view *v, uint64_t pos, uint64_t len, rfs_extent **ext, size_t *n)
{
    run_list l = {0};
    int rc = RFS_OK;
    if (len == 0) {
        /* nothing */
    } else if (v->contig) {
        rc = add_run(&l, (uint64_t)v->disp + pos, len);
    } else {
        rc = rfs_flat_map(v->flat, (uint64_t)v->disp, pos, len, add_run, &l);
    }
    if (rc != RFS_OK) {
        free(l.ext);
        return rfs_fail(rc, "cannot map the file view: %s", rfs_strerror(rc));
    }
    *ext = l.ext;
    *n = l.n;
    return RFS_OK;
}

static uint64_t runs_total(const rfs_extent *e, size_t n)
{
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += e[i].length;
    return t;
}

int mp_listio(mp_file *f, int is_write, const rfs_extent *ext, size_t n, void *data, size_t *done)
{
    rfs_io *io = f->io;
    size_t total = 0;
    char *p = data;
    size_t step = (size_t)(f->hints.max_extents > 0 ? f->hints.max_extents : 16384);
    for (size_t i = 0; i < n; i += step) {
        size_t k = n - i < step ? n - i : step;
        size_t want = (size_t)runs_total(ext + i, k), got = 0;
        int rc;
        if (k == 1) {
            rc = is_write ? io->ops->pwrite(io, p, want, ext[i].offset, &got)
                          : io->ops->pread(io, p, want, ext[i].offset, &got);
        } else {
            rc = is_write ? io->ops->pwritev(io, ext + i, k, p, &got)
                          : io->ops->preadv(io, ext + i, k, p, &got);
        }
        total += got;
        p += got;
        if (rc != RFS_OK) {
            *done = total;
            return rc;
        }
        if (got < want)
            break; /* end of file (reads) */
    }
    *done = total;
    return RFS_OK;
}

int mp_flush_writes(mp_file *f)
{
    int rc = f->io->ops->flush(f->io, 1);
    return rc == RFS_OK ? MPI_SUCCESS : mp_io_error(f, rc, "write", rfs_last_error());
}

/* ---- server view slots ----
 * The server keeps RFS_IO_VIEW_SLOTS decoded views per handle; the view ids are slot numbers.
 * A view is sent into a slot at its first access (lazily, as rfs-abt.txt sec. 3.1 does), and an
 * access finds a slot already holding an identical view (same displacement and encoding) before
 * it sends anything, so the few views HDF5 sets over and over cross the network once. When every
 * slot holds another view, the least recently used one that no access in flight is using is
 * refilled; the server applies SET_VIEW only after the requests sent before it (a barrier), so
 * refilling a slot cannot change a view under an access already sent. When all slots are busy
 * (more distinct views in flight at once than slots), the access maps the view on the client. */

static int slot_holds(const mp_view_slot *s, const mp_view *v)
{
    return s->enc && s->hash == v->hash && s->disp == v->disp && s->enc_len == v->enc_len &&
           memcmp(s->enc, v->enc, v->enc_len) == 0;
}

/* Caller holds f->mu. The slot for v, pinned, or -1 when every slot is busy or out of memory;
 * *fill is set when the slot must be (re)filled with SET_VIEW. */
static int pin_slot(mp_file *f, mp_view *v, int *fill)
{
    *fill = 0;
    int k = -1;
    if (v->slot >= 0 && f->slots[v->slot].gen == v->slot_gen) {
        k = v->slot;
    } else {
        for (int i = 0; i < (int)RFS_IO_VIEW_SLOTS && k < 0; i++)
            if (slot_holds(&f->slots[i], v))
                k = i;
        if (k >= 0)
            f->set_views_saved++;
    }
    if (k < 0) {
        for (int i = 0; i < (int)RFS_IO_VIEW_SLOTS; i++) {
            mp_view_slot *s = &f->slots[i];
            if (s->pins == 0 &&
                (k < 0 || !s->enc || (f->slots[k].enc && s->last_use < f->slots[k].last_use)))
                k = i;
            if (k == i && !s->enc)
                break;
        }
        if (k < 0)
            return -1;
        mp_view_slot *s = &f->slots[k];
        uint8_t *copy = malloc(v->enc_len);
        if (!copy)
            return -1;
        memcpy(copy, v->enc, v->enc_len);
        free(s->enc);
        *s = (mp_view_slot){.enc = copy,
                            .enc_len = v->enc_len,
                            .disp = v->disp,
                            .hash = v->hash,
                            .gen = ++f->slot_clock};
        *fill = 1;
    }
    f->slots[k].pins++;
    f->slots[k].last_use = ++f->slot_clock;
    v->slot = k;
    v->slot_gen = f->slots[k].gen;
    return k;
}

/* An access through slot k is over; failed: the server may not hold what we think (a refused
 * SET_VIEW clears its slot), so the slot is emptied and the next access sends the view again. */
static void unpin_slot(mp_file *f, int k, int failed)
{
    pthread_mutex_lock(&f->mu);
    mp_view_slot *s = &f->slots[k];
    s->pins--;
    if (failed) {
        free(s->enc);
        s->enc = NULL;
        s->gen = ++f->slot_clock;
    }
    pthread_mutex_unlock(&f->mu);
}

void mp_view_slots_free(mp_file *f)
{
    for (unsigned i = 0; i < RFS_IO_VIEW_SLOTS; i++) {
        free(f->slots[i].enc);
        f->slots[i].enc = NULL;
    }
    if (mp_stats_enabled() || mp_trace_enabled())
        fprintf(stderr, "rfs stats %s: views sent %llu, found already on the server %llu\n",
                f->name, (unsigned long long)f->set_views_sent,
                (unsigned long long)f->set_views_saved);
}

/* Makes sure a server slot holds view v. *slot is the pinned slot (unpin_slot when the access
 * is over), or -1 to map the view on the client. Returns RFS_OK or an rfs_err. */
static int ensure_server_view(mp_file *f, mp_view *v, int *slot)
{
    rfs_io *io = f->io;
    pthread_mutex_lock(&f->mu);
    int use = f->server_views && (io->features & RFS_IO_F_VIEWS);
    int fill = 0;
    *slot = use ? pin_slot(f, v, &fill) : -1;
    if (*slot < 0 || !fill) {
        pthread_mutex_unlock(&f->mu);
        return RFS_OK;
    }
    /* Sent under the lock: an access that finds this slot afterwards is sent after it. */
    int rc = io->ops->set_view(io, (uint32_t)*slot, (uint64_t)v->disp, v->enc, v->enc_len);
    if (rc == RFS_OK)
        f->set_views_sent++;
    else if (rc == RFS_E_UNSUPPORTED && f->hints.view_mode != MP_VIEW_SERVER)
        f->server_views = 0; /* a server without views: map on the client from now on */
    pthread_mutex_unlock(&f->mu);
    if (rc == RFS_OK)
        return RFS_OK;
    unpin_slot(f, *slot, 1);
    *slot = -1;
    return rc == RFS_E_UNSUPPORTED && !f->server_views ? RFS_OK : rc;
}

/* Gathering a write from more runs than this costs more in bookkeeping than the packing copy
 * it saves (16 bytes of iovec per run, and ABT walks them). */
#define GATHER_MAX_RUNS ((size_t)1 << 20)

int mp_gather_write(mp_file *f, mp_view *v, uint64_t pos, const mp_buf *b, size_t *done)
{
    rfs_io *io = f->io;
    *done = 0;
    if (!(io->features & RFS_IO_F_GATHER) || b->data || b->len <= 0)
        return MP_NOT_GATHERED;
    struct iovec *mem;
    size_t nmem;
    if (mp_buf_runs(b, GATHER_MAX_RUNS, &mem, &nmem) != MPI_SUCCESS)
        return MP_NOT_GATHERED;
    rfs_extent one = {(uint64_t)v->disp + pos, (uint64_t)b->len}, *ext = &one;
    size_t n = 1;
    int rc = v->contig ? RFS_OK : mp_view_runs(v, pos, (uint64_t)b->len, &ext, &n);
    if (rc == RFS_OK) {
        RFS_LOGD("mpiio: %s: write of %lld bytes gathered from %zu memory runs", f->name,
                 (long long)b->len, nmem);
        rc = io->ops->pwritev_gather(io, ext, n, mem, nmem, done);
    }
    if (ext != &one)
        free(ext);
    free(mem);
    return rc;
}

int mp_stream_io(mp_file *f, mp_view *v, int is_write, uint64_t pos, void *data, size_t len,
                 size_t *done)
{
    rfs_io *io = f->io;
    *done = 0;
    if (len == 0)
        return RFS_OK;
    if (v->contig) {
        uint64_t off = (uint64_t)v->disp + pos;
        return is_write ? io->ops->pwrite(io, data, len, off, done)
                        : io->ops->pread(io, data, len, off, done);
    }
    /* The server takes only views without overlaps (server/view.c). */
    int k = -1;
    if (!v->overlap) {
        int vrc = ensure_server_view(f, v, &k);
        if (vrc != RFS_OK)
            return vrc;
    }
    if (k >= 0) {
        int rc = is_write ? io->ops->view_write(io, (uint32_t)k, pos, data, len, done)
                          : io->ops->view_read(io, (uint32_t)k, pos, data, len, done);
        unpin_slot(f, k, rc != RFS_OK);
        return rc;
    }
    rfs_extent *ext;
    size_t n;
    int rc = mp_view_runs(v, pos, len, &ext, &n);
    if (rc != RFS_OK)
        return rc;
    rc = mp_listio(f, is_write, ext, n, data, done);
    free(ext);
    return rc;
}

/* ---- atomic mode ---- */

typedef struct bounds {
    uint64_t lo, hi;
    int any;
} bounds;

static int note_bounds(void *ctx, uint64_t off, uint64_t len)
{
    bounds *b = ctx;
    if (!b->any || off < b->lo)
        b->lo = off;
    if (!b->any || off + len > b->hi)
        b->hi = off + len;
    b->any = 1;
    return 0;
}

int mp_atomic_lock(mp_file *f, mp_view *v, int is_write, uint64_t pos, uint64_t len, uint64_t *lo,
                   uint64_t *hi)
{
    bounds b = {0};
    if (len == 0) {
        *lo = *hi = 0;
        return RFS_OK;
    }
    if (v->contig)
        note_bounds(&b, (uint64_t)v->disp + pos, len);
    else
        rfs_flat_map(v->flat, (uint64_t)v->disp, pos, len, note_bounds, &b);
    *lo = b.lo;
    *hi = b.hi;
    if (!(f->io->features & RFS_IO_F_LOCKS))
        return rfs_fail(RFS_E_UNSUPPORTED, "%s:%s: byte-range locks not supported", f->io->server,
                        f->io->path);
    int rc;
    /* The server waits up to lock_wait_ms per try; a bounded number of tries. */
    for (int tries = 0; tries < 10; tries++) {
        rc = f->io->ops->lock(f->io, b.lo, b.hi - b.lo, is_write ? RFS_LOCK_EXCL : RFS_LOCK_SHARED,
                              f->hints.lock_wait_ms);
        if (rc != RFS_E_BUSY)
            break;
    }
    return rc;
}

void mp_atomic_unlock(mp_file *f, uint64_t lo, uint64_t hi)
{
    if (hi > lo && (f->io->features & RFS_IO_F_LOCKS))
        f->io->ops->unlock(f->io, lo, hi - lo);
}

int64_t mp_view_eof_pos(const mp_view *v, int64_t size)
{
    int64_t rel = size - v->disp;
    if (rel <= 0)
        return 0;
    if (v->contig)
        return rel;
    const rfs_flat *fl = v->flat;
    int64_t tiles = rel / fl->extent, rem = rel % fl->extent, pos = tiles * fl->size;
    for (size_t i = 0; i < fl->n; i++) {
        if (fl->off[i] >= rem)
            break;
        pos += fl->off[i] + fl->len[i] <= rem ? fl->len[i] : rem - fl->off[i];
    }
    return pos;
}
