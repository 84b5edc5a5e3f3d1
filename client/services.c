/* Services for the MPI-IO layer: shared counters, byte-range locks and file views. These are
 * plain requests on the file's first stream (views: on every stream, since each stream has its
 * own server handle); a server that lacks one answers RFS_E_UNSUPPORTED, which is passed on
 * so the caller can fall back. */
#include "client/client.h"

#include "common/err.h"

#include <string.h>

static int one_call(rfs_file *f, rfs_req *req, rfs_call *call, int extra_ms)
{
    rfs_call_init(call);
    return rfs_conn_call(f->conn[0], call, req, f->io_timeout_ms + extra_ms, f->label);
}

int rfs_counter(rfs_file *f, uint32_t key, int set, int64_t delta, int64_t *old)
{
    if (!f)
        return rfs_fail(RFS_E_INVAL, "rfs_counter: NULL file");
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_COUNTER;
    req.u.counter.fh = f->fh[0];
    req.u.counter.key = key;
    req.u.counter.set = set ? 1 : 0;
    req.u.counter.delta = delta;
    rfs_call call;
    int rc = one_call(f, &req, &call, 0);
    if (!rc && old)
        *old = (int64_t)call.rep.u.u64.value;
    rfs_call_destroy(&call);
    return rc;
}

int rfs_lock(rfs_file *f, uint64_t off, uint64_t len, unsigned mode, int wait_ms)
{
    if (!f)
        return rfs_fail(RFS_E_INVAL, "rfs_lock: NULL file");
    if (mode != RFS_LOCK_SHARED && mode != RFS_LOCK_EXCL)
        return rfs_fail(RFS_E_INVAL, "%s: lock mode %u", f->label, mode);
    if (wait_ms < 0)
        return rfs_fail(RFS_E_INVAL, "%s: negative lock wait", f->label);
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_LOCK;
    req.u.lock.fh = f->fh[0];
    req.u.lock.off = off;
    req.u.lock.len = len;
    req.u.lock.mode = mode;
    req.u.lock.wait_ms = (uint32_t)wait_ms;
    rfs_call call;
    /* The server may legitimately hold the reply for wait_ms. */
    int rc = one_call(f, &req, &call, wait_ms);
    rfs_call_destroy(&call);
    return rc;
}

int rfs_unlock(rfs_file *f, uint64_t off, uint64_t len)
{
    if (!f)
        return rfs_fail(RFS_E_INVAL, "rfs_unlock: NULL file");
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_UNLOCK;
    req.u.unlock.fh = f->fh[0];
    req.u.unlock.off = off;
    req.u.unlock.len = len;
    rfs_call call;
    int rc = one_call(f, &req, &call, 0);
    rfs_call_destroy(&call);
    return rc;
}

int rfs_set_view(rfs_file *f, uint32_t view_id, uint64_t disp, const void *ftype_enc, size_t enc_len)
{
    if (!f || !ftype_enc || enc_len == 0)
        return rfs_fail(RFS_E_INVAL, "rfs_set_view: NULL or empty argument");
    if (enc_len > f->chunk)
        return rfs_fail(RFS_E_TOOBIG, "%s: datatype encoding of %zu bytes does not fit one frame "
                        "(%zu bytes)", f->label, enc_len, f->chunk);
    for (int s = 0; s < f->nconn; s++) {
        rfs_req req;
        memset(&req, 0, sizeof req);
        req.op = RFS_OP_SET_VIEW;
        req.u.set_view.fh = f->fh[s];
        req.u.set_view.view_id = view_id;
        req.u.set_view.disp = disp;
        req.data = ftype_enc;
        req.data_len = (uint32_t)enc_len;
        rfs_call call;
        rfs_call_init(&call);
        int rc = rfs_conn_call(f->conn[s], &call, &req, f->io_timeout_ms, f->label);
        rfs_call_destroy(&call);
        if (rc)
            return rc;
    }
    return RFS_OK;
}

int rfs_view_read(rfs_file *f, uint32_t view_id, uint64_t pos, void *buf, size_t len, size_t *done)
{
    if (done)
        *done = 0;
    if (!f || (!buf && len))
        return rfs_fail(RFS_E_INVAL, "rfs_view_read: NULL argument");
    return rfs_xfer_contig(f, RFS_OP_VIEW_READ, view_id, pos, buf, NULL, len, done);
}

int rfs_view_write(rfs_file *f, uint32_t view_id, uint64_t pos, const void *buf, size_t len,
                   size_t *done)
{
    if (done)
        *done = 0;
    if (!f || (!buf && len))
        return rfs_fail(RFS_E_INVAL, "rfs_view_write: NULL argument");
    if ((f->flags & RFS_O_ACCMODE) == RFS_O_RDONLY)
        return rfs_fail(RFS_E_ROFS, "%s: file was opened read-only", f->label);
    return rfs_xfer_contig(f, RFS_OP_VIEW_WRITE, view_id, pos, NULL, buf, len, done);
}
