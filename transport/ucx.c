/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* UCX transport (ucx.h): the byte stream carried as UCP active messages.
 *
 * Messages: every send_nb/sendfile_nb call becomes one active message of at most SEND_PIECE
 * bytes, its header a sequence number. Small ones go eagerly; from RNDV_MIN on they go by
 * rendezvous, so the receiver pulls the bytes when it has room for them (RX_CAP fetched and
 * unread per connection) and a sender's bytes in flight (SEND_CAP) stay bounded by what the
 * reader takes, as a socket's would. The receiver hands the messages out in sequence order;
 * one without bytes is the end of the stream (FIN, sent by close), so an end can never
 * overtake the data before it. The client's blocking reads take rendezvous messages straight
 * into the caller's buffer when the read covers them (dw_on). We used UCP streams first: with
 * UCX 1.13 over tcp bulk transfers stalled with bytes held inside UCX (git history,
 * docs/protocol.md "Transports").
 *
 * Threads: rfsd's reader and reply writer (and the client's receiver and sender) use one
 * connection at once. The worker is UCS_THREAD_MODE_SERIALIZED and every UCP call runs under
 * the transport's mutex; waiting (poll on t->fd) happens with it released.
 *
 * Waiting: t->fd is an epoll set of the worker's event descriptor, the bootstrap socket (its
 * end is the peer's), one eventfd per direction and a backstop timer. A thread about to wait
 * says so (rx_waiting, tx_waiting) and the worker is armed before the mutex is released
 * (progress until ucp_worker_arm says UCS_OK). Progress made by the other thread may consume
 * the events a waiter sleeps on, so whoever moves something a waiting side wants writes that
 * side's eventfd; only that side drains it. While bytes are in flight the timer ticks every
 * BACKSTOP_NS as a guard against a lost wakeup inside UCX; backstop_finds counts the ticks
 * that found work the event descriptor had not announced (logged at debug level). */
#include "transport/iov.h"
#include "transport/ucx.h"

#include "common/err.h"
#include "common/log.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <net/if.h>
#include <netdb.h>
#include <ifaddrs.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

#define DEFAULT_CONNECT_TIMEOUT_MS 10000
#define SEND_CAP (32u << 20)        /* bytes copied and not yet taken by the peer */
#define SEND_PIECE (1u << 20)       /* largest single message */
#define RNDV_MIN (128u << 10)       /* default: from this size a message goes by rendezvous */
#define RX_CAP (32u << 20)          /* fetched, unread bytes after which fetches wait */
#define RX_EAGER_LIMIT (256u << 20) /* unread bytes beyond which the peer is overrunning us */
#define CLOSE_FLUSH_MS 2000         /* a clean close waits this long for the peer */
#define GONE_GRACE_MS 1000          /* bootstrap ended without FIN: wait this long for it */
#define PROGRESS_ROUNDS 64          /* worker progress calls per look, at most */
#define ARM_ROUNDS 256              /* progress-then-arm attempts before settling */
#define BACKSTOP_NS 2000000         /* the timer's interval while work is outstanding */
#define AM_DATA 0x52                /* the active message id of the stream's messages */
#define INLINE_MAX (32u << 10)      /* default: larger write payloads go direct (zero-copy) */
#define RCACHE_MAX_REGIONS "4096"   /* bound of UCX's registration caches (regions) */
#define RCACHE_MAX_SIZE "1g"        /* and (bytes) */

/* ---- the process's UCP context ---- */

static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static ucp_context_h ctx;
static char ctx_error[256];
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static char env_error[200];
static size_t rndv_min = RNDV_MIN; /* $RFS_UCX_RNDV_MIN, read with the context */
/* A blocking write's payloads (iovec elements) of at least this many bytes go direct: sent by
 * rendezvous from the caller's memory, which write_all holds until the peer has fetched them;
 * smaller ones are copied into messages (inline). $RFS_UCX_INLINE_MAX or the MPI-IO hint
 * rfs_ucx_inline_max (rfs_ucx_set_inline_max); process-wide, like the context. */
static _Atomic size_t inline_max = INLINE_MAX;
static char ctx_devices[IFNAMSIZ + 8]; /* NET_DEVICES; "": every one (choose_devices) */

/* The network devices of rfs's UCX context, chosen by the first connection or listener of the
 * process: $RFS_UCX_NET_DEVICES; else for a loopback address only the loopback interface, and
 * for a listener on one local address that address's interface; else all. UCX's tcp transport
 * listens on every device it uses, whatever address the bootstrap listener has, so a rfsd
 * listening on 127.0.0.1 would otherwise also take UCX connections on its other interfaces. */
static void choose_devices(const struct sockaddr *sa)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static int chosen;
    pthread_mutex_lock(&mu);
    if (chosen++) {
        pthread_mutex_unlock(&mu);
        return;
    }
    const char *env = getenv("RFS_UCX_NET_DEVICES");
    if (env) {
        snprintf(ctx_devices, sizeof ctx_devices, "%s", env);
        pthread_mutex_unlock(&mu);
        return;
    }
    int loop = sa->sa_family == AF_INET
                   ? (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127
                   : sa->sa_family == AF_INET6 &&
                         IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) == 0) {
        for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
            if (!i->ifa_addr || i->ifa_addr->sa_family != sa->sa_family)
                continue;
            int same = sa->sa_family == AF_INET
                           ? ((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
                                 ((const struct sockaddr_in *)sa)->sin_addr.s_addr
                           : !memcmp(&((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
                                     &((const struct sockaddr_in6 *)sa)->sin6_addr,
                                     sizeof(struct in6_addr));
            if ((loop && (i->ifa_flags & IFF_LOOPBACK)) || (!loop && same)) {
                snprintf(ctx_devices, sizeof ctx_devices, "%s", i->ifa_name);
                break;
            }
        }
        freeifaddrs(ifs);
    }
    pthread_mutex_unlock(&mu);
}

/* The transports of rfs's own UCP context: $RFS_UCX_TLS, else every one UCX has except shared
 * memory ("^sm"), whatever $UCX_TLS says. $UCX_TLS is usually an MPI library's setting (the test
 * suite runs MPICH with "self,sm", which reaches no other host), and a connection to rfsd may
 * lead anywhere. Shared memory is left out because in UCX 1.13 its endpoints, with the peer
 * failure detection a server needs, failed live connections with "Endpoint timeout" in the
 * middle of transfers. */
static const char *own_tls(void)
{
    const char *rfs = getenv("RFS_UCX_TLS");
    return rfs && *rfs ? rfs : "^sm";
}

int rfs_ucx_parse_inline_max(const char *v, size_t *out)
{
    char *end = "";
    errno = 0;
    unsigned long long x = v && *v ? strtoull(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || *v == '-' || x > RFS_UCX_INLINE_NEVER)
        return rfs_fail(RFS_E_INVAL,
                        "UCX inline maximum '%.40s': expected bytes, 0 (every payload direct) .. "
                        "%llu (never direct)",
                        v ? v : "", (unsigned long long)RFS_UCX_INLINE_NEVER);
    *out = (size_t)x;
    return RFS_OK;
}

static void env_init(void)
{
    const char *v = getenv("RFS_UCX_INLINE_MAX");
    size_t x;
    if (!v)
        return;
    if (rfs_ucx_parse_inline_max(v, &x) == RFS_OK)
        inline_max = x;
    else
        snprintf(env_error, sizeof env_error, "$RFS_UCX_INLINE_MAX: %s", rfs_last_error());
}

void rfs_ucx_set_inline_max(size_t bytes)
{
    pthread_once(&env_once, env_init); /* the hint overrides the environment, not after it */
    inline_max = bytes;
}

size_t rfs_ucx_inline_max(void)
{
    pthread_once(&env_once, env_init);
    return inline_max;
}

/* Whether this host has an RDMA device (InfiniBand, RoCE): only those memory domains register
 * memory and read the registration cache's settings. */
static int have_rdma_device(void)
{
    DIR *d = opendir("/sys/class/infiniband");
    int found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));)
        found = e->d_name[0] != '.';
    if (d)
        closedir(d);
    return found;
}

