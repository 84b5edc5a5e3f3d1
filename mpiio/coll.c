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
 * the others waiting in an exchange (or killing the job). */
#include "mpiio/aggr.h"
#include "mpiio/wpipe.h"

#include "cache/cache.h"
#include "common/log.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct piece {
    int64_t off, len;
    const char *data;  /* write: source bytes; read: destination in the aggregator's buffer */
    int src;           /* rank, for read replies */
    int64_t idx;       /* position in that rank's request list */
} piece;

static int cmp_piece(const void *a, const void *b)
{
    const piece *x = a, *y = b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* ---- two-phase ---- */
/* One round's buffers whose size depends on the data. Kept from round to round of one call
 * and grown when a round needs more, so the rounds after the first reuse pages already
 * touched; ext and iobuf go to the write pipe when there is one. */
typedef struct round_mem {
    int64_t *sp, *rp;             /* piece lists sent / received */
    char *sdata, *rdata;          /* data sent / received (reads: the other way round) */
    piece *pcs;                   /* aggregator: the pieces received */
    rfs_extent *ext;              /* aggregator: its list I/O (a write pipe may take it) */
    char *iobuf;                  /* aggregator: that list I/O's data (likewise) */
    size_t sp_cap, rp_cap, sdata_cap, rdata_cap, pcs_cap, ext_cap, iobuf_cap;  /* bytes */
} round_mem;

static void round_mem_free(round_mem *m)
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

typedef struct tp {
    mp_file *f;
    int is_write;
    int nprocs, naggr, my_aggr;   /* my_aggr: my aggregator index or -1 */
    int *aggr;                    /* rank of each aggregator, ascending */
    int64_t gmin, fd_size, cbs, rounds;
    rfs_extent *runs;             /* my runs, ascending */
    int64_t *runpos;              /* stream offset of each run */
    size_t nruns;
    char *data;                   /* my stream bytes */
    size_t *cursor;               /* per aggregator: first run not yet done */
    int64_t eof;                  /* first missing file byte seen by this aggregator */
    mp_wpipe *pipe;               /* writes with several rounds: pipelined list writes */
    int err;                      /* first local error code */
    /* Per-call scratch, reused by every round (coll_scratch). */
    int64_t **pairs, **spos;      /* per aggregator: my pieces (off,len) and their stream offsets */
    int *na;                      /* per aggregator: my piece count */
    int64_t *ba;                  /* per aggregator: my bytes */
    int *sc, *rc;                 /* per rank: (pieces, bytes) sent / received */
    int *scnt, *sdsp, *rcnt, *rdsp;  /* piece list exchange (int64 units) */
    int *bsc, *bsd, *brc, *brd;      /* data exchange (bytes) */
    round_mem mem;
} tp;

/* The words per rank one collective call needs, in one block: P is the number of ranks and
 * bounds the number of aggregators. */
typedef struct coll_scratch {
    void *block;
    int64_t *all;                 /* allgather of (start, end) per rank */
    int64_t *sorted;              /* interleaved(): (start, end) pairs */
} coll_scratch;

static void *carve(char **p, size_t bytes)
{
    void *r = *p;
    *p += (bytes + 15) & ~(size_t)15;
    return r;
}

/* A few words per rank: without them the call cannot even take part in the collectives that
 * would let the others know, so these are the allocations that stop the process. */
static _Noreturn void bookkeeping_oom(const char *what, int P)
{
    fprintf(stderr, "librfs-mpiio: out of memory for %s of a collective access (%d ranks)\n",
            what, P);
    abort();
}

static void coll_scratch_init(coll_scratch *cs, tp *t, int P)
{
    size_t n = (size_t)P;
    size_t bytes = 16 * 16 + n * (2 + 2) * sizeof(int64_t) + n * 2 * sizeof(int64_t *) +
                   n * sizeof(int) + n * sizeof(int64_t) + n * 12 * sizeof(int);
    char *p = cs->block = calloc(1, bytes);
    if (!p)
        bookkeeping_oom("the per-rank bookkeeping", P);
    cs->all = carve(&p, n * 2 * sizeof(int64_t));
    cs->sorted = carve(&p, n * 2 * sizeof(int64_t));
    t->pairs = carve(&p, n * sizeof(int64_t *));
    t->spos = carve(&p, n * sizeof(int64_t *));
    t->na = carve(&p, n * sizeof(int));
    t->ba = carve(&p, n * sizeof(int64_t));
    t->sc = carve(&p, n * 2 * sizeof(int));
    t->rc = carve(&p, n * 2 * sizeof(int));
    int **one[] = {&t->scnt, &t->sdsp, &t->rcnt, &t->rdsp, &t->bsc, &t->bsd, &t->brc, &t->brd};
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
        *one[i] = carve(&p, n * sizeof(int));
}

static int aggr_rank(const tp *t, int i) { return t->aggr[i]; }

static void window(const tp *t, int a, int64_t r, int64_t *lo, int64_t *hi)
{
    int64_t ds = t->gmin + (int64_t)a * t->fd_size;
    *lo = ds + r * t->cbs;
    *hi = mp_min64(*lo + t->cbs, ds + t->fd_size);
}

/* My pieces for aggregator a in round r, appended to out (off,len pairs) with their stream
 * offsets in spos. */
static int my_pieces(tp *t, int a, int64_t r, int64_t **pairs, int64_t **spos, int *n, int64_t *bytes)
{
    int64_t lo, hi;
    window(t, a, r, &lo, &hi);
    size_t k = t->cursor[a];
    int cnt = 0;
    int64_t total = 0, cap = 0;
    int64_t *pp = NULL, *sp = NULL;
    while (k < t->nruns && lo < hi) {
        int64_t ro = (int64_t)t->runs[k].offset, re = ro + (int64_t)t->runs[k].length;
        if (re <= lo) {
            k++;
            continue;
        }
        if (ro >= hi)
            break;
        int64_t so = ro > lo ? ro : lo, eo = re < hi ? re : hi;
        if (cnt == cap) {
            cap = cap ? cap * 2 : 16;
            int64_t *np = realloc(pp, (size_t)cap * 2 * sizeof *np);
            int64_t *ns = realloc(sp, (size_t)cap * sizeof *ns);
            if (!np || !ns) {
                free(np ? np : pp);
                free(ns ? ns : sp);
                return MPI_ERR_NO_MEM;
            }
            pp = np;
            sp = ns;
        }
        pp[2 * cnt] = so;
        pp[2 * cnt + 1] = eo - so;
        sp[cnt] = t->runpos[k] + (so - ro);
        cnt++;
        total += eo - so;
        if (re <= hi)
            k++;
        else
            break;
    }
    t->cursor[a] = k;
    *pairs = pp;
    *spos = sp;
    *n = cnt;
    *bytes = total;
    return MPI_SUCCESS;
}

/* Merges sorted pieces into extents for one list I/O, in ext (room for np) and buf (room for
 * every piece's bytes), both allocated by the caller before the round's agreement. Writes: the
 * data are packed in extent order (overlapping pieces are both sent, in rank order, as
 * independent writes would); with a pipe, the pipe takes ext and buf. Reads: the union of the
 * requested ranges is read into buf and each piece's data points into it. */
static int aggregate_io(tp *t, piece *pcs, size_t np, rfs_extent *ext, char *buf, int *handed_off)
{
    mp_file *f = t->f;
    *handed_off = 0;
    qsort(pcs, np, sizeof *pcs, cmp_piece);
    size_t ne = 0;
    int64_t used = 0, bstart = 0;
    for (size_t i = 0; i < np; i++) {
        int64_t s = pcs[i].off, e = s + pcs[i].len;
        if (t->is_write) {
            memcpy(buf + used, pcs[i].data, (size_t)pcs[i].len);
            used += pcs[i].len;
            if (ne && (int64_t)(ext[ne - 1].offset + ext[ne - 1].length) == s)
                ext[ne - 1].length += (uint64_t)pcs[i].len;
            else
                ext[ne++] = (rfs_extent){ (uint64_t)s, (uint64_t)pcs[i].len };
            continue;
        }
        if (ne) {
            int64_t ps = (int64_t)ext[ne - 1].offset, pe = ps + (int64_t)ext[ne - 1].length;
            if (s <= pe) {
                if (e > pe) {
                    ext[ne - 1].length += (uint64_t)(e - pe);
                    used += e - pe;
                }
                pcs[i].data = buf + bstart + (s - ps);
                continue;
            }
        }
        bstart = used;
        ext[ne++] = (rfs_extent){ (uint64_t)s, (uint64_t)(e - s) };
        pcs[i].data = buf + used;
        used += e - s;
    }
    if (t->is_write && t->pipe) {
        *handed_off = 1;
        /* A failed write is reported, with its cause, by mp_wpipe_finish; a write the pipe
         * could not even queue only here. */
        int rc = mp_wpipe_submit(t->pipe, ext, ne, buf, t->mem.iobuf_cap);
        if (rc == RFS_E_NOMEM)
            return mp_error_code(MPI_ERR_NO_MEM, "rfs: %s: out of memory queueing a collective "
                                 "round's write", f->name);
        return MPI_SUCCESS;
    }
    size_t done = 0;
    int rc = mp_listio(f, t->is_write, ext, ne, buf, &done);
    if (rc != RFS_OK)
        return mp_io_error(f, rc, t->is_write ? "collective write" : "collective read",
                           rfs_last_error());
    if (!t->is_write && (int64_t)done < used) {
        /* End of file inside this window: note the file offset of the first missing byte. */
        int64_t left = (int64_t)done;
        for (size_t i = 0; i < ne; i++) {
            if (left < (int64_t)ext[i].length) {
                int64_t eof = (int64_t)ext[i].offset + left;
                if (eof < t->eof)
                    t->eof = eof;
                break;
            }
            left -= (int64_t)ext[i].length;
        }
        memset(buf + done, 0, (size_t)(used - (int64_t)done));
    }
    return MPI_SUCCESS;
}

static int fits_int(int64_t x) { return x >= 0 && x <= INT_MAX; }

/* One round r of the exchange + I/O. Returns a local error code; *stop is set, the same on
 * every rank, when some rank could not take part (no memory for the round): the ranks then
 * leave the round loop together. */
static int round_io(tp *t, int64_t r, int *stop)
{
    int P = t->nprocs, A = t->naggr;
    int code = t->err;
    MPI_Comm comm = t->f->comm;
    int *sc = t->sc, *rc = t->rc;
    round_mem *m = &t->mem;

    for (int a = 0; a < A; a++) {
        t->pairs[a] = t->spos[a] = NULL;
        t->na[a] = 0;
        t->ba[a] = 0;
        int e = code == MPI_SUCCESS ? my_pieces(t, a, r, &t->pairs[a], &t->spos[a], &t->na[a],
                                                &t->ba[a])
                                    : code;
        if (e == MPI_SUCCESS && (!fits_int(t->ba[a]) || t->na[a] > INT_MAX / 2))
            e = mp_error_code(MPI_ERR_COUNT, "rfs: %s: a collective round holds more than "
                              "2^31 bytes or pieces for one aggregator", t->f->name);
        if (e != MPI_SUCCESS) {
            code = code ? code : e;
            t->na[a] = 0;
            t->ba[a] = 0;
        }
        int j = aggr_rank(t, a);
        sc[2 * j] = t->na[a];
        sc[2 * j + 1] = (int)t->ba[a];
    }
    PMPI_Alltoall(sc, 2, MPI_INT, rc, 2, MPI_INT, comm);

    /* Sizes of this round's exchanges, then every buffer they need, before anything moves. */
    int64_t stot = 0, rtot = 0, sb = 0, rb = 0;
    for (int j = 0; j < P; j++) {
        t->scnt[j] = 2 * sc[2 * j];
        t->sdsp[j] = (int)stot;
        stot += t->scnt[j];
        t->rcnt[j] = 2 * rc[2 * j];
        t->rdsp[j] = (int)rtot;
        rtot += t->rcnt[j];
        t->bsc[j] = sc[2 * j + 1];
        t->bsd[j] = (int)sb;
        sb += t->bsc[j];
        t->brc[j] = rc[2 * j + 1];
        t->brd[j] = (int)rb;
        rb += t->brc[j];
        if (!fits_int(stot) || !fits_int(rtot) || !fits_int(sb) || !fits_int(rb))
            break;
    }
    size_t np = (size_t)(rtot / 2);
    int local = code != MPI_SUCCESS;
    if (!local && (!fits_int(stot) || !fits_int(rtot) || !fits_int(sb) || !fits_int(rb))) {
        /* Overlapping accesses of many ranks can pile more than 2^31 bytes on one window. */
        code = mp_error_code(MPI_ERR_COUNT, "rfs: %s: a collective round would exchange more "
                             "than 2^31 bytes; lower cb_buffer_size", t->f->name);
        local = 1;
    }
    if (!local) {
        int io = t->my_aggr >= 0 && np;
        int bad = grow(&m->sp, &m->sp_cap, (size_t)stot * sizeof *m->sp) |
                  grow(&m->rp, &m->rp_cap, (size_t)rtot * sizeof *m->rp) |
                  grow(&m->sdata, &m->sdata_cap, (size_t)sb) |
                  grow(&m->rdata, &m->rdata_cap, (size_t)rb) |
                  grow(&m->pcs, &m->pcs_cap, np * sizeof *m->pcs);
        if (io && !m->iobuf && t->pipe)
            m->iobuf = mp_wpipe_reuse(t->pipe, (size_t)rb, &m->iobuf_cap);
        if (io)
            bad |= grow(&m->ext, &m->ext_cap, np * sizeof *m->ext) |
                   grow(&m->iobuf, &m->iobuf_cap, (size_t)rb);
        if (bad) {
            code = mp_error_code(MPI_ERR_NO_MEM, "rfs: %s: out of memory for a collective "
                                 "round (%lld bytes of data to send, %lld to receive)",
                                 t->f->name, (long long)sb, (long long)rb);
            local = 1;
        }
    }
    int any = 0;
    PMPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, comm);
    if (any) {
        *stop = 1;
        goto out;
    }

    for (int a = 0; a < A; a++)
        if (t->na[a])
            memcpy(m->sp + t->sdsp[aggr_rank(t, a)], t->pairs[a], (size_t)t->na[a] * 2 * sizeof *m->sp);
    PMPI_Alltoallv(m->sp, t->scnt, t->sdsp, MPI_INT64_T, m->rp, t->rcnt, t->rdsp, MPI_INT64_T, comm);

    if (t->is_write) {
        for (int a = 0; a < A; a++) {
            char *d = m->sdata + t->bsd[aggr_rank(t, a)];
            for (int i = 0; i < t->na[a]; i++) {
                memcpy(d, t->data + t->spos[a][i], (size_t)t->pairs[a][2 * i + 1]);
                d += t->pairs[a][2 * i + 1];
            }
        }
        PMPI_Alltoallv(m->sdata, t->bsc, t->bsd, MPI_BYTE, m->rdata, t->brc, t->brd, MPI_BYTE, comm);
    }

    /* The aggregator's I/O. */
    size_t k = 0;
    for (int j = 0; j < P; j++) {
        int64_t boff = t->brd[j];
        for (int i = 0; i < t->rcnt[j] / 2; i++, k++) {
            int64_t off = m->rp[t->rdsp[j] + 2 * i], len = m->rp[t->rdsp[j] + 2 * i + 1];
            m->pcs[k] = (piece){ off, len, m->rdata + boff, j, boff };
            boff += len;
        }
    }
    int have_data = 0;
    if (t->my_aggr >= 0 && np) {
        int handed_off = 0;
        int e = aggregate_io(t, m->pcs, np, m->ext, m->iobuf, &handed_off);
        if (handed_off) {  /* the write pipe owns them now */
            m->ext = NULL, m->iobuf = NULL;
            m->ext_cap = m->iobuf_cap = 0;
        }
        if (e != MPI_SUCCESS && code == MPI_SUCCESS)
            code = e;
        have_data = !t->is_write && e == MPI_SUCCESS;
    }
    if (!t->is_write) {
        /* Replies: each piece's bytes at its place in the reply to its rank (idx holds it). */
        if (have_data)
            for (size_t i = 0; i < np; i++)
                memcpy(m->rdata + m->pcs[i].idx, m->pcs[i].data, (size_t)m->pcs[i].len);
        else
            memset(m->rdata, 0, (size_t)(rb ? rb : 1));
        PMPI_Alltoallv(m->rdata, t->brc, t->brd, MPI_BYTE, m->sdata, t->bsc, t->bsd, MPI_BYTE, comm);
        for (int a = 0; a < A; a++) {
            const char *d = m->sdata + t->bsd[aggr_rank(t, a)];
            for (int i = 0; i < t->na[a]; i++) {
                memcpy(t->data + t->spos[a][i], d, (size_t)t->pairs[a][2 * i + 1]);
                d += t->pairs[a][2 * i + 1];
            }
        }
    }
out:
    for (int a = 0; a < A; a++) {
        free(t->pairs[a]);
        free(t->spos[a]);
        t->pairs[a] = t->spos[a] = NULL;
    }
    return code;
}

