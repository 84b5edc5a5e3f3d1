/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Internal interfaces of the `rfs` command (cli/): option parsing, URL handling, error
 * reporting and the commands themselves. Nothing here is part of the public API. */
#ifndef RFS_CLI_H
#define RFS_CLI_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/auth.h"
#include "rfs/rfs.h"

/* Exit statuses: scripts can tell a mistake in the command line from a failed operation. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

/* Options a command accepts (bit mask, see cli_command.accepts). */
#define CLI_OPT_STREAMS 0x01u
#define CLI_OPT_COUNT 0x02u
#define CLI_OPT_PARENTS 0x04u
#define CLI_OPT_PROGRESS 0x08u   /* --no-progress */
#define CLI_OPT_RECOVER 0x10u    /* recover: --to SERVER, --force */
#define CLI_OPT_RESUME 0x20u     /* --resume (put, get) */
#define CLI_OPT_VERIFY 0x40u     /* --verify (put, get) */
#define CLI_OPT_CLOBBER 0x80u    /* -n/--no-clobber, -f/--force (put, get, mv) */
#define CLI_OPT_JSON 0x100u      /* --json (ls, stat, du) */
#define CLI_OPT_HUMAN 0x200u     /* -H/--human-readable (ls, du), ls -l */
#define CLI_OPT_SUMMARY 0x400u   /* du -s */
#define CLI_OPT_RECURSIVE 0x800u /* cp -r */
#define CLI_OPT_LAYOUT 0x1000u   /* cp to a new .rfsm: --servers, --stripe-size, ... */
#define CLI_OPT_REPLICA 0x2000u  /* manifest augment/trim: --server, --column, --replica, --force */
/* --token-file, --quiet, --timeout, -v/--verbose, --debug and --help are accepted by every
 * command. */
/* share: --read|--write|--manage, --expires T, --revoke CAP, --lease (cmd_share.c) */
#define CLI_OPT_SHARE 0x4000u
/* manifest refresh: --extend T, kept in expires (cmd_manifest_refresh.c) */
#define CLI_OPT_EXTEND 0x8000u
/* get, put, cat --raw: a .rfsm name's manifest file itself, not the logical file */
#define CLI_OPT_RAW 0x10000u

#define CLI_MAX_ARGS 256   /* cp SRC... DEST */
#define CLI_MAX_STREAMS 16 /* the client library's limit of connections per file */

typedef struct cli_opts {
    int streams;       /* --streams N; 0: auto (cli_streams) */
    int streams_given; /* on the command line (else the config file may set it) */
    int count;         /* --count N for ping (default 4) */
    int parents;       /* mkdir -p */
    int quiet;         /* no progress bar, no informational output */
    int no_progress;
    int resume;             /* --resume: continue from a verified partial temporary file */
    int verify;             /* --verify: compare crc32c of both copies before renaming */
    double timeout_s;       /* --timeout SECONDS: connect timeout; 0 = library default */
    const char *token_file; /* --token-file F */
    const char *cap;        /* --cap STRING: authenticate with this capability */
    unsigned share_right;   /* share --read 1, --write 2, --manage 3 */
    const char *expires;    /* share --expires T */
    const char *revoke;     /* share --revoke CAP */
    int lease;              /* share --lease: a lease of the --cap capability */
    const char *compress;   /* --compress MODE (put, get, cp): rfs_options.compress */
    const char *to;         /* recover --to rfs:HOST:PORT */
    int force;              /* recover --force; put/get/mv -f (overwrite: the default) */
    int no_clobber;         /* -n: never replace an existing destination */
    int json;               /* --json: machine-readable output */
    int human;              /* -H: sizes as 1.5K, 20M, 3.1G */
    int summary;            /* du -s */
    int recursive;          /* cp -r */
    int no_tpc;             /* cp --no-tpc: remote to remote through this client */
    /* cp to a new logical file (a .rfsm name, docs/manifest.md): its layout */
    const char *servers;  /* --servers LIST (rfs_servers) */
    uint64_t stripe_size; /* --stripe-size BYTES (K, M, G) */
    int stripe_count;     /* --stripe-count N */
    int replicas;         /* --replicas N */
    /* manifest augment/trim (cli/cmd_manifest.c): which replicas */
    const char *server; /* --server rfs://HOST:PORT */
    int column;         /* --column C, -1: every column */
    int replica;        /* --replica R, -1: not given */
    int raw;            /* --raw: a .rfsm name is copied as the manifest file's bytes */
    int dest_not_dir;   /* cp found the destination is no directory: put need not ask */
    int verbose;        /* -v: library log at info; --debug: 2, debug and RFS_TRACE */
    int nargs;
    const char *args[CLI_MAX_ARGS];
} cli_opts;

