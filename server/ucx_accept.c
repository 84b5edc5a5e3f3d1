/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* UCX connection requests through rfsd's limits into connections (ucx_accept.h). */
#include "ucx_accept.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "conn.h"
#include "fdlimit.h"
#include "peraddr.h"

int rfsd_ucx_listen(const char *spec, char *addr, size_t cap, rfs_ucx_listener **out)
{
    char host[256], port[8];
    if (rfsd_split_host_port(spec, host, sizeof host, port, sizeof port)) {
        RFS_LOGE("--ucx-listen '%s': expected HOST:PORT or [IPV6]:PORT", spec);
        return -1;
    }
    if (rfs_ucx_listen(host, (unsigned)atoi(port), out)) {
        RFS_LOGE("--ucx-listen %s: %s", spec, rfs_last_error());
        return -1;
    }
    rfs_ucx_listener_addr(*out, addr, cap);
    return 0;
}

static unsigned conn_count(rfsd_server *srv)
{
    pthread_mutex_lock(&srv->mu);
    unsigned n = srv->nconns;
    pthread_mutex_unlock(&srv->mu);
    return n;
}

/* The limits of the TCP acceptor (main.c): a full table first makes room by evicting a
 * connection that never authenticated; then one address may hold only its share. NULL:
 * refused, why says so (for the client and the log). */
static rfsd_addr *admit(rfsd_server *srv, const char *peer, char *why, size_t cap)
{
    unsigned n = conn_count(srv);
    if (n >= RFSD_MAX_CONNS && rfsd_conn_evict_unready(srv) == 0)
        n = RFSD_MAX_CONNS - 1;
    if (n >= RFSD_MAX_CONNS) {
        snprintf(why, cap, "%u connections", n);
        RFS_LOGW("%s: UCX connection refused: server busy with %s", peer, why);
        return NULL;
    }
    unsigned from_addr;
    rfsd_addr *a = rfsd_addr_connect(peer, srv->cfg.max_conns_per_addr, &from_addr);
    if (!a) {
        char addr[64];
        rfsd_addr_of(peer, addr, sizeof addr);
        snprintf(why, cap,
                 "%u connections from %s (limit %u per address, rfsd "
                 "--max-conns-per-addr)",
                 from_addr, addr, srv->cfg.max_conns_per_addr);
        RFS_LOGW("%s: UCX connection refused: %s", peer, why);
    }
    return a;
}

void rfsd_ucx_accept_ready(rfsd_server *srv, rfs_ucx_listener *l)
{
    char peer[80];
    /* bounded: requests arriving while we work wait for the next poll */
    for (int i = 0; i < 64 && rfs_ucx_pending_peer(l, peer, sizeof peer) == 0; i++) {
        char why[200];
        rfsd_addr *a = admit(srv, peer, why, sizeof why);
        if (!a) {
            rfs_ucx_refuse(l, why);
            continue;
        }
        rfs_transport *t;
        int rc = rfs_ucx_accept(l, &t);
        if (rc <= 0) {
            if (rc < 0)
                RFS_LOGW("%s", rfs_last_error());
            rfsd_addr_disconnect(a);
            continue;
        }
        if (rfsd_fd_conn_too_high(t->fd)) {
            RFS_LOGW("%s: UCX connection refused: out of file descriptors", peer);
            rfs_transport_close(t);
            rfsd_addr_disconnect(a);
            continue;
        }
        RFS_LOGD("%s: connected over UCX", peer);
        rfsd_conn_start_transport(srv, t, peer, a);
    }
}
