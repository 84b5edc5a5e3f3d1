/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* TCP stream transport: blocking sockets with TCP_NODELAY, optional socket buffer sizes,
 * IPv4 and IPv6, a bounded non-blocking connect, and writev-style sends that never raise
 * SIGPIPE (sendmsg with MSG_NOSIGNAL), so a library inside an MPI program cannot kill it. */
#include "transport/iov.h"
#include "transport/transport.h"
#include "transport/tcp_cc.h"

#include "common/err.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_CONNECT_TIMEOUT_MS 10000
#define SEND_IOV_BATCH 64 /* iovecs handed to one sendmsg; larger lists go in batches */

typedef struct tcp_transport {
    rfs_transport base;
    int fd;
} tcp_transport;

static int fd_of(rfs_transport *t)
{
    return ((tcp_transport *)t)->fd;
}

/* Copies up to SEND_IOV_BATCH nonempty iovecs of iov[0..n) into batch. */
static int batch_of(const struct iovec *iov, int n, struct iovec *batch)
{
    int k = 0;
    for (int j = 0; j < n && k < SEND_IOV_BATCH; j++)
        if (iov[j].iov_len)
            batch[k++] = iov[j];
    return k;
}

static long tcp_send_nb(rfs_transport *t, const struct iovec *iov, int n, int more)
{
    struct iovec batch[SEND_IOV_BATCH];
    int k = batch_of(iov, n, batch);
    if (k == 0)
        return 0;
    struct msghdr mh = {.msg_iov = batch, .msg_iovlen = (size_t)k};
    ssize_t w;
    do {
        w = sendmsg(fd_of(t), &mh, MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0));
    } while (w < 0 && errno == EINTR);
    return (long)w;
}

static long tcp_sendfile_nb(rfs_transport *t, int fd, uint64_t off, size_t len)
{
    off_t at = (off_t)off;
    ssize_t w;
    do {
        w = sendfile(fd_of(t), fd, &at, len);
    } while (w < 0 && errno == EINTR);
    return (long)w;
}

static long tcp_recv_nb(rfs_transport *t, void *buf, size_t len)
{
    ssize_t r;
    do {
        r = recv(fd_of(t), buf, len, MSG_DONTWAIT);
    } while (r < 0 && errno == EINTR);
    return (long)r;
}

static short tcp_wants(rfs_transport *t, short dflt)
{
    return dflt;
}

/* Blocks until fd is ready for events. Only reached when the socket was handed to us in
 * non-blocking mode (rfs_tcp_from_fd), so the blocking contract still holds. */
static int wait_ready(int fd, short events)
{
    struct pollfd p = {.fd = fd, .events = events};
    int rc;
    do {
        rc = poll(&p, 1, -1);
    } while (rc < 0 && errno == EINTR);
    return rc < 0 ? -1 : 0;
}

static int tcp_write_all(rfs_transport *t, const struct iovec *iov, int n)
{
    int fd = fd_of(t);
    int i = 0;       /* first iovec not fully sent */
    size_t done = 0; /* bytes of iov[i] already sent */
    while (i < n) {
        if (iov[i].iov_len == done) {
            i++;
            done = 0;
            continue;
        }
        struct iovec batch[SEND_IOV_BATCH];
        int k = 0;
        for (int j = i; j < n && k < SEND_IOV_BATCH; j++) {
            if (iov[j].iov_len == 0)
                continue;
            batch[k] = iov[j];
            if (j == i) {
                batch[k].iov_base = (char *)iov[j].iov_base + done;
                batch[k].iov_len -= done;
            }
            k++;
        }
        struct msghdr msg = {.msg_iov = batch, .msg_iovlen = (size_t)k};
        ssize_t w = sendmsg(fd, &msg, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if ((errno == EAGAIN || errno == EWOULDBLOCK) && wait_ready(fd, POLLOUT) == 0)
                continue;
            int e = errno;
            return rfs_fail(RFS_E_CONN, "%s: connection lost while sending: %s", t->peer,
                            strerror(e));
        }
        rfs_iov_advance(iov, n, &i, &done, (size_t)w);
    }
    return RFS_OK;
}

