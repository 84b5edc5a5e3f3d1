/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* POSIX access to rfs names through descriptors, for libraries that look at a file outside
 * MPI-IO before opening it with MPI_File_open: PnetCDF's ncmpi_open probes the file format with
 * open() + read() on rank 0, HDF5 and NetCDF tools stat() or access() names. Served here:
 *
 *   open open64 openat openat64 __open_2 __open64_2 __openat_2 __openat64_2, close, read
 *   __read_chk pread pread64 __pread_chk __pread64_chk, lseek lseek64, fstat fstat64 __fxstat
 *   __fxstat64, stat stat64 lstat lstat64 __xstat __xstat64 __lxstat __lxstat64, access
 *   faccessat; write pwrite pwrite64 ftruncate ftruncate64 (refused on our descriptors)
 *
 * on names starting with "rfs:" (rfs:HOST:PORT:/path, rfs://HOST:PORT/path). The calls that
 * change names (unlink, rename, truncate, mkdir, rmdir...) are in posix_names.c. Because several
 * libraries strip a "prefix:" from a name before calling POSIX (PnetCDF turns
 * "rfs:h:7070:/a.nc" into "h:7070:/a.nc", ROMIO's file-system prefix convention), a name that
 * does not exist locally (ENOENT) and reads as a valid rfs name once "rfs:" is put in front of
 * it is tried through rfs as well. Local files always win.
 *
 * A file opened here is opened read-only through the client library (rfs_open, RFS_O_RDONLY).
 * Its descriptor is a real one, from memfd_create, so the kernel never hands the same number to
 * anyone else while it is ours; our table maps it to the rfs file. Every other descriptor and
 * name goes to the C library's function (dlsym RTLD_NEXT), so the client library's own sockets
 * and files, and the MPI library's, pass straight through. open() for writing (O_WRONLY, O_RDWR,
 * O_CREAT, O_TRUNC, O_APPEND) on an rfs name fails with EROFS, by design: file data is written
 * through MPI-IO, whose collective open and two-phase writes a POSIX descriptor could not honour.
 * A program that wants a fresh file unlink()s it and re-creates it with MPI_File_open, and can
 * cut or grow it with truncate(). write/pwrite on our descriptors fail with EBADF and ftruncate
 * with EINVAL, as for a file the kernel opened read-only. access(W_OK) answers by the permission
 * bits. Not served: stdio (fopen/fdopen read through the C library's internal calls), dup, mmap,
 * fcntl locks on these descriptors.
 *
 * Thread safety: the table is guarded by a mutex; each open file has its own mutex for the
 * file position and a reference count, so a close while another thread reads is safe. */
#undef _FORTIFY_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mpiio/mpiio_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/debug.h"
#include "common/log.h"
#include "posix/posix_shim.h"
#include "rfs/rfs.h"

/* Old glibc stat entry points: no longer declared by glibc 2.33+ headers, still exported for
 * programs built before. */
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstat(int ver, int fd, struct stat *st);
int __fxstat64(int ver, int fd, struct stat64 *st);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);

/* ---- the C library's functions ---- */

void *shim_next_fn(const char *name, const char *version)
{
    void *p = version ? dlvsym(RTLD_NEXT, name, version) : NULL;
    if (!p)
        p = dlsym(RTLD_NEXT, name);
    return p;
}

/* ---- open files ---- */

typedef struct shim_file {
    rfs_file *rf;
    char *name;
    uint64_t pos;
    int refs;           /* table's + each call in progress; guarded by tab_mu */
    pthread_mutex_t mu; /* guards pos */
} shim_file;

static pthread_mutex_t tab_mu = PTHREAD_MUTEX_INITIALIZER;
static shim_file **tab; /* indexed by descriptor */
static int tab_cap;
static int tab_open; /* files in the table; peeked without the lock for speed */

/* The shim_file behind fd with a reference taken, or NULL if fd is not ours. */
static shim_file *file_get(int fd)
{
    if (fd < 0 || !__atomic_load_n(&tab_open, __ATOMIC_ACQUIRE))
        return NULL;
    pthread_mutex_lock(&tab_mu);
    shim_file *s = fd < tab_cap ? tab[fd] : NULL;
    if (s)
        RFS_REF_GET(s->refs);
    pthread_mutex_unlock(&tab_mu);
    return s;
}

static void file_put(shim_file *s)
{
    pthread_mutex_lock(&tab_mu);
    int last = RFS_REF_PUT(s->refs) == 0;
    pthread_mutex_unlock(&tab_mu);
    if (last) {
        RFS_REF_DEAD(s->refs);
        rfs_close(s->rf);
        pthread_mutex_destroy(&s->mu);
        free(s->name);
        free(s);
    }
}

int shim_errno_of(int e)
{
    switch (e) {
    case RFS_E_NOENT: return ENOENT;
    case RFS_E_EXIST: return EEXIST;
    case RFS_E_NOTEMPTY: return ENOTEMPTY;
    case RFS_E_DQUOT: return EDQUOT;
    case RFS_E_BUSY: return EBUSY;
    case RFS_E_ACCESS:
    case RFS_E_AUTH: return EACCES;
    case RFS_E_ROFS: return EROFS;
    case RFS_E_INVAL:
    case RFS_E_NAME: return EINVAL;
    case RFS_E_NOSPC: return ENOSPC;
    case RFS_E_ISDIR: return EISDIR;
    case RFS_E_NOTDIR: return ENOTDIR;
    case RFS_E_NOMEM: return ENOMEM;
    case RFS_E_BADF: return EBADF;
    case RFS_E_TIMEOUT: return ETIMEDOUT;
    case RFS_E_CONN: return ECONNREFUSED;
    case RFS_E_FBIG: return EFBIG;
    case RFS_E_UNSUPPORTED: return ENOTSUP;
    default: return EIO;
    }
}

void shim_options(rfs_options *o)
{
    mp_hints h;
    mp_hints_default(&h);
    mp_hints_apply_env(&h);
    memset(o, 0, sizeof *o);
    o->connect_timeout_ms = h.connect_timeout_ms;
    o->io_timeout_ms = h.io_timeout_ms;
    o->retry_timeout_ms = h.retry_timeout_ms;
}

const char *shim_rfs_name(const char *name, int local_missing, char *buf, size_t cap)
{
    if (!name)
        return NULL;
    if (rfs_is_name(name))
        return name;
    if (!local_missing || !strchr(name, ':') || strlen(name) + 5 > cap)
        return NULL;
    snprintf(buf, cap, "rfs:%s", name);
    rfs_name parsed;
    return rfs_parse_name(buf, &parsed) == RFS_OK ? buf : NULL;
}

static int write_flags(int flags)
{
    return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC | O_APPEND));
}

