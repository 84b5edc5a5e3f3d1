/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Request execution on a worker thread: one function per op, each ending in exactly one reply. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zreply.h"
#include "audit.h"
#include "capability.h"
#include "obj_lease.h"
#include "backend.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "conn.h"
#include "fs_shared.h"
#include "coll.h"
#include "exports.h"
#include "metrics.h"
#include "quota.h"
#include "session.h"
#include "fdlimit.h"
#include "guard.h"
#include "list_tree.h"
#include "tpc_grant.h"
#include "tpc_pull.h"
#include "wire.h"

int rfsd_op_is_quick(const rfs_req *r)
{
    if (rfs_op_has(r->op, RFS_OPF_QUICK))
        return 1;
    switch (r->op) { /* data ops: quick when their bytes are few */
    case RFS_OP_PREAD: return r->u.pread.len <= RFSD_QUICK_MAX_BYTES;
    case RFS_OP_VIEW_READ: return r->u.view_read.len <= RFSD_QUICK_MAX_BYTES;
    case RFS_OP_PWRITE:
    case RFS_OP_VIEW_WRITE: return r->data_len <= RFSD_QUICK_MAX_BYTES;
    default: return 0;
    }
}

int rfsd_op_handle(const rfs_req *r, uint32_t *fh)
{
    if (!rfs_op_has(r->op, RFS_OPF_HANDLE))
        return 0;
    switch (r->op) { /* where each op keeps it */
    case RFS_OP_CLOSE:
    case RFS_OP_SYNC:
    case RFS_OP_GET_SIZE: *fh = r->u.fh.fh; return 1;
    case RFS_OP_PREAD: *fh = r->u.pread.fh; return 1;
    case RFS_OP_PWRITE: *fh = r->u.pwrite.fh; return 1;
    case RFS_OP_PREADV:
    case RFS_OP_PWRITEV: *fh = r->u.iov.fh; return 1;
    case RFS_OP_SET_SIZE:
    case RFS_OP_PREALLOCATE: *fh = r->u.size.fh; return 1;
    case RFS_OP_COUNTER: *fh = r->u.counter.fh; return 1;
    case RFS_OP_COLL_JOIN: *fh = r->u.coll_join.fh; return 1;
    case RFS_OP_LOCK: *fh = r->u.lock.fh; return 1;
    case RFS_OP_UNLOCK: *fh = r->u.unlock.fh; return 1;
    case RFS_OP_SET_VIEW: *fh = r->u.set_view.fh; return 1;
    case RFS_OP_VIEW_READ: *fh = r->u.view_read.fh; return 1;
    case RFS_OP_VIEW_WRITE: *fh = r->u.view_write.fh; return 1;
    case RFS_OP_CHECKSUM: *fh = r->u.checksum.fh; return 1;
    default: return 0;
    }
}

int rfsd_op_range(const rfs_req *r, uint64_t *lo, uint64_t *hi, int *writes)
{
    *writes = rfs_op_has(r->op, RFS_OPF_WRITES);
    switch (r->op) {
    case RFS_OP_PREAD:
        *lo = r->u.pread.off;
        *hi = *lo + r->u.pread.len;
        return 1;
    case RFS_OP_PWRITE:
        *lo = r->u.pwrite.off;
        *hi = *lo + r->data_len;
        return 1;
    case RFS_OP_PREADV:
    case RFS_OP_PWRITEV:
        *lo = UINT64_MAX;
        *hi = 0;
        for (uint32_t i = 0; i < r->u.iov.count; i++) {
            uint64_t off, len;
            rfs_extent_at(r->u.iov.ext, i, &off, &len);
            if (off < *lo)
                *lo = off;
            if (off + len > *hi)
                *hi = off + len;
        }
        if (*lo > *hi)
            *lo = *hi = 0;
        return 1;
    case RFS_OP_CHECKSUM:
        /* a read of its range: it runs after earlier writes to those bytes on the handle */
        *lo = r->u.checksum.off;
        *hi = *lo + r->u.checksum.len;
        return 1;
    case RFS_OP_VIEW_READ:
    case RFS_OP_VIEW_WRITE:
        /* where a view position lands is known only once mapped: the whole file */
        *lo = 0;
        *hi = UINT64_MAX;
        return 1;
    default: return 0;
    }
}

