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
 * Errors anywhere are agreed at the end so all ranks return the same outcome. */
#include "mpiio/aggr.h"
#include "mpiio/wpipe.h"

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

/* ---- independent fallback (also the path for non-interleaved accesses) ---- */
static int indep(mp_file *f, int is_write, uint64_t pos, mp_buf *b, int64_t *got)
{
    mp_view *v = mp_view_get(f);
    size_t done = 0;
    int pack_rc;
    int rc = mp_io_through_view(f, v, is_write, pos, b, &done, &pack_rc);
    mp_view_put(f, v);
    *got = (int64_t)done;
    if (pack_rc != MPI_SUCCESS)
        return mp_error_code(pack_rc, "rfs: %s: cannot pack the data of this access", f->name);
    if (rc != RFS_OK)
        return mp_io_error(f, rc, is_write ? "write" : "read", rfs_last_error());
    return MPI_SUCCESS;
}

/* ---- two-phase ---- */
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
} tp;

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

/* Merges sorted pieces into extents for one list I/O. Writes: the data are packed in extent
 * order (overlapping pieces are both sent, in rank order, as independent writes would). Reads:
 * the union of the requested ranges is read and each piece's data points into *rbuf (caller
 * frees). */
static int aggregate_io(tp *t, piece *pcs, size_t np, char **rbuf)
{
    mp_file *f = t->f;
    *rbuf = NULL;
    if (np == 0)
        return MPI_SUCCESS;
    qsort(pcs, np, sizeof *pcs, cmp_piece);
    rfs_extent *ext = malloc(np * sizeof *ext);
    int64_t total = 0;
    for (size_t i = 0; i < np; i++)
        total += pcs[i].len;
    char *buf = malloc(total ? (size_t)total : 1);
    if (!ext || !buf) {
        free(ext);
        free(buf);
        return MPI_ERR_NO_MEM;
    }
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
        /* The pipe owns ext and buf now; a failure is reported by mp_wpipe_finish. */
        (void)mp_wpipe_submit(t->pipe, ext, ne, buf);
        return MPI_SUCCESS;
    }
    size_t done = 0;
    int rc = mp_listio(f, t->is_write, ext, ne, buf, &done);
    int code = MPI_SUCCESS;
    if (rc != RFS_OK) {
        code = mp_io_error(f, rc, t->is_write ? "collective write" : "collective read",
                           rfs_last_error());
    } else if (!t->is_write && (int64_t)done < used) {
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
    free(ext);
    if (t->is_write)
        free(buf);
    else
        *rbuf = buf;
    return code;
}

static int fits_int(int64_t x) { return x >= 0 && x <= INT_MAX; }

/* One round r of the exchange + I/O. Returns a local error code (communication always runs to
 * the end so no rank is left waiting). */
