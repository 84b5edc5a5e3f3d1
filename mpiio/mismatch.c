/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* A librfs-mpiio.so preloaded into a program of the other MPI (the MPICH build into an Open MPI
 * program, or the reverse) takes itself out of the process instead of crashing it.
 *
 * Why it cannot just pass calls through: the library needs its own MPI (DT_NEEDED), so both MPIs
 * end up loaded, and the dynamic linker binds every MPI symbol to whichever comes first in the
 * global search order. The program's MPI_File_open reaches us with the other MPI's handles (our
 * constants and calls mean nothing to it: Open MPI dies with SIGSEGV in MPI_File_open, MPICH
 * aborts with "Invalid communicator"); in Python the extension modules loaded later (mpi4py,
 * h5py) are even bound to our MPI instead of theirs. So once a mismatch is seen, the process is
 * started again without us: LD_PRELOAD minus this library, same program, arguments and
 * environment (execv of /proc/self/exe), after one line on stderr naming the build to use.
 *
 * When: at load (a constructor), where a program linked with its MPI has it loaded already, and
 * again in MPI_Init/MPI_Init_thread, for interpreters that load their MPI later. There the
 * program starts over: what it did before MPI_Init (for Python, usually just imports) runs twice.
 *
 * Which MPI an object is: the one defining PMPI_Init itself (not through a dependency); Open MPI
 * if it also defines ompi_mpi_comm_world, MPICH's family otherwise. Ours is what mpi.h said at
 * build time (OPEN_MPI or MPICH). The file carries the same fact as a string (`rfs run` reads it
 * to pick the right build without loading it). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mpiio/mpiio_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(OPEN_MPI)
#define OUR_MPI "Open MPI"
#define OTHER_MPI "MPICH"
#define OTHER_COMPILER "mpicc.mpich"
#define OTHER_INSTALL_DIR "mpich"
#define OTHER_BUILD_DIR "build"
#elif defined(MPICH)
#define OUR_MPI "MPICH"
#define OTHER_MPI "Open MPI"
#define OTHER_COMPILER "mpicc.openmpi"
#define OTHER_INSTALL_DIR "openmpi"
#define OTHER_BUILD_DIR "build-ompi"
#else
#error "librfs-mpiio.so is built for MPICH or Open MPI; this mpi.h is neither"
#endif

/* Read by `rfs run` (cli/cmd_run.c) from the file: keep the format in step with it. */
__attribute__((used)) static const char flavour_tag[] = "rfs-mpiio-built-for=" OUR_MPI ";";

#define GUARD_ENV "RFS_MPIIO_MISMATCH_REEXEC"

typedef struct scan {
    void *self_base; /* our own load address, to skip ourselves */
    int other;       /* an MPI of the other kind is loaded */
} scan;

static int is_open_mpi(void *h)
{
    return dlsym(h, "ompi_mpi_comm_world") != NULL;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    scan *s = arg;
    const char *name = info->dlpi_name;
    if (!name || !name[0] || (void *)info->dlpi_addr == s->self_base)
        return 0;
    void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    void *init = dlsym(h, "PMPI_Init");
    Dl_info di;
    /* defined by this object, not found through one of its dependencies */
    if (init && dladdr(init, &di) && di.dli_fbase == (void *)info->dlpi_addr) {
#if defined(OPEN_MPI)
        s->other |= !is_open_mpi(h);
#else
        s->other |= is_open_mpi(h);
#endif
    }
    dlclose(h);
    return s->other;
}

static int other_mpi_loaded(void)
{
    Dl_info self;
    scan s = {0};
    if (dladdr((void *)&flavour_tag, &self))
        s.self_base = self.dli_fbase;
    dl_iterate_phdr(scan_one, &s);
    return s.other;
}

/* Our file's path, or NULL. */
static const char *self_path(char *buf, size_t cap)
{
    Dl_info di;
    if (!dladdr((void *)&flavour_tag, &di) || !di.dli_fname || !realpath(di.dli_fname, buf))
        return NULL;
    (void)cap;
    return buf;
}

/* Where the other build is likely to be: the install layout (lib/rfs/mpich next to
 * lib/rfs/openmpi) or the build trees scripts/test makes (build/ and build-ompi/). */
