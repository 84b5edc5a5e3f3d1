/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* demo3d: the shape of a simulation's checkpoint, written and read back through MPI-IO.
 *
 * Every rank owns one block of a global 3-D array of doubles (block decomposition from
 * MPI_Dims_create). The program writes the array collectively into one file (a subarray file
 * view + MPI_File_write_all), closes it, reopens it, reads it back collectively the same way,
 * checks every element, and prints a one-screen summary on rank 0.
 *
 * The file name is whatever MPI_File_open accepts: a local path, or `rfs:HOST:PORT:/path` when
 * librfs-mpiio.so is preloaded. The program itself knows nothing about rfs.
 *
 * Usage: demo3d FILE [NX [NY [NZ]]]     (default 256 x 256 x 256 doubles = 128 MiB)
 * Exit status: 0 when every element read back matches, 1 on a mismatch, 2 on bad arguments,
 * and MPI_Abort on an MPI error (the message names the call and the file).
 */
#include <mpi.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NDIMS = 3 };

typedef struct {
    int rank, nprocs;
    int dims[NDIMS];         /* process grid */
    int coords[NDIMS];       /* this rank's place in the grid */
    long long global[NDIMS]; /* global array size, slowest dimension first */
    long long local[NDIMS];  /* this rank's block */
    long long start[NDIMS];  /* where the block begins in the global array */
    const char *path;
} layout;

typedef struct {
    double open, transfer, close, total; /* seconds, slowest rank */
} phase_times;

static void check(int rc, const char *what, const char *path)
{
    if (rc == MPI_SUCCESS)
        return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "demo3d: rank %d: %s(%s) failed: %s\n", rank, what, path, msg);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

/* The value stored at a global index: its linear position, exact in a double up to 2^53, so a
 * wrong offset, a swapped block or a short transfer all show up as a mismatch, and two runs of
 * the same size produce byte-identical files. */
static double value_at(const layout *l, long long i, long long j, long long k)
{
    return (double)((i * l->global[1] + j) * l->global[2] + k);
}

/* Splits n into `parts` nearly equal pieces; piece p starts at *start and has *len elements. */
static void split(long long n, int parts, int p, long long *start, long long *len)
{
    long long base = n / parts, extra = n % parts;
    *len = base + (p < extra ? 1 : 0);
    *start = p * base + (p < extra ? p : extra);
}

static int parse_args(int argc, char **argv, layout *l)
{
    if (argc < 2 || argc > 5) {
        if (l->rank == 0)
            fprintf(stderr, "usage: %s FILE [NX [NY [NZ]]]   (default 256 256 256)\n", argv[0]);
        return -1;
    }
    l->path = argv[1];
    for (int d = 0; d < NDIMS; d++) {
        /* A missing size repeats the previous one, so `demo3d f 128` is 128^3. */
        const char *s = argc > 2 + d ? argv[2 + d] : NULL;
        if (s == NULL) {
            l->global[d] = d == 0 ? 256 : l->global[d - 1];
            continue;
        }
        char *end = NULL;
        long long v = strtoll(s, &end, 10);
        if (*s == '\0' || *end != '\0' || v < 1 || v > (1LL << 20)) {
            if (l->rank == 0)
                fprintf(stderr, "demo3d: bad size '%s' (want 1..%lld)\n", s, 1LL << 20);
            return -1;
        }
        l->global[d] = v;
    }
    return 0;
}

static int decompose(layout *l)
{
    memset(l->dims, 0, sizeof l->dims);
    MPI_Dims_create(l->nprocs, NDIMS, l->dims);
    int rest = l->rank;
    for (int d = NDIMS - 1; d >= 0; d--) { /* row-major rank order, like MPI_Cart_create */
        l->coords[d] = rest % l->dims[d];
        rest /= l->dims[d];
    }
    long long count = 1;
    for (int d = 0; d < NDIMS; d++) {
        if (l->global[d] < l->dims[d]) {
            if (l->rank == 0)
                fprintf(stderr,
                        "demo3d: dimension %d (%lld) is smaller than the process grid (%d)\n", d,
                        l->global[d], l->dims[d]);
            return -1;
        }
        split(l->global[d], l->dims[d], l->coords[d], &l->start[d], &l->local[d]);
        count *= l->local[d];
    }
    /* MPI-3 counts are int; keep every rank's block below that. */
    if (count > INT_MAX) {
        if (l->rank == 0)
            fprintf(stderr,
                    "demo3d: a block of %lld elements exceeds an int count; use more ranks\n",
                    count);
        return -1;
    }
    return 0;
}

