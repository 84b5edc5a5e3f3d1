/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* UCX stream transport (ucx.h).
 *
 * Threads: rfsd's reader and reply writer (and the client's receiver and senders) use one
 * connection at once. The worker is made UCS_THREAD_MODE_SERIALIZED and every UCP call runs
 * under the transport's mutex; waiting (poll on t->fd) happens with the mutex released.
 *
 * Waiting: t->fd is an epoll set of a timer and the bootstrap socket (whose end is the peer's
 * end). The worker is progressed, never armed for UCX's own wakeups (ucp_worker_arm and its
 * event descriptor): with UCX 1.13 over tcp, transfers that waited on the armed descriptor
 * stalled for good in about one run in five, UCX holding unsent bytes that further progress
 * calls did not move; we did not find out why inside UCX. So a waiting thread wakes on the
 * timer, which ticks every TICK_MIN_NS while the connection is busy and backs off to
 * TICK_MIN_NS << TICK_MAX_LEVEL while it is idle; any progress brings the short interval back.
 *
 * Sends copy the caller's bytes (at most SEND_CAP in flight per connection), so send_nb has
 * the socket's contract: what it took is the transport's business. Receives hand out UCX's own
 * buffers (ucp_stream_recv_data_nb) piece by piece. */
#include "transport/ucx.h"

#include "common/err.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

#define DEFAULT_CONNECT_TIMEOUT_MS 10000
#define SEND_CAP (16u << 20)         /* bytes copied and not yet sent, per connection */
#define SEND_PIECE (64u << 10)       /* largest single stream send (a frame) */
#define CLOSE_FLUSH_MS 2000          /* a clean close waits this long for the peer */
#define PROGRESS_ROUNDS 64           /* worker progress calls per look, at most */
#define TICK_MIN_NS 50000            /* timer interval while busy (see top) */
#define TICK_MAX_LEVEL 7             /* idle: up to TICK_MIN_NS << 7 = 6.4 ms */

/* ---- the process's UCP context ---- */

static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static ucp_context_h ctx;
static char ctx_error[256];

/* The transports of rfs's own UCP context: $RFS_UCX_TLS, else every one UCX has except shared
 * memory ("^sm"), whatever $UCX_TLS says. $UCX_TLS is usually an MPI library's setting (the test
 * suite runs MPICH with "self,sm", which reaches no other host), and a connection to rfsd may
 * lead anywhere. Shared memory is left out because in UCX 1.13 its endpoints, with the peer
 * failure detection a server needs, failed live connections with "Endpoint timeout" in the
 * middle of transfers (tests/transport/test_ucx.c reproduced it in one of every few runs). */
static const char *own_tls(void)
{
    const char *rfs = getenv("RFS_UCX_TLS");
    return rfs && *rfs ? rfs : "^sm";
}

static void ctx_init(void)
{
    ucp_config_t *cfg = NULL;
    ucs_status_t st = ucp_config_read(NULL, NULL, &cfg);
    if (st != UCS_OK) {
        snprintf(ctx_error, sizeof ctx_error, "UCX configuration: %s", ucs_status_string(st));
        return;
    }
    const char *tls = own_tls();
    if ((st = ucp_config_modify(cfg, "TLS", tls)) != UCS_OK) {
        snprintf(ctx_error, sizeof ctx_error, "UCX transports '%.60s' ($RFS_UCX_TLS): %s", tls,
                 ucs_status_string(st));
        ucp_config_release(cfg);
        return;
    }
    ucp_params_t p = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
        .features = UCP_FEATURE_STREAM,
        .mt_workers_shared = 1,  /* one worker per connection, used from many threads */
    };
    st = ucp_init(&p, cfg, &ctx);
    ucp_config_release(cfg);
    if (st != UCS_OK) {
        ctx = NULL;
        snprintf(ctx_error, sizeof ctx_error, "UCX initialisation: %s", ucs_status_string(st));
    }
}

static int get_ctx(void)
{
    pthread_once(&ctx_once, ctx_init);
    return ctx ? RFS_OK : rfs_fail(RFS_E_CONN, "%s", ctx_error);
}

