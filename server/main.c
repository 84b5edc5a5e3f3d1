/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfsd: the rfs server daemon. Acceptor loop, signals and orderly shutdown. */
#include <arpa/inet.h>
#include <errno.h>
#include <time.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "authlimit.h"
#include "config_file.h"
#include "common/auth.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "conn.h"
#include "exports.h"
#include "fdlimit.h"
#include "fileid.h"
#include "fs_shared.h"
#include "group.h"
#ifdef RFSD_HAVE_MPI
#include "coll_mpi.h"
#include "mpi_group.h"
#endif
#include "identity.h"
#include "tpc_grant.h"
#include "capability.h"
#include "obj_lease.h"
#include "metrics.h"
#include "peraddr.h"
#include "pool.h"
#include "server.h"
#include "session.h"
#include "transport/transport.h"
#include "transport/tls.h"
#include "ucx_accept.h"
#include "view.h"

static int signal_pipe[2] = {-1, -1};
/* Set by the acceptor when a signal arrives: long per-request work (datatype flattening, view
 * mapping) polls it and gives up, so shutdown takes a bounded time (docs/security.md). */
static atomic_int stop_flag;

/* Only an async-signal-safe write: the acceptor loop does the work. */
static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    ssize_t n = write(signal_pipe[1], &b, 1);
    (void)n;
    errno = saved;
}

static int setup_signals(void)
{
    if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK))
        return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGTERM, &sa, NULL) || sigaction(SIGINT, &sa, NULL) ||
        sigaction(SIGHUP, &sa, NULL))
        return -1;
    signal(SIGPIPE, SIG_IGN); /* replies use MSG_NOSIGNAL; this covers everything else */
    return 0;
}

static void peer_name(const struct sockaddr_storage *ss, char *out, size_t cap)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof ip);
        port = ntohs(s6->sin6_port);
        snprintf(out, cap, "[%s]:%u", ip, port);
        return;
    }
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
    inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof ip);
    snprintf(out, cap, "%s:%u", ip, ntohs(s4->sin_port));
}

static unsigned conn_count(rfsd_server *srv)
{
    pthread_mutex_lock(&srv->mu);
    unsigned n = srv->nconns;
    pthread_mutex_unlock(&srv->mu);
    return n;
}

/* argv as given, so that a reload reads the --config file again */
static int start_argc;
static char **start_argv;
/* the options' strings, in use until exit (a static root for leak checkers) */
static char **volatile options_argv;

/* SIGHUP: identities (or the token file) and the audit log (docs/operations.md). */
static void reload(rfsd_server *srv)
{
    if (srv->tls) {
        if (rfs_tls_server_reload(srv->tls))
            RFS_LOGW("SIGHUP: %s; keeping the previous certificate", rfs_last_error());
        else
            RFS_LOGI("SIGHUP: TLS certificate reloaded from %s; new connections use it",
                     srv->cfg.tls_cert);
    }
    rfsd_ident_reload(srv, start_argc, start_argv);
    rfsd_audit_reopen();
}

