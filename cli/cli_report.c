/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Failure messages of the rfs command: always exactly one line on stderr that says which
 * server, which path and what went wrong. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/escape.h"

void cli_server_str(const rfs_name *n, char *out, size_t cap)
{
    if (strchr(n->host, ':'))
        snprintf(out, cap, "[%s]:%u", n->host, (unsigned)n->port);
    else
        snprintf(out, cap, "%s:%u", n->host, (unsigned)n->port);
}

/* The message (server-supplied text) made safe for a terminal and kept on one line: control
 * characters are escaped as `ls -b` does (escape.h), trailing blanks dropped. */
static void one_line(const char *msg, char *out, size_t cap)
{
    cli_escape(msg, out, cap);
    size_t j = strlen(out);
    while (j > 0 && out[j - 1] == ' ')
        j--;
    out[j] = '\0';
}

int cli_fail_remote(const cli_ctx *c, const rfs_name *n, int err, const char *msg)
{
    char server[300], text[4 * 1024 + 64], path[4 * 4096 + 1];
    cli_server_str(n, server, sizeof server);
    one_line(msg ? msg : rfs_last_error(), text, sizeof text);
    cli_escape(n->path, path, sizeof path);
    if (text[0] == '\0')
        fprintf(stderr, "rfs %s: %s:%s: %s\n", c->cmd, server, path, rfs_strerror(err));
    else if (strstr(text, n->host) && strstr(text, path))
        fprintf(stderr, "rfs %s: %s\n", c->cmd, text);
    else if (strstr(text, path))
        fprintf(stderr, "rfs %s: %s: %s\n", c->cmd, server, text);
    else if (strstr(text, n->host))
        fprintf(stderr, "rfs %s: %s: %s\n", c->cmd, path, text);
    else
        fprintf(stderr, "rfs %s: %s:%s: %s\n", c->cmd, server, path, text);
    return CLI_EXIT_FAIL;
}

int cli_fail_local(const cli_ctx *c, const char *what, int errnum)
{
    fprintf(stderr, "rfs %s: %s: %s\n", c->cmd, what, strerror(errnum));
    return CLI_EXIT_FAIL;
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rfs %s: %s\n", cmd, text);
    return CLI_EXIT_USAGE;
}
