/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Collective calls through a server group's MPI-IO (docs/protocol.md "Collective calls"):
 * COLL_JOIN once per open file, then one RFS_F_COLL list I/O per collective call, on the
 * file's first stream. A call waits for the reply before the next is sent: the server numbers
 * a handle's collective parts in the order they run. */
#include "client/client.h"

#include "common/err.h"

#include <stdio.h>
#include <string.h>

int rfs_coll_join(rfs_file *f, const unsigned char id[16], unsigned nranks, const char *hints,
                  size_t *max_part)
{
    if (!(rfs_conn_features(f->conn[0]) & RFS_FEAT_COLL))
        return rfs_fail(RFS_E_UNSUPPORTED, "%s: the server does not run collective calls",
                        f->label);
    size_t hlen = hints ? strlen(hints) : 0;
    if (hlen > RFS_COLL_MAX_HINTS)
        return rfs_fail(RFS_E_TOOBIG, "%s: %zu bytes of hints for the server (limit %u)", f->label,
                        hlen, RFS_COLL_MAX_HINTS);
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_COLL_JOIN;
    req.u.coll_join.fh = f->fh[0];
    memcpy(req.u.coll_join.id, id, RFS_COLL_ID_LEN);
    req.u.coll_join.nranks = nranks;
    req.u.coll_join.hints.s = hints ? hints : "";
    req.u.coll_join.hints.len = (uint16_t)hlen;
    rfs_call call;
    rfs_call_init(&call);
    int rc = rfs_conn_call(f->conn[0], &call, &req, f->io_timeout_ms, f->label);
    rfs_call_destroy(&call);
    /* a frame holds the header, a checksum, fh and count, the runs and the data */
    uint32_t frame = rfs_conn_max_frame(f->conn[0]);
    *max_part = frame > RFS_HDR_SIZE + RFS_SUM_LEN + 8 ? frame - RFS_HDR_SIZE - RFS_SUM_LEN - 8 : 0;
    return rc;
}

int rfs_coll_listio(rfs_file *f, int is_write, const rfs_extent *ext, size_t n, void *buf,
                    size_t *done)
{
    *done = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += ext[i].length;
    if (n > RFS_MAX_EXTENTS || total > UINT32_MAX)
        return rfs_fail(RFS_E_TOOBIG, "%s: a collective part of %zu runs and %llu bytes", f->label,
                        n, (unsigned long long)total);
    /* this rank's earlier writes are in the file before the group's collective call */
    int rc = rfs_wwin_settle(f, 1);
    if (rc)
        return rc;
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = is_write ? RFS_OP_PWRITEV : RFS_OP_PREADV;
    req.coll = 1;
    req.u.iov.fh = f->fh[0];
    req.u.iov.count = (uint32_t)n;
    req.u.iov.total = total;
    rfs_call call;
    rfs_call_init(&call);
    if (is_write) {
        req.data = buf;
        req.data_len = (uint32_t)total;
    } else {
        call.dst = buf;
        call.dst_cap = (size_t)total;
    }
    rc = rfs_conn_start(f->conn[0], &call, &req, (const uint64_t *)ext, f->io_timeout_ms);
    if (rc == RFS_OK)
        rc = rfs_call_result(f->conn[0], &call, rfs_conn_wait(f->conn[0], &call), f->label);
    else
        rc = rfs_fail_cause(rc, "%s", f->label);
    if (rc == RFS_OK)
        *done = is_write ? (size_t)call.rep.u.u64.value : call.data_len;
    rfs_call_destroy(&call);
    return rc;
}
