/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The first byte on a connection decides TLS or plaintext (tls_gate.h). */
#include "tls_gate.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"

/* Waits until fd is readable, at most until deadline. 0 or -1. */
static int wait_in(int fd, int64_t deadline_ns)
{
    for (;;) {
        int64_t left = (deadline_ns - rfs_now_ns()) / 1000000;
        if (left <= 0)
            return -1;
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int r = poll(&pf, 1, (int)left);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

/* recv on the raw socket (flags: 0 or MSG_PEEK) of exactly len bytes before deadline. */
static int raw_recv(int fd, void *buf, size_t len, int flags, int64_t deadline_ns)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = recv(fd, (char *)buf + got, len - got, flags | MSG_DONTWAIT);
        if (n > 0 && !(flags & MSG_PEEK)) {
            got += (size_t)n;
            continue;
        }
        if (n > 0 && (size_t)n >= len)
            return 0;
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return -1;
        if (wait_in(fd, deadline_ns))
            return -1;
    }
    return 0;
}

int rfsd_tls_gate(rfsd_conn *c)
{
    int64_t deadline = c->started_ns + (int64_t)c->srv->cfg.handshake_timeout_ms * 1000000;
    uint8_t hb[RFS_HDR_SIZE];
    if (raw_recv(c->fd, hb, 1, MSG_PEEK, deadline)) { /* only 1 byte: never spins */
        if (rfs_now_ns() >= deadline && !atomic_load(&c->closing))
            RFS_LOGI("%s: no authentication within %d ms (rfsd --handshake-timeout-ms); closing",
                     c->peer, c->srv->cfg.handshake_timeout_ms);
        return -1;
    }
    if (hb[0] == RFSD_TLS_RECORD)
        return 0;
    /* A plaintext rfs client: take in its first frame (bounded) so the answer is not lost to a
     * reset, and answer that frame. */
    rfs_hdr h;
    memset(&h, 0, sizeof h);
    if (raw_recv(c->fd, hb, sizeof hb, 0, deadline))
        return -1;
    rfs_hdr_decode(hb, RFS_PRE_HELLO_MAX, &h); /* raw fields even when refused */
    uint8_t body[512];
    uint32_t left = h.body_len < RFS_PRE_HELLO_MAX ? h.body_len : 0;
    while (left > 0) {
        uint32_t k = left < sizeof body ? left : (uint32_t)sizeof body;
        if (raw_recv(c->fd, body, k, 0, deadline))
            break;
        left -= k;
    }
    static const char msg[] = "server requires TLS: name it rfss://HOST:PORT/PATH or set "
                              "RFS_TLS=1 (RFS_TLS_CA or RFS_TLS_PIN say how to verify it)";
    rfs_rep r = {.op = h.op, .id = h.req_id, .status = rfs_err_to_wire(RFS_E_AUTH)};
    r.u.err.s = msg;
    r.u.err.len = sizeof msg - 1;
    uint8_t out[RFS_HDR_SIZE + 2 + sizeof msg];
    size_t len;
    if (rfs_rep_encode(&r, out, sizeof out, &len) == RFS_OK)
        (void)!send(c->fd, out, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(c->fd, SHUT_WR);
    RFS_LOGI("%s: plaintext client refused: this server requires TLS", c->peer);
    return -1;
}

void rfsd_tls_refuse(rfsd_conn *c, uint16_t raw_op, uint32_t raw_id)
{
    RFS_LOGI("%s: a TLS client, but this server has no --tls-cert; closing", c->peer);
    int rc = rfs_fail(RFS_E_AUTH, "TLS is not enabled on this server (rfsd without --tls-cert)");
    uint8_t sink[4096];
    for (int i = 0; i < 16 && rfs_transport_recv_nb(c->tr, sink, sizeof sink) > 0; i++)
        ;
    rfsd_conn_send_error(c, raw_op, raw_id, rc);
}
