/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Stream transport: the four primitives of rfs-abt.txt Fig. 2 (connect, write all, read all,
 * close) behind a vtable, so TLS or RDMA can plug in without touching the layers above. */
#ifndef RFS_TRANSPORT_H
#define RFS_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

typedef struct rfs_transport rfs_transport;

typedef struct rfs_transport_opts {
    int connect_timeout_ms; /* 0: 10000 */
    int sndbuf, rcvbuf;     /* 0: kernel default (autotuning) */
    int nodelay;            /* TCP_NODELAY (default on: the protocol pipelines its own frames) */
                            /* (0 or > 0: on, < 0: off, so zeroed opts get the default) */
    const char *congestion; /* TCP congestion control ("bbr", "cubic"...); NULL or "": the
                               system's default. Check it first with rfs_tcp_check_congestion:
                               here a refusal fails the connect. */
} rfs_transport_opts;

typedef struct rfs_transport_ops {
    /* Write every byte of iov[0..n) (handles short writes and EINTR). 0 or negative rfs_err. */
    int (*write_all)(rfs_transport *t, const struct iovec *iov, int n);
    /* Optional (NULL: write_all does it all). write_all in two halves, for a transport that
     * takes payloads from the caller's memory after the call (UCX's direct sends): post puts
     * the bytes in the stream, in order, and counts in *pending those still to be taken from
     * iov's memory; wait (rc: post's result) returns once none is, with post's error or the
     * connection's. Until then the memory stays untouched by the caller, but other writers
     * may post after this one: a writer that serialises posts need not hold its lock while
     * waiting. */
    int (*write_post)(rfs_transport *t, const struct iovec *iov, int n, size_t *pending);
    int (*write_wait)(rfs_transport *t, size_t *pending, int rc);
    /* Read exactly len bytes. RFS_E_CONN on EOF/reset (message says which). */
    int (*read_all)(rfs_transport *t, void *buf, size_t len);
    /* Read what has arrived, at least 1 and at most len bytes (waiting only while nothing has):
     * returns the count, or a negative rfs_err like read_all. For consumers that can use any
     * amount at once, so they do not sleep until a whole buffer has filled. */
    long (*read_some)(rfs_transport *t, void *buf, size_t len);
    /* Unblocks a reader/writer in another thread (shutdown), without freeing. */
    void (*shutdown)(rfs_transport *t);
    void (*close)(rfs_transport *t); /* frees t */

    /* Nonblocking side, for rfsd's reader and reply writer (the socket is nonblocking; the
     * caller polls t->fd for rfs_transport_wants and tries again). */
    /* Sends what goes without waiting: the count taken (> 0), 0 for nothing to send, or -1 with
     * errno (EAGAIN: full). A transport that copies bytes (TLS) may keep a copy pending after
     * EAGAIN: the caller then presents the same bytes again, as it would anyway. more: more
     * bytes follow at once (MSG_MORE). */
    long (*send_nb)(rfs_transport *t, const struct iovec *iov, int n, int more);
    /* send_nb with up to len bytes of file fd from off; 0: the file ended early. */
    long (*sendfile_nb)(rfs_transport *t, int fd, uint64_t off, size_t len);
    /* What has arrived: > 0 bytes, 0 orderly end, -1 with errno (EAGAIN: nothing yet; EPROTO:
     * TLS failure, rfs_last_error says which). */
    long (*recv_nb)(rfs_transport *t, void *buf, size_t len);
    /* Poll events the last EAGAIN waits for: dflt, unless TLS must write to read (or read to
     * write) first. */
    short (*wants)(rfs_transport *t, short dflt);
} rfs_transport_ops;

struct rfs_transport {
    const rfs_transport_ops *ops;
    int fd;         /* the socket, for poll, shutdown and socket options */
    char peer[300]; /* "host:port" for messages */
};

/* TCP: host is a name, IPv4 literal or IPv6 literal (no brackets). Tries every address
 * getaddrinfo returns, each within the connect timeout. */
int rfs_tcp_connect(const char *host, unsigned port, const rfs_transport_opts *o,
                    rfs_transport **out);
/* Wraps an accepted socket (server side). Takes ownership of fd. */
int rfs_tcp_from_fd(int fd, const rfs_transport_opts *o, rfs_transport **out);

/* Longest congestion control name the kernel takes (TCP_CA_NAME_MAX), with its NUL. */
#define RFS_TCP_CC_MAX 16

/* Whether this process may use congestion control `name` on its sockets: RFS_OK, or
 * RFS_E_INVAL with a message that says why (not on this kernel, or not permitted without
 * CAP_NET_ADMIN) and lists the ones that would work. */
int rfs_tcp_check_congestion(const char *name);
/* Sets congestion control `name` on a connected or accepted socket. 0 or negative rfs_err. */
int rfs_tcp_set_congestion(int fd, const char *name);

/* What TCP does on a connection, for diagnostics (rfs ping). */
typedef struct rfs_tcp_state {
    char congestion[RFS_TCP_CC_MAX]; /* the socket's congestion control */
    int slow_start_after_idle;       /* net.ipv4.tcp_slow_start_after_idle here: 1, 0, -1 unknown */
    /* 1: data sent after the connection was idle for longer than the retransmission timeout
     * starts again from the initial congestion window (a loss-based algorithm with the sysctl
     * on; bbr keeps its rate estimate across idle periods). */
    int restarts_after_idle;
    double rtt_ms;               /* the kernel's smoothed round-trip time */
    unsigned cwnd_segments, mss; /* congestion window now, and segment size */
} rfs_tcp_state;
/* Fills *out for a transport over a TCP socket (TCP or TLS). */
int rfs_tcp_describe(rfs_transport *t, rfs_tcp_state *out);

static inline int rfs_transport_write_all(rfs_transport *t, const struct iovec *iov, int n)
{
    return t->ops->write_all(t, iov, n);
}
static inline int rfs_transport_read_all(rfs_transport *t, void *buf, size_t len)
{
    return t->ops->read_all(t, buf, len);
}
static inline long rfs_transport_read_some(rfs_transport *t, void *buf, size_t len)
{
    return t->ops->read_some(t, buf, len);
}
static inline void rfs_transport_close(rfs_transport *t)
{
    if (t)
        t->ops->close(t);
}
static inline void rfs_transport_shutdown(rfs_transport *t)
{
    t->ops->shutdown(t);
}
static inline long rfs_transport_send_nb(rfs_transport *t, const struct iovec *iov, int n, int more)
{
    return t->ops->send_nb(t, iov, n, more);
}
static inline long rfs_transport_sendfile_nb(rfs_transport *t, int fd, uint64_t off, size_t len)
{
    return t->ops->sendfile_nb(t, fd, off, len);
}
static inline long rfs_transport_recv_nb(rfs_transport *t, void *buf, size_t len)
{
    return t->ops->recv_nb(t, buf, len);
}
static inline short rfs_transport_wants(rfs_transport *t, short dflt)
{
    return t->ops->wants(t, dflt);
}

#endif