size_t rfsd_request_cost(const rfs_req *r, uint32_t body_len)
{
    size_t reply = 0;
    switch (r->op) {
    case RFS_OP_PING: reply = r->data_len; break;
    case RFS_OP_PREAD: reply = r->u.pread.len; break;
    case RFS_OP_PREADV: reply = (size_t)r->u.iov.total; break;
    case RFS_OP_VIEW_READ: reply = r->u.view_read.len; break;
    case RFS_OP_READ_FILE: reply = r->u.read_file.max; break;
    /* a page of a listing is up to 1024 entries of up to 281 bytes: counted in advance like a
     * read, so the replies a client leaves unread stay within its budget */
    case RFS_OP_LIST:
        reply = (size_t)RFS_LIST_MAX_ENTRIES * (RFS_LIST_ENTRY_FIXED + RFS_MAX_NAME);
        break;
    case RFS_OP_LIST_TREE: /* the client's budget, when it gave one */
        reply = r->u.list.start && r->u.list.start < RFS_LTREE_MAX_BYTES ? r->u.list.start
                                                                         : RFS_LTREE_MAX_BYTES;
        break;
    default: break;
    }
    return (size_t)body_len + reply;
}

/* A read's bytes travel in one reply frame, which must fit the negotiated limit. */
static int reply_fits(rfsd_conn *c, const char *what, uint64_t len)
{
    if ((uint64_t)RFS_HDR_SIZE + (atomic_load(&c->sums) ? RFS_SUM_LEN : 0) + len > c->max_frame)
        return rfs_fail(RFS_E_TOOBIG, "%s of %llu bytes does not fit in one %u-byte frame", what,
                        (unsigned long long)len, c->max_frame);
    return RFS_OK;
}

static int can_write(const rfsd_handle *h)
{
    if ((h->flags & RFS_O_ACCMODE) == RFS_O_RDONLY)
        return rfs_fail(RFS_E_ROFS, "%s: opened read-only", h->path);
    return RFS_OK;
}

static int can_read(const rfsd_handle *h)
{
    if ((h->flags & RFS_O_ACCMODE) == RFS_O_WRONLY)
        return rfs_fail(RFS_E_ACCESS, "%s: opened write-only", h->path);
    return RFS_OK;
}

/* RFS_F_VER (docs/protocol.md "File versions"): the reply carries the file's size and mtime
 * as this request left it. Read while the request still holds the file's write ordering
 * (vwrite_begin), so no other write lands in between. Without a version (fstat failed) the
 * client keeps its older one, which makes `rfs recover` refuse rather than overwrite. */
static void note_version(int fd, const rfs_req *q, rfs_rep *rep)
{
    struct stat st;
    if (!q->want_ver || fstat(fd, &st) != 0)
        return;
    rep->has_ver = 1;
    rep->ver.size = (uint64_t)st.st_size;
    rep->ver.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}

static void order_begin(const rfsd_handle *h, const rfs_req *q)
{
    if (q->want_ver)
        rfsd_fileid_vwrite_begin(h->fid);
    else
        rfsd_fileid_write_begin(h->fid);
}

/* Ends what order_begin began, with the version read just before. */
static void order_end(const rfsd_handle *h, const rfs_req *q, rfs_rep *rep)
{
    if (q->want_ver) {
        note_version(h->fd, q, rep);
        rfsd_fileid_vwrite_end(h->fid);
    } else {
        rfsd_fileid_write_end(h->fid);
    }
}