/* Everything a command needs: parsed options plus ready-made library options. */
typedef struct cli_ctx {
    const char *cmd; /* command name, for messages */
    cli_opts o;
    rfs_options ropts;
    char token[RFS_TOKEN_MAX + 1];
    int auto_streams; /* what auto chose for auto_server (0: not yet) */
    char auto_server[300];
} cli_ctx;

typedef int (*cli_cmd_fn)(cli_ctx *c);

typedef struct cli_command {
    const char *name;
    cli_cmd_fn run;
    int min_args, max_args;
    unsigned accepts;
    const char *synopsis; /* arguments part of the usage line */
    const char *summary;  /* one line for `rfs --help` */
    const char *details;  /* extra lines for `rfs CMD --help` (may be NULL) */
    const char *options;  /* the command's own option lines (may be NULL) */
} cli_command;

/* cli_args.c: parses argv[first..argc) for command `cmd` into c->o. Returns CLI_EXIT_OK,
 * CLI_EXIT_USAGE after printing one line on stderr, or -1 if --help was asked. */
int cli_parse_args(const cli_command *cmd, int argc, char **argv, int first, cli_opts *o);
/* Fills c->ropts from c->o (reads the token file). Returns CLI_EXIT_OK or an exit status
 * after printing the reason. */
int cli_setup_options(cli_ctx *c);

/* config.c: applies ~/.config/rfs/config (or $RFS_CONFIG): host aliases in the arguments,
 * default --streams and --token-file. Returns CLI_EXIT_OK or an exit status (message given). */
int cli_config_apply(cli_ctx *c);

/* cli_url.c: copies an rfs name into out, adding the root path "/" when the name has none
 * ("rfs:host:port" -> "rfs:host:port:/"). Returns 0, or -1 (with a message on stderr and
 * exit status CLI_EXIT_USAGE implied) when it is not a valid rfs name. */
int cli_url_normalize(const char *cmd, const char *in, char *out, size_t cap, rfs_name *parsed);
/* Appends "/" + basename(local) to the path of rfs name `url`. Returns 0 or -1 if too long. */
int cli_url_join_basename(char *url, size_t cap, const char *local);
/* Last component of a path ("a/b/" -> "b"), copied into out. */
void cli_basename(const char *path, char *out, size_t cap);

/* cli_report.c: the one line on stderr that describes a failure.
 * cli_fail_remote: after a failed library call; names server and path even when the
 * library's message does not. `msg` is the library's message (NULL: rfs_last_error()). */
int cli_fail_remote(const cli_ctx *c, const rfs_name *n, int err, const char *msg);
/* A local failure: "rfs CMD: WHAT: strerror(errnum)". Returns CLI_EXIT_FAIL. */
int cli_fail_local(const cli_ctx *c, const char *what, int errnum);
/* A usage mistake. Returns CLI_EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Formats "host:port" (IPv6 in brackets). */
void cli_server_str(const rfs_name *n, char *out, size_t cap);