static void advice(char *out, size_t cap)
{
    char self[PATH_MAX], dir[PATH_MAX], cand[PATH_MAX + 64];
    if (self_path(self, sizeof self)) {
        snprintf(dir, sizeof dir, "%s", self);
        char *parent = dirname(dirname(dir)); /* .../lib/rfs/<mpi>/x.so -> .../lib/rfs */
        snprintf(cand, sizeof cand, "%s/%s/librfs-mpiio.so", parent, OTHER_INSTALL_DIR);
        if (access(cand, R_OK) != 0)
            snprintf(cand, sizeof cand, "%s/%s/librfs-mpiio.so", parent, OTHER_BUILD_DIR);
        if (access(cand, R_OK) == 0) {
            snprintf(out, cap, "use %s (or launch with `rfs run`)", cand);
            return;
        }
    }
    snprintf(out, cap, "use a build made with -DMPI_C_COMPILER=%s (or launch with `rfs run`)",
             OTHER_COMPILER);
}

/* Only one rank speaks: the launchers' rank variables, when there are any. */
static int first_rank(void)
{
    static const char *vars[] = {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v)
            return strcmp(v, "0") == 0;
    }
    return 1;
}

/* LD_PRELOAD without this library (entries naming the same file, or any librfs-mpiio.so). */
static void drop_self_from_preload(void)
{
    const char *pre = getenv("LD_PRELOAD");
    if (!pre)
        return;
    char self[PATH_MAX], real[PATH_MAX];
    int have_self = self_path(self, sizeof self) != NULL;
    size_t n = strlen(pre);
    char *copy = strdup(pre), *out = malloc(n + 1);
    if (!copy || !out) {
        free(copy);
        free(out);
        unsetenv("LD_PRELOAD");
        return;
    }
    out[0] = '\0';
    char *save = NULL;
    for (char *t = strtok_r(copy, ": ", &save); t; t = strtok_r(NULL, ": ", &save)) {
        int ours = strstr(t, "librfs-mpiio.so") != NULL ||
                   (have_self && realpath(t, real) && strcmp(real, self) == 0);
        if (ours)
            continue;
        if (out[0])
            strcat(out, ":");
        strcat(out, t);
    }
    if (out[0])
        setenv("LD_PRELOAD", out, 1);
    else
        unsetenv("LD_PRELOAD");
    free(copy);
    free(out);
}

/* The arguments this process was started with. */
static char **own_argv(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap + 1);
    ssize_t r;
    while (buf && (r = read(fd, buf + len, cap - len)) > 0) {
        len += (size_t)r;
        if (len == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    close(fd);
    if (!buf || len == 0) {
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    size_t argc = 0;
    for (size_t i = 0; i < len; i++)
        argc += buf[i] == '\0';
    char **argv = calloc(argc + 1, sizeof *argv);
    if (!argv) {
        free(buf);
        return NULL;
    }
    for (size_t i = 0, k = 0; i < len && k < argc; k++) {
        argv[k] = buf + i;
        i += strlen(buf + i) + 1;
    }
    return argv;
}

static void leave_if_mismatched(const char *when)
{
    if (!other_mpi_loaded())
        return;
    char adv[PATH_MAX + 128];
    advice(adv, sizeof adv);
    if (first_rank())
        fprintf(stderr,
                "rfs: librfs-mpiio.so was built for " OUR_MPI " but this program uses " OTHER_MPI
                ": %s; running it without rfs\n",
                adv);
    /* The guard holds our pid: execv keeps it, so only this process's second start sees it,
     * not the programs it launches later. */
    char pid[32];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    const char *guard = getenv(GUARD_ENV);
    char **argv = guard && strcmp(guard, pid) == 0 ? NULL : own_argv();
    if (argv) {
        drop_self_from_preload();
        setenv(GUARD_ENV, pid, 1);
        execv("/proc/self/exe", argv);
    }
    /* Still loaded after starting over (preloaded some other way), or no way to start over:
     * going on would crash inside MPI, so stop with the reason. */
    fprintf(stderr, "rfs: cannot take librfs-mpiio.so out of this process (%s, %s): stopping\n",
            when, argv ? strerror(errno) : "already started over once");
    _exit(1);
}

__attribute__((constructor)) static void check_at_load(void)
{
    leave_if_mismatched("at load");
}

/* MPI_Init/MPI_Init_thread: the MPI library's, after the check (an interpreter has loaded its
 * MPI by now). */
int MPI_Init(int *argc, char ***argv)
{
    leave_if_mismatched("in MPI_Init");
    return MP_REAL(PMPI_Init)(argc, argv);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    leave_if_mismatched("in MPI_Init_thread");
    return MP_REAL(PMPI_Init_thread)(argc, argv, required, provided);
}
