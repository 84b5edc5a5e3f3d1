/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* synthetic: the micro-benchmarks of mpiio-logistical-networking sec. 4.
 *
 * Cases (each writes, then reads back and verifies, its own data; every case starts at file
 * offset 0 and overwrites the previous case, so the file stays as small as the largest case):
 *   small_<s>    contiguous writes/reads of s bytes, s = 1, 4, 16, ... up to --small-max;
 *                each rank issues min(--max-calls, --small-budget / s) calls into a region of
 *                its own (independent MPI_File_write_at / read_at)
 *   large_<s>    one contiguous write/read of s bytes per rank, s = --large-min .. --large-max
 *                (doubling), at rank*s
 *   strided_<n>  --strided-total bytes per rank in n = 1, 2, 4 .. --max-regions regions through
 *                a vector filetype whose stride is twice the region (each region followed by a
 *                hole of the same size), contiguous in memory
 *   tile_coll / tile_ind
 *                a --tile x --tile array of doubles split into 2-D tiles (MPI_Dims_create),
 *                written and read with a subarray view, collectively (write_all/read_all) and
 *                independently (write/read)
 * Times are per case, max over ranks, each phase started after a barrier. Bytes are per
 * case over all ranks. Every byte read is checked against the position pattern.
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ctx {
    bench *b;
    MPI_File fh;
    unsigned char *buf;
} ctx;

