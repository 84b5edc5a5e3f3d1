/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* romio_perf: ROMIO's "perf" pattern (semplar sec. 5): each rank writes its array to a shared
 * file at offset rank*size with independent calls, then reads it back and checks it.
 *
 * Phases, each timed on every rank after a barrier (max over ranks is reported):
 *   write       MPI_File_write_at of the array (no sync: what the application waits for)
 *   write_sync  the same write followed by MPI_File_sync (data durable on the target)
 *   read        MPI_File_read_at of the array, verified word by word against the pattern
 * Only "write" and "read" count in write_bw/read_bw; write_sync has its own bandwidth in
 * params-derived fields computed by the runner (bytes / time.write_sync).
 * --loops L repeats the three phases L times (times and bytes accumulate).
 * --collective: the same bytes with MPI_File_write_at_all / read_at_all through a file view
 * that interleaves the ranks' arrays in blocks of --block bytes (1 MiB): rank r's block i at
 * (i * nprocs + r) * block. The ranges interleave, so two-phase collective buffering applies
 * and the node's aggregators move all the data (the "MPI-IO collective write" of issue #12).
 * --file-per-process: rank r writes its array at offset 0 of a file of its own, opened with
 * MPI_COMM_SELF and named after the target with ".r<rank>" before its extension
 * (out.rfsm -> out.r2.rfsm): the file-per-process pattern of depot reordering (issue #17).
 * --data FILE: the arrays hold FILE's bytes instead of the computed pattern (rank r's array is
 * FILE from offset r*size, wrapping at its end), so a run can write real science data, whose
 * compressibility no formula reproduces; the read phase then compares against those bytes.
 * --no-read leaves the read phase out (a benchmark that measures writes on a slow anchor).
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* n bytes of path from offset from (modulo its size) into out */
static void load_data(const char *path, long long from, unsigned char *out, long long n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        bench_die("--data: cannot open the file");
    if (fseeko(f, 0, SEEK_END) != 0)
        bench_die("--data: cannot seek");
    long long fsize = (long long)ftello(f);
    if (fsize <= 0)
        bench_die("--data: the file is empty");
    long long at = from % fsize, done = 0;
    while (done < n) {
        if (fseeko(f, (off_t)at, SEEK_SET) != 0)
            bench_die("--data: cannot seek");
        long long want = fsize - at < n - done ? fsize - at : n - done;
        if (fread(out + done, 1, (size_t)want, f) != (size_t)want)
            bench_die("--data: short read");
        done += want;
        at = 0;
    }
    fclose(f);
}