static int new_worker(ucp_worker_h *w)
{
    ucp_worker_params_t wp = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SERIALIZED,
    };
    ucs_status_t st = ucp_worker_create(ctx, &wp, w);
    if (st != UCS_OK)
        return rfs_fail(RFS_E_CONN, "UCX worker: %s", ucs_status_string(st));
    return RFS_OK;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int resolve(const char *host, unsigned port, int passive, struct sockaddr_storage *ss,
                   socklen_t *sl)
{
    char service[8];
    snprintf(service, sizeof service, "%u", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(host, service, &hints, &res);
    if (g)
        return rfs_fail(RFS_E_CONN, "%s:%u: cannot resolve host: %s", host, port,
                        g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *sl = res->ai_addrlen;
    freeaddrinfo(res);
    return RFS_OK;
}

static void addr_string(const struct sockaddr_storage *ss, char *buf, size_t cap)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
        port = ntohs(a->sin6_port);
        snprintf(buf, cap, "[%s]:%u", ip, port);
        return;
    }
    const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
    snprintf(buf, cap, "%s:%u", ip, ntohs(a->sin_port));
}

/* ---- one connection ---- */

typedef struct ucx_transport {
    rfs_transport base;
    pthread_mutex_t mu;            /* every UCP call on worker/ep, and everything below */
    ucp_worker_h worker;
    ucp_ep_h ep;
    int timer_fd;                  /* in the epoll set t->base.fd, with sock */
    int sock;                      /* the bootstrap socket, kept to see the peer go */
    int peer_gone;                 /* sock ended: the peer closed or died */
    int tick_level;                /* interval TICK_MIN_NS << level; -1: timer not set yet */
    int active;                    /* something moved since the last settle */
    ucs_status_t failed;           /* set by the error handler: the endpoint is gone */
    int shut;                      /* rfs_transport_shutdown: both directions end */
    int read_stopped;              /* rfs_ucx_stop_reading */
    uint8_t *rx_data;              /* UCX's buffer being handed out, from rx_off */
    size_t rx_len, rx_off;
    size_t tx_inflight;            /* bytes copied, send not complete */
    struct send_piece *pieces;     /* those sends, freed at close if never completed */
} ucx_transport;

typedef struct send_piece {
    struct send_piece *prev, *next;  /* the transport's pieces in flight */
    ucx_transport *t;
    size_t len;
    uint8_t bytes[];
} send_piece;

static ucx_transport *U(rfs_transport *t) { return (ucx_transport *)t; }

static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    ucx_transport *t = arg;  /* called inside progress: t->mu is held */
    if (t->failed == UCS_OK)
        t->failed = status;
}

/* Pulls the next piece of received bytes into rx_data when none is held. */
static void fill_rx(ucx_transport *t)
{
    if (t->rx_data || !t->ep)
        return;
    size_t len = 0;
    ucs_status_ptr_t p = ucp_stream_recv_data_nb(t->ep, &len);
    if (p == NULL)
        return;
    if (UCS_PTR_IS_ERR(p)) {
        if (t->failed == UCS_OK)
            t->failed = UCS_PTR_STATUS(p);
        return;
    }
    t->rx_data = p;
    t->active = 1;
    t->rx_len = len;
    t->rx_off = 0;
}

/* Nothing is sent on the bootstrap socket after the exchange, so its becoming readable means
 * the peer closed it or died (or broke the protocol): the stream ends once what UCX still
 * holds has been read. It leaves the epoll set then, which would otherwise stay readable. */
