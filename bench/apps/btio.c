/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* btio: a simplified NPB BTIO write pattern (mpiio-caching-write-behind sec. 5.1).
 *
 * An N^3 grid of 5-double points (Fortran u(5,nx,ny,nz): component fastest, z slowest) is cut
 * into a q x q x q grid of cells handed out diagonally, as BT's multipartition does:
 *   - ranks = q^2 (a square): cell (cx,cy,cz) belongs to rank ((cx-cz) mod q)*q + (cy-cz) mod q,
 *     so every rank owns one cell in each z-layer of cells (q cells);
 *   - otherwise q = ranks and cell (cx,cy,cz) belongs to rank (cx+cy+cz) mod q (q^2 cells).
 * Each dump writes the whole array collectively (MPI_File_write_all; --independent: each rank
 * MPI_File_write, as the write-behind comparison needs) through a view built from
 * the owned cells' rows (a nested strided hindexed filetype resized to the array size), so
 * successive dumps append one array after another, as BTIO's forty dumps do. The data is
 * the position pattern. --compute UNITS of work run between dumps. --peak skips the writes.
 *
 * Verification (untimed): the first and last dumps are read back collectively through the view
 * and every word checked.
 */
#include "common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMP 5

static int owner(int cx, int cy, int cz, int q, int square)
{
    if (square)
        return (((cx - cz) % q + q) % q) * q + ((cy - cz) % q + q) % q;
    return (cx + cy + cz) % q;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    static const char *const known[] = {"--n", "--dumps", "--compute", NULL};
    static const char *const flags[] = {"--independent", NULL};
    bench_check_args(argc, argv, known, flags,
                     "[--n GRID] [--dumps D] [--compute UNITS] [--peak] [--no-verify] [--seed S]");
    bench bb, *b = &bb;
    bench_begin(b, "btio", argc, argv);
    int n = (int)bench_opt_size(argc, argv, "--n", 48);
    int dumps = (int)bench_opt_size(argc, argv, "--dumps", 5);
    double units = bench_opt_dbl(argc, argv, "--compute", 5.0);
    int indep = bench_opt_flag(argc, argv, "--independent");
    int q = (int)lround(sqrt((double)b->nprocs));
    int square = q * q == b->nprocs;
    if (!square)
        q = b->nprocs;
    if (n < q)
        n = q;
    n = (n + q - 1) / q * q; /* cells must tile the grid */
    int cs = n / q;
    if (dumps < 1)
        bench_die("--dumps must be >= 1");
    long long array_bytes = (long long)n * n * n * COMP * 8;
    bench_param_int(b, "n", n);
    bench_param_int(b, "q", q);
    bench_param_int(b, "cell", cs);
    bench_param_int(b, "dumps", dumps);
    bench_param_dbl(b, "compute_units", units);
    bench_param_int(b, "array_bytes", array_bytes);
    bench_param_str(b, "partition", square ? "multipartition" : "diagonal");
    bench_param_str(b, "mode", indep ? "independent" : "collective");

    /* Runs of my rows in file order: z, then y, then cells along x. */
    long long maxruns = (long long)n * n * q, nruns = 0;
    int *len = bench_xmalloc((size_t)maxruns * sizeof(int));
    MPI_Aint *disp = bench_xmalloc((size_t)maxruns * sizeof(MPI_Aint));
    long long mywords = 0;
    for (int z = 0; z < n; z++)
        for (int y = 0; y < n; y++)
            for (int cx = 0; cx < q; cx++) {
                if (owner(cx, y / cs, z / cs, q, square) != b->rank)
                    continue;
                MPI_Aint d = (((MPI_Aint)z * n + y) * n + (MPI_Aint)cx * cs) * COMP * 8;
                int l = cs * COMP;
                if (nruns && disp[nruns - 1] + (MPI_Aint)len[nruns - 1] * 8 == d)
                    len[nruns - 1] += l; /* adjacent cells of mine merge */
                else {
                    disp[nruns] = d;
                    len[nruns++] = l;
                }
                mywords += l;
            }
    if (mywords * 8 > 0x7fffffffLL)
        bench_die("local part over 2 GiB");
    MPI_Datatype runs, filetype;
    MPI_Type_create_hindexed((int)nruns, len, disp, MPI_DOUBLE, &runs);
    MPI_Type_create_resized(runs, 0, (MPI_Aint)array_bytes, &filetype);
    MPI_Type_commit(&filetype);
    MPI_Type_free(&runs);
    bench_param_int(b, "runs_per_rank0", nruns);

    double *buf = bench_xmalloc((size_t)mywords * 8);
    MPI_File fh = MPI_FILE_NULL;
    double t;
    bench_add(b, "open", 0);
    bench_add(b, "write", 0);
    bench_add(b, "compute", 0);
    if (!b->peak) {
        bench_remove(b, b->target);
        t = bench_now();
        BCHK(MPI_File_open(MPI_COMM_WORLD, b->target, MPI_MODE_CREATE | MPI_MODE_RDWR,
                           MPI_INFO_NULL, &fh),
             "MPI_File_open");
        BCHK(MPI_File_set_view(fh, 0, MPI_DOUBLE, filetype, "native", MPI_INFO_NULL),
             "MPI_File_set_view");
        bench_add(b, "open", bench_now() - t);
    }
    for (int d = 0; d < dumps; d++) {
        t = bench_now();
        bench_spin(units);
        /* the "solution": pattern words of where each value lands in dump d */
        long long o = 0;
        for (long long r = 0; r < nruns; r++) {
            bench_fill_pattern(buf + o, len[r], d * (array_bytes / 8) + disp[r] / 8, b->seed);
            o += len[r];
        }
        bench_add(b, "compute", bench_now() - t);
        if (b->peak)
            continue;
        t = bench_now();
        if (indep)
            BCHK(MPI_File_write(fh, buf, (int)mywords, MPI_DOUBLE, MPI_STATUS_IGNORE),
                 "MPI_File_write");
        else
            BCHK(MPI_File_write_all(fh, buf, (int)mywords, MPI_DOUBLE, MPI_STATUS_IGNORE),
                 "MPI_File_write_all");
        bench_add(b, "write", bench_now() - t);
        b->bytes_written += mywords * 8;
    }
    t = bench_now();
    if (!b->peak)
        BCHK(MPI_File_close(&fh), "MPI_File_close");
    bench_add(b, "close", bench_now() - t);

    t = bench_now();
    if (!b->peak && b->verify) {
        BCHK(MPI_File_open(MPI_COMM_WORLD, b->target, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
             "MPI_File_open (verify)");
        BCHK(MPI_File_set_view(fh, 0, MPI_DOUBLE, filetype, "native", MPI_INFO_NULL),
             "MPI_File_set_view (verify)");
        int check[2] = {0, dumps - 1};
        for (int c = 0; c < (dumps > 1 ? 2 : 1); c++) {
            int d = check[c];
            memset(buf, 0, (size_t)mywords * 8);
            BCHK(MPI_File_read_at_all(fh, (MPI_Offset)d * mywords, buf, (int)mywords, MPI_DOUBLE,
                                      MPI_STATUS_IGNORE),
                 "MPI_File_read_at_all (verify)");
            long long o = 0;
            for (long long r = 0; r < nruns; r++) {
                b->verify_errors += bench_check_pattern(
                    buf + o, len[r], d * (array_bytes / 8) + disp[r] / 8, b->seed);
                o += len[r];
            }
        }
        BCHK(MPI_File_close(&fh), "MPI_File_close (verify)");
    }
    bench_add(b, "verify", bench_now() - t);

    int rc = bench_report(b);
    MPI_Type_free(&filetype);
    free(buf);
    free(len);
    free(disp);
    MPI_Finalize();
    return rc;
}