/* Opens an rfs name read-only on a fresh descriptor. Returns the descriptor or -1 with errno. */
static int shim_open(const char *rname, int flags)
{
    if (write_flags(flags)) {
        RFS_LOGD("mpiio posix: %s: write access refused (read-only outside MPI-IO)", rname);
        errno = EROFS;
        return -1;
    }
    if (flags & O_DIRECTORY) {
        errno = ENOTDIR;
        return -1;
    }
    rfs_options o;
    shim_options(&o);
    rfs_file *rf = NULL;
    int rc = rfs_open(rname, RFS_O_RDONLY, 0, &o, &rf);
    if (rc != RFS_OK) {
        RFS_LOGD("mpiio posix: open %s: %s", rname, rfs_last_error());
        errno = shim_errno_of(rc);
        return -1;
    }
    shim_file *s = calloc(1, sizeof *s);
    char *dup = strdup(rname);
    int fd = memfd_create("rfs-posix", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
    if (!s || !dup || fd < 0) {
        int e = fd < 0 ? errno : ENOMEM;
        if (fd >= 0)
            REAL(close, NULL)(fd);
        rfs_close(rf);
        free(s);
        free(dup);
        errno = e;
        return -1;
    }
    s->rf = rf;
    s->name = dup;
    s->refs = 1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_lock(&tab_mu);
    if (fd >= tab_cap) {
        int nc = tab_cap ? tab_cap : 64;
        while (nc <= fd)
            nc *= 2;
        shim_file **nt = realloc(tab, (size_t)nc * sizeof *nt);
        if (!nt) {
            pthread_mutex_unlock(&tab_mu);
            REAL(close, NULL)(fd);
            s->refs = 0;
            rfs_close(rf);
            pthread_mutex_destroy(&s->mu);
            free(dup);
            free(s);
            errno = ENOMEM;
            return -1;
        }
        memset(nt + tab_cap, 0, (size_t)(nc - tab_cap) * sizeof *nt);
        tab = nt;
        tab_cap = nc;
    }
    tab[fd] = s;
    __atomic_add_fetch(&tab_open, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&tab_mu);
    RFS_LOGD("mpiio posix: open %s read-only -> fd %d", rname, fd);
    return fd;
}

/* The common open path: rfs names directly; other names through the C library first. */
static int do_open(int dirfd, const char *path, int flags, mode_t mode, int at)
{
    char buf[SHIM_NAME_MAX];
    if (path && rfs_is_name(path))
        return shim_open(path, flags);
    int fd =
        at ? REAL(openat, NULL)(dirfd, path, flags, mode) : REAL(open, NULL)(path, flags, mode);
    if (fd >= 0 || errno != ENOENT || write_flags(flags))
        return fd;
    const char *rname = shim_rfs_name(path, 1, buf, sizeof buf);
    if (!rname)
        return fd;
    int r = shim_open(rname, flags);
    if (r < 0)
        errno = ENOENT; /* not there either: the local answer stands */
    return r;
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & (O_CREAT | __O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return do_open(AT_FDCWD, path, flags, mode, 0);
}

int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return do_open(AT_FDCWD, path, flags | O_LARGEFILE, mode, 0);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return do_open(dirfd, path, flags, mode, 1);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return do_open(dirfd, path, flags | O_LARGEFILE, mode, 1);
}

int __open_2(const char *path, int flags)
{
    return do_open(AT_FDCWD, path, flags, 0, 0);
}
int __open64_2(const char *path, int flags)
{
    return do_open(AT_FDCWD, path, flags | O_LARGEFILE, 0, 0);
}
int __openat_2(int dirfd, const char *path, int flags)
{
    return do_open(dirfd, path, flags, 0, 1);
}
int __openat64_2(int dirfd, const char *path, int flags)
{
    return do_open(dirfd, path, flags | O_LARGEFILE, 0, 1);
}

int close(int fd)
{
    shim_file *s = NULL;
    if (fd >= 0 && __atomic_load_n(&tab_open, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&tab_mu);
        if (fd < tab_cap && tab[fd]) {
            s = tab[fd];
            tab[fd] = NULL; /* out of the table before the number can be reused */
            __atomic_sub_fetch(&tab_open, 1, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&tab_mu);
    }
    int rc = REAL(close, NULL)(fd);
    if (s) {
        RFS_LOGD("mpiio posix: close fd %d (%s)", fd, s->name);
        file_put(s);
    }
    return rc;
}

/* Reads at off (pos when off < 0, advancing it). */
static ssize_t shim_read(shim_file *s, void *buf, size_t n, int64_t off)
{
    size_t done = 0;
    int rc;
    if (off >= 0) {
        rc = rfs_pread(s->rf, buf, n, (uint64_t)off, &done);
    } else {
        pthread_mutex_lock(&s->mu);
        rc = rfs_pread(s->rf, buf, n, s->pos, &done);
        s->pos += done;
        pthread_mutex_unlock(&s->mu);
    }
    file_put(s);
    if (rc != RFS_OK && done == 0) {
        errno = shim_errno_of(rc);
        return -1;
    }
    return (ssize_t)done;
}

ssize_t read(int fd, void *buf, size_t n)
{
    shim_file *s = file_get(fd);
    return s ? shim_read(s, buf, n, -1) : REAL(read, NULL)(fd, buf, n);
}

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    if (n > buflen)
        abort(); /* what the C library's checked version does on overflow */
    return read(fd, buf, n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    shim_file *s = file_get(fd);
    if (!s)
        return REAL(pread, NULL)(fd, buf, n, off);
    if (off < 0) {
        file_put(s);
        errno = EINVAL;
        return -1;
    }
    return shim_read(s, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
    shim_file *s = file_get(fd);
    if (!s)
        return REAL(pread64, NULL)(fd, buf, n, off);
    if (off < 0) {
        file_put(s);
        errno = EINVAL;
        return -1;
    }
    return shim_read(s, buf, n, off);
}

ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    if (n > buflen)
        abort();
    return pread(fd, buf, n, off);
}

ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen)
{
    if (n > buflen)
        abort();
    return pread64(fd, buf, n, off);
}

static off64_t shim_lseek(shim_file *s, off64_t off, int whence)
{
    off64_t res = -1;
    int err = 0;
    uint64_t size = 0;
    pthread_mutex_lock(&s->mu);
    if (whence == SEEK_END || whence == SEEK_DATA || whence == SEEK_HOLE) {
        int rc = rfs_get_size(s->rf, &size);
        if (rc != RFS_OK)
            err = shim_errno_of(rc);
    }
    if (!err) {
        int64_t base = whence == SEEK_SET   ? 0
                       : whence == SEEK_CUR ? (int64_t)s->pos
                       : whence == SEEK_END ? (int64_t)size
                                            : -1;
        if (whence == SEEK_DATA || whence == SEEK_HOLE) {
            /* No holes known: data up to the size, one hole after it. */
            if (off < 0 || (uint64_t)off >= size)
                err = ENXIO;
            else
                res = whence == SEEK_DATA ? off : (off64_t)size;
        } else if (base < 0 || (off > 0 && base > INT64_MAX - off) || base + off < 0) {
            err = EINVAL;
        } else {
            res = base + off;
        }
        if (!err)
            s->pos = (uint64_t)res;
    }
    pthread_mutex_unlock(&s->mu);
    file_put(s);
    if (err) {
        errno = err;
        return -1;
    }
    return res;
}

off_t lseek(int fd, off_t off, int whence)
{
    shim_file *s = file_get(fd);
    return s ? (off_t)shim_lseek(s, off, whence) : REAL(lseek, NULL)(fd, off, whence);
}

off64_t lseek64(int fd, off64_t off, int whence)
{
    shim_file *s = file_get(fd);
    return s ? shim_lseek(s, off, whence) : REAL(lseek64, NULL)(fd, off, whence);
}

/* ---- writes on our descriptors ----
 * The memfd behind a descriptor of ours is writable, so without these a write or ftruncate
 * would "succeed" on the memfd and change nothing remote. The descriptor stands for a file
 * opened read-only: refuse as the kernel does for one (EBADF; EINVAL for ftruncate). */

static int refuse_write(int fd, int err)
{
    shim_file *s = file_get(fd);
    if (!s)
        return 0;
    RFS_LOGD("mpiio posix: fd %d (%s) is read-only: write refused", fd, s->name);
    file_put(s);
    errno = err;
    return 1;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    return refuse_write(fd, EBADF) ? -1 : REAL(write, NULL)(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    return refuse_write(fd, EBADF) ? -1 : REAL(pwrite, NULL)(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    return refuse_write(fd, EBADF) ? -1 : REAL(pwrite64, NULL)(fd, buf, n, off);
}

int ftruncate(int fd, off_t len)
{
    return refuse_write(fd, EINVAL) ? -1 : REAL(ftruncate, NULL)(fd, len);
}

int ftruncate64(int fd, off64_t len)
{
    return refuse_write(fd, EINVAL) ? -1 : REAL(ftruncate64, NULL)(fd, len);
}

/* ---- stat family ---- */

/* Fills a struct stat (or stat64: same layout on 64-bit Linux) for an rfs object. */
static void fill_stat(struct stat *st, const char *rname, uint64_t size, uint32_t type,
                      uint32_t perm, int64_t mtime_ns)
{
    memset(st, 0, sizeof *st);
    unsigned h = 2166136261u;
    for (const char *p = rname; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    st->st_dev = 0x72667300u; /* "rfs": no local device */
    st->st_ino = h ? h : 1;
    st->st_mode = (type == RFS_TYPE_DIR ? S_IFDIR : S_IFREG) | (perm & 07777);
    st->st_nlink = 1;
    st->st_uid = getuid();
    st->st_gid = getgid();
    st->st_size = (off_t)size;
    st->st_blksize = 4096;
    st->st_blocks = (blkcnt_t)((size + 511) / 512);
    st->st_mtim.tv_sec = mtime_ns / 1000000000;
    st->st_mtim.tv_nsec = mtime_ns % 1000000000;
    st->st_atim = st->st_mtim;
    st->st_ctim = st->st_mtim;
}

static int shim_stat_name(const char *rname, struct stat *st)
{
    rfs_options o;
    shim_options(&o);
    rfs_stat_info info;
    int rc = rfs_stat(rname, &o, &info);
    if (rc != RFS_OK) {
        errno = shim_errno_of(rc);
        return -1;
    }
    fill_stat(st, rname, info.size, info.type, info.mode, info.mtime_ns);
    return 0;
}

static int shim_fstat(shim_file *s, struct stat *st)
{
    uint64_t size = 0;
    int rc = rfs_get_size(s->rf, &size);
    if (rc == RFS_OK)
        fill_stat(st, s->name, size, RFS_TYPE_FILE, 0444, 0);
    file_put(s);
    if (rc != RFS_OK) {
        errno = shim_errno_of(rc);
        return -1;
    }
    return 0;
}

/* stat/lstat of a name: `real` is the C library's answer (already computed); rfs names never
 * reach it. Returns the final result. */
#define STAT_BY_NAME(path, st, real_call)                              \
    do {                                                               \
        char buf_[SHIM_NAME_MAX];                                      \
        if (rfs_is_name(path)) /* NULL-safe */                         \
            return shim_stat_name((path), (struct stat *)(st));        \
        int r_ = (real_call);                                          \
        if (r_ == 0 || errno != ENOENT)                                \
            return r_;                                                 \
        const char *rn_ = shim_rfs_name((path), 1, buf_, sizeof buf_); \
        if (!rn_ || shim_stat_name(rn_, (struct stat *)(st)) != 0) {   \
            errno = ENOENT;                                            \
            return -1;                                                 \
        }                                                              \
        return 0;                                                      \
    } while (0)

_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "stat and stat64 differ here");

int stat(const char *path, struct stat *st)
{
    STAT_BY_NAME(path, st, REAL(stat, NULL)(path, st));
}
int stat64(const char *path, struct stat64 *st)
{
    STAT_BY_NAME(path, st, REAL(stat64, NULL)(path, st));
}
int lstat(const char *path, struct stat *st)
{
    STAT_BY_NAME(path, st, REAL(lstat, NULL)(path, st));
}
int lstat64(const char *path, struct stat64 *st)
{
    STAT_BY_NAME(path, st, REAL(lstat64, NULL)(path, st));
}

/* The pre-2.33 entry points: the old symbols where the C library still has them, else the new
 * ones (same struct on x86_64 and aarch64, the only _STAT_VER this library is built for). */
int __xstat(int ver, const char *path, struct stat *st)
{
    __typeof__(&__xstat) old = REAL(__xstat, "GLIBC_2.2.5");
    STAT_BY_NAME(path, st, old ? old(ver, path, st) : REAL(stat, NULL)(path, st));
}

int __xstat64(int ver, const char *path, struct stat64 *st)
{
    __typeof__(&__xstat64) old = REAL(__xstat64, "GLIBC_2.2.5");
    STAT_BY_NAME(path, st, old ? old(ver, path, st) : REAL(stat64, NULL)(path, st));
}

int __lxstat(int ver, const char *path, struct stat *st)
{
    __typeof__(&__lxstat) old = REAL(__lxstat, "GLIBC_2.2.5");
    STAT_BY_NAME(path, st, old ? old(ver, path, st) : REAL(lstat, NULL)(path, st));
}

int __lxstat64(int ver, const char *path, struct stat64 *st)
{
    __typeof__(&__lxstat64) old = REAL(__lxstat64, "GLIBC_2.2.5");
    STAT_BY_NAME(path, st, old ? old(ver, path, st) : REAL(lstat64, NULL)(path, st));
}

int fstat(int fd, struct stat *st)
{
    shim_file *s = file_get(fd);
    return s ? shim_fstat(s, st) : REAL(fstat, NULL)(fd, st);
}

int fstat64(int fd, struct stat64 *st)
{
    shim_file *s = file_get(fd);
    return s ? shim_fstat(s, (struct stat *)st) : REAL(fstat64, NULL)(fd, st);
}

int __fxstat(int ver, int fd, struct stat *st)
{
    shim_file *s = file_get(fd);
    if (s)
        return shim_fstat(s, st);
    __typeof__(&__fxstat) old = REAL(__fxstat, "GLIBC_2.2.5");
    return old ? old(ver, fd, st) : REAL(fstat, NULL)(fd, st);
}

int __fxstat64(int ver, int fd, struct stat64 *st)
{
    shim_file *s = file_get(fd);
    if (s)
        return shim_fstat(s, (struct stat *)st);
    __typeof__(&__fxstat64) old = REAL(__fxstat64, "GLIBC_2.2.5");
    return old ? old(ver, fd, st) : REAL(fstat64, NULL)(fd, st);
}

/* ---- access ---- */

static int shim_access(const char *rname, int how)
{
    struct stat st;
    if (shim_stat_name(rname, &st) != 0)
        return -1;
    /* W_OK by the permission bits too: the name is writable through MPI-IO, truncate(),
     * unlink() and rename(), even though open() for writing is refused. */
    if (((how & R_OK) && !(st.st_mode & 0444)) || ((how & W_OK) && !(st.st_mode & 0222)) ||
        ((how & X_OK) && !(st.st_mode & 0111))) {
        errno = EACCES;
        return -1;
    }
    return 0;
}

static int do_access(int dirfd, const char *path, int how, int flags, int at)
{
    char buf[SHIM_NAME_MAX];
    if (path && rfs_is_name(path))
        return shim_access(path, how);
    int r = at ? REAL(faccessat, NULL)(dirfd, path, how, flags) : REAL(access, NULL)(path, how);
    if (r == 0 || errno != ENOENT)
        return r;
    const char *rname = shim_rfs_name(path, 1, buf, sizeof buf);
    if (!rname)
        return r;
    int saved = errno;
    r = shim_access(rname, how);
    if (r != 0 && errno != EACCES)
        errno = saved; /* not there either: the local answer stands */
    return r;
}

int access(const char *path, int how)
{
    return do_access(AT_FDCWD, path, how, 0, 0);
}
int faccessat(int dirfd, const char *path, int how, int flags)
{
    return do_access(dirfd, path, how, flags, 1);
}