static void accept_loop(rfsd_server *srv, int lfd, rfs_ucx_listener *ucx)
{
    for (;;) {
        struct pollfd pf[3] = {{.fd = signal_pipe[0], .events = POLLIN},
                               {.fd = lfd, .events = POLLIN},
                               {.fd = ucx ? rfs_ucx_listener_fd(ucx) : -1, .events = POLLIN}};
        if (poll(pf, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            RFS_LOGE("poll: %s", strerror(errno));
            return;
        }
        if (pf[0].revents) {
            unsigned char sig = 0;
            if (read(signal_pipe[0], &sig, 1) == 1 && sig == SIGHUP) {
                reload(srv);
                continue;
            }
            RFS_LOGI("signal %d: shutting down", sig);
            atomic_store(&stop_flag, 1);
            return;
        }
        rfsd_conn_reap(srv);
        if (pf[2].revents)
            rfsd_ucx_accept_ready(srv, ucx);
        if (!pf[1].revents)
            continue;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) {
                /* the spare descriptor lets one client at a time hear why; others wait in the
                 * backlog while we back off instead of spinning on a full fd table */
                char why[64];
                snprintf(why, sizeof why, "out of file descriptors with %u connections",
                         conn_count(srv));
                if (rfsd_busy_accept_with_spare(lfd, why) == 0)
                    continue;
                RFS_LOGW("accept: %s; waiting for connections to end", strerror(errno));
                struct pollfd sp = {.fd = signal_pipe[0], .events = POLLIN};
                poll(&sp, 1, 100);
            }
            continue;
        }
        char peer[80];
        peer_name(&ss, peer, sizeof peer);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (srv->cfg.tcp_congestion && rfs_tcp_set_congestion(fd, srv->cfg.tcp_congestion)) {
            /* Checked at startup, so only a changed system gets here: serve anyway. */
            RFS_LOGW("%s: %s", peer, rfs_last_error());
            rfs_clear_error();
        }
        unsigned n = conn_count(srv);
        /* Connections that never authenticate must not lock real clients out: the oldest
         * of them makes room (its slot frees as its reader ends). */
        if ((n >= RFSD_MAX_CONNS || rfsd_fd_conn_too_high(fd)) && rfsd_conn_evict_unready(srv) == 0)
            n = n >= RFSD_MAX_CONNS ? RFSD_MAX_CONNS - 1 : n;
        if (n >= RFSD_MAX_CONNS || rfsd_fd_conn_too_high(fd)) {
            /* answered, not just closed: the client learns why instead of hanging at HELLO */
            RFS_LOGW("%s: refused: server busy with %u connections", peer, n);
            char why[64];
            snprintf(why, sizeof why, "%u connections", n);
            rfsd_busy_reply(fd, why);
            continue;
        }
        unsigned from_addr;
        rfsd_addr *a = rfsd_addr_connect(peer, srv->cfg.max_conns_per_addr, &from_addr);
        if (!a) {
            /* one client must not take the whole connection table from the others */
            char addr[64], why[200];
            rfsd_addr_of(peer, addr, sizeof addr);
            RFS_LOGW("%s: refused: %u connections from %s (limit %u, rfsd --max-conns-per-addr)",
                     peer, from_addr, addr, srv->cfg.max_conns_per_addr);
            snprintf(why, sizeof why,
                     "%u connections from %s (limit %u per address, rfsd "
                     "--max-conns-per-addr)",
                     from_addr, addr, srv->cfg.max_conns_per_addr);
            rfsd_busy_reply(fd, why);
            continue;
        }
        RFS_LOGD("%s: connected", peer);
        rfsd_conn_start(srv, fd, peer, a);
    }
}

static void shutdown_connections(rfsd_server *srv)
{
    pthread_mutex_lock(&srv->mu);
    srv->stopping = 1;
    for (rfsd_conn *c = srv->conns; c; c = c->next)
        rfsd_conn_stop_reading(c);
    if (srv->nconns)
        RFS_LOGI("waiting up to %d ms for %u connection(s) to finish their requests",
                 RFSD_SHUTDOWN_MS, srv->nconns);
    /* Bounded whatever the clients do: past the bound every connection is cut, which fails
     * replies blocked on clients that stopped reading and cancels lock waits; clients see a
     * lost connection, which they retry against the restarted server. */
    int cut = 0;
    struct timespec until = rfs_deadline_ms(RFSD_SHUTDOWN_MS);
    while (srv->nconns > 0) {
        if (pthread_cond_timedwait(&srv->conns_cv, &srv->mu, &until) != ETIMEDOUT)
            continue;
        if (cut) {
            RFS_LOGW("%u connection(s) still busy after the shutdown bound; exiting anyway",
                     srv->nconns);
            break;
        }
        RFS_LOGW("cutting %u connection(s) still busy after %d ms", srv->nconns, RFSD_SHUTDOWN_MS);
        for (rfsd_conn *c = srv->conns; c; c = c->next)
            rfsd_conn_fence(c);
        cut = 1;
        until = rfs_deadline_ms(5000);
    }
    pthread_mutex_unlock(&srv->mu);
    rfsd_exports_sync();
}