/* One successful recv of up to len bytes; got: bytes of the caller's whole read so far (for
 * the message). Returns the count, or a negative rfs_err. */
static long recv_some(rfs_transport *t, void *buf, size_t len, size_t got, size_t want)
{
    int fd = fd_of(t);
    for (;;) {
        ssize_t r = recv(fd, buf, len, 0);
        if (r > 0)
            return (long)r;
        if (r == 0) {
            if (got == 0)
                return rfs_fail(RFS_E_CONN, "%s: connection closed by peer", t->peer);
            return rfs_fail(RFS_E_CONN, "%s: connection closed by peer after %zu of %zu bytes",
                            t->peer, got, want);
        }
        if (errno == EINTR)
            continue;
        if ((errno == EAGAIN || errno == EWOULDBLOCK) && wait_ready(fd, POLLIN) == 0)
            continue;
        int e = errno;
        return rfs_fail(RFS_E_CONN, "%s: connection lost while receiving: %s", t->peer,
                        strerror(e));
    }
}

static int tcp_read_all(rfs_transport *t, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        long r = recv_some(t, (char *)buf + got, len - got, got, len);
        if (r < 0)
            return (int)r;
        got += (size_t)r;
    }
    return RFS_OK;
}

static long tcp_read_some(rfs_transport *t, void *buf, size_t len)
{
    return recv_some(t, buf, len, 0, len);
}

static void tcp_shutdown(rfs_transport *t)
{
    shutdown(fd_of(t), SHUT_RDWR);
}

static void tcp_close(rfs_transport *t)
{
    close(fd_of(t));
    free(t);
}

static const rfs_transport_ops tcp_ops = {
    .write_all = tcp_write_all,
    .read_all = tcp_read_all,
    .read_some = tcp_read_some,
    .shutdown = tcp_shutdown,
    .close = tcp_close,
    .send_nb = tcp_send_nb,
    .sendfile_nb = tcp_sendfile_nb,
    .recv_nb = tcp_recv_nb,
    .wants = tcp_wants,
};

int rfs_tcp_describe(rfs_transport *t, rfs_tcp_state *out)
{
    /* any transport over a TCP socket (TCP, TLS); asked of the socket itself, since a
     * transport of another kind may leave fd unset */
    int proto = 0;
    socklen_t pl = sizeof proto;
    if (!t || t->fd < 0 || getsockopt(t->fd, SOL_SOCKET, SO_PROTOCOL, &proto, &pl) < 0 ||
        proto != IPPROTO_TCP)
        return rfs_fail(RFS_E_INVAL, "not a TCP transport");
    return rfs_tcp_describe_fd(t->fd, out);
}

/* nodelay: 0 means the default (on), negative turns it off, so a zeroed options struct
 * gets the latency-friendly setting the pipelined protocol wants. */
static int apply_opts(int fd, const rfs_transport_opts *o, const char *peer)
{
    int on = !(o && o->nodelay < 0);
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) < 0)
        return rfs_fail(RFS_E_CONN, "%s: TCP_NODELAY: %s", peer, strerror(errno));
    /* Buffer sizes must be set before connect/listen to affect the window scale. */
    if (o && o->sndbuf > 0 &&
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &o->sndbuf, sizeof o->sndbuf) < 0)
        return rfs_fail(RFS_E_CONN, "%s: SO_SNDBUF %d: %s", peer, o->sndbuf, strerror(errno));
    if (o && o->rcvbuf > 0 &&
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &o->rcvbuf, sizeof o->rcvbuf) < 0)
        return rfs_fail(RFS_E_CONN, "%s: SO_RCVBUF %d: %s", peer, o->rcvbuf, strerror(errno));
    if (o && o->congestion && o->congestion[0] && rfs_tcp_set_congestion(fd, o->congestion))
        return rfs_fail_cause(RFS_E_CONN, "%s", peer);
    return RFS_OK;
}

static int wrap(int fd, const char *peer, rfs_transport **out)
{
    tcp_transport *t = calloc(1, sizeof *t);
    if (!t) {
        close(fd);
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", peer);
    }
    t->base.ops = &tcp_ops;
    t->base.fd = fd;
    t->fd = fd;
    snprintf(t->base.peer, sizeof t->base.peer, "%s", peer);
    *out = &t->base;
    return RFS_OK;
}

