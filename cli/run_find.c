/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* `rfs run`: which MPI a launcher starts, and where the librfs-mpiio.so built for it is.
 *
 * A build's MPI is read from the file itself (the "rfs-mpiio-built-for=NAME;" string that
 * mpiio/mismatch.c puts there), not from its directory's name: loading it to ask would load
 * its MPI into this process. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cli/run.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char tag[] = "rfs-mpiio-built-for=";

const char *run_mpi_name(run_mpi m)
{
    return m == RUN_MPICH ? "MPICH" : "Open MPI";
}

static const char *mpi_dir(run_mpi m)
{
    return m == RUN_MPICH ? "mpich" : "openmpi";
}

run_mpi run_lib_mpi(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return RUN_UNKNOWN;
    struct stat st;
    run_mpi m = RUN_UNKNOWN;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            const char *hit = memmem(p, (size_t)st.st_size, tag, sizeof tag - 1);
            const char *v = hit ? hit + sizeof tag - 1 : NULL;
            size_t left = v ? (size_t)((const char *)p + st.st_size - v) : 0;
            if (left >= 6 && !memcmp(v, "MPICH;", 6))
                m = RUN_MPICH;
            else if (left >= 9 && !memcmp(v, "Open MPI;", 9))
                m = RUN_OPENMPI;
            munmap(p, (size_t)st.st_size);
        }
    }
    close(fd);
    return m;
}

/* The launcher's own answer to --version: Hydra (MPICH) or OpenRTE/PRRTE (Open MPI). */
static run_mpi by_version(const char *launcher)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0)
        return RUN_UNKNOWN;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
    char *argv[] = {(char *)launcher, "--version", NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, launcher, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pfd[1]);
    char out[4096];
    size_t len = 0;
    ssize_t n;
    while (rc == 0 && len < sizeof out - 1 &&
           (n = read(pfd[0], out + len, sizeof out - 1 - len)) > 0)
        len += (size_t)n;
    close(pfd[0]);
    out[len] = '\0';
    if (rc != 0)
        return RUN_UNKNOWN;
    waitpid(pid, NULL, 0);
    if (strstr(out, "HYDRA") || strstr(out, "MPICH"))
        return RUN_MPICH;
    if (strstr(out, "OpenRTE") || strstr(out, "Open MPI") || strstr(out, "PRRTE"))
        return RUN_OPENMPI;
    return RUN_UNKNOWN;
}

static run_mpi by_name(const char *name)
{
    char b[PATH_MAX];
    snprintf(b, sizeof b, "%s", name);
    const char *base = basename(b);
    if (strstr(base, "openmpi") || strstr(base, "orterun") || strstr(base, "prterun"))
        return RUN_OPENMPI;
    if (strstr(base, "mpich") || strstr(base, "hydra"))
        return RUN_MPICH;
    return RUN_UNKNOWN;
}

/* launcher found on PATH, symbolic links resolved (Debian's mpiexec -> alternatives -> the
 * real one); NULL if not found. */
static const char *resolve(const char *launcher, char *out)
{
    if (strchr(launcher, '/'))
        return realpath(launcher, out);
    const char *path = getenv("PATH");
    char dirs[8192], cand[PATH_MAX];
    snprintf(dirs, sizeof dirs, "%s", path ? path : "/usr/bin:/bin");
    char *save = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(cand, sizeof cand, "%s/%s", d, launcher);
        if (access(cand, X_OK) == 0 && realpath(cand, out))
            return out;
    }
    return NULL;
}

run_mpi run_launcher_mpi(const char *launcher)
{
    run_mpi m = by_name(launcher);
    char real[PATH_MAX];
    if (m == RUN_UNKNOWN && resolve(launcher, real))
        m = by_name(real);
    return m != RUN_UNKNOWN ? m : by_version(launcher);
}

/* Adds dir/name to the list of places looked at; returns 1 if it is a build for mpi. */
static int try_path(const char *dir, const char *name, run_mpi mpi, char *out, size_t cap,
                    char *looked, size_t lcap)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    size_t used = strlen(looked);
    snprintf(looked + used, lcap - used, "%s%s", used ? ", " : "", p);
    if (run_lib_mpi(p) != mpi)
        return 0;
    if (!realpath(p, out))
        snprintf(out, cap, "%s", p);
    return 1;
}

int run_find_lib(run_mpi mpi, char *out, size_t cap, char *looked, size_t lcap)
{
    char sub[64], exe[PATH_MAX], dir[PATH_MAX], up[PATH_MAX];
    looked[0] = '\0';
    snprintf(sub, sizeof sub, "%s/librfs-mpiio.so", mpi_dir(mpi));
    const char *env = getenv("RFS_MPIIO_DIR");
    if (env && env[0] &&
        (try_path(env, sub, mpi, out, cap, looked, lcap) ||
         try_path(env, "librfs-mpiio.so", mpi, out, cap, looked, lcap)))
        return 0;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    snprintf(dir, sizeof dir, "%s", dirname(exe)); /* bin/, or the build tree */
    snprintf(exe, sizeof exe, "%s", dir);
    snprintf(up, sizeof up, "%s", dirname(exe)); /* the prefix, or the source tree */
    char lib[PATH_MAX + 16];
    snprintf(lib, sizeof lib, "%s/%s", up, RFS_INSTALL_MPIIO_DIR);
    /* installed side by side; then this build tree and the ones scripts/test makes */
    static const char *trees[] = {"build", "build-ompi", "build-mpich"};
    if (try_path(lib, sub, mpi, out, cap, looked, lcap) ||
        try_path(dir, "librfs-mpiio.so", mpi, out, cap, looked, lcap))
        return 0;
    for (size_t i = 0; i < sizeof trees / sizeof trees[0]; i++) {
        char t[PATH_MAX + 16];
        snprintf(t, sizeof t, "%s/%s", up, trees[i]);
        if (strcmp(t, dir) != 0 && try_path(t, "librfs-mpiio.so", mpi, out, cap, looked, lcap))
            return 0;
    }
    return -1;
}
