/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* UCX stream transport (ucx.h).
 *
 * Threads: rfsd's reader and reply writer (and the client's receiver and senders) use one
 * connection at once. The worker is made UCS_THREAD_MODE_SERIALIZED and every UCP call runs
 * under the transport's mutex; waiting (poll on the worker's event descriptor) happens with the
 * mutex released.
 *
 * Wakeups: both threads poll the same event descriptor, and ucp_worker_arm drains it, so one
 * thread's progress and arm can eat the event the other sleeps on (the other's bytes then sit
 * in UCX while it sleeps). So a thread that gives up sets rx_waiting or tx_waiting, and every
 * locked section ends in settle(): if a waiting side now has something (bytes, send room, an
 * error) the worker is signalled, which leaves the descriptor readable until the next arm, and
 * that arm's section signals again until the waiting side has run.
 *
 * Sends copy the caller's bytes (at most SEND_CAP in flight per connection), so send_nb has
 * the socket's contract: what it took is the transport's business. Receives hand out UCX's own
 * buffers (ucp_stream_recv_data_nb) piece by piece. */
#include "transport/ucx.h"

#include "common/err.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

#define DEFAULT_CONNECT_TIMEOUT_MS 10000
#define SEND_CAP (16u << 20)         /* bytes copied and not yet sent, per connection */
#define SEND_PIECE (4u << 20)        /* largest single stream send (a frame) */
#define CLOSE_FLUSH_MS 2000          /* a clean close waits this long for the peer */
#define ARM_TRIES 64                 /* progress rounds before giving up on arming */

/* ---- the process's UCP context ---- */

static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static ucp_context_h ctx;
static char ctx_error[256];

/* $UCX_TLS as rfs's own context should take it: $RFS_UCX_TLS wins; a $UCX_TLS that names no
 * network transport (an MPI program's "self,sm", as the test suite sets for MPICH: only the
 * ranks of one node) gets tcp added, since a client-server connection is made over a socket
 * address and may lead to another host; UCX refuses the connect otherwise. NULL: as UCX
 * reads it. */
static const char *own_tls(char *buf, size_t cap)
{
    const char *rfs = getenv("RFS_UCX_TLS"), *ucx = getenv("UCX_TLS");
    if (rfs && *rfs)
        return rfs;
    if (!ucx || !*ucx || ucx[0] == '^')
        return NULL;
    static const char *const network[] = {"all", "tcp", "rc", "ud", "dc", "ib", "rdmacm"};
    for (size_t i = 0; i < sizeof network / sizeof *network; i++)
        if (strstr(ucx, network[i]))
            return NULL;
    snprintf(buf, cap, "%s,tcp", ucx);
    return buf;
}

static void ctx_init(void)
{
    ucp_config_t *cfg = NULL;
    ucs_status_t st = ucp_config_read(NULL, NULL, &cfg);
    if (st != UCS_OK) {
        snprintf(ctx_error, sizeof ctx_error, "UCX configuration: %s", ucs_status_string(st));
        return;
    }
    char buf[256];
    const char *tls = own_tls(buf, sizeof buf);
    if (tls && (st = ucp_config_modify(cfg, "TLS", tls)) != UCS_OK) {
        snprintf(ctx_error, sizeof ctx_error, "UCX transports '%.60s' ($RFS_UCX_TLS, $UCX_TLS): %s",
                 tls, ucs_status_string(st));
        ucp_config_release(cfg);
        return;
    }
    ucp_params_t p = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
        .features = UCP_FEATURE_STREAM | UCP_FEATURE_WAKEUP,
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

static int new_worker(ucp_worker_h *w, int *efd)
{
    ucp_worker_params_t wp = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_EVENTS,
        .thread_mode = UCS_THREAD_MODE_SERIALIZED,
        .events = UCP_WAKEUP_RX | UCP_WAKEUP_TX,
    };
    ucs_status_t st = ucp_worker_create(ctx, &wp, w);
    if (st != UCS_OK)
        return rfs_fail(RFS_E_CONN, "UCX worker: %s", ucs_status_string(st));
    if ((st = ucp_worker_get_efd(*w, efd)) != UCS_OK) {
        ucp_worker_destroy(*w);
        return rfs_fail(RFS_E_CONN, "UCX worker event descriptor: %s", ucs_status_string(st));
    }
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
    ucs_status_t failed;           /* set by the error handler: the endpoint is gone */
    int shut;                      /* rfs_transport_shutdown: both directions end */
    int read_stopped;              /* rfs_ucx_stop_reading */
    int rx_waiting, tx_waiting;    /* a thread sleeps on the descriptor for this (see top) */
    uint8_t *rx_data;              /* UCX's buffer being handed out, from rx_off */
    size_t rx_len, rx_off;
    size_t tx_inflight;            /* bytes copied, send not complete */
} ucx_transport;

