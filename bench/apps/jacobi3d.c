/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* jacobi3d: 3-D Jacobi relaxation writing periodic snapshots collectively (rfs-abt sec. 4).
 *
 * The global array is distributed (BLOCK, BLOCK, BLOCK) over an MPI_Dims_create grid; each
 * rank holds an nx*ny*nz interior plus one ghost layer. Every K iterations the interior is
 * written with MPI_File_write_all through a subarray file view, so each snapshot is the
 * global array in row-major order, appended after the previous one (the individual file
 * pointer moves one whole array per call). The distribution does not conform to row-major
 * order, so every snapshot needs data reorganization between ranks, as in the paper.
 *
 * Verification (untimed): each rank reads its block of the last snapshot back through the
 * view and, independently of the subarray machinery, a few rows at hand-computed byte
 * offsets, comparing both with the values it wrote.
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct grid {
    int n[3]; /* local interior size */
    int g[3]; /* global size */
    int dims[3], coords[3];
    int lo[3]; /* global index of the first interior element */
    MPI_Comm cart;
    int nb_lo[3], nb_hi[3];
    MPI_Datatype face[3];
    double *u, *v; /* (n+2)^3 arrays, ghost layer included */
} grid;

#define IDX(gr, i, j, k) \
    ((((size_t)(i)) * ((gr)->n[1] + 2) + (size_t)(j)) * ((gr)->n[2] + 2) + (size_t)(k))

static void grid_setup(grid *gr, int nx, int ny, int nz)
{
    int nprocs;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    memset(gr->dims, 0, sizeof gr->dims);
    MPI_Dims_create(nprocs, 3, gr->dims);
    int periods[3] = {0, 0, 0};
    MPI_Cart_create(MPI_COMM_WORLD, 3, gr->dims, periods, 0, &gr->cart);
    int r;
    MPI_Comm_rank(gr->cart, &r);
    MPI_Cart_coords(gr->cart, r, 3, gr->coords);
    gr->n[0] = nx;
    gr->n[1] = ny;
    gr->n[2] = nz;
    for (int d = 0; d < 3; d++) {
        gr->g[d] = gr->dims[d] * gr->n[d];
        gr->lo[d] = gr->coords[d] * gr->n[d];
        MPI_Cart_shift(gr->cart, d, 1, &gr->nb_lo[d], &gr->nb_hi[d]);
    }
    /* One face type per dimension: a 1-thick slab of the ghosted array (interior extent in the
     * other two dimensions); the start is applied by address in the exchange. */
    int full[3] = {nx + 2, ny + 2, nz + 2};
    for (int d = 0; d < 3; d++) {
        int sub[3] = {nx, ny, nz}, start[3] = {1, 1, 1};
        sub[d] = 1;
        start[d] = 0;
        MPI_Type_create_subarray(3, full, sub, start, MPI_ORDER_C, MPI_DOUBLE, &gr->face[d]);
        MPI_Type_commit(&gr->face[d]);
    }
    size_t cells = (size_t)(nx + 2) * (ny + 2) * (nz + 2);
    gr->u = bench_xmalloc(cells * sizeof(double));
    gr->v = bench_xmalloc(cells * sizeof(double));
    /* Interior starts at 0; the global x-low boundary is held at 1.0 so values evolve. */
    for (size_t c = 0; c < cells; c++)
        gr->u[c] = gr->v[c] = 0.0;
    if (gr->coords[0] == 0)
        for (int j = 0; j < ny + 2; j++)
            for (int k = 0; k < nz + 2; k++)
                gr->u[IDX(gr, 0, j, k)] = gr->v[IDX(gr, 0, j, k)] = 1.0;
}

/* Offset (in elements) of plane index p of dimension d inside the ghosted array. */
static size_t plane_offset(const grid *gr, int d, int p)
{
    int ijk[3] = {0, 0, 0};
    ijk[d] = p;
    return IDX(gr, ijk[0], ijk[1], ijk[2]);
}

static void halo_exchange(grid *gr, double *a)
{
    for (int d = 0; d < 3; d++) {
        int n = gr->n[d];
        /* send my last interior plane up, receive my low ghost plane from below */
        MPI_Sendrecv(a + plane_offset(gr, d, n), 1, gr->face[d], gr->nb_hi[d], d,
                     a + plane_offset(gr, d, 0), 1, gr->face[d], gr->nb_lo[d], d, gr->cart,
                     MPI_STATUS_IGNORE);
        MPI_Sendrecv(a + plane_offset(gr, d, 1), 1, gr->face[d], gr->nb_lo[d], 10 + d,
                     a + plane_offset(gr, d, n + 1), 1, gr->face[d], gr->nb_hi[d], 10 + d, gr->cart,
                     MPI_STATUS_IGNORE);
    }
}

