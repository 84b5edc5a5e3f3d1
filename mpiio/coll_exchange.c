/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* One round of two-phase collective I/O among the ranks: every rank finds its pieces in each
 * aggregator's window of the round and the ranks exchange their counts (all-to-all); every
 * buffer the round needs is taken before anything moves and the ranks agree that all have
 * them; then the piece lists and, for writes, the data go to the aggregators, which do their
 * list I/O (coll_io.c); for reads the bytes come back to their ranks. */
#include "mpiio/coll_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

void mp_coll_round_mem_free(round_mem *m)
{
    free(m->sp);
    free(m->rp);
    free(m->sdata);
    free(m->rdata);
    free(m->pcs);
    free(m->ext);
    free(m->iobuf);
    memset(m, 0, sizeof *m);
}

/* Makes *p hold at least need bytes (contents not kept). 0, or -1 with *p freed. */
static int grow(void *pp, size_t *cap, size_t need)
{
    void **p = pp;
    if (need == 0)
        need = 1;
    if (*p && *cap >= need)
        return 0;
    free(*p);
    *p = malloc(need);
    *cap = *p ? need : 0;
    return *p ? 0 : -1;
}

/* My pieces for every aggregator in round r, and the (pieces, bytes) counts for each rank in
 * t->sc. After a failure this rank takes part with nothing. Returns the first error. */
static int find_pieces(tp *t, int64_t r, int code)
{
    for (int a = 0; a < t->naggr; a++) {
        t->pairs[a] = t->spos[a] = NULL;
        t->na[a] = 0;
        t->ba[a] = 0;
        int e = code == MPI_SUCCESS
                    ? mp_coll_my_pieces(t, a, r, &t->pairs[a], &t->spos[a], &t->na[a], &t->ba[a])
                    : code;
        if (e == MPI_SUCCESS && (!mp_coll_fits_int(t->ba[a]) || t->na[a] > INT_MAX / 2))
            e = mp_error_code(MPI_ERR_COUNT,
                              "rfs: %s: a collective round holds more than "
                              "2^31 bytes or pieces for one aggregator",
                              t->f->name);
        if (e != MPI_SUCCESS) {
            code = code ? code : e;
            t->na[a] = 0;
            t->ba[a] = 0;
        }
        int j = mp_coll_aggr_rank(t, a);
        t->sc[2 * j] = t->na[a];
        t->sc[2 * j + 1] = (int)t->ba[a];
    }
    return code;
}

/* The round's sizes (counts and displacements of both exchanges, from t->sc and t->rc) and
 * every buffer they need. Returns 1 if this rank cannot take part (*code says why); *np gets
 * the pieces it receives and *rb the bytes. */
static int size_round(tp *t, int *code, size_t *np, int64_t *rb_out)
{
    round_mem *m = &t->mem;
    int64_t stot = 0, rtot = 0, sb = 0, rb = 0;
    for (int j = 0; j < t->nprocs; j++) {
        t->scnt[j] = 2 * t->sc[2 * j];
        t->sdsp[j] = (int)stot;
        stot += t->scnt[j];
        t->rcnt[j] = 2 * t->rc[2 * j];
        t->rdsp[j] = (int)rtot;
        rtot += t->rcnt[j];
        t->bsc[j] = t->sc[2 * j + 1];
        t->bsd[j] = (int)sb;
        sb += t->bsc[j];
        t->brc[j] = t->rc[2 * j + 1];
        t->brd[j] = (int)rb;
        rb += t->brc[j];
        if (!mp_coll_fits_int(stot) || !mp_coll_fits_int(rtot) || !mp_coll_fits_int(sb) ||
            !mp_coll_fits_int(rb))
            break;
    }
    *np = (size_t)(rtot / 2);
    *rb_out = rb;
    if (*code != MPI_SUCCESS)
        return 1;
    if (!mp_coll_fits_int(stot) || !mp_coll_fits_int(rtot) || !mp_coll_fits_int(sb) ||
        !mp_coll_fits_int(rb)) {
        /* Overlapping accesses of many ranks can pile more than 2^31 bytes on one window. */
        *code = mp_error_code(MPI_ERR_COUNT,
                              "rfs: %s: a collective round would exchange more "
                              "than 2^31 bytes; lower cb_buffer_size",
                              t->f->name);
        return 1;
    }
    int io = t->my_aggr >= 0 && *np;
    int bad = grow(&m->sp, &m->sp_cap, (size_t)stot * sizeof *m->sp) |
              grow(&m->rp, &m->rp_cap, (size_t)rtot * sizeof *m->rp) |
              grow(&m->sdata, &m->sdata_cap, (size_t)sb) |
              grow(&m->rdata, &m->rdata_cap, (size_t)rb) |
              grow(&m->pcs, &m->pcs_cap, *np * sizeof *m->pcs);
    if (io && !m->iobuf && t->pipe)
        m->iobuf = mp_wpipe_reuse(t->pipe, (size_t)rb, &m->iobuf_cap);
    if (io)
        bad |= grow(&m->ext, &m->ext_cap, *np * sizeof *m->ext) |
               grow(&m->iobuf, &m->iobuf_cap, (size_t)rb);
    if (bad) {
        *code = mp_error_code(MPI_ERR_NO_MEM,
                              "rfs: %s: out of memory for a collective "
                              "round (%lld bytes of data to send, %lld to receive)",
                              t->f->name, (long long)sb, (long long)rb);
        return 1;
    }
    return 0;
}

