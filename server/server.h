/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfsd internals: configuration and the process-wide server state shared by the acceptor,
 * connection readers and the worker pool. See docs/design.md "rfsd threading model". */
#ifndef RFSD_SERVER_H
#define RFSD_SERVER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/auth.h"

#define RFSD_DEFAULT_LISTEN "127.0.0.1:7070"
#define RFSD_MAX_CONNS 1024u       /* accepted connections beyond this are closed at once */
#define RFSD_CONN_MAX_INFLIGHT 64u /* requests read but not yet answered, per connection */
#define RFSD_CONN_MAX_INFLIGHT_BYTES (64u * 1024u * 1024u)
#define RFSD_MAX_HANDLES 4096u /* open files per connection (table size; --max-handles) */
#define RFSD_MIN_TOKEN 16u     /* bytes; rfsd refuses shorter tokens at start */
#define RFSD_DEFAULT_LOCKS_PER_CONN 4096u      /* byte-range locks per connection (--max-locks) */
#define RFSD_DEFAULT_VIEW_BYTES (256ull << 20) /* decoded views per connection (--max-view-bytes) */
#define RFSD_LOCK_WAIT_MAX_MS 30000u           /* server bound on LOCK's wait_ms */
#define RFSD_QUICK_MAX_BYTES (64u * 1024u)     /* larger requests always go to a worker */
#define RFSD_TRIM_THRESHOLD (256 << 20) /* glibc M_TRIM_THRESHOLD: keep frame buffers (main.c) */
#define RFSD_HANDSHAKE_TIMEOUT_MS 10000 /* a peer silent this long before authenticating goes */
#define RFSD_METRICS_INTERVAL_MS 10000  /* how often --metrics-file is rewritten */
#define RFSD_SEND_TIMEOUT_MS \
    60000                           /* a client that reads no reply this long is dropped
                                       (--send-timeout-ms) */
#define RFSD_DEFAULT_LEASE_MS 60000 /* --lease-ms */
#define RFSD_SHUTDOWN_MS 10000      /* SIGTERM: requests in flight get this long */
#define RFSD_MAX_EXPORTS 64u        /* named exports (--export); rights are 64-bit masks */
#define RFSD_MAX_IDENTITIES 1024u   /* --identity; an AUTH tries each token (identity.c) */

typedef struct rfsd_config {
    const char *root;
    const char *listen;     /* "HOST:PORT", "[v6]:PORT" */
    const char *ucx_listen; /* --ucx-listen: UCX clients there too; NULL: none */
    const char *token_file;
    int no_auth;
    int threads;
    uint32_t max_frame;
    int log_level;
    const char *tcp_congestion; /* NULL: the system's default */
    int lease_ms;               /* a connection silent this long is closed */
    int allow_setid;            /* keep set-uid/set-gid/sticky in client modes */
    uint64_t reserve_bytes;     /* free space PREALLOCATE/SET_SIZE must leave; 0: off */
    unsigned max_handles;       /* open files per connection */
    unsigned max_locks;         /* byte-range locks held per connection */
    uint64_t max_view_bytes;    /* decoded file views per connection */
    unsigned auth_backoff_ms;   /* delay after a failed AUTH, doubling per failure */
    unsigned conn_workers;      /* workers one connection may hold at once */
    int send_timeout_ms;        /* replies not taken for this long: connection dropped */
    int handshake_timeout_ms;   /* from accept to authenticated, at most */
    const char *metrics_file;   /* Prometheus text format written here (NULL: off) */
    int metrics_interval_ms;
    unsigned max_conns_per_addr; /* connections from one client address */
    /* of those, connections admitted as additional streams (RFS_F_EXTRA); 0: half of
     * max_conns_per_addr (rfsd_stream_share) */
    unsigned max_stream_conns_per_addr;
    unsigned max_handles_per_addr;         /* open files of all connections from one address */
    const char *exports[RFSD_MAX_EXPORTS]; /* --export "NAME PATH [quota=BYTES]" */
    unsigned nexports;
    const char *identities[RFSD_MAX_IDENTITIES]; /* --identity "NAME token-file=F exports=..." */
    unsigned nidentities;
    const char *audit_log;          /* --audit-log FILE; NULL: audit lines go to the log */
    int audit;                      /* --audit: audit lines to the log without a file */
    const char *tls_cert, *tls_key; /* PEM files: TLS required on every connection */
    int tpc;                        /* --tpc on: clients may have this server pull files
                                       from other servers (third-party copy) */
    const char *tpc_allow;          /* --tpc-allow HOST[:PORT],...: the only sources */
    unsigned tpc_grant_ttl_ms;      /* grants of this server lapse after this (0: default) */
    unsigned zread_mode;            /* --compress-reads: RFS_Z_* (common/zauto.h) */
    int zread_level;
    int mpi;                   /* --mpi: one process of a server group (mpi_group.c) */
    const char *mpi_state_dir; /* --mpi-state-dir: shared locks and counters (fs_shared.h) */
    const char *advertise;     /* --advertise HOST: where clients are sent for this process */
    int backend_mpiio; /* --backend mpiio: collective calls become MPI-IO collectives (coll.h) */
    unsigned coll_timeout_ms; /* --coll-timeout-ms: a collective call's wait for its parts */
    /* capabilities (capability.h) */
    const char *state_dir;     /* --state-dir: the signing key and revocations live here */
    const char *cap_key;       /* --cap-key FILE: the signing key (default STATE/cap-key.pem) */
    const char *cap_trust[64]; /* --cap-trust KEY|FILE: issuers whose leases are taken */
    unsigned ncap_trust;
    unsigned cap_lease_s;         /* --cap-lease-s: leases open connections this long */
    long long cap_clock_offset_s; /* --cap-clock-offset-s: tests move capability time */
    int print_cap_key;            /* --print-cap-key: print the public key and exit */
    int reclaim_expired;          /* --reclaim-expired: delete objects whose lease lapsed */
} rfsd_config;

struct rfsd_pool;
struct rfsd_conn;
struct rfs_tls_server;

typedef struct rfsd_server {
    rfsd_config cfg;
    struct rfsd_pool *pool; /* exports: exports.c; tokens: identity.c */

    pthread_mutex_t mu;      /* guards the connection list and `stopping` */
    pthread_cond_t conns_cv; /* signalled when a connection ends */
    struct rfsd_conn *conns;
    struct rfsd_conn *dead; /* ended, reader thread still to be joined */
    unsigned nconns;
    int stopping;
    uint8_t boot_id[16];        /* the host's boot id, for SESSION replies */
    struct rfs_tls_server *tls; /* --tls-cert/--tls-key loaded, or NULL: plain TCP */
} rfsd_server;

/* options.c: parse argv. Returns 0 to run, 1 when --help was printed, -1 on a usage error
 * (message already printed to stderr). */
int rfsd_parse_options(int argc, char **argv, rfsd_config *cfg);

/* listen.c: bind+listen on cfg->listen; writes the actual "HOST:PORT" into addr. */
int rfsd_listen(const char *spec, char *addr, size_t addr_cap, int *fd_out);
/* "HOST:PORT" or "[v6]:PORT" into its parts; -1 when malformed. */
int rfsd_split_host_port(const char *spec, char *host, size_t cap, char *port, size_t pcap);

#endif
