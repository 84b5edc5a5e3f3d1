/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Shared helpers for the benchmark workloads: options, timing, JSON report, data pattern. */
#include "common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *bench_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        bench_die("out of memory allocating %zu bytes", n);
    return p;
}

void bench_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

void bench_check(int err, const char *what, const char *file)
{
    if (err == MPI_SUCCESS)
        return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    bench_die("%s on %s failed: %s", what, file, msg);
}

/* ---- options ---------------------------------------------------------------------- */

long long bench_parse_size(const char *s)
{
    if (!s || !*s)
        return -1;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0)
        return -1;
    long long mul = 1;
    switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'K':
        mul = 1LL << 10;
        end++;
        break;
    case 'M':
        mul = 1LL << 20;
        end++;
        break;
    case 'G':
        mul = 1LL << 30;
        end++;
        break;
    default: return -1;
    }
    if (*end && !(toupper((unsigned char)*end) == 'I' || toupper((unsigned char)*end) == 'B'))
        return -1;
    if (v > (1LL << 50) / mul)
        return -1;
    return v * mul;
}

static const char *find_opt(int argc, char **argv, const char *key)
{
    for (int i = 2; i < argc - 1; i++)
        if (strcmp(argv[i], key) == 0)
            return argv[i + 1];
    return NULL;
}

long long bench_opt_size(int argc, char **argv, const char *key, long long def)
{
    const char *v = find_opt(argc, argv, key);
    if (!v)
        return def;
    long long n = bench_parse_size(v);
    if (n < 0)
        bench_die("bad value for %s: '%s' (want a size like 64, 4K, 2M)", key, v);
    return n;
}

double bench_opt_dbl(int argc, char **argv, const char *key, double def)
{
    const char *v = find_opt(argc, argv, key);
    if (!v)
        return def;
    char *end = NULL;
    double d = strtod(v, &end);
    if (end == v || *end || !isfinite(d) || d < 0)
        bench_die("bad value for %s: '%s' (want a non-negative number)", key, v);
    return d;
}

const char *bench_opt_str(int argc, char **argv, const char *key, const char *def)
{
    const char *v = find_opt(argc, argv, key);
    return v ? v : def;
}

int bench_opt_flag(int argc, char **argv, const char *key)
{
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], key) == 0)
            return 1;
    return 0;
}

static int in_list(const char *s, const char *const *list)
{
    for (; list && *list; list++)
        if (strcmp(s, *list) == 0)
            return 1;
    return 0;
}

void bench_check_args(int argc, char **argv, const char *const *known, const char *const *flags,
                      const char *usage)
{
    static const char *const common_known[] = {"--seed", "--json", NULL};
    static const char *const common_flags[] = {"--peak", "--verify", "--no-verify", NULL};
    if (argc < 2 || argv[1][0] == '-')
        bench_die("usage: %s FILE %s", argv[0], usage);
    for (int i = 2; i < argc; i++) {
        if (in_list(argv[i], known) || in_list(argv[i], common_known)) {
            if (i + 1 >= argc)
                bench_die("%s needs a value (usage: %s FILE %s)", argv[i], argv[0], usage);
            i++;
        } else if (!in_list(argv[i], flags) && !in_list(argv[i], common_flags)) {
            bench_die("unknown argument '%s' (usage: %s FILE %s)", argv[i], argv[0], usage);
        }
    }
}

/* ---- timing and report ------------------------------------------------------------- */