static void check_peer(ucx_transport *t)
{
    if (t->peer_gone || t->sock < 0)
        return;
    char c;
    ssize_t r = recv(t->sock, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    t->peer_gone = 1;
    epoll_ctl(t->base.fd, EPOLL_CTL_DEL, t->sock, NULL);
}

static void progress(ucx_transport *t)
{
    uint64_t ticks;
    (void)!read(t->timer_fd, &ticks, sizeof ticks);  /* level-triggered: drain it */
    for (int i = 0; i < PROGRESS_ROUNDS && ucp_worker_progress(t->worker); i++)
        t->active = 1;
    fill_rx(t);
    if (!t->rx_data)
        check_peer(t);
}

static void set_tick(ucx_transport *t, int level)
{
    if (level == t->tick_level)
        return;
    long ns = (long)TICK_MIN_NS << level;
    struct itimerspec its = {.it_interval = {ns / 1000000000L, ns % 1000000000L}};
    its.it_value = its.it_interval;
    timerfd_settime(t->timer_fd, 0, &its, NULL);
    t->tick_level = level;
}

/* Ends a locked section: the timer's pace follows whether anything moved (see top). */
static void settle(ucx_transport *t)
{
    int busy = t->active || t->tx_inflight > 0;
    set_tick(t, busy ? 0 : t->tick_level < TICK_MAX_LEVEL ? t->tick_level + 1 : TICK_MAX_LEVEL);
    t->active = 0;
}

static void unlink_piece(send_piece *sp)
{
    if (sp->prev)
        sp->prev->next = sp->next;
    else
        sp->t->pieces = sp->next;
    if (sp->next)
        sp->next->prev = sp->prev;
}

static void send_done(void *request, ucs_status_t status, void *user_data)
{
    send_piece *sp = user_data;  /* inside progress: t->mu is held */
    unlink_piece(sp);
    sp->t->tx_inflight -= sp->len;
    sp->t->active = 1;
    if (status != UCS_OK && sp->t->failed == UCS_OK)
        sp->t->failed = status;
    free(sp);
}

static int gone_errno(ucx_transport *t)
{
    return t->failed == UCS_ERR_CONNECTION_RESET || t->failed == UCS_ERR_ENDPOINT_TIMEOUT ||
           t->failed == UCS_OK ? ECONNRESET : EPIPE;
}

/* Copies up to len bytes of iov into a send. Locked. count taken, or -1 with errno. */
static long send_copy(ucx_transport *t, const struct iovec *iov, int n, size_t len)
{
    send_piece *sp = malloc(sizeof *sp + len);
    if (!sp) {
        errno = ENOMEM;
        return -1;
    }
    size_t at = 0;
    for (int i = 0; i < n && at < len; i++) {
        size_t k = iov[i].iov_len < len - at ? iov[i].iov_len : len - at;
        memcpy(sp->bytes + at, iov[i].iov_base, k);
        at += k;
    }
    sp->t = t;
    sp->len = len;
    sp->prev = sp->next = NULL;
    ucp_request_param_t rp = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.send = send_done,
        .user_data = sp,
    };
    ucs_status_ptr_t r = ucp_stream_send_nbx(t->ep, sp->bytes, len, &rp);
    if (r == NULL) {
        free(sp);  /* done at once: the callback is not called */
        return (long)len;
    }
    if (UCS_PTR_IS_ERR(r)) {
        free(sp);
        if (t->failed == UCS_OK)
            t->failed = UCS_PTR_STATUS(r);
        errno = gone_errno(t);
        return -1;
    }
    t->tx_inflight += len;
    sp->next = t->pieces;
    if (t->pieces)
        t->pieces->prev = sp;
    t->pieces = sp;
    ucp_request_free(r);  /* the callback still runs when the send completes */
    return (long)len;
}

/* How much send_nb may take now (0: full), or -1 with errno when the connection is gone. */
static long send_room(ucx_transport *t)
{
    if (t->failed != UCS_OK || t->shut || t->peer_gone) {
        errno = t->shut || t->peer_gone ? EPIPE : gone_errno(t);
        return -1;
    }
    if (t->tx_inflight >= SEND_CAP)
        progress(t);
    if (t->tx_inflight >= SEND_CAP)
        return 0;
    size_t room = SEND_CAP - t->tx_inflight;
    return (long)(room < SEND_PIECE ? room : SEND_PIECE);
}

static long ucx_send_nb(rfs_transport *tr, const struct iovec *iov, int n, int more)
{
    ucx_transport *t = U(tr);
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    if (total == 0)
        return 0;
    pthread_mutex_lock(&t->mu);
    long r = send_room(t);
    if (r > 0) {
        t->active = 1;
        r = send_copy(t, iov, n, total < (size_t)r ? total : (size_t)r);
        progress(t);  /* start it moving now, not at the next wait */
    } else if (r == 0) {
        errno = EAGAIN;
        r = -1;
    }
    int e = errno;
    settle(t);
    pthread_mutex_unlock(&t->mu);
    errno = e;
    return r;
}

