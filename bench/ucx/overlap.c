/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Overlap of a compute loop with nonblocking writes, for bench/ucx (one rank):
 *   overlap FILE CHUNK ITERS [RATIOS [DEPTH [WARM]]]
 * I/O alone first: ITERS writes of CHUNK bytes with MPI_File_iwrite_at, DEPTH of them in
 * flight (1: iwrite, wait; 2: iwrite i, wait i-1, the double-buffered loop of checkpointing
 * codes). Then for each compute/I/O ratio R of RATIOS (comma-separated, default 1): compute
 * alone (a busy loop calibrated to take R times one iteration of the I/O phase), and both:
 * DEPTH 1 is iwrite, compute, wait; DEPTH 2 is iwrite i, compute, wait i-1, so a write has
 * its own iteration and the next one's compute to finish in. The reference is semplar's: the
 * best a perfect overlap can do is max(compute, I/O), so the most speedup there is to get is
 * (compute + I/O) / max(compute, I/O); "of_max" is the speedup reached over that.
 * WARM 1 (default) makes one untimed write just before each "both" phase, so that it starts,
 * like the I/O phase, on a connection that has just carried data (TCP restarts its congestion
 * window after an idle second, which a compute-alone phase is; WARM 0 shows that cost).
 * Every phase also records its iterations (milliseconds): the I/O phase's write-to-wait
 * times, the compute-alone loops, and in "both" the post, the compute and the wait of each
 * iteration, to tell where time goes. Prints one JSON object. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define MAX_DEPTH 2
#define MAX_RATIOS 8

