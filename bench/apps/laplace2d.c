/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* laplace2d: 2-D Laplace solver with periodic checkpoints (semplar sec. 5, OSC's solver).
 *
 * An N x N grid is split into row blocks; each iteration exchanges one halo row with each
 * neighbour and does a Jacobi sweep. Every K iterations each rank writes its rows to a
 * shared checkpoint file with an independent MPI_File_write_at at row_start*N*8 (the same
 * offsets every time: a checkpoint overwrites the previous one).
 *
 * --async uses MPI_File_iwrite_at from a copy of the rows and waits for the request just
 * before the next checkpoint (and before close), as SEMPLAR's asynchronous variant does; the
 * copy and the wait are charged to "write", so the visible cost is what the application
 * really waits for.
 * --peak skips the checkpoints (computation-only baseline).
 *
 * Verification (untimed): each rank reads its rows of the last checkpoint back and compares
 * them with the values it wrote.
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    static const char *const known[] = {"--n", "--iters", "--every", "--compute-scale", NULL};
    static const char *const flags[] = {"--async", NULL};
    bench_check_args(argc, argv, known, flags,
                     "[--n N] [--iters I] [--every K] [--compute-scale S] [--async] [--peak] "
                     "[--no-verify] [--seed S]");
    bench bb, *b = &bb;
    bench_begin(b, "laplace2d", argc, argv);
    int n = (int)bench_opt_size(argc, argv, "--n", 1024);
    int iters = (int)bench_opt_size(argc, argv, "--iters", 40);
    int every = (int)bench_opt_size(argc, argv, "--every", 10);
    int scale = (int)bench_opt_size(argc, argv, "--compute-scale", 1);
    int async = bench_opt_flag(argc, argv, "--async");
    if (n < b->nprocs || n < 3 || iters < 1 || every < 1 || scale < 1)
        bench_die("need --n >= max(3, ranks), --iters/--every/--compute-scale >= 1");

    /* Row block distribution with the remainder spread over the first ranks. */
    int rows = n / b->nprocs + (b->rank < n % b->nprocs);
    int row0 = b->rank * (n / b->nprocs) + (b->rank < n % b->nprocs ? b->rank : n % b->nprocs);
    long long nloc = (long long)rows * n;
    if (nloc * 8 > 0x7fffffffLL)
        bench_die("local rows over 2 GiB");
    bench_param_int(b, "n", n);
    bench_param_int(b, "iters", iters);
    bench_param_int(b, "every", every);
    bench_param_int(b, "checkpoints", iters / every);
    bench_param_int(b, "compute_scale", scale);
    bench_param_int(b, "checkpoint_bytes", (long long)n * n * 8);
    bench_param_str(b, "mode", async ? "async" : "sync");

    size_t cells = (size_t)(rows + 2) * n;
    double *u = bench_xmalloc(cells * sizeof(double)), *v = bench_xmalloc(cells * sizeof(double));
    /* Boundary: global row 0 (rank 0's first interior row) is held at 1.0, the rest starts
     * at 0; rows 0 and n-1 are never updated. */
    for (size_t c = 0; c < cells; c++)
        u[c] = v[c] = 0.0;
    if (b->rank == 0)
        for (int j = 0; j < n; j++)
            u[n + j] = v[n + j] = 1.0;
    int up = b->rank > 0 ? b->rank - 1 : MPI_PROC_NULL;
    int down = b->rank < b->nprocs - 1 ? b->rank + 1 : MPI_PROC_NULL;

    double *ckpt = NULL; /* async source buffer, and the reference for verification */
    if (!b->peak && (async || b->verify))
        ckpt = bench_xmalloc((size_t)nloc * sizeof(double));

    MPI_File fh = MPI_FILE_NULL;
    MPI_Request req = MPI_REQUEST_NULL;
    double t;
    if (!b->peak) {
        bench_remove(b, b->target);
        t = bench_now();
        BCHK(MPI_File_open(MPI_COMM_WORLD, b->target, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                           MPI_INFO_NULL, &fh),
             "MPI_File_open");
        bench_add(b, "open", bench_now() - t);
    } else {
        bench_add(b, "open", 0);
    }
    bench_add(b, "write", 0);
    bench_add(b, "compute", 0);
    bench_add(b, "comm", 0);

    MPI_Offset off = (MPI_Offset)row0 * n * 8;
    for (int it = 1; it <= iters; it++) {
        for (int s = 0; s < scale; s++) {
            t = bench_now();
            MPI_Sendrecv(u + (size_t)rows * n, n, MPI_DOUBLE, down, 0, u, n, MPI_DOUBLE, up, 0,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Sendrecv(u + n, n, MPI_DOUBLE, up, 1, u + (size_t)(rows + 1) * n, n, MPI_DOUBLE,
                         down, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bench_add(b, "comm", bench_now() - t);
            t = bench_now();
            for (int i = 1; i <= rows; i++) {
                int gi = row0 + i - 1;
                if (gi == 0 || gi == n - 1)
                    continue; /* fixed boundary rows */
                double *o = v + (size_t)i * n;
                const double *a = u + (size_t)i * n;
                for (int j = 1; j < n - 1; j++)
                    o[j] = 0.25 * (a[j - 1] + a[j + 1] + a[j - n] + a[j + n]);
            }
            for (int i = 1; i <= rows; i++) {
                int gi = row0 + i - 1;
                if (gi != 0 && gi != n - 1)
                    memcpy(u + (size_t)i * n + 1, v + (size_t)i * n + 1, (size_t)(n - 2) * 8);
            }
            bench_add(b, "compute", bench_now() - t);
        }
        if (it % every || b->peak)
            continue;
        t = bench_now();
        if (async) {
            BCHK(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait (previous checkpoint)");
            memcpy(ckpt, u + n, (size_t)nloc * 8);
            BCHK(MPI_File_iwrite_at(fh, off, ckpt, (int)nloc, MPI_DOUBLE, &req),
                 "MPI_File_iwrite_at");
        } else {
            BCHK(MPI_File_write_at(fh, off, u + n, (int)nloc, MPI_DOUBLE, MPI_STATUS_IGNORE),
                 "MPI_File_write_at");
            if (ckpt)
                memcpy(ckpt, u + n, (size_t)nloc * 8);
        }
        bench_add(b, "write", bench_now() - t);
        b->bytes_written += nloc * 8;
    }
    if (!b->peak) {
        t = bench_now();
        BCHK(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait (last checkpoint)");
        bench_add(b, "write", bench_now() - t);
        t = bench_now();
        BCHK(MPI_File_close(&fh), "MPI_File_close");
        bench_add(b, "close", bench_now() - t);
    } else {
        bench_add(b, "close", 0);
    }

    t = bench_now();
    if (ckpt && b->verify && iters / every > 0) {
        double *got = bench_xmalloc((size_t)nloc * 8);
        memset(got, 0, (size_t)nloc * 8);
        BCHK(MPI_File_open(MPI_COMM_WORLD, b->target, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
             "MPI_File_open (verify)");
        BCHK(MPI_File_read_at(fh, off, got, (int)nloc, MPI_DOUBLE, MPI_STATUS_IGNORE),
             "MPI_File_read_at (verify)");
        BCHK(MPI_File_close(&fh), "MPI_File_close (verify)");
        for (long long i = 0; i < nloc; i++)
            b->verify_errors += got[i] != ckpt[i];
        free(got);
    }
    bench_add(b, "verify", bench_now() - t);

    double sum = 0, gsum = 0;
    for (long long i = 0; i < nloc; i++)
        sum += u[n + i];
    MPI_Reduce(&sum, &gsum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    bench_param_dbl(b, "checksum", gsum);
    int rc = bench_report(b);
    free(u);
    free(v);
    free(ckpt);
    MPI_Finalize();
    return rc;
}
