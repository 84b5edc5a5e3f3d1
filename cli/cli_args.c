/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Command-line option parsing for the rfs command, and turning options into rfs_options. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/zauto.h"
#include "cli/cli.h"
#include "common/log.h"

/* Parses a whole decimal number in [lo, hi]. */
static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* A byte count with an optional K, M or G suffix (binary units), in [1, max]. */
static int parse_bytes(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (shift)
        end++;
    if (errno || end == s || *end != '\0' || s[0] == '-' || v == 0 || v > (max >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

static int parse_seconds(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !(v > 0) || v > 86400)
        return -1;
    *out = v;
    return 0;
}

/* "--name=value" or "--name value": returns the value or NULL (usage error printed). */
static const char *option_value(const char *cmd, const char *name, const char *arg, int argc,
                                char **argv, int *i)
{
    size_t nl = strlen(name);
    if (arg[nl] == '=')
        return arg + nl + 1;
    if (*i + 1 >= argc) {
        cli_usage(cmd, "option %s needs a value", name);
        return NULL;
    }
    return argv[++*i];
}

static int matches(const char *arg, const char *name)
{
    size_t nl = strlen(name);
    return strncmp(arg, name, nl) == 0 && (arg[nl] == '\0' || arg[nl] == '=');
}

/* The library checks the mode too; checked here so a typo is a usage error (exit 2). */

int cli_parse_args(const cli_command *cmd, int argc, char **argv, int first, cli_opts *o)
{
    const char *cn = cmd->name;
    memset(o, 0, sizeof *o);
    o->column = o->replica = -1; /* not given */
    o->streams = 0;              /* auto (cli_streams) */
    o->count = 4;
    int only_args = 0;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (only_args || a[0] != '-' || a[1] == '\0') {
            if (o->nargs >= cmd->max_args)
                return cli_usage(cn, "too many arguments (usage: rfs %s %s)", cn, cmd->synopsis);
            o->args[o->nargs++] = a;
            continue;
        }
        const char *v;
        if (strcmp(a, "--") == 0) {
            only_args = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            return -1;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o->quiet = 1;
        } else if (matches(a, "--token-file")) {
            if (!(v = option_value(cn, "--token-file", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
            o->token_file = v;
        } else if (matches(a, "--cap")) {
            if (!(v = option_value(cn, "--cap", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
            o->cap = v;
        } else if ((cmd->accepts & CLI_OPT_SHARE) &&
                   (!strcmp(a, "--read") || !strcmp(a, "--write") || !strcmp(a, "--manage"))) {
            unsigned r = a[2] == 'r' ? 1u : a[2] == 'w' ? 2u : 3u;
            if (o->share_right && o->share_right != r)
                return cli_usage(cn, "give one of --read, --write and --manage");
            o->share_right = r;
        } else if ((cmd->accepts & CLI_OPT_EXTEND) && matches(a, "--extend")) {
            if (!(o->expires = option_value(cn, "--extend", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
        } else if ((cmd->accepts & CLI_OPT_SHARE) && matches(a, "--expires")) {
            if (!(o->expires = option_value(cn, "--expires", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
        } else if ((cmd->accepts & CLI_OPT_SHARE) && strcmp(a, "--lease") == 0) {
            o->lease = 1;
        } else if ((cmd->accepts & CLI_OPT_SHARE) && matches(a, "--revoke")) {
            if (!(o->revoke = option_value(cn, "--revoke", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
        } else if (matches(a, "--timeout")) {
            if (!(v = option_value(cn, "--timeout", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
            if (parse_seconds(v, &o->timeout_s))
                return cli_usage(cn, "--timeout needs a number of seconds, got '%s'", v);
        } else if ((cmd->accepts & CLI_OPT_STREAMS) && matches(a, "--streams")) {
            if (!(v = option_value(cn, "--streams", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
            if (strcmp(v, "auto") == 0)
                o->streams = 0;
            else if (parse_int(v, 1, CLI_MAX_STREAMS, &o->streams))
                return cli_usage(cn, "--streams needs auto or a number from 1 to %d, got '%s'",
                                 CLI_MAX_STREAMS, v);
            o->streams_given = 1;
        } else if ((cmd->accepts & CLI_OPT_STREAMS) && matches(a, "--compress")) {
            if (!(v = option_value(cn, "--compress", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
            if (!rfs_zmode_valid(v))
                return cli_usage(cn,
                                 "--compress needs none, lz4, zstd, zstd:LEVEL (1-19), "
                                 "either followed by +shuffle, or auto, got '%s'",
                                 v);
            o->compress = v;
        } else if ((cmd->accepts & CLI_OPT_PROGRESS) && strcmp(a, "--no-progress") == 0) {
            o->no_progress = 1;
        } else if ((cmd->accepts & CLI_OPT_RESUME) && strcmp(a, "--resume") == 0) {
            o->resume = 1;
        } else if ((cmd->accepts & CLI_OPT_RAW) && strcmp(a, "--raw") == 0) {
            o->raw = 1;
        } else if ((cmd->accepts & CLI_OPT_RECURSIVE) && strcmp(a, "--no-tpc") == 0) {
            o->no_tpc = 1;
        } else if ((cmd->accepts & CLI_OPT_LAYOUT) && matches(a, "--servers")) {
            if (!(o->servers = option_value(cn, "--servers", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
        } else if ((cmd->accepts & CLI_OPT_LAYOUT) && matches(a, "--stripe-size")) {
            if (!(v = option_value(cn, "--stripe-size", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
            if (parse_bytes(v, 1ull << 30, &o->stripe_size))
                return cli_usage(cn, "--stripe-size needs 1 .. 1G bytes (K, M, G), got '%s'", v);
        } else if ((cmd->accepts & CLI_OPT_LAYOUT) && matches(a, "--stripe-count")) {
            if (!(v = option_value(cn, "--stripe-count", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
            if (parse_int(v, 1, 256, &o->stripe_count))
                return cli_usage(cn, "--stripe-count needs a number from 1 to 256, got '%s'", v);
        } else if ((cmd->accepts & CLI_OPT_LAYOUT) && matches(a, "--replicas")) {
            if (!(v = option_value(cn, "--replicas", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
            if (parse_int(v, 1, 16, &o->replicas))
                return cli_usage(cn, "--replicas needs a number from 1 to 16, got '%s'", v);
        } else if ((cmd->accepts & CLI_OPT_REPLICA) && matches(a, "--server")) {
            if (!(o->server = option_value(cn, "--server", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
        } else if ((cmd->accepts & CLI_OPT_REPLICA) && matches(a, "--column")) {
            if (!(v = option_value(cn, "--column", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
            if (parse_int(v, 0, 255, &o->column))
                return cli_usage(cn, "--column needs a number from 0 to 255, got '%s'", v);
        } else if ((cmd->accepts & CLI_OPT_REPLICA) && matches(a, "--replica")) {
            if (!(v = option_value(cn, "--replica", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
            if (parse_int(v, 0, 15, &o->replica))
                return cli_usage(cn, "--replica needs a number from 0 to 15, got '%s'", v);
        } else if ((cmd->accepts & CLI_OPT_REPLICA) && strcmp(a, "--force") == 0) {
            o->force = 1;
        } else if ((cmd->accepts & CLI_OPT_VERIFY) && strcmp(a, "--verify") == 0) {
            o->verify = 1;
        } else if ((cmd->accepts & CLI_OPT_COUNT) &&
                   (matches(a, "--count") || strcmp(a, "-c") == 0)) {
            if (!(v = option_value(cn, a[1] == 'c' ? "-c" : "--count", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
            if (parse_int(v, 1, 1000000, &o->count))
                return cli_usage(cn, "--count needs a number from 1 to 1000000, got '%s'", v);
        } else if ((cmd->accepts & CLI_OPT_PARENTS) &&
                   (strcmp(a, "-p") == 0 || strcmp(a, "--parents") == 0)) {
            o->parents = 1;
        } else if ((cmd->accepts & CLI_OPT_RECOVER) && matches(a, "--to")) {
            if (!(v = option_value(cn, "--to", a, argc, argv, &i)))
                return CLI_EXIT_USAGE;
            o->to = v;
        } else if ((cmd->accepts & CLI_OPT_RECOVER) && strcmp(a, "--force") == 0) {
            o->force = 1;
        } else if ((cmd->accepts & CLI_OPT_CLOBBER) &&
                   (strcmp(a, "-n") == 0 || strcmp(a, "--no-clobber") == 0)) {
            o->no_clobber = 1;
            o->force = 0;
        } else if ((cmd->accepts & CLI_OPT_CLOBBER) &&
                   (strcmp(a, "-f") == 0 || strcmp(a, "--force") == 0)) {
            o->force = 1; /* the last of -n and -f wins, as in cp */
            o->no_clobber = 0;
        } else if ((cmd->accepts & CLI_OPT_JSON) && strcmp(a, "--json") == 0) {
            o->json = 1;
        } else if ((cmd->accepts & CLI_OPT_HUMAN) &&
                   (strcmp(a, "-H") == 0 || strcmp(a, "--human-readable") == 0)) {
            o->human = 1;
        } else if ((cmd->accepts & CLI_OPT_HUMAN) && strcmp(a, "-l") == 0) {
            /* the long listing is ls's only format; accepted for habit's sake */
        } else if ((cmd->accepts & CLI_OPT_SUMMARY) &&
                   (strcmp(a, "-s") == 0 || strcmp(a, "--summarize") == 0)) {
            o->summary = 1;
        } else if ((cmd->accepts & CLI_OPT_RECURSIVE) &&
                   (strcmp(a, "-r") == 0 || strcmp(a, "-R") == 0 ||
                    strcmp(a, "--recursive") == 0)) {
            o->recursive = 1;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            o->verbose = o->verbose > 1 ? o->verbose : 1;
        } else if (strcmp(a, "--debug") == 0) {
            o->verbose = 2;
        } else {
            return cli_usage(cn, "unknown option '%s' (run 'rfs %s --help')", a, cn);
        }
    }
    if (o->nargs < cmd->min_args)
        return cli_usage(cn, "missing arguments (usage: rfs %s %s)", cn, cmd->synopsis);
    return CLI_EXIT_OK;
}

int cli_setup_options(cli_ctx *c)
{
    memset(&c->ropts, 0, sizeof c->ropts);
    if (c->o.verbose) {
        /* Before any library call: the request trace reads its switch once. */
        rfs_log_set_level(c->o.verbose > 1 ? RFS_LOG_DEBUG : RFS_LOG_INFO);
        if (c->o.verbose > 1)
            setenv("RFS_TRACE", "1", 1);
    }
    if (c->o.timeout_s > 0) {
        double ms = c->o.timeout_s * 1000.0;
        c->ropts.connect_timeout_ms = ms < 1 ? 1 : ms > INT_MAX ? INT_MAX : (int)ms;
    }
    if (c->o.token_file) {
        int rc = rfs_auth_read_token_file(c->o.token_file, c->token, sizeof c->token);
        if (rc != RFS_OK) {
            const char *m = rfs_last_error();
            if (m && *m) /* the message already names the file */
                fprintf(stderr, "rfs %s: %s\n", c->cmd, m);
            else
                fprintf(stderr, "rfs %s: token file %s: %s\n", c->cmd, c->o.token_file,
                        rfs_strerror(rc));
            return CLI_EXIT_FAIL;
        }
        c->ropts.token = c->token;
    }
    if (c->o.cap) /* a capability stands in for the token (docs/security.md) */
        c->ropts.token = c->o.cap;
    c->ropts.compress = c->o.compress; /* NULL: $RFS_COMPRESS, else auto */
    /* Without --token-file, the library reads $RFS_TOKEN / $RFS_TOKEN_FILE itself. */
    return CLI_EXIT_OK;
}