/* UCX's registration caches (one per memory domain that registers memory: InfiniBand, RoCE)
 * keep user buffers registered for reuse, and evict the least recently used region beyond
 * RCACHE_MAX_REGIONS or RCACHE_MAX_SIZE bytes. UCX's default is no bound; rfs sets one unless
 * $UCX_RCACHE_MAX_REGIONS / $UCX_RCACHE_MAX_SIZE already say. Without an RDMA device nothing
 * registers (UCX's tcp and shared memory need no registration), and UCX would warn that the
 * settings went unused. */
static ucs_status_t bound_rcache(ucp_config_t *cfg)
{
    ucs_status_t st = UCS_OK;
    if (!have_rdma_device())
        return st;
    if (!getenv("UCX_RCACHE_MAX_REGIONS"))
        st = ucp_config_modify(cfg, "RCACHE_MAX_REGIONS", RCACHE_MAX_REGIONS);
    if (st == UCS_OK && !getenv("UCX_RCACHE_MAX_SIZE"))
        st = ucp_config_modify(cfg, "RCACHE_MAX_SIZE", RCACHE_MAX_SIZE);
    return st;
}

/* UCX's tcp transport (what it uses without an RDMA device) does rendezvous as RTS, RTR, a
 * put of the bytes, the put's acknowledgement and ATP: two round trips per burst on top of
 * the bytes. With its put disabled the bytes go as active messages after the RTR and no ATP
 * is needed: one round trip less, which a long path shows (docs/design.md "Rendezvous costs
 * round trips"). Only where tcp is surely what UCX will use (no RDMA device, rfs's own choice
 * of transports): UCX warns, on standard output, of a setting no transport took.
 * $UCX_TCP_PUT_ENABLE still wins. */
static void one_trip_rendezvous(ucp_config_t *cfg)
{
    const char *tls = getenv("RFS_UCX_TLS");
    if (!have_rdma_device() && !(tls && *tls) && !getenv("UCX_TCP_PUT_ENABLE"))
        (void)ucp_config_modify(cfg, "PUT_ENABLE", "n"); /* unknown to an old UCX: ignored */
}

static void ctx_init(void)
{
    pthread_once(&env_once, env_init);
    if (env_error[0]) {
        snprintf(ctx_error, sizeof ctx_error, "%s", env_error);
        return;
    }
    const char *rm = getenv("RFS_UCX_RNDV_MIN");
    if (rm && *rm) {
        char *end;
        unsigned long long v = strtoull(rm, &end, 10);
        if (*end || v == 0 || v > SEND_PIECE + 1) {
            snprintf(ctx_error, sizeof ctx_error,
                     "$RFS_UCX_RNDV_MIN='%.40s': expected bytes, "
                     "1 .. %u (above %u: never)",
                     rm, SEND_PIECE + 1, SEND_PIECE);
            return;
        }
        rndv_min = (size_t)v;
    }
    ucp_config_t *cfg = NULL;
    ucs_status_t st = ucp_config_read(NULL, NULL, &cfg);
    if (st != UCS_OK) {
        snprintf(ctx_error, sizeof ctx_error, "UCX configuration: %s", ucs_status_string(st));
        return;
    }
    if ((st = bound_rcache(cfg)) != UCS_OK) {
        snprintf(ctx_error, sizeof ctx_error, "UCX registration cache bound: %s",
                 ucs_status_string(st));
        ucp_config_release(cfg);
        return;
    }
    one_trip_rendezvous(cfg);
    const char *tls = own_tls();
    if ((st = ucp_config_modify(cfg, "TLS", tls)) != UCS_OK) {
        snprintf(ctx_error, sizeof ctx_error, "UCX transports '%.60s' ($RFS_UCX_TLS): %s", tls,
                 ucs_status_string(st));
        ucp_config_release(cfg);
        return;
    }
    if (ctx_devices[0] && (st = ucp_config_modify(cfg, "NET_DEVICES", ctx_devices)) != UCS_OK) {
        snprintf(ctx_error, sizeof ctx_error, "UCX devices '%s' ($RFS_UCX_NET_DEVICES): %s",
                 ctx_devices, ucs_status_string(st));
        ucp_config_release(cfg);
        return;
    }
    ucp_params_t p = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
        .features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP,
        .mt_workers_shared = 1, /* one worker per connection, used from many threads */
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
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
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
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
        snprintf(buf, cap, "[%s]:%u", ip, ntohs(a->sin6_port));
        return;
    }
    const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
    snprintf(buf, cap, "%s:%u", ip, ntohs(a->sin_port));
}

/* ---- one connection ---- */

typedef struct rx_msg rx_msg;
typedef struct send_piece send_piece;

