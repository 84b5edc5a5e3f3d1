/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Reply bodies: encode and decode for every op, and error replies. Layouts (little-endian)
 * are in docs/protocol.md and summarised next to each case. A reply's fields are checked the
 * same way in both directions; a bad field is RFS_E_INVAL when encoding (caller's bug) and
 * RFS_E_PROTO when decoding (the peer is broken or hostile). */
#include "proto/proto.h"
#include "proto/wire.h"

#include "common/err.h"

#include <string.h>

enum rep_shape { SHAPE_EMPTY, SHAPE_DATA, SHAPE_U64, SHAPE_OTHER };

static enum rep_shape shape_of(uint16_t op)
{
    if (rfs_op_has(op, RFS_OPF_REP_DATA))
        return SHAPE_DATA;
    switch ((rfs_op)op) {
    case RFS_OP_PWRITE:
    case RFS_OP_PWRITEV:
    case RFS_OP_VIEW_WRITE:
    case RFS_OP_GET_SIZE:
    case RFS_OP_COUNTER:
    case RFS_OP_OBJ_LEASE:
    case RFS_OP_WRITE_FILE: return SHAPE_U64;
    case RFS_OP_CLOSE:
    case RFS_OP_SYNC:
    case RFS_OP_SET_SIZE:
    case RFS_OP_PREALLOCATE:
    case RFS_OP_DELETE:
    case RFS_OP_RENAME:
    case RFS_OP_MKDIR:
    case RFS_OP_CHMOD:
    case RFS_OP_LOCK:
    case RFS_OP_UNLOCK:
    case RFS_OP_COLL_JOIN:
    case RFS_OP_CAP_REVOKE:
    case RFS_OP_SET_VIEW: return SHAPE_EMPTY;
    default: return SHAPE_OTHER; /* fields of their own (HELLO, OPEN, STAT, LIST, ...) */
    }
}

/* PLACE: a process of the group, and an address a client may dial: "HOST:PORT" of at most
 * RFS_PLACE_MAX_ADDR bytes of letters, digits and ".-:_[]" (empty: stay). */
static int check_place(const rfs_rep *r, int bad)
{
    if (r->u.place.count == 0 || r->u.place.index >= r->u.place.count)
        return rfs_fail(bad, "PLACE reply: process %u of %u", r->u.place.index, r->u.place.count);
    const rfs_wpath *a = &r->u.place.addr;
    if (a->len > RFS_PLACE_MAX_ADDR)
        return rfs_fail(bad == RFS_E_PROTO ? RFS_E_TOOBIG : bad,
                        "PLACE reply: address of %u bytes (limit %u)", a->len, RFS_PLACE_MAX_ADDR);
    static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:_[]";
    for (unsigned i = 0; i < a->len; i++)
        if (!a->s[i] || !strchr(ok, a->s[i]))
            return rfs_fail(bad, "PLACE reply: byte 0x%02x in the address", (unsigned char)a->s[i]);
    return RFS_OK;
}

/* Field checks of a successful reply; bad is the code for a wrong value. */
static int check_rep(const rfs_rep *r, int bad)
{
    const char *name = rfs_op_name(r->op);
    if (shape_of(r->op) != SHAPE_DATA && r->data_len != 0)
        return rfs_fail(bad, "%s reply carries no payload", name);
    switch ((rfs_op)r->op) {
    case RFS_OP_HELLO:
        if (r->u.hello.version == 0 || r->u.hello.auth_required > 1)
            return rfs_fail(bad, "HELLO reply: version %u, auth_required %u", r->u.hello.version,
                            r->u.hello.auth_required);
        if (r->u.hello.max_frame < RFS_FRAME_MIN || r->u.hello.max_frame > RFS_FRAME_HARD_MAX)
            return rfs_fail(bad, "HELLO reply: max frame %u outside %u..%u", r->u.hello.max_frame,
                            RFS_FRAME_MIN, RFS_FRAME_HARD_MAX);
        return RFS_OK;
    case RFS_OP_SESSION:
        if (r->u.session.fenced > 1)
            return rfs_fail(bad, "SESSION reply: fenced %u", r->u.session.fenced);
        return RFS_OK;
    case RFS_OP_PLACE: return check_place(r, bad);
    case RFS_OP_OPEN:
        if (r->u.open.size > (uint64_t)INT64_MAX)
            return rfs_fail(bad, "OPEN reply: size %llu", (unsigned long long)r->u.open.size);
        return RFS_OK;
    case RFS_OP_STATFS:
        if (r->u.statfs.free > r->u.statfs.total || r->u.statfs.avail > r->u.statfs.free ||
            r->u.statfs.files_free > r->u.statfs.files)
            return rfs_fail(bad, "STATFS reply: free space or files above the totals");
        return RFS_OK;
    case RFS_OP_STAT:
        if (r->u.stat.type < RFS_TYPE_FILE || r->u.stat.type > RFS_TYPE_OTHER)
            return rfs_fail(bad, "STAT reply: type %u", r->u.stat.type);
        return RFS_OK;
    case RFS_OP_CHECKSUM:
        if (r->u.checksum.algo != RFS_SUM_CRC32C || r->u.checksum.value > UINT32_MAX)
            return rfs_fail(bad, "CHECKSUM reply: algorithm %u, value %llu", r->u.checksum.algo,
                            (unsigned long long)r->u.checksum.value);
        if (r->u.checksum.len > RFS_CHECKSUM_MAX_LEN)
            return rfs_fail(bad, "CHECKSUM reply: covers %llu bytes (limit %u)",
                            (unsigned long long)r->u.checksum.len, RFS_CHECKSUM_MAX_LEN);
        return RFS_OK;
    case RFS_OP_TPC_GRANT:
        if (r->u.tpc_grant.size > (uint64_t)INT64_MAX)
            return rfs_fail(bad, "TPC_GRANT reply: size %llu",
                            (unsigned long long)r->u.tpc_grant.size);
        return RFS_OK;
    case RFS_OP_CAP_AUTH:
        if (r->u.cap_auth.right < 1 || r->u.cap_auth.right > 3)
            return rfs_fail(bad, "CAP_AUTH reply: right %u", r->u.cap_auth.right);
        return RFS_OK;
    case RFS_OP_CAP_ISSUE: {
        const rfs_wpath *c = &r->u.cap_issue.str;
        if (c->len == 0 || c->len > RFS_CAP_WIRE_MAX)
            return rfs_fail(bad == RFS_E_PROTO && c->len ? RFS_E_TOOBIG : bad,
                            "CAP_ISSUE reply: capability of %u bytes (1..%u)", c->len,
                            RFS_CAP_WIRE_MAX);
        for (unsigned i = 0; i < c->len; i++)
            if ((unsigned char)c->s[i] <= 0x20 || (unsigned char)c->s[i] > 0x7e)
                return rfs_fail(bad, "CAP_ISSUE reply: byte 0x%02x in the capability",
                                (unsigned char)c->s[i]);
        return RFS_OK;
    }
    case RFS_OP_TPC_STATUS:
        if ((r->u.tpc_status.state != RFS_TPC_RUNNING && r->u.tpc_status.state != RFS_TPC_DONE) ||
            r->u.tpc_status.done > r->u.tpc_status.total ||
            r->u.tpc_status.total > (uint64_t)INT64_MAX)
            return rfs_fail(bad, "TPC_STATUS reply: state %u, %llu of %llu bytes",
                            r->u.tpc_status.state, (unsigned long long)r->u.tpc_status.done,
                            (unsigned long long)r->u.tpc_status.total);
        return RFS_OK;
    case RFS_OP_LIST: {
        if (!r->u.list.entries)
            return r->u.list.count <= RFS_LIST_MAX_ENTRIES
                       ? RFS_OK
                       : rfs_fail(RFS_E_TOOBIG, "LIST reply: %u entries", r->u.list.count);
        int rc = rfs_wire_check_list(r->u.list.entries, r->u.list.entries_len, r->u.list.count);
        return rc == RFS_E_TOOBIG ? rc : rc ? bad : RFS_OK;
    }
    default: return RFS_OK;
    }
}

/* Error messages are trimmed rather than refused: the server's message is advice, and a
 * long one must not turn an error reply into a failure to reply. The cut is placed at the
 * first NUL and before a partial UTF-8 sequence. */
static uint16_t error_msg_len(const char *s, size_t len)
{
    if (!s)
        return 0;
    const char *nul = memchr(s, '\0', len);
    if (nul)
        len = (size_t)(nul - s);
    if (len > RFS_MAX_MSG) {
        len = RFS_MAX_MSG;
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
            len--;
    }
    return (uint16_t)len;
}

int rfs_rep_encode(const rfs_rep *r, uint8_t *out, size_t cap, size_t *len)
{
    *len = 0;
    const char *name = rfs_op_name(r->op);
    uint64_t unwritten = 0; /* body bytes the caller sends after out */
    wr w = {.p = out, .cap = cap};
    if (!wr_take(&w, RFS_HDR_SIZE))
        return rfs_fail(RFS_E_TOOBIG, "%s reply: buffer of %zu bytes too small", name, cap);
    if (r->has_ver) { /* the version block leads, on success and error replies */
        if (!rfs_op_has(r->op, RFS_OPF_VERSIONED))
            return rfs_fail(RFS_E_INVAL, "%s reply cannot carry a file version", name);
        if (r->ver.size > (uint64_t)INT64_MAX)
            return rfs_fail(RFS_E_INVAL, "%s reply: version size %llu", name,
                            (unsigned long long)r->ver.size);
        wr_u64(&w, r->ver.size);
        wr_u64(&w, (uint64_t)r->ver.mtime_ns);
    }

    if (r->status != 0) { /* any op, known or not: u16 msg_len, msg */
        uint16_t n = error_msg_len(r->u.err.s, r->u.err.len);
        wr_u16(&w, n);
        wr_bytes(&w, r->u.err.s, n);
    } else {
        if (!rfs_op_known(r->op))
            return rfs_fail(RFS_E_INVAL, "reply to unknown op %u", r->op);
        int rc = check_rep(r, RFS_E_INVAL);
        if (rc)
            return rc;
        switch (shape_of(r->op)) {
        case SHAPE_EMPTY: break;
        case SHAPE_DATA: /* payload only */ unwritten = r->data_len; break;
        case SHAPE_U64: /* u64 value */ wr_u64(&w, r->u.u64.value); break;
        case SHAPE_OTHER:
            switch (r->op) {
            case RFS_OP_HELLO: /* u16 version, u16 features, u32 max_frame, u32 auth_required, nonce[32] */
                wr_u16(&w, r->u.hello.version);
                wr_u16(&w, r->u.hello.features);
                wr_u32(&w, r->u.hello.max_frame);
                wr_u32(&w, r->u.hello.auth_required);
                wr_bytes(&w, r->u.hello.nonce, RFS_NONCE_LEN);
                break;
            case RFS_OP_AUTH: /* server_mac[32] */
            case RFS_OP_TPC_AUTH: wr_bytes(&w, r->u.auth.server_mac, RFS_MAC_LEN); break;
            case RFS_OP_TPC_GRANT: /* id[16], key[32], u32 ttl_ms, u64 size */
                wr_bytes(&w, r->u.tpc_grant.id, RFS_TPC_ID_LEN);
                wr_bytes(&w, r->u.tpc_grant.key, RFS_TPC_KEY_LEN);
                wr_u32(&w, r->u.tpc_grant.ttl_ms);
                wr_u64(&w, r->u.tpc_grant.size);
                break;
            case RFS_OP_TPC_PULL: /* u32 job */ wr_u32(&w, r->u.tpc_pull.job); break;
            case RFS_OP_CAP_AUTH: /* u32 right, u64 expires */
                wr_u32(&w, r->u.cap_auth.right);
                wr_u64(&w, r->u.cap_auth.expires);
                break;
            case RFS_OP_CAP_ISSUE: /* u16 len, capability */
                wr_u16(&w, r->u.cap_issue.str.len);
                wr_bytes(&w, r->u.cap_issue.str.s, r->u.cap_issue.str.len);
                break;
            case RFS_OP_TPC_STATUS: /* u32 state, u32 crc, u64 done, u64 total */
                wr_u32(&w, r->u.tpc_status.state);
                wr_u32(&w, r->u.tpc_status.crc);
                wr_u64(&w, r->u.tpc_status.done);
                wr_u64(&w, r->u.tpc_status.total);
                break;
            case RFS_OP_SESSION: /* u32 lease_ms, u32 fenced, boot[16] */
                wr_u32(&w, r->u.session.lease_ms);
                wr_u32(&w, r->u.session.fenced);
                wr_bytes(&w, r->u.session.boot, RFS_SESSION_LEN);
                break;
            case RFS_OP_PLACE: /* u32 index, u32 count, u16 addr_len, addr */
                wr_u32(&w, r->u.place.index);
                wr_u32(&w, r->u.place.count);
                wr_u16(&w, r->u.place.addr.len);
                wr_bytes(&w, r->u.place.addr.s, r->u.place.addr.len);
                break;
            case RFS_OP_OPEN: /* u32 fh, u64 size */
                wr_u32(&w, r->u.open.fh);
                wr_u64(&w, r->u.open.size);
                break;
            case RFS_OP_STAT: /* u32 type, u32 mode, u64 size, i64 mtime_ns */
                wr_u32(&w, r->u.stat.type);
                wr_u32(&w, r->u.stat.mode);
                wr_u64(&w, r->u.stat.size);
                wr_u64(&w, (uint64_t)r->u.stat.mtime_ns);
                break;
            case RFS_OP_STATFS: /* u64 total, free, avail, files, files_free */
                wr_u64(&w, r->u.statfs.total);
                wr_u64(&w, r->u.statfs.free);
                wr_u64(&w, r->u.statfs.avail);
                wr_u64(&w, r->u.statfs.files);
                wr_u64(&w, r->u.statfs.files_free);
                break;
            case RFS_OP_CHECKSUM: /* u32 algo, u64 len, u64 value */
                wr_u32(&w, r->u.checksum.algo);
                wr_u64(&w, r->u.checksum.len);
                wr_u64(&w, r->u.checksum.value);
                break;
            case RFS_OP_LIST: /* u32 count, u32 next, entries */
                wr_u32(&w, r->u.list.count);
                wr_u32(&w, r->u.list.next);
                if (r->u.list.entries)
                    wr_bytes(&w, r->u.list.entries, r->u.list.entries_len);
                else
                    unwritten = r->u.list.entries_len;
                break;
            }
            break;
        }
    }
    if (w.full)
        return rfs_fail(RFS_E_TOOBIG, "%s reply: buffer of %zu bytes too small", name, cap);
    uint64_t body = (uint64_t)(w.n - RFS_HDR_SIZE) + unwritten;
    if (RFS_HDR_SIZE + body > RFS_FRAME_HARD_MAX)
        return rfs_fail(RFS_E_TOOBIG, "%s reply: frame of %llu bytes over the %u-byte limit", name,
                        (unsigned long long)(RFS_HDR_SIZE + body), RFS_FRAME_HARD_MAX);
    rfs_hdr h = {.version = RFS_PROTO_VERSION,
                 .op = r->op,
                 .flags = (uint16_t)(RFS_F_REPLY | (r->has_ver ? RFS_F_VER : 0)),
                 .req_id = r->id,
                 .status = r->status,
                 .body_len = (uint32_t)body};
    rfs_hdr_encode(out, &h);
    *len = w.n;
    return RFS_OK;
}

int rfs_rep_decode(const rfs_hdr *h, const uint8_t *body, size_t len, rfs_rep *r)
{
    memset(r, 0, sizeof *r);
    r->op = h->op;
    r->id = h->req_id;
    r->status = h->status;
    const char *name = rfs_op_name(h->op);
    if (!rfs_op_known(h->op))
        return rfs_fail(RFS_E_PROTO, "reply with unknown op %u", h->op);
    /* a packed reply reaches the decoder unpacked (rfs_frame_pack_info, decompressed) */
    if ((h->flags & ~RFS_F_VER) != RFS_F_REPLY)
        return rfs_fail(RFS_E_PROTO, "%s reply: flags 0x%04x", name, h->flags);
    if ((h->flags & RFS_F_VER) && !rfs_op_has(h->op, RFS_OPF_VERSIONED))
        return rfs_fail(RFS_E_PROTO, "%s reply carries a file version", name);
    if (len != h->body_len || (len && !body))
        return rfs_fail(RFS_E_PROTO, "%s reply: body of %zu bytes, header says %u", name, len,
                        h->body_len);

    rd in = {.p = body, .rem = len};
    if (h->flags & RFS_F_VER) {
        r->has_ver = 1;
        r->ver.size = rd_u64(&in);
        r->ver.mtime_ns = (int64_t)rd_u64(&in);
        if (in.bad)
            return rfs_fail(RFS_E_PROTO,
                            "%s reply: body of %zu bytes too short for its file "
                            "version",
                            name, len);
        if (r->ver.size > (uint64_t)INT64_MAX)
            return rfs_fail(RFS_E_PROTO, "%s reply: file version size %llu", name,
                            (unsigned long long)r->ver.size);
    }
    if (h->status != 0) {
        r->u.err.len = rd_u16(&in);
        if (in.bad)
            return rfs_fail(RFS_E_PROTO, "%s error reply: truncated", name);
        if (r->u.err.len > RFS_MAX_MSG)
            return rfs_fail(RFS_E_TOOBIG, "%s error reply: message of %u bytes (limit %u)", name,
                            r->u.err.len, RFS_MAX_MSG);
        r->u.err.s = (const char *)rd_take(&in, r->u.err.len);
        if (in.bad)
            return rfs_fail(RFS_E_PROTO, "%s error reply: truncated message", name);
        if (in.rem != 0)
            return rfs_fail(RFS_E_PROTO, "%s error reply: %zu bytes after the message", name,
                            in.rem);
        if (memchr(r->u.err.s, '\0', r->u.err.len))
            return rfs_fail(RFS_E_PROTO, "%s error reply: NUL byte in message", name);
        return RFS_OK;
    }

    switch (shape_of(h->op)) {
    case SHAPE_EMPTY: break;
    case SHAPE_DATA:
        r->data = in.rem ? in.p : NULL;
        r->data_len = (uint32_t)in.rem;
        in.p += in.rem;
        in.rem = 0;
        break;
    case SHAPE_U64: r->u.u64.value = rd_u64(&in); break;
    case SHAPE_OTHER:
        switch (h->op) {
        case RFS_OP_HELLO: {
            r->u.hello.version = rd_u16(&in);
            r->u.hello.features = rd_u16(&in); /* unknown bits: a newer server, ignored */
            r->u.hello.max_frame = rd_u32(&in);
            r->u.hello.auth_required = rd_u32(&in);
            rd_bytes(&in, r->u.hello.nonce, RFS_NONCE_LEN);
            break;
        }
        case RFS_OP_AUTH:
        case RFS_OP_TPC_AUTH: rd_bytes(&in, r->u.auth.server_mac, RFS_MAC_LEN); break;
        case RFS_OP_TPC_GRANT:
            rd_bytes(&in, r->u.tpc_grant.id, RFS_TPC_ID_LEN);
            rd_bytes(&in, r->u.tpc_grant.key, RFS_TPC_KEY_LEN);
            r->u.tpc_grant.ttl_ms = rd_u32(&in);
            r->u.tpc_grant.size = rd_u64(&in);
            break;
        case RFS_OP_TPC_PULL: r->u.tpc_pull.job = rd_u32(&in); break;
        case RFS_OP_CAP_AUTH:
            r->u.cap_auth.right = rd_u32(&in);
            r->u.cap_auth.expires = rd_u64(&in);
            break;
        case RFS_OP_CAP_ISSUE:
            r->u.cap_issue.str.len = rd_u16(&in);
            r->u.cap_issue.str.s = (const char *)rd_take(&in, r->u.cap_issue.str.len);
            break;
        case RFS_OP_TPC_STATUS:
            r->u.tpc_status.state = rd_u32(&in);
            r->u.tpc_status.crc = rd_u32(&in);
            r->u.tpc_status.done = rd_u64(&in);
            r->u.tpc_status.total = rd_u64(&in);
            break;
        case RFS_OP_SESSION:
            r->u.session.lease_ms = rd_u32(&in);
            r->u.session.fenced = rd_u32(&in);
            rd_bytes(&in, r->u.session.boot, RFS_SESSION_LEN);
            break;
        case RFS_OP_PLACE:
            r->u.place.index = rd_u32(&in);
            r->u.place.count = rd_u32(&in);
            r->u.place.addr.len = rd_u16(&in);
            r->u.place.addr.s = (const char *)rd_take(&in, r->u.place.addr.len);
            break;
        case RFS_OP_OPEN:
            r->u.open.fh = rd_u32(&in);
            r->u.open.size = rd_u64(&in);
            break;
        case RFS_OP_STAT:
            r->u.stat.type = rd_u32(&in);
            r->u.stat.mode = rd_u32(&in);
            r->u.stat.size = rd_u64(&in);
            r->u.stat.mtime_ns = (int64_t)rd_u64(&in);
            break;
        case RFS_OP_STATFS:
            r->u.statfs.total = rd_u64(&in);
            r->u.statfs.free = rd_u64(&in);
            r->u.statfs.avail = rd_u64(&in);
            r->u.statfs.files = rd_u64(&in);
            r->u.statfs.files_free = rd_u64(&in);
            break;
        case RFS_OP_CHECKSUM:
            r->u.checksum.algo = rd_u32(&in);
            r->u.checksum.len = rd_u64(&in);
            r->u.checksum.value = rd_u64(&in);
            break;
        case RFS_OP_LIST:
            r->u.list.count = rd_u32(&in);
            r->u.list.next = rd_u32(&in);
            r->u.list.entries = in.p;
            r->u.list.entries_len = (uint32_t)in.rem;
            in.p += in.rem;
            in.rem = 0;
            break;
        }
        break;
    }
    if (in.bad)
        return rfs_fail(RFS_E_PROTO, "%s reply: body of %zu bytes is truncated", name, len);
    if (in.rem != 0)
        return rfs_fail(RFS_E_PROTO, "%s reply: %zu unexpected bytes after the fields", name,
                        in.rem);
    return check_rep(r, RFS_E_PROTO);
}
