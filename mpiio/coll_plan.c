/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Planning a collective access: whether the ranks' ranges interleave, the aggregators' file
 * domains and rounds, the write pipeline's depth, and which of this rank's runs fall in an
 * aggregator's window of a round. */
#include "mpiio/coll_internal.h"

#include "common/log.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *carve(char **p, size_t bytes)
{
    void *r = *p;
    *p += (bytes + 15) & ~(size_t)15;
    return r;
}

/* A few words per rank: without them the call cannot even take part in the collectives that
 * would let the others know, so these are the allocations that stop the process. */
_Noreturn void mp_coll_bookkeeping_oom(const char *what, int P)
{
    fprintf(stderr, "librfs-mpiio: out of memory for %s of a collective access (%d ranks)\n", what,
            P);
    abort();
}

void mp_coll_scratch_init(coll_scratch *cs, tp *t, int P)
{
    size_t n = (size_t)P;
    size_t bytes = 16 * 16 + n * (2 + 2) * sizeof(int64_t) + n * 2 * sizeof(int64_t *) +
                   n * sizeof(int) + n * sizeof(int64_t) + n * 12 * sizeof(int);
    char *p = cs->block = calloc(1, bytes);
    if (!p)
        mp_coll_bookkeeping_oom("the per-rank bookkeeping", P);
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

int mp_coll_interleaved(const int64_t *se, int P, int64_t *sorted)
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

static void log_plan(const tp *t)
{
    char list[256];
    size_t used = 0;
    int shown = 0;
    list[0] = 0;
    for (; shown < t->naggr && used < sizeof list - 16; shown++)
        used += (size_t)snprintf(list + used, sizeof list - used, " %d", t->aggr[shown]);
    RFS_LOGD("mpiio: %s: collective %s: two-phase, %d aggregator(s), %lld round(s), "
             "aggregator ranks:%s%s",
             t->f->name, t->is_write ? "write" : "read", t->naggr, (long long)t->rounds, list,
             shown < t->naggr ? " ..." : "");
}

void mp_coll_plan(tp *t, mp_file *f, int is_write, int64_t gmin, int64_t gmax, rfs_extent *runs,
                  size_t nruns, char *data)
{
    int P = f->size;
    t->f = f;
    t->is_write = is_write;
    t->nprocs = P;
    if (mp_aggregators(f, f->hints.cb_nodes, &t->aggr, &t->naggr) != MPI_SUCCESS)
        mp_coll_bookkeeping_oom("the list of aggregators", P);
    t->my_aggr = -1;
    for (int a = 0; a < t->naggr; a++)
        if (mp_coll_aggr_rank(t, a) == f->rank)
            t->my_aggr = a;
    t->gmin = gmin;
    t->fd_size = (gmax - gmin + t->naggr - 1) / t->naggr;
    t->cbs = f->hints.cb_buffer_size;
    t->rounds = (t->fd_size + t->cbs - 1) / t->cbs;
    t->runs = runs;
    t->nruns = nruns;
    t->data = data;
    t->eof = INT64_MAX;
    if (f->rank == 0 && rfs_log_level() >= RFS_LOG_DEBUG)
        log_plan(t);
    t->runpos = malloc((nruns ? nruns : 1) * sizeof *t->runpos);
    t->cursor = calloc((size_t)t->naggr, sizeof *t->cursor);
    if (!t->runpos || !t->cursor) {
        /* Round 0's agreement stops every rank. */
        t->err = mp_error_code(MPI_ERR_NO_MEM,
                               "rfs: %s: out of memory for the %zu runs of "
                               "a collective access",
                               f->name, nruns);
    } else {
        int64_t acc = 0;
        for (size_t i = 0; i < nruns; i++) {
            t->runpos[i] = acc;
            acc += (int64_t)runs[i].length;
        }
    }
    /* An aggregator writing several rounds keeps up to rfs_cb_pipeline of them in flight
     * while it exchanges the next (wpipe.c); the call still returns only once every write's
     * reply is in. */
    int depth = pipeline_depth(&f->hints);
    if (is_write && t->my_aggr >= 0 && t->rounds > 1 && depth > 1)
        t->pipe = mp_wpipe_start(f, depth);
}

static void window(const tp *t, int a, int64_t r, int64_t *lo, int64_t *hi)
{
    int64_t ds = t->gmin + (int64_t)a * t->fd_size;
    *lo = ds + r * t->cbs;
    *hi = mp_min64(*lo + t->cbs, ds + t->fd_size);
}

int mp_coll_my_pieces(tp *t, int a, int64_t r, int64_t **pairs, int64_t **spos, int *n,
                      int64_t *bytes)
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