typedef struct ucx_transport {
    rfs_transport base;
    pthread_mutex_t mu; /* every UCP call on worker/ep, and everything below */
    ucp_worker_h worker;
    ucp_ep_h ep;
    int efd;              /* the worker's event descriptor (in base.fd) */
    int kick_rx, kick_tx; /* eventfds: the reader's / the sender's wait is over */
    int rx_kicked, tx_kicked;
    int rx_waiting, tx_waiting; /* that side returned EAGAIN and polls base.fd */
    /* Writers waiting for their direct sends (ucx_write_wait), besides the sender: several at
     * once, since they wait outside the client's send lock. Any one of them may drain kick_tx
     * (tx_enter), so while there are any, every send completion kicks again and the timer
     * ticks: a writer whose kick another took wakes at the next tick at the latest. */
    int tx_sleepers;
    int rx_event, tx_event; /* this locked section moved something that side waits for */
    int timer_fd;           /* the backstop */
    int timer_on;
    int sock;            /* the bootstrap socket, kept to see the peer go */
    int peer_gone;       /* sock ended: the peer closed or died */
    int64_t gone_ms;     /* when */
    ucs_status_t failed; /* the endpoint (or the peer's behaviour) ended the connection */
    int shut;            /* rfs_transport_shutdown: both directions end */
    int read_stopped;    /* rfs_ucx_stop_reading */
    int fin_sent;
    /* receive side: messages in sequence order, the next to hand out at the head */
    rx_msg *rx_head, *rx_tail;
    uint64_t rx_next; /* sequence number the head must have */
    size_t rx_held;   /* bytes held: eager messages and fetches started, unread */
    uint64_t rx_seq_arrive, rx_pos_arrive; /* next in-order arrival and its stream position */
    int pos_broken;                        /* a message arrived out of order: no direct fetches */
    uint64_t rx_pos_read;                  /* stream position handed out */
    /* Direct fetches (the client's blocking reads): while read_all waits for stream bytes
     * [dw_pos, dw_pos + dw_len) into dw_buf, a rendezvous message wholly inside is fetched
     * straight into the caller's buffer; other messages wait until a read covers them or
     * reaches them at the head. */
    int blocking; /* the reader uses read_all / read_some */
    int dw_on;
    uint8_t *dw_buf;
    uint64_t dw_pos;
    size_t dw_len;
    int rx_fin; /* the peer's FIN is at the head: the stream has ended */
    /* send side */
    uint64_t tx_seq;
    size_t tx_inflight;           /* bytes copied, send not complete */
    size_t tx_direct;             /* bytes sent from a writer's buffer, send not complete */
    send_piece *pieces;           /* sends in flight, freed at close if never completed */
    unsigned long backstop_finds; /* timer ticks that found work (see top) */
} ucx_transport;

struct rx_msg {
    rx_msg *next;
    ucx_transport *t;
    uint64_t seq;
    uint64_t pos;  /* its first byte's stream position (unless pos_broken) */
    uint8_t *data; /* the bytes: own[], buf, UCX's (ucx_owned) or the reader's */
    uint8_t *buf;  /* a rendezvous fetched into a buffer of ours (buf_get) */
    void *desc;    /* a rendezvous not fetched yet */
    int held;      /* counted in rx_held */
    int direct;    /* fetched into the reader's buffer (dw_buf) */
    size_t len, off;
    size_t cap;    /* bytes allocated for the struct (buf_get) */
    int ucx_owned; /* give back with ucp_am_data_release */
    int ready;     /* all bytes are in data */
    int fetching;  /* ucp_am_recv_data_nbx started, not done */
    uint8_t own[];
};

struct send_piece {
    send_piece *prev, *next;
    ucx_transport *t;
    size_t len;
    size_t cap;         /* bytes allocated for the struct (buf_get) */
    uint64_t seq;       /* the message's header: stays put until the send completes */
    const uint8_t *ext; /* direct: the writer's bytes (bytes[] unused), else NULL */
    size_t *pending;    /* direct: its writer's count of bytes not taken yet, or NULL */
    uint8_t bytes[];
};

static ucx_transport *U(rfs_transport *t)
{
    return (ucx_transport *)t;
}

/* Buffers of messages from BUF_CACHED_MIN bytes come from a cache of blocks of BUF_BLOCK
 * bytes (at most BUF_CACHE_MAX kept): malloc hands such sizes out as fresh mappings, and
 * faulting a mapping's pages in and out again cost more than the copies (perf, 64 MiB reads). */
#define BUF_CACHED_MIN (64u << 10)
#define BUF_BLOCK (SEND_PIECE + 256u)
#define BUF_CACHE_MAX 96

static pthread_mutex_t buf_mu = PTHREAD_MUTEX_INITIALIZER;
static void *buf_cache[BUF_CACHE_MAX];
static int buf_cached;

static void *buf_get(size_t n)
{
    if (n < BUF_CACHED_MIN || n > BUF_BLOCK)
        return malloc(n);
    void *b = NULL;
    pthread_mutex_lock(&buf_mu);
    if (buf_cached > 0)
        b = buf_cache[--buf_cached];
    pthread_mutex_unlock(&buf_mu);
    return b ? b : malloc(BUF_BLOCK);
}

static void buf_put(void *b, size_t n)
{
    if (b && n >= BUF_CACHED_MIN && n <= BUF_BLOCK) {
        pthread_mutex_lock(&buf_mu);
        if (buf_cached < BUF_CACHE_MAX) {
            buf_cache[buf_cached++] = b;
            b = NULL;
        }
        pthread_mutex_unlock(&buf_mu);
    }
    free(b);
}

static void fail(ucx_transport *t, ucs_status_t st)
{
    if (t->failed == UCS_OK)
        t->failed = st;
    t->rx_event = t->tx_event = 1;
}

static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    fail(arg, status); /* called inside progress: t->mu is held */
}

/* Messages are queued by sequence number; they arrive in order, so this is an append. */
static void rx_queue(ucx_transport *t, rx_msg *m)
{
    m->t = t;
    if (!t->rx_tail || t->rx_tail->seq < m->seq) {
        if (t->rx_tail)
            t->rx_tail->next = m;
        else
            t->rx_head = m;
        t->rx_tail = m;
        return;
    }
    rx_msg **p = &t->rx_head;
    while ((*p)->seq < m->seq)
        p = &(*p)->next;
    m->next = *p;
    *p = m;
}

static void fetch_done(void *request, ucs_status_t status, size_t length, void *user_data)
{
    rx_msg *m = user_data; /* inside progress: t->mu is held */
    m->fetching = 0;
    if (status == UCS_OK && length == m->len)
        m->ready = 1;
    else
        fail(m->t, status == UCS_OK ? UCS_ERR_MESSAGE_TRUNCATED : status);
    m->t->rx_event = 1;
    ucp_request_free(request);
}

/* Starts the fetches of rendezvous messages, oldest first, while there is room (one at
 * least, however large); with a blocking reader, straight into its buffer where its read
 * covers a message (see dw_on). Locked. */
