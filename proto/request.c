/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Request bodies: encode and decode for every op. Layouts (all little-endian) are in
 * docs/protocol.md; the summary per op is next to each case below. Both directions run the
 * same field checks (check_req), so anything that decodes re-encodes to identical bytes. */
#include "proto/proto.h"
#include "proto/wire.h"

#include "common/err.h"

#include <string.h>

#define OPEN_FLAGS_KNOWN (RFS_O_ACCMODE | RFS_O_CREAT | RFS_O_EXCL | RFS_O_TRUNC | RFS_O_APPEND)
#define MODE_BITS 07777u

static int has_payload(uint16_t op)
{
    return rfs_op_has(op, RFS_OPF_REQ_DATA);
}

static int check_read_len(uint16_t op, uint64_t len)
{
    /* A read's reply carries its bytes in one frame, so no read can ask for more. */
    if (len > RFS_WIRE_MAX_BODY)
        return rfs_fail(RFS_E_TOOBIG, "%s: %llu bytes in one request (limit %u)", rfs_op_name(op),
                        (unsigned long long)len, RFS_WIRE_MAX_BODY);
    return RFS_OK;
}

/* CHECKSUM: a known algorithm, a seed that is a value of it, and a bounded range. */
/* COLL_JOIN: at least one rank, and hints of printable bytes within their limit. */
static int check_coll_join(const rfs_req *r)
{
    if (r->u.coll_join.nranks == 0)
        return rfs_fail(RFS_E_INVAL, "COLL_JOIN: no ranks");
    if (r->u.coll_join.hints.len > RFS_COLL_MAX_HINTS)
        return rfs_fail(RFS_E_TOOBIG, "COLL_JOIN: hints of %u bytes (limit %u)",
                        r->u.coll_join.hints.len, RFS_COLL_MAX_HINTS);
    for (uint16_t i = 0; i < r->u.coll_join.hints.len; i++) {
        unsigned char ch = (unsigned char)r->u.coll_join.hints.s[i];
        if (ch < 0x20 || ch > 0x7e)
            return rfs_fail(RFS_E_INVAL, "COLL_JOIN: byte 0x%02x in the hints", ch);
    }
    return RFS_OK;
}

static int check_checksum(const rfs_req *r)
{
    if (r->u.checksum.algo != RFS_SUM_CRC32C)
        return rfs_fail(RFS_E_INVAL, "CHECKSUM: unknown algorithm %u", r->u.checksum.algo);
    if (r->u.checksum.seed > UINT32_MAX)
        return rfs_fail(RFS_E_INVAL, "CHECKSUM: seed %llu is not a crc32c value",
                        (unsigned long long)r->u.checksum.seed);
    if (r->u.checksum.len > RFS_CHECKSUM_MAX_LEN)
        return rfs_fail(RFS_E_TOOBIG, "CHECKSUM: %llu bytes in one request (limit %u)",
                        (unsigned long long)r->u.checksum.len, RFS_CHECKSUM_MAX_LEN);
    return rfs_wire_check_range(RFS_OP_CHECKSUM, "range", r->u.checksum.off, r->u.checksum.len);
}

static int check_mode(uint16_t op, uint32_t mode)
{
    if (op == RFS_OP_MKDIR)
        mode &= ~RFS_MKDIR_PARENTS;
    if (mode & ~MODE_BITS)
        return rfs_fail(RFS_E_INVAL, "%s: mode 0%o has bits outside 07777", rfs_op_name(op), mode);
    return RFS_OK;
}

/* CAP_AUTH, CAP_REVOKE: a capability string, printable ASCII within its limit (the
 * signature and meaning are checked by the server, common/capability.h). */
static int check_cap_str(uint16_t op, const rfs_wpath *p)
{
    if (p->len == 0 || !p->s)
        return rfs_fail(RFS_E_INVAL, "%s: empty capability", rfs_op_name(op));
    if (p->len > RFS_CAP_WIRE_MAX)
        return rfs_fail(RFS_E_TOOBIG, "%s: capability of %u bytes (limit %u)", rfs_op_name(op),
                        p->len, RFS_CAP_WIRE_MAX);
    for (uint16_t i = 0; i < p->len; i++) {
        unsigned char ch = (unsigned char)p->s[i];
        if (ch <= 0x20 || ch > 0x7e)
            return rfs_fail(RFS_E_INVAL, "%s: byte 0x%02x in the capability", rfs_op_name(op), ch);
    }
    return RFS_OK;
}