static long ucx_sendfile_nb(rfs_transport *tr, int fd, uint64_t off, size_t len)
{
    ucx_transport *t = U(tr);
    pthread_mutex_lock(&t->mu);
    long room = send_room(t);
    settle(t);
    pthread_mutex_unlock(&t->mu);
    if (room <= 0) {
        if (room == 0)
            errno = EAGAIN;
        return -1;
    }
    /* Read outside the lock (the disk may be slow), then hand the bytes to send_nb: only this
     * thread sends, so the room is still there. */
    size_t want = len < (size_t)room ? len : (size_t)room;
    uint8_t *buf = malloc(want);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    ssize_t got;
    do {
        got = pread(fd, buf, want, (off_t)off);
    } while (got < 0 && errno == EINTR);
    long r = got;
    if (got > 0) {
        struct iovec v = {.iov_base = buf, .iov_len = (size_t)got};
        r = ucx_send_nb(tr, &v, 1, 0);
    }
    int e = errno;
    free(buf);
    errno = e;
    return r;
}

/* Locked: copies what has arrived. > 0, 0 end of stream, -1 with errno (EAGAIN). */
static long take_rx(ucx_transport *t, void *buf, size_t len)
{
    progress(t);
    if (t->rx_data && !t->read_stopped) {
        size_t k = t->rx_len - t->rx_off < len ? t->rx_len - t->rx_off : len;
        memcpy(buf, t->rx_data + t->rx_off, k);
        t->rx_off += k;
        if (t->rx_off == t->rx_len) {
            ucp_stream_data_release(t->ep, t->rx_data);
            t->rx_data = NULL;
            fill_rx(t);  /* so settle knows whether more is here */
        }
        return (long)k;
    }
    if (t->read_stopped || t->shut || t->peer_gone) {
        return 0;  /* the peer closed its endpoint: the stream's end */
    }
    check_peer(t);  /* a closing peer's endpoint may fail before its socket ends */
    if (t->peer_gone) {
        return 0;
    }
    if (t->failed != UCS_OK) {
        errno = gone_errno(t);
        return -1;
    }
    errno = EAGAIN;
    return -1;
}

static long ucx_recv_nb(rfs_transport *tr, void *buf, size_t len)
{
    ucx_transport *t = U(tr);
    pthread_mutex_lock(&t->mu);
    long r = take_rx(t, buf, len);
    int e = errno;
    settle(t);
    pthread_mutex_unlock(&t->mu);
    errno = e;
    return r;
}

static short ucx_wants(rfs_transport *t, short dflt) { return POLLIN; }

static void wait_event(rfs_transport *t)
{
    struct pollfd p = {.fd = t->fd, .events = POLLIN};
    while (poll(&p, 1, -1) < 0 && errno == EINTR)
        ;
}

/* ---- blocking side (the client) ---- */

static int ucx_write_all(rfs_transport *t, const struct iovec *iov, int n)
{
    int i = 0;
    size_t done = 0;
    while (i < n) {
        if (iov[i].iov_len == done) {
            i++;
            done = 0;
            continue;
        }
        struct iovec rest[64];
        int k = 0;
        for (int j = i; j < n && k < 64; j++) {
            rest[k] = iov[j];
            if (j == i) {
                rest[k].iov_base = (char *)iov[j].iov_base + done;
                rest[k].iov_len -= done;
            }
            k++;
        }
        long w = ucx_send_nb(t, rest, k, 0);
        if (w < 0 && errno == EAGAIN) {
            wait_event(t);
            continue;
        }
        if (w < 0)
            return rfs_fail(RFS_E_CONN, "%s: connection lost while sending: %s", t->peer,
                            strerror(errno));
        size_t left = (size_t)w;
        while (left > 0 && i < n) {
            size_t avail = iov[i].iov_len - done;
            if (left < avail) {
                done += left;
                left = 0;
            } else {
                left -= avail;
                i++;
                done = 0;
            }
        }
    }
    return RFS_OK;
}

static long recv_some(rfs_transport *t, void *buf, size_t len, size_t got, size_t want)
{
    for (;;) {
        long r = ucx_recv_nb(t, buf, len);
        if (r > 0)
            return r;
        if (r < 0 && errno == EAGAIN) {
            wait_event(t);
            continue;
        }
        if (r == 0 && got == 0)
            return rfs_fail(RFS_E_CONN, "%s: connection closed by peer", t->peer);
        if (r == 0)
            return rfs_fail(RFS_E_CONN, "%s: connection closed by peer after %zu of %zu bytes",
                            t->peer, got, want);
        return rfs_fail(RFS_E_CONN, "%s: connection lost while receiving: %s", t->peer,
                        strerror(errno));
    }
}