/* Every data frame's body is a malloc of up to max_frame bytes, freed once the reply is out.
 * Left to glibc's defaults those blocks go back to the kernel and come back page-faulting, about
 * 5% of the server's CPU in a 1 GiB loopback put. Keeping them in the heap costs at most the
 * in-flight budget of memory. */
static void keep_frame_buffers(void)
{
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, RFSD_TRIM_THRESHOLD);
}

/* rfsd --mpi: one process of a server group (mpi_group.h), whose open files' locks and
 * counters live in the shared file system (fs_shared.h). */
static int start_group(int *argc, char ***argv, const rfsd_config *cfg, int *lfd, char *addr,
                       size_t cap)
{
    for (unsigned i = 0; i < rfsd_exports_count(); i++)
        if (rfsd_export_at(i)->quota) {
            /* each process would count the export's usage on its own: N times the quota */
            fprintf(stderr, "rfsd: --mpi does not take exports with a quota yet\n");
            return -1;
        }
    if (rfsd_fss_init(cfg->mpi_state_dir, cfg->threads - 1))
        return -1;
#ifdef RFSD_HAVE_MPI
    return rfsd_mpi_start(argc, argv, cfg, lfd, addr, cap);
#else
    (void)argc, (void)argv, (void)lfd, (void)addr, (void)cap;
    fprintf(stderr,
            "rfsd: --mpi%s: this rfsd was built without MPI (configure with MPI found "
            "and -DRFSD_MPI=ON)\n",
            cfg->backend_mpiio ? " --backend mpiio" : "");
    return -1;
#endif
}