static long long local_count(const layout *l)
{
    return l->local[0] * l->local[1] * l->local[2];
}

static MPI_Offset array_bytes(const layout *l)
{
    return (MPI_Offset)(l->global[0] * l->global[1] * l->global[2]) * (MPI_Offset)sizeof(double);
}

static MPI_Datatype block_filetype(const layout *l)
{
    int sizes[NDIMS], subsizes[NDIMS], starts[NDIMS];
    for (int d = 0; d < NDIMS; d++) {
        sizes[d] = (int)l->global[d];
        subsizes[d] = (int)l->local[d];
        starts[d] = (int)l->start[d];
    }
    MPI_Datatype t;
    check(MPI_Type_create_subarray(NDIMS, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &t),
          "MPI_Type_create_subarray", l->path);
    check(MPI_Type_commit(&t), "MPI_Type_commit", l->path);
    return t;
}

static void fill(const layout *l, double *buf)
{
    size_t n = 0;
    for (long long i = 0; i < l->local[0]; i++)
        for (long long j = 0; j < l->local[1]; j++)
            for (long long k = 0; k < l->local[2]; k++)
                buf[n++] = value_at(l, l->start[0] + i, l->start[1] + j, l->start[2] + k);
}

/* Returns the number of wrong elements; reports the first one on stderr. */
static long long verify(const layout *l, const double *buf)
{
    long long bad = 0;
    size_t n = 0;
    for (long long i = 0; i < l->local[0]; i++)
        for (long long j = 0; j < l->local[1]; j++)
            for (long long k = 0; k < l->local[2]; k++, n++) {
                long long gi = l->start[0] + i, gj = l->start[1] + j, gk = l->start[2] + k;
                double want = value_at(l, gi, gj, gk);
                if (memcmp(&buf[n], &want, sizeof want) != 0) {
                    if (bad == 0)
                        fprintf(stderr,
                                "demo3d: rank %d: first mismatch at [%lld][%lld][%lld]: "
                                "read %.17g, expected %.17g\n",
                                l->rank, gi, gj, gk, buf[n], want);
                    bad++;
                }
            }
    return bad;
}