static int do_open(rfsd_conn *c, const rfs_req *q, rfs_rep *rep)
{
    rfsd_path p;
    const rfsd_export *ex;
    int rc = rfsd_resolve(c, &q->u.open.path, rfsd_open_need(q->u.open.flags), 0, &p, &ex);
    if (rc)
        return rc;
    int fd;
    struct stat st;
    uint32_t mode = rfsd_guard_mode(&c->srv->cfg, q->u.open.mode, 0);
    /* with a quota the truncation is done below, so the bytes it frees are counted */
    uint32_t flags = q->u.open.flags;
    int trunc = ex->quota && (flags & RFS_O_TRUNC) && (flags & RFS_O_ACCMODE) != RFS_O_RDONLY;
    if ((rc = rfsd_be_open(ex->root_fd, &p, trunc ? flags & ~RFS_O_TRUNC : flags, mode, &fd, &st)))
        return rc;
    if ((rc = rfsd_fd_check(fd, p.shown))) {
        close(fd);
        return rc;
    }
    rfsd_handle *h = calloc(1, sizeof *h);
    char *path = strdup(p.shown);
    rfsd_fileid *fid = rfsd_fileid_get(st.st_dev, st.st_ino, fd);
    rfsd_qfile *qf = h && ex->quota ? rfsd_quota_file_get(ex->quota, &st) : NULL;
    if (!h || !path || !fid || (ex->quota && !qf)) {
        free(h);
        free(path);
        rfsd_fileid_put(fid);
        rfsd_quota_file_put(qf, fd);
        close(fd);
        return rfs_fail(RFS_E_NOMEM, "%s: server out of memory", p.shown);
    }
    if (trunc && st.st_size > 0) {
        if ((rc = rfsd_quota_resize(qf, fd, p.shown, 0, 0))) {
            rfsd_fileid_put(fid);
            rfsd_quota_file_put(qf, fd);
            close(fd);
            free(h);
            free(path);
            return rc;
        }
        st.st_size = 0;
    }
    if ((q->u.open.flags & RFS_O_ACCMODE) != RFS_O_RDONLY)
        rfsd_session_wait_silent_writers(c, fid, p.shown);
    h->fd = fd;
    h->flags = q->u.open.flags;
    h->fid = fid;
    h->qf = qf;
    h->path = path;
    h->state_fd = -1;
    if (rfsd_fss_on() && (rc = rfsd_fss_attach(fd, p.shown, &h->state_fd))) {
        rfsd_handle_release(h);
        free(h->path);
        free(h);
        return rc;
    }
    unsigned max = c->srv->cfg.max_handles;
    pthread_mutex_lock(&c->mu);
    rc = c->nhandles >= max ? rfs_fail(RFS_E_NOSPC,
                                       "%s: too many open files on this connection "
                                       "(limit %u, rfsd --max-handles)",
                                       p.shown, max)
                            : rfsd_handle_add(c, h);
    pthread_mutex_unlock(&c->mu);
    if (rc) {
        rfsd_handle_release(h);
        free(h->path);
        free(h);
        return rc;
    }
    rep->u.open.fh = h->id;
    rep->u.open.size = (uint64_t)st.st_size;
    note_version(fd, q, rep); /* saves a client that journals writes (ABT) a STAT */
    RFS_LOGD("%s: open %s flags 0x%x -> fh %u", c->peer, p.shown, q->u.open.flags, h->id);
    return RFS_OK;
}

static int do_close(rfsd_conn *c, rfsd_handle *h)
{
    pthread_mutex_lock(&c->mu);
    h->closed = 1;
    rfsd_handle_remove(c, h);
    pthread_mutex_unlock(&c->mu);
    /* close(2) errors matter on network filesystems: report them */
    int fd = h->fd, rc = RFS_OK;
    rfsd_quota_file_put(h->qf, fd); /* while fd is open: the last one reconciles the size */
    h->qf = NULL;
    if (h->state_fd >= 0) { /* also while fd is open: the state file is named after it */
        rfsd_fss_detach(fd, h->state_fd);
        h->state_fd = -1;
    }
    rfsd_coll_leave(h); /* one rank's part of the group's collective close */
    h->fd = -1;
    if (close(fd))
        rc = rfs_fail(rfs_err_from_errno(errno), "%s: close: %s", h->path, strerror(errno));
    rfsd_handle_release(h);
    return rc;
}

static int do_preadv(rfsd_conn *c, rfsd_handle *h, const rfs_req *q, rfs_rep *rep, uint8_t **buf)
{
    int rc = can_read(h);
    if (rc || (rc = reply_fits(c, "list read", q->u.iov.total)))
        return rc;
    *buf = malloc(q->u.iov.total ? (size_t)q->u.iov.total : 1);
    if (!*buf)
        return rfs_fail(RFS_E_NOMEM, "%s: server out of memory", h->path);
    size_t packed = 0;
    for (uint32_t i = 0; i < q->u.iov.count; i++) {
        uint64_t off, len;
        size_t got;
        rfs_extent_at(q->u.iov.ext, i, &off, &len);
        if ((rc = rfsd_be_pread(h->fd, h->path, *buf + packed, (size_t)len, off, &got)))
            return rc;
        packed += got;
        if (got < len)
            break; /* end of file: later runs would be misplaced in the packed reply */
    }
    rep->data = *buf;
    rep->data_len = (uint32_t)packed;
    return RFS_OK;
}