static void start_fetches(ucx_transport *t)
{
    for (rx_msg *m = t->rx_head; m && t->failed == UCS_OK; m = m->next) {
        if (!m->desc)
            continue;
        int direct = 0;
        if (t->blocking) {
            direct = t->dw_on && !t->pos_broken && m->pos >= t->dw_pos &&
                     m->pos + m->len <= t->dw_pos + t->dw_len;
            if (!direct && m != t->rx_head)
                continue; /* a later read may take it directly */
        }
        if (!direct && t->rx_held > 0 && t->rx_held + m->len > RX_CAP)
            return;
        if (direct) {
            m->data = t->dw_buf + (m->pos - t->dw_pos);
            m->direct = 1;
        } else {
            if (!(m->buf = buf_get(m->len))) {
                fail(t, UCS_ERR_NO_MEMORY);
                return;
            }
            m->data = m->buf;
            m->held = 1;
            t->rx_held += m->len;
        }
        ucp_request_param_t rp = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
            .cb.recv_am = fetch_done,
            .user_data = m,
        };
        void *desc = m->desc;
        m->desc = NULL;
        ucs_status_ptr_t r = ucp_am_recv_data_nbx(t->worker, desc, m->data, m->len, &rp);
        if (r == NULL) {
            m->ready = 1;
            t->rx_event = 1;
        } else if (UCS_PTR_IS_ERR(r)) {
            fail(t, UCS_PTR_STATUS(r));
        } else {
            m->fetching = 1;
        }
    }
}

static ucs_status_t on_am(void *arg, const void *header, size_t header_length, void *data,
                          size_t length, const ucp_am_recv_param_t *param)
{
    ucx_transport *t = arg; /* inside progress: t->mu is held */
    uint64_t seq;
    if (header_length != sizeof seq || t->failed != UCS_OK) {
        fail(t, UCS_ERR_INVALID_PARAM);
        return UCS_OK; /* dropped (a rendezvous sender completes) */
    }
    memcpy(&seq, header, sizeof seq);
    int rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
    int keep = !rndv && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA);
    size_t cap = sizeof(rx_msg) + (keep || rndv ? 0 : length);
    rx_msg *m = buf_get(cap); /* not calloc: megabytes to zero */
    if (!m) {
        fail(t, UCS_ERR_NO_MEMORY);
        return rndv ? UCS_ERR_NO_MEMORY : UCS_OK;
    }
    memset(m, 0, sizeof *m);
    m->cap = cap;
    m->seq = seq;
    m->len = length;
    m->data = keep ? data : m->own;
    if (seq == t->rx_seq_arrive) {
        m->pos = t->rx_pos_arrive;
        t->rx_pos_arrive += length;
        t->rx_seq_arrive++;
    } else {
        t->pos_broken = 1;
    }
    if (rndv) {
        m->desc = data;
    } else {
        if (!keep && length)
            memcpy(m->own, data, length);
        m->ucx_owned = keep;
        m->ready = 1;
        m->held = 1;
        t->rx_held += length;
        if (t->rx_held > RX_EAGER_LIMIT)
            fail(t, UCS_ERR_EXCEEDS_LIMIT); /* a reader never gets that far behind */
    }
    rx_queue(t, m);
    t->rx_event = 1;
    if (rndv)
        start_fetches(t);
    return keep || rndv ? UCS_INPROGRESS : UCS_OK;
}

static void free_msg(ucx_transport *t, rx_msg *m)
{
    if (m->ucx_owned)
        ucp_am_data_release(t->worker, m->data);
    else if (m->desc)
        ucp_am_data_release(t->worker, m->desc);
    if (m->buf)
        buf_put(m->buf, m->len);
    buf_put(m, m->cap);
}

/* Nothing is sent on the bootstrap socket after the exchange, so its becoming readable means
 * the peer closed it or died (or broke the protocol). It leaves the epoll set then, which
 * would otherwise stay readable. */