static double slowest(double t)
{
    double max = 0;
    MPI_Allreduce(&t, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return max;
}

/* One collective pass over the file: open, view, write_all or read_all, close. Each phase is
 * timed separately because a remote layer may defer work from open into the transfer and from
 * the transfer into close; the total is what the application waits for. */
static phase_times pass(const layout *l, MPI_Datatype filetype, double *buf, int writing)
{
    phase_times t;
    int amode = writing ? (MPI_MODE_CREATE | MPI_MODE_WRONLY) : MPI_MODE_RDONLY;
    MPI_File fh;
    MPI_Status st;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    check(MPI_File_open(MPI_COMM_WORLD, l->path, amode, MPI_INFO_NULL, &fh), "MPI_File_open",
          l->path);
    /* Files default to MPI_ERRORS_RETURN; every call below is checked. */
    check(MPI_File_set_view(fh, 0, MPI_DOUBLE, filetype, "native", MPI_INFO_NULL),
          "MPI_File_set_view", l->path);
    if (writing) /* a longer leftover from an earlier run must not survive past the array */
        check(MPI_File_set_size(fh, array_bytes(l)), "MPI_File_set_size", l->path);
    double t1 = MPI_Wtime();
    int n = (int)local_count(l);
    if (writing)
        check(MPI_File_write_all(fh, buf, n, MPI_DOUBLE, &st), "MPI_File_write_all", l->path);
    else
        check(MPI_File_read_all(fh, buf, n, MPI_DOUBLE, &st), "MPI_File_read_all", l->path);
    int done = 0;
    MPI_Get_count(&st, MPI_DOUBLE, &done);
    if (done != n) {
        fprintf(stderr, "demo3d: rank %d: %s moved %d of %d elements\n", l->rank,
                writing ? "MPI_File_write_all" : "MPI_File_read_all", done, n);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    double t2 = MPI_Wtime();
    check(MPI_File_close(&fh), "MPI_File_close", l->path);
    double t3 = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
    double t4 = MPI_Wtime();
    t.open = slowest(t1 - t0);
    t.transfer = slowest(t2 - t1);
    t.close = slowest(t3 - t2);
    t.total = slowest(t4 - t0);
    return t;
}

static void print_summary(const layout *l, const phase_times *w, const phase_times *r,
                          long long bad, long long checked)
{
    double mib = (double)array_bytes(l) / (1 << 20);
    /* Block sizes differ by at most one per dimension; show the largest and, if different,
     * the smallest. */
    long long lb[NDIMS];
    for (int d = 0; d < NDIMS; d++)
        lb[d] = (l->global[d] + l->dims[d] - 1) / l->dims[d];
    long long maxb = lb[0] * lb[1] * lb[2];
    long long minb =
        (l->global[0] / l->dims[0]) * (l->global[1] / l->dims[1]) * (l->global[2] / l->dims[2]);

    printf("\n");
    printf("demo3d: collective 3-D checkpoint through MPI-IO\n");
    printf("  file          %s\n", l->path);
    printf("  array         %lld x %lld x %lld doubles = %lld bytes (%.1f MiB)\n", l->global[0],
           l->global[1], l->global[2], (long long)array_bytes(l), mib);
    printf("  processes     %d, grid %d x %d x %d, block up to %lld x %lld x %lld (%.1f MiB)\n",
           l->nprocs, l->dims[0], l->dims[1], l->dims[2], lb[0], lb[1], lb[2],
           (double)maxb * sizeof(double) / (1 << 20));
    if (minb != maxb)
        printf("                (smallest block %lld elements)\n", minb);
    printf("  access        subarray file view + MPI_File_write_all / MPI_File_read_all\n");
    printf("  %-13s %7.3f s  %8.1f MiB/s   (open %.3f, transfer %.3f, close %.3f)\n", "write",
           w->total, mib / w->total, w->open, w->transfer, w->close);
    printf("  %-13s %7.3f s  %8.1f MiB/s   (open %.3f, transfer %.3f, close %.3f)\n", "read",
           r->total, mib / r->total, r->open, r->transfer, r->close);
    if (bad == 0)
        printf("  verified      all %lld elements read back match\n", checked);
    else
        printf("  verification  FAILED: %lld of %lld elements differ\n", bad, checked);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    layout l;
    memset(&l, 0, sizeof l);
    MPI_Comm_rank(MPI_COMM_WORLD, &l.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &l.nprocs);
    if (parse_args(argc, argv, &l) != 0 || decompose(&l) != 0) {
        MPI_Finalize();
        return 2;
    }

    size_t n = (size_t)local_count(&l);
    double *buf = malloc(n * sizeof(double));
    if (buf == NULL) {
        fprintf(stderr, "demo3d: rank %d: out of memory for %zu doubles\n", l.rank, n);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Datatype filetype = block_filetype(&l);

    fill(&l, buf);
    phase_times w = pass(&l, filetype, buf, 1);

    /* Overwrite the buffer so the check cannot pass on what was written. */
    memset(buf, 0xff, n * sizeof(double));
    phase_times r = pass(&l, filetype, buf, 0);

    long long bad = verify(&l, buf), total_bad = 0, mine = (long long)n, checked = 0;
    MPI_Reduce(&bad, &total_bad, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &checked, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Bcast(&total_bad, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (l.rank == 0)
        print_summary(&l, &w, &r, total_bad, checked);

    MPI_Type_free(&filetype);
    free(buf);
    MPI_Finalize();
    return total_bad == 0 ? 0 : 1;
}
