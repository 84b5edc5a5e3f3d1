/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/err.h"
#include "common/fullio.h"
#include "proto/proto.h"

#define OFF_MAX ((uint64_t)INT64_MAX)

static int fd_fail(const char *shown, const char *what, int e)
{
    return rfs_fail(rfs_err_from_errno(e), "%s: %s: %s", shown, what, strerror(e));
}

static int range_ok(const char *shown, uint64_t off, uint64_t len)
{
    if (off > OFF_MAX || len > OFF_MAX - off)
        return rfs_fail(RFS_E_FBIG, "%s: range [%llu, +%llu) beyond the largest file offset", shown,
                        (unsigned long long)off, (unsigned long long)len);
    return RFS_OK;
}

int rfsd_be_open(int root_fd, const rfsd_path *p, uint32_t flags, uint32_t mode, int *fd_out,
                 struct stat *st)
{
    const uint32_t known = RFS_O_ACCMODE | RFS_O_CREAT | RFS_O_EXCL | RFS_O_TRUNC | RFS_O_APPEND;
    if (flags & ~known)
        return rfs_fail(RFS_E_INVAL, "%s: unknown open flags 0x%x", p->shown, flags & ~known);
    int of;
    switch (flags & RFS_O_ACCMODE) {
    case RFS_O_RDONLY: of = O_RDONLY; break;
    case RFS_O_WRONLY: of = O_WRONLY; break;
    case RFS_O_RDWR: of = O_RDWR; break;
    default:
        return rfs_fail(RFS_E_INVAL, "%s: open needs one of read-only, write-only, read-write",
                        p->shown);
    }
    if ((flags & RFS_O_EXCL) && !(flags & RFS_O_CREAT))
        return rfs_fail(RFS_E_INVAL, "%s: exclusive open without create", p->shown);
    if ((flags & (RFS_O_TRUNC | RFS_O_APPEND)) && (flags & RFS_O_ACCMODE) == RFS_O_RDONLY)
        return rfs_fail(RFS_E_INVAL, "%s: truncate/append on a read-only open", p->shown);
    if (flags & RFS_O_CREAT)
        of |= O_CREAT;
    if (flags & RFS_O_EXCL)
        of |= O_EXCL;
    if (flags & RFS_O_APPEND)
        of |= O_APPEND;
    /* O_NONBLOCK: opening a FIFO placed in the export must not park a worker forever.
     * O_TRUNC is applied only after the type check below. */
    int fd, rc = rfsd_open_beneath(root_fd, p, of | O_NONBLOCK, mode ? mode : 0644, &fd);
    if (rc)
        return rc;
    if (fstat(fd, st)) {
        rc = rfsd_path_fail(p, "stat", errno);
        close(fd);
        return rc;
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        if (S_ISDIR(st->st_mode))
            return rfs_fail(RFS_E_ISDIR, "%s: is a directory", p->shown);
        return rfs_fail(RFS_E_INVAL, "%s: not a regular file", p->shown);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if ((flags & RFS_O_TRUNC) && st->st_size > 0) {
        if (ftruncate(fd, 0)) {
            rc = rfsd_path_fail(p, "truncate", errno);
            close(fd);
            return rc;
        }
        st->st_size = 0;
    }
    *fd_out = fd;
    return RFS_OK;
}

int rfsd_be_pread(int fd, const char *shown, void *buf, size_t len, uint64_t off, size_t *done)
{
    int rc = range_ok(shown, off, len);
    *done = 0;
    if (rc)
        return rc;
    ssize_t got = rfs_pread_full(fd, buf, len, off); /* short only at end of file */
    if (got < 0)
        return fd_fail(shown, "read", errno);
    *done = (size_t)got;
    return RFS_OK;
}

int rfsd_be_readable(int fd, const char *shown, size_t len, uint64_t off, size_t *avail)
{
    int rc = range_ok(shown, off, len);
    *avail = 0;
    if (rc)
        return rc;
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return fd_fail(shown, "stat", errno);
    uint64_t size = (uint64_t)sb.st_size;
    if (off < size)
        *avail = size - off < len ? (size_t)(size - off) : len;
    return RFS_OK;
}

/* A full disk often lets part of a write land: the reply says how much, so nobody takes the
 * request for all-or-nothing (the client reports the whole write as failed either way). */
static int write_fail(const char *shown, size_t len, uint64_t off, size_t put, int e)
{
    return rfs_fail(rfs_err_from_errno(e),
                    "%s: write of %zu bytes at offset %llu: %s (%zu bytes "
                    "landed before the error)",
                    shown, len, (unsigned long long)off, strerror(e), put);
}

/* Big enough to amortise the read calls, small enough that many concurrent CHECKSUMs do not
 * add up to much memory (the request itself may cover 1 GiB). */
#define CHECKSUM_BUF ((size_t)1 << 20)

int rfsd_be_checksum(int fd, const char *shown, uint64_t off, uint64_t len, uint32_t seed,
                     uint32_t *crc, uint64_t *done)
{
    *crc = seed;
    *done = 0;
    int rc = range_ok(shown, off, len);
    if (rc)
        return rc;
    uint8_t *buf = malloc(len < CHECKSUM_BUF ? (size_t)len + 1 : CHECKSUM_BUF);
    if (!buf)
        return rfs_fail(RFS_E_NOMEM, "%s: server out of memory", shown);
    while (*done < len) {
        size_t want = len - *done < CHECKSUM_BUF ? (size_t)(len - *done) : CHECKSUM_BUF;
        ssize_t got = rfs_pread_full(fd, buf, want, off + *done);
        if (got < 0) {
            rc = fd_fail(shown, "read", errno);
            break;
        }
        *crc = rfs_crc32c(*crc, buf, (size_t)got);
        *done += (uint64_t)got;
        if ((size_t)got < want)
            break; /* end of file */
    }
    free(buf);
    return rc;
}

int rfsd_be_pwrite(int fd, const char *shown, const void *buf, size_t len, uint64_t off)
{
    int rc = range_ok(shown, off, len);
    if (rc)
        return rc;
    size_t put = 0;
    while (put < len) {
        ssize_t n = pwrite(fd, (const char *)buf + put, len - put, (off_t)(off + put));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return write_fail(shown, len, off, put, n == 0 ? EIO : errno);
        put += (size_t)n;
    }
    return RFS_OK;
}

int rfsd_be_sync(int fd, const char *shown)
{
    if (fsync(fd))
        return fd_fail(shown, "fsync", errno);
    return RFS_OK;
}

int rfsd_be_get_size(int fd, const char *shown, uint64_t *size)
{
    struct stat st;
    if (fstat(fd, &st))
        return fd_fail(shown, "stat", errno);
    *size = (uint64_t)st.st_size;
    return RFS_OK;
}

int rfsd_be_set_size(int fd, const char *shown, uint64_t size)
{
    int rc = range_ok(shown, size, 0);
    if (rc)
        return rc;
    if (ftruncate(fd, (off_t)size))
        return fd_fail(shown, "set size", errno);
    return RFS_OK;
}

int rfsd_be_preallocate(int fd, const char *shown, uint64_t size)
{
    int rc = range_ok(shown, size, 0);
    if (rc || size == 0)
        return rc;
    /* posix_fallocate only ever grows: blocks up to size, file size at least size */
    int e = posix_fallocate(fd, 0, (off_t)size);
    if (e)
        return fd_fail(shown, "preallocate", e);
    return RFS_OK;
}

static void fill_stat(const struct stat *s, rfs_stat_info *st)
{
    st->size = (uint64_t)s->st_size;
    st->mode = (uint32_t)(s->st_mode & 07777);
    st->type = S_ISREG(s->st_mode)   ? RFS_TYPE_FILE
               : S_ISDIR(s->st_mode) ? RFS_TYPE_DIR
                                     : RFS_TYPE_OTHER;
    st->mtime_ns = (int64_t)s->st_mtim.tv_sec * 1000000000LL + s->st_mtim.tv_nsec;
}

int rfsd_be_stat(int root_fd, const rfsd_path *p, rfs_stat_info *st)
{
    /* O_PATH + fstat rather than fstatat on the parent: a symlink is followed, but only
     * beneath the root. */
    int fd, rc = rfsd_open_beneath(root_fd, p, O_PATH, 0, &fd);
    if (rc)
        return rc;
    struct stat s;
    if (fstat(fd, &s))
        rc = rfsd_path_fail(p, "stat", errno);
    else
        fill_stat(&s, st);
    close(fd);
    return rc;
}

int rfsd_be_delete(int root_fd, rfsd_path *p)
{
    int dfd;
    const char *name;
    int rc = rfsd_open_parent(root_fd, p, &dfd, &name);
    if (rc)
        return rc;
    if (unlinkat(dfd, name, 0)) {
        int e = errno;
        if (e == EISDIR && unlinkat(dfd, name, AT_REMOVEDIR) == 0)
            e = 0;
        else if (e == EISDIR)
            e = errno;
        if (e)
            rc = rfsd_path_fail(p, "delete", e);
    }
    close(dfd);
    return rc;
}

int rfsd_be_rename(int root_fd, rfsd_path *from, rfsd_path *to)
{
    int fdir, tdir;
    const char *fname, *tname;
    int rc = rfsd_open_parent(root_fd, from, &fdir, &fname);
    if (rc)
        return rc;
    rc = rfsd_open_parent(root_fd, to, &tdir, &tname);
    if (rc) {
        close(fdir);
        return rc;
    }
    if (renameat(fdir, fname, tdir, tname)) {
        int e = errno;
        rc = rfs_fail(e == EXDEV ? RFS_E_INVAL : rfs_err_from_errno(e), "rename %s -> %s: %s",
                      from->shown, to->shown, strerror(e));
    }
    close(fdir);
    close(tdir);
    return rc;
}

int rfsd_be_mkdir(int root_fd, rfsd_path *p, uint32_t mode)
{
    int dfd;
    const char *name;
    int rc = rfsd_open_parent(root_fd, p, &dfd, &name);
    if (rc)
        return rc;
    if (mkdirat(dfd, name, (mode_t)(mode ? mode & 07777 : 0755)))
        rc = rfsd_path_fail(p, "mkdir", errno);
    close(dfd);
    return rc;
}

int rfsd_be_mkdir_parents(int root_fd, const rfsd_path *p, uint32_t mode)
{
    /* Each ancestor is made like any directory (its parent opened beneath the root, the last
     * component never followed), so a path can climb out no more than a plain MKDIR can. One
     * that exists already, or that another request makes meanwhile, is fine; one that is not a
     * directory fails the next step with ENOTDIR. */
    for (const char *s = strchr(p->rel, '/'); s; s = strchr(s + 1, '/')) {
        rfsd_path a = *p;
        a.rel[s - p->rel] = '\0';
        int rc = rfsd_be_mkdir(root_fd, &a, mode);
        if (rc == RFS_E_EXIST)
            rfs_clear_error();
        else if (rc)
            return rc;
    }
    rfsd_path last = *p;
    return rfsd_be_mkdir(root_fd, &last, mode);
}

int rfsd_be_list(int root_fd, const rfsd_path *p, uint32_t start, uint8_t *out, size_t cap,
                 size_t *used, uint32_t *count, uint32_t *next)
{
    int fd, rc = rfsd_open_beneath(root_fd, p, O_RDONLY | O_DIRECTORY, 0, &fd);
    if (rc)
        return rc;
    DIR *d = fdopendir(fd);
    if (!d) {
        rc = rfsd_path_fail(p, "list", errno);
        close(fd);
        return rc;
    }
    *used = 0;
    *count = 0;
    *next = 0;
    uint32_t index = 0;
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (index++ < start)
            continue;
        if (*count >= RFS_LIST_MAX_ENTRIES) {
            *next = index - 1;
            break;
        }
        rfs_list_entry e = {0};
        struct stat s;
        /* the entry itself, never followed: a symlink shows as "other" */
        if (fstatat(dirfd(d), de->d_name, &s, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* vanished meanwhile */
        rfs_stat_info si;
        fill_stat(&s, &si);
        size_t nlen = strlen(de->d_name);
        e.name.s = de->d_name;
        e.name.len = (uint16_t)(nlen > RFS_MAX_PATH ? RFS_MAX_PATH : nlen);
        e.type = si.type;
        e.mode = si.mode;
        e.size = si.size;
        e.mtime_ns = si.mtime_ns;
        size_t n = rfs_list_entry_encode(&e, out + *used, cap - *used);
        if (n == 0) {
            if (*count == 0) {
                rc =
                    rfs_fail(RFS_E_TOOBIG, "%s: directory entry does not fit in a frame", p->shown);
                break;
            }
            *next = index - 1;
            break;
        }
        *used += n;
        (*count)++;
        errno = 0;
    }
    if (!rc && !de && errno)
        rc = rfsd_path_fail(p, "list", errno);
    closedir(d);
    return rc;
}

int rfsd_be_chmod(int root_fd, const rfsd_path *p, uint32_t mode,
                  uint32_t (*guard)(const void *cfg, uint32_t mode, int is_dir), const void *cfg)
{
    /* Resolved beneath the root as an O_PATH descriptor, then changed through its /proc link:
     * fchmodat on the parent would follow a final symbolic link out of the export. */
    int fd, rc = rfsd_open_beneath(root_fd, p, O_PATH, 0, &fd);
    if (rc)
        return rc;
    struct stat sb;
    char link[64];
    if (fstat(fd, &sb) != 0) {
        rc = rfsd_path_fail(p, "chmod", errno);
    } else {
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        if (chmod(link, (mode_t)guard(cfg, mode, S_ISDIR(sb.st_mode))) != 0)
            rc = rfsd_path_fail(p, "chmod", errno);
    }
    close(fd);
    return rc;
}

int rfsd_be_statfs(int root_fd, const rfsd_path *p, uint64_t *total, uint64_t *free_bytes,
                   uint64_t *avail, uint64_t *files, uint64_t *files_free)
{
    int fd, rc = rfsd_open_beneath(root_fd, p, O_PATH, 0, &fd);
    if (rc)
        return rc;
    struct statvfs v;
    if (fstatvfs(fd, &v) != 0) {
        rc = rfsd_path_fail(p, "statfs", errno);
    } else {
        uint64_t unit = v.f_frsize ? v.f_frsize : v.f_bsize;
        *total = (uint64_t)v.f_blocks * unit;
        *free_bytes = (uint64_t)v.f_bfree * unit;
        *avail = (uint64_t)v.f_bavail * unit;
        *files = (uint64_t)v.f_files;
        *files_free = (uint64_t)v.f_ffree;
        if (*avail > *free_bytes)
            *avail = *free_bytes;
        if (*files_free > *files)
            *files_free = *files;
    }
    close(fd);
    return rc;
}

/* Writes all of data to fd from offset 0. 0 or an errno value. */
static int write_whole(int fd, const uint8_t *data, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(fd, data + done, len - done, (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        done += (size_t)n;
    }
    return 0;
}

int rfsd_be_write_file(int root_fd, rfsd_path *p, uint32_t mode, int excl, int sync,
                       const void *data, size_t len)
{
    int dfd;
    const char *name;
    int rc = rfsd_open_parent(root_fd, p, &dfd, &name);
    if (rc)
        return rc;
    /* The temporary name is unique per attempt and hidden; a crash leaves at most one such
     * file behind, never a half-written target. */
    char tmp[300];
    static _Atomic unsigned long seq;
    snprintf(tmp, sizeof tmp, ".%.200s.rfs-wf-%ld-%lu", name, (long)getpid(), (unsigned long)++seq);
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    (mode_t)(mode ? mode & 07777 : 0644));
    if (fd < 0) {
        rc = rfsd_path_fail(p, "write_file: create", errno);
        close(dfd);
        return rc;
    }
    int e = write_whole(fd, data, len);
    if (!e && sync && fdatasync(fd) != 0)
        e = errno;
    if (close(fd) != 0 && !e)
        e = errno;
    if (!e && renameat2(dfd, tmp, dfd, name, excl ? RENAME_NOREPLACE : 0) != 0)
        e = errno;
    if (e) {
        unlinkat(dfd, tmp, 0);
        rc = rfsd_path_fail(p, "write_file", e);
    } else if (sync) {
        /* The rename itself reaches the disk with the directory. */
        int dir = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir >= 0) {
            if (fsync(dir) != 0)
                rc = rfsd_path_fail(p, "write_file: sync directory", errno);
            close(dir);
        }
    }
    close(dfd);
    return rc;
}

int rfsd_be_read_file(int root_fd, const rfsd_path *p, uint32_t max, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    int fd, rc = rfsd_open_beneath(root_fd, p, O_RDONLY, 0, &fd);
    if (rc)
        return rc;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        rc = rfsd_path_fail(p, "read_file", errno);
    } else if (!S_ISREG(sb.st_mode)) {
        rc = rfs_fail(S_ISDIR(sb.st_mode) ? RFS_E_ISDIR : RFS_E_INVAL, "%s: not a regular file",
                      p->shown);
    } else if ((uint64_t)sb.st_size > max) {
        rc = rfs_fail(RFS_E_TOOBIG, "%s: %lld bytes, over the %u asked for at most", p->shown,
                      (long long)sb.st_size, max);
    } else {
        size_t want = (size_t)sb.st_size, got = 0;
        uint8_t *buf = malloc(want ? want : 1);
        if (!buf)
            rc = rfs_fail(RFS_E_NOMEM, "%s: out of memory reading %zu bytes", p->shown, want);
        /* A file that shrank meanwhile is sent as it is now; one that grew, up to its size at
         * the fstat (what a reader that opened it then would have seen). */
        while (buf && got < want) {
            ssize_t n = pread(fd, buf + got, want - got, (off_t)got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                rc = rfsd_path_fail(p, "read_file", errno);
                break;
            }
            if (n == 0)
                break;
            got += (size_t)n;
        }
        if (rc)
            free(buf);
        else {
            *out = buf;
            *len = got;
        }
    }
    close(fd);
    return rc;
}
