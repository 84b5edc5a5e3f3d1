/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs names on the command line: validation, the "no path means /" convenience, and joining a
 * file name onto a directory name. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

/* True for "rfs:HOST:PORT" and "rfs://HOST:PORT": a server without a path. Only this exact
 * shape gets "/" added, so a malformed name is never turned into a different valid one. */
static int is_server_only(const char *s)
{
    const char *hp;
    if (strncmp(s, "rfss:", 5) == 0)
        s += 4; /* the same shapes with TLS; s is now at ":" or "://" */
    else if (strncmp(s, "rfs+ucx:", 8) == 0)
        s += 7; /* and with UCX */
    else if (strncmp(s, "rfs:", 4) == 0)
        s += 3;
    else
        return 0;
    hp = strncmp(s, "://", 3) == 0 ? s + 3 : s + 1;
    const char *colon = strrchr(hp, ':');
    if (!colon || colon == hp || colon[1] == '\0')
        return 0;
    for (const char *p = colon + 1; *p; p++)
        if (!isdigit((unsigned char)*p))
            return 0;
    if (strchr(hp, '/'))
        return 0;
    if (hp[0] == '[') /* "[v6]" must end right before the port's colon */
        return colon[-1] == ']' && memchr(hp, ']', (size_t)(colon - hp)) == colon - 1;
    return memchr(hp, ':', (size_t)(colon - hp)) == NULL;
}

int cli_url_normalize(const char *cmd, const char *in, char *out, size_t cap, rfs_name *parsed)
{
    if (!rfs_is_name(in)) {
        cli_usage(cmd,
                  "'%s' is not an rfs name (expected rfs:HOST:PORT:/path or rfs://HOST:PORT/path)",
                  in);
        return -1;
    }
    int n;
    if (is_server_only(in))
        n = snprintf(out, cap, "%s%s", in,
                     strncmp(in, "rfs://", 6) == 0 || strncmp(in, "rfss://", 7) == 0 ||
                             strncmp(in, "rfs+ucx://", 10) == 0
                         ? "/"
                         : ":/");
    else
        n = snprintf(out, cap, "%s", in);
    if (n < 0 || (size_t)n >= cap) {
        cli_usage(cmd, "rfs name too long: '%.64s...'", in);
        return -1;
    }
    int rc = rfs_parse_name(out, parsed);
    if (rc != RFS_OK) {
        const char *m = rfs_last_error(); /* names the input and what is wrong with it */
        if (m && *m)
            cli_usage(cmd, "%s", m);
        else
            cli_usage(
                cmd,
                "malformed rfs name '%s' (expected rfs:HOST:PORT:/path or rfs://HOST:PORT/path)",
                in);
        return -1;
    }
    return 0;
}

void cli_basename(const char *path, char *out, size_t cap)
{
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/')
        start--;
    size_t len = end - start;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, path + start, len);
    out[len] = '\0';
    if (strcmp(out, "/") == 0)
        out[0] = '\0';
}

int cli_url_join_basename(char *url, size_t cap, const char *local)
{
    char base[1024];
    cli_basename(local, base, sizeof base);
    if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return -1;
    size_t ul = strlen(url);
    const char *sep = ul > 0 && url[ul - 1] == '/' ? "" : "/";
    int n = snprintf(url + ul, cap - ul, "%s%s", sep, base);
    return n < 0 || (size_t)n >= cap - ul ? -1 : 0;
}
