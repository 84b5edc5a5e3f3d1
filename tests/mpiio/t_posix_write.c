/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The POSIX name calls of librfs-mpiio.so (posix/posix_names.c) next to MPI-IO, as a program
 * that cleans up after itself does them:
 *
 *   t_posix_write RFSNAME EXPORTPATH LOCALDIR
 *
 * RFSNAME (rfs:HOST:PORT:/path, not existing yet) is EXPORTPATH on the server's disk, which this
 * program can see (the server runs on this machine), so every POSIX call's effect is checked
 * there, not only through the shim. LOCALDIR is a scratch directory for local files and the
 * working directory (where a local file is given the same name as an rfs name with its prefix
 * cut off). Ranks write with MPI-IO; rank 0 does the POSIX calls between collective steps. It
 * leaves RFSNAME + ".renamed" on the server: 700 bytes t_pat(i, 1), then zeros up to 5000. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "t_common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK 1000

static char name[4200], renamed[4200], dir[4200], inner[4200];
static char xname[4200], xrenamed[4200], xdir[4200], xinner[4200];

/* Each rank writes BLOCK bytes t_pat(i, w) at rank * BLOCK; amode adds to WRONLY. */
static int write_file(int amode, int w)
{
    MPI_File fh;
    int rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_WRONLY | amode, MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS)
        return rc;
    unsigned char b[BLOCK];
    long long base = (long long)t_rank * BLOCK;
    for (int i = 0; i < BLOCK; i++)
        b[i] = t_pat(base + i, w);
    MPI_OK(MPI_File_write_at_all(fh, base, b, BLOCK, MPI_BYTE, MPI_STATUS_IGNORE));
    MPI_OK(MPI_File_close(&fh));
    return MPI_SUCCESS;
}

/* Size of a local file (the server's disk), -1 if missing. */
static long long disk_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static long long shim_size(const char *rname)
{
    struct stat st;
    return stat(rname, &st) == 0 ? (long long)st.st_size : -1;
}

/* The call failed with exactly errno e. */
#define FAILS_WITH(call, e)                                                                   \
    do {                                                                                      \
        errno = 0;                                                                            \
        int r_ = (call);                                                                      \
        CHECK(r_ == -1 && errno == (e), "%s: rc %d errno %d (%s), want %d", #call, r_, errno, \
              strerror(errno), (e));                                                          \
    } while (0)

#define SUCCEEDS(call) CHECK((call) == 0, "%s: %s", #call, strerror(errno))

static void check_bytes(const char *path, long long n, long long zeros_to)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "fopen %s: %s", path, strerror(errno));
    if (!f)
        return;
    int c;
    long long i = 0;
    while ((c = getc(f)) != EOF) {
        unsigned char want = i < n ? t_pat(i, 1) : 0;
        if ((unsigned char)c != want) {
            CHECK(0, "%s: byte %lld is %d, want %d", path, i, c, want);
            break;
        }
        i++;
    }
    fclose(f);
    CHECK(i == zeros_to, "%s: %lld bytes, want %lld", path, i, zeros_to);
}