static void sweep(grid *gr, const double *a, double *out)
{
    for (int i = 1; i <= gr->n[0]; i++)
        for (int j = 1; j <= gr->n[1]; j++)
            for (int k = 1; k <= gr->n[2]; k++)
                out[IDX(gr, i, j, k)] =
                    (a[IDX(gr, i - 1, j, k)] + a[IDX(gr, i + 1, j, k)] + a[IDX(gr, i, j - 1, k)] +
                     a[IDX(gr, i, j + 1, k)] + a[IDX(gr, i, j, k - 1)] + a[IDX(gr, i, j, k + 1)]) /
                    6.0;
}

static void copy_interior(const grid *gr, const double *a, double *out)
{
    size_t o = 0;
    for (int i = 1; i <= gr->n[0]; i++)
        for (int j = 1; j <= gr->n[1]; j++)
            for (int k = 1; k <= gr->n[2]; k++)
                out[o++] = a[IDX(gr, i, j, k)];
}

static long long verify_snapshot(bench *b, grid *gr, MPI_Datatype filetype, int snap,
                                 const double *expect)
{
    long long nloc = (long long)gr->n[0] * gr->n[1] * gr->n[2];
    long long bad = 0;
    MPI_File fh;
    BCHK(MPI_File_open(MPI_COMM_WORLD, b->target, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
         "MPI_File_open (verify)");
    /* 1. through the same subarray view, collectively */
    BCHK(MPI_File_set_view(fh, 0, MPI_DOUBLE, filetype, "native", MPI_INFO_NULL),
         "MPI_File_set_view (verify)");
    double *got = bench_xmalloc((size_t)nloc * sizeof(double));
    memset(got, 0, (size_t)nloc * sizeof(double));
    BCHK(MPI_File_read_at_all(fh, (MPI_Offset)snap * nloc, got, (int)nloc, MPI_DOUBLE,
                              MPI_STATUS_IGNORE),
         "MPI_File_read_at_all (verify)");
    for (long long i = 0; i < nloc; i++)
        bad += got[i] != expect[i];
    /* 2. a few rows at byte offsets computed here, not by MPI: checks the row-major layout */
    BCHK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL),
         "MPI_File_set_view (verify bytes)");
    int nz = gr->n[2];
    int rows_i[3] = {0, gr->n[0] / 2, gr->n[0] - 1}, rows_j[3] = {0, gr->n[1] / 2, gr->n[1] - 1};
    for (int a = 0; a < 3; a++)
        for (int c = 0; c < 3; c++) {
            int i = rows_i[a], j = rows_j[c];
            long long gi = gr->lo[0] + i, gj = gr->lo[1] + j, gk = gr->lo[2];
            long long elem = (long long)snap * gr->g[0] * gr->g[1] * gr->g[2] +
                             (gi * gr->g[1] + gj) * gr->g[2] + gk;
            BCHK(MPI_File_read_at(fh, (MPI_Offset)elem * 8, got, nz * 8, MPI_BYTE,
                                  MPI_STATUS_IGNORE),
                 "MPI_File_read_at (verify row)");
            const double *want = expect + ((size_t)i * gr->n[1] + j) * nz;
            for (int k = 0; k < nz; k++)
                bad += got[k] != want[k];
        }
    BCHK(MPI_File_close(&fh), "MPI_File_close (verify)");
    free(got);
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    static const char *const known[] = {
        "--local",         "--nx", "--ny", "--nz", "--iters", "--every", "--compute-scale",
        "--phase-seconds", NULL};
    bench_check_args(argc, argv, known, NULL,
                     "[--local N | --nx X --ny Y --nz Z] [--iters I] [--every K] "
                     "[--compute-scale S | --phase-seconds P] [--peak] [--no-verify] [--seed S]");
    bench bb, *b = &bb;
    bench_begin(b, "jacobi3d", argc, argv);
    int local = (int)bench_opt_size(argc, argv, "--local", 32);
    int nx = (int)bench_opt_size(argc, argv, "--nx", local);
    int ny = (int)bench_opt_size(argc, argv, "--ny", local);
    int nz = (int)bench_opt_size(argc, argv, "--nz", local);
    int iters = (int)bench_opt_size(argc, argv, "--iters", 10);
    int every = (int)bench_opt_size(argc, argv, "--every", 2);
    int scale = (int)bench_opt_size(argc, argv, "--compute-scale", 1);
    /* --phase-seconds P: each computation phase (the K iterations between snapshots) lasts P
     * seconds of wall time on rank 0's clock, whatever the load on the machine: sweeps repeat
     * until the iteration's share of P has passed (rank 0 decides, so every rank does the same
     * number of sweeps and halo exchanges). The work done ("sweeps") then measures the speed:
     * a slower computation does fewer sweeps in the same time. */
    double phase_s = bench_opt_dbl(argc, argv, "--phase-seconds", 0);
    if (nx < 1 || ny < 1 || nz < 1 || iters < 1 || every < 1 || scale < 1)
        bench_die("sizes, --iters, --every and --compute-scale must be >= 1");

    grid gr;
    grid_setup(&gr, nx, ny, nz);
    long long nloc = (long long)nx * ny * nz;
    if (nloc * 8 > 0x7fffffffLL)
        bench_die("local block over 2 GiB: use fewer cells per rank");
    int nsnap = iters / every;
    bench_param_int(b, "nx", nx);
    bench_param_int(b, "ny", ny);
    bench_param_int(b, "nz", nz);
    bench_param_int(b, "gx", gr.g[0]);
    bench_param_int(b, "gy", gr.g[1]);
    bench_param_int(b, "gz", gr.g[2]);
    bench_param_int(b, "iters", iters);
    bench_param_int(b, "every", every);
    bench_param_int(b, "snapshots", nsnap);
    bench_param_int(b, "compute_scale", scale);
    bench_param_int(b, "snapshot_bytes", nloc * 8 * b->nprocs);

    int full[3] = {nx + 2, ny + 2, nz + 2}, sub[3] = {nx, ny, nz}, one[3] = {1, 1, 1};
    MPI_Datatype memtype, filetype;
    MPI_Type_create_subarray(3, full, sub, one, MPI_ORDER_C, MPI_DOUBLE, &memtype);
    MPI_Type_commit(&memtype);
    MPI_Type_create_subarray(3, gr.g, sub, gr.lo, MPI_ORDER_C, MPI_DOUBLE, &filetype);
    MPI_Type_commit(&filetype);

    double *last = NULL;
    if (!b->peak && b->verify)
        last = bench_xmalloc((size_t)nloc * sizeof(double));

    MPI_File fh = MPI_FILE_NULL;
    double t;
    if (!b->peak) {
        bench_remove(b, b->target);
        t = bench_now();
        BCHK(MPI_File_open(MPI_COMM_WORLD, b->target, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                           MPI_INFO_NULL, &fh),
             "MPI_File_open");
        BCHK(MPI_File_set_view(fh, 0, MPI_DOUBLE, filetype, "native", MPI_INFO_NULL),
             "MPI_File_set_view");
        bench_add(b, "open", bench_now() - t);
    } else {
        bench_add(b, "open", 0);
    }
    bench_add(b, "write", 0);
    bench_add(b, "compute", 0);
    bench_add(b, "comm", 0);

    long long sweeps = 0;
    for (int it = 1; it <= iters; it++) {
        double it_start = bench_now(), it_len = phase_s / every;
        for (int s = 0; phase_s > 0 || s < scale; s++) {
            if (phase_s > 0) {
                int go = b->rank != 0 || bench_now() - it_start < it_len;
                t = bench_now();
                MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
                bench_add(b, "comm", bench_now() - t);
                if (!go)
                    break;
            }
            sweeps++;
            t = bench_now();
            halo_exchange(&gr, gr.u);
            bench_add(b, "comm", bench_now() - t);
            t = bench_now();
            sweep(&gr, gr.u, gr.v);
            double *tmp = gr.u;
            gr.u = gr.v;
            gr.v = tmp;
            bench_add(b, "compute", bench_now() - t);
        }
        if (it % every == 0 && !b->peak) {
            t = bench_now();
            BCHK(MPI_File_write_all(fh, gr.u, 1, memtype, MPI_STATUS_IGNORE), "MPI_File_write_all");
            bench_add(b, "write", bench_now() - t);
            b->bytes_written += nloc * 8;
            if (last)
                copy_interior(&gr, gr.u, last);
        }
    }
    if (!b->peak) {
        t = bench_now();
        BCHK(MPI_File_close(&fh), "MPI_File_close");
        bench_add(b, "close", bench_now() - t);
    } else {
        bench_add(b, "close", 0);
    }
    t = bench_now();
    if (last && nsnap > 0)
        b->verify_errors += verify_snapshot(b, &gr, filetype, nsnap - 1, last);
    bench_add(b, "verify", bench_now() - t);

    /* A checksum keeps the solver's work observable (and the compiler honest). */
    double sum = 0, gsum = 0;
    for (int i = 1; i <= nx; i++)
        sum += gr.u[IDX(&gr, i, 1, 1)];
    MPI_Reduce(&sum, &gsum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    bench_param_dbl(b, "checksum", gsum);
    bench_param_int(b, "sweeps", sweeps);
    bench_param_dbl(b, "phase_seconds", phase_s);

    int rc = bench_report(b);
    free(last);
    free(gr.u);
    free(gr.v);
    MPI_Type_free(&memtype);
    MPI_Type_free(&filetype);
    for (int d = 0; d < 3; d++)
        MPI_Type_free(&gr.face[d]);
    MPI_Comm_free(&gr.cart);
    MPI_Finalize();
    return rc;
}
