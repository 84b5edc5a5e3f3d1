/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Command line of rfsd. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/err.h"
#include "common/compress.h"
#include "common/zauto.h"
#include "proto/proto.h"
#include "transport/transport.h"
#include "authlimit.h"
#include "fileid.h"
#include "peraddr.h"
#include "server.h"

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: rfsd (--root DIR | --export SPEC...) [--listen HOST:PORT]\n"
        "            (--token-file FILE | --identity SPEC... | --no-auth) [--audit-log FILE]\n"
        "            [--threads N] [--max-frame BYTES] [--log-level LEVEL]\n"
        "            [--tcp-congestion NAME] [--lease-ms MS] [--allow-setid] [--reserve-bytes N]\n"
        "            [--max-handles N] [--max-locks N] [--max-view-bytes N]\n"
        "            [--auth-backoff-ms N] [--conn-workers N] [--send-timeout-ms MS]\n"
        "            [--max-conns-per-addr N] [--max-stream-conns-per-addr N]\n"
        "            [--max-handles-per-addr N]\n"
        "            [--tls-cert FILE --tls-key FILE] [--tpc on|off] [--tpc-allow HOSTS]\n"
        "            [--ucx-listen HOST:PORT]\n"
        "            [--mpi --mpi-state-dir DIR [--advertise HOST] [--backend posix|mpiio]]\n"
        "\n"
        "Serves the files under DIR to rfs clients (MPI-IO applications, the rfs command).\n"
        "\n"
        "  --root DIR          export root; clients can never reach outside it\n"
        "  --listen HOST:PORT  address to listen on (default %s; IPv6 as [::1]:7070;\n"
        "                      port 0 picks a free port)\n"
        "  --ucx-listen HOST:PORT  also serve UCX clients (rfs+ucx://HOST:PORT/PATH) there,\n"
        "                      beside the TCP listener; UCX has no TLS (docs/security.md)\n"
        "  --mpi               run as one process of a server group started by mpiexec: each\n"
        "                      process listens on --listen's port plus its rank on the node\n"
        "                      (port 0: any free port), and the ranks of a client job are\n"
        "                      spread round-robin over the processes (docs/design.md)\n"
        "  --mpi-state-dir DIR with --mpi: a directory on the file system every process shares,\n"
        "                      outside the exports, for the locks and shared file pointers of\n"
        "                      open files\n"
        "  --advertise HOST    with --mpi: the host name clients are sent to for this process\n"
        "                      (default: --listen's host, or this host's name when that is\n"
        "                      a wildcard address)\n"
        "  --backend posix|mpiio  with --mpi: mpiio turns the clients' collective writes and\n"
        "                      reads into MPI-IO collective calls of all the group's\n"
        "                      processes (posix, the default: every request is POSIX I/O)\n"
        "  --coll-timeout-ms MS  with --backend mpiio: how long a collective call waits for\n"
        "                      every client rank's part before it fails (default 60000)\n"
        "  --token-file FILE   shared secret for HMAC challenge-response authentication, at\n"
        "                      least %u bytes (make one with: rfs token > FILE)\n"
        "  --no-auth           accept clients without authentication (trusted networks only)\n"
        "  --tls-cert FILE     PEM certificate (chain) of this server: every connection then\n"
        "                      speaks TLS from its first byte, and plaintext clients are\n"
        "                      refused (clients name it rfss://HOST:PORT/PATH or set RFS_TLS=1)\n"
        "  --tls-key FILE      the certificate's PEM private key (docs/security.md)\n"
        "  --tpc on|off        let clients have this server pull files from other rfs servers\n"
        "                      (third-party copy: `rfs cp rfs://A/f rfs://B/g` moves the bytes\n"
        "                      A -> B without the client). Off by default: the server then\n"
        "                      connects where a client tells it to (docs/security.md)\n"
        "  --tpc-allow HOSTS   with --tpc on, pull only from these sources: a comma-separated\n"
        "                      list of HOST or HOST:PORT, as clients name them\n"
        "  --compress-reads MODE\n"
        "                      compression of read replies to clients that take it: none,\n"
        "                      lz4, zstd[:LEVEL] (either +shuffle) or auto (default: auto,\n"
        "                      which measures the data and the link per open file and\n"
        "                      compresses only when the reply then arrives sooner)\n"
        "  --tpc-grant-ttl-ms MS\n"
        "                      how long a third-party copy grant of this server stays usable\n"
        "                      (default 60000)\n"
        "  --threads N         worker threads (default: 4 per CPU, at least 16)\n"
        "  --max-frame BYTES   largest frame accepted (default %u, %u..%u)\n"
        "  --log-level LEVEL   error, warn, info (default) or debug; logs go to stderr\n"
        "  --tcp-congestion NAME\n"
        "                      TCP congestion control for client connections (default: the\n"
        "                      system's); bbr keeps reads fast after idle periods "
        "(docs/tuning.md)\n"
        "  --allow-setid       keep set-uid/set-gid (and sticky on files) in the modes clients\n"
        "                      give to OPEN and MKDIR (default: cleared)\n"
        "  --reserve-bytes N   refuse PREALLOCATE/SET_SIZE growth that would leave less than N\n"
        "                      bytes free on the export's file system (default 0: off)\n"
        "  --max-handles N     open files per connection (default %u, 1..%u)\n"
        "  --max-locks N       byte-range locks held per connection (default %u, 1..%u)\n"
        "  --max-view-bytes N  memory for decoded file views per connection (default %llu)\n"
        "  --auth-backoff-ms N after %u failed AUTHs the client's address waits N ms before it\n"
        "                      may try again, doubling per failure up to %u ms (default %u)\n"
        "  --conn-workers N    workers one connection may hold at once; its other requests\n"
        "                      wait for a turn without holding up other clients (default:\n"
        "                      a quarter of --threads, at least 2)\n"
        "  --send-timeout-ms MS\n"
        "                      a client that takes none of its replies for this long is\n"
        "                      disconnected (default %d)\n"
        "  --max-conns-per-addr N\n"
        "                      connections from one client address (default %u, 1..%u)\n"
        "  --max-stream-conns-per-addr N\n"
        "                      of those, at most N may be clients' additional streams, so\n"
        "                      the rest stays for first connections (default half)\n"
        "  --max-handles-per-addr N\n"
        "                      open files of all connections from one address (default %u)\n"
        "  --lease-ms MS       a client connection silent this long is closed and its files,\n"
        "                      locks and late frames dropped (default %d; clients ping at a\n"
        "                      quarter of it; docs/reliability.md)\n"
        "  --handshake-timeout-ms MS\n"
        "                      a connection not authenticated this long after it was\n"
        "                      accepted is closed (default 10000); when the connection table\n"
        "                      is full the oldest such connection makes room for a new one\n"
        "  --metrics-file FILE write counters (requests and errors by op, bytes, connections,\n"
        "                      latency) in Prometheus text format to FILE, every\n"
        "  --metrics-interval-ms MS (default 10000) and at exit (docs/operations.md)\n"
        "  --export 'NAME DIR [quota=BYTES]'\n"
        "                      serve DIR as the export NAME, instead of --root; clients name\n"
        "                      it first in their paths (rfs:host:port:/NAME/path); quota=BYTES\n"
        "                      (suffix K, M, G, T) caps the bytes of its files (repeatable)\n"
        "  --identity 'NAME token-file=FILE exports=EXPORT:rw|ro,...'\n"
        "                      a named token with rights on exports ('*' for every export);\n"
        "                      instead of --token-file (repeatable; docs/security.md)\n"
        "  --audit-log FILE    append one line per open, delete, rename, mkdir, chmod and\n"
        "                      authentication (time, identity, peer, op, path, result) to FILE\n"
        "  --audit             the same lines to the log (stderr), without --audit-log\n"
        "  --state-dir DIR     this server's own state, outside the exports: its capability\n"
        "                      signing key (DIR/cap-key.pem, made on first start, mode 0600)\n"
        "                      and the revoked capabilities (DIR/cap-revoked)\n"
        "  --cap-key FILE      the Ed25519 signing key (PEM) instead of DIR/cap-key.pem\n"
        "  --print-cap-key     print this server's public key (rfspub1....) and exit\n"
        "  --cap-trust KEY|FILE\n"
        "                      take capability leases signed by this home server's key (as\n"
        "                      --print-cap-key prints it), or by the keys in FILE (repeatable)\n"
        "  --cap-lease-s S     leases this server hands out open connections for S seconds\n"
        "                      (default 300): the window in which a revoked capability still\n"
        "                      reaches data servers (docs/security.md)\n"
        "  --reclaim-expired   delete the objects of logical files whose lease (rfs manifest\n"
        "                      refresh) lapsed, at start and every minute (default: never;\n"
        "                      needs --state-dir, where the leases are kept)\n"
        "  --cap-clock-offset-s S  for tests: capability times are checked as if the clock\n"
        "                      were S seconds ahead (negative: behind)\n"
        "  --config FILE       read options from FILE, one 'key = value' (or a flag's name)\n"
        "                      per line, keys being the long options above; the command\n"
        "                      line wins\n"
        "  --help              show this help\n"
        "  --version           show the version\n"
        "\n"
        "When ready, prints one line \"rfsd listening on HOST:PORT\" to stdout (then, with\n"
        "--ucx-listen, \"rfsd listening for UCX on HOST:PORT\").\n"
        "SIGTERM or SIGINT: stop accepting, finish requests in flight, close files, exit 0.\n"
        "SIGHUP: read the token file again (connections already authenticated continue); with\n"
        "--identity, read the configuration's identities again (connections of removed or\n"
        "changed identities are closed, the others continue) and reopen --audit-log; with\n"
        "--tls-cert, load the certificate and key again.\n",
        RFSD_DEFAULT_LISTEN, RFSD_MIN_TOKEN, RFS_FRAME_DEFAULT, RFS_FRAME_MIN, RFS_FRAME_HARD_MAX,
        RFSD_MAX_HANDLES, RFSD_MAX_HANDLES, RFSD_DEFAULT_LOCKS_PER_CONN, RFSD_MAX_LOCKS_PER_FILE,
        (unsigned long long)RFSD_DEFAULT_VIEW_BYTES, RFSD_AUTH_FREE, RFSD_AUTH_BACKOFF_MAX_MS,
        RFSD_AUTH_BACKOFF_MS, RFSD_SEND_TIMEOUT_MS, RFSD_DEFAULT_CONNS_PER_ADDR, RFSD_MAX_CONNS,
        RFSD_DEFAULT_HANDLES_PER_ADDR, RFSD_DEFAULT_LEASE_MS);
}

