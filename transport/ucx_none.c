/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* A build without libucx (RFS_WITH_UCX off): the UCX transport's entry points say so, so the
 * layers above need no #ifdef and a rfs+ucx: name gets a clear message. */
#include "transport/ucx.h"

#include "common/err.h"

#include <stdlib.h>

#define NO_UCX "this rfs was built without UCX (install libucx-dev and rebuild)"

int rfs_ucx_built(void)
{
    return 0;
}

int rfs_ucx_connect(const char *host, unsigned port, const rfs_transport_opts *o,
                    rfs_transport **out)
{
    *out = NULL;
    return rfs_fail(RFS_E_INVAL, "%s:%u: cannot connect over UCX: " NO_UCX, host ? host : "", port);
}

/* Kept for the MPI-IO hint's sake (it is checked, and reported, without UCX too). */
static size_t inline_max = 32u << 10;

void rfs_ucx_set_inline_max(size_t bytes)
{
    inline_max = bytes;
}

size_t rfs_ucx_inline_max(void)
{
    return inline_max;
}

int rfs_ucx_parse_inline_max(const char *v, size_t *out)
{
    char *end = "";
    unsigned long long x = v && *v && *v != '-' ? strtoull(v, &end, 10) : 0;
    if (!v || !*v || *v == '-' || *end || x > RFS_UCX_INLINE_NEVER)
        return rfs_fail(RFS_E_INVAL, "UCX inline maximum '%.40s': expected bytes", v ? v : "");
    *out = (size_t)x;
    return RFS_OK;
}

int rfs_ucx_is(const rfs_transport *t)
{
    return 0;
}
void rfs_ucx_stop_reading(rfs_transport *t)
{
}

int rfs_ucx_listen(const char *host, unsigned port, rfs_ucx_listener **out)
{
    *out = NULL;
    return rfs_fail(RFS_E_INVAL, "cannot listen for UCX on %s:%u: " NO_UCX, host, port);
}

/* Never reached: no listener can exist. */
int rfs_ucx_listener_fd(const rfs_ucx_listener *l)
{
    return -1;
}
void rfs_ucx_listener_addr(const rfs_ucx_listener *l, char *buf, size_t cap)
{
    if (cap)
        buf[0] = 0;
}
int rfs_ucx_accept(rfs_ucx_listener *l, rfs_transport **out)
{
    *out = NULL;
    return 0;
}
int rfs_ucx_refuse(rfs_ucx_listener *l, const char *why)
{
    return 0;
}
int rfs_ucx_pending_peer(rfs_ucx_listener *l, char *peer, size_t cap)
{
    return 1;
}
void rfs_ucx_listener_free(rfs_ucx_listener *l)
{
}