/* json.c: output helpers. */
void cli_json_string(FILE *out, const char *s);
/* "type": ..., "size": ..., "mode": ..., "mtime_ns": ... (no braces) */
void cli_json_fields(FILE *out, const rfs_stat_info *st);
void cli_json_entry(FILE *out, const char *name, const rfs_stat_info *st);
void cli_human_size(uint64_t bytes, char *out, size_t cap);

/* cmd_stream.c: standard input/output as the local side of get and put. */
int cli_stream_out(cli_ctx *c, const char *url, const rfs_name *name);
int cli_put_stdin(cli_ctx *c, const char *url, const rfs_name *dst);
/* A remote file to a remote name through this client, atomically like put. */
int cli_copy_remote(cli_ctx *c, const char *src_url, const rfs_name *src, const char *url,
                    const rfs_name *dst);

/* transfer_manifest.c: a copy where either side is a logical file over several servers (a
 * .rfsm name), through the manifest layer; the other side is a local file or an rfs name. */
int cli_copy_manifest(cli_ctx *c, const char *src, const char *dest);
/* get, put and cat: 1 if remote (a .rfsm name, no --raw) goes through the layer, with
 * *status CLI_EXIT_OK, or a usage status for options only plain files have; else 0. */
int cli_through_layer(cli_ctx *c, const char *remote, int *status);
/* put --raw of the local manifest in fd to dest_path: warns when it names objects made for
 * another manifest (a copy shares them) or when it does not decode. */
void cli_warn_raw_manifest(cli_ctx *c, int fd, const char *dest_path);

/* cmd_tpc.c: a remote file to a remote name as a server-to-server copy. *fallback = 1 (and
 * CLI_EXIT_OK) when it cannot be one: the caller then streams it through this client. */
int cli_copy_tpc(cli_ctx *c, const char *src_url, const rfs_name *src, const char *url,
                 const rfs_name *dst, int *fallback);

/* client/conn.c: frame bytes this process sent and received (RFS_STATS). */
extern _Atomic uint64_t rfs_wire_tx, rfs_wire_rx;
extern _Atomic uint64_t rfs_zread_replies, rfs_zread_raw, rfs_zread_wire;

/* tree_dirs.c: makes every directory under local_root (a local tree about to be copied to
 * dest, which exists) on the server, a pipelined batch per level. Returns the levels made
 * whole, or -1, and *levels the tree's levels below dest; what it could not make is left to
 * the ordinary walk, which reports it. */
int cli_premake_dirs(cli_ctx *c, const char *local_root, const char *dest_url, const rfs_name *dn,
                     int *levels);

/* Commands. */
int cli_cmd_cat(cli_ctx *c);
int cli_cmd_share(cli_ctx *c);
/* "90s", "30m", "12h", "7d" from now, "@UNIX", "YYYY-MM-DDTHH:MM:SSZ": Unix seconds; -1 if
 * malformed (cmd_share.c). */
int cli_parse_time(const char *s, uint64_t *out);
/* rfs manifest refresh URL [--extend T] (cmd_manifest_refresh.c). */
int cli_manifest_refresh(cli_ctx *c, const char *url, const rfs_name *n);
int cli_cmd_cp(cli_ctx *c);
int cli_cmd_chmod(cli_ctx *c);
int cli_cmd_df(cli_ctx *c);
int cli_cmd_mv(cli_ctx *c);
int cli_cmd_du(cli_ctx *c);
int cli_cmd_put(cli_ctx *c);
int cli_cmd_get(cli_ctx *c);
int cli_cmd_ls(cli_ctx *c);
int cli_cmd_manifest(cli_ctx *c);
int cli_cmd_stat(cli_ctx *c);
int cli_cmd_rm(cli_ctx *c);
int cli_cmd_mkdir(cli_ctx *c);
int cli_cmd_ping(cli_ctx *c);
int cli_cmd_recover(cli_ctx *c);
int cli_cmd_token(cli_ctx *c);
/* `rfs run` takes its arguments as they are (they are the launcher's): argv after "run". */
int cli_cmd_run(int argc, char **argv);
void cli_run_help(FILE *out);

#endif