static void check_peer(ucx_transport *t)
{
    if (t->peer_gone || t->sock < 0)
        return;
    char c;
    ssize_t r = recv(t->sock, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    t->peer_gone = 1;
    t->gone_ms = now_ms();
    t->rx_event = t->tx_event = 1;
    epoll_ctl(t->base.fd, EPOLL_CTL_DEL, t->sock, NULL);
}

/* Locked: moves what UCX has for us. */
static void drive(ucx_transport *t)
{
    uint64_t ticks = 0;
    int ticked = t->timer_on && read(t->timer_fd, &ticks, sizeof ticks) == sizeof ticks;
    int quiet = 0;
    if (ticked) { /* did the descriptor announce what the tick finds? */
        struct pollfd p = {.fd = t->efd, .events = POLLIN};
        quiet = poll(&p, 1, 0) == 0;
    }
    for (int i = 0; i < PROGRESS_ROUNDS; i++) {
        if (!ucp_worker_progress(t->worker))
            break;
        if (quiet && i == 0)
            t->backstop_finds++;
    }
    start_fetches(t);
    check_peer(t);
}

static ucs_status_t wait_request(ucx_transport *t, ucs_status_ptr_t r, int ms);

static void kick(int fd, int *kicked)
{
    uint64_t one = 1;
    if (!*kicked)
        (void)!write(fd, &one, sizeof one);
    *kicked = 1;
}

static void unkick(int fd, int *kicked)
{
    uint64_t v;
    if (*kicked)
        (void)!read(fd, &v, sizeof v);
    *kicked = 0;
}

static void set_timer(ucx_transport *t, int on)
{
    if (on == t->timer_on)
        return;
    struct itimerspec its = {{0, 0}, {0, 0}};
    if (on)
        its.it_interval.tv_nsec = its.it_value.tv_nsec = BACKSTOP_NS;
    timerfd_settime(t->timer_fd, 0, &its, NULL);
    t->timer_on = on;
}

/* Ends every locked section: a waiting side is told what moved for it, and the worker is left
 * armed while anyone waits (see top). */
static void settle(ucx_transport *t)
{
    if (t->rx_waiting || t->tx_waiting || t->tx_sleepers) {
        for (int i = 0; i < ARM_ROUNDS; i++) {
            ucs_status_t st = ucp_worker_arm(t->worker);
            if (st == UCS_OK)
                break;
            if (st != UCS_ERR_BUSY) {
                fail(t, st);
                break;
            }
            drive(t);
        }
    }
    if (t->rx_event && t->rx_waiting)
        kick(t->kick_rx, &t->rx_kicked);
    if (t->tx_event && (t->tx_waiting || t->tx_sleepers))
        kick(t->kick_tx, &t->tx_kicked);
    t->rx_event = t->tx_event = 0;
    int outstanding = t->tx_inflight > 0 || t->tx_direct > 0 ||
                      (t->rx_head && !t->rx_head->ready) || (t->peer_gone && !t->rx_fin);
    set_timer(t, ((t->rx_waiting || t->tx_waiting) && outstanding) || t->tx_sleepers > 0);
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
    send_piece *sp = user_data; /* inside progress: t->mu is held */
    ucx_transport *t = sp->t;
    unlink_piece(sp);
    if (sp->ext)
        t->tx_direct -= sp->len;
    else
        t->tx_inflight -= sp->len;
    if (sp->pending)
        *sp->pending -= sp->len;
    t->tx_event = 1;
    if (status != UCS_OK)
        fail(t, status);
    buf_put(sp, sp->cap);
    ucp_request_free(request);
}

static int gone_errno(ucx_transport *t)
{
    return t->failed == UCS_ERR_CONNECTION_RESET || t->failed == UCS_ERR_ENDPOINT_TIMEOUT ||
                   t->failed == UCS_OK
               ? ECONNRESET
               : EPIPE;
}

static send_piece *new_piece(ucx_transport *t, size_t len)
{
    send_piece *sp = buf_get(sizeof *sp + len);
    if (sp) {
        sp->t = t;
        sp->len = len;
        sp->cap = sizeof *sp + len;
        sp->prev = sp->next = NULL;
        sp->ext = NULL;
        sp->pending = NULL;
    }
    return sp;
}

/* Sends a filled piece as the next message (len 0: FIN). Locked. 0, or -1 with errno. */
static int send_piece_now(ucx_transport *t, send_piece *sp)
{
    sp->seq = t->tx_seq++;
    ucp_request_param_t rp = {
        .op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS,
        .flags = sp->ext || sp->len >= rndv_min ? UCP_AM_SEND_FLAG_RNDV : 0,
        .cb.send = send_done,
        .user_data = sp,
    };
    ucs_status_ptr_t r = ucp_am_send_nbx(t->ep, AM_DATA, &sp->seq, sizeof sp->seq,
                                         sp->ext ? sp->ext : sp->bytes, sp->len, &rp);
    if (r == NULL) {
        buf_put(sp, sp->cap); /* done at once: the callback is not called */
        return 0;
    }
    if (UCS_PTR_IS_ERR(r)) {
        buf_put(sp, sp->cap);
        fail(t, UCS_PTR_STATUS(r));
        errno = gone_errno(t);
        return -1;
    }
    if (sp->ext)
        t->tx_direct += sp->len;
    else
        t->tx_inflight += sp->len;
    sp->next = t->pieces;
    if (t->pieces)
        t->pieces->prev = sp;
    t->pieces = sp;
    return 0;
}

/* How much send_nb may take now (0: full), or -1 with errno when the connection is gone.
 * Locked. */
static long send_room(ucx_transport *t)
{
    if (t->tx_inflight >= SEND_CAP)
        drive(t);
    if (t->failed != UCS_OK || t->shut || t->peer_gone || t->fin_sent) {
        errno = t->failed == UCS_OK ? EPIPE : gone_errno(t);
        return -1;
    }
    if (t->tx_inflight >= SEND_CAP)
        return 0;
    size_t room = SEND_CAP - t->tx_inflight;
    return (long)(room < SEND_PIECE ? room : SEND_PIECE);
}

/* Starts a locked section of the sending side. */
static void tx_enter(ucx_transport *t)
{
    pthread_mutex_lock(&t->mu);
    t->tx_waiting = 0;
    unkick(t->kick_tx, &t->tx_kicked);
}

/* Ends it: r < 0 with errno EAGAIN means the sender will wait. */
static long tx_leave(ucx_transport *t, long r)
{
    int e = errno;
    if (r < 0 && e == EAGAIN)
        t->tx_waiting = 1;
    settle(t);
    pthread_mutex_unlock(&t->mu);
    errno = e;
    return r;
}

static long ucx_send_nb(rfs_transport *tr, const struct iovec *iov, int n, int more)
{
    (void)more;
    ucx_transport *t = U(tr);
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    if (total == 0)
        return 0;
    tx_enter(t);
    long r = send_room(t);
    if (r > 0) {
        size_t len = total < (size_t)r ? total : (size_t)r;
        send_piece *sp = new_piece(t, len);
        if (!sp) {
            errno = ENOMEM;
            r = -1;
        } else {
            size_t at = 0;
            for (int i = 0; i < n && at < len; i++) {
                size_t k = iov[i].iov_len < len - at ? iov[i].iov_len : len - at;
                memcpy(sp->bytes + at, iov[i].iov_base, k);
                at += k;
            }
            r = send_piece_now(t, sp) ? -1 : (long)len;
            if (r > 0)
                drive(t); /* start it moving now, not at the next wait */
        }
    } else if (r == 0) {
        errno = EAGAIN;
        r = -1;
    }
    return tx_leave(t, r);
}

static long ucx_sendfile_nb(rfs_transport *tr, int fd, uint64_t off, size_t len)
{
    ucx_transport *t = U(tr);
    tx_enter(t);
    long room = send_room(t);
    if (room == 0)
        errno = EAGAIN;
    if (room <= 0)
        return tx_leave(t, -1);
    tx_leave(t, 0);
    /* Read outside the lock (the disk may be slow) straight into the message: only this
     * thread sends, so the room is still there. */
    size_t want = len < (size_t)room ? len : (size_t)room;
    send_piece *sp = new_piece(t, want);
    if (!sp) {
        errno = ENOMEM;
        return -1;
    }
    ssize_t got;
    do {
        got = pread(fd, sp->bytes, want, (off_t)off);
    } while (got < 0 && errno == EINTR);
    if (got <= 0) {
        int e = errno;
        buf_put(sp, sp->cap);
        errno = e;
        return got;
    }
    sp->len = (size_t)got;
    tx_enter(t);
    long r = -1;
    if (send_room(t) < 0)
        buf_put(sp, sp->cap);
    else if (send_piece_now(t, sp) == 0)
        r = got;
    if (r > 0)
        drive(t);
    return tx_leave(t, r);
}

/* Locked: copies what has arrived. > 0, 0 end of stream, -1 with errno (EAGAIN). */
static long take_rx(ucx_transport *t, void *buf, size_t len)
{
    drive(t);
    if (t->read_stopped || t->shut)
        return 0;
    rx_msg *m = t->rx_head;
    if (m && m->seq == t->rx_next && m->ready && m->len == 0)
        t->rx_fin = 1;
    if (t->rx_fin)
        return 0; /* the peer closed: the stream's end */
    if (m && m->seq == t->rx_next && m->ready) {
        size_t k = m->len - m->off < len ? m->len - m->off : len;
        if (m->data + m->off != buf) /* a direct fetch is where the reader wants it */
            memmove(buf, m->data + m->off, k);
        m->off += k;
        t->rx_pos_read += k;
        if (m->off == m->len) {
            t->rx_head = m->next;
            if (!t->rx_head)
                t->rx_tail = NULL;
            t->rx_next++;
            if (m->held)
                t->rx_held -= m->len;
            free_msg(t, m);
            start_fetches(t); /* room again */
        }
        return (long)k;
    }
    if (t->failed != UCS_OK) {
        errno = gone_errno(t);
        return -1;
    }
    if (t->peer_gone && now_ms() - t->gone_ms > GONE_GRACE_MS) {
        errno = ECONNRESET; /* ended without FIN: the peer died */
        return -1;
    }
    errno = EAGAIN;
    return -1;
}

static long ucx_recv_nb(rfs_transport *tr, void *buf, size_t len)
{
    ucx_transport *t = U(tr);
    pthread_mutex_lock(&t->mu);
    t->rx_waiting = 0;
    unkick(t->kick_rx, &t->rx_kicked);
    long r = take_rx(t, buf, len);
    int e = errno;
    if (r < 0 && e == EAGAIN)
        t->rx_waiting = 1;
    settle(t);
    pthread_mutex_unlock(&t->mu);
    errno = e;
    return r;
}

static short ucx_wants(rfs_transport *t, short dflt)
{
    (void)t;
    (void)dflt;
    return POLLIN;
}

static void wait_event(rfs_transport *t)
{
    struct pollfd p = {.fd = t->fd, .events = POLLIN};
    while (poll(&p, 1, -1) < 0 && errno == EINTR)
        ;
}

/* ---- blocking side (the client) ---- */

/* Sends iov[0..n) copied into messages (inline). */
static int write_copied(rfs_transport *t, const struct iovec *iov, int n)
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
        rfs_iov_advance(iov, n, &i, &done, (size_t)w);
    }
    return RFS_OK;
}