static int do_pwritev(rfsd_handle *h, const rfs_req *q, rfs_rep *rep)
{
    uint64_t lo, hi;
    int writes, rc = can_write(h);
    if (rc || (rfsd_op_range(q, &lo, &hi, &writes) &&
               (rc = rfsd_quota_write(h->qf, !!(h->flags & RFS_O_APPEND), lo,
                                      h->flags & RFS_O_APPEND ? q->data_len : hi - lo, h->path))))
        return rc;
    size_t packed = 0;
    /* a version is the one after the whole list: one bracket then, else one per extent */
    if (q->want_ver)
        order_begin(h, q);
    for (uint32_t i = 0; i < q->u.iov.count && rc == RFS_OK; i++) {
        uint64_t off, len;
        rfs_extent_at(q->u.iov.ext, i, &off, &len);
        if (len > q->data_len - packed) {
            rc = rfs_fail(RFS_E_PROTO, "%s: list write data shorter than its extents", h->path);
            break;
        }
        if (!q->want_ver)
            rfsd_fileid_write_begin(h->fid);
        rc = rfsd_be_pwrite(h->fd, h->path, q->data + packed, (size_t)len, off);
        if (!q->want_ver)
            rfsd_fileid_write_end(h->fid);
        packed += len;
    }
    if (q->want_ver)
        order_end(h, q, rep);
    if (rc)
        return rc;
    rep->u.u64.value = packed;
    return RFS_OK;
}

static int do_checksum(rfsd_handle *h, const rfs_req *q, rfs_rep *rep)
{
    int rc = can_read(h);
    uint32_t crc;
    uint64_t done;
    if (rc || (rc = rfsd_be_checksum(h->fd, h->path, q->u.checksum.off, q->u.checksum.len,
                                     (uint32_t)q->u.checksum.seed, &crc, &done)))
        return rc;
    rep->u.checksum.algo = RFS_SUM_CRC32C;
    rep->u.checksum.len = done;
    rep->u.checksum.value = crc;
    return RFS_OK;
}

/* WRITE_FILE once (p as resolved; left as it was when the parent directory is missing). */
static int write_file(rfsd_conn *c, const rfsd_export *ex, rfsd_path *p, const rfs_req *q)
{
    uint32_t mode = rfsd_guard_mode(&c->srv->cfg, q->u.write_file.mode, 0);
    int excl = !!(q->u.write_file.flags & RFS_WF_EXCL);
    int sync = !!(q->u.write_file.flags & RFS_WF_SYNC);
    return ex->quota ? rfsd_quota_write_file(ex->quota, ex->root_fd, p, mode, excl, sync, q->data,
                                             q->data_len)
                     : rfsd_be_write_file(ex->root_fd, p, mode, excl, sync, q->data, q->data_len);
}

/* RFS_WF_PARENTS: the directories above p, made as MKDIR with RFS_MKDIR_PARENTS makes them
 * (beneath the export's root, never through a link), mode 0777 within the server's rules.
 * Another request making one of them meanwhile is fine. */
static int make_parent(rfsd_conn *c, const rfsd_export *ex, const rfsd_path *p)
{
    rfsd_path parent = *p;
    char *slash = strrchr(parent.rel, '/');
    if (!slash)
        return RFS_E_NOENT; /* at the export's root: nothing above it to make */
    *slash = '\0';
    int rc = rfsd_be_mkdir_parents(ex->root_fd, &parent, rfsd_guard_mode(&c->srv->cfg, 0777, 1));
    if (rc == RFS_E_EXIST) {
        rfs_clear_error();
        rc = RFS_OK;
    }
    if (rc == RFS_OK)
        rfs_clear_error();
    return rc;
}

static int do_list(rfsd_conn *c, const rfs_req *q, rfs_rep *rep, uint8_t **buf)
{
    rfsd_path p;
    const rfsd_export *ex;
    int rc = rfsd_resolve(c, &q->u.list.path, RFSD_NEED_READ, 1, &p, &ex);
    if (rc)
        return rc;
    size_t cap = c->max_frame - RFS_HDR_SIZE - 8;
    size_t max = (size_t)RFS_LIST_MAX_ENTRIES * (RFS_LIST_ENTRY_FIXED + RFS_MAX_NAME);
    if (cap > max)
        cap = max;
    *buf = malloc(cap);
    if (!*buf)
        return rfs_fail(RFS_E_NOMEM, "%s: server out of memory", p.shown);
    size_t used;
    rc = ex ? rfsd_be_list(ex->root_fd, &p, q->u.list.start, *buf, cap, &used, &rep->u.list.count,
                           &rep->u.list.next)
            : rfsd_top_list(c, q->u.list.start, *buf, cap, &used, &rep->u.list.count,
                            &rep->u.list.next);
    if (rc)
        return rc;
    rep->u.list.entries = *buf;
    rep->u.list.entries_len = (uint32_t)used;
    return RFS_OK;
}

/* A reply payload to be sent from the file rather than from memory. */
typedef struct file_tail {
    int fd; /* -1: none */
    uint64_t off;
} file_tail;

