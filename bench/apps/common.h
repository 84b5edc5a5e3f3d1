/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Shared helpers for the rfs benchmark workloads (bench/apps).
 *
 * Every workload uses only standard MPI-IO, so the same binary runs on a local path, an
 * "rfs:host:port:/path" name (LD_PRELOAD=librfs-mpiio.so), a ROMIO "testfs:" name, or an
 * sshfs mount. Each prints exactly one JSON object on rank 0's stdout, on a line of its own
 * that starts with {"app": (ROMIO's testfs prints chatter on stdout too; the runner looks
 * for that prefix).
 *
 * Data written by the pattern-based workloads is a pure function of the file position:
 * the 8-byte word at file offset 8*w holds the double  w + seed * 2^40  (exact in a double
 * for files under 8 TiB and seeds under 4096). A reader can therefore check any byte it
 * reads without knowing who wrote it, and bench/lib/pattern.py checks whole files. The
 * seed changes from run to run so stale data from an earlier run cannot pass as correct.
 */
#ifndef BENCH_APPS_COMMON_H
#define BENCH_APPS_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_PHASES 16
#define BENCH_MAX_PARAMS 24
#define BENCH_MAX_CASES 128

/* Per-rank accumulated seconds by phase name; reduced with MPI_MAX at report time because
 * the slowest rank is what the application waits for. */
typedef struct bench_phases {
    int n;
    const char *name[BENCH_MAX_PHASES];
    double sec[BENCH_MAX_PHASES];
} bench_phases;

typedef struct bench_param {
    const char *key;
    char value[96];
    int is_string;
} bench_param;

/* One measured sub-case of a micro-benchmark (synthetic workload). */
typedef struct bench_case {
    char name[48];
    char kind[24];
    long long size; /* bytes per call or per region, case-defined */
    long long regions;
    long long bytes;  /* bytes moved by all ranks */
    double write_sec; /* max over ranks */
    double read_sec;
    long long errors;
} bench_case;

typedef struct bench {
    const char *app;
    const char *target;
    int rank, nprocs;
    int peak;   /* --peak: skip every write (no data written) */
    int verify; /* --verify / --no-verify */
    unsigned seed;
    const char *json_path; /* --json FILE: rank 0 also writes the object there */
    double t_start;
    bench_phases ph;
    long long bytes_written; /* this rank */
    long long bytes_read;    /* this rank, timed reads only (not verification reads) */
    long long verify_errors; /* this rank */
    int nparams;
    bench_param params[BENCH_MAX_PARAMS];
    int ncases;
    bench_case cases[BENCH_MAX_CASES];
} bench;

/* Timing. */
void bench_begin(bench *b, const char *app, int argc, char **argv);
void bench_add(bench *b, const char *phase, double sec);
static inline double bench_now(void)
{
    return MPI_Wtime();
}

/* Record a parameter for the JSON "params" object. */
void bench_param_int(bench *b, const char *key, long long v);
void bench_param_dbl(bench *b, const char *key, double v);
void bench_param_str(bench *b, const char *key, const char *v);

/* Reduce phases/bytes over ranks and print the JSON object on rank 0. Returns the exit
 * status the program should use (nonzero if verification failed on any rank). */
int bench_report(bench *b);

/* Command line: "--key value" and "--flag" options after the target file name.
 * bench_opt_* look a key up anywhere in argv; unknown options are an error caught by
 * bench_check_args so a typo never silently runs a default-size benchmark. */
long long bench_opt_size(int argc, char **argv, const char *key, long long def);
double bench_opt_dbl(int argc, char **argv, const char *key, double def);
int bench_opt_flag(int argc, char **argv, const char *key);
const char *bench_opt_str(int argc, char **argv, const char *key, const char *def);
/* known: NULL-terminated list of option names taking a value; flags: those without. */
void bench_check_args(int argc, char **argv, const char *const *known, const char *const *flags,
                      const char *usage);
long long bench_parse_size(const char *s); /* "64", "64K", "4M", "1G" (binary units); -1 on error */

/* Errors: every MPI call on a file is checked; failures abort with a message naming it. */
void bench_check(int err, const char *what, const char *file);
#define BCHK(call, what) bench_check((call), (what), b->target)
void bench_die(const char *fmt, ...);

/* Pattern (see top of file). */
static inline double bench_pattern(unsigned seed, long long word)
{
    return (double)word + (double)seed * 1099511627776.0; /* 2^40 */
}
void bench_fill_pattern(double *buf, long long nwords, long long first_word, unsigned seed);
/* Count words of buf that differ from the pattern starting at first_word. */
long long bench_check_pattern(const double *buf, long long nwords, long long first_word,
                              unsigned seed);
/* Byte-granular pattern for unaligned small I/O: byte at offset o is (o*131 + seed) & 0xff. */
void bench_fill_bytes(unsigned char *buf, long long n, long long first_off, unsigned seed);
long long bench_check_bytes(const unsigned char *buf, long long n, long long first_off,
                            unsigned seed);

/* Delete the target (rank 0, ignoring "no such file") so stale data cannot verify. */
void bench_remove(bench *b, const char *name);

/* Busy computation: a deterministic floating-point loop of about `units` million flops, used
 * where a workload has no natural computation (blast, btio, flash, s3d). */
double bench_spin(double units);

void *bench_xmalloc(size_t n);

#endif