/* Locked, a blocking write ending with direct sends unfinished (only after a failure): they
 * must never read the caller's buffer after we return, so the endpoint goes (force), which
 * ends its requests. */
static void abort_direct(ucx_transport *t, size_t *pending)
{
    if (t->tx_direct && t->ep) {
        fail(t, UCS_ERR_CANCELED);
        ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                  .flags = UCP_EP_CLOSE_FLAG_FORCE};
        wait_request(t, ucp_ep_close_nbx(t->ep, &rp), CLOSE_FLUSH_MS);
        t->ep = NULL;
        for (int i = 0; i < PROGRESS_ROUNDS && ucp_worker_progress(t->worker); i++)
            ;
    }
    for (send_piece *sp = t->pieces; sp; sp = sp->next) {
        if (sp->pending == pending) { /* the waiter returns: its counter goes with it */
            RFS_LOGE("UCX %s: a send from a writer's buffer outlived its endpoint", t->base.peer);
            sp->pending = NULL;
        }
    }
}

/* Sends len bytes of the caller's buffer as messages of at most SEND_PIECE bytes, each by
 * rendezvous from where they are (no copy). The writer then waits for them (ucx_write_wait). */
static int post_direct(ucx_transport *t, const uint8_t *p, size_t len, size_t *pending)
{
    tx_enter(t);
    int rc = RFS_OK;
    if (t->failed != UCS_OK || t->shut || t->peer_gone || t->fin_sent) {
        errno = t->failed == UCS_OK ? EPIPE : gone_errno(t);
        rc = -1;
    }
    for (size_t at = 0; rc == RFS_OK && at < len;) {
        size_t k = len - at < SEND_PIECE ? len - at : SEND_PIECE;
        send_piece *sp = new_piece(t, 0);
        if (!sp) {
            errno = ENOMEM;
            rc = -1;
            break;
        }
        sp->ext = p + at;
        sp->len = k;
        sp->pending = pending;
        *pending += k;
        if (send_piece_now(t, sp)) {
            *pending -= k; /* not sent, freed */
            rc = -1;
        }
        at += k;
    }
    int e = errno;
    drive(t); /* start them moving now */
    tx_leave(t, 0);
    errno = e;
    return rc ? rfs_fail(RFS_E_CONN, "%s: connection lost while sending: %s", t->base.peer,
                         strerror(errno))
              : RFS_OK;
}

/* Waits until the peer has fetched every direct send counted in *pending; on failure none of
 * them can touch the caller's buffer any more when this returns. */
static int ucx_write_wait(rfs_transport *tr, size_t *pending, int rc)
{
    ucx_transport *t = U(tr);
    if (*pending == 0 && rc == RFS_OK) /* nothing went direct: no failure of ours to see */
        return RFS_OK;
    for (;;) {
        tx_enter(t);
        drive(t);
        if (*pending == 0) { /* all done, or ended with an error (send_done) */
            int e = gone_errno(t);
            int failed = t->failed != UCS_OK;
            tx_leave(t, 0);
            if (rc || !failed)
                return rc;
            return rfs_fail(RFS_E_CONN, "%s: connection lost while sending: %s", t->base.peer,
                            strerror(e));
        }
        if (rc || t->failed != UCS_OK || t->shut || t->peer_gone) {
            int e = t->failed == UCS_OK ? ECONNRESET : gone_errno(t);
            abort_direct(t, pending);
            tx_leave(t, 0);
            return rc ? rc
                      : rfs_fail(RFS_E_CONN, "%s: connection lost while sending: %s", t->base.peer,
                                 strerror(e));
        }
        t->tx_sleepers++;
        tx_leave(t, 0);
        wait_event(&t->base);
        pthread_mutex_lock(&t->mu);
        t->tx_sleepers--;
        pthread_mutex_unlock(&t->mu);
    }
}

/* Payloads of inline_max bytes and more go direct, the rest (frame headers, small payloads)
 * inline, in the order given: the peer reassembles the stream by sequence number. */
static int ucx_write_post(rfs_transport *tr, const struct iovec *iov, int n, size_t *pending)
{
    ucx_transport *t = U(tr);
    size_t imax = rfs_ucx_inline_max();
    int rc = RFS_OK, from = 0;
    *pending = 0;
    for (int i = 0; i < n && rc == RFS_OK; i++) {
        if (iov[i].iov_len == 0 || iov[i].iov_len < imax)
            continue;
        if (i > from)
            rc = write_copied(tr, iov + from, i - from);
        if (rc == RFS_OK)
            rc = post_direct(t, iov[i].iov_base, iov[i].iov_len, pending);
        from = i + 1;
    }
    if (rc == RFS_OK && n > from)
        rc = write_copied(tr, iov + from, n - from);
    return rc;
}