/* Reads at least this long are sent with sendfile: the kernel moves the file's pages to the
 * socket, which saves the server a copy in and a copy out (on loopback, a third of rfsd's CPU
 * time in a 1 GiB get). Shorter reads keep the one-sendmsg path, which is quicker for them. */
#define SENDFILE_MIN ((size_t)64 << 10)

/* A PWRITE whose data arrive piece by piece from st. After a failed write the rest is still
 * read (and dropped), so the connection stays in step and the error can be replied. */
static int pwrite_streamed(rfsd_handle *h, const rfs_req *q, rfs_rep *rep, rfsd_stream *st)
{
    int rc = can_write(h);
    uint64_t off = q->u.pwrite.off;
    size_t left = q->data_len;
    if (rc == RFS_OK)
        rc = rfsd_quota_write(h->qf, !!(h->flags & RFS_O_APPEND), off, left, h->path);
    while (left > 0) {
        size_t n = left < st->cap ? left : st->cap;
        if (st->next(st->ctx, st->buf, n)) {
            st->lost = 1;
            return rfs_fail(RFS_E_CONN, "%s: connection lost inside a PWRITE", h->path);
        }
        if (rc == RFS_OK) {
            /* with RFS_F_VER each piece reads the version after it: the last one written
             * (all of them, or the one that failed) is what the reply says */
            order_begin(h, q);
            rc = rfsd_be_pwrite(h->fd, h->path, st->buf, n, off);
            order_end(h, q, rep);
        }
        off += n;
        left -= n;
    }
    if (rc)
        return rc;
    rep->u.u64.value = q->data_len;
    return RFS_OK;
}