static double max_over_ranks(double v)
{
    double m = 0;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

static long long sum_over_ranks(long long v)
{
    long long s = 0;
    MPI_Allreduce(&v, &s, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

static bench_case *new_case(bench *b, const char *kind, const char *fmt, long long v)
{
    if (b->ncases == BENCH_MAX_CASES)
        bench_die("too many cases");
    bench_case *c = &b->cases[b->ncases++];
    memset(c, 0, sizeof *c);
    snprintf(c->kind, sizeof c->kind, "%s", kind);
    snprintf(c->name, sizeof c->name, fmt, v);
    return c;
}

static void finish_case(bench *b, bench_case *c, double tw, double tr, long long my_bytes,
                        long long my_errors)
{
    c->write_sec = max_over_ranks(tw);
    c->read_sec = max_over_ranks(tr);
    c->bytes = sum_over_ranks(my_bytes);
    c->errors = sum_over_ranks(my_errors);
    bench_add(b, "write", tw);
    bench_add(b, "read", tr);
    b->bytes_written += my_bytes;
    b->bytes_read += my_bytes;
    b->verify_errors += my_errors;
}

/* calls contiguous accesses of s bytes each at base + k*s */
/* --timed-sync: the write phases end with MPI_File_sync inside the timed part (for modes that
 * hold writes back until a sync, e.g. a logical file's rfs_manifest_mode=buffered) */
static int timed_sync;
/* --bulk-read: a small case reads its region back in one call (only the writes are small) */
static int bulk_read;

static void contiguous_case(ctx *x, const char *kind, long long s, long long calls)
{
    bench *b = x->b;
    bench_case *c = new_case(b, kind, strcmp(kind, "small") ? "large_%lld" : "small_%lld", s);
    c->size = s;
    c->regions = calls;
    MPI_Offset base = (MPI_Offset)b->rank * s * calls;
    bench_fill_bytes(x->buf, s * calls, base, b->seed);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = bench_now();
    for (long long k = 0; k < calls; k++)
        BCHK(MPI_File_write_at(x->fh, base + k * s, x->buf + k * s, (int)s, MPI_BYTE,
                               MPI_STATUS_IGNORE),
             "MPI_File_write_at");
    if (timed_sync)
        BCHK(MPI_File_sync(x->fh), "MPI_File_sync");
    double tw = bench_now() - t;
    if (!timed_sync)
        BCHK(MPI_File_sync(x->fh), "MPI_File_sync");
    MPI_Barrier(MPI_COMM_WORLD);
    memset(x->buf, 0, (size_t)(s * calls));
    t = bench_now();
    if (bulk_read)
        BCHK(MPI_File_read_at(x->fh, base, x->buf, (int)(s * calls), MPI_BYTE, MPI_STATUS_IGNORE),
             "MPI_File_read_at (bulk)");
    for (long long k = 0; !bulk_read && k < calls; k++)
        BCHK(MPI_File_read_at(x->fh, base + k * s, x->buf + k * s, (int)s, MPI_BYTE,
                              MPI_STATUS_IGNORE),
             "MPI_File_read_at");
    double tr = bench_now() - t;
    long long bad = b->verify ? bench_check_bytes(x->buf, s * calls, base, b->seed) : 0;
    finish_case(b, c, tw, tr, s * calls, bad);
}

static void strided_case(ctx *x, long long total, long long n)
{
    bench *b = x->b;
    bench_case *c = new_case(b, "strided", "strided_%lld", n);
    long long blk = total / n;
    c->size = blk;
    c->regions = n;
    MPI_Datatype ft;
    MPI_Type_vector((int)n, (int)blk, (int)(2 * blk), MPI_BYTE, &ft);
    MPI_Type_commit(&ft);
    MPI_Offset disp = (MPI_Offset)b->rank * 2 * total;
    for (long long k = 0; k < n; k++)
        bench_fill_bytes(x->buf + k * blk, blk, disp + k * 2 * blk, b->seed);
    BCHK(MPI_File_set_view(x->fh, disp, MPI_BYTE, ft, "native", MPI_INFO_NULL),
         "MPI_File_set_view");
    MPI_Barrier(MPI_COMM_WORLD);
    double t = bench_now();
    BCHK(MPI_File_write_at(x->fh, 0, x->buf, (int)(blk * n), MPI_BYTE, MPI_STATUS_IGNORE),
         "MPI_File_write_at (strided)");
    if (timed_sync)
        BCHK(MPI_File_sync(x->fh), "MPI_File_sync");
    double tw = bench_now() - t;
    if (!timed_sync)
        BCHK(MPI_File_sync(x->fh), "MPI_File_sync");
    MPI_Barrier(MPI_COMM_WORLD);
    memset(x->buf, 0, (size_t)(blk * n));
    t = bench_now();
    BCHK(MPI_File_read_at(x->fh, 0, x->buf, (int)(blk * n), MPI_BYTE, MPI_STATUS_IGNORE),
         "MPI_File_read_at (strided)");
    double tr = bench_now() - t;
    long long bad = 0;
    if (b->verify)
        for (long long k = 0; k < n; k++)
            bad += bench_check_bytes(x->buf + k * blk, blk, disp + k * 2 * blk, b->seed);
    BCHK(MPI_File_set_view(x->fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL),
         "MPI_File_set_view (reset)");
    MPI_Type_free(&ft);
    finish_case(b, c, tw, tr, blk * n, bad);
}

static void tile_case(ctx *x, int side, int collective)
{
    bench *b = x->b;
    int dims[2] = {0, 0};
    MPI_Dims_create(b->nprocs, 2, dims);
    int th = side / dims[0], tw_ = side / dims[1];
    if (th < 1 || tw_ < 1)
        bench_die("--tile too small for %d ranks", b->nprocs);
    int gsize[2] = {th * dims[0], tw_ * dims[1]}, sub[2] = {th, tw_};
    int start[2] = {(b->rank / dims[1]) * th, (b->rank % dims[1]) * tw_};
    bench_case *c = new_case(b, "tile", collective ? "tile_coll" : "tile_ind", 0);
    c->size = (long long)th * tw_ * 8;
    c->regions = th;
    MPI_Datatype ft;
    MPI_Type_create_subarray(2, gsize, sub, start, MPI_ORDER_C, MPI_DOUBLE, &ft);
    MPI_Type_commit(&ft);
    double *d = (double *)x->buf;
    long long n = (long long)th * tw_;
    for (int i = 0; i < th; i++)
        bench_fill_pattern(d + (size_t)i * tw_, tw_,
                           (long long)(start[0] + i) * gsize[1] + start[1], b->seed);
    BCHK(MPI_File_set_view(x->fh, 0, MPI_DOUBLE, ft, "native", MPI_INFO_NULL), "MPI_File_set_view");
    MPI_Barrier(MPI_COMM_WORLD);
    double t = bench_now();
    if (collective)
        BCHK(MPI_File_write_at_all(x->fh, 0, d, (int)n, MPI_DOUBLE, MPI_STATUS_IGNORE),
             "MPI_File_write_at_all (tile)");
    else
        BCHK(MPI_File_write_at(x->fh, 0, d, (int)n, MPI_DOUBLE, MPI_STATUS_IGNORE),
             "MPI_File_write_at (tile)");
    if (timed_sync)
        BCHK(MPI_File_sync(x->fh), "MPI_File_sync");
    double tw = bench_now() - t;
    if (!timed_sync)
        BCHK(MPI_File_sync(x->fh), "MPI_File_sync");
    MPI_Barrier(MPI_COMM_WORLD);
    memset(d, 0, (size_t)n * 8);
    t = bench_now();
    if (collective)
        BCHK(MPI_File_read_at_all(x->fh, 0, d, (int)n, MPI_DOUBLE, MPI_STATUS_IGNORE),
             "MPI_File_read_at_all (tile)");
    else
        BCHK(MPI_File_read_at(x->fh, 0, d, (int)n, MPI_DOUBLE, MPI_STATUS_IGNORE),
             "MPI_File_read_at (tile)");
    double tr = bench_now() - t;
    long long bad = 0;
    if (b->verify)
        for (int i = 0; i < th; i++)
            bad += bench_check_pattern(d + (size_t)i * tw_, tw_,
                                       (long long)(start[0] + i) * gsize[1] + start[1], b->seed);
    BCHK(MPI_File_set_view(x->fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL),
         "MPI_File_set_view (reset)");
    MPI_Type_free(&ft);
    finish_case(b, c, tw, tr, n * 8, bad);
}

static int wanted(const char *only, const char *kind)
{
    if (!only)
        return 1;
    size_t k = strlen(kind);
    for (const char *p = only; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == k && strncmp(p, kind, k) == 0)
            return 1;
        p += len + (e ? 1 : 0);
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    static const char *const known[] = {"--small-max",   "--small-budget", "--max-calls",
                                        "--large-min",   "--large-max",    "--strided-total",
                                        "--max-regions", "--tile",         "--only",
                                        "--small-min",   "--min-regions",  NULL};
    static const char *const flags[] = {"--timed-sync", "--bulk-read", NULL};
    bench_check_args(argc, argv, known, flags,
                     "[--only small,large,strided,tile] [--small-min B] [--small-max B] "
                     "[--small-budget B] [--max-calls N] [--large-min B] [--large-max B] "
                     "[--strided-total B] [--min-regions N] [--max-regions N] [--tile SIDE] "
                     "[--timed-sync] [--bulk-read] [--no-verify] [--seed S]");
    bench bb, *b = &bb;
    bench_begin(b, "synthetic", argc, argv);
    if (b->peak)
        bench_die("synthetic has no --peak mode: it is all I/O");
    long long small_min = bench_opt_size(argc, argv, "--small-min", 1);
    long long small_max = bench_opt_size(argc, argv, "--small-max", 1 << 20);
    long long budget = bench_opt_size(argc, argv, "--small-budget", 1 << 20);
    long long max_calls = bench_opt_size(argc, argv, "--max-calls", 64);
    long long large_min = bench_opt_size(argc, argv, "--large-min", 1 << 20);
    long long large_max = bench_opt_size(argc, argv, "--large-max", 16 << 20);
    long long stotal = bench_opt_size(argc, argv, "--strided-total", 4 << 20);
    long long min_regions = bench_opt_size(argc, argv, "--min-regions", 1);
    long long max_regions = bench_opt_size(argc, argv, "--max-regions", 64);
    timed_sync = bench_opt_flag(argc, argv, "--timed-sync");
    bulk_read = bench_opt_flag(argc, argv, "--bulk-read");
    int side = (int)bench_opt_size(argc, argv, "--tile", 1024);
    const char *only = bench_opt_str(argc, argv, "--only", NULL);
    if (small_min < 1 || min_regions < 1 || small_max < 1 || budget < 1 || max_calls < 1 ||
        large_min < 1 || large_max < large_min || large_max > (1LL << 30) || stotal < max_regions ||
        max_regions < 1 || side < 1 || stotal > (1LL << 30) ||
        (long long)side * side * 8 > (1LL << 31) - 1)
        bench_die("bad sizes (large-max <= 1 GiB, strided-total >= max-regions, tile^2*8 < 2 GiB)");
    bench_param_int(b, "small_max", small_max);
    bench_param_int(b, "small_budget", budget);
    bench_param_int(b, "max_calls", max_calls);
    bench_param_int(b, "large_min", large_min);
    bench_param_int(b, "large_max", large_max);
    bench_param_int(b, "strided_total", stotal);
    bench_param_int(b, "max_regions", max_regions);
    bench_param_int(b, "tile", side);
    bench_param_str(b, "only", only ? only : "small,large,strided,tile");

    long long need = large_max;
    if (stotal > need)
        need = stotal;
    if ((long long)side * side * 8 > need)
        need = (long long)side * side * 8;
    if (budget > need)
        need = budget;
    if (small_max > need)
        need = small_max;
    ctx x = {b, MPI_FILE_NULL, bench_xmalloc((size_t)need)};

    bench_add(b, "write", 0);
    bench_add(b, "read", 0);
    bench_remove(b, b->target);
    double t = bench_now();
    BCHK(MPI_File_open(MPI_COMM_WORLD, b->target, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                       &x.fh),
         "MPI_File_open");
    bench_add(b, "open", bench_now() - t);

    if (wanted(only, "small"))
        for (long long s = small_min; s <= small_max; s *= 4) {
            long long calls = budget / s;
            if (calls > max_calls)
                calls = max_calls;
            if (calls < 1)
                calls = 1;
            contiguous_case(&x, "small", s, calls);
        }
    if (wanted(only, "large"))
        for (long long s = large_min; s <= large_max; s *= 2)
            contiguous_case(&x, "large", s, 1);
    if (wanted(only, "strided"))
        for (long long n = min_regions; n <= max_regions; n *= 2)
            strided_case(&x, stotal - stotal % n, n);
    if (wanted(only, "tile")) {
        tile_case(&x, side, 1);
        tile_case(&x, side, 0);
    }

    t = bench_now();
    BCHK(MPI_File_close(&x.fh), "MPI_File_close");
    bench_add(b, "close", bench_now() - t);
    int rc = bench_report(b);
    free(x.buf);
    MPI_Finalize();
    return rc;
}