static int ucx_read_all(rfs_transport *t, void *buf, size_t len)
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

static long ucx_read_some(rfs_transport *t, void *buf, size_t len)
{
    return recv_some(t, buf, len, 0, len);
}

static void ucx_shutdown(rfs_transport *tr)
{
    ucx_transport *t = U(tr);
    pthread_mutex_lock(&t->mu);
    t->shut = 1;
    set_tick(t, 0);  /* a sleeping thread sees it at the next tick */
    pthread_mutex_unlock(&t->mu);
}

void rfs_ucx_stop_reading(rfs_transport *tr)
{
    ucx_transport *t = U(tr);
    pthread_mutex_lock(&t->mu);
    t->read_stopped = 1;
    set_tick(t, 0);
    pthread_mutex_unlock(&t->mu);
}

/* Waits, locked, until request r is done or ms pass. UCS_OK, or why not. */
static ucs_status_t wait_request(ucx_transport *t, ucs_status_ptr_t r, int ms)
{
    if (r == NULL)
        return UCS_OK;
    if (UCS_PTR_IS_ERR(r))
        return UCS_PTR_STATUS(r);
    int64_t until = now_ms() + ms;
    ucs_status_t st;
    while ((st = ucp_request_check_status(r)) == UCS_INPROGRESS) {
        if (ucp_worker_progress(t->worker))
            continue;
        int64_t left = until - now_ms();
        if (left <= 0)
            break;
        pthread_mutex_unlock(&t->mu);
        struct pollfd p = {.fd = t->base.fd, .events = POLLIN};
        poll(&p, 1, 1);  /* the timer may be slow (idle): look every millisecond */
        pthread_mutex_lock(&t->mu);
    }
    if (st == UCS_INPROGRESS)
        ucp_request_cancel(t->worker, r);
    ucp_request_free(r);
    return st == UCS_INPROGRESS ? UCS_ERR_TIMED_OUT : st;
}

static void ucx_close(rfs_transport *tr)
{
    ucx_transport *t = U(tr);
    pthread_mutex_lock(&t->mu);
    if (t->rx_data)
        ucp_stream_data_release(t->ep, t->rx_data);
    if (t->ep) {
        /* flush first: the last replies reach a client that is still there; a gone peer only
         * costs the bound */
        int force = t->failed != UCS_OK || t->peer_gone;
        ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                  .flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0};
        if (wait_request(t, ucp_ep_close_nbx(t->ep, &rp), CLOSE_FLUSH_MS) != UCS_OK && !force) {
            rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
            wait_request(t, ucp_ep_close_nbx(t->ep, &rp), CLOSE_FLUSH_MS);
        }
    }
    ucp_worker_progress(t->worker);  /* completions the close made ready free their pieces */
    pthread_mutex_unlock(&t->mu);
    ucp_worker_destroy(t->worker);
    while (t->pieces) {  /* sends the closed endpoint never completed */
        send_piece *sp = t->pieces;
        t->pieces = sp->next;
        free(sp);
    }
    if (t->sock >= 0)
        close(t->sock);  /* after the flush: the peer's end of stream follows the bytes */
    close(t->base.fd);
    close(t->timer_fd);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static const rfs_transport_ops ucx_ops = {
    .write_all = ucx_write_all,
    .read_all = ucx_read_all,
    .read_some = ucx_read_some,
    .shutdown = ucx_shutdown,
    .close = ucx_close,
    .send_nb = ucx_send_nb,
    .sendfile_nb = ucx_sendfile_nb,
    .recv_nb = ucx_recv_nb,
    .wants = ucx_wants,
};

int rfs_ucx_built(void) { return 1; }

int rfs_ucx_is(const rfs_transport *t) { return t && t->ops == &ucx_ops; }