void bench_begin(bench *b, const char *app, int argc, char **argv)
{
    memset(b, 0, sizeof *b);
    b->app = app;
    b->target = argv[1];
    MPI_Comm_rank(MPI_COMM_WORLD, &b->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b->nprocs);
    b->peak = bench_opt_flag(argc, argv, "--peak");
    b->verify = bench_opt_flag(argc, argv, "--no-verify") ? 0 : 1;
    long long seed = bench_opt_size(argc, argv, "--seed", 1);
    if (seed < 0 || seed > 4095)
        bench_die("--seed must be in 0..4095");
    b->seed = (unsigned)seed;
    b->json_path = bench_opt_str(argc, argv, "--json", NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    b->t_start = bench_now();
}

void bench_add(bench *b, const char *phase, double sec)
{
    for (int i = 0; i < b->ph.n; i++)
        if (strcmp(b->ph.name[i], phase) == 0) {
            b->ph.sec[i] += sec;
            return;
        }
    if (b->ph.n == BENCH_MAX_PHASES)
        bench_die("too many phases");
    b->ph.name[b->ph.n] = phase;
    b->ph.sec[b->ph.n++] = sec;
}

static bench_param *new_param(bench *b, const char *key)
{
    if (b->nparams == BENCH_MAX_PARAMS)
        bench_die("too many params");
    bench_param *p = &b->params[b->nparams++];
    p->key = key;
    p->is_string = 0;
    return p;
}

void bench_param_int(bench *b, const char *key, long long v)
{
    snprintf(new_param(b, key)->value, sizeof b->params[0].value, "%lld", v);
}

void bench_param_dbl(bench *b, const char *key, double v)
{
    snprintf(new_param(b, key)->value, sizeof b->params[0].value, "%.6g", v);
}

void bench_param_str(bench *b, const char *key, const char *v)
{
    bench_param *p = new_param(b, key);
    snprintf(p->value, sizeof p->value, "%s", v);
    p->is_string = 1;
}

static FILE *json_out;

static void json_str(const char *s)
{
    fputc('"', json_out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(json_out, "\\%c", c);
        else if (c < 0x20)
            fprintf(json_out, "\\u%04x", c);
        else
            fputc(c, json_out);
    }
    fputc('"', json_out);
}

/* JSON has no infinity: a bandwidth over zero time is reported as null. */
static void json_bw(const char *key, double bytes, double sec, int *first)
{
    fprintf(json_out, "%s\"%s\": ", *first ? "" : ", ", key);
    *first = 0;
    if (bytes > 0 && sec > 0)
        fprintf(json_out, "%.6g", bytes / sec / 1e6);
    else
        fprintf(json_out, "null");
}

static void mpi_library_name(char *out, size_t cap)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    /* First line only, whitespace runs (MPICH puts a tab there) collapsed to one space. */
    size_t o = 0;
    for (size_t i = 0; o + 1 < cap && lib[i] && lib[i] != '\n' && lib[i] != ','; i++) {
        int space = isspace((unsigned char)lib[i]);
        if (space && (o == 0 || out[o - 1] == ' '))
            continue;
        out[o++] = space ? ' ' : lib[i];
    }
    while (o > 0 && out[o - 1] == ' ')
        o--;
    out[o] = '\0';
}