/* se: (start, end) per rank (start >= end: no access). Sorted by start, any overlap?
 * sorted: room for P (start, end) pairs. */
static int interleaved(const int64_t *se, int P, int64_t *sorted)
{
    int n = 0;
    for (int j = 0; j < P; j++)
        if (se[2 * j] < se[2 * j + 1]) {
            sorted[2 * n] = se[2 * j];
            sorted[2 * n + 1] = se[2 * j + 1];
            n++;
        }
    /* insertion sort on starts: P is the number of ranks, fine for the sizes we run */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && sorted[2 * j] < sorted[2 * (j - 1)]; j--) {
            int64_t a = sorted[2 * j], b = sorted[2 * j + 1];
            sorted[2 * j] = sorted[2 * (j - 1)];
            sorted[2 * j + 1] = sorted[2 * (j - 1) + 1];
            sorted[2 * (j - 1)] = a;
            sorted[2 * (j - 1) + 1] = b;
        }
    for (int i = 1; i < n; i++)
        if (sorted[2 * i] < sorted[2 * (i - 1) + 1])
            return 1;
    return 0;
}

/* Two-phase write rounds in flight. Automatic: enough rounds to have about 32 MiB on the way
 * (a round trip's worth of data on a fast long link), at least 2 (so a round boundary never
 * leaves the link idle for a round trip) and at most MP_WPIPE_MAX_DEPTH; the aggregator holds
 * that many round buffers, so with the default 16 MiB cb_buffer_size it is 2. */