static int new_transport(const char *peer, int sock, ucx_transport **out)
{
    ucx_transport *t = calloc(1, sizeof *t);
    if (!t)
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", peer);
    int rc = new_worker(&t->worker);
    if (rc) {
        free(t);
        return rc;
    }
    t->sock = sock;
    t->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    t->base.fd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN};
    if (t->timer_fd < 0 || t->base.fd < 0 ||
        epoll_ctl(t->base.fd, EPOLL_CTL_ADD, t->timer_fd, &ev) < 0 ||
        epoll_ctl(t->base.fd, EPOLL_CTL_ADD, sock, &ev) < 0) {
        int e = errno;
        if (t->timer_fd >= 0)
            close(t->timer_fd);
        if (t->base.fd >= 0)
            close(t->base.fd);
        ucp_worker_destroy(t->worker);
        free(t);
        return rfs_fail(RFS_E_CONN, "%s: UCX connection's descriptors: %s", peer, strerror(e));
    }
    pthread_mutex_init(&t->mu, NULL);
    t->tick_level = -1;
    set_tick(t, 0);
    t->base.ops = &ucx_ops;
    snprintf(t->base.peer, sizeof t->base.peer, "%s", peer);
    *out = t;
    return RFS_OK;
}

/* ---- bootstrap: worker addresses over the TCP socket ----
 * Each side sends BOOT_MAGIC, a 4-byte big-endian length and its UCP worker address (client
 * first); then each makes an endpoint to the other's worker. The socket stays open, unused, as
 * the connection's liveness signal (check_peer), and the endpoints use no UCX peer failure
 * handling: with UCX 1.13 (UCP_ERR_HANDLING_MODE_PEER, through ucp_listener) rfsd saw live
 * endpoints fail with "Endpoint timeout" in the middle of transfers, in one run of every few
 * rfs put/get pairs. */

#define BOOT_MAGIC "RFS-UCX1"
#define BOOT_REFUSED "RFS-BUSY"  /* instead of an address: the reason follows */
#define BOOT_MAGIC_LEN 8
#define BOOT_ADDR_MAX 8192   /* a worker address is a few hundred bytes */

static int sock_io(int fd, void *buf, size_t len, int writing, int64_t until)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = writing ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT)
                            : recv(fd, (char *)buf + done, len - done, MSG_DONTWAIT);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n == 0)
            return RFS_E_CONN;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return RFS_E_CONN;
        int64_t left = until - now_ms();
        if (left <= 0)
            return RFS_E_TIMEOUT;
        struct pollfd p = {.fd = fd, .events = writing ? POLLOUT : POLLIN};
        poll(&p, 1, (int)left);
    }
    return RFS_OK;
}

static int send_address(int fd, ucp_worker_h w, int64_t until)
{
    ucp_address_t *a;
    size_t alen;
    ucs_status_t st = ucp_worker_get_address(w, &a, &alen);
    if (st != UCS_OK)
        return rfs_fail(RFS_E_CONN, "UCX worker address: %s", ucs_status_string(st));
    uint8_t hdr[BOOT_MAGIC_LEN + 4];
    memcpy(hdr, BOOT_MAGIC, BOOT_MAGIC_LEN);
    uint32_t be = htonl((uint32_t)alen);
    memcpy(hdr + BOOT_MAGIC_LEN, &be, 4);
    int rc = sock_io(fd, hdr, sizeof hdr, 1, until);
    if (!rc)
        rc = sock_io(fd, a, alen, 1, until);
    ucp_worker_release_address(w, a);
    return rc;
}

/* Reads the peer's address (malloc'd into *out). RFS_E_PROTO when the peer does not speak
 * this bootstrap (say, rfsd's TCP port answering with its own frames); RFS_E_BUSY when the
 * server refused the connection (its reason in why). */
static int recv_address(int fd, int64_t until, uint8_t **out, size_t *len, char *why, size_t cap)
{
    uint8_t hdr[BOOT_MAGIC_LEN + 4];
    int rc = sock_io(fd, hdr, sizeof hdr, 0, until);
    if (rc)
        return rc;
    uint32_t be;
    memcpy(&be, hdr + BOOT_MAGIC_LEN, 4);
    size_t n = ntohl(be);
    if (why && !memcmp(hdr, BOOT_REFUSED, BOOT_MAGIC_LEN) && n < cap) {
        if ((rc = sock_io(fd, why, n, 0, until)))
            return rc;
        why[n] = '\0';
        for (size_t i = 0; i < n; i++)  /* a message for a terminal: printable only */
            if ((unsigned char)why[i] < 0x20 || why[i] == 0x7f)
                why[i] = '?';
        return RFS_E_BUSY;
    }
    if (memcmp(hdr, BOOT_MAGIC, BOOT_MAGIC_LEN) || n == 0 || n > BOOT_ADDR_MAX)
        return RFS_E_PROTO;
    if (!(*out = malloc(n)))
        return RFS_E_NOMEM;
    if ((rc = sock_io(fd, *out, n, 0, until))) {
        free(*out);
        return rc;
    }
    *len = n;
    return RFS_OK;
}