/* unlink, rename, truncate, mkdir/rmdir on rfs names, errors as the kernel gives them. */
static void names(void)
{
    long long size = (long long)t_size * BLOCK;
    /* rename: same server; EXDEV to another server or a local name; the old name is gone. */
    SUCCEEDS(rename(name, renamed));
    CHECK(disk_size(xname) == -1 && disk_size(xrenamed) == size, "rename on disk: %lld %lld",
          disk_size(xname), disk_size(xrenamed));
    FAILS_WITH(rename(name, renamed), ENOENT);
    FAILS_WITH(rename(renamed, "rfs:192.0.2.1:7070:/elsewhere"), EXDEV);
    FAILS_WITH(rename(renamed, "local-target"), EXDEV);
    FAILS_WITH(rename("local-source", renamed), EXDEV);
    FAILS_WITH(renameat2(AT_FDCWD, renamed, AT_FDCWD, name, RENAME_NOREPLACE), EINVAL);
    CHECK(disk_size(xrenamed) == size, "failed renames left the file: %lld", disk_size(xrenamed));

    /* truncate: shrink, grow with zeros, refuse a negative length, a missing file. */
    SUCCEEDS(truncate(renamed, 700));
    CHECK(disk_size(xrenamed) == 700 && shim_size(renamed) == 700, "truncate 700: %lld %lld",
          disk_size(xrenamed), shim_size(renamed));
    check_bytes(xrenamed, 700, 700);
    SUCCEEDS(truncate64(renamed, 5000));
    CHECK(disk_size(xrenamed) == 5000 && shim_size(renamed) == 5000, "truncate 5000: %lld",
          disk_size(xrenamed));
    check_bytes(xrenamed, 700, 5000);
    FAILS_WITH(truncate(renamed, -1), EINVAL);
    FAILS_WITH(truncate(name, 10), ENOENT);

    /* mkdir/rmdir and the type errors. */
    SUCCEEDS(mkdir(dir, 0755));
    struct stat st;
    CHECK(stat(xdir, &st) == 0 && S_ISDIR(st.st_mode), "mkdir on disk");
    CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), "stat of the new directory");
    FAILS_WITH(mkdir(dir, 0755), EEXIST);
    FAILS_WITH(unlink(dir), EISDIR);
    FAILS_WITH(truncate(dir, 0), EISDIR);
    SUCCEEDS(renameat(AT_FDCWD, renamed, AT_FDCWD, inner));
    CHECK(disk_size(xinner) == 5000, "renameat into the directory: %lld", disk_size(xinner));
    FAILS_WITH(rmdir(dir), ENOTEMPTY);
    FAILS_WITH(rmdir(inner), ENOTDIR);
    FAILS_WITH(unlinkat(AT_FDCWD, inner, AT_REMOVEDIR), ENOTDIR);
    CHECK(disk_size(xinner) == 5000, "failed removals left the file");
    SUCCEEDS(rename(inner, renamed));
    SUCCEEDS(unlinkat(AT_FDCWD, dir, AT_REMOVEDIR));
    CHECK(stat(xdir, &st) == -1 && errno == ENOENT, "rmdir on disk");
    SUCCEEDS(mkdir(dir, 0700));
    SUCCEEDS(remove(dir)); /* remove() of a directory is rmdir */
    CHECK(stat(xdir, &st) == -1 && errno == ENOENT, "remove of a directory on disk");
    FAILS_WITH(rmdir(dir), ENOENT);
}

/* A shim descriptor is read-only: writes through it are refused, not swallowed by its memfd. */
static void read_only_descriptor(void)
{
    int fd = open(renamed, O_RDONLY);
    CHECK(fd >= 0, "open %s: %s", renamed, strerror(errno));
    if (fd < 0)
        return;
    FAILS_WITH((int)write(fd, "x", 1), EBADF);
    FAILS_WITH((int)pwrite(fd, "x", 1, 0), EBADF);
    FAILS_WITH(ftruncate(fd, 0), EINVAL);
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == 5000, "fstat after refused writes: %lld",
          (long long)st.st_size);
    close(fd);
    CHECK(access(renamed, W_OK) == 0, "access W_OK of a writable file: %s", strerror(errno));
}

/* A local file with the same name as an rfs name with its prefix cut off wins: it is the one
 * removed. Only when no local file is there does the name reach the server. */