typedef struct send_piece {
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
    t->rx_len = len;
    t->rx_off = 0;
}

static void progress(ucx_transport *t)
{
    for (int i = 0; i < ARM_TRIES && ucp_worker_progress(t->worker); i++)
        ;
    fill_rx(t);
}

/* Ends a locked section (see the comment at the top). */
static void settle(ucx_transport *t)
{
    int ended = t->failed != UCS_OK || t->shut;
    if ((t->rx_waiting && (t->rx_data || ended || t->read_stopped)) ||
        (t->tx_waiting && (t->tx_inflight < SEND_CAP || ended)))
        ucp_worker_signal(t->worker);
}

/* Before sleeping on the descriptor: arms the worker. 0 armed (sleep), 1 something happened
 * (look again without sleeping). */
static int arm(ucx_transport *t)
{
    ucs_status_t st = ucp_worker_arm(t->worker);
    if (st == UCS_OK)
        return 0;
    progress(t);
    return 1;
}

static void send_done(void *request, ucs_status_t status, void *user_data)
{
    send_piece *sp = user_data;  /* inside progress: t->mu is held */
    sp->t->tx_inflight -= sp->len;
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
    ucp_request_free(r);  /* the callback still runs when the send completes */
    return (long)len;
}

/* How much send_nb may take now (0: full), or -1 with errno when the connection is gone. */
static long send_room(ucx_transport *t)
{
    if (t->failed != UCS_OK || t->shut) {
        errno = t->shut ? EPIPE : gone_errno(t);
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
    if (r == 0) {
        t->tx_waiting = 1;
        if (arm(t))
            r = send_room(t);
    }
    if (r > 0) {
        t->tx_waiting = 0;
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
    if (room == 0) {
        t->tx_waiting = 1;
        if (arm(t))
            room = send_room(t);
    }
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
    if (!t->rx_data && arm(t) == 1)
        fill_rx(t);
    if (t->rx_data && !t->read_stopped) {
        size_t k = t->rx_len - t->rx_off < len ? t->rx_len - t->rx_off : len;
        memcpy(buf, t->rx_data + t->rx_off, k);
        t->rx_off += k;
        if (t->rx_off == t->rx_len) {
            ucp_stream_data_release(t->ep, t->rx_data);
            t->rx_data = NULL;
            fill_rx(t);  /* so settle knows whether more is here */
        }
        t->rx_waiting = 0;
        return (long)k;
    }
    if (t->read_stopped || t->shut || t->failed == UCS_ERR_CONNECTION_RESET) {
        t->rx_waiting = 0;
        return 0;  /* the peer closed its endpoint: the stream's end */
    }
    if (t->failed != UCS_OK) {
        t->rx_waiting = 0;
        errno = gone_errno(t);
        return -1;
    }
    t->rx_waiting = 1;
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
    ucp_worker_signal(t->worker);  /* wakes a thread sleeping on the descriptor */
    pthread_mutex_unlock(&t->mu);
}

void rfs_ucx_stop_reading(rfs_transport *tr)
{
    ucx_transport *t = U(tr);
    pthread_mutex_lock(&t->mu);
    t->read_stopped = 1;
    ucp_worker_signal(t->worker);
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
        if (ucp_worker_arm(t->worker) == UCS_OK) {
            pthread_mutex_unlock(&t->mu);
            struct pollfd p = {.fd = t->base.fd, .events = POLLIN};
            poll(&p, 1, left > 100 ? 100 : (int)left);  /* short: the close path never hangs */
            pthread_mutex_lock(&t->mu);
        }
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
        int force = t->failed != UCS_OK;
        ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                  .flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0};
        if (wait_request(t, ucp_ep_close_nbx(t->ep, &rp), CLOSE_FLUSH_MS) != UCS_OK && !force) {
            rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
            wait_request(t, ucp_ep_close_nbx(t->ep, &rp), CLOSE_FLUSH_MS);
        }
    }
    /* sends never completed own their copies: progress once more, then the worker's end
     * releases the rest */
    ucp_worker_progress(t->worker);
    pthread_mutex_unlock(&t->mu);
    ucp_worker_destroy(t->worker);
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

static int new_transport(const char *peer, ucx_transport **out)
{
    ucx_transport *t = calloc(1, sizeof *t);
    if (!t)
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", peer);
    int rc = new_worker(&t->worker, &t->base.fd);
    if (rc) {
        free(t);
        return rc;
    }
    pthread_mutex_init(&t->mu, NULL);
    t->base.ops = &ucx_ops;
    snprintf(t->base.peer, sizeof t->base.peer, "%s", peer);
    *out = t;
    return RFS_OK;
}

static int connect_failed(ucx_transport *t, int cls, const char *why)
{
    pthread_mutex_unlock(&t->mu);
    char peer[sizeof t->base.peer];
    snprintf(peer, sizeof peer, "%s", t->base.peer);
    t->failed = t->failed == UCS_OK ? UCS_ERR_CANCELED : t->failed;
    ucx_close(&t->base);
    return rfs_fail(cls, "%s: cannot connect over UCX: %s (is rfsd serving UCX there: "
                    "rfsd --ucx-listen?)", peer, why);
}

int rfs_ucx_connect(const char *host, unsigned port, const rfs_transport_opts *o, rfs_transport **out)
{
    *out = NULL;
    if (!host || !*host || port == 0 || port > 65535)
        return rfs_fail(RFS_E_INVAL, "cannot connect to %s:%u: bad host or port", host ? host : "",
                        port);
    char peer[sizeof ((rfs_transport *)0)->peer];
    snprintf(peer, sizeof peer, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
    int rc = get_ctx();
    if (rc)
        return rfs_fail_cause(RFS_E_CONN, "%s: cannot connect over UCX", peer);
    struct sockaddr_storage ss;
    socklen_t sl;
    if ((rc = resolve(host, port, 0, &ss, &sl)))
        return rc;
    ucx_transport *t;
    if ((rc = new_transport(peer, &t)))
        return rc;
    int timeout_ms = o && o->connect_timeout_ms > 0 ? o->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
        .sockaddr = {.addr = (const struct sockaddr *)&ss, .addrlen = sl},
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = {.cb = on_ep_error, .arg = t},
    };
    pthread_mutex_lock(&t->mu);
    ucs_status_t st = ucp_ep_create(t->worker, &ep, &t->ep);
    if (st != UCS_OK) {
        t->ep = NULL;
        return connect_failed(t, RFS_E_CONN, ucs_status_string(st));
    }
    /* The flush completes once the endpoint is wired up to the server's, so "nobody serves
     * UCX there" is found here, within the connect timeout, and not at the first request. */
    ucp_request_param_t rp = {0};
    st = wait_request(t, ucp_ep_flush_nbx(t->ep, &rp), timeout_ms);
    if (st == UCS_OK && t->failed != UCS_OK)
        st = t->failed;
    if (st != UCS_OK)
        return connect_failed(t, st == UCS_ERR_TIMED_OUT ? RFS_E_TIMEOUT : RFS_E_CONN,
                              st == UCS_ERR_TIMED_OUT ? "no answer within the connect timeout"
                                                      : ucs_status_string(st));
    pthread_mutex_unlock(&t->mu);
    *out = &t->base;
    return RFS_OK;
}

/* ---- server side ---- */

typedef struct pending_req {
    struct pending_req *next;
    ucp_conn_request_h req;
    char peer[80];
} pending_req;

struct rfs_ucx_listener {
    ucp_worker_h worker;   /* only the acceptor thread uses it */
    ucp_listener_h listener;
    int efd;
    char addr[300];
    pending_req *head, **tail;
};

static void on_conn_request(ucp_conn_request_h req, void *arg)
{
    rfs_ucx_listener *l = arg;
    pending_req *p = calloc(1, sizeof *p);
    if (!p) {
        ucp_listener_reject(l->listener, req);
        return;
    }
    p->req = req;
    snprintf(p->peer, sizeof p->peer, "unknown peer");
    ucp_conn_request_attr_t a = {.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR};
    if (ucp_conn_request_query(req, &a) == UCS_OK)
        addr_string(&a.client_address, p->peer, sizeof p->peer);
    *l->tail = p;
    l->tail = &p->next;
}

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
    rfs_ucx_listener *l = calloc(1, sizeof *l);
    if (!l)
        return rfs_fail(RFS_E_NOMEM, "out of memory");
    l->tail = &l->head;
    if ((rc = new_worker(&l->worker, &l->efd))) {
        free(l);
        return rc;
    }
    ucp_listener_params_t lp = {
        .field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
        .sockaddr = {.addr = (const struct sockaddr *)&ss, .addrlen = sl},
        .conn_handler = {.cb = on_conn_request, .arg = l},
    };
    ucs_status_t st = ucp_listener_create(l->worker, &lp, &l->listener);
    if (st != UCS_OK) {
        ucp_worker_destroy(l->worker);
        free(l);
        return rfs_fail(RFS_E_CONN, "cannot listen for UCX on %s:%u: %s", host, port,
                        ucs_status_string(st));
    }
    ucp_listener_attr_t la = {.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR};
    if (ucp_listener_query(l->listener, &la) == UCS_OK)
        addr_string(&la.sockaddr, l->addr, sizeof l->addr);
    else
        snprintf(l->addr, sizeof l->addr, "%s:%u", host, port);
    *out = l;
    return RFS_OK;
}

