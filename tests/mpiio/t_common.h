/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared by the MPI-IO test programs. Each program takes a file name (a local path or an
 * rfs: name), does its I/O, checks what it can itself and exits non-zero on any failure; the
 * pytest driver also compares the file it leaves behind with the same program's output on a
 * local file (written by the MPI library's own MPI-IO). */
#ifndef T_COMMON_H
#define T_COMMON_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_rank, t_size, t_fail;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", t_rank, __FILE__, __LINE__, \
                    #cond);                                                                   \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fprintf(stderr, "\n");                                                            \
            t_fail = 1;                                                                       \
        }                                                                                     \
    } while (0)

static inline const char *t_errstr(int rc)
{
    static char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    s[0] = 0;
    MPI_Error_string(rc, s, &len);
    return s;
}

#define MPI_OK(call)                                                 \
    do {                                                             \
        int rc_ = (call);                                            \
        CHECK(rc_ == MPI_SUCCESS, "%s -> %s", #call, t_errstr(rc_)); \
    } while (0)

static inline int t_class(int rc)
{
    int c = rc;
    MPI_Error_class(rc, &c);
    return c;
}

static inline void t_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_size);
    if (*argc < 2) {
        if (t_rank == 0)
            fprintf(stderr, "usage: %s FILE\n", (*argv)[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* All ranks agree: returns exit status. */
static inline int t_finish(void)
{
    int any = 0;
    MPI_Allreduce(&t_fail, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (t_rank == 0)
        printf(any ? "FAILED\n" : "OK\n");
    MPI_Finalize();
    return any;
}

/* One line of facts for the driver to compare (t_parity, t_datarep). Every rank evaluates the
 * arguments (they may make the calls); rank 0 prints. */
#define SAY(kind, ...)                              \
    do {                                            \
        char line_[1024];                           \
        snprintf(line_, sizeof line_, __VA_ARGS__); \
        if (t_rank == 0)                            \
            printf("%s %s\n", kind, line_);         \
    } while (0)
#define FACT(...) SAY("FACT", __VA_ARGS__)
#define NOTE(...) SAY("NOTE", __VA_ARGS__)

/* Deterministic byte pattern: value of byte at file offset off, written by "writer" w. */
static inline unsigned char t_pat(long long off, int w)
{
    return (unsigned char)(off * 7 + w * 31 + 1);
}

#endif
