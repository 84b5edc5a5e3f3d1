/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Audit lines. Each is built in memory and written with one write(2) on an O_APPEND
 * descriptor, so lines of concurrent workers never interleave. Client paths are quoted with
 * '"', '\\' and bytes outside printable ASCII escaped as \xHH: a hostile file name cannot
 * forge a line or send escape sequences to whoever reads the log. */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "conn.h"

static int enabled;
static const char *file;
static int fd = -1;
static pthread_rwlock_t fd_lock = PTHREAD_RWLOCK_INITIALIZER; /* a reopen waits for writes */

#define LINE_MAX_BYTES 12288

int rfsd_audit_start(const rfsd_config *cfg)
{
    file = cfg->audit_log;
    enabled = file || cfg->audit;
    if (!file)
        return 0;
    fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "rfsd: --audit-log %s: %s\n", file, strerror(errno));
        return -1;
    }
    return 0;
}

void rfsd_audit_reopen(void)
{
    if (!file)
        return;
    int nfd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (nfd < 0) {
        RFS_LOGE("SIGHUP: reopening the audit log %s: %s; still writing to the old one", file,
                 strerror(errno));
        return;
    }
    pthread_rwlock_wrlock(&fd_lock);
    int old = fd;
    fd = nfd;
    pthread_rwlock_unlock(&fd_lock);
    close(old);
}

void rfsd_audit_stop(void)
{
    if (fd >= 0)
        close(fd);
    fd = -1;
    enabled = 0;
}

typedef struct line {
    char buf[LINE_MAX_BYTES];
    size_t n;
} line;

static void put(line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(line *l, const char *fmt, ...)
{
    if (l->n >= sizeof l->buf)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(l->buf + l->n, sizeof l->buf - l->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        l->n += (size_t)k < sizeof l->buf - l->n ? (size_t)k : sizeof l->buf - l->n - 1;
}

static void put_quoted(line *l, const char *key, const char *s, size_t len)
{
    put(l, " %s=\"", key);
    for (size_t i = 0; i < len && l->n + 8 < sizeof l->buf; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            put(l, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            put(l, "\\x%02x", ch);
        else
            l->buf[l->n++] = (char)ch;
    }
    put(l, "\"");
}

static void start_line(line *l, const char *identity, const char *peer)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    l->n = 0;
    put(l, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ identity=%s peer=%s", tm.tm_year + 1900,
        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000, identity,
        peer);
}

static void emit(line *l)
{
    if (l->n >= sizeof l->buf - 1)
        l->n = sizeof l->buf - 2;
    if (fd < 0) {
        l->buf[l->n] = '\0';
        RFS_LOGI("audit: %s", l->buf);
        return;
    }
    l->buf[l->n++] = '\n';
    pthread_rwlock_rdlock(&fd_lock);
    ssize_t w = write(fd, l->buf, l->n);
    pthread_rwlock_unlock(&fd_lock);
    if (w != (ssize_t)l->n)
        RFS_LOGE("audit log %s: %s", file, w < 0 ? strerror(errno) : "short write");
}

static const char *result_name(int rc)
{
    static const char *const names[] = {
        "ok",    "NOENT",  "EXIST",       "ACCESS", "AUTH",  "ROFS",    "INVAL",   "NOSPC",
        "ISDIR", "NOTDIR", "NOTEMPTY",    "IO",     "PROTO", "CONN",    "TIMEOUT", "TOOBIG",
        "NOMEM", "BADF",   "UNSUPPORTED", "BUSY",   "NAME",  "VERSION", "FBIG",    "DQUOT"};
    unsigned i = (unsigned)-rc;
    return i < sizeof names / sizeof names[0] ? names[i] : "error";
}

void rfsd_audit_auth(const char *peer, const char *identity)
{
    if (!enabled)
        return;
    line l;
    start_line(&l, identity ? identity : "-", peer);
    put(&l, " op=AUTH result=%s", identity ? "ok" : "AUTH");
    emit(&l);
}

static void open_flags(line *l, uint32_t f)
{
    static const char *const acc[] = {"?", "r", "w", "rw"};
    put(l, " flags=%s%s%s%s%s", acc[f & RFS_O_ACCMODE], f & RFS_O_CREAT ? ",create" : "",
        f & RFS_O_EXCL ? ",excl" : "", f & RFS_O_TRUNC ? ",trunc" : "",
        f & RFS_O_APPEND ? ",append" : "");
}

void rfsd_audit_request(const rfsd_conn *c, const rfs_req *q, int rc)
{
    if (!enabled)
        return;
    if (!rfs_op_has(q->op, RFS_OPF_AUDITED))
        return;
    const rfs_wpath *p = NULL, *to = NULL;
    switch (q->op) { /* the paths it names */
    case RFS_OP_OPEN: p = &q->u.open.path; break;
    case RFS_OP_DELETE: p = &q->u.path.path; break;
    case RFS_OP_RENAME:
        p = &q->u.rename.from;
        to = &q->u.rename.to;
        break;
    case RFS_OP_MKDIR:
    case RFS_OP_CHMOD: p = &q->u.mkdir.path; break;
    case RFS_OP_WRITE_FILE: p = &q->u.write_file.path; break;
    case RFS_OP_READ_FILE: p = &q->u.read_file.path; break;
    case RFS_OP_TPC_GRANT: p = &q->u.tpc_grant.path; break; /* a read capability */
    case RFS_OP_CAP_ISSUE: p = &q->u.cap_issue.path; break; /* a signed capability */
    case RFS_OP_CAP_REVOKE: p = &q->u.cap.str; break;       /* the capability revoked */
    case RFS_OP_OBJ_LEASE: p = &q->u.obj_lease.path; break; /* an object kept until */
    case RFS_OP_TPC_PULL:
        p = &q->u.tpc_pull.dst;
        to = NULL;
        break; /* a file written */
    default: return;
    }
    line l;
    start_line(&l, c->who.name, c->peer);
    put(&l, " op=%s", rfs_op_name(q->op));
    if (q->op == RFS_OP_OPEN)
        open_flags(&l, q->u.open.flags);
    put_quoted(&l, "path", p->s, p->len);
    if (to)
        put_quoted(&l, "to", to->s, to->len);
    if (q->op == RFS_OP_TPC_PULL) { /* where from: the outgoing connection it asks for */
        put_quoted(&l, "from_host", q->u.tpc_pull.host.s, q->u.tpc_pull.host.len);
        put(&l, " from_port=%u", q->u.tpc_pull.port);
        put_quoted(&l, "from", q->u.tpc_pull.src.s, q->u.tpc_pull.src.len);
    }
    put(&l, " result=%s", result_name(rc));
    if (rc) {
        const char *m = rfs_last_error();
        put_quoted(&l, "msg", m, strlen(m));
    }
    emit(&l);
}