/* TPC_PULL: known flags, a port, 1..16 streams, a host name without odd bytes, two paths. */
static int check_tpc_pull(const rfs_req *r)
{
    const uint16_t op = RFS_OP_TPC_PULL;
    int rc;
    if (r->u.tpc_pull.flags & ~RFS_TPC_KNOWN)
        return rfs_fail(RFS_E_INVAL, "TPC_PULL: unknown flags 0x%x",
                        r->u.tpc_pull.flags & ~RFS_TPC_KNOWN);
    if ((rc = check_mode(op, r->u.tpc_pull.mode)))
        return rc;
    if (r->u.tpc_pull.port < 1 || r->u.tpc_pull.port > 65535)
        return rfs_fail(RFS_E_INVAL, "TPC_PULL: port %u", r->u.tpc_pull.port);
    if (r->u.tpc_pull.streams < 1 || r->u.tpc_pull.streams > RFS_TPC_MAX_USES)
        return rfs_fail(RFS_E_INVAL, "TPC_PULL: %u streams (1..%u)", r->u.tpc_pull.streams,
                        RFS_TPC_MAX_USES);
    const rfs_wpath *h = &r->u.tpc_pull.host;
    if (!h->s || h->len == 0 || h->len > RFS_TPC_MAX_HOST)
        return rfs_fail(RFS_E_INVAL, "TPC_PULL: source host of %u bytes (1..%u)", h->len,
                        RFS_TPC_MAX_HOST);
    for (uint16_t i = 0; i < h->len; i++) {
        char ch = h->s[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '.' || ch == '-' || ch == ':' || ch == '_';
        if (!ok)
            return rfs_fail(RFS_E_INVAL, "TPC_PULL: source host contains byte 0x%02x",
                            (unsigned)(unsigned char)ch);
    }
    if ((rc = rfs_wire_check_path(op, "source path", &r->u.tpc_pull.src)))
        return rc;
    return rfs_wire_check_path(op, "destination path", &r->u.tpc_pull.dst);
}

/* Field checks common to encode and decode. host_ext: extents as host pairs (encoder), else
 * r->u.iov.ext (wire bytes) is used when set. *total receives the extents' total length;
 * *have_total says whether it could be computed (an encoder may send the extents itself). */
static int check_req(const rfs_req *r, const uint64_t *host_ext, uint64_t *total, int *have_total)
{
    uint16_t op = r->op;
    int rc = RFS_OK;
    *have_total = 0;
    *total = 0;
    if (!has_payload(op) && r->data_len != 0)
        return rfs_fail(RFS_E_INVAL, "%s: request carries no payload", rfs_op_name(op));
    switch ((rfs_op)op) {
    case RFS_OP_HELLO:
        if (r->u.hello.min_version == 0 || r->u.hello.min_version > r->u.hello.max_version)
            return rfs_fail(RFS_E_INVAL, "HELLO: bad version range %u..%u", r->u.hello.min_version,
                            r->u.hello.max_version);
        if (r->u.hello.max_frame < RFS_FRAME_MIN)
            return rfs_fail(RFS_E_INVAL, "HELLO: max frame %u below %u", r->u.hello.max_frame,
                            RFS_FRAME_MIN);
        if (r->u.hello.max_frame > RFS_FRAME_HARD_MAX)
            return rfs_fail(RFS_E_TOOBIG, "HELLO: max frame %u above %u", r->u.hello.max_frame,
                            RFS_FRAME_HARD_MAX);
        return RFS_OK;
    case RFS_OP_AUTH:
    case RFS_OP_SESSION:
    case RFS_OP_PLACE:
    case RFS_OP_PING:
    case RFS_OP_CLOSE:
    case RFS_OP_SYNC:
    case RFS_OP_GET_SIZE: return RFS_OK;
    case RFS_OP_OPEN: {
        uint32_t f = r->u.open.flags;
        if ((f & ~OPEN_FLAGS_KNOWN) || (f & RFS_O_ACCMODE) == 0)
            return rfs_fail(RFS_E_INVAL, "OPEN: bad flags 0x%x", f);
        if ((rc = check_mode(op, r->u.open.mode)))
            return rc;
        return rfs_wire_check_path(op, "path", &r->u.open.path);
    }
    case RFS_OP_PREAD:
        if ((rc = rfs_wire_check_range(op, "range", r->u.pread.off, r->u.pread.len)))
            return rc;
        return check_read_len(op, r->u.pread.len);
    case RFS_OP_PWRITE: return rfs_wire_check_range(op, "range", r->u.pwrite.off, r->data_len);
    case RFS_OP_PREADV:
    case RFS_OP_PWRITEV:
        if (r->u.iov.count > RFS_MAX_EXTENTS)
            return rfs_fail(RFS_E_TOOBIG, "%s: %u extents (limit %u)", rfs_op_name(op),
                            r->u.iov.count, RFS_MAX_EXTENTS);
        if (!host_ext && !r->u.iov.ext)
            return RFS_OK; /* the caller sends the extents; it vouches for them */
        if ((rc = rfs_wire_extents_total(op, r->u.iov.count, host_ext ? NULL : r->u.iov.ext,
                                         host_ext, total)))
            return rc;
        *have_total = 1;
        if (op == RFS_OP_PREADV)
            return check_read_len(op, *total);
        return RFS_OK;
    case RFS_OP_SET_SIZE:
    case RFS_OP_PREALLOCATE: return rfs_wire_check_range(op, "size", r->u.size.size, 0);
    case RFS_OP_STAT:
    case RFS_OP_DELETE:
    case RFS_OP_STATFS: return rfs_wire_check_path(op, "path", &r->u.path.path);
    case RFS_OP_RENAME:
        if ((rc = rfs_wire_check_path(op, "source path", &r->u.rename.from)))
            return rc;
        return rfs_wire_check_path(op, "target path", &r->u.rename.to);
    case RFS_OP_READ_FILE:
        if ((rc = check_read_len(op, r->u.read_file.max)))
            return rc;
        return rfs_wire_check_path(op, "path", &r->u.read_file.path);
    case RFS_OP_WRITE_FILE:
        if (r->u.write_file.flags & ~RFS_WF_KNOWN)
            return rfs_fail(RFS_E_INVAL, "WRITE_FILE: unknown flags 0x%x",
                            r->u.write_file.flags & ~RFS_WF_KNOWN);
        if ((rc = check_mode(op, r->u.write_file.mode)))
            return rc;
        return rfs_wire_check_path(op, "path", &r->u.write_file.path);
    case RFS_OP_MKDIR:
    case RFS_OP_CHMOD:
        if ((rc = check_mode(op, r->u.mkdir.mode)))
            return rc;
        return rfs_wire_check_path(op, "path", &r->u.mkdir.path);
    case RFS_OP_LIST:
    case RFS_OP_LIST_TREE: return rfs_wire_check_path(op, "path", &r->u.list.path);
    case RFS_OP_CHECKSUM: return check_checksum(r);
    case RFS_OP_COUNTER:
        if (r->u.counter.set > 1)
            return rfs_fail(RFS_E_INVAL, "COUNTER: set must be 0 or 1, not %u", r->u.counter.set);
        return RFS_OK;
    case RFS_OP_LOCK:
        if (r->u.lock.mode != RFS_LOCK_SHARED && r->u.lock.mode != RFS_LOCK_EXCL)
            return rfs_fail(RFS_E_INVAL, "LOCK: mode %u", r->u.lock.mode);
        return rfs_wire_check_range(op, "range", r->u.lock.off, r->u.lock.len);
    case RFS_OP_UNLOCK: return rfs_wire_check_range(op, "range", r->u.unlock.off, r->u.unlock.len);
    case RFS_OP_COLL_JOIN: return check_coll_join(r);
    case RFS_OP_SET_VIEW:
        if (r->data_len == 0)
            return rfs_fail(RFS_E_INVAL, "SET_VIEW: empty datatype encoding");
        return rfs_wire_check_range(op, "displacement", r->u.set_view.disp, 0);
    case RFS_OP_VIEW_READ:
        if ((rc = rfs_wire_check_range(op, "position", r->u.view_read.pos, r->u.view_read.len)))
            return rc;
        return check_read_len(op, r->u.view_read.len);
    case RFS_OP_VIEW_WRITE:
        return rfs_wire_check_range(op, "position", r->u.view_write.pos, r->data_len);
    case RFS_OP_TPC_AUTH:
    case RFS_OP_TPC_STATUS: return RFS_OK;
    case RFS_OP_TPC_GRANT:
        if (r->u.tpc_grant.uses < 1 || r->u.tpc_grant.uses > RFS_TPC_MAX_USES)
            return rfs_fail(RFS_E_INVAL, "TPC_GRANT: %u uses (1..%u)", r->u.tpc_grant.uses,
                            RFS_TPC_MAX_USES);
        return rfs_wire_check_path(op, "path", &r->u.tpc_grant.path);
    case RFS_OP_TPC_PULL: return check_tpc_pull(r);
    case RFS_OP_CAP_AUTH:
    case RFS_OP_CAP_REVOKE: return check_cap_str(op, &r->u.cap.str);
    case RFS_OP_OBJ_LEASE: return rfs_wire_check_path(op, "path", &r->u.obj_lease.path);
    case RFS_OP_CAP_ISSUE:
        if (r->u.cap_issue.right < 1 || r->u.cap_issue.right > 3)
            return rfs_fail(RFS_E_INVAL, "CAP_ISSUE: right %u (1 read, 2 write, 3 manage)",
                            r->u.cap_issue.right);
        if (r->u.cap_issue.flags & ~RFS_CAP_ISSUE_LEASE)
            return rfs_fail(RFS_E_INVAL, "CAP_ISSUE: unknown flags 0x%x",
                            r->u.cap_issue.flags & ~RFS_CAP_ISSUE_LEASE);
        return rfs_wire_check_path(op, "path", &r->u.cap_issue.path);
    }
    return rfs_fail(RFS_E_INVAL, "unknown op %u", op);
}

/* ---- encode ---- */

static void put_path(wr *w, const rfs_wpath *p)
{
    wr_u16(w, p->len);
    wr_bytes(w, p->s, p->len);
}

size_t rfs_req_encoded_size(const rfs_req *r)
{
    size_t n = RFS_HDR_SIZE;
    switch ((rfs_op)r->op) {
    case RFS_OP_HELLO: return n + 8;
    case RFS_OP_AUTH: return n + RFS_NONCE_LEN + RFS_MAC_LEN;
    case RFS_OP_PING: return n;
    case RFS_OP_SESSION: return n + 2 * RFS_SESSION_LEN;
    case RFS_OP_PLACE: return n + RFS_PLACE_JOB_LEN + 4;
    case RFS_OP_COLL_JOIN: return n + 4 + RFS_COLL_ID_LEN + 4 + 2 + r->u.coll_join.hints.len;
    case RFS_OP_OPEN: return n + 10 + r->u.open.path.len;
    case RFS_OP_CLOSE:
    case RFS_OP_SYNC:
    case RFS_OP_GET_SIZE: return n + 4;
    case RFS_OP_PREAD: return n + 16;
    case RFS_OP_PWRITE: return n + 12;
    case RFS_OP_PREADV:
    case RFS_OP_PWRITEV: return n + 8 + (size_t)r->u.iov.count * RFS_EXTENT_WIRE;
    case RFS_OP_SET_SIZE:
    case RFS_OP_PREALLOCATE: return n + 12;
    case RFS_OP_STAT:
    case RFS_OP_DELETE:
    case RFS_OP_STATFS: return n + 2 + r->u.path.path.len;
    case RFS_OP_RENAME: return n + 4 + r->u.rename.from.len + r->u.rename.to.len;
    case RFS_OP_MKDIR:
    case RFS_OP_CHMOD: return n + 6 + r->u.mkdir.path.len;
    case RFS_OP_WRITE_FILE: return n + 10 + r->u.write_file.path.len;
    case RFS_OP_READ_FILE: return n + 6 + r->u.read_file.path.len;
    case RFS_OP_LIST:
    case RFS_OP_LIST_TREE: return n + 6 + r->u.list.path.len;
    case RFS_OP_CHECKSUM: return n + 32;
    case RFS_OP_COUNTER: return n + 20;
    case RFS_OP_LOCK: return n + 28;
    case RFS_OP_UNLOCK: return n + 20;
    case RFS_OP_SET_VIEW: return n + 16;
    case RFS_OP_VIEW_READ: return n + 20;
    case RFS_OP_VIEW_WRITE: return n + 16;
    case RFS_OP_TPC_AUTH: return n + RFS_TPC_ID_LEN + RFS_NONCE_LEN + RFS_MAC_LEN;
    case RFS_OP_TPC_GRANT: return n + 6 + r->u.tpc_grant.path.len;
    case RFS_OP_TPC_PULL:
        return n + 16 + RFS_TPC_ID_LEN + RFS_TPC_KEY_LEN + RFS_TPC_PIN_LEN + 6 +
               r->u.tpc_pull.host.len + r->u.tpc_pull.src.len + r->u.tpc_pull.dst.len;
    case RFS_OP_TPC_STATUS: return n + 4;
    case RFS_OP_CAP_AUTH:
    case RFS_OP_CAP_REVOKE: return n + 2 + r->u.cap.str.len;
    case RFS_OP_CAP_ISSUE: return n + 18 + r->u.cap_issue.path.len;
    case RFS_OP_OBJ_LEASE: return n + 10 + r->u.obj_lease.path.len;
    }
    return 0;
}

int rfs_req_encode(const rfs_req *r, const uint64_t *ext_src, uint8_t *out, size_t cap, size_t *len)
{
    *len = 0;
    uint64_t total;
    int have_total;
    int rc = check_req(r, ext_src, &total, &have_total);
    if (rc)
        return rc == RFS_E_FBIG ? RFS_E_INVAL : rc;
    if (r->op == RFS_OP_PWRITEV && have_total && total != r->data_len)
        return rfs_fail(RFS_E_INVAL, "PWRITEV: %u data bytes for extents totalling %llu",
                        r->data_len, (unsigned long long)total);

    wr w = {.p = out, .cap = cap};
    if (!wr_take(&w, RFS_HDR_SIZE))
        return rfs_fail(RFS_E_TOOBIG, "%s: buffer of %zu bytes too small", rfs_op_name(r->op), cap);
    uint64_t unwritten = r->data_len; /* body bytes the caller sends after out */
    switch ((rfs_op)r->op) {
    case RFS_OP_HELLO: /* u16 min_version, u16 max_version, u32 max_frame */
        wr_u16(&w, r->u.hello.min_version);
        wr_u16(&w, r->u.hello.max_version);
        wr_u32(&w, r->u.hello.max_frame);
        break;
    case RFS_OP_AUTH: /* client_nonce[32], mac[32] */
        wr_bytes(&w, r->u.auth.client_nonce, RFS_NONCE_LEN);
        wr_bytes(&w, r->u.auth.mac, RFS_MAC_LEN);
        break;
    case RFS_OP_PING: /* payload only */ break;
    case RFS_OP_SESSION: /* id[16], fence[16] */
        wr_bytes(&w, r->u.session.id, RFS_SESSION_LEN);
        wr_bytes(&w, r->u.session.fence, RFS_SESSION_LEN);
        break;
    case RFS_OP_PLACE: /* job[16], u32 rank */
        wr_bytes(&w, r->u.place.job, RFS_PLACE_JOB_LEN);
        wr_u32(&w, r->u.place.rank);
        break;
    case RFS_OP_COLL_JOIN: /* u32 fh, id[16], u32 nranks, u16 hints_len, hints */
        wr_u32(&w, r->u.coll_join.fh);
        wr_bytes(&w, r->u.coll_join.id, RFS_COLL_ID_LEN);
        wr_u32(&w, r->u.coll_join.nranks);
        wr_u16(&w, r->u.coll_join.hints.len);
        wr_bytes(&w, r->u.coll_join.hints.s, r->u.coll_join.hints.len);
        break;
    case RFS_OP_OPEN: /* u32 flags, u32 mode, path */
        wr_u32(&w, r->u.open.flags);
        wr_u32(&w, r->u.open.mode);
        put_path(&w, &r->u.open.path);
        break;
    case RFS_OP_CLOSE:
    case RFS_OP_SYNC:
    case RFS_OP_GET_SIZE: /* u32 fh */ wr_u32(&w, r->u.fh.fh); break;
    case RFS_OP_PREAD: /* u32 fh, u64 off, u32 len */
        wr_u32(&w, r->u.pread.fh);
        wr_u64(&w, r->u.pread.off);
        wr_u32(&w, r->u.pread.len);
        break;
    case RFS_OP_PWRITE: /* u32 fh, u64 off, data */
        wr_u32(&w, r->u.pwrite.fh);
        wr_u64(&w, r->u.pwrite.off);
        break;
    case RFS_OP_PREADV:
    case RFS_OP_PWRITEV: /* u32 fh, u32 count, count x (u64 off, u64 len), [data] */
        wr_u32(&w, r->u.iov.fh);
        wr_u32(&w, r->u.iov.count);
        if (ext_src) {
            for (uint32_t i = 0; i < r->u.iov.count; i++) {
                wr_u64(&w, ext_src[2 * (size_t)i]);
                wr_u64(&w, ext_src[2 * (size_t)i + 1]);
            }
        } else if (r->u.iov.ext) {
            wr_bytes(&w, r->u.iov.ext, (size_t)r->u.iov.count * RFS_EXTENT_WIRE);
        } else {
            unwritten += (uint64_t)r->u.iov.count * RFS_EXTENT_WIRE;
        }
        break;
    case RFS_OP_SET_SIZE:
    case RFS_OP_PREALLOCATE: /* u32 fh, u64 size */
        wr_u32(&w, r->u.size.fh);
        wr_u64(&w, r->u.size.size);
        break;
    case RFS_OP_STAT:
    case RFS_OP_DELETE:
    case RFS_OP_STATFS: /* path */ put_path(&w, &r->u.path.path); break;
    case RFS_OP_RENAME: /* from path, to path */
        put_path(&w, &r->u.rename.from);
        put_path(&w, &r->u.rename.to);
        break;
    case RFS_OP_READ_FILE: /* u32 max, path */
        wr_u32(&w, r->u.read_file.max);
        put_path(&w, &r->u.read_file.path);
        break;
    case RFS_OP_WRITE_FILE: /* u32 flags, u32 mode, path, data */
        wr_u32(&w, r->u.write_file.flags);
        wr_u32(&w, r->u.write_file.mode);
        put_path(&w, &r->u.write_file.path);
        break;
    case RFS_OP_MKDIR:
    case RFS_OP_CHMOD: /* u32 mode, path */
        wr_u32(&w, r->u.mkdir.mode);
        put_path(&w, &r->u.mkdir.path);
        break;
    case RFS_OP_LIST:      /* u32 start, path */
    case RFS_OP_LIST_TREE: /* u32 max_bytes (in u.list.start), path */
        wr_u32(&w, r->u.list.start);
        put_path(&w, &r->u.list.path);
        break;
    case RFS_OP_CHECKSUM: /* u32 fh, u32 algo, u64 off, u64 len, u64 seed */
        wr_u32(&w, r->u.checksum.fh);
        wr_u32(&w, r->u.checksum.algo);
        wr_u64(&w, r->u.checksum.off);
        wr_u64(&w, r->u.checksum.len);
        wr_u64(&w, r->u.checksum.seed);
        break;
    case RFS_OP_COUNTER: /* u32 fh, u32 key, u32 set, i64 delta */
        wr_u32(&w, r->u.counter.fh);
        wr_u32(&w, r->u.counter.key);
        wr_u32(&w, r->u.counter.set);
        wr_u64(&w, (uint64_t)r->u.counter.delta);
        break;
    case RFS_OP_LOCK: /* u32 fh, u64 off, u64 len, u32 mode, u32 wait_ms */
        wr_u32(&w, r->u.lock.fh);
        wr_u64(&w, r->u.lock.off);
        wr_u64(&w, r->u.lock.len);
        wr_u32(&w, r->u.lock.mode);
        wr_u32(&w, r->u.lock.wait_ms);
        break;
    case RFS_OP_UNLOCK: /* u32 fh, u64 off, u64 len */
        wr_u32(&w, r->u.unlock.fh);
        wr_u64(&w, r->u.unlock.off);
        wr_u64(&w, r->u.unlock.len);
        break;
    case RFS_OP_SET_VIEW: /* u32 fh, u32 view_id, u64 disp, encoding */
        wr_u32(&w, r->u.set_view.fh);
        wr_u32(&w, r->u.set_view.view_id);
        wr_u64(&w, r->u.set_view.disp);
        break;
    case RFS_OP_VIEW_READ: /* u32 fh, u32 view_id, u64 pos, u32 len */
        wr_u32(&w, r->u.view_read.fh);
        wr_u32(&w, r->u.view_read.view_id);
        wr_u64(&w, r->u.view_read.pos);
        wr_u32(&w, r->u.view_read.len);
        break;
    case RFS_OP_VIEW_WRITE: /* u32 fh, u32 view_id, u64 pos, data */
        wr_u32(&w, r->u.view_write.fh);
        wr_u32(&w, r->u.view_write.view_id);
        wr_u64(&w, r->u.view_write.pos);
        break;
    case RFS_OP_TPC_AUTH: /* id[16], client_nonce[32], mac[32] */
        wr_bytes(&w, r->u.tpc_auth.id, RFS_TPC_ID_LEN);
        wr_bytes(&w, r->u.tpc_auth.client_nonce, RFS_NONCE_LEN);
        wr_bytes(&w, r->u.tpc_auth.mac, RFS_MAC_LEN);
        break;
    case RFS_OP_TPC_GRANT: /* u32 uses, path */
        wr_u32(&w, r->u.tpc_grant.uses);
        put_path(&w, &r->u.tpc_grant.path);
        break;
    case RFS_OP_TPC_PULL: /* u32 flags, mode, port, streams, id, key, pin, host, src, dst */
        wr_u32(&w, r->u.tpc_pull.flags);
        wr_u32(&w, r->u.tpc_pull.mode);
        wr_u32(&w, r->u.tpc_pull.port);
        wr_u32(&w, r->u.tpc_pull.streams);
        wr_bytes(&w, r->u.tpc_pull.id, RFS_TPC_ID_LEN);
        wr_bytes(&w, r->u.tpc_pull.key, RFS_TPC_KEY_LEN);
        wr_bytes(&w, r->u.tpc_pull.pin, RFS_TPC_PIN_LEN);
        put_path(&w, &r->u.tpc_pull.host);
        put_path(&w, &r->u.tpc_pull.src);
        put_path(&w, &r->u.tpc_pull.dst);
        break;
    case RFS_OP_TPC_STATUS: /* u32 job */ wr_u32(&w, r->u.tpc_status.job); break;
    case RFS_OP_CAP_AUTH:
    case RFS_OP_CAP_REVOKE: /* u16 len, capability */ put_path(&w, &r->u.cap.str); break;
    case RFS_OP_OBJ_LEASE: /* u64 expires, path */
        wr_u64(&w, r->u.obj_lease.expires);
        put_path(&w, &r->u.obj_lease.path);
        break;
    case RFS_OP_CAP_ISSUE: /* u32 right, u32 flags, u64 expires, path */
        wr_u32(&w, r->u.cap_issue.right);
        wr_u32(&w, r->u.cap_issue.flags);
        wr_u64(&w, r->u.cap_issue.expires);
        put_path(&w, &r->u.cap_issue.path);
        break;
    }
    if (w.full)
        return rfs_fail(RFS_E_TOOBIG, "%s: buffer of %zu bytes too small", rfs_op_name(r->op), cap);
    uint64_t body = (uint64_t)(w.n - RFS_HDR_SIZE) + unwritten;
    if (RFS_HDR_SIZE + body > RFS_FRAME_HARD_MAX)
        return rfs_fail(RFS_E_TOOBIG, "%s: frame of %llu bytes over the %u-byte limit",
                        rfs_op_name(r->op), (unsigned long long)(RFS_HDR_SIZE + body),
                        RFS_FRAME_HARD_MAX);
    if (r->want_ver && !rfs_op_has(r->op, RFS_OPF_VERSIONED))
        return rfs_fail(RFS_E_INVAL, "%s: a request that cannot ask for the file's version",
                        rfs_op_name(r->op));
    if (r->extra_stream && r->op != RFS_OP_HELLO)
        return rfs_fail(RFS_E_INVAL, "%s: only a HELLO can mark an additional stream",
                        rfs_op_name(r->op));
    if (r->zok && !rfs_op_has(r->op, RFS_OPF_REP_PACK))
        return rfs_fail(RFS_E_INVAL, "%s: a request whose reply cannot be compressed",
                        rfs_op_name(r->op));
    if (r->zshuf && !r->zok)
        return rfs_fail(RFS_E_INVAL, "%s: shuffled codecs offered without compression",
                        rfs_op_name(r->op));
    if (r->coll && r->op != RFS_OP_PREADV && r->op != RFS_OP_PWRITEV)
        return rfs_fail(RFS_E_INVAL, "%s: only list I/O can be marked collective",
                        rfs_op_name(r->op));
    rfs_hdr h = {.version = RFS_PROTO_VERSION,
                 .op = r->op,
                 .flags =
                     (uint16_t)((r->want_ver ? RFS_F_VER : 0) |
                                (r->extra_stream ? RFS_F_EXTRA : 0) | (r->zok ? RFS_F_ZOK : 0) |
                                (r->zshuf ? RFS_F_ZSHUF : 0) | (r->coll ? RFS_F_COLL : 0)),
                 .req_id = r->id,
                 .status = 0,
                 .body_len = (uint32_t)body};
    rfs_hdr_encode(out, &h);
    *len = w.n;
    return RFS_OK;
}

/* ---- decode ---- */

static void get_path(rd *in, rfs_wpath *p)
{
    p->len = rd_u16(in);
    p->s = (const char *)rd_take(in, p->len);
}

int rfs_req_decode(const rfs_hdr *h, const uint8_t *body, size_t len, rfs_req *r)
{
    memset(r, 0, sizeof *r);
    r->op = h->op;
    r->id = h->req_id;
    const char *name = rfs_op_name(h->op);
    if (!rfs_op_known(h->op))
        return rfs_fail(RFS_E_PROTO, "request with unknown op %u", h->op);
    if ((h->flags & ~(RFS_F_VER | RFS_F_EXTRA | RFS_F_ZOK | RFS_F_ZSHUF | RFS_F_COLL)) != 0 ||
        h->status != 0)
        return rfs_fail(RFS_E_PROTO, "%s request: reply flag or status set", name);
    if ((h->flags & RFS_F_COLL) && h->op != RFS_OP_PREADV && h->op != RFS_OP_PWRITEV)
        return rfs_fail(RFS_E_PROTO, "%s request marked collective, which only list I/O can be",
                        name);
    r->coll = (h->flags & RFS_F_COLL) != 0;
    if ((h->flags & RFS_F_ZOK) && !rfs_op_has(h->op, RFS_OPF_REP_PACK))
        return rfs_fail(RFS_E_PROTO,
                        "%s request accepts a compressed reply, which only reads "
                        "of a file's bytes have",
                        name);
    r->zok = (h->flags & RFS_F_ZOK) != 0;
    r->zshuf = (h->flags & RFS_F_ZSHUF) != 0;
    if (r->zshuf && !r->zok)
        return rfs_fail(RFS_E_PROTO,
                        "%s request offers shuffled codecs without accepting a "
                        "compressed reply",
                        name);
    if ((h->flags & RFS_F_EXTRA) && h->op != RFS_OP_HELLO)
        return rfs_fail(RFS_E_PROTO,
                        "%s request marks an additional stream, which only a "
                        "HELLO can",
                        name);
    r->extra_stream = (h->flags & RFS_F_EXTRA) != 0;
    if ((h->flags & RFS_F_VER) && !rfs_op_has(h->op, RFS_OPF_VERSIONED))
        return rfs_fail(RFS_E_PROTO,
                        "%s request asks for the file's version, which only "
                        "OPEN and the writes and size changes of a file have",
                        name);
    r->want_ver = (h->flags & RFS_F_VER) != 0;
    if (len != h->body_len || (len && !body))
        return rfs_fail(RFS_E_PROTO, "%s request: body of %zu bytes, header says %u", name, len,
                        h->body_len);

    rd in = {.p = body, .rem = len};
    switch ((rfs_op)h->op) {
    case RFS_OP_HELLO:
        r->u.hello.min_version = rd_u16(&in);
        r->u.hello.max_version = rd_u16(&in);
        r->u.hello.max_frame = rd_u32(&in);
        break;
    case RFS_OP_AUTH:
        rd_bytes(&in, r->u.auth.client_nonce, RFS_NONCE_LEN);
        rd_bytes(&in, r->u.auth.mac, RFS_MAC_LEN);
        break;
    case RFS_OP_PING: break;
    case RFS_OP_SESSION:
        rd_bytes(&in, r->u.session.id, RFS_SESSION_LEN);
        rd_bytes(&in, r->u.session.fence, RFS_SESSION_LEN);
        break;
    case RFS_OP_PLACE:
        rd_bytes(&in, r->u.place.job, RFS_PLACE_JOB_LEN);
        r->u.place.rank = rd_u32(&in);
        break;
    case RFS_OP_COLL_JOIN:
        r->u.coll_join.fh = rd_u32(&in);
        rd_bytes(&in, r->u.coll_join.id, RFS_COLL_ID_LEN);
        r->u.coll_join.nranks = rd_u32(&in);
        r->u.coll_join.hints.len = rd_u16(&in);
        r->u.coll_join.hints.s = (const char *)rd_take(&in, r->u.coll_join.hints.len);
        break;
    case RFS_OP_OPEN:
        r->u.open.flags = rd_u32(&in);
        r->u.open.mode = rd_u32(&in);
        get_path(&in, &r->u.open.path);
        break;
    case RFS_OP_CLOSE:
    case RFS_OP_SYNC:
    case RFS_OP_GET_SIZE: r->u.fh.fh = rd_u32(&in); break;
    case RFS_OP_PREAD:
        r->u.pread.fh = rd_u32(&in);
        r->u.pread.off = rd_u64(&in);
        r->u.pread.len = rd_u32(&in);
        break;
    case RFS_OP_PWRITE:
        r->u.pwrite.fh = rd_u32(&in);
        r->u.pwrite.off = rd_u64(&in);
        break;
    case RFS_OP_PREADV:
    case RFS_OP_PWRITEV:
        r->u.iov.fh = rd_u32(&in);
        r->u.iov.count = rd_u32(&in);
        if (in.bad)
            break;
        if (r->u.iov.count > RFS_MAX_EXTENTS)
            return rfs_fail(RFS_E_TOOBIG, "%s: %u extents (limit %u)", name, r->u.iov.count,
                            RFS_MAX_EXTENTS);
        r->u.iov.ext = rd_take(&in, (size_t)r->u.iov.count * RFS_EXTENT_WIRE);
        break;
    case RFS_OP_SET_SIZE:
    case RFS_OP_PREALLOCATE:
        r->u.size.fh = rd_u32(&in);
        r->u.size.size = rd_u64(&in);
        break;
    case RFS_OP_STAT:
    case RFS_OP_DELETE:
    case RFS_OP_STATFS: get_path(&in, &r->u.path.path); break;
    case RFS_OP_RENAME:
        get_path(&in, &r->u.rename.from);
        get_path(&in, &r->u.rename.to);
        break;
    case RFS_OP_READ_FILE:
        r->u.read_file.max = rd_u32(&in);
        get_path(&in, &r->u.read_file.path);
        break;
    case RFS_OP_WRITE_FILE:
        r->u.write_file.flags = rd_u32(&in);
        r->u.write_file.mode = rd_u32(&in);
        get_path(&in, &r->u.write_file.path);
        break;
    case RFS_OP_MKDIR:
    case RFS_OP_CHMOD:
        r->u.mkdir.mode = rd_u32(&in);
        get_path(&in, &r->u.mkdir.path);
        break;
    case RFS_OP_LIST:
    case RFS_OP_LIST_TREE:
        r->u.list.start = rd_u32(&in);
        get_path(&in, &r->u.list.path);
        break;
    case RFS_OP_CHECKSUM:
        r->u.checksum.fh = rd_u32(&in);
        r->u.checksum.algo = rd_u32(&in);
        r->u.checksum.off = rd_u64(&in);
        r->u.checksum.len = rd_u64(&in);
        r->u.checksum.seed = rd_u64(&in);
        break;
    case RFS_OP_COUNTER:
        r->u.counter.fh = rd_u32(&in);
        r->u.counter.key = rd_u32(&in);
        r->u.counter.set = rd_u32(&in);
        r->u.counter.delta = (int64_t)rd_u64(&in);
        break;
    case RFS_OP_LOCK:
        r->u.lock.fh = rd_u32(&in);
        r->u.lock.off = rd_u64(&in);
        r->u.lock.len = rd_u64(&in);
        r->u.lock.mode = rd_u32(&in);
        r->u.lock.wait_ms = rd_u32(&in);
        break;
    case RFS_OP_UNLOCK:
        r->u.unlock.fh = rd_u32(&in);
        r->u.unlock.off = rd_u64(&in);
        r->u.unlock.len = rd_u64(&in);
        break;
    case RFS_OP_SET_VIEW:
        r->u.set_view.fh = rd_u32(&in);
        r->u.set_view.view_id = rd_u32(&in);
        r->u.set_view.disp = rd_u64(&in);
        break;
    case RFS_OP_VIEW_READ:
        r->u.view_read.fh = rd_u32(&in);
        r->u.view_read.view_id = rd_u32(&in);
        r->u.view_read.pos = rd_u64(&in);
        r->u.view_read.len = rd_u32(&in);
        break;
    case RFS_OP_VIEW_WRITE:
        r->u.view_write.fh = rd_u32(&in);
        r->u.view_write.view_id = rd_u32(&in);
        r->u.view_write.pos = rd_u64(&in);
        break;
    case RFS_OP_TPC_AUTH:
        rd_bytes(&in, r->u.tpc_auth.id, RFS_TPC_ID_LEN);
        rd_bytes(&in, r->u.tpc_auth.client_nonce, RFS_NONCE_LEN);
        rd_bytes(&in, r->u.tpc_auth.mac, RFS_MAC_LEN);
        break;
    case RFS_OP_TPC_GRANT:
        r->u.tpc_grant.uses = rd_u32(&in);
        get_path(&in, &r->u.tpc_grant.path);
        break;
    case RFS_OP_TPC_PULL:
        r->u.tpc_pull.flags = rd_u32(&in);
        r->u.tpc_pull.mode = rd_u32(&in);
        r->u.tpc_pull.port = rd_u32(&in);
        r->u.tpc_pull.streams = rd_u32(&in);
        rd_bytes(&in, r->u.tpc_pull.id, RFS_TPC_ID_LEN);
        rd_bytes(&in, r->u.tpc_pull.key, RFS_TPC_KEY_LEN);
        rd_bytes(&in, r->u.tpc_pull.pin, RFS_TPC_PIN_LEN);
        get_path(&in, &r->u.tpc_pull.host);
        get_path(&in, &r->u.tpc_pull.src);
        get_path(&in, &r->u.tpc_pull.dst);
        break;
    case RFS_OP_TPC_STATUS: r->u.tpc_status.job = rd_u32(&in); break;
    case RFS_OP_CAP_AUTH:
    case RFS_OP_CAP_REVOKE: get_path(&in, &r->u.cap.str); break;
    case RFS_OP_OBJ_LEASE:
        r->u.obj_lease.expires = rd_u64(&in);
        get_path(&in, &r->u.obj_lease.path);
        break;
    case RFS_OP_CAP_ISSUE:
        r->u.cap_issue.right = rd_u32(&in);
        r->u.cap_issue.flags = rd_u32(&in);
        r->u.cap_issue.expires = rd_u64(&in);
        get_path(&in, &r->u.cap_issue.path);
        break;
    }
    if (in.bad)
        return rfs_fail(RFS_E_PROTO, "%s request: body of %zu bytes is truncated", name, len);
    if (has_payload(h->op)) {
        r->data = in.rem ? in.p : NULL;
        r->data_len = (uint32_t)in.rem; /* rem <= body_len, a u32 */
    } else if (in.rem != 0) {
        return rfs_fail(RFS_E_PROTO, "%s request: %zu unexpected bytes after the fields", name,
                        in.rem);
    }

    uint64_t total;
    int have_total;
    int rc = check_req(r, NULL, &total, &have_total);
    if (rc)
        return rc;
    if (h->op == RFS_OP_PREADV || h->op == RFS_OP_PWRITEV)
        r->u.iov.total = total;
    if (h->op == RFS_OP_PWRITEV && total != r->data_len)
        return rfs_fail(RFS_E_PROTO, "PWRITEV: %u data bytes for extents totalling %llu",
                        r->data_len, (unsigned long long)total);
    return RFS_OK;
}

int rfs_req_decode_pwrite_head(const rfs_hdr *h, const uint8_t *fixed, rfs_req *r)
{
    if (h->op != RFS_OP_PWRITE || h->body_len < RFS_PWRITE_FIXED)
        return rfs_fail(RFS_E_PROTO, "%s request of %u bytes is not a PWRITE head",
                        rfs_op_name(h->op), h->body_len);
    rfs_hdr head = *h;
    head.body_len = RFS_PWRITE_FIXED;
    int rc = rfs_req_decode(&head, fixed, RFS_PWRITE_FIXED, r);
    if (rc)
        return rc;
    r->data = NULL;
    r->data_len = h->body_len - RFS_PWRITE_FIXED;
    uint64_t total;
    int have_total;
    return check_req(r, NULL, &total, &have_total);
}
