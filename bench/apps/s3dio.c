/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* s3dio: the S3D I/O checkpoint pattern (mpiio-caching-write-behind sec. 5.3).
 *
 * Four global arrays per checkpoint, all (BLOCK, BLOCK, BLOCK)-partitioned in X-Y-Z over an
 * MPI_Dims_create grid with an unpartitioned fourth dimension: mass (11 species), velocity
 * (3 components), pressure and temperature (1). In the file each array is stored in canonical
 * order (Fortran: x fastest, the 4th dimension slowest; C: [v][z][y][x]), one after another.
 * Each array is written with MPI_File_write_all (--independent: MPI_File_write) through a
 * 4-D subarray view whose displacement is the array's start. Each checkpoint is a new file TARGET.<c>, as in S3D.
 * --compute UNITS of work run before each checkpoint. --peak skips the writes.
 *
 * Verification (untimed): the last checkpoint's arrays are read back collectively through the
 * same views and checked against the position pattern.
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int fourth[4] = {11, 3, 1, 1};

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    static const char *const known[] = {"--local", "--checkpoints", "--compute", NULL};
    static const char *const flags[] = {"--independent", NULL};
    bench_check_args(argc, argv, known, flags,
                     "[--local N] [--checkpoints C] [--compute UNITS] [--independent] [--peak] "
                     "[--no-verify] [--seed S]");
    bench bb, *b = &bb;
    bench_begin(b, "s3dio", argc, argv);
    int n = (int)bench_opt_size(argc, argv, "--local", 16);
    int ckpts = (int)bench_opt_size(argc, argv, "--checkpoints", 3);
    double units = bench_opt_dbl(argc, argv, "--compute", 5.0);
    int indep = bench_opt_flag(argc, argv, "--independent");
    bench_param_str(b, "mode", indep ? "independent" : "collective");
    if (n < 1 || ckpts < 1)
        bench_die("--local and --checkpoints must be >= 1");
    int dims[3] = {0, 0, 0}, coords[3];
    MPI_Dims_create(b->nprocs, 3, dims);
    /* rank -> (z, y, x) block coordinates, x fastest */
    coords[2] = b->rank % dims[2];
    coords[1] = (b->rank / dims[2]) % dims[1];
    coords[0] = b->rank / (dims[2] * dims[1]);
    long long g[3] = {(long long)dims[0] * n, (long long)dims[1] * n, (long long)dims[2] * n};
    long long cube = (long long)n * n * n, gcube = g[0] * g[1] * g[2];
    if (cube * 11 * 8 > 0x7fffffffLL || g[0] > 0x7fffffff)
        bench_die("--local too large");
    bench_param_int(b, "local", n);
    bench_param_int(b, "gx", g[2]);
    bench_param_int(b, "gy", g[1]);
    bench_param_int(b, "gz", g[0]);
    bench_param_int(b, "checkpoints", ckpts);
    bench_param_dbl(b, "compute_units", units);
    bench_param_int(b, "checkpoint_bytes", gcube * 16 * 8);

    MPI_Datatype ft[4];
    MPI_Offset adisp[4];
    MPI_Offset acc = 0;
    double *arr[4];
    for (int a = 0; a < 4; a++) {
        int sizes[4] = {fourth[a], (int)g[0], (int)g[1], (int)g[2]};
        int subs[4] = {fourth[a], n, n, n};
        int starts[4] = {0, coords[0] * n, coords[1] * n, coords[2] * n};
        MPI_Type_create_subarray(4, sizes, subs, starts, MPI_ORDER_C, MPI_DOUBLE, &ft[a]);
        MPI_Type_commit(&ft[a]);
        adisp[a] = acc;
        acc += (MPI_Offset)fourth[a] * gcube * 8;
        arr[a] = bench_xmalloc((size_t)(fourth[a] * cube) * 8);
        /* element (v, z, y, x) of my block holds the pattern word of its file position */
        for (int v = 0; v < fourth[a]; v++)
            for (int z = 0; z < n; z++)
                for (int y = 0; y < n; y++) {
                    long long gz = coords[0] * n + z, gy = coords[1] * n + y, gx = coords[2] * n;
                    long long w = adisp[a] / 8 + ((v * g[0] + gz) * g[1] + gy) * g[2] + gx;
                    bench_fill_pattern(arr[a] + (((size_t)v * n + z) * n + y) * n, n, w, b->seed);
                }
    }
    char name[4096];
    double t;
    bench_add(b, "open", 0);
    bench_add(b, "write", 0);
    bench_add(b, "close", 0);
    bench_add(b, "compute", 0);
    for (int c = 0; c < ckpts; c++) {
        t = bench_now();
        bench_spin(units);
        bench_add(b, "compute", bench_now() - t);
        if (b->peak)
            continue;
        if (snprintf(name, sizeof name, "%s.%d", b->target, c) >= (int)sizeof name)
            bench_die("file name too long");
        bench_remove(b, name);
        MPI_File fh;
        t = bench_now();
        bench_check(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                                  MPI_INFO_NULL, &fh),
                    "MPI_File_open", name);
        bench_add(b, "open", bench_now() - t);
        t = bench_now();
        for (int a = 0; a < 4; a++) {
            bench_check(MPI_File_set_view(fh, adisp[a], MPI_DOUBLE, ft[a], "native", MPI_INFO_NULL),
                        "MPI_File_set_view", name);
            if (indep)
                bench_check(MPI_File_write(fh, arr[a], (int)(fourth[a] * cube), MPI_DOUBLE,
                                           MPI_STATUS_IGNORE),
                            "MPI_File_write", name);
            else
                bench_check(MPI_File_write_all(fh, arr[a], (int)(fourth[a] * cube), MPI_DOUBLE,
                                               MPI_STATUS_IGNORE),
                            "MPI_File_write_all", name);
            b->bytes_written += fourth[a] * cube * 8;
        }
        bench_add(b, "write", bench_now() - t);
        t = bench_now();
        bench_check(MPI_File_close(&fh), "MPI_File_close", name);
        bench_add(b, "close", bench_now() - t);
    }

    t = bench_now();
    if (!b->peak && b->verify) {
        MPI_File fh;
        bench_check(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
                    "MPI_File_open (verify)", name);
        for (int a = 0; a < 4; a++) {
            size_t cnt = (size_t)(fourth[a] * cube);
            double *got = bench_xmalloc(cnt * 8);
            memset(got, 0, cnt * 8);
            bench_check(MPI_File_set_view(fh, adisp[a], MPI_DOUBLE, ft[a], "native", MPI_INFO_NULL),
                        "MPI_File_set_view (verify)", name);
            bench_check(MPI_File_read_all(fh, got, (int)cnt, MPI_DOUBLE, MPI_STATUS_IGNORE),
                        "MPI_File_read_all (verify)", name);
            for (size_t i = 0; i < cnt; i++)
                b->verify_errors += got[i] != arr[a][i];
            free(got);
        }
        bench_check(MPI_File_close(&fh), "MPI_File_close (verify)", name);
    }
    bench_add(b, "verify", bench_now() - t);

    int rc = bench_report(b);
    for (int a = 0; a < 4; a++) {
        MPI_Type_free(&ft[a]);
        free(arr[a]);
    }
    MPI_Finalize();
    return rc;
}