static long long count_differing_words(const double *got, const double *want, long long nwords)
{
    long long bad = 0;
    for (long long i = 0; i < nwords; i++)
        bad += memcmp(&got[i], &want[i], sizeof got[i]) != 0;
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    static const char *const known[] = {"--size", "--loops", "--block", "--data", NULL};
    static const char *const flags[] = {"--no-sync", "--collective", "--file-per-process",
                                        "--no-read", NULL};
    bench_check_args(argc, argv, known, flags,
                     "[--size BYTES] [--loops L] [--no-sync] [--collective [--block BYTES]] "
                     "[--file-per-process] [--data FILE] [--no-read] "
                     "[--no-verify] [--seed S]");
    bench bb, *b = &bb;
    bench_begin(b, "romio_perf", argc, argv);
    if (b->peak)
        bench_die("romio_perf has no --peak mode: it is all I/O");
    long long size = bench_opt_size(argc, argv, "--size", 4LL << 20);
    int loops = (int)bench_opt_size(argc, argv, "--loops", 1);
    int do_sync = !bench_opt_flag(argc, argv, "--no-sync");
    int coll = bench_opt_flag(argc, argv, "--collective");
    long long block = bench_opt_size(argc, argv, "--block", 1LL << 20);
    int fpp = bench_opt_flag(argc, argv, "--file-per-process");
    int do_read = !bench_opt_flag(argc, argv, "--no-read");
    if (!do_read)
        b->verify = 0; /* nothing is read back, so the report must say "skipped" */
    if (size < 8 || size % 8 || size > 0x7fffffffLL || loops < 1)
        bench_die("--size must be a multiple of 8 in [8, 2 GiB); --loops >= 1");
    if (coll && (block < 8 || block % 8 || size % block))
        bench_die("--block must be a multiple of 8 that divides --size");
    if (coll && fpp)
        bench_die("--collective and --file-per-process exclude each other");
    bench_param_int(b, "size", size);
    bench_param_int(b, "loops", loops);
    bench_param_int(b, "sync_phase", do_sync);
    bench_param_int(b, "collective", coll);
    bench_param_int(b, "file_per_process", fpp);
    if (coll)
        bench_param_int(b, "block", block);

    long long nwords = size / 8;
    double *buf = bench_xmalloc((size_t)size);
    const char *data_path = bench_opt_str(argc, argv, "--data", NULL);
    double *data = NULL; /* the bytes the array must hold when --data is given */
    if (data_path) {
        data = bench_xmalloc((size_t)size);
        load_data(data_path, (long long)b->rank * size, (unsigned char *)data, size);
        bench_param_str(b, "data", data_path);
    }
    MPI_Offset off = (MPI_Offset)b->rank * size;
    long long first_word = (long long)b->rank * nwords;

    char own[4096];
    const char *name = b->target;
    if (fpp) {
        /* ".r<rank>" before the extension of the last path component, if it has one */
        const char *slash = strrchr(b->target, '/');
        const char *dot = strrchr(slash ? slash : b->target, '.');
        int stem = dot ? (int)(dot - b->target) : (int)strlen(b->target);
        if (snprintf(own, sizeof own, "%.*s.r%d%s", stem, b->target, b->rank, dot ? dot : "") >=
            (int)sizeof own)
            bench_die("target name too long");
        name = own;
        off = 0;
        first_word = (long long)b->rank * nwords;       /* each rank's own words, as before */
        int err = MPI_File_delete(name, MPI_INFO_NULL); /* stale data must not verify */
        (void)err;
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        bench_remove(b, b->target);
    }
    MPI_File fh;
    double t = bench_now();
    BCHK(MPI_File_open(fpp ? MPI_COMM_SELF : MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR,
                       MPI_INFO_NULL, &fh),
         "MPI_File_open");
    bench_add(b, "open", bench_now() - t);
    MPI_Datatype ftype = MPI_DATATYPE_NULL;
    if (coll) {
        /* the view starts at the rank's first block; its blocks repeat every nprocs blocks */
        MPI_Datatype vec;
        MPI_Type_vector((int)(size / block), (int)block, (int)block * b->nprocs, MPI_BYTE, &vec);
        MPI_Type_create_resized(vec, 0, (MPI_Aint)(size / block) * block * b->nprocs, &ftype);
        MPI_Type_free(&vec);
        MPI_Type_commit(&ftype);
        BCHK(MPI_File_set_view(fh, (MPI_Offset)b->rank * block, MPI_BYTE, ftype, "native",
                               MPI_INFO_NULL),
             "MPI_File_set_view");
        off = 0;
    }
    bench_add(b, "write", 0);
    bench_add(b, "write_sync", 0);
    bench_add(b, "read", 0);

    for (int l = 0; l < loops; l++) {
        if (data)
            memcpy(buf, data, (size_t)size);
        else
            bench_fill_pattern(buf, nwords, first_word, b->seed);
        MPI_Barrier(MPI_COMM_WORLD);
        t = bench_now();
        if (coll)
            BCHK(MPI_File_write_at_all(fh, off, buf, (int)size, MPI_BYTE, MPI_STATUS_IGNORE),
                 "MPI_File_write_at_all");
        else
            BCHK(MPI_File_write_at(fh, off, buf, (int)size, MPI_BYTE, MPI_STATUS_IGNORE),
                 "MPI_File_write_at");
        bench_add(b, "write", bench_now() - t);
        b->bytes_written += size;

        if (do_sync) {
            MPI_Barrier(MPI_COMM_WORLD);
            t = bench_now();
            if (coll)
                BCHK(MPI_File_write_at_all(fh, off, buf, (int)size, MPI_BYTE, MPI_STATUS_IGNORE),
                     "MPI_File_write_at_all (sync phase)");
            else
                BCHK(MPI_File_write_at(fh, off, buf, (int)size, MPI_BYTE, MPI_STATUS_IGNORE),
                     "MPI_File_write_at (sync phase)");
            BCHK(MPI_File_sync(fh), "MPI_File_sync");
            bench_add(b, "write_sync", bench_now() - t);
        }

        /* Sync-barrier-sync: the MPI-IO way to make other ranks' writes visible; here each
         * rank reads what it wrote itself, but the barrier keeps the phases separate. */
        if (!do_sync)
            BCHK(MPI_File_sync(fh), "MPI_File_sync");
        MPI_Barrier(MPI_COMM_WORLD);
        if (!do_read)
            continue;
        memset(buf, 0, (size_t)size);
        t = bench_now();
        if (coll)
            BCHK(MPI_File_read_at_all(fh, off, buf, (int)size, MPI_BYTE, MPI_STATUS_IGNORE),
                 "MPI_File_read_at_all");
        else
            BCHK(MPI_File_read_at(fh, off, buf, (int)size, MPI_BYTE, MPI_STATUS_IGNORE),
                 "MPI_File_read_at");
        bench_add(b, "read", bench_now() - t);
        b->bytes_read += size;
        if (b->verify && data)
            b->verify_errors += count_differing_words(buf, data, nwords);
        else if (b->verify)
            b->verify_errors += bench_check_pattern(buf, nwords, first_word, b->seed);
    }
    t = bench_now();
    BCHK(MPI_File_close(&fh), "MPI_File_close");
    if (coll)
        MPI_Type_free(&ftype);
    bench_add(b, "close", bench_now() - t);
    int rc = bench_report(b);
    free(data);
    free(buf);
    MPI_Finalize();
    return rc;
}