static int parse_ulong(const char *s, unsigned long long lo, unsigned long long hi,
                       unsigned long long *out)
{
    char *end;
    if (!s || !*s || *s == '-')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int rfsd_parse_options(int argc, char **argv, rfsd_config *cfg)
{
    enum {
        O_ROOT = 1000,
        O_LISTEN,
        O_TOKEN,
        O_NOAUTH,
        O_THREADS,
        O_FRAME,
        O_LOG,
        O_CC,
        O_HELP,
        O_SETID,
        O_RESERVE,
        O_HANDLES,
        O_LOCKS,
        O_VIEWB,
        O_BACKOFF,
        O_LEASE,
        O_CWORKERS,
        O_SENDTO,
        O_ADDRCONNS,
        O_ADDRSTREAMS,
        O_ADDRHANDLES,
        O_VERSION,
        O_METRICS,
        O_METRICS_MS,
        O_HANDSHAKE,
        O_EXPORT,
        O_IDENTITY,
        O_AUDIT_LOG,
        O_AUDIT,
        O_TLS_CERT,
        O_TLS_KEY,
        O_TPC,
        O_TPC_ALLOW,
        O_TPC_TTL,
        O_ZREAD,
        O_UCX_LISTEN,
        O_MPI,
        O_MPI_STATE,
        O_ADVERTISE,
        O_BACKEND,
        O_COLL_TIMEOUT,
        O_STATE_DIR,
        O_CAP_KEY,
        O_CAP_TRUST,
        O_CAP_LEASE,
        O_CAP_CLOCK,
        O_PRINT_CAP_KEY,
        O_RECLAIM
    };
    static const struct option opts[] = {
        {"root", required_argument, 0, O_ROOT},
        {"listen", required_argument, 0, O_LISTEN},
        {"ucx-listen", required_argument, 0, O_UCX_LISTEN},
        {"mpi", no_argument, 0, O_MPI},
        {"mpi-state-dir", required_argument, 0, O_MPI_STATE},
        {"advertise", required_argument, 0, O_ADVERTISE},
        {"backend", required_argument, 0, O_BACKEND},
        {"coll-timeout-ms", required_argument, 0, O_COLL_TIMEOUT},
        {"state-dir", required_argument, 0, O_STATE_DIR},
        {"cap-key", required_argument, 0, O_CAP_KEY},
        {"cap-trust", required_argument, 0, O_CAP_TRUST},
        {"cap-lease-s", required_argument, 0, O_CAP_LEASE},
        {"cap-clock-offset-s", required_argument, 0, O_CAP_CLOCK},
        {"print-cap-key", no_argument, 0, O_PRINT_CAP_KEY},
        {"reclaim-expired", no_argument, 0, O_RECLAIM},
        {"token-file", required_argument, 0, O_TOKEN},
        {"no-auth", no_argument, 0, O_NOAUTH},
        {"threads", required_argument, 0, O_THREADS},
        {"max-frame", required_argument, 0, O_FRAME},
        {"log-level", required_argument, 0, O_LOG},
        {"tcp-congestion", required_argument, 0, O_CC},
        {"lease-ms", required_argument, 0, O_LEASE},
        {"help", no_argument, 0, O_HELP},
        {"version", no_argument, 0, O_VERSION},
        {"metrics-file", required_argument, 0, O_METRICS},
        {"handshake-timeout-ms", required_argument, 0, O_HANDSHAKE},
        {"tls-cert", required_argument, 0, O_TLS_CERT},
        {"tls-key", required_argument, 0, O_TLS_KEY},
        {"tpc", required_argument, 0, O_TPC},
        {"tpc-allow", required_argument, 0, O_TPC_ALLOW},
        {"tpc-grant-ttl-ms", required_argument, 0, O_TPC_TTL},
        {"compress-reads", required_argument, 0, O_ZREAD},
        {"metrics-interval-ms", required_argument, 0, O_METRICS_MS},
        {"allow-setid", no_argument, 0, O_SETID},
        {"reserve-bytes", required_argument, 0, O_RESERVE},
        {"max-handles", required_argument, 0, O_HANDLES},
        {"max-locks", required_argument, 0, O_LOCKS},
        {"max-view-bytes", required_argument, 0, O_VIEWB},
        {"auth-backoff-ms", required_argument, 0, O_BACKOFF},
        {"conn-workers", required_argument, 0, O_CWORKERS},
        {"send-timeout-ms", required_argument, 0, O_SENDTO},
        {"max-conns-per-addr", required_argument, 0, O_ADDRCONNS},
        {"max-stream-conns-per-addr", required_argument, 0, O_ADDRSTREAMS},
        {"max-handles-per-addr", required_argument, 0, O_ADDRHANDLES},
        {"export", required_argument, 0, O_EXPORT},
        {"identity", required_argument, 0, O_IDENTITY},
        {"audit-log", required_argument, 0, O_AUDIT_LOG},
        {"audit", no_argument, 0, O_AUDIT},
        {0, 0, 0, 0},
    };
    memset(cfg, 0, sizeof *cfg);
    cfg->listen = RFSD_DEFAULT_LISTEN;
    cfg->max_frame = RFS_FRAME_DEFAULT;
    cfg->log_level = RFS_LOG_INFO;
    cfg->lease_ms = RFSD_DEFAULT_LEASE_MS;
    cfg->max_handles = RFSD_MAX_HANDLES;
    cfg->max_locks = RFSD_DEFAULT_LOCKS_PER_CONN;
    cfg->max_view_bytes = RFSD_DEFAULT_VIEW_BYTES;
    cfg->auth_backoff_ms = RFSD_AUTH_BACKOFF_MS;
    cfg->send_timeout_ms = RFSD_SEND_TIMEOUT_MS;
    cfg->metrics_interval_ms = RFSD_METRICS_INTERVAL_MS;
    cfg->handshake_timeout_ms = RFSD_HANDSHAKE_TIMEOUT_MS;
    cfg->max_conns_per_addr = RFSD_DEFAULT_CONNS_PER_ADDR;
    cfg->max_handles_per_addr = RFSD_DEFAULT_HANDLES_PER_ADDR;
    cfg->zread_mode = RFS_Z_AUTO;
    cfg->zread_level = RFS_ZSTD_LEVEL_DEFAULT;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    /* Measured when workers still blocked in the reply's send until a distant client had
     * taken it: with 2 workers, a 4-stream read over 1 Gbit/s and 50 ms moved 29-37 MB/s, with
     * 16 workers 53-56 MB/s. Replies are now queued (reply.h), but workers still wait for the
     * disk, fsync and lock waits, so the pool stays larger than the CPUs. */
    long want = 4 * ncpu;
    cfg->threads = want < 16 ? 16 : (want > 256 ? 256 : (int)want);

    opterr = 0;
    optind = 0; /* from the start, also when a reload parses the options again */
    int c;
    unsigned long long v;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_ROOT: cfg->root = optarg; break;
        case O_LISTEN: cfg->listen = optarg; break;
        case O_UCX_LISTEN: cfg->ucx_listen = optarg; break;
        case O_TOKEN: cfg->token_file = optarg; break;
        case O_NOAUTH: cfg->no_auth = 1; break;
        case O_THREADS:
            if (parse_ulong(optarg, 1, 1024, &v)) {
                fprintf(stderr, "rfsd: --threads: expected a number 1..1024, got '%s'\n", optarg);
                return -1;
            }
            cfg->threads = (int)v;
            break;
        case O_FRAME:
            if (parse_ulong(optarg, RFS_FRAME_MIN, RFS_FRAME_HARD_MAX, &v)) {
                fprintf(stderr, "rfsd: --max-frame: expected %u..%u bytes, got '%s'\n",
                        RFS_FRAME_MIN, RFS_FRAME_HARD_MAX, optarg);
                return -1;
            }
            cfg->max_frame = (uint32_t)v;
            break;
        case O_LOG:
            cfg->log_level = rfs_log_parse_level(optarg);
            if (cfg->log_level < 0) {
                fprintf(stderr,
                        "rfsd: --log-level: expected error, warn, info or debug, got '%s'\n",
                        optarg);
                return -1;
            }
            break;
        case O_CC:
            /* Checked now: an operator's typo must stop rfsd, not every connection later. */
            if (rfs_tcp_check_congestion(optarg) != RFS_OK) {
                fprintf(stderr, "rfsd: --tcp-congestion: %s\n", rfs_last_error());
                return -1;
            }
            cfg->tcp_congestion = optarg;
            break;
        case O_LEASE:
            if (parse_ulong(optarg, 200, 86400000, &v)) {
                fprintf(stderr, "rfsd: --lease-ms: expected 200..86400000 ms, got '%s'\n", optarg);
                return -1;
            }
            cfg->lease_ms = (int)v;
            break;
        case O_SETID: cfg->allow_setid = 1; break;
        case O_RESERVE:
            if (parse_ulong(optarg, 0, INT64_MAX, &v)) {
                fprintf(stderr, "rfsd: --reserve-bytes: expected a number of bytes, got '%s'\n",
                        optarg);
                return -1;
            }
            cfg->reserve_bytes = v;
            break;
        case O_HANDLES:
            if (parse_ulong(optarg, 1, RFSD_MAX_HANDLES, &v)) {
                fprintf(stderr, "rfsd: --max-handles: expected 1..%u, got '%s'\n", RFSD_MAX_HANDLES,
                        optarg);
                return -1;
            }
            cfg->max_handles = (unsigned)v;
            break;
        case O_LOCKS:
            if (parse_ulong(optarg, 1, RFSD_MAX_LOCKS_PER_FILE, &v)) {
                fprintf(stderr, "rfsd: --max-locks: expected 1..%u, got '%s'\n",
                        RFSD_MAX_LOCKS_PER_FILE, optarg);
                return -1;
            }
            cfg->max_locks = (unsigned)v;
            break;
        case O_VIEWB:
            if (parse_ulong(optarg, 1, INT64_MAX, &v)) {
                fprintf(stderr, "rfsd: --max-view-bytes: expected a number of bytes, got '%s'\n",
                        optarg);
                return -1;
            }
            cfg->max_view_bytes = v;
            break;
        case O_BACKOFF:
            if (parse_ulong(optarg, 1, RFSD_AUTH_BACKOFF_MAX_MS, &v)) {
                fprintf(stderr, "rfsd: --auth-backoff-ms: expected 1..%u, got '%s'\n",
                        RFSD_AUTH_BACKOFF_MAX_MS, optarg);
                return -1;
            }
            cfg->auth_backoff_ms = (unsigned)v;
            break;
        case O_CWORKERS:
            if (parse_ulong(optarg, 1, 1024, &v)) {
                fprintf(stderr, "rfsd: --conn-workers: expected 1..1024, got '%s'\n", optarg);
                return -1;
            }
            cfg->conn_workers = (unsigned)v;
            break;
        case O_SENDTO:
            if (parse_ulong(optarg, 100, 3600000, &v)) {
                fprintf(stderr, "rfsd: --send-timeout-ms: expected 100..3600000 ms, got '%s'\n",
                        optarg);
                return -1;
            }
            cfg->send_timeout_ms = (int)v;
            break;
        case O_ADDRCONNS:
            if (parse_ulong(optarg, 1, RFSD_MAX_CONNS, &v)) {
                fprintf(stderr, "rfsd: --max-conns-per-addr: expected 1..%u, got '%s'\n",
                        RFSD_MAX_CONNS, optarg);
                return -1;
            }
            cfg->max_conns_per_addr = (unsigned)v;
            break;
        case O_ADDRSTREAMS:
            if (parse_ulong(optarg, 1, RFSD_MAX_CONNS, &v)) {
                fprintf(stderr, "rfsd: --max-stream-conns-per-addr: expected 1..%u, got '%s'\n",
                        RFSD_MAX_CONNS, optarg);
                return -1;
            }
            cfg->max_stream_conns_per_addr = (unsigned)v;
            break;
        case O_ADDRHANDLES:
            if (parse_ulong(optarg, 1, 1u << 30, &v)) {
                fprintf(stderr, "rfsd: --max-handles-per-addr: expected 1..%u, got '%s'\n",
                        1u << 30, optarg);
                return -1;
            }
            cfg->max_handles_per_addr = (unsigned)v;
            break;
        case O_HELP: usage(stdout); return 1;
        case O_VERSION: printf("rfsd %s\n", RFS_VERSION_STRING); return 1;
        case O_METRICS: cfg->metrics_file = optarg; break;
        case O_EXPORT:
            if (cfg->nexports >= RFSD_MAX_EXPORTS) {
                fprintf(stderr, "rfsd: --export: at most %u exports\n", RFSD_MAX_EXPORTS);
                return -1;
            }
            cfg->exports[cfg->nexports++] = optarg;
            break;
        case O_IDENTITY:
            if (cfg->nidentities >= RFSD_MAX_IDENTITIES) {
                fprintf(stderr, "rfsd: --identity: at most %u identities\n", RFSD_MAX_IDENTITIES);
                return -1;
            }
            cfg->identities[cfg->nidentities++] = optarg;
            break;
        case O_AUDIT_LOG: cfg->audit_log = optarg; break;
        case O_AUDIT: cfg->audit = 1; break;
        case O_TLS_CERT: cfg->tls_cert = optarg; break;
        case O_TLS_KEY: cfg->tls_key = optarg; break;
        case O_TPC:
            if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
                fprintf(stderr, "rfsd: --tpc takes on or off, not '%s'\n", optarg);
                return -1;
            }
            cfg->tpc = !strcmp(optarg, "on");
            break;
        case O_MPI: cfg->mpi = 1; break;
        case O_MPI_STATE: cfg->mpi_state_dir = optarg; break;
        case O_ADVERTISE: cfg->advertise = optarg; break;
        case O_BACKEND:
            if (strcmp(optarg, "posix") && strcmp(optarg, "mpiio")) {
                fprintf(stderr, "rfsd: --backend takes posix or mpiio, not '%s'\n", optarg);
                return -1;
            }
            cfg->backend_mpiio = !strcmp(optarg, "mpiio");
            break;
        case O_STATE_DIR: cfg->state_dir = optarg; break;
        case O_CAP_KEY: cfg->cap_key = optarg; break;
        case O_PRINT_CAP_KEY: cfg->print_cap_key = 1; break;
        case O_RECLAIM: cfg->reclaim_expired = 1; break;
        case O_CAP_TRUST:
            if (cfg->ncap_trust >= sizeof cfg->cap_trust / sizeof cfg->cap_trust[0]) {
                fprintf(stderr, "rfsd: --cap-trust: at most 64 keys or files\n");
                return -1;
            }
            cfg->cap_trust[cfg->ncap_trust++] = optarg;
            break;
        case O_CAP_LEASE:
            if (parse_ulong(optarg, 1, 86400 * 7, &v)) {
                fprintf(stderr, "rfsd: --cap-lease-s takes 1..604800 seconds, not '%s'\n", optarg);
                return -1;
            }
            cfg->cap_lease_s = (unsigned)v;
            break;
        case O_CAP_CLOCK: {
            char *end;
            errno = 0;
            long long off = strtoll(optarg, &end, 10);
            if (errno || end == optarg || *end || off < -(1LL << 40) || off > (1LL << 40)) {
                fprintf(stderr, "rfsd: --cap-clock-offset-s takes a number of seconds, not '%s'\n",
                        optarg);
                return -1;
            }
            cfg->cap_clock_offset_s = off;
            break;
        }
        case O_COLL_TIMEOUT:
            if (parse_ulong(optarg, 1, 3600000, &v)) {
                fprintf(stderr, "rfsd: --coll-timeout-ms takes 1..3600000, not '%s'\n", optarg);
                return -1;
            }
            cfg->coll_timeout_ms = (unsigned)v;
            break;
        case O_TPC_ALLOW:
            if (!*optarg) {
                fprintf(stderr, "rfsd: --tpc-allow needs at least one HOST or HOST:PORT\n");
                return -1;
            }
            cfg->tpc_allow = optarg;
            break;
        case O_ZREAD:
            if (rfs_zmode_parse(optarg, &cfg->zread_mode, &cfg->zread_level)) {
                fprintf(stderr, "rfsd: --compress-reads: %s\n", rfs_last_error());
                rfs_clear_error();
                return -1;
            }
            break;
        case O_TPC_TTL: {
            unsigned long long v;
            if (parse_ulong(optarg, 1, 3600000, &v)) {
                fprintf(stderr, "rfsd: --tpc-grant-ttl-ms needs 1..3600000, got '%s'\n", optarg);
                return -1;
            }
            cfg->tpc_grant_ttl_ms = (unsigned)v;
            break;
        }
        case O_HANDSHAKE:
            if (parse_ulong(optarg, 100, 600000, &v)) {
                fprintf(stderr, "rfsd: --handshake-timeout-ms: expected 100..600000, got '%s'\n",
                        optarg);
                return -1;
            }
            cfg->handshake_timeout_ms = (int)v;
            break;
        case O_METRICS_MS:
            if (parse_ulong(optarg, 100, 3600000, &v)) {
                fprintf(stderr, "rfsd: --metrics-interval-ms: expected 100..3600000, got '%s'\n",
                        optarg);
                return -1;
            }
            cfg->metrics_interval_ms = (int)v;
            break;
        default:
            fprintf(stderr, "rfsd: unknown or incomplete option '%s' (see rfsd --help)\n",
                    argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "rfsd: unexpected argument '%s' (see rfsd --help)\n", argv[optind]);
        return -1;
    }
    if (cfg->print_cap_key)
        return 0; /* main prints the key and exits: nothing is served */
    if (!cfg->root && !cfg->nexports) {
        fprintf(stderr, "rfsd: --root DIR (or --export lines) is required (see rfsd --help)\n");
        return -1;
    }
    if (cfg->root && cfg->nexports) {
        fprintf(stderr, "rfsd: --root and --export exclude each other (with named exports, "
                        "clients name the export as the first component of their paths)\n");
        return -1;
    }
    if (!cfg->tls_cert != !cfg->tls_key) {
        fprintf(stderr, "rfsd: --tls-cert and --tls-key go together (the certificate and its "
                        "private key, PEM files)\n");
        return -1;
    }
    if (cfg->tls_cert && cfg->ucx_listen) {
        /* --tls-cert promises TLS on every connection, and UCX connections have none */
        fprintf(stderr, "rfsd: --tls-cert and --ucx-listen exclude each other (UCX has no TLS, "
                        "docs/security.md)\n");
        return -1;
    }
    if (cfg->token_file && cfg->no_auth) {
        fprintf(stderr, "rfsd: --token-file and --no-auth exclude each other\n");
        return -1;
    }
    if (cfg->nidentities && (cfg->token_file || cfg->no_auth)) {
        fprintf(stderr,
                "rfsd: --identity and --%s exclude each other (--token-file is the one "
                "identity 'default'; identities need authentication)\n",
                cfg->no_auth ? "no-auth" : "token-file");
        return -1;
    }
    if (!cfg->token_file && !cfg->no_auth && !cfg->nidentities) {
        fprintf(stderr, "rfsd: refusing to start without authentication: give --token-file FILE "
                        "(or --identity lines), or --no-auth to accept any client\n");
        return -1;
    }
    if (!cfg->mpi && (cfg->mpi_state_dir || cfg->advertise)) {
        fprintf(stderr, "rfsd: --mpi-state-dir and --advertise go with --mpi\n");
        return -1;
    }
    if (cfg->mpi && !cfg->mpi_state_dir) {
        fprintf(stderr, "rfsd: --mpi needs --mpi-state-dir DIR: a directory every process of the "
                        "group shares, outside the exports, for the locks and shared file "
                        "pointers of open files\n");
        return -1;
    }
    if (cfg->coll_timeout_ms && !cfg->backend_mpiio) {
        fprintf(stderr, "rfsd: --coll-timeout-ms goes with --backend mpiio\n");
        return -1;
    }
    if (!cfg->coll_timeout_ms)
        cfg->coll_timeout_ms = 60000;
    if (cfg->backend_mpiio && !cfg->mpi) {
        fprintf(stderr, "rfsd: --backend mpiio goes with --mpi: the processes of a server group "
                        "open files together (mpiexec -n N rfsd --mpi --backend mpiio ...)\n");
        return -1;
    }
    if (cfg->mpi && cfg->ucx_listen) {
        fprintf(stderr, "rfsd: --mpi and --ucx-listen exclude each other for now (PLACE sends "
                        "clients to TCP addresses)\n");
        return -1;
    }
    if (cfg->threads < 2)
        cfg->threads = 2; /* one worker may wait on a lock; another must stay free */
    if (!cfg->conn_workers) {
        /* a share that leaves room for three other busy clients at any time */
        unsigned share = (unsigned)cfg->threads / 4;
        cfg->conn_workers = share < 2 ? 2 : share;
    }
    return 0;
}