static void format_peer(char *buf, size_t cap, const char *host, unsigned port)
{
    if (strchr(host, ':'))
        snprintf(buf, cap, "[%s]:%u", host, port);
    else
        snprintf(buf, cap, "%s:%u", host, port);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One address: non-blocking connect bounded by timeout_ms, then back to blocking mode.
 * Returns the connected fd or a negative rfs_err (message set). */
static int connect_one(const struct addrinfo *ai, const rfs_transport_opts *o, int timeout_ms,
                       const char *peer)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0)
        return rfs_fail(RFS_E_CONN, "%s: socket: %s", peer, strerror(errno));
    int rc = apply_opts(fd, o, peer);
    if (rc) {
        close(fd);
        return rc;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS) {
            int e = errno;
            close(fd);
            return rfs_fail(rfs_err_from_errno(e) == RFS_E_TIMEOUT ? RFS_E_TIMEOUT : RFS_E_CONN,
                            "%s: cannot connect: %s", peer, strerror(e));
        }
        int64_t deadline = now_ms() + timeout_ms;
        for (;;) {
            int64_t left = deadline - now_ms();
            if (left <= 0) {
                close(fd);
                return rfs_fail(RFS_E_TIMEOUT, "%s: cannot connect: no answer within %d ms", peer,
                                timeout_ms);
            }
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int n = poll(&p, 1, (int)left);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                int e = errno;
                close(fd);
                return rfs_fail(RFS_E_CONN, "%s: poll: %s", peer, strerror(e));
            }
            if (n > 0)
                break;
        }
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err) {
            close(fd);
            return rfs_fail(err == ETIMEDOUT ? RFS_E_TIMEOUT : RFS_E_CONN, "%s: cannot connect: %s",
                            peer, strerror(err));
        }
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        return rfs_fail(RFS_E_CONN, "%s: fcntl: %s", peer, strerror(e));
    }
    return fd;
}

int rfs_tcp_connect(const char *host, unsigned port, const rfs_transport_opts *o,
                    rfs_transport **out)
{
    *out = NULL;
    char peer[sizeof((rfs_transport *)0)->peer];
    if (!host || !*host || port == 0 || port > 65535)
        return rfs_fail(RFS_E_INVAL, "cannot connect to %s:%u: bad host or port", host ? host : "",
                        port);
    format_peer(peer, sizeof peer, host, port);
    int timeout_ms =
        o && o->connect_timeout_ms > 0 ? o->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;

    char service[8];
    snprintf(service, sizeof service, "%u", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(host, service, &hints, &res);
    if (g == EAI_ADDRFAMILY || g == EAI_NONAME || g == EAI_NODATA) {
        /* AI_ADDRCONFIG hides ::1 on hosts whose only IPv6 address is loopback; retry without. */
        hints.ai_flags = AI_NUMERICSERV;
        g = getaddrinfo(host, service, &hints, &res);
    }
    if (g != 0)
        return rfs_fail(RFS_E_CONN, "%s: cannot resolve host: %s", peer,
                        g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));

    int rc = RFS_E_CONN;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        rc = connect_one(ai, o, timeout_ms, peer);
        if (rc >= 0) {
            freeaddrinfo(res);
            rfs_clear_error();
            return wrap(rc, peer, out);
        }
    }
    freeaddrinfo(res);
    return rc;
}

int rfs_tcp_from_fd(int fd, const rfs_transport_opts *o, rfs_transport **out)
{
    *out = NULL;
    char peer[sizeof((rfs_transport *)0)->peer] = "unknown peer";
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
        char host[INET6_ADDRSTRLEN] = "?";
        unsigned port = 0;
        if (ss.ss_family == AF_INET) {
            const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
            port = ntohs(a->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
            port = ntohs(a->sin6_port);
        }
        format_peer(peer, sizeof peer, host, port);
    }
    int rc = apply_opts(fd, o, peer);
    if (rc) {
        close(fd);
        return rc;
    }
    return wrap(fd, peer, out);
}