static int ucx_write_all(rfs_transport *tr, const struct iovec *iov, int n)
{
    size_t pending;
    int rc = ucx_write_post(tr, iov, n, &pending);
    return ucx_write_wait(tr, &pending, rc);
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

/* Locked, a blocking read ending: a direct fetch still under way (only after a failure) must
 * never write into the caller's buffer after we return, so the endpoint goes (force), which
 * ends its requests. */
static void end_window(ucx_transport *t)
{
    t->dw_on = 0;
    int pending = 0;
    for (rx_msg *m = t->rx_head; m; m = m->next)
        pending |= m->direct && m->fetching;
    if (!pending || !t->ep)
        return;
    fail(t, UCS_ERR_CANCELED);
    ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                              .flags = UCP_EP_CLOSE_FLAG_FORCE};
    wait_request(t, ucp_ep_close_nbx(t->ep, &rp), CLOSE_FLUSH_MS);
    t->ep = NULL;
    for (int i = 0; i < PROGRESS_ROUNDS && ucp_worker_progress(t->worker); i++)
        ;
    for (rx_msg *m = t->rx_head; m; m = m->next)
        if (m->direct && m->fetching)
            RFS_LOGE("UCX %s: a fetch into a reader's buffer outlived its endpoint", t->base.peer);
}

static int ucx_read_all(rfs_transport *tr, void *buf, size_t len)
{
    ucx_transport *t = U(tr);
    pthread_mutex_lock(&t->mu);
    t->blocking = 1;
    t->dw_on = 1;
    t->dw_buf = buf;
    t->dw_pos = t->rx_pos_read;
    t->dw_len = len;
    pthread_mutex_unlock(&t->mu);
    size_t got = 0;
    int rc = RFS_OK;
    while (got < len) {
        long r = recv_some(tr, (char *)buf + got, len - got, got, len);
        if (r < 0) {
            rc = (int)r;
            break;
        }
        got += (size_t)r;
    }
    pthread_mutex_lock(&t->mu);
    end_window(t);
    pthread_mutex_unlock(&t->mu);
    return rc;
}

static long ucx_read_some(rfs_transport *tr, void *buf, size_t len)
{
    ucx_transport *t = U(tr);
    pthread_mutex_lock(&t->mu);
    t->blocking = 1; /* no window: it returns after the first bytes, the rest is not its */
    pthread_mutex_unlock(&t->mu);
    return recv_some(tr, buf, len, 0, len);
}

static void ucx_shutdown(rfs_transport *tr)
{
    ucx_transport *t = U(tr);
    pthread_mutex_lock(&t->mu);
    t->shut = 1;
    kick(t->kick_rx, &t->rx_kicked); /* both sides see it at once */
    kick(t->kick_tx, &t->tx_kicked);
    pthread_mutex_unlock(&t->mu);
}

void rfs_ucx_stop_reading(rfs_transport *tr)
{
    ucx_transport *t = U(tr);
    pthread_mutex_lock(&t->mu);
    t->read_stopped = 1;
    kick(t->kick_rx, &t->rx_kicked);
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
        if (ucp_worker_arm(t->worker) != UCS_OK)
            continue;
        pthread_mutex_unlock(&t->mu);
        struct pollfd p = {.fd = t->efd, .events = POLLIN};
        poll(&p, 1, left < 10 ? (int)left : 10);
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
    drive(t);
    int force = t->failed != UCS_OK || t->peer_gone;
    if (t->ep && !force && !t->fin_sent) {
        /* the end of the stream, after everything sent before it */
        send_piece *fin = new_piece(t, 0);
        if (fin && send_piece_now(t, fin) == 0)
            t->fin_sent = 1;
    }
    /* the peer takes what is in flight (a rendezvous completes when it has fetched the bytes)
     * before the endpoint closes */
    int64_t until = now_ms() + CLOSE_FLUSH_MS;
    while (t->ep && !force && t->tx_inflight > 0 && t->failed == UCS_OK && !t->peer_gone &&
           now_ms() < until) {
        if (ucp_worker_progress(t->worker))
            continue;
        check_peer(t);
        if (ucp_worker_arm(t->worker) != UCS_OK)
            continue;
        pthread_mutex_unlock(&t->mu);
        struct pollfd p[2] = {{.fd = t->efd, .events = POLLIN}, {.fd = t->sock, .events = POLLIN}};
        poll(p, 2, 10);
        pthread_mutex_lock(&t->mu);
    }
    if (t->ep) {
        /* flush first: the last replies reach a peer that is still there; a gone peer only
         * costs the bound */
        ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                  .flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0};
        if (wait_request(t, ucp_ep_close_nbx(t->ep, &rp), CLOSE_FLUSH_MS) != UCS_OK && !force) {
            rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
            wait_request(t, ucp_ep_close_nbx(t->ep, &rp), CLOSE_FLUSH_MS);
        }
        t->ep = NULL;
    }
    ucp_worker_progress(t->worker); /* completions the close made ready free their pieces */
    for (rx_msg *m = t->rx_head; m; m = m->next) { /* UCX's buffers go back to the worker */
        if (m->ucx_owned)
            ucp_am_data_release(t->worker, m->data);
        else if (m->desc)
            ucp_am_data_release(t->worker, m->desc);
        m->ucx_owned = 0;
        m->desc = NULL;
    }
    if (t->backstop_finds)
        RFS_LOGD("UCX %s: %lu backstop ticks found work the event descriptor did not announce",
                 t->base.peer, t->backstop_finds);
    pthread_mutex_unlock(&t->mu);
    ucp_worker_destroy(t->worker);
    while (t->rx_head) { /* after the worker: a fetch it ends may still call back */
        rx_msg *m = t->rx_head;
        t->rx_head = m->next;
        if (m->buf)
            buf_put(m->buf, m->len);
        buf_put(m, m->cap);
    }
    while (t->pieces) { /* sends the closed endpoint never completed */
        send_piece *sp = t->pieces;
        t->pieces = sp->next;
        buf_put(sp, sp->cap);
    }
    if (t->sock >= 0)
        close(t->sock); /* after the flush: the peer's end of stream follows the bytes */
    close(t->base.fd);
    close(t->timer_fd);
    close(t->kick_rx);
    close(t->kick_tx);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static const rfs_transport_ops ucx_ops = {
    .write_all = ucx_write_all,
    .write_post = ucx_write_post,
    .write_wait = ucx_write_wait,
    .read_all = ucx_read_all,
    .read_some = ucx_read_some,
    .shutdown = ucx_shutdown,
    .close = ucx_close,
    .send_nb = ucx_send_nb,
    .sendfile_nb = ucx_sendfile_nb,
    .recv_nb = ucx_recv_nb,
    .wants = ucx_wants,
};

