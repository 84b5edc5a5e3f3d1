/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Two-phase collective I/O, shared by its files: coll.c (the collective access: independent
 * or two-phase, and the rounds), coll_plan.c (file domains, rounds, each rank's pieces per
 * round), coll_exchange.c (one round's exchange among the ranks), coll_io.c (an aggregator's
 * list I/O). The whole scheme is described at the top of coll.c. */
#ifndef RFS_MPIIO_COLL_INTERNAL_H
#define RFS_MPIIO_COLL_INTERNAL_H

#include "mpiio/aggr.h"
#include "mpiio/wpipe.h"

#include <limits.h>

typedef struct piece {
    int64_t off, len;
    const char *data; /* write: source bytes; read: destination in the aggregator's buffer */
    int src;          /* rank, for read replies */
    int64_t idx;      /* position in that rank's request list */
} piece;

/* One round's buffers whose size depends on the data. Kept from round to round of one call
 * and grown when a round needs more, so the rounds after the first reuse pages already
 * touched; ext and iobuf go to the write pipe when there is one. */
typedef struct round_mem {
    int64_t *sp, *rp;    /* piece lists sent / received */
    char *sdata, *rdata; /* data sent / received (reads: the other way round) */
    piece *pcs;          /* aggregator: the pieces received */
    rfs_extent *ext;     /* aggregator: its list I/O (a write pipe may take it) */
    char *iobuf;         /* aggregator: that list I/O's data (likewise) */
    size_t sp_cap, rp_cap, sdata_cap, rdata_cap, pcs_cap, ext_cap, iobuf_cap; /* bytes */
} round_mem;

/* One two-phase access of this rank. */
typedef struct tp {
    mp_file *f;
    int is_write;
    int nprocs, naggr, my_aggr; /* my_aggr: my aggregator index or -1 */
    int *aggr;                  /* rank of each aggregator, ascending */
    int64_t gmin, fd_size, cbs, rounds;
    rfs_extent *runs; /* my runs, ascending */
    int64_t *runpos;  /* stream offset of each run */
    size_t nruns;
    char *data;     /* my stream bytes */
    size_t *cursor; /* per aggregator: first run not yet done */
    int64_t eof;    /* first missing file byte seen by this aggregator */
    mp_wpipe *pipe; /* writes with several rounds: pipelined list writes */
    int err;        /* first local error code */
    /* Per-call scratch, reused by every round (coll_scratch). */
    int64_t **pairs, **spos; /* per aggregator: my pieces (off,len) and their stream offsets */
    int *na;                 /* per aggregator: my piece count */
    int64_t *ba;             /* per aggregator: my bytes */
    int *sc, *rc;            /* per rank: (pieces, bytes) sent / received */
    int *scnt, *sdsp, *rcnt, *rdsp; /* piece list exchange (int64 units) */
    int *bsc, *bsd, *brc, *brd;     /* data exchange (bytes) */
    round_mem mem;
} tp;

/* The words per rank one collective call needs, in one block: P is the number of ranks and
 * bounds the number of aggregators. */
typedef struct coll_scratch {
    void *block;
    int64_t *all;    /* allgather of (start, end) per rank */
    int64_t *sorted; /* interleaved(): (start, end) pairs */
} coll_scratch;

static inline int mp_coll_aggr_rank(const tp *t, int i)
{
    return t->aggr[i];
}
static inline int mp_coll_fits_int(int64_t x)
{
    return x >= 0 && x <= INT_MAX;
}

/* coll_plan.c */
/* Out of memory for a few words per rank: the process stops (see coll_plan.c). */
_Noreturn void mp_coll_bookkeeping_oom(const char *what, int P);
void mp_coll_scratch_init(coll_scratch *cs, tp *t, int P);
/* se: (start, end) per rank (start >= end: no access). Sorted by start, any overlap?
 * sorted: room for P (start, end) pairs. */
int mp_coll_interleaved(const int64_t *se, int P, int64_t *sorted);
/* Sets up t for a two-phase access of [gmin, gmax) by every rank, this rank's runs and
 * stream bytes: aggregators, file domains, rounds, the write pipe. An allocation failure is
 * left in t->err (the first round's agreement stops every rank). */
void mp_coll_plan(tp *t, mp_file *f, int is_write, int64_t gmin, int64_t gmax, rfs_extent *runs,
                  size_t nruns, char *data);
/* My pieces for aggregator a in round r (off,len pairs) with their stream offsets. */
int mp_coll_my_pieces(tp *t, int a, int64_t r, int64_t **pairs, int64_t **spos, int *n,
                      int64_t *bytes);

/* coll_exchange.c: one round r of the exchange + I/O. Returns a local error code; *stop is
 * set, the same on every rank, when some rank could not take part (no memory for the round):
 * the ranks then leave the round loop together. */
int mp_coll_round(tp *t, int64_t r, int *stop);
void mp_coll_round_mem_free(round_mem *m);

/* coll_io.c: the aggregator's list I/O for the sorted pieces of one round (see there). */
int mp_coll_aggregate_io(tp *t, piece *pcs, size_t np, rfs_extent *ext, char *buf, int *handed_off);

#endif
