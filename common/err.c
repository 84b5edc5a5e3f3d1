/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_msg[RFS_ERRMSG_MAX];

static const char *const messages[RFS_ERR_COUNT] = {
    [0] = "success",
    [1] = "no such file or directory",
    [2] = "file exists",
    [3] = "permission denied",
    [4] = "authentication failed",
    [5] = "file or export is read-only",
    [6] = "invalid argument",
    [7] = "no space left on server",
    [8] = "is a directory",
    [9] = "not a directory",
    [10] = "directory not empty",
    [11] = "I/O error on server",
    [12] = "protocol error",
    [13] = "connection failed or lost",
    [14] = "timed out",
    [15] = "length over protocol limit",
    [16] = "out of memory",
    [17] = "bad file handle",
    [18] = "operation not supported",
    [19] = "byte range is locked",
    [20] = "malformed rfs name",
    [21] = "no common protocol version",
    [22] = "offset or size out of range",
    [23] = "quota exceeded",
};

const char *rfs_strerror(int err)
{
    int i = -err;
    if (i < 0 || i >= RFS_ERR_COUNT || !messages[i])
        return "unknown error";
    return messages[i];
}

const char *rfs_last_error(void)
{
    return last_msg;
}

void rfs_clear_error(void)
{
    last_msg[0] = '\0';
}

int rfs_fail(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_msg, sizeof last_msg, fmt, ap);
    va_end(ap);
    return err;
}

int rfs_status_save(rfs_status *st, int rc)
{
    st->rc = rc;
    size_t n = strnlen(last_msg, sizeof st->msg - 1);
    memcpy(st->msg, last_msg, n);
    st->msg[n] = '\0';
    return rc;
}

int rfs_fail_cause(int err, const char *fmt, ...)
{
    rfs_status cause;
    rfs_status_save(&cause, err);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(last_msg, sizeof last_msg, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof last_msg)
        snprintf(last_msg + n, sizeof last_msg - (size_t)n, ": %s", cause.msg);
    return err;
}

int rfs_status_first(rfs_status *st, int rc)
{
    if (st->rc == RFS_OK && rc != RFS_OK)
        rfs_status_save(st, rc);
    return st->rc;
}

int rfs_status_raise(const rfs_status *st)
{
    size_t n = strnlen(st->msg, sizeof last_msg - 1);
    memmove(last_msg, st->msg, n);
    last_msg[n] = '\0';
    return st->rc;
}

int rfs_err_from_wire(unsigned status)
{
    if (status == 0)
        return RFS_OK;
    if (status >= RFS_ERR_COUNT)
        return RFS_E_IO;
    return -(int)status;
}

int rfs_err_from_errno(int e)
{
    switch (e) {
    case 0: return RFS_OK;
    case ENOENT: return RFS_E_NOENT;
    case EEXIST: return RFS_E_EXIST;
    case EACCES:
    case EPERM:
    case EXDEV:
    case ELOOP: return RFS_E_ACCESS;
    case EROFS:
    case EBADF: return e == EROFS ? RFS_E_ROFS : RFS_E_BADF;
    case EINVAL: return RFS_E_INVAL;
    case ENAMETOOLONG: return RFS_E_NAME;
    case ENOSPC: return RFS_E_NOSPC;
    case EDQUOT: return RFS_E_DQUOT;
    case EISDIR: return RFS_E_ISDIR;
    case ENOTDIR: return RFS_E_NOTDIR;
    case ENOTEMPTY: return RFS_E_NOTEMPTY;
    case ENOMEM: return RFS_E_NOMEM;
    case EFBIG:
    case EOVERFLOW: return RFS_E_FBIG;
    case ETIMEDOUT: return RFS_E_TIMEOUT;
    case ECONNREFUSED:
    case ECONNRESET:
    case EPIPE:
    case EHOSTUNREACH:
    case ENETUNREACH: return RFS_E_CONN;
    case EOPNOTSUPP: return RFS_E_UNSUPPORTED;
    default: return RFS_E_IO;
    }
}