static int pipeline_depth(const mp_hints *h)
{
    if (h->cb_pipeline > 0)
        return h->cb_pipeline;
    int64_t want = ((int64_t)32 << 20) / (h->cb_buffer_size > 0 ? h->cb_buffer_size : 1);
    return want < 2 ? 2 : want > MP_WPIPE_MAX_DEPTH ? MP_WPIPE_MAX_DEPTH : (int)want;
}

int mp_coll_access(mp_file *f, int is_write, uint64_t pos, void *buf, MPI_Count count,
                   MPI_Datatype type, MPI_Status *st, int64_t *got)
{
    *got = 0;
    mp_buf b;
    memset(&b, 0, sizeof b);
    int code = mp_check_access(f, is_write, 0);
    /* A collective read sees what every rank wrote before it (the ranks' early-returned
     * writes are confirmed here, before the exchange that precedes any aggregator's read). */
    if (!is_write && code == MPI_SUCCESS)
        code = mp_flush_writes(f);
    int mode = is_write ? f->hints.cb_write : f->hints.cb_read;
    /* Known to go independent: a write may then be gathered instead of packed (mp_indep_io). */
    int surely_indep = f->size == 1 || mode == MP_DISABLE || f->atomic;
    if (code == MPI_SUCCESS) {
        int e = !is_write ? mp_buf_for_read(&b, buf, count, type, f->view->rep)
                : surely_indep ? mp_buf_for_write_lazy(&b, buf, count, type, f->view->rep)
                               : mp_buf_for_write(&b, buf, count, type, f->view->rep);
        if (e != MPI_SUCCESS)
            code = mp_error_code(e, "rfs: %s: bad count or datatype for this access", f->name);
    }
    if (code != MPI_SUCCESS)
        b.len = 0;  /* still take part, with nothing */

    mp_view *v = mp_view_get(f);
    rfs_extent *runs = NULL;
    size_t nruns = 0;
    if (b.len > 0) {
        int e = mp_view_runs(v, pos, (uint64_t)b.len, &runs, &nruns);
        if (e != RFS_OK) {
            code = mp_io_error(f, e, "collective access", rfs_last_error());
            b.len = 0;
            nruns = 0;
        }
    }
    int P = f->size;
    tp t;
    memset(&t, 0, sizeof t);
    coll_scratch cs;
    coll_scratch_init(&cs, &t, P);
    int64_t se[2] = { INT64_MAX, INT64_MIN };
    if (nruns) {
        se[0] = (int64_t)runs[0].offset;
        se[1] = (int64_t)(runs[nruns - 1].offset + runs[nruns - 1].length);
        for (size_t i = 0; v->overlap && i < nruns; i++)
            if ((int64_t)(runs[i].offset + runs[i].length) > se[1])
                se[1] = (int64_t)(runs[i].offset + runs[i].length);
        /* Two-phase needs runs that do not overlap: my_pieces' cursor passes a run that lies
         * inside an earlier, longer one. A rank whose view has overlaps sends its start
         * negated, so that every rank learns from this one exchange to go independent. */
        if (v->overlap)
            se[0] = -1 - se[0];
    }
    PMPI_Allgather(se, 2, MPI_INT64_T, cs.all, 2, MPI_INT64_T, f->comm);
    int overlaps = 0;
    for (int j = 0; j < P; j++)
        if (cs.all[2 * j] < 0) {
            overlaps = 1;
            cs.all[2 * j] = -1 - cs.all[2 * j];
        }
    int64_t gmin = INT64_MAX, gmax = INT64_MIN;
    for (int j = 0; j < P; j++)
        if (cs.all[2 * j] < cs.all[2 * j + 1]) {
            gmin = mp_min64(gmin, cs.all[2 * j]);
            gmax = cs.all[2 * j + 1] > gmax ? cs.all[2 * j + 1] : gmax;
        }
    int use_indep = surely_indep || overlaps ||
                    (mode == MP_AUTO && !interleaved(cs.all, P, cs.sorted));

    int64_t moved = 0;
    if (gmin >= gmax) {
        /* nobody accesses anything */
    } else if (use_indep) {
        if (f->rank == 0)
            RFS_LOGD("mpiio: %s: collective %s: independent", f->name, is_write ? "write" : "read");
        free(runs);
        runs = NULL;
        if (b.len > 0 && code == MPI_SUCCESS) {
            size_t done = 0;
            code = mp_indep_io(f, is_write, pos, &b, &done);
            moved = (int64_t)done;
        }
    } else {
        /* Two-phase: this rank's bytes go out over an aggregator's connection. Its own
         * early-returned writes must be in the file first, or they could land after the
         * aggregator's write of the same bytes (a collective read did this above). */
        if (is_write && code == MPI_SUCCESS)
            code = mp_flush_writes(f);
        t.f = f;
        t.is_write = is_write;
        t.nprocs = P;
        if (mp_aggregators(f, f->hints.cb_nodes, &t.aggr, &t.naggr) != MPI_SUCCESS)
            bookkeeping_oom("the list of aggregators", P);
        t.my_aggr = -1;
        for (int a = 0; a < t.naggr; a++)
            if (aggr_rank(&t, a) == f->rank)
                t.my_aggr = a;
        t.gmin = gmin;
        t.fd_size = (gmax - gmin + t.naggr - 1) / t.naggr;
        t.cbs = f->hints.cb_buffer_size;
        t.rounds = (t.fd_size + t.cbs - 1) / t.cbs;
        t.runs = runs;
        t.nruns = nruns;
        t.data = b.data;
        t.eof = INT64_MAX;
        if (f->rank == 0 && rfs_log_level() >= RFS_LOG_DEBUG) {
            char list[256];
            size_t used = 0;
            int shown = 0;
            list[0] = 0;
            for (; shown < t.naggr && used < sizeof list - 16; shown++)
                used += (size_t)snprintf(list + used, sizeof list - used, " %d", t.aggr[shown]);
            RFS_LOGD("mpiio: %s: collective %s: two-phase, %d aggregator(s), %lld round(s), "
                     "aggregator ranks:%s%s", f->name, is_write ? "write" : "read", t.naggr,
                     (long long)t.rounds, list, shown < t.naggr ? " ..." : "");
        }
        t.runpos = malloc((nruns ? nruns : 1) * sizeof *t.runpos);
        t.cursor = calloc((size_t)t.naggr, sizeof *t.cursor);
        if (!t.runpos || !t.cursor) {
            /* Round 0's agreement stops every rank. */
            t.err = mp_error_code(MPI_ERR_NO_MEM, "rfs: %s: out of memory for the %zu runs of "
                                  "a collective access", f->name, nruns);
        } else {
            int64_t acc = 0;
            for (size_t i = 0; i < nruns; i++) {
                t.runpos[i] = acc;
                acc += (int64_t)runs[i].length;
            }
        }
        /* An aggregator writing several rounds keeps up to rfs_cb_pipeline of them in flight
         * while it exchanges the next (wpipe.c); the call still returns only once every
         * write's reply is in. */
        int depth = pipeline_depth(&f->hints);
        if (is_write && t.my_aggr >= 0 && t.rounds > 1 && depth > 1)
            t.pipe = mp_wpipe_start(f, depth);
        int stop = 0;
        for (int64_t r = 0; r < t.rounds && !stop; r++) {
            int e = round_io(&t, r, &stop);
            if (e != MPI_SUCCESS && code == MPI_SUCCESS)
                code = e;
        }
        if (t.pipe) {
            rfs_status failed;
            int e = mp_wpipe_finish(t.pipe, &failed);
            if (e != RFS_OK && code == MPI_SUCCESS)
                code = mp_io_error(f, e, "collective write", failed.msg);
        }
        /* An aggregator's writes carry other ranks' bytes over its own connection: the write
         * window must not let them return unanswered, or a later request of the rank whose
         * bytes they are (another aggregator next time, or its own independent write) could
         * reach the server first over another connection and be overwritten by them. */
        if (is_write && t.my_aggr >= 0 && code == MPI_SUCCESS)
            code = mp_flush_writes(f);
        /* This rank's bytes reached the file through aggregators, past its own read cache. */
        if (is_write && f->cache)
            rfs_cache_invalidate(f->cache);
        int64_t eof = t.eof;
        if (!is_write)
            PMPI_Allreduce(&t.eof, &eof, 1, MPI_INT64_T, MPI_MIN, f->comm);
        /* Bytes moved: everything for writes; for reads, the stream up to the end of file. */
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
        round_mem_free(&t.mem);
        free(t.runpos);
        free(t.cursor);
        free(t.aggr);
    }
    free(runs);
    free(cs.block);
    mp_view_put(f, v);
    code = mp_agree_error(f, f->comm, code);
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
        return mp_raise(f, mp_error_code(MPI_ERR_OTHER, "rfs: %s: split collective _end without "
                                         "_begin", f->name));
    f->split_active = 0;
    if (st != MPI_STATUS_IGNORE)
        *st = f->split_status;
    return f->split_err;
}