static void stripped_names(void)
{
    const char *stripped = name + 4;           /* "HOST:PORT:/path" */
    const char *slash = strchr(stripped, '/'); /* the directory "HOST:PORT:" locally */
    char ldir[4200], lfile[4200];
    snprintf(ldir, sizeof ldir, "%.*s", (int)(slash - stripped), stripped);
    snprintf(lfile, sizeof lfile, "%s", stripped);
    SUCCEEDS(mkdir(ldir, 0755));
    int fd = open(lfile, O_WRONLY | O_CREAT | O_EXCL, 0644);
    CHECK(fd >= 0, "local %s: %s", lfile, strerror(errno));
    if (fd >= 0)
        close(fd);
    CHECK(disk_size(xname) == (long long)t_size * BLOCK, "remote file there before");
    SUCCEEDS(unlink(stripped)); /* the local one */
    /* "./": a name that cannot read as an rfs name, or the server would answer for it */
    char dotted[4300];
    snprintf(dotted, sizeof dotted, "./%s", lfile);
    CHECK(access(dotted, F_OK) == -1 && disk_size(xname) > 0, "the local file went first");
    /* rename of two stripped names, neither there locally: on the server */
    char moved[4300];
    snprintf(moved, sizeof moved, "%s.moved", stripped);
    SUCCEEDS(rename(stripped, moved));
    CHECK(disk_size(xname) == -1, "stripped rename on disk");
    SUCCEEDS(rename(moved, stripped));
    CHECK(disk_size(xname) == (long long)t_size * BLOCK, "renamed back");
    SUCCEEDS(unlink(stripped)); /* none locally: the server's */
    CHECK(disk_size(xname) == -1, "then the remote one: %lld", disk_size(xname));
    FAILS_WITH(unlink(stripped), ENOENT);
    SUCCEEDS(rmdir(ldir));
}

/* Local names are untouched by all of it. */
static void local_names(void)
{
    int fd = open("local.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, "0123456789", 10) == 10, "local write");
    CHECK(ftruncate(fd, 4) == 0, "local ftruncate: %s", strerror(errno));
    if (fd >= 0)
        close(fd);
    SUCCEEDS(truncate("local.dat", 6));
    CHECK(disk_size("local.dat") == 6, "local truncate");
    SUCCEEDS(rename("local.dat", "local2.dat"));
    SUCCEEDS(mkdir("localdir", 0755));
    FAILS_WITH(rmdir("local2.dat"), ENOTDIR);
    FAILS_WITH(unlink("localdir"), EISDIR);
    SUCCEEDS(rmdir("localdir"));
    SUCCEEDS(unlink("local2.dat"));
    FAILS_WITH(unlink("local2.dat"), ENOENT);
    FAILS_WITH(unlink("no-such-dir:1:/x"), ENOENT); /* reads as an rfs name, no server */
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    if (argc < 4) {
        fprintf(stderr, "usage: t_posix_write RFSNAME EXPORTPATH LOCALDIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    snprintf(name, sizeof name, "%s", argv[1]);
    snprintf(xname, sizeof xname, "%s", argv[2]);
    snprintf(renamed, sizeof renamed, "%s.renamed", name);
    snprintf(xrenamed, sizeof xrenamed, "%s.renamed", xname);
    snprintf(dir, sizeof dir, "%s.d", name);
    snprintf(xdir, sizeof xdir, "%s.d", xname);
    snprintf(inner, sizeof inner, "%s.d/inner", name);
    snprintf(xinner, sizeof xinner, "%s.d/inner", xname);
    if (t_rank == 0 && chdir(argv[3]) != 0) {
        fprintf(stderr, "chdir %s: %s\n", argv[3], strerror(errno));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long long size = (long long)t_size * BLOCK;

    /* Written through MPI-IO, deleted with unlink(), re-created exclusively. */
    MPI_OK(write_file(MPI_MODE_CREATE, 0));
    if (t_rank == 0) {
        CHECK(shim_size(name) == size && disk_size(xname) == size, "written: %lld %lld",
              shim_size(name), disk_size(xname));
        SUCCEEDS(unlink(name));
        CHECK(disk_size(xname) == -1, "unlink: still on the server's disk");
        FAILS_WITH(stat(name, &(struct stat){0}), ENOENT);
        FAILS_WITH(unlink(name), ENOENT);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(write_file(MPI_MODE_CREATE | MPI_MODE_EXCL, 1));
    int rc = write_file(MPI_MODE_CREATE | MPI_MODE_EXCL, 1);
    CHECK(t_class(rc) == MPI_ERR_FILE_EXISTS, "second EXCL create: %s", t_errstr(rc));
    if (t_rank == 0) {
        CHECK(disk_size(xname) == size, "re-created: %lld", disk_size(xname));
        names();
        read_only_descriptor();
        local_names();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(write_file(MPI_MODE_CREATE, 0)); /* the name again, for the stripped-name checks */
    if (t_rank == 0)
        stripped_names();
    return t_finish();
}