/* The piece lists and, for writes, their data to the aggregators. */
static void send_pieces(tp *t)
{
    round_mem *m = &t->mem;
    MPI_Comm comm = t->f->comm;
    for (int a = 0; a < t->naggr; a++)
        if (t->na[a])
            memcpy(m->sp + t->sdsp[mp_coll_aggr_rank(t, a)], t->pairs[a],
                   (size_t)t->na[a] * 2 * sizeof *m->sp);
    PMPI_Alltoallv(m->sp, t->scnt, t->sdsp, MPI_INT64_T, m->rp, t->rcnt, t->rdsp, MPI_INT64_T,
                   comm);
    if (!t->is_write)
        return;
    for (int a = 0; a < t->naggr; a++) {
        char *d = m->sdata + t->bsd[mp_coll_aggr_rank(t, a)];
        for (int i = 0; i < t->na[a]; i++) {
            memcpy(d, t->data + t->spos[a][i], (size_t)t->pairs[a][2 * i + 1]);
            d += t->pairs[a][2 * i + 1];
        }
    }
    PMPI_Alltoallv(m->sdata, t->bsc, t->bsd, MPI_BYTE, m->rdata, t->brc, t->brd, MPI_BYTE, comm);
}

/* The aggregator's pieces as received, in rank order (m->pcs). */
static void collect_pieces(tp *t)
{
    round_mem *m = &t->mem;
    size_t k = 0;
    for (int j = 0; j < t->nprocs; j++) {
        int64_t boff = t->brd[j];
        for (int i = 0; i < t->rcnt[j] / 2; i++, k++) {
            int64_t off = m->rp[t->rdsp[j] + 2 * i], len = m->rp[t->rdsp[j] + 2 * i + 1];
            m->pcs[k] = (piece){off, len, m->rdata + boff, j, boff};
            boff += len;
        }
    }
}

/* Reads: each piece's bytes at its place in the reply to its rank (idx holds it), the
 * replies exchanged, and each rank's bytes copied to its stream. */
static void reply_reads(tp *t, int have_data, size_t np, int64_t rb)
{
    round_mem *m = &t->mem;
    if (have_data)
        for (size_t i = 0; i < np; i++)
            memcpy(m->rdata + m->pcs[i].idx, m->pcs[i].data, (size_t)m->pcs[i].len);
    else
        memset(m->rdata, 0, (size_t)(rb ? rb : 1));
    PMPI_Alltoallv(m->rdata, t->brc, t->brd, MPI_BYTE, m->sdata, t->bsc, t->bsd, MPI_BYTE,
                   t->f->comm);
    for (int a = 0; a < t->naggr; a++) {
        const char *d = m->sdata + t->bsd[mp_coll_aggr_rank(t, a)];
        for (int i = 0; i < t->na[a]; i++) {
            memcpy(t->data + t->spos[a][i], d, (size_t)t->pairs[a][2 * i + 1]);
            d += t->pairs[a][2 * i + 1];
        }
    }
}

int mp_coll_round(tp *t, int64_t r, int *stop)
{
    round_mem *m = &t->mem;
    int code = find_pieces(t, r, t->err);
    PMPI_Alltoall(t->sc, 2, MPI_INT, t->rc, 2, MPI_INT, t->f->comm);
    size_t np = 0;
    int64_t rb = 0;
    int local = size_round(t, &code, &np, &rb);
    int any = 0;
    PMPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, t->f->comm);
    if (any) {
        *stop = 1;
    } else {
        send_pieces(t);
        collect_pieces(t);
        int have_data = 0;
        if (t->my_aggr >= 0 && np) {
            int handed_off = 0;
            int e = mp_coll_aggregate_io(t, m->pcs, np, m->ext, m->iobuf, &handed_off);
            if (handed_off) { /* the write pipe owns them now */
                m->ext = NULL, m->iobuf = NULL;
                m->ext_cap = m->iobuf_cap = 0;
            }
            if (e != MPI_SUCCESS && code == MPI_SUCCESS)
                code = e;
            have_data = !t->is_write && e == MPI_SUCCESS;
        }
        if (!t->is_write)
            reply_reads(t, have_data, np, rb);
    }
    for (int a = 0; a < t->naggr; a++) {
        free(t->pairs[a]);
        free(t->spos[a]);
        t->pairs[a] = t->spos[a] = NULL;
    }
    return code;
}
