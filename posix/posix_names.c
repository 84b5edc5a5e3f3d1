/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The POSIX calls that change names, on rfs names: what MPI-IO programs and libraries do to
 * their files outside MPI-IO (PnetCDF and IOR unlink before re-creating, MPICH's tests remove
 * and rename, checkpointing codes truncate). Served:
 *
 *   unlink unlinkat remove rename renameat renameat2 truncate truncate64 mkdir mkdirat rmdir
 *
 * through the client API's name calls (rfs_delete, rfs_rename, rfs_mkdir, rfs_stat; truncate is
 * rfs_open + rfs_set_size). Errors are those the kernel gives for the same call on a local
 * file: unlink of a directory EISDIR, rmdir of a file ENOTDIR, of a full directory ENOTEMPTY,
 * mkdir of an existing name EEXIST, rename between two servers or between an rfs name and a
 * local one EXDEV. unlink and rmdir ask the server for the type first (one more round trip)
 * because its DELETE removes both files and empty directories.
 *
 * Names not starting with "rfs:" go to the C library. Only when it answers ENOENT (so it did
 * nothing) and "rfs:" + name is a valid rfs name (a library cut the prefix off) is the call
 * tried through rfs; if that fails too, the C library's ENOENT stands unless the server found
 * the file and refused (EACCES, EISDIR, ...). Any other local outcome is final: a local file
 * is never shadowed by a remote one. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "mpiio/mpiio_internal.h"
#include "posix/posix_shim.h"
#include "rfs/rfs.h"

typedef enum name_op { OP_UNLINK, OP_RMDIR, OP_REMOVE, OP_MKDIR, OP_TRUNCATE } name_op;

typedef struct op_args {
    name_op op;
    mode_t mode;   /* OP_MKDIR */
    long long len; /* OP_TRUNCATE */
} op_args;

/* errno (not set) for an rfs code, or 0 for RFS_OK. */
static int fail_errno(int rc, const char *what, const char *rname)
{
    if (rc == RFS_OK)
        return 0;
    RFS_LOGD("mpiio posix: %s %s: %s", what, rname, rfs_last_error());
    return shim_errno_of(rc);
}

/* ENOTDIR/EISDIR checks before a DELETE: 0 if the type is the one wanted. */
static int check_type(const char *rname, const rfs_options *o, int want_dir)
{
    rfs_stat_info st;
    int e = fail_errno(rfs_stat(rname, o, &st), "stat", rname);
    if (e)
        return e;
    int is_dir = st.type == RFS_TYPE_DIR;
    if (is_dir && !want_dir)
        return EISDIR;
    if (!is_dir && want_dir)
        return ENOTDIR;
    return 0;
}

static int do_truncate(const char *rname, const rfs_options *o, long long len)
{
    if (len < 0)
        return EINVAL;
    rfs_file *f = NULL;
    int e = fail_errno(rfs_open(rname, RFS_O_WRONLY, 0, o, &f), "truncate", rname);
    if (e)
        return e;
    e = fail_errno(rfs_set_size(f, (uint64_t)len), "truncate", rname);
    int ce = fail_errno(rfs_close(f), "truncate: close", rname);
    mp_files_forget_sizes();
    return e ? e : ce;
}

/* Runs the operation on an rfs name. Returns 0 or an errno value (errno not set). */
static int run_op(const char *rname, const op_args *a)
{
    rfs_options o;
    shim_options(&o);
    int e = 0;
    switch (a->op) {
    case OP_UNLINK:
    case OP_RMDIR:
        if ((e = check_type(rname, &o, a->op == OP_RMDIR)))
            return e;
        /* fall through */
    case OP_REMOVE: return fail_errno(rfs_delete(rname, &o), "delete", rname);
    case OP_MKDIR:
        return fail_errno(rfs_mkdir(rname, (unsigned)(a->mode & 07777), &o), "mkdir", rname);
    case OP_TRUNCATE: return do_truncate(rname, &o, a->len);
    }
    return EINVAL;
}

static int finish(int e)
{
    if (e) {
        errno = e;
        return -1;
    }
    return 0;
}

/* Whether an rfs answer to a stripped name says the file is there (so it, not the C library's
 * ENOENT, is the answer). */
static int found_remotely(int e)
{
    return e == EACCES || e == EISDIR || e == ENOTDIR || e == ENOTEMPTY || e == EEXIST ||
           e == EROFS || e == EFBIG || e == ENOSPC || e == EDQUOT;
}

/* rfs names through rfs; others through `local` (already called by the macro below, its
 * result in r) with the stripped-prefix fallback on ENOENT. */