int rfs_ucx_built(void)
{
    return 1;
}

int rfs_ucx_is(const rfs_transport *t)
{
    return t && t->ops == &ucx_ops;
}

static int new_transport(const char *peer, int sock, ucx_transport **out)
{
    ucx_transport *t = calloc(1, sizeof *t);
    if (!t)
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", peer);
    t->timer_fd = t->kick_rx = t->kick_tx = t->base.fd = -1;
    ucp_worker_params_t wp = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SERIALIZED,
    };
    ucs_status_t st = ucp_worker_create(ctx, &wp, &t->worker);
    if (st != UCS_OK) {
        free(t);
        return rfs_fail(RFS_E_CONN, "UCX worker: %s", ucs_status_string(st));
    }
    ucp_am_handler_param_t hp = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                      UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG,
        .id = AM_DATA,
        .flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA,
        .cb = on_am,
        .arg = t,
    };
    if ((st = ucp_worker_set_am_recv_handler(t->worker, &hp)) != UCS_OK ||
        (st = ucp_worker_get_efd(t->worker, &t->efd)) != UCS_OK) {
        ucp_worker_destroy(t->worker);
        free(t);
        return rfs_fail(RFS_E_CONN, "UCX worker: %s", ucs_status_string(st));
    }
    t->sock = sock;
    t->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    t->kick_rx = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    t->kick_tx = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    t->base.fd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN};
    int fds[] = {t->efd, sock, t->kick_rx, t->kick_tx, t->timer_fd};
    int bad = t->timer_fd < 0 || t->kick_rx < 0 || t->kick_tx < 0 || t->base.fd < 0;
    for (size_t i = 0; !bad && i < sizeof fds / sizeof fds[0]; i++)
        bad = epoll_ctl(t->base.fd, EPOLL_CTL_ADD, fds[i], &ev) < 0;
    if (bad) {
        int e = errno;
        int own[] = {t->timer_fd, t->kick_rx, t->kick_tx, t->base.fd};
        for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
            if (own[i] >= 0)
                close(own[i]);
        ucp_worker_destroy(t->worker);
        free(t);
        return rfs_fail(RFS_E_CONN, "%s: UCX connection's descriptors: %s", peer, strerror(e));
    }
    pthread_mutex_init(&t->mu, NULL);
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
#define BOOT_REFUSED "RFS-BUSY" /* instead of an address: the reason follows */
#define BOOT_MAGIC_LEN 8
#define BOOT_ADDR_MAX 8192 /* a worker address is a few hundred bytes */

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
        for (size_t i = 0; i < n; i++) /* a message for a terminal: printable only */
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

/* Locked: which UCX transports and devices the endpoint uses (its lanes), at debug level. */
static void log_lanes(ucx_transport *t)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    ucp_ep_print_info(t->ep, f);
    fclose(f);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        if (strstr(line, "lane["))
            RFS_LOGD("UCX %s: %s", t->base.peer, line);
    free(text);
}

static int connect_failed(ucx_transport *t, int cls, const char *why)
{
    char peer[sizeof t->base.peer];
    snprintf(peer, sizeof peer, "%s", t->base.peer);
    t->failed = t->failed == UCS_OK ? UCS_ERR_CANCELED : t->failed;
    ucx_close(&t->base);
    return rfs_fail(cls, "%s: cannot connect over UCX: %s", peer, why);
}

int rfs_ucx_connect(const char *host, unsigned port, const rfs_transport_opts *o,
                    rfs_transport **out)
{
    *out = NULL;
    int timeout_ms =
        o && o->connect_timeout_ms > 0 ? o->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;
    int64_t until = now_ms() + timeout_ms;
    rfs_transport_opts to = {.connect_timeout_ms = timeout_ms};
    rfs_transport *tcp;
    int rc = rfs_tcp_connect(host, port, &to, &tcp);
    if (rc)
        return rc; /* the TCP message says where and why */
    struct sockaddr_storage pa;
    socklen_t pl = sizeof pa;
    if (getpeername(tcp->fd, (struct sockaddr *)&pa, &pl) == 0)
        choose_devices((struct sockaddr *)&pa);
    if ((rc = get_ctx())) {
        rfs_transport_close(tcp);
        return rfs_fail_cause(RFS_E_CONN, "%s:%u: cannot connect over UCX", host ? host : "", port);
    }
    char peer[sizeof tcp->peer];
    snprintf(peer, sizeof peer, "%s", tcp->peer);
    int sock = dup(tcp->fd); /* the bootstrap socket outlives the TCP transport wrapping it */
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
                              : rc == RFS_E_BUSY
                                  ? msg
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
    if (st == UCS_OK && rfs_log_level() >= RFS_LOG_DEBUG)
        log_lanes(t);
    pthread_mutex_unlock(&t->mu);
    if (st != UCS_OK)
        return connect_failed(t, st == UCS_ERR_TIMED_OUT ? RFS_E_TIMEOUT : RFS_E_CONN,
                              ucs_status_string(st));
    *out = &t->base;
    return RFS_OK;
}

/* ---- server side ---- */

#define ACCEPT_BOOT_MS 2000 /* the acceptor waits this long for a client's address */

struct rfs_ucx_listener {
    int fd; /* listening TCP socket (nonblocking) */
    char addr[300];
    int pending; /* accepted, not yet taken or refused; -1: none */
    char pending_peer[80];
};

int rfs_ucx_listen(const char *host, unsigned port, rfs_ucx_listener **out)
{
    *out = NULL;
    struct sockaddr_storage ss;
    socklen_t sl;
    int rc = resolve(host, port, 1, &ss, &sl);
    if (rc)
        return rc;
    choose_devices((struct sockaddr *)&ss);
    if ((rc = get_ctx()))
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

int rfs_ucx_listener_fd(const rfs_ucx_listener *l)
{
    return l->fd;
}

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
        return rfs_fail(rc == RFS_E_NOMEM ? RFS_E_NOMEM : RFS_E_CONN, "%s: not a UCX client (%s)",
                        peer,
                        rc == RFS_E_PROTO     ? "bad bootstrap"
                        : rc == RFS_E_TIMEOUT ? "no address within 2 s"
                                              : "closed during the bootstrap");
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
