/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* See compress_pipe.h: the connection's side of the decision (common/zauto.c makes it). */
#include "client/compress_pipe.h"

#include "client/client.h"

#include <stdio.h>

/* Before any send has waited for the socket, TCP's own view: a window per round trip. Early
 * on a long link that is small (compress the first frames; a raw 4 MiB frame at 100 Mbit/s
 * costs a third of a second), on loopback huge (stay raw). 0 when the transport cannot say. */
static double rate_prior(rfs_conn *c)
{
    rfs_tcp_state st;
    if (rfs_tcp_describe(c->t, &st) != RFS_OK || st.rtt_ms <= 0 || !st.cwnd_segments || !st.mss)
        return 0;
    return (double)st.cwnd_segments * st.mss / (st.rtt_ms / 1000.0);
}

void rfs_zpack(rfs_zstate *z, rfs_conn *c, const void *src, size_t n, rfs_packed *out)
{
    pthread_mutex_lock(&c->lock);
    unsigned offered = c->codecs; /* bit k: codec k */
    pthread_mutex_unlock(&c->lock);
    double B = (double)atomic_load(&c->link_bps);
    if (B <= 0)
        B = rate_prior(c);
    rfs_zstate_pack(z, offered, B, src, n, out);
}

void rfs_zpack_report(rfs_zstate *z, const char *label)
{
    rfs_zstats st;
    rfs_zstate_stats(z, &st);
    if (!st.packed)
        return;
    fprintf(stderr,
            "rfs stats %s: compression: %llu frames packed (%llu -> %llu bytes, %.2fx), %llu raw, "
            "auto's codec at the end %s\n",
            label, (unsigned long long)st.packed, (unsigned long long)st.raw_bytes,
            (unsigned long long)st.wire_bytes,
            st.wire_bytes ? (double)st.raw_bytes / (double)st.wire_bytes : 0.0,
            (unsigned long long)st.raw, st.choice ? rfs_codec_name(st.choice) : "none (or fixed)");
}
