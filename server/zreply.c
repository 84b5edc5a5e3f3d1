/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* See zreply.h. */
#include "zreply.h"

#include <stdlib.h>
#include <string.h>

#include "common/compress.h"
#include "common/zauto.h"
#include "transport/transport.h"

/* The file's decision state, made by the first read that may be compressed (concurrent first
 * reads race to install theirs; the loser frees its own). */
static rfs_zstate *state_of(rfsd_conn *c, rfsd_handle *h)
{
    rfs_zstate *z = atomic_load(&h->z);
    if (z)
        return z;
    rfs_zstate *fresh = rfs_zstate_new(c->srv->cfg.zread_mode, c->srv->cfg.zread_level);
    if (!fresh)
        return NULL;
    rfs_zstate *none = NULL;
    if (atomic_compare_exchange_strong(&h->z, &none, fresh))
        return fresh;
    rfs_zstate_free(fresh);
    return none;
}

/* Before the link was seen draining a full socket, TCP's window per round trip stands in:
 * small early on a long path (compress), huge on loopback (stay raw). */
static double link_rate(rfsd_conn *c)
{
    double B = (double)atomic_load(&c->rq.link_bps);
    if (B > 0)
        return B;
    rfs_tcp_state st;
    if (rfs_tcp_describe(c->tr, &st) != 0 || st.rtt_ms <= 0 || !st.cwnd_segments || !st.mss)
        return 0;
    return (double)st.cwnd_segments * st.mss / (st.rtt_ms / 1000.0);
}

int rfsd_zreply_wants(rfsd_conn *c, rfsd_handle *h, const rfs_req *q, size_t n)
{
    if (!q->zok || c->srv->cfg.zread_mode == RFS_Z_NONE)
        return 0;
    rfs_zstate *z = state_of(c, h);
    if (!z)
        return 0;
    if (rfs_zstate_wants(z, n))
        return 1;
    rfs_zstate_skip(z, n);
    return 0;
}

void rfsd_zreply_pack(rfsd_conn *c, rfsd_handle *h, const rfs_req *q, rfs_rep *rep, uint8_t **buf)
{
    rfs_zstate *z;
    if (!q->zok || c->srv->cfg.zread_mode == RFS_Z_NONE || rep->data_len == 0 ||
        !(z = state_of(c, h)))
        return;
    rfs_packed pk;
    unsigned offered = 1u << RFS_CODEC_LZ4 | 1u << RFS_CODEC_ZSTD; /* RFS_F_ZOK takes both */
    if (q->zshuf)
        offered |= 1u << RFS_CODEC_LZ4_SHUF | 1u << RFS_CODEC_ZSTD_SHUF;
    rfs_zstate_pack(z, offered, link_rate(c), rep->data, rep->data_len, &pk);
    if (!pk.codec)
        return;
    /* pk.data is this worker's buffer, reused by its next read: the reply outlives it */
    uint8_t *packed = malloc(pk.len);
    if (!packed)
        return;
    memcpy(packed, pk.data, pk.len);
    rep->pack_codec = pk.codec;
    rep->pack_raw_len = rep->data_len;
    free(*buf);
    *buf = packed;
    rep->data = packed;
    rep->data_len = pk.len;
}

void rfsd_zreply_free(rfsd_handle *h)
{
    rfs_zstate_free(atomic_load(&h->z));
    atomic_store(&h->z, NULL);
}
