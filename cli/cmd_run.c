/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs run [--mpi mpich|openmpi] [--dry-run] [--] LAUNCHER ARGS...
 *
 * Starts LAUNCHER (mpiexec.mpich, mpiexec.openmpi, mpirun, ...) with LD_PRELOAD set, in every
 * rank, to the librfs-mpiio.so built for the launcher's MPI, passed the launcher's own way
 * (Hydra: -genv NAME VALUE; Open MPI: -x NAME=VALUE, plus -x for each RFS_* variable set, since
 * Open MPI does not forward the environment by itself). A preload of the wrong build cannot work
 * (docs/mpiio.md); this picks the right one so users need not know which MPI a program uses. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cli/cli.h"
#include "cli/run.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static int usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "rfs run: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (run 'rfs run --help')\n");
    return CLI_EXIT_USAGE;
}

void cli_run_help(FILE *out)
{
    fprintf(out,
            "usage: rfs run [--mpi mpich|openmpi] [--dry-run] [--] LAUNCHER ARGS...\n"
            "\n"
            "Run an MPI launcher with librfs-mpiio.so preloaded in every rank, the build made\n"
            "for the launcher's MPI, so that MPI_File_* work on rfs: names:\n"
            "  rfs run -- mpiexec.openmpi -n 4 ./sim rfs:dtn:7070:/run42/out.h5\n"
            "\n"
            "The MPI is told by the launcher's name (mpiexec.mpich, mpiexec.hydra,\n"
            "mpiexec.openmpi, orterun, or a link to one), else by its --version output.\n"
            "The library is looked for in $RFS_MPIIO_DIR/{mpich,openmpi}/, $RFS_MPIIO_DIR/,\n"
            "PREFIX/lib/rfs/{mpich,openmpi}/ (rfs installed in PREFIX/bin), then in the\n"
            "build tree this rfs is in and its sibling trees build/, build-ompi/, build-mpich/.\n"
            "\n"
            "Options:\n"
            "  --mpi mpich|openmpi  the launcher's MPI, when it cannot be told\n"
            "  --dry-run            print the command instead of running it\n"
            "  -h, --help           show help\n");
}

/* The LD_PRELOAD for the ranks: what is set already (a sanitizer runtime, say) minus any other
 * librfs-mpiio.so, then lib. */
static char *preload_value(const char *lib)
{
    const char *cur = getenv("LD_PRELOAD");
    size_t cap = (cur ? strlen(cur) : 0) + strlen(lib) + 2;
    char *out = malloc(cap), *copy = strdup(cur ? cur : "");
    if (!out || !copy) {
        free(out);
        free(copy);
        return NULL;
    }
    out[0] = '\0';
    char *save = NULL;
    for (char *t = strtok_r(copy, ": ", &save); t; t = strtok_r(NULL, ": ", &save)) {
        if (strstr(t, "librfs-mpiio.so"))
            continue;
        strcat(out, t);
        strcat(out, ":");
    }
    strcat(out, lib);
    free(copy);
    return out;
}

static void print_cmd(char **argv)
{
    for (int i = 0; argv[i]; i++) {
        int plain = argv[i][0] && !strpbrk(argv[i], " \t\n'\"$\\;&|<>()*?`");
        printf(plain ? "%s%s" : "%s'%s'", i ? " " : "", argv[i]);
    }
    printf("\n");
}

int cli_cmd_run(int argc, char **argv)
{
    run_mpi mpi = RUN_UNKNOWN;
    int dry = 0, i = 0;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            cli_run_help(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(a, "--dry-run") == 0) {
            dry = 1;
        } else if (strcmp(a, "--mpi") == 0) {
            const char *v = i + 1 < argc ? argv[++i] : "";
            if (strcmp(v, "mpich") == 0)
                mpi = RUN_MPICH;
            else if (strcmp(v, "openmpi") == 0)
                mpi = RUN_OPENMPI;
            else
                return usage("--mpi takes mpich or openmpi, not '%s'", v);
        } else if (a[0] == '-') {
            return usage("unknown option '%s'", a);
        } else {
            break;
        }
    }
    if (i >= argc)
        return usage("%sno launcher given", "");
    const char *launcher = argv[i];
    if (mpi == RUN_UNKNOWN)
        mpi = run_launcher_mpi(launcher);
    if (mpi == RUN_UNKNOWN) {
        fprintf(stderr,
                "rfs run: cannot tell which MPI %s starts: say --mpi mpich or "
                "--mpi openmpi\n",
                launcher);
        return CLI_EXIT_USAGE;
    }
    char lib[PATH_MAX], looked[8192];
    if (run_find_lib(mpi, lib, sizeof lib, looked, sizeof looked) != 0) {
        fprintf(stderr,
                "rfs run: no librfs-mpiio.so built for %s (looked at %s): build one with "
                "cmake -DMPI_C_COMPILER=%s, or set RFS_MPIIO_DIR\n",
                run_mpi_name(mpi), looked, mpi == RUN_MPICH ? "mpicc.mpich" : "mpicc.openmpi");
        return CLI_EXIT_FAIL;
    }
    char *pre = preload_value(lib);
    size_t nenv = 0;
    for (char **e = environ; *e; e++)
        nenv++;
    char **nargv = calloc((size_t)(argc - i) + 2 * nenv + 8, sizeof *nargv);
    char *kv = pre ? malloc(strlen(pre) + 16) : NULL;
    if (!pre || !nargv || !kv) {
        fprintf(stderr, "rfs run: out of memory\n");
        return CLI_EXIT_FAIL;
    }
    int n = 0;
    nargv[n++] = (char *)launcher;
    if (mpi == RUN_MPICH) {
        nargv[n++] = "-genv";
        nargv[n++] = "LD_PRELOAD";
        nargv[n++] = pre;
    } else {
        snprintf(kv, strlen(pre) + 16, "LD_PRELOAD=%s", pre);
        nargv[n++] = "-x";
        nargv[n++] = kv;
        for (char **e = environ; *e; e++) {
            if (strncmp(*e, "RFS_", 4) != 0 || !strchr(*e, '='))
                continue;
            char *name = strndup(*e, (size_t)(strchr(*e, '=') - *e));
            if (!name)
                continue;
            nargv[n++] = "-x";
            nargv[n++] = name;
        }
    }
    for (int k = i + 1; k < argc; k++)
        nargv[n++] = argv[k];
    nargv[n] = NULL;
    if (dry) {
        print_cmd(nargv);
        return CLI_EXIT_OK;
    }
    execvp(launcher, nargv);
    fprintf(stderr, "rfs run: %s: %s\n", launcher, strerror(errno));
    return errno == ENOENT ? 127 : 126;
}