int bench_report(bench *b)
{
    double total_local = bench_now() - b->t_start;
    bench_add(b, "total", total_local);
    /* "io": this rank's open + write + close, so its maximum is the slowest rank's I/O time.
     * The sum of the phases' maxima overstates it when ranks spend the same time split
     * differently (write-behind: a rank whose writes returned early waits longer in close). */
    double io = 0;
    int io_parts = 0;
    for (int i = 0; i < b->ph.n; i++)
        if (!strcmp(b->ph.name[i], "open") || !strcmp(b->ph.name[i], "write") ||
            !strcmp(b->ph.name[i], "close")) {
            io += b->ph.sec[i];
            io_parts++;
        }
    if (io_parts == 3)
        bench_add(b, "io", io);

    /* Every rank must have the same phase list in the same order for the reductions;
     * workloads add their phases unconditionally (zero if a rank skipped one). */
    int n = b->ph.n, nmin = 0, nmax = 0;
    MPI_Allreduce(&n, &nmin, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&n, &nmax, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (nmin != nmax)
        bench_die("internal: ranks recorded different phase lists");
    double maxsec[BENCH_MAX_PHASES];
    MPI_Reduce(b->ph.sec, maxsec, n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    long long loc[3] = {b->bytes_written, b->bytes_read, b->verify_errors}, sum[3];
    MPI_Reduce(loc, sum, 3, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

    int bad = 0;
    if (b->rank == 0) {
        char *text = NULL;
        size_t text_len = 0;
        json_out = open_memstream(&text, &text_len);
        if (!json_out)
            bench_die("open_memstream failed");
        char lib[128];
        mpi_library_name(lib, sizeof lib);
        double t_write = 0, t_read = 0, t_open = 0, t_close = 0, t_total = 0;
        for (int i = 0; i < n; i++) {
            if (!strcmp(b->ph.name[i], "write"))
                t_write = maxsec[i];
            if (!strcmp(b->ph.name[i], "read"))
                t_read = maxsec[i];
            if (!strcmp(b->ph.name[i], "open"))
                t_open = maxsec[i];
            if (!strcmp(b->ph.name[i], "close"))
                t_close = maxsec[i];
            if (!strcmp(b->ph.name[i], "total"))
                t_total = maxsec[i];
        }
        fprintf(json_out, "{\"app\": ");
        json_str(b->app);
        fprintf(json_out, ", \"ranks\": %d, \"mpi\": ", b->nprocs);
        json_str(lib);
        fprintf(json_out, ", \"target\": ");
        json_str(b->target);
        fprintf(json_out, ", \"peak\": %s, \"seed\": %u, \"params\": {", b->peak ? "true" : "false",
                b->seed);
        for (int i = 0; i < b->nparams; i++) {
            fprintf(json_out, "%s", i ? ", " : "");
            json_str(b->params[i].key);
            fprintf(json_out, ": ");
            if (b->params[i].is_string)
                json_str(b->params[i].value);
            else
                fprintf(json_out, "%s", b->params[i].value);
        }
        fprintf(json_out, "}, \"time\": {");
        for (int i = 0; i < n; i++) {
            fprintf(json_out, "%s", i ? ", " : "");
            json_str(b->ph.name[i]);
            fprintf(json_out, ": %.6f", maxsec[i]);
        }
        fprintf(json_out, "}, \"bytes_written\": %lld, \"bytes_read\": %lld, ", sum[0], sum[1]);
        int first = 1;
        /* write_bw: bytes over the time spent inside write calls (the seeds' "visible I/O
         * bandwidth"); io_bw also charges open and close, where deferred work surfaces. */
        json_bw("write_bw_MBps", (double)sum[0], t_write, &first);
        json_bw("read_bw_MBps", (double)sum[1], t_read, &first);
        json_bw("io_bw_MBps", (double)(sum[0] + sum[1]), t_open + t_write + t_read + t_close,
                &first);
        json_bw("total_bw_MBps", (double)(sum[0] + sum[1]), t_total, &first);
        if (b->ncases) {
            fprintf(json_out, ", \"cases\": [");
            for (int i = 0; i < b->ncases; i++) {
                bench_case *c = &b->cases[i];
                fprintf(json_out, "%s{\"name\": ", i ? ", " : "");
                json_str(c->name);
                fprintf(json_out, ", \"kind\": ");
                json_str(c->kind);
                fprintf(json_out,
                        ", \"size\": %lld, \"regions\": %lld, \"bytes\": %lld, "
                        "\"write_sec\": %.6f, \"read_sec\": %.6f, \"errors\": %lld, ",
                        c->size, c->regions, c->bytes, c->write_sec, c->read_sec, c->errors);
                int f = 1;
                json_bw("write_bw_MBps", (double)c->bytes, c->write_sec, &f);
                json_bw("read_bw_MBps", (double)c->bytes, c->read_sec, &f);
                fprintf(json_out, "}");
            }
            fprintf(json_out, "]");
        }
        fprintf(json_out, ", \"verify\": \"%s\", \"verify_errors\": %lld}\n",
                b->peak || !b->verify ? "skipped" : (sum[2] ? "failed" : "ok"), sum[2]);
        fclose(json_out);
        /* One write keeps the line whole even if other ranks print (ROMIO testfs does). */
        fwrite(text, 1, text_len, stdout);
        fflush(stdout);
        if (b->json_path) {
            FILE *f = fopen(b->json_path, "w");
            if (!f || fwrite(text, 1, text_len, f) != text_len || fclose(f) != 0)
                bench_die("cannot write %s", b->json_path);
        }
        free(text);
        bad = sum[2] != 0;
        if (bad)
            fprintf(stderr, "%s: VERIFY FAILED: %lld mismatching words/bytes in %s\n", b->app,
                    sum[2], b->target);
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return bad ? 3 : 0;
}

/* ---- data pattern ------------------------------------------------------------------ */

void bench_fill_pattern(double *buf, long long nwords, long long first_word, unsigned seed)
{
    for (long long i = 0; i < nwords; i++)
        buf[i] = bench_pattern(seed, first_word + i);
}

long long bench_check_pattern(const double *buf, long long nwords, long long first_word,
                              unsigned seed)
{
    long long bad = 0;
    for (long long i = 0; i < nwords; i++)
        bad += buf[i] != bench_pattern(seed, first_word + i);
    return bad;
}

void bench_fill_bytes(unsigned char *buf, long long n, long long first_off, unsigned seed)
{
    for (long long i = 0; i < n; i++)
        buf[i] = (unsigned char)(((first_off + i) * 131 + seed) & 0xff);
}

long long bench_check_bytes(const unsigned char *buf, long long n, long long first_off,
                            unsigned seed)
{
    long long bad = 0;
    for (long long i = 0; i < n; i++)
        bad += buf[i] != (unsigned char)(((first_off + i) * 131 + seed) & 0xff);
    return bad;
}

void bench_remove(bench *b, const char *name)
{
    if (b->rank == 0) {
        int err = MPI_File_delete(name, MPI_INFO_NULL);
        if (err != MPI_SUCCESS) {
            int cls = 0;
            MPI_Error_class(err, &cls);
            if (cls != MPI_ERR_NO_SUCH_FILE && cls != MPI_ERR_IO)
                bench_check(err, "MPI_File_delete", name);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

double bench_spin(double units)
{
    /* volatile keeps the compiler from folding the loop away. */
    volatile double x = 1.0;
    long long n = (long long)(units * 5e5);
    for (long long i = 0; i < n; i++)
        x = x * 1.0000001 + 1e-9;
    return x;
}