static int do_file_op(rfsd_conn *c, rfsd_handle *h, const rfs_req *q, rfs_rep *rep, uint8_t **buf,
                      file_tail *tail, rfsd_stream *st)
{
    int rc;
    size_t done;
    switch (q->op) {
    case RFS_OP_CLOSE: return do_close(c, h);
    case RFS_OP_PREAD:
        if ((rc = can_read(h)) || (rc = reply_fits(c, "read", q->u.pread.len)))
            return rc;
        /* a checksummed reply needs its bytes in memory, and so does one to compress */
        if (q->u.pread.len >= SENDFILE_MIN && !atomic_load(&c->sums) &&
            !rfsd_zreply_wants(c, h, q, q->u.pread.len)) {
            if ((rc = rfsd_be_readable(h->fd, h->path, q->u.pread.len, q->u.pread.off, &done)))
                return rc;
            rep->data_len = (uint32_t)done;
            tail->fd = h->fd;
            tail->off = q->u.pread.off;
            return RFS_OK;
        }
        if (!(*buf = malloc(q->u.pread.len ? q->u.pread.len : 1)))
            return rfs_fail(RFS_E_NOMEM, "%s: server out of memory", h->path);
        if ((rc = rfsd_be_pread(h->fd, h->path, *buf, q->u.pread.len, q->u.pread.off, &done)))
            return rc;
        rep->data = *buf;
        rep->data_len = (uint32_t)done;
        rfsd_zreply_pack(c, h, q, rep, buf);
        return RFS_OK;
    case RFS_OP_PWRITE:
        if (st)
            return pwrite_streamed(h, q, rep, st);
        if ((rc = can_write(h)) || (rc = rfsd_quota_write(h->qf, !!(h->flags & RFS_O_APPEND),
                                                          q->u.pwrite.off, q->data_len, h->path)))
            return rc;
        order_begin(h, q);
        rc = rfsd_be_pwrite(h->fd, h->path, q->data, q->data_len, q->u.pwrite.off);
        order_end(h, q, rep);
        if (rc)
            return rc;
        rep->u.u64.value = q->data_len;
        return RFS_OK;
    case RFS_OP_PREADV:
        if (q->coll)
            return (rc = can_read(h)) || (rc = reply_fits(c, "list read", q->u.iov.total))
                       ? rc
                       : rfsd_coll_io(h, q, rep, buf);
        return do_preadv(c, h, q, rep, buf);
    case RFS_OP_PWRITEV:
        if (q->coll) /* an export under --mpi has no quota: nothing to count */
            return (rc = can_write(h)) ? rc : rfsd_coll_io(h, q, rep, buf);
        return do_pwritev(h, q, rep);
    case RFS_OP_COLL_JOIN: return rfsd_coll_join(h, q);
    case RFS_OP_CHECKSUM: return do_checksum(h, q, rep);
    case RFS_OP_SYNC: return rfsd_be_sync(h->fd, h->path);
    case RFS_OP_GET_SIZE: return rfsd_be_get_size(h->fd, h->path, &rep->u.u64.value);
    case RFS_OP_SET_SIZE:
    case RFS_OP_PREALLOCATE: {
        int prealloc = q->op == RFS_OP_PREALLOCATE;
        if ((rc = can_write(h)) ||
            (rc = rfsd_guard_grow(&c->srv->cfg, h->fd, h->path, q->u.size.size)))
            return rc;
        if (q->want_ver)
            rfsd_fileid_vwrite_begin(h->fid);
        if (h->qf)
            rc = rfsd_quota_resize(h->qf, h->fd, h->path, q->u.size.size, prealloc);
        else
            rc = prealloc ? rfsd_be_preallocate(h->fd, h->path, q->u.size.size)
                          : rfsd_be_set_size(h->fd, h->path, q->u.size.size);
        if (q->want_ver) {
            note_version(h->fd, q, rep);
            rfsd_fileid_vwrite_end(h->fid);
        }
        return rc;
    }
    case RFS_OP_COUNTER: {
        int64_t old;
        if (h->state_fd >= 0)
            rc = rfsd_fss_counter(h->state_fd, h->path, q->u.counter.key, q->u.counter.set != 0,
                                  q->u.counter.delta, &old);
        else
            rc = rfsd_counter_op(h->fid, q->u.counter.key, q->u.counter.set != 0,
                                 q->u.counter.delta, &old);
        if (rc)
            return rc;
        rep->u.u64.value = (uint64_t)old;
        return RFS_OK;
    }
    case RFS_OP_LOCK:
        rc = h->state_fd >= 0 ? rfsd_fss_lock(h->fd, h->path, q->u.lock.off, q->u.lock.len,
                                              q->u.lock.mode, q->u.lock.wait_ms, &c->closing)
                              : rfsd_lock(h->fid, h, q->u.lock.off, q->u.lock.len, q->u.lock.mode,
                                          q->u.lock.wait_ms, &c->closing, &c->nlocks);
        if (rc) {
            char why[RFS_MAX_MSG];
            snprintf(why, sizeof why, "%s", rfs_last_error());
            rfs_fail(rc, "%s: %s", h->path, why);
        }
        return rc;
    case RFS_OP_UNLOCK:
        if (h->state_fd >= 0)
            return rfsd_fss_unlock(h->fd, h->path, q->u.unlock.off, q->u.unlock.len);
        return rfsd_unlock(h->fid, h, q->u.unlock.off, q->u.unlock.len);
    case RFS_OP_SET_VIEW:
        if (q->u.set_view.view_id >= RFSD_MAX_VIEWS)
            return rfs_fail(RFS_E_INVAL, "%s: view id %u (limit %u views per file)", h->path,
                            q->u.set_view.view_id, RFSD_MAX_VIEWS);
        return rfsd_view_set(&h->views[q->u.set_view.view_id], q->u.set_view.disp, q->data,
                             q->data_len, h->path, &c->view_bytes, c->srv->cfg.max_view_bytes);
    case RFS_OP_VIEW_READ: {
        uint32_t v = q->u.view_read.view_id;
        if (v >= RFSD_MAX_VIEWS)
            return rfs_fail(RFS_E_INVAL, "%s: view id %u (limit %u)", h->path, v, RFSD_MAX_VIEWS);
        if ((rc = can_read(h)) || (rc = reply_fits(c, "view read", q->u.view_read.len)))
            return rc;
        if (!(*buf = malloc(q->u.view_read.len ? q->u.view_read.len : 1)))
            return rfs_fail(RFS_E_NOMEM, "%s: server out of memory", h->path);
        if ((rc = rfsd_view_read(&h->views[v], h->fd, h->path, q->u.view_read.pos, *buf,
                                 q->u.view_read.len, &done)))
            return rc;
        rep->data = *buf;
        rep->data_len = (uint32_t)done;
        rfsd_zreply_pack(c, h, q, rep, buf);
        return RFS_OK;
    }
    case RFS_OP_VIEW_WRITE: {
        uint32_t v = q->u.view_write.view_id;
        if (v >= RFSD_MAX_VIEWS)
            return rfs_fail(RFS_E_INVAL, "%s: view id %u (limit %u)", h->path, v, RFSD_MAX_VIEWS);
        uint64_t end;
        if ((rc = can_write(h)) ||
            (h->qf &&
             ((rc = rfsd_view_end(&h->views[v], q->u.view_write.pos, q->data_len, &end)) ||
              (rc = rfsd_quota_write(h->qf, !!(h->flags & RFS_O_APPEND), 0,
                                     h->flags & RFS_O_APPEND ? q->data_len : end, h->path)))))
            return rc;
        order_begin(h, q);
        rc = rfsd_view_write(&h->views[v], h->fd, h->path, q->u.view_write.pos, q->data,
                             q->data_len);
        order_end(h, q, rep);
        if (rc)
            return rc;
        rep->u.u64.value = q->data_len;
        return RFS_OK;
    }
    }
    return rfs_fail(RFS_E_UNSUPPORTED, "%s: operation not supported", rfs_op_name(q->op));
}