static int round_io(tp *t, int64_t r)
{
    int P = t->nprocs, A = t->naggr;
    int code = MPI_SUCCESS;
    MPI_Comm comm = t->f->comm;
    int64_t **pairs = calloc((size_t)A, sizeof *pairs), **spos = calloc((size_t)A, sizeof *spos);
    int *na = calloc((size_t)A, sizeof *na);
    int64_t *ba = calloc((size_t)A, sizeof *ba);
    int *sc = calloc((size_t)P * 2, sizeof *sc), *rc = calloc((size_t)P * 2, sizeof *rc);
    int *scnt = calloc((size_t)P, sizeof *scnt), *sdsp = calloc((size_t)P, sizeof *sdsp);
    int *rcnt = calloc((size_t)P, sizeof *rcnt), *rdsp = calloc((size_t)P, sizeof *rdsp);
    if (!pairs || !spos || !na || !ba || !sc || !rc || !scnt || !sdsp || !rcnt || !rdsp)
        abort();  /* a few words per rank: nothing sensible to do without them */

    for (int a = 0; a < A; a++) {
        int e = my_pieces(t, a, r, &pairs[a], &spos[a], &na[a], &ba[a]);
        if (e != MPI_SUCCESS || !fits_int(ba[a]) || na[a] > INT_MAX / 2) {
            code = code ? code : (e ? e : MPI_ERR_COUNT);
            na[a] = 0;
            ba[a] = 0;
        }
        int j = aggr_rank(t, a);
        sc[2 * j] = na[a];
        sc[2 * j + 1] = (int)ba[a];
    }
    PMPI_Alltoall(sc, 2, MPI_INT, rc, 2, MPI_INT, comm);

    /* Piece lists to the aggregators. */
    int64_t stot = 0, rtot = 0, rbytes = 0;
    for (int j = 0; j < P; j++) {
        scnt[j] = 2 * sc[2 * j];
        sdsp[j] = (int)stot;
        stot += scnt[j];
        rcnt[j] = 2 * rc[2 * j];
        rdsp[j] = (int)rtot;
        rtot += rcnt[j];
        rbytes += rc[2 * j + 1];
    }
    if (!fits_int(stot) || !fits_int(rtot) || !fits_int(rbytes))
        abort();  /* bounded by cb_buffer_size per window: cannot happen with valid hints */
    int64_t *sp = malloc((size_t)(stot ? stot : 1) * sizeof *sp);
    int64_t *rp = malloc((size_t)(rtot ? rtot : 1) * sizeof *rp);
    if (!sp || !rp)
        abort();
    for (int a = 0; a < A; a++)
        if (na[a])
            memcpy(sp + sdsp[aggr_rank(t, a)], pairs[a], (size_t)na[a] * 2 * sizeof *sp);
    PMPI_Alltoallv(sp, scnt, sdsp, MPI_INT64_T, rp, rcnt, rdsp, MPI_INT64_T, comm);

    /* Byte counts and displacements of the data exchange (same for both directions). */
    int64_t sb = 0, rb = 0;
    int *bsc = calloc((size_t)P, sizeof *bsc), *bsd = calloc((size_t)P, sizeof *bsd);
    int *brc = calloc((size_t)P, sizeof *brc), *brd = calloc((size_t)P, sizeof *brd);
    if (!bsc || !bsd || !brc || !brd)
        abort();
    for (int j = 0; j < P; j++) {
        bsc[j] = sc[2 * j + 1];
        bsd[j] = (int)sb;
        sb += bsc[j];
        brc[j] = rc[2 * j + 1];
        brd[j] = (int)rb;
        rb += brc[j];
    }
    char *sdata = malloc((size_t)(sb ? sb : 1)), *rdata = malloc((size_t)(rb ? rb : 1));
    if (!sdata || !rdata)
        abort();
    if (t->is_write) {
        for (int a = 0; a < A; a++) {
            char *d = sdata + bsd[aggr_rank(t, a)];
            for (int i = 0; i < na[a]; i++) {
                memcpy(d, t->data + spos[a][i], (size_t)pairs[a][2 * i + 1]);
                d += pairs[a][2 * i + 1];
            }
        }
        PMPI_Alltoallv(sdata, bsc, bsd, MPI_BYTE, rdata, brc, brd, MPI_BYTE, comm);
    }

    /* The aggregator's I/O. */
    size_t np = (size_t)(rtot / 2);
    piece *pcs = malloc((np ? np : 1) * sizeof *pcs);
    if (!pcs)
        abort();
    size_t k = 0;
    for (int j = 0; j < P; j++) {
        int64_t boff = brd[j];
        for (int i = 0; i < rcnt[j] / 2; i++, k++) {
            int64_t off = rp[rdsp[j] + 2 * i], len = rp[rdsp[j] + 2 * i + 1];
            pcs[k] = (piece){ off, len, rdata + boff, j, boff };
            boff += len;
        }
    }
    char *rbuf = NULL;
    if (t->my_aggr >= 0 && np) {
        int e = aggregate_io(t, pcs, np, &rbuf);
        if (e != MPI_SUCCESS && code == MPI_SUCCESS)
            code = e;
    }
    if (!t->is_write) {
        /* Replies: each piece's bytes at its place in the reply to its rank (idx holds it). */
        if (rbuf)
            for (size_t i = 0; i < np; i++)
                memcpy(rdata + pcs[i].idx, pcs[i].data, (size_t)pcs[i].len);
        else
            memset(rdata, 0, (size_t)(rb ? rb : 1));
        PMPI_Alltoallv(rdata, brc, brd, MPI_BYTE, sdata, bsc, bsd, MPI_BYTE, comm);
        for (int a = 0; a < A; a++) {
            const char *d = sdata + bsd[aggr_rank(t, a)];
            for (int i = 0; i < na[a]; i++) {
                memcpy(t->data + spos[a][i], d, (size_t)pairs[a][2 * i + 1]);
                d += pairs[a][2 * i + 1];
            }
        }
    }
    free(rbuf);
    free(pcs);
    free(sdata);
    free(rdata);
    free(bsc);
    free(bsd);
    free(brc);
    free(brd);
    free(sp);
    free(rp);
    for (int a = 0; a < A; a++) {
        free(pairs[a]);
        free(spos[a]);
    }
    free(pairs);
    free(spos);
    free(na);
    free(ba);
    free(sc);
    free(rc);
    free(scnt);
    free(sdsp);
    free(rcnt);
    free(rdsp);
    return code;
}

