/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "confine.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/err.h"

int rfsd_path_from_wire(const rfs_wpath *w, rfsd_path *p)
{
    if (!w->s || w->len == 0)
        return rfs_fail(RFS_E_INVAL, "empty path");
    if (w->len > RFS_MAX_PATH)
        return rfs_fail(RFS_E_NAME, "path of %u bytes (limit %u)", w->len, RFS_MAX_PATH);
    if (memchr(w->s, '\0', w->len))
        return rfs_fail(RFS_E_INVAL, "path contains a NUL byte");
    memcpy(p->shown, w->s, w->len);
    p->shown[w->len] = '\0';
    /* the kernel would say ENAMETOOLONG without the limit; say it here */
    for (const char *q = p->shown; *q;) {
        size_t comp = strcspn(q, "/");
        if (comp > RFS_MAX_NAME)
            return rfs_fail(RFS_E_NAME, "path component of %zu bytes (limit %u)", comp,
                            RFS_MAX_NAME);
        q += comp;
        q += *q == '/';
    }
    const char *s = p->shown;
    while (*s == '/')
        s++; /* absolute client paths are relative to the export root */
    if (!*s)
        s = ".";
    strcpy(p->rel, s);
    return RFS_OK;
}

int rfsd_path_fail(const rfsd_path *p, const char *what, int e)
{
    if (e == EXDEV)
        return rfs_fail(RFS_E_ACCESS, "%s: path escapes the export root (refused)", p->shown);
    if (e == ELOOP)
        return rfs_fail(RFS_E_ACCESS, "%s: too many or forbidden symbolic links", p->shown);
    if (e == ENXIO)
        return rfs_fail(RFS_E_INVAL, "%s: not a regular file", p->shown);
    return rfs_fail(rfs_err_from_errno(e), "%s: %s: %s", p->shown, what, strerror(e));
}

static int openat2_beneath(int dir_fd, const char *rel, int flags, mode_t mode)
{
    struct open_how how;
    memset(&how, 0, sizeof how);
    /* openat2 refuses flags that O_PATH ignores, so O_NOCTTY only goes with real opens */
    how.flags = (uint64_t)(flags | O_CLOEXEC | ((flags & O_PATH) ? 0 : O_NOCTTY));
    how.mode = (flags & O_CREAT) ? (mode & 07777) : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    for (int attempt = 0; attempt < 8; attempt++) {
        long fd = syscall(SYS_openat2, dir_fd, rel, &how, sizeof how);
        if (fd >= 0)
            return (int)fd;
        /* EAGAIN: a concurrent rename somewhere on the machine made the kernel unsure the walk
         * stayed beneath; retrying is the documented answer. */
        if (errno != EAGAIN && errno != EINTR)
            return -1;
    }
    return -1;
}

int rfsd_open_beneath(int root_fd, const rfsd_path *p, int flags, mode_t mode, int *fd_out)
{
    int fd = openat2_beneath(root_fd, p->rel, flags, mode);
    if (fd < 0)
        return rfsd_path_fail(p, "open", errno);
    *fd_out = fd;
    return RFS_OK;
}

int rfsd_open_parent(int root_fd, rfsd_path *p, int *dir_fd, const char **last)
{
    char *rel = p->rel;
    size_t n = strlen(rel);
    while (n > 1 && rel[n - 1] == '/')
        rel[--n] = '\0';
    char *slash = strrchr(rel, '/');
    const char *name = slash ? slash + 1 : rel;
    if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
        return rfs_fail(RFS_E_INVAL,
                        "%s: the last path component must name an entry "
                        "(not '', '.' or '..')",
                        p->shown);
    const char *parent = ".";
    if (slash) {
        *slash = '\0';
        parent = rel[0] ? rel : ".";
    }
    int fd = openat2_beneath(root_fd, parent, O_PATH | O_DIRECTORY, 0);
    if (fd < 0) {
        int e = errno;
        if (slash)
            *slash = '/';
        return rfsd_path_fail(p, "open parent directory", e);
    }
    *dir_fd = fd;
    *last = name;
    return RFS_OK;
}
