/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* flashio: the FLASH I/O checkpoint pattern without HDF5 (mpiio-caching-write-behind sec. 5.2).
 *
 * Each rank holds B blocks of nxb^3 cells with G guard cells on every side, for V variables
 * (memory: unk[v][block][z][y][x] including guards). A checkpoint file stores, per variable,
 * the interiors of all blocks of all ranks in global block order (rank 0's blocks first), as
 * FLASH's HDF5 dataset per variable does. For each variable every rank writes its blocks with
 * one MPI_File_write_at_all (--independent: MPI_File_write_at): noncontiguous in memory
 * (a subarray type for the interior, resized to one block, count B), contiguous in the file.
 * Ranks hold slightly different block counts (B-1, B, B+1 in turn) for an unbalanced load.
 * --checkpoints C writes C files, TARGET.chk<c>. --compute UNITS of work run before each.
 * --peak skips the writes.
 *
 * Verification (untimed): the last checkpoint is read back per variable through the same
 * memory type into a buffer whose guard cells hold a sentinel; interiors must match the
 * position pattern and guards must be untouched.
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SENTINEL (-12345.0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    static const char *const known[] = {"--blocks",      "--nxb",     "--guard", "--vars",
                                        "--checkpoints", "--compute", NULL};
    static const char *const flags[] = {"--independent", NULL};
    bench_check_args(argc, argv, known, flags,
                     "[--blocks B] [--nxb N] [--guard G] [--vars V] [--checkpoints C] "
                     "[--compute UNITS] [--independent] [--peak] [--no-verify] [--seed S]");
    bench bb, *b = &bb;
    bench_begin(b, "flashio", argc, argv);
    int blocks = (int)bench_opt_size(argc, argv, "--blocks", 20);
    int nxb = (int)bench_opt_size(argc, argv, "--nxb", 8);
    int guard = (int)bench_opt_size(argc, argv, "--guard", 4);
    int vars = (int)bench_opt_size(argc, argv, "--vars", 12);
    int ckpts = (int)bench_opt_size(argc, argv, "--checkpoints", 2);
    double units = bench_opt_dbl(argc, argv, "--compute", 5.0);
    int indep = bench_opt_flag(argc, argv, "--independent");
    if (blocks < 2 || nxb < 1 || vars < 1 || ckpts < 1)
        bench_die("--blocks >= 2, --nxb/--vars/--checkpoints >= 1");
    int mine = b->nprocs > 1 ? blocks + (b->rank % 3) - 1 : blocks;
    long long first = 0, total = 0, mine_ll = mine;
    MPI_Exscan(&mine_ll, &first, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (b->rank == 0)
        first = 0;
    MPI_Allreduce(&mine_ll, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    int ng = nxb + 2 * guard;
    long long inner = (long long)nxb * nxb * nxb, outer = (long long)ng * ng * ng;
    if (outer * mine * 8 > 0x7fffffffLL)
        bench_die("per-variable block data over 2 GiB");
    bench_param_int(b, "blocks", blocks);
    bench_param_int(b, "nxb", nxb);
    bench_param_int(b, "guard", guard);
    bench_param_int(b, "vars", vars);
    bench_param_int(b, "checkpoints", ckpts);
    bench_param_int(b, "total_blocks", total);
    bench_param_dbl(b, "compute_units", units);
    bench_param_int(b, "checkpoint_bytes", total * inner * vars * 8);
    bench_param_str(b, "mode", indep ? "independent" : "collective");

    int full[3] = {ng, ng, ng}, sub[3] = {nxb, nxb, nxb}, start[3] = {guard, guard, guard};
    MPI_Datatype interior, blocktype;
    MPI_Type_create_subarray(3, full, sub, start, MPI_ORDER_C, MPI_DOUBLE, &interior);
    MPI_Type_create_resized(interior, 0, (MPI_Aint)(outer * 8), &blocktype);
    MPI_Type_commit(&blocktype);
    MPI_Type_free(&interior);

    size_t per_var = (size_t)(outer * mine);
    double *unk = bench_xmalloc(per_var * vars * sizeof(double));
    for (size_t i = 0; i < per_var * vars; i++)
        unk[i] = SENTINEL;
    char name[4096];
    double t;
    bench_add(b, "open", 0);
    bench_add(b, "write", 0);
    bench_add(b, "close", 0);
    bench_add(b, "compute", 0);

    for (int c = 0; c < ckpts; c++) {
        t = bench_now();
        bench_spin(units);
        /* interior cell (v, block, z, y, x) holds the pattern word of its file position */
        for (int v = 0; v < vars; v++)
            for (int k = 0; k < mine; k++)
                for (int z = 0; z < nxb; z++)
                    for (int y = 0; y < nxb; y++) {
                        double *row = unk + (size_t)v * per_var + (size_t)k * outer +
                                      (((size_t)(z + guard) * ng + (y + guard)) * ng + guard);
                        long long w = ((long long)v * total + first + k) * inner +
                                      ((long long)z * nxb + y) * nxb;
                        bench_fill_pattern(row, nxb, w, b->seed);
                    }
        bench_add(b, "compute", bench_now() - t);
        if (b->peak)
            continue;
        if (snprintf(name, sizeof name, "%s.chk%d", b->target, c) >= (int)sizeof name)
            bench_die("file name too long");
        bench_remove(b, name);
        MPI_File fh;
        t = bench_now();
        bench_check(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                                  MPI_INFO_NULL, &fh),
                    "MPI_File_open", name);
        bench_add(b, "open", bench_now() - t);
        t = bench_now();
        for (int v = 0; v < vars; v++) {
            MPI_Offset off = ((MPI_Offset)v * total + first) * inner * 8;
            double *src = unk + (size_t)v * per_var;
            if (indep)
                bench_check(MPI_File_write_at(fh, off, src, mine, blocktype, MPI_STATUS_IGNORE),
                            "MPI_File_write_at", name);
            else
                bench_check(MPI_File_write_at_all(fh, off, src, mine, blocktype, MPI_STATUS_IGNORE),
                            "MPI_File_write_at_all", name);
            b->bytes_written += inner * mine * 8;
        }
        bench_add(b, "write", bench_now() - t);
        t = bench_now();
        bench_check(MPI_File_close(&fh), "MPI_File_close", name);
        bench_add(b, "close", bench_now() - t);
    }

    t = bench_now();
    if (!b->peak && b->verify) {
        double *got = bench_xmalloc(per_var * sizeof(double));
        MPI_File fh;
        bench_check(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
                    "MPI_File_open (verify)", name);
        for (int v = 0; v < vars; v++) {
            for (size_t i = 0; i < per_var; i++)
                got[i] = SENTINEL;
            MPI_Offset off = ((MPI_Offset)v * total + first) * inner * 8;
            bench_check(MPI_File_read_at_all(fh, off, got, mine, blocktype, MPI_STATUS_IGNORE),
                        "MPI_File_read_at_all (verify)", name);
            const double *want = unk + (size_t)v * per_var;
            for (size_t i = 0; i < per_var; i++)
                b->verify_errors += got[i] != want[i]; /* interiors and untouched guards */
        }
        bench_check(MPI_File_close(&fh), "MPI_File_close (verify)", name);
        free(got);
    }
    bench_add(b, "verify", bench_now() - t);

    int rc = bench_report(b);
    MPI_Type_free(&blocktype);
    free(unk);
    MPI_Finalize();
    return rc;
}