static int after_local(const char *path, int r, const op_args *a)
{
    char buf[SHIM_NAME_MAX];
    if (r == 0 || errno != ENOENT)
        return r;
    const char *rname = shim_rfs_name(path, 1, buf, sizeof buf);
    if (!rname)
        return r;
    int e = run_op(rname, a);
    if (e && !found_remotely(e))
        e = ENOENT;
    return finish(e);
}

#define BY_NAME(path, args, local_call)         \
    do {                                        \
        op_args a_ = args;                      \
        if (rfs_is_name(path)) /* NULL-safe */  \
            return finish(run_op((path), &a_)); \
        int r_ = (local_call);                  \
        return after_local((path), r_, &a_);    \
    } while (0)

int unlink(const char *path)
{
    BY_NAME(path, ((op_args){.op = OP_UNLINK}), REAL(unlink, NULL)(path));
}

int rmdir(const char *path)
{
    BY_NAME(path, ((op_args){.op = OP_RMDIR}), REAL(rmdir, NULL)(path));
}

int unlinkat(int dirfd, const char *path, int flags)
{
    BY_NAME(path, ((op_args){.op = (flags & AT_REMOVEDIR) ? OP_RMDIR : OP_UNLINK}),
            REAL(unlinkat, NULL)(dirfd, path, flags));
}

/* The C library's remove() calls its internal unlink/rmdir, which we do not see. */
int remove(const char *path)
{
    BY_NAME(path, ((op_args){.op = OP_REMOVE}), REAL(remove, NULL)(path));
}

int mkdir(const char *path, mode_t mode)
{
    BY_NAME(path, ((op_args){.op = OP_MKDIR, .mode = mode}), REAL(mkdir, NULL)(path, mode));
}

int mkdirat(int dirfd, const char *path, mode_t mode)
{
    BY_NAME(path, ((op_args){.op = OP_MKDIR, .mode = mode}),
            REAL(mkdirat, NULL)(dirfd, path, mode));
}

int truncate(const char *path, off_t len)
{
    BY_NAME(path, ((op_args){.op = OP_TRUNCATE, .len = len}), REAL(truncate, NULL)(path, len));
}

int truncate64(const char *path, off64_t len)
{
    BY_NAME(path, ((op_args){.op = OP_TRUNCATE, .len = len}), REAL(truncate64, NULL)(path, len));
}

/* ---- rename ---- */

/* Renames between two rfs names: EXDEV unless both are on the same server (as the host and
 * port are written: two spellings of one server count as two, like two mounts would). */
static int rename_rfs(const char *from, const char *to)
{
    rfs_name a, b;
    if (rfs_parse_name(from, &a) != RFS_OK || rfs_parse_name(to, &b) != RFS_OK)
        return ENOENT; /* not a name any server could have */
    if (a.port != b.port || strcmp(a.host, b.host) != 0)
        return EXDEV;
    rfs_options o;
    shim_options(&o);
    return fail_errno(rfs_rename(from, b.path, &o), "rename", from);
}

static int do_rename(int olddirfd, const char *from, int newdirfd, const char *to, unsigned flags,
                     int at)
{
    int rf = rfs_is_name(from), rt = rfs_is_name(to);
    if (rf || rt) {
        if (!(rf && rt))
            return finish(EXDEV); /* one side local: another file system */
        if (flags)
            return finish(EINVAL); /* RENAME_NOREPLACE and friends: no such server op */
        return finish(rename_rfs(from, to));
    }
    int r = !at     ? REAL(rename, NULL)(from, to)
            : flags ? REAL(renameat2, NULL)(olddirfd, from, newdirfd, to, flags)
                    : REAL(renameat, NULL)(olddirfd, from, newdirfd, to);
    if (r == 0 || errno != ENOENT || flags)
        return r;
    /* Both names with their prefix cut off, neither there locally. */
    char b1[SHIM_NAME_MAX], b2[SHIM_NAME_MAX];
    const char *f2 = shim_rfs_name(from, 1, b1, sizeof b1);
    const char *t2 = shim_rfs_name(to, 1, b2, sizeof b2);
    if (!f2 || !t2)
        return r;
    int e = rename_rfs(f2, t2);
    if (e && !found_remotely(e))
        e = ENOENT;
    return finish(e);
}

int rename(const char *from, const char *to)
{
    return do_rename(AT_FDCWD, from, AT_FDCWD, to, 0, 0);
}

int renameat(int olddirfd, const char *from, int newdirfd, const char *to)
{
    return do_rename(olddirfd, from, newdirfd, to, 0, 1);
}

int renameat2(int olddirfd, const char *from, int newdirfd, const char *to, unsigned flags)
{
    return do_rename(olddirfd, from, newdirfd, to, flags, 1);
}
