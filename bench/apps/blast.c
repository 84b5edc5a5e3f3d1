/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* blast: MPI-BLAST-like output (semplar sec. 5): workers search query sequences handed out
 * by a master and append a ~50 KB result record per query to a file of their own.
 *
 * With one rank that rank is the only worker; with more, rank 0 is the master and hands out
 * query indices on request (dynamic load balance, as MPI-BLAST does). Worker w writes
 * TARGET.w<w> (opened on MPI_COMM_SELF) with MPI_File_write through its individual file
 * pointer. The "search" is a fixed amount of floating-point work (--compute units per
 * query, see bench_spin).
 *
 * --async writes each record with MPI_File_iwrite from a second buffer and waits for it
 * after the next query's computation, so computation and I/O overlap (SEMPLAR's variant).
 * --peak skips the output (computation-only baseline).
 *
 * Record j of a worker's file holds the pattern words of file offset j*record; verification
 * (untimed) reads every record back and checks it.
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_ASK = 1, TAG_WORK = 2 };

/* Next query index for this worker, or -1 when all are handed out. */
static long long next_query(int nprocs, long long *local_next, long long total)
{
    if (nprocs == 1)
        return *local_next < total ? (*local_next)++ : -1;
    long long q = -1;
    int dummy = 0;
    MPI_Send(&dummy, 1, MPI_INT, 0, TAG_ASK, MPI_COMM_WORLD);
    MPI_Recv(&q, 1, MPI_LONG_LONG, 0, TAG_WORK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return q;
}

static void master(int nprocs, long long total)
{
    long long next = 0;
    int active = nprocs - 1;
    while (active > 0) {
        int dummy;
        MPI_Status st;
        MPI_Recv(&dummy, 1, MPI_INT, MPI_ANY_SOURCE, TAG_ASK, MPI_COMM_WORLD, &st);
        long long q = next < total ? next++ : -1;
        if (q < 0)
            active--;
        MPI_Send(&q, 1, MPI_LONG_LONG, st.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    static const char *const known[] = {"--queries", "--record", "--compute", NULL};
    static const char *const flags[] = {"--async", NULL};
    bench_check_args(argc, argv, known, flags,
                     "[--queries Q] [--record BYTES] [--compute UNITS] [--async] [--peak] "
                     "[--no-verify] [--seed S]");
    bench bb, *b = &bb;
    bench_begin(b, "blast", argc, argv);
    long long total = bench_opt_size(argc, argv, "--queries", 64);
    long long rec = bench_opt_size(argc, argv, "--record", 50 * 1024);
    double units = bench_opt_dbl(argc, argv, "--compute", 2.0);
    int async = bench_opt_flag(argc, argv, "--async");
    if (rec < 8 || rec % 8 || rec > (1 << 30) || total < 1)
        bench_die("--record must be a multiple of 8 up to 1 GiB, --queries >= 1");
    int is_master = b->nprocs > 1 && b->rank == 0;
    bench_param_int(b, "queries", total);
    bench_param_int(b, "record", rec);
    bench_param_dbl(b, "compute_units", units);
    bench_param_int(b, "workers", b->nprocs > 1 ? b->nprocs - 1 : 1);
    bench_param_str(b, "mode", async ? "async" : "sync");

    char name[4096];
    int wid = b->nprocs > 1 ? b->rank - 1 : 0;
    if (snprintf(name, sizeof name, "%s.w%d", b->target, wid) >= (int)sizeof name)
        bench_die("file name too long");
    bench_add(b, "open", 0);
    bench_add(b, "write", 0);
    bench_add(b, "compute", 0);
    bench_add(b, "close", 0);
    bench_add(b, "verify", 0);

    long long written = 0; /* records in my file */
    if (is_master) {
        master(b->nprocs, total);
    } else {
        long long words = rec / 8;
        double *buf[2] = {bench_xmalloc((size_t)rec), bench_xmalloc((size_t)rec)};
        MPI_Request req = MPI_REQUEST_NULL;
        MPI_File fh = MPI_FILE_NULL;
        double t;
        if (!b->peak) {
            /* Per-rank files: remove with MPI_COMM_SELF semantics (MPI_File_delete is local). */
            int err = MPI_File_delete(name, MPI_INFO_NULL);
            (void)err; /* absent is fine; a real problem shows at open */
            t = bench_now();
            bench_check(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                                      MPI_INFO_NULL, &fh),
                        "MPI_File_open", name);
            bench_add(b, "open", bench_now() - t);
        }
        long long local_next = 0, q;
        int cur = 0;
        while ((q = next_query(b->nprocs, &local_next, total)) >= 0) {
            t = bench_now();
            double x = bench_spin(units);
            /* the "result": pattern words for where the record lands in my file */
            bench_fill_pattern(buf[cur], words, written * words, b->seed);
            buf[cur][0] += x * 0.0; /* keeps the spin result live without changing data */
            bench_add(b, "compute", bench_now() - t);
            if (b->peak)
                continue;
            t = bench_now();
            if (async) {
                bench_check(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait", name);
                bench_check(MPI_File_iwrite(fh, buf[cur], (int)rec, MPI_BYTE, &req),
                            "MPI_File_iwrite", name);
                cur ^= 1;
            } else {
                bench_check(MPI_File_write(fh, buf[cur], (int)rec, MPI_BYTE, MPI_STATUS_IGNORE),
                            "MPI_File_write", name);
            }
            bench_add(b, "write", bench_now() - t);
            written++;
            b->bytes_written += rec;
        }
        if (!b->peak) {
            t = bench_now();
            bench_check(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait", name);
            bench_add(b, "write", bench_now() - t);
            t = bench_now();
            bench_check(MPI_File_close(&fh), "MPI_File_close", name);
            bench_add(b, "close", bench_now() - t);
        }
        t = bench_now();
        if (!b->peak && b->verify && written > 0) {
            bench_check(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
                        "MPI_File_open (verify)", name);
            MPI_Offset size = 0;
            bench_check(MPI_File_get_size(fh, &size), "MPI_File_get_size", name);
            if (size != written * rec)
                b->verify_errors += 1;
            for (long long j = 0; j < written; j++) {
                memset(buf[0], 0, (size_t)rec);
                bench_check(MPI_File_read_at(fh, (MPI_Offset)j * rec, buf[0], (int)rec, MPI_BYTE,
                                             MPI_STATUS_IGNORE),
                            "MPI_File_read_at (verify)", name);
                b->verify_errors += bench_check_pattern(buf[0], words, j * words, b->seed);
            }
            bench_check(MPI_File_close(&fh), "MPI_File_close (verify)", name);
        }
        bench_add(b, "verify", bench_now() - t);
        free(buf[0]);
        free(buf[1]);
    }
    int rc = bench_report(b);
    MPI_Finalize();
    return rc;
}
