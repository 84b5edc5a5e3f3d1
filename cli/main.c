/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs: command-line access to files on an rfsd server.
 * Finds the command, parses its options and runs it; see `rfs --help`. */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/transfer_pool.h"

#ifndef RFS_VERSION_STRING
#define RFS_VERSION_STRING "unknown"
#endif

static const cli_command commands[] = {
    {"put", cli_cmd_put, 2, 2,
     CLI_OPT_STREAMS | CLI_OPT_PROGRESS | CLI_OPT_RESUME | CLI_OPT_VERIFY | CLI_OPT_CLOBBER |
         CLI_OPT_LAYOUT | CLI_OPT_RAW,
     "LOCAL URL", "copy a local file to the server (written atomically: temp file + rename)",
     "  If URL names a directory or ends in '/', the file keeps its local name there.\n"
     "  LOCAL '-' reads standard input (URL must then name the file; no --resume).\n"
     "  The data go to a hidden .NAME.rfs-part-HASH beside the remote file, which is synced and\n"
     "  renamed over it only when complete: a failed put never touches the previous file. The\n"
     "  partial file stays after a failure, for --resume (remove it with 'rfs rm').\n"
     "  A URL ending in .rfsm is a logical file over several servers (docs/manifest.md),\n"
     "  written through its manifest as 'rfs cp' does (no --resume, --verify or stdin); a new\n"
     "  one is laid out as the options below say. --raw writes the manifest file itself.\n",
     "  --raw              a .rfsm URL: put LOCAL as the manifest file's bytes\n"
     "  --servers LIST     new .rfsm: comma-separated data servers (rfs://host:port,...)\n"
     "  --stripe-size N    new .rfsm: bytes per stripe unit (K, M, G; default 1M)\n"
     "  --stripe-count N   new .rfsm: columns (default: every server)\n"
     "  --replicas N       new .rfsm: copies of each column, on servers of their own\n"},
    {"get", cli_cmd_get, 2, 2,
     CLI_OPT_STREAMS | CLI_OPT_PROGRESS | CLI_OPT_RESUME | CLI_OPT_VERIFY | CLI_OPT_CLOBBER |
         CLI_OPT_RAW,
     "URL LOCAL", "copy a remote file to a local file (written atomically: temp file + rename)",
     "  If LOCAL is a directory, the file keeps its remote name there.\n"
     "  LOCAL '-' writes to standard output (like 'rfs cat').\n"
     "  A failed or interrupted get leaves no partial local file, unless --resume is given:\n"
     "  then the hidden .NAME.rfs-part-HASH beside LOCAL stays for the next 'get --resume'.\n"
     "  A URL ending in .rfsm is a logical file over several servers (docs/manifest.md),\n"
     "  read through its manifest as 'rfs cp' does (no --resume or --verify).\n",
     "  --raw              a .rfsm URL: get the manifest file's bytes, not the logical file\n"},
    {"cp", cli_cmd_cp, 2, CLI_MAX_ARGS,
     CLI_OPT_STREAMS | CLI_OPT_PROGRESS | CLI_OPT_RESUME | CLI_OPT_VERIFY | CLI_OPT_CLOBBER |
         CLI_OPT_RECURSIVE | CLI_OPT_LAYOUT,
     "SRC... DEST", "copy in any direction: put, get, or server to server",
     "  Local to remote is a put, remote to local a get (atomic, --resume, --verify). Remote\n"
     "  to remote is a third-party copy: the destination server pulls the file from the\n"
     "  source with a one-time read grant, and the data never pass through this client\n"
     "  (the destination's rfsd needs --tpc on, and must reach the source by the name given\n"
     "  here); otherwise, or with --no-tpc, it streams through this client (-v says which).\n"
     "  With several sources DEST is a directory.\n"
     "  A remote source may end in a pattern (rfs:h:p:'/run/*.h5'), matched on the server's\n"
     "  listing; quote it from the shell.\n"
     "  A name ending in .rfsm is a logical file over several servers (docs/manifest.md):\n"
     "  copied to or from through its manifest; a new one is laid out as the options below\n"
     "  say (default: the home server alone, 1M units, one replica).\n",
     "  -r, --recursive    copy directories (into DEST if it is one, else as DEST)\n"
     "  --no-tpc           remote to remote: stream through this client, not server to server\n"
     "  --servers LIST     new .rfsm: comma-separated data servers (rfs://host:port,...)\n"
     "  --stripe-size N    new .rfsm: bytes per stripe unit (K, M, G; default 1M)\n"
     "  --stripe-count N   new .rfsm: columns (default: every server)\n"
     "  --replicas N       new .rfsm: copies of each column, on servers of their own\n"},
    {"cat", cli_cmd_cat, 1, 1, CLI_OPT_VERIFY | CLI_OPT_RAW, "URL",
     "write a remote file to standard output",
     "  A URL ending in .rfsm is a logical file over several servers (docs/manifest.md),\n"
     "  read through its manifest (no --verify).\n",
     "  --raw              a .rfsm URL: write the manifest file's bytes, not the logical file\n"},
    {"ls", cli_cmd_ls, 1, 1, CLI_OPT_JSON | CLI_OPT_HUMAN, "URL",
     "list a directory: type, size, mtime, name", NULL, NULL},
    {"stat", cli_cmd_stat, 1, 1, CLI_OPT_JSON, "URL", "show size, type, mode and mtime of a file",
     NULL, NULL},
    {"du", cli_cmd_du, 1, 1, CLI_OPT_JSON | CLI_OPT_HUMAN | CLI_OPT_SUMMARY, "[-s] URL",
     "bytes under a remote directory, per subdirectory and in total",
     "  Walks the tree with one listing per directory; links are not followed.\n"
     "  --json gives {\"server\", \"entries\": [{\"path\", \"bytes\", \"files\",\n"
     "  \"directories\"}...]}, the argument's total last.\n",
     "  -s, --summarize    only the total\n"},
    {"mv", cli_cmd_mv, 2, 2, CLI_OPT_CLOBBER, "URL DEST",
     "rename on the server (DEST: a path or rfs name on the same server)",
     "  If DEST is a directory, the source moves into it under its own name.\n", NULL},
    {"rm", cli_cmd_rm, 1, 1, 0, "URL", "remove a file or an empty directory", NULL, NULL},
    {"chmod", cli_cmd_chmod, 2, 2, 0, "MODE URL",
     "set permission bits (octal like 640, or symbolic like u+x,go-w)",
     "  The server clears set-uid and set-gid unless it runs with --allow-setid.\n", NULL},
    {"df", cli_cmd_df, 1, 1, CLI_OPT_JSON | CLI_OPT_HUMAN, "URL",
     "space and inodes left on the server's file system holding URL", NULL, NULL},
    {"mkdir", cli_cmd_mkdir, 1, 1, CLI_OPT_PARENTS, "[-p] URL", "create a directory", NULL,
     "  -p, --parents      create missing parent directories; no error if it exists\n"},
    {"ping", cli_cmd_ping, 1, 1, CLI_OPT_COUNT, "URL [--count N]",
     "measure round trips to a server", NULL,
     "  -c, --count N      number of round trips (default 4)\n"},
    {"recover", cli_cmd_recover, 1, 1, CLI_OPT_RECOVER, "STAGING_DIR",
     "deliver writes that active buffering staged but never sent",
     "  Replays, in their original order, the writes kept in the staging journals of\n"
     "  STAGING_DIR that no running process holds, then removes the journals.\n"
     "  Every record is checksummed: replay stops at the first bad one and the journal\n"
     "  is kept as *.rfsj.corrupt. Files that are not journals are left alone. A file\n"
     "  changed on the server since the writer's last delivery is not overwritten.\n",
     "  --to rfs:HOST:PORT deliver to this server instead (the server moved; same paths)\n"
     "  --force            replay even onto files changed since the writer's last delivery\n"},
    {"manifest", cli_cmd_manifest, 2, 2, CLI_OPT_JSON | CLI_OPT_REPLICA | CLI_OPT_EXTEND,
     "show URL | ls DIR-URL | augment URL --server S [--column C] | trim URL --server S|--replica "
     "R [--column C] [--force] | refresh URL [--extend T] | compact URL",
     "show a logical file's manifest, list a directory's manifests, add, remove or renew "
     "replicas, compact log-structured writes",
     "  A logical file striped (and replicated) over several servers is named by its manifest,\n"
     "  a .rfsm file on its home server (docs/manifest.md). 'show' prints its servers, stripe\n"
     "  layout, which replicas are complete and the ranges an incomplete one misses; --json\n"
     "  gives the manifest's JSON form. 'ls' prints one line per .rfsm file of the directory:\n"
     "  size, columns x stripe size, replicas, whether every replica is complete.\n"
     "  'augment' adds a replica of every column (or of --column C) on server S, copied by S\n"
     "  from a complete replica (server-to-server: rfsd --tpc on at S), and repairs S's\n"
     "  incomplete replicas the same way; run it while no process writes the file. 'trim'\n"
     "  removes the replicas on S (or replica slot R) from the manifest, then their objects.\n"
     "  'refresh' renews the lease of every object on its data server (until --extend T,\n"
     "  default 30d): a data server started with --reclaim-expired deletes objects whose\n"
     "  lease lapsed (log objects too). 'compact' copies the bytes of log-structured writes\n"
     "  (rfs_manifest_mode=log) from their log objects into the stripes, drops the overlay\n"
     "  extents and deletes the log objects no process holds open; augment refuses a file\n"
     "  that has overlays until it is compacted.\n",
     "  --server rfs://HOST:PORT  the server to add replicas on, or to trim them from\n"
     "  --column C                only column C (0-based)\n"
     "  --replica R               trim: replica slot R of each column (0-based)\n"
     "  --force                   trim: remove even the last complete replica of a column\n"
     "  --extend T                refresh: the objects' new lease end: 90s, 30m, 12h, 7d from\n"
     "                            now, @UNIX_SECONDS or 2026-12-31T23:59:59Z\n"},
    {"share", cli_cmd_share, 1, 1, CLI_OPT_SHARE, "URL --read|--write|--manage",
     "print a capability for a file (or --revoke CAP URL)",
     "  A capability is a string that grants one right on one file (a .rfsm logical file\n"
     "  with its objects, or a plain file) until T, signed by the file's home server. Whoever\n"
     "  holds it has the right, with no token: rfs --cap CAP ..., RFS_CAP=CAP, or the MPI-IO\n"
     "  hint rfs_capability. manage implies write implies read; a manage capability makes\n"
     "  and revokes others for its file. Asking needs a token with that right, or a manage\n"
     "  capability (--cap). The data servers of a logical file must trust the home server's\n"
     "  key (rfsd --cap-trust). docs/security.md \"Capabilities\".\n",
     "  --read, --write, --manage  the right to grant\n"
     "  --expires T        until when: 90s, 30m, 12h, 7d from now, or an absolute time\n"
     "                     2026-12-31T23:59:59Z, or @UNIX_SECONDS (default 24h)\n"
     "  --revoke CAP       revoke CAP at the home server of URL (with a token, or --cap with\n"
     "                     a manage capability for the file): refused at once there, and on\n"
     "                     the data servers once its last lease lapses (rfsd --cap-lease-s)\n"
     "  --lease            print a lease of the --cap capability instead: what the data\n"
     "                     servers of a logical file take (rfs opens them for you; this is\n"
     "                     for checking a server's --cap-trust)\n"},
    {"token", cli_cmd_token, 0, 0, 0, "",
     "print a fresh authentication token (32 random bytes in hex)",
     "  For rfsd --token-file (which needs at least 16 bytes) and clients' RFS_TOKEN:\n"
     "    rfs token > secret && chmod 600 secret\n",
     NULL},
    /* run: no cli_ctx, its arguments are the launcher's (main hands them over untouched) */
    {"run", NULL, 0, 0, 0, "[--] LAUNCHER ARGS",
     "run an MPI launcher with the right librfs-mpiio.so preloaded", NULL, NULL},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const char common_opts_help[] =
    "Common options:\n"
    "  --token-file F     read the authentication token from F\n"
    "                     (default: $RFS_TOKEN, else the file named by $RFS_TOKEN_FILE)\n"
    "  --cap CAP          authenticate with a capability instead (rfs share; $RFS_CAP)\n"
    "  --timeout SECONDS  connect timeout (default 10)\n"
    "  -q, --quiet        print nothing but errors and requested output\n"
    "  -v, --verbose      log the library's decisions (connections, retries) on stderr\n"
    "  --debug            and every request and reply (RFS_TRACE=1)\n"
    "  -h, --help         show help\n";

static void print_main_help(FILE *out)
{
    fprintf(out, "usage: rfs [OPTIONS] COMMAND [ARGS]\n"
                 "\n"
                 "Copy and manage files on an rfsd server.\n"
                 "URL is an rfs name: rfs:HOST:PORT:/path or rfs://HOST:PORT/path\n"
                 "(IPv6 hosts in brackets: rfs:[::1]:7070:/path).\n"
                 "\n"
                 "Commands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-7s %-18s %s\n", commands[i].name, commands[i].synopsis,
                commands[i].summary);
    fprintf(out,
            "\n%s"
            "  --version          show the version\n"
            "\n"
            "Run 'rfs COMMAND --help' for a command's options.\n"
            "Exit status: 0 success, 1 the operation failed, 2 bad command line.\n",
            common_opts_help);
}

static void print_cmd_help(const cli_command *cmd)
{
    if (!cmd->run) {
        cli_run_help(stdout);
        return;
    }
    printf("usage: rfs %s [OPTIONS] %s\n\n%c%s.\n", cmd->name, cmd->synopsis,
           toupper((unsigned char)cmd->summary[0]), cmd->summary + 1);
    if (cmd->details)
        printf("%s", cmd->details);
    if (cmd->accepts)
        printf("\nOptions:\n");
    if (cmd->accepts & CLI_OPT_STREAMS)
        printf("  --streams N|auto   split the file into N byte ranges, each moved over its own\n"
               "                     TCP connection (at most %d); auto (default): 1, or 4 when\n"
               "                     the round trip is 2 ms or more\n",
               CLI_MAX_STREAMS);
    if (cmd->accepts & CLI_OPT_STREAMS)
        printf("  --compress MODE    compress written data on the wire: none, lz4, zstd[:LEVEL]\n"
               "                     (+shuffle: bytes of 8-byte values grouped first) or auto\n"
               "                     (default: $RFS_COMPRESS, else auto: the codec that makes\n"
               "                     the transfer fastest on this link, or none)\n");
    if (cmd->accepts & CLI_OPT_PROGRESS)
        printf("  --no-progress      no progress bar (it is only shown on a terminal anyway)\n");
    if (cmd->accepts & CLI_OPT_RESUME)
        printf("  --resume           continue an interrupted transfer of the same file: keep the\n"
               "                     part of the temporary file whose crc32c matches the source\n"
               "                     (in 4 MiB units) and copy only the rest\n");
    if (cmd->accepts & CLI_OPT_VERIFY)
        printf("  --verify           before renaming into place, compare the crc32c of the whole\n"
               "                     file as the server reads it with that of the local file\n");
    if (cmd->accepts & CLI_OPT_CLOBBER)
        printf("  -n, --no-clobber   do not replace an existing destination (exit status 1)\n"
               "  -f, --force        replace it (the default); the last of -n and -f counts\n");
    if (cmd->accepts & CLI_OPT_JSON)
        printf(
            "  --json             one JSON document instead of columns (names as UTF-8; a\n"
            "                     byte of invalid UTF-8 as \\udcXX, Python's surrogateescape)\n");
    if (cmd->accepts & CLI_OPT_HUMAN)
        printf("  -H, --human-readable  sizes as 1.5K, 20M, 3.1G (powers of 1024)\n");
    if (cmd->options)
        printf("%s", cmd->options);
    printf("\n%s", common_opts_help);
}

static const cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* Options that take a value in the next argument, so the command search can skip it. */
static int takes_value(const char *a)
{
    return strcmp(a, "--token-file") == 0 || strcmp(a, "--timeout") == 0 ||
           strcmp(a, "--cap") == 0 || strcmp(a, "--extend") == 0 || strcmp(a, "--expires") == 0 ||
           strcmp(a, "--revoke") == 0 || strcmp(a, "--streams") == 0 || strcmp(a, "--count") == 0 ||
           strcmp(a, "-c") == 0;
}

/* RFS_STATS=1: what crossed this client's network, on stderr at exit (a third-party copy's
 * bytes go server to server, and this shows they did not come here). */
static void print_wire_stats(void)
{
    fprintf(stderr, "rfs stats: wire bytes sent %llu received %llu\n",
            (unsigned long long)atomic_load(&rfs_wire_tx),
            (unsigned long long)atomic_load(&rfs_wire_rx));
    if (atomic_load(&rfs_zread_replies))
        fprintf(stderr,
                "rfs stats: compressed read replies %llu: %llu bytes in %llu on the "
                "wire\n",
                (unsigned long long)atomic_load(&rfs_zread_replies),
                (unsigned long long)atomic_load(&rfs_zread_raw),
                (unsigned long long)atomic_load(&rfs_zread_wire));
}

int main(int argc, char **argv)
{
    const char *stats = getenv("RFS_STATS");
    if (stats && *stats && strcmp(stats, "0"))
        atexit(print_wire_stats);
    /* A closed connection must turn into an error return, not kill the process. */
    signal(SIGPIPE, SIG_IGN);
    /* Over a file size limit, a write must fail with EFBIG (and the get clean up) rather than
     * the process dying with a half-written temporary file. */
    signal(SIGXFSZ, SIG_IGN);

    /* A command that names an rfss: server uses TLS for every name it touches: commands build
     * more names from a server string (temporary files, recursive copies), and none of those
     * may fall back to plaintext. */
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "rfss:", 5) == 0)
            setenv("RFS_TLS", "1", 1);
    /* likewise rfs+ucx: (UCX) for every name a command touches */
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "rfs+ucx:", 8) == 0)
            setenv("RFS_TRANSPORT", "ucx", 1);

    int cmd_at = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            break;
        if (a[0] != '-' || a[1] == '\0') {
            cmd_at = i;
            break;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            print_main_help(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(a, "--version") == 0) {
            printf("rfs %s\n", RFS_VERSION_STRING);
            return CLI_EXIT_OK;
        }
        if (takes_value(a))
            i++;
    }
    if (cmd_at < 0) {
        fprintf(stderr, "rfs: no command given (run 'rfs --help')\n");
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[cmd_at], "help") == 0) {
        const cli_command *hc = cmd_at + 1 < argc ? find_command(argv[cmd_at + 1]) : NULL;
        if (hc)
            print_cmd_help(hc);
        else
            print_main_help(stdout);
        return CLI_EXIT_OK;
    }
    const cli_command *cmd = find_command(argv[cmd_at]);
    if (!cmd) {
        fprintf(stderr, "rfs: unknown command '%s' (run 'rfs --help')\n", argv[cmd_at]);
        return CLI_EXIT_USAGE;
    }
    if (!cmd->run)
        return cli_cmd_run(argc - cmd_at - 1, argv + cmd_at + 1);

    /* Options may stand before or after the command name: parse them all, without it. */
    char **rest = malloc(sizeof(char *) * (size_t)argc);
    if (!rest) {
        fprintf(stderr, "rfs: out of memory\n");
        return CLI_EXIT_FAIL;
    }
    int n = 0;
    for (int i = 0; i < argc; i++)
        if (i != cmd_at)
            rest[n++] = argv[i];

    cli_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        free(rest);
        fprintf(stderr, "rfs: out of memory\n");
        return CLI_EXIT_FAIL;
    }
    c->cmd = cmd->name;
    int rc = cli_parse_args(cmd, n, rest, 1, &c->o);
    free(rest);
    if (rc < 0) {
        print_cmd_help(cmd);
        rc = CLI_EXIT_OK;
    } else if (rc == CLI_EXIT_OK) {
        rc = cli_config_apply(c);
        if (rc == CLI_EXIT_OK)
            rc = cli_setup_options(c);
        if (rc == CLI_EXIT_OK)
            rc = cmd->run(c);
        cli_streams_warm_end(c); /* a command that failed early leaves no dialler behind */
    }
    /* The token may be a secret: do not leave it in freed memory. */
    memset(c->token, 0, sizeof c->token);
    free(c);
    return rc;
}