/* Locked: the endpoint to the peer's worker. */
static ucs_status_t make_ep(ucx_transport *t, const uint8_t *addr)
{
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .address = (const ucp_address_t *)addr,
        .err_mode = UCP_ERR_HANDLING_MODE_NONE,
        .err_handler = {.cb = on_ep_error, .arg = t},
    };
    ucs_status_t st = ucp_ep_create(t->worker, &ep, &t->ep);
    if (st != UCS_OK)
        t->ep = NULL;
    return st;
}

static int connect_failed(ucx_transport *t, int cls, const char *why)
{
    char peer[sizeof t->base.peer];
    snprintf(peer, sizeof peer, "%s", t->base.peer);
    t->failed = t->failed == UCS_OK ? UCS_ERR_CANCELED : t->failed;
    ucx_close(&t->base);
    return rfs_fail(cls, "%s: cannot connect over UCX: %s", peer, why);
}

int rfs_ucx_connect(const char *host, unsigned port, const rfs_transport_opts *o, rfs_transport **out)
{
    *out = NULL;
    int rc = get_ctx();
    if (rc)
        return rfs_fail_cause(RFS_E_CONN, "%s:%u: cannot connect over UCX", host ? host : "", port);
    int timeout_ms = o && o->connect_timeout_ms > 0 ? o->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;
    int64_t until = now_ms() + timeout_ms;
    rfs_transport_opts to = {.connect_timeout_ms = timeout_ms};
    rfs_transport *tcp;
    if ((rc = rfs_tcp_connect(host, port, &to, &tcp)))
        return rc;  /* the TCP message says where and why */
    char peer[sizeof tcp->peer];
    snprintf(peer, sizeof peer, "%s", tcp->peer);
    int sock = dup(tcp->fd);  /* the bootstrap socket outlives the TCP transport wrapping it */
    rfs_transport_close(tcp);
    if (sock < 0)
        return rfs_fail(RFS_E_CONN, "%s: dup: %s", peer, strerror(errno));
    ucx_transport *t;
    if ((rc = new_transport(peer, sock, &t))) {
        close(sock);
        return rc;
    }
    uint8_t *addr = NULL;
    size_t alen = 0;
    char why[256] = "";
    if ((rc = send_address(sock, t->worker, until)) ||
        (rc = recv_address(sock, until, &addr, &alen, why, sizeof why))) {
        char msg[300];
        snprintf(msg, sizeof msg, "server busy: %s", why);
        return connect_failed(t, rc == RFS_E_TIMEOUT ? RFS_E_TIMEOUT : RFS_E_CONN,
                              rc == RFS_E_TIMEOUT ? "no UCX answer within the connect timeout"
                              : rc == RFS_E_BUSY ? msg
                              : "the server does not speak UCX on this port (is it rfsd's "
                                "--ucx-listen address?)");
    }
    pthread_mutex_lock(&t->mu);
    ucs_status_t st = make_ep(t, addr);
    free(addr);
    /* the flush completes once the endpoint is wired up, so a UCX that cannot reach the
     * server (no common transport) fails here and not at the first request */
    if (st == UCS_OK) {
        ucp_request_param_t rp = {0};
        st = wait_request(t, ucp_ep_flush_nbx(t->ep, &rp), (int)(until - now_ms()));
        if (st == UCS_OK && t->failed != UCS_OK)
            st = t->failed;
    }
    pthread_mutex_unlock(&t->mu);
    if (st != UCS_OK)
        return connect_failed(t, st == UCS_ERR_TIMED_OUT ? RFS_E_TIMEOUT : RFS_E_CONN,
                              ucs_status_string(st));
    *out = &t->base;
    return RFS_OK;
}

/* ---- server side ---- */

#define ACCEPT_BOOT_MS 2000  /* the acceptor waits this long for a client's address */

struct rfs_ucx_listener {
    int fd;                  /* listening TCP socket (nonblocking) */
    char addr[300];
    int pending;             /* accepted, not yet taken or refused; -1: none */
    char pending_peer[80];
};