int main(int argc, char **argv)
{
    static rfsd_server srv; /* static: zeroed */
    start_argc = argc;
    start_argv = argv;
    if (rfsd_config_expand(argc, argv, &argc, &argv))
        return 2;
    options_argv = argv;
    int prc = rfsd_parse_options(argc, argv, &srv.cfg);
    if (prc)
        return prc > 0 ? 0 : 2;
    rfs_log_set_level(srv.cfg.log_level);
    keep_frame_buffers();
    unsigned long nofile = rfsd_fd_init();

    if (srv.cfg.print_cap_key)
        return rfsd_cap_print_key(&srv.cfg) ? 2 : 0;
    if (rfsd_exports_init(&srv.cfg) || rfsd_ident_init(&srv.cfg) || rfsd_audit_start(&srv.cfg) ||
        rfsd_cap_init(&srv.cfg) || rfsd_olease_init(&srv.cfg))
        return 2;
    if (srv.cfg.no_auth)
        RFS_LOGW("--no-auth: any client that can connect can read and write the export%s",
                 rfsd_exports_named() ? "s" : "");

    if (srv.cfg.tls_cert && rfs_tls_server_new(srv.cfg.tls_cert, srv.cfg.tls_key, &srv.tls)) {
        fprintf(stderr, "rfsd: %s\n", rfs_last_error());
        return 2;
    }

    rfsd_boot_id(srv.boot_id);
    if (setup_signals()) {
        fprintf(stderr, "rfsd: cannot set up signal handling: %s\n", strerror(errno));
        return 2;
    }
    pthread_mutex_init(&srv.mu, NULL);
    rfs_cond_init_monotonic(&srv.conns_cv);

    char addr[300];
    int lfd;
    if (srv.cfg.mpi) {
        if (start_group(&argc, &argv, &srv.cfg, &lfd, addr, sizeof addr))
            return 2;
    } else if (rfsd_listen(srv.cfg.listen, addr, sizeof addr, &lfd)) {
        return 2;
    }
    char ucx_addr[300] = "";
    rfs_ucx_listener *ucx = NULL;
    if (srv.cfg.ucx_listen && rfsd_ucx_listen(srv.cfg.ucx_listen, ucx_addr, sizeof ucx_addr, &ucx))
        return 2;
    if (rfsd_pool_start(srv.cfg.threads, srv.cfg.conn_workers, &srv.pool)) {
        fprintf(stderr, "rfsd: cannot start %d worker threads\n", srv.cfg.threads);
        return 2;
    }
    rfsd_lock_set_max_waiters(srv.cfg.threads - 1);
    rfsd_lock_set_max_per_conn(srv.cfg.max_locks);
    rfsd_views_set_cancel(&stop_flag);
    rfsd_authlimit_init(srv.cfg.auth_backoff_ms);

    char what[64];
    if (rfsd_exports_named())
        snprintf(what, sizeof what, "%u exports", rfsd_exports_count());
    RFS_LOGI("serving %s with %d worker threads (at most %u per connection), max frame %u "
             "bytes, %lu descriptors, %s",
             rfsd_exports_named() ? what : srv.cfg.root, srv.cfg.threads, srv.cfg.conn_workers,
             srv.cfg.max_frame, nofile,
             srv.cfg.no_auth       ? "no authentication"
             : srv.cfg.nidentities ? "identities"
                                   : "token authentication");
    if (srv.tls)
        RFS_LOGI("TLS required on every connection (certificate %s)", srv.cfg.tls_cert);
    /* each process of a group writes its own: FILE.INDEX */
    static char group_metrics[4200];
    if (srv.cfg.metrics_file && rfsd_group_on()) {
        snprintf(group_metrics, sizeof group_metrics, "%s.%u", srv.cfg.metrics_file,
                 rfsd_group_index());
        srv.cfg.metrics_file = group_metrics;
    }
    if (rfsd_metrics_start(&srv, srv.cfg.metrics_file, srv.cfg.metrics_interval_ms))
        RFS_LOGW("--metrics-file %s: cannot start the metrics writer", srv.cfg.metrics_file);
    RFS_LOGI("transports: TCP%s on %s%s%s", srv.tls ? " (TLS)" : "", addr, ucx ? ", UCX on " : "",
             ucx_addr);
    if (rfsd_group_index() == 0) /* a group's entry: the others are listed at its start */
        printf("rfsd listening on %s\n", addr);
    if (ucx)
        printf("rfsd listening for UCX on %s\n", ucx_addr);
    fflush(stdout);

    accept_loop(&srv, lfd, ucx);

    close(lfd); /* stop accepting first, then let every connection finish */
    rfs_ucx_listener_free(ucx);
#ifdef RFSD_HAVE_MPI
    /* the group stops together first: a worker waiting on a collective call that cannot
     * complete any more is answered (an error) and its connection can finish */
    if (srv.cfg.backend_mpiio)
        rfsd_coll_mpi_stop();
#endif
    shutdown_connections(&srv);
    rfsd_conn_reap(&srv);
    rfsd_fileid_wake_all();
    rfsd_pool_stop(srv.pool);
    rfsd_metrics_stop();
    rfsd_exports_close();
    rfsd_ident_clear();
    rfsd_olease_stop();
    rfsd_cap_clear();
    rfsd_tpc_grants_clear(); /* keys of third-party copy grants do not outlive the process */
    if (rfsd_group_on()) {
        uint64_t kept, moved;
        rfsd_group_counts(&kept, &moved);
        RFS_LOGI("placement: %llu client connection(s) kept, %llu sent to other processes",
                 (unsigned long long)kept, (unsigned long long)moved);
    }
    rfsd_audit_stop();
    rfs_tls_server_free(srv.tls);
    RFS_LOGI("stopped");
    return 0;
}