static volatile uint64_t sink;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* the clock of RFS_TRACE's lines */
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of the whole process (every thread: the I/O threads, the connection's receiver
 * and UCX's progress too), to see what the I/O costs the cores the compute loop shares. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The unit of work: integer arithmetic the compiler cannot drop, no memory traffic. */
static void compute(uint64_t units)
{
    uint64_t x = sink + 1;
    for (uint64_t i = 0; i < units; i++)
        x = x * 6364136223846793005u + 1442695040888963407u;
    sink = x;
}

/* Per-iteration times of one phase, seconds. */
typedef struct {
    double *post, *work, *wait;
} marks;

static int marks_init(marks *m, int iters)
{
    m->post = calloc((size_t)iters, sizeof(double));
    m->work = calloc((size_t)iters, sizeof(double));
    m->wait = calloc((size_t)iters, sizeof(double));
    return m->post && m->work && m->wait ? 0 : -1;
}

/* ITERS writes from base, DEPTH in flight, UNITS of compute after each post; bufs[i % depth]
 * is the buffer of write i (the double-buffered loop does not touch a buffer in flight). */
static int io_phase(MPI_File f, char **bufs, int chunk, int iters, int depth, uint64_t units,
                    MPI_Offset base, marks *m)
{
    MPI_Request r[MAX_DEPTH];
    for (int i = 0; i < iters; i++) {
        int slot = i % depth;
        double t0 = now();
        if (MPI_File_iwrite_at(f, base + (MPI_Offset)i * chunk, bufs[slot], chunk, MPI_BYTE,
                               &r[slot]))
            return 1;
        double t1 = now();
        if (units)
            compute(units);
        double t2 = now();
        /* depth 1: this write; depth 2: the previous one (none before the first) */
        int w = depth == 1 ? slot : (i > 0 ? (i - 1) % depth : -1);
        if (w >= 0 && MPI_Wait(&r[w], MPI_STATUS_IGNORE))
            return 1;
        double t3 = now();
        if (m) {
            m->post[i] = t1 - t0;
            m->work[i] = t2 - t1;
            m->wait[i] = t3 - t2;
        }
    }
    if (depth > 1) {
        double t0 = now();
        if (MPI_Wait(&r[(iters - 1) % depth], MPI_STATUS_IGNORE))
            return 1;
        if (m)
            m->wait[iters - 1] += now() - t0;
    }
    return 0;
}

static void print_ms(const char *name, const double *v, int n, const char *sep)
{
    printf("\"%s\": [", name);
    for (int i = 0; i < n; i++)
        printf("%s%.1f", i ? ", " : "", v[i] * 1e3);
    printf("]%s", sep);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 4 || argc > 7) {
        fprintf(stderr, "usage: overlap FILE CHUNK ITERS [RATIOS [DEPTH [WARM]]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int chunk = atoi(argv[2]), iters = atoi(argv[3]);
    int depth = argc > 5 ? atoi(argv[5]) : 1, warm = argc > 6 ? atoi(argv[6]) : 1;
    double ratio[MAX_RATIOS];
    int nratio = 0;
    char *spec = strdup(argc > 4 ? argv[4] : "1");
    for (char *save = NULL, *tok = strtok_r(spec, ",", &save); tok && nratio < MAX_RATIOS;
         tok = strtok_r(NULL, ",", &save))
        ratio[nratio++] = atof(tok);
    if (chunk <= 0 || iters <= 0 || depth < 1 || depth > MAX_DEPTH || nratio == 0) {
        fprintf(stderr, "overlap: bad arguments\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int k = 0; k < nratio; k++)
        if (!(ratio[k] > 0 && ratio[k] < 100)) {
            fprintf(stderr, "overlap: ratio %g out of range\n", ratio[k]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    char *bufs[MAX_DEPTH];
    for (int d = 0; d < depth; d++) {
        bufs[d] = malloc((size_t)chunk);
        if (!bufs[d])
            MPI_Abort(MPI_COMM_WORLD, 2);
        for (int i = 0; i < chunk; i++)
            bufs[d][i] = (char)(i * 131 + 7 + d);
    }
    MPI_File f;
    if (MPI_File_open(MPI_COMM_SELF, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                      &f)) {
        fprintf(stderr, "overlap: cannot open %s\n", argv[1]);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Offset span = (MPI_Offset)chunk * iters;
    /* warm-up: connections, the I/O threads, the server's file */
    if (io_phase(f, bufs, chunk, iters < 4 ? iters : 4, depth, 0, 0, NULL))
        MPI_Abort(MPI_COMM_WORLD, 1);

    marks mio;
    if (marks_init(&mio, iters))
        MPI_Abort(MPI_COMM_WORLD, 2);
    double cpu0 = cpu_s(), t0 = now();
    if (io_phase(f, bufs, chunk, iters, depth, 0, 0, &mio))
        MPI_Abort(MPI_COMM_WORLD, 1);
    double t_io = now() - t0, io_cpu = cpu_s() - cpu0;

    /* units per second, from a loop long enough to time */
    uint64_t probe = 1u << 24;
    t0 = now();
    compute(probe);
    double per_unit = (now() - t0) / (double)probe;

    printf("{\"chunk\": %d, \"iters\": %d, \"depth\": %d, \"warm\": %d, \"io_s\": %.4f, "
           "\"io_cpu_s\": %.4f, ",
           chunk, iters, depth, warm, t_io, io_cpu);
    for (int i = 0; i < iters; i++) /* the I/O phase's time per write: post to wait's end */
        mio.post[i] += mio.work[i] + mio.wait[i];
    print_ms("io_iter_ms", mio.post, iters, ", ");
    printf("\"ratios\": [");
    for (int k = 0; k < nratio; k++) {
        uint64_t units = (uint64_t)(ratio[k] * t_io / iters / per_unit);
        marks mc, mb;
        if (marks_init(&mc, iters) || marks_init(&mb, iters))
            MPI_Abort(MPI_COMM_WORLD, 2);
        t0 = now();
        for (int i = 0; i < iters; i++) {
            double s = now();
            compute(units);
            mc.work[i] = now() - s;
        }
        double t_c = now() - t0;

        MPI_Offset base = span * (1 + k);
        if (warm && io_phase(f, bufs, chunk, 1, 1, 0, base + span - chunk, NULL))
            MPI_Abort(MPI_COMM_WORLD, 1);
        cpu0 = cpu_s();
        t0 = now();
        if (io_phase(f, bufs, chunk, iters, depth, units, base, &mb))
            MPI_Abort(MPI_COMM_WORLD, 1);
        double t_both = now() - t0, both_cpu = cpu_s() - cpu0;

        double best = t_io > t_c ? t_io : t_c;
        double max_speedup = (t_io + t_c) / best, speedup = (t_io + t_c) / t_both;
        printf("%s{\"ratio\": %g, \"compute_s\": %.4f, \"both_s\": %.4f, \"speedup\": %.4f, "
               "\"max_speedup\": %.4f, \"of_max\": %.4f, \"both_cpu_s\": %.4f, ",
               k ? ", " : "", ratio[k], t_c, t_both, speedup, max_speedup, speedup / max_speedup,
               both_cpu);
        print_ms("compute_iter_ms", mc.work, iters, ", ");
        print_ms("both_post_ms", mb.post, iters, ", ");
        print_ms("both_compute_ms", mb.work, iters, ", ");
        print_ms("both_wait_ms", mb.wait, iters, "}");
        free(mc.post), free(mc.work), free(mc.wait);
        free(mb.post), free(mb.work), free(mb.wait);
    }
    printf("]}\n");
    MPI_File_close(&f);
    for (int d = 0; d < depth; d++)
        free(bufs[d]);
    free(spec);
    free(mio.post), free(mio.work), free(mio.wait);
    MPI_Finalize();
    return 0;
}