static uint32_t guard_mode(const void *cfg, uint32_t mode, int is_dir)
{
    return rfsd_guard_mode(cfg, mode, is_dir);
}

/* Refuses a rename between two exports: no export's bytes may move into another's (its
 * quota, its identities' rights) behind the operator's back. */
static int same_export(const rfsd_export *a, const rfsd_export *b, const rfsd_path *from,
                       const rfsd_path *to)
{
    if (a == b)
        return RFS_OK;
    return rfs_fail(RFS_E_ACCESS,
                    "rename %s -> %s: the paths are in different exports (%s, "
                    "%s); copy the file and delete the original instead",
                    from->shown, to->shown, a->name, b->name);
}

static int do_path_op(rfsd_conn *c, const rfs_req *q, rfs_rep *rep, uint8_t **buf)
{
    rfsd_path p, p2;
    const rfsd_export *ex, *ex2;
    int rc;
    switch (q->op) {
    case RFS_OP_PING:
        rep->data = q->data;
        rep->data_len = q->data_len;
        return RFS_OK;
    case RFS_OP_OPEN: return do_open(c, q, rep);
    case RFS_OP_STAT: {
        rfs_stat_info st;
        if ((rc = rfsd_resolve(c, &q->u.path.path, RFSD_NEED_READ, 1, &p, &ex)))
            return rc;
        if (!ex)
            rfsd_top_stat(&st);
        else if ((rc = rfsd_be_stat(ex->root_fd, &p, &st)))
            return rc;
        rep->u.stat.type = st.type;
        rep->u.stat.mode = st.mode;
        rep->u.stat.size = st.size;
        rep->u.stat.mtime_ns = st.mtime_ns;
        return RFS_OK;
    }
    case RFS_OP_DELETE:
        if ((rc = rfsd_resolve(c, &q->u.path.path, RFSD_NEED_WRITE, 0, &p, &ex)))
            return rc;
        return ex->quota ? rfsd_quota_delete(ex->quota, ex->root_fd, &p)
                         : rfsd_be_delete(ex->root_fd, &p);
    case RFS_OP_RENAME:
        if ((rc = rfsd_resolve(c, &q->u.rename.from, RFSD_NEED_WRITE, 0, &p, &ex)) ||
            (rc = rfsd_resolve(c, &q->u.rename.to, RFSD_NEED_WRITE, 0, &p2, &ex2)) ||
            (rc = same_export(ex, ex2, &p, &p2)))
            return rc;
        return ex->quota ? rfsd_quota_rename(ex->quota, ex->root_fd, &p, &p2)
                         : rfsd_be_rename(ex->root_fd, &p, &p2);
    case RFS_OP_MKDIR: {
        if ((rc = rfsd_resolve(c, &q->u.mkdir.path, RFSD_NEED_WRITE, 0, &p, &ex)))
            return rc;
        uint32_t mode = rfsd_guard_mode(&c->srv->cfg, q->u.mkdir.mode & 07777u, 1);
        return q->u.mkdir.mode & RFS_MKDIR_PARENTS ? rfsd_be_mkdir_parents(ex->root_fd, &p, mode)
                                                   : rfsd_be_mkdir(ex->root_fd, &p, mode);
    }
    case RFS_OP_LIST: return do_list(c, q, rep, buf);
    case RFS_OP_LIST_TREE: return rfsd_list_tree(c, q, rep, buf);
    case RFS_OP_CHMOD:
        if ((rc = rfsd_resolve(c, &q->u.mkdir.path, RFSD_NEED_WRITE, 0, &p, &ex)))
            return rc;
        return rfsd_be_chmod(ex->root_fd, &p, q->u.mkdir.mode, guard_mode, &c->srv->cfg);
    case RFS_OP_WRITE_FILE: {
        if ((rc = rfsd_resolve(c, &q->u.write_file.path, RFSD_NEED_WRITE, 0, &p, &ex)))
            return rc;
        rc = write_file(c, ex, &p, q);
        if (rc == RFS_E_NOENT && (q->u.write_file.flags & RFS_WF_PARENTS) &&
            make_parent(c, ex, &p) == RFS_OK)
            rc = write_file(c, ex, &p, q);
        if (rc)
            return rc;
        rep->u.u64.value = q->data_len;
        return RFS_OK;
    }
    case RFS_OP_READ_FILE: {
        size_t len = 0;
        if ((rc = reply_fits(c, "READ_FILE", q->u.read_file.max)) ||
            (rc = rfsd_resolve(c, &q->u.read_file.path, RFSD_NEED_READ, 0, &p, &ex)) ||
            (rc = rfsd_be_read_file(ex->root_fd, &p, q->u.read_file.max, buf, &len)))
            return rc;
        rep->data = *buf;
        rep->data_len = (uint32_t)len;
        return RFS_OK;
    }
    case RFS_OP_TPC_GRANT: return rfsd_tpc_grant(c, q, rep);
    case RFS_OP_TPC_PULL: return rfsd_tpc_pull_start(c, q, rep);
    case RFS_OP_TPC_STATUS: return rfsd_tpc_pull_status(c, q, rep);
    case RFS_OP_CAP_ISSUE: return rfsd_cap_issue(c, q, rep, buf);
    case RFS_OP_CAP_REVOKE: return rfsd_cap_revoke(c, q);
    case RFS_OP_OBJ_LEASE: return rfsd_olease_set(c, q, rep);
    case RFS_OP_STATFS:
        if ((rc = rfsd_resolve(c, &q->u.path.path, RFSD_NEED_READ, 0, &p, &ex)) ||
            (rc = rfsd_be_statfs(ex->root_fd, &p, &rep->u.statfs.total, &rep->u.statfs.free,
                                 &rep->u.statfs.avail, &rep->u.statfs.files,
                                 &rep->u.statfs.files_free)))
            return rc;
        if (ex->quota)
            rfsd_quota_statfs(ex->quota, &rep->u.statfs.total, &rep->u.statfs.free,
                              &rep->u.statfs.avail);
        return RFS_OK;
    }
    return rfs_fail(RFS_E_UNSUPPORTED, "%s: operation not supported", rfs_op_name(q->op));
}