int rfs_ucx_listener_fd(const rfs_ucx_listener *l) { return l->efd; }

void rfs_ucx_listener_addr(const rfs_ucx_listener *l, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", l->addr);
}

/* Progresses the listener until a request is queued or the worker is armed. */
static void listener_poll(rfs_ucx_listener *l)
{
    for (int i = 0; i < ARM_TRIES && !l->head; i++) {
        while (ucp_worker_progress(l->worker))
            ;
        if (l->head || ucp_worker_arm(l->worker) == UCS_OK)
            return;
    }
}

int rfs_ucx_pending_peer(rfs_ucx_listener *l, char *peer, size_t cap)
{
    listener_poll(l);
    if (!l->head)
        return 1;
    snprintf(peer, cap, "%s", l->head->peer);
    return 0;
}

static pending_req *pop(rfs_ucx_listener *l)
{
    pending_req *p = l->head;
    if (p && !(l->head = p->next))
        l->tail = &l->head;
    return p;
}

int rfs_ucx_refuse(rfs_ucx_listener *l)
{
    pending_req *p = pop(l);
    if (!p)
        return 0;
    ucp_listener_reject(l->listener, p->req);
    free(p);
    return 1;
}

int rfs_ucx_accept(rfs_ucx_listener *l, rfs_transport **out)
{
    *out = NULL;
    listener_poll(l);
    pending_req *p = pop(l);
    if (!p)
        return 0;
    ucx_transport *t;
    int rc = new_transport(p->peer, &t);
    if (rc) {
        ucp_listener_reject(l->listener, p->req);
        free(p);
        return rc;
    }
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .conn_request = p->req,
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = {.cb = on_ep_error, .arg = t},
    };
    free(p);
    pthread_mutex_lock(&t->mu);
    ucs_status_t st = ucp_ep_create(t->worker, &ep, &t->ep);
    pthread_mutex_unlock(&t->mu);
    if (st != UCS_OK) {
        char peer[sizeof t->base.peer];
        snprintf(peer, sizeof peer, "%s", t->base.peer);
        t->ep = NULL;
        ucx_close(&t->base);
        return rfs_fail(RFS_E_CONN, "%s: cannot accept a UCX connection: %s", peer,
                        ucs_status_string(st));
    }
    *out = &t->base;
    return 1;
}

void rfs_ucx_listener_free(rfs_ucx_listener *l)
{
    if (!l)
        return;
    while (rfs_ucx_refuse(l))
        ;
    ucp_listener_destroy(l->listener);
    ucp_worker_destroy(l->worker);
    free(l);
}