static int interleaved(const int64_t *se, int P)
{
    /* se: start,end per rank (start > end: no access). Sorted by start, any overlap? */
    int64_t *idx = malloc((size_t)P * 2 * sizeof *idx);
    int n = 0;
    if (!idx)
        return 1;
    for (int j = 0; j < P; j++)
        if (se[2 * j] < se[2 * j + 1]) {
            idx[2 * n] = se[2 * j];
            idx[2 * n + 1] = se[2 * j + 1];
            n++;
        }
    /* insertion sort on starts: P is the number of ranks, fine for the sizes we run */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && idx[2 * j] < idx[2 * (j - 1)]; j--) {
            int64_t a = idx[2 * j], b = idx[2 * j + 1];
            idx[2 * j] = idx[2 * (j - 1)];
            idx[2 * j + 1] = idx[2 * (j - 1) + 1];
            idx[2 * (j - 1)] = a;
            idx[2 * (j - 1) + 1] = b;
        }
    int inter = 0;
    for (int i = 1; i < n && !inter; i++)
        inter = idx[2 * i] < idx[2 * (i - 1) + 1];
    free(idx);
    return inter;
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
    int mode = is_write ? f->hints.cb_write : f->hints.cb_read;
    /* Known to go independent: a write may then be gathered instead of packed (indep). */
    int surely_indep = f->size == 1 || mode == MP_DISABLE || f->atomic;
    if (code == MPI_SUCCESS) {
        int e = !is_write ? mp_buf_for_read(&b, buf, count, type)
                : surely_indep ? mp_buf_for_write_lazy(&b, buf, count, type)
                               : mp_buf_for_write(&b, buf, count, type);
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
    int64_t se[2] = { INT64_MAX, INT64_MIN };
    if (nruns) {
        se[0] = (int64_t)runs[0].offset;
        se[1] = (int64_t)(runs[nruns - 1].offset + runs[nruns - 1].length);
    }
    int P = f->size;
    int64_t *all = malloc((size_t)P * 2 * sizeof *all);
    if (!all)
        abort();
    PMPI_Allgather(se, 2, MPI_INT64_T, all, 2, MPI_INT64_T, f->comm);
    int64_t gmin = INT64_MAX, gmax = INT64_MIN;
    for (int j = 0; j < P; j++)
        if (all[2 * j] < all[2 * j + 1]) {
            gmin = mp_min64(gmin, all[2 * j]);
            gmax = all[2 * j + 1] > gmax ? all[2 * j + 1] : gmax;
        }
    int use_indep = surely_indep || (mode == MP_AUTO && !interleaved(all, P));
    free(all);

    int64_t moved = 0;
    if (gmin >= gmax) {
        /* nobody accesses anything */
    } else if (use_indep) {
        if (f->rank == 0)
            RFS_LOGD("mpiio: %s: collective %s: independent", f->name, is_write ? "write" : "read");
        free(runs);
        runs = NULL;
        if (b.len > 0 && code == MPI_SUCCESS)
            code = indep(f, is_write, pos, &b, &moved);
    } else {
        tp t;
        memset(&t, 0, sizeof t);
        t.f = f;
        t.is_write = is_write;
        t.nprocs = P;
        if (mp_aggregators(f, f->hints.cb_nodes, &t.aggr, &t.naggr) != MPI_SUCCESS)
            abort();  /* one int per rank */
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
        if (!t.runpos || !t.cursor)
            abort();
        int64_t acc = 0;
        for (size_t i = 0; i < nruns; i++) {
            t.runpos[i] = acc;
            acc += (int64_t)runs[i].length;
        }
        /* An aggregator writing several rounds keeps up to rfs_cb_pipeline of them in flight
         * while it exchanges the next (wpipe.c); the call still returns only once every
         * write's reply is in. */
        int depth = pipeline_depth(&f->hints);
        if (is_write && t.my_aggr >= 0 && t.rounds > 1 && depth > 1)
            t.pipe = mp_wpipe_start(f, depth);
        for (int64_t r = 0; r < t.rounds; r++) {
            int e = round_io(&t, r);
            if (e != MPI_SUCCESS && code == MPI_SUCCESS)
                code = e;
        }
        if (t.pipe) {
            char msg[1024] = "";
            int e = mp_wpipe_finish(t.pipe, msg, sizeof msg);
            if (e != RFS_OK && code == MPI_SUCCESS)
                code = mp_io_error(f, e, "collective write", msg);
        }
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
        free(t.runpos);
        free(t.cursor);
        free(t.aggr);
    }
    free(runs);
    mp_view_put(f, v);
    code = mp_agree_error(f, f->comm, code);
    if (code == MPI_SUCCESS && !is_write)
        code = mp_buf_finish_read(&b, moved);
    mp_buf_free(&b);
    mp_set_status(st, code == MPI_SUCCESS ? moved : 0);
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