void rfsd_execute(rfsd_job *j)
{
    int64_t t0 = rfs_now_ns();
    rfsd_conn *c = j->conn;
    const rfs_req *q = &j->req;
    rfs_rep rep;
    memset(&rep, 0, sizeof rep);
    rep.op = q->op;
    rep.id = q->id;
    uint8_t *buf = NULL;
    file_tail tail = {.fd = -1};
    int rc;
    if (c->who.capped && (rc = rfsd_cap_gate(c, q))) {
        /* expired, revoked, or an op a capability never allows: nothing of it runs */
    } else if (j->h) {
        /* dispatched only after the CLOSE that preceded it finished: closed is stable here */
        if (j->h->closed)
            rc =
                rfs_fail(RFS_E_BADF, "%s: file handle %u was closed", rfs_op_name(q->op), j->h->id);
        else
            rc = do_file_op(c, j->h, q, &rep, &buf, &tail, j->stream);
    } else {
        rc = do_path_op(c, q, &rep, &buf);
        rfsd_audit_request(c, q, rc);
    }
    /* buf (and the request body, for PING) stay with the job until the reply is out */
    j->rbuf = buf;
    if (rc) {
        char msg[RFS_MAX_MSG + 1];
        int has_ver = rep.has_ver; /* a refused write may have changed the file in part */
        uint64_t vsize = rep.ver.size;
        int64_t vmtime = rep.ver.mtime_ns;
        rfsd_error_rep(&rep, q->op, q->id, rc, msg, sizeof msg);
        rep.has_ver = has_ver;
        rep.ver.size = vsize;
        rep.ver.mtime_ns = vmtime;
        RFS_LOGD("%s: %s #%u -> %s: %s", c->peer, rfs_op_name(q->op), q->id, rfs_strerror(rc), msg);
        rfsd_out_encode(&j->out, &rep, -1, 0, c->peer); /* the message is copied into it */
        rfs_clear_error();
    } else {
        rfsd_out_encode(&j->out, &rep, tail.fd, tail.off, c->peer);
    }
    rfsd_wire_seal(c, &j->out);
    rfsd_metrics_request(q->op, rc, q->data_len, rc ? 0 : rep.data_len, rfs_now_ns() - t0);
}