int rfs_ucx_listen(const char *host, unsigned port, rfs_ucx_listener **out)
{
    *out = NULL;
    int rc = get_ctx();
    if (rc)
        return rc;
    struct sockaddr_storage ss;
    socklen_t sl;
    if ((rc = resolve(host, port, 1, &ss, &sl)))
        return rc;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 128) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return rfs_fail(RFS_E_CONN, "cannot listen for UCX on %s:%u: %s", host, port, strerror(e));
    }
    rfs_ucx_listener *l = calloc(1, sizeof *l);
    if (!l) {
        close(fd);
        return rfs_fail(RFS_E_NOMEM, "out of memory");
    }
    l->fd = fd;
    l->pending = -1;
    sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    addr_string(&ss, l->addr, sizeof l->addr);
    *out = l;
    return RFS_OK;
}

int rfs_ucx_listener_fd(const rfs_ucx_listener *l) { return l->fd; }

void rfs_ucx_listener_addr(const rfs_ucx_listener *l, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", l->addr);
}

int rfs_ucx_pending_peer(rfs_ucx_listener *l, char *peer, size_t cap)
{
    if (l->pending < 0) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return 1;
        l->pending = fd;
        addr_string(&ss, l->pending_peer, sizeof l->pending_peer);
    }
    snprintf(peer, cap, "%s", l->pending_peer);
    return 0;
}

int rfs_ucx_refuse(rfs_ucx_listener *l, const char *why)
{
    if (l->pending < 0)
        return 0;
    /* told, not just closed: the client's message says why. Its address is read first, as
     * closing a socket with unread bytes resets the connection before the client reads. */
    uint8_t *addr = NULL;
    size_t alen = 0;
    if (recv_address(l->pending, now_ms() + ACCEPT_BOOT_MS, &addr, &alen, NULL, 0) == RFS_OK)
        free(addr);
    uint8_t msg[BOOT_MAGIC_LEN + 4 + 200];
    size_t n = strlen(why) < 200 ? strlen(why) : 200;
    uint32_t be = htonl((uint32_t)n);
    memcpy(msg, BOOT_REFUSED, BOOT_MAGIC_LEN);
    memcpy(msg + BOOT_MAGIC_LEN, &be, 4);
    memcpy(msg + BOOT_MAGIC_LEN + 4, why, n);
    (void)!send(l->pending, msg, BOOT_MAGIC_LEN + 4 + n, MSG_NOSIGNAL | MSG_DONTWAIT);
    close(l->pending);
    l->pending = -1;
    return 1;
}

int rfs_ucx_accept(rfs_ucx_listener *l, rfs_transport **out)
{
    *out = NULL;
    char peer[80];
    if (rfs_ucx_pending_peer(l, peer, sizeof peer))
        return 0;
    int sock = l->pending;
    l->pending = -1;
    int one = 1;
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int64_t until = now_ms() + ACCEPT_BOOT_MS;
    uint8_t *addr = NULL;
    size_t alen = 0;
    int rc = recv_address(sock, until, &addr, &alen, NULL, 0);
    if (rc) {
        close(sock);
        return rfs_fail(rc == RFS_E_NOMEM ? RFS_E_NOMEM : RFS_E_CONN,
                        "%s: not a UCX client (%s)", peer,
                        rc == RFS_E_PROTO ? "bad bootstrap" : rc == RFS_E_TIMEOUT
                        ? "no address within 2 s" : "closed during the bootstrap");
    }
    ucx_transport *t;
    if ((rc = new_transport(peer, sock, &t))) {
        free(addr);
        close(sock);
        return rc;
    }
    pthread_mutex_lock(&t->mu);
    ucs_status_t st = make_ep(t, addr);
    pthread_mutex_unlock(&t->mu);
    free(addr);
    if (st != UCS_OK || (rc = send_address(sock, t->worker, until))) {
        t->failed = UCS_ERR_CANCELED;
        ucx_close(&t->base);
        return rfs_fail(RFS_E_CONN, "%s: cannot accept a UCX connection: %s", peer,
                        st != UCS_OK ? ucs_status_string(st) : "the client went away");
    }
    *out = &t->base;
    return 1;
}

void rfs_ucx_listener_free(rfs_ucx_listener *l)
{
    if (!l)
        return;
    rfs_ucx_refuse(l, "server stopping");
    close(l->fd);
    free(l);
}
