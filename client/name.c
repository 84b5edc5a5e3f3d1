/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs names: "rfs:HOST:PORT:PATH" (ROMIO's "fsname:" prefix convention) and
 * "rfs://HOST:PORT/PATH", with IPv6 literals in brackets; "rfss:" and "rfss://" ask for TLS,
 * "rfs+ucx:" and "rfs+ucx://" for the UCX transport.
 *
 * The parsed path always starts with '/': a relative path in a name ("rfs:h:7070:a/b") is
 * relative to the server's export root, which is also what "/" means on the server, so both
 * spellings name the same file. The server confines every path to its root; the client only
 * checks the syntax here. */
#include "client/client.h"

#include "common/err.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rfs_name as releases before the UCX transport laid it out: callers built against that header
 * allocate this much, and the ucx flag went into its padding. */
struct rfs_name_before_ucx {
    char host[256];
    uint16_t port;
    char path[4096];
    int tls;
};
_Static_assert(sizeof(rfs_name) == sizeof(struct rfs_name_before_ucx) &&
                   offsetof(rfs_name, tls) == offsetof(struct rfs_name_before_ucx, tls),
               "rfs_name must keep its size and layout (public ABI)");

int rfs_is_name(const char *s)
{
    return s != NULL && (strncmp(s, "rfs:", 4) == 0 || strncmp(s, "rfss:", 5) == 0 ||
                         strncmp(s, "rfs+ucx:", 8) == 0);
}

/* Characters allowed in a host name or an IPv4 literal (RFC 1123 plus '_', seen in the wild). */
static int host_char_ok(int c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_';
}

/* Inside brackets: IPv6 hex groups, embedded IPv4, and a zone id after '%'. */
static int ipv6_char_ok(int c)
{
    return isxdigit(c) || c == ':' || c == '.' || c == '%' || isalnum(c) || c == '-' || c == '_';
}

static int bad_name(const char *s, const char *why)
{
    return rfs_fail(RFS_E_NAME,
                    "malformed rfs name '%.300s': %s "
                    "(expected rfs:HOST:PORT:/path or rfs://HOST:PORT/path; rfss: for TLS, "
                    "rfs+ucx: for UCX)",
                    s, why);
}

/* Parses HOST then ':' then PORT at *p; leaves *p after the port digits. */
static int parse_host_port(const char *name, const char **p, rfs_name *out)
{
    const char *s = *p;
    const char *host, *host_end;
    if (*s == '[') {
        host = s + 1;
        host_end = strchr(host, ']');
        if (!host_end)
            return bad_name(name, "IPv6 host without closing ']'");
        for (const char *q = host; q < host_end; q++)
            if (!ipv6_char_ok((unsigned char)*q))
                return bad_name(name, "invalid character in IPv6 host");
        if (!memchr(host, ':', (size_t)(host_end - host)) && host_end > host)
            return bad_name(name, "bracketed host is not an IPv6 address");
        s = host_end + 1;
    } else {
        host = s;
        while (*s && *s != ':' && *s != '/') {
            if (!host_char_ok((unsigned char)*s))
                return bad_name(name, "invalid character in host (IPv6 hosts need [brackets])");
            s++;
        }
        host_end = s;
    }
    size_t hlen = (size_t)(host_end - host);
    if (hlen == 0)
        return bad_name(name, "empty host");
    if (hlen >= sizeof out->host)
        return bad_name(name, "host longer than 255 characters");
    memcpy(out->host, host, hlen);
    out->host[hlen] = '\0';

    if (*s != ':')
        return bad_name(name, "missing ':PORT' after the host");
    s++;
    unsigned long port = 0;
    const char *digits = s;
    while (isdigit((unsigned char)*s)) {
        port = port * 10 + (unsigned long)(*s - '0');
        if (port > 65535)
            return bad_name(name, "port out of range (1..65535)");
        s++;
    }
    if (s == digits)
        return bad_name(name, "missing or non-numeric port");
    if (port == 0)
        return bad_name(name, "port 0 is not a valid server port");
    out->port = (uint16_t)port;
    *p = s;
    return RFS_OK;
}

/* Stores path (relative paths are made absolute: relative to the export root). */
static int set_path(const char *name, const char *path, rfs_name *out)
{
    size_t len = strlen(path);
    if (len == 0)
        return bad_name(name, "missing path");
    int add_slash = path[0] != '/';
    if (len + (size_t)add_slash > 4095)
        return rfs_fail(RFS_E_NAME, "rfs name '%.300s': path of %zu bytes (limit %u)", name,
                        len + (size_t)add_slash, RFS_MAX_PATH);
    for (const char *q = path; *q; q++)
        if ((unsigned char)*q < 0x20 || *q == 0x7f)
            return bad_name(name, "control character in path");
    /* Checked here, not left to the server's kernel (ENAMETOOLONG), so the error names it. */
    for (const char *q = path; *q;) {
        size_t comp = strcspn(q, "/");
        if (comp > RFS_MAX_NAME)
            return rfs_fail(RFS_E_NAME,
                            "rfs name '%.300s': path component of %zu bytes "
                            "(limit %u)",
                            name, comp, RFS_MAX_NAME);
        q += comp;
        q += *q == '/';
    }
    char *d = out->path;
    if (add_slash)
        *d++ = '/';
    memcpy(d, path, len + 1);
    return RFS_OK;
}

int rfs_parse_name(const char *s, rfs_name *out)
{
    if (!s || !out)
        return rfs_fail(RFS_E_INVAL, "rfs_parse_name: NULL argument");
    rfs_name tmp;
    memset(&tmp, 0, sizeof tmp);
    if (!rfs_is_name(s))
        return bad_name(s, "does not start with 'rfs:'");
    const char *p = s + 3;
    tmp.tls = *p == 's'; /* rfss: TLS required */
    p += tmp.tls;
    tmp.ucx = strncmp(p, "+ucx", 4) == 0; /* rfs+ucx: the UCX transport */
    p += tmp.ucx ? 4 : 0;
    int url = strncmp(p, "://", 3) == 0;
    p += url ? 3 : 1;
    int rc = parse_host_port(s, &p, &tmp);
    if (rc)
        return rc;
    if (url) {
        /* rfs://h:p/path: the '/' after the port starts the path and is part of it. */
        if (*p != '/')
            return bad_name(s, *p ? "expected '/' after the port" : "missing path");
    } else {
        if (*p != ':')
            return bad_name(s,
                            *p ? "expected ':' after the port" : "missing ':PATH' after the port");
        p++;
    }
    rc = set_path(s, p, &tmp);
    if (rc)
        return rc;
    *out = tmp;
    return RFS_OK;
}

/* "host:port", brackets around IPv6 literals so the result parses back. */
void rfs_name_server(const rfs_name *n, char *buf, size_t cap)
{
    if (strchr(n->host, ':'))
        snprintf(buf, cap, "[%s]:%u", n->host, n->port);
    else
        snprintf(buf, cap, "%s:%u", n->host, n->port);
}

void rfs_name_label(const rfs_name *n, char *buf, size_t cap)
{
    char server[300];
    rfs_name_server(n, server, sizeof server);
    snprintf(buf, cap, "%s:%s:%s", n->tls ? "rfss" : n->ucx ? "rfs+ucx" : "rfs", server, n->path);
}
