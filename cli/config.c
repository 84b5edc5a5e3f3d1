/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The rfs command's configuration file: defaults and host aliases, so users type
 * `rfs ls rfs://dtn/run42` instead of a full address and a --token-file each time.
 *
 *   # ~/.config/rfs/config (or $RFS_CONFIG; $XDG_CONFIG_HOME/rfs/config)
 *   streams = 4                      # default --streams for put, get and cp
 *   token_file = ~/.config/rfs/token # default --token-file
 *   [host dtn]
 *   address = dtn.example.org:7070   # rfs://dtn/... and rfs:dtn:/... mean this server
 *   token_file = ~/.config/rfs/dtn.token
 *   streams = 8
 *
 * Command-line options win over the file; a host's settings over the defaults (the first
 * remote name of the command picks the host). A file that cannot be parsed is an error: a
 * silently ignored typo would send data to the wrong place. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/text.h"

#define MAX_HOSTS 64

typedef struct host_entry {
    char name[64];
    char address[300];
    char token_file[1024];
    int streams;
} host_entry;

typedef struct config {
    host_entry dflt; /* name "" */
    host_entry host[MAX_HOSTS];
    int nhosts;
} config;

/* "~/x" -> "$HOME/x" */
static void expand_home(const char *v, char *out, size_t cap)
{
    const char *home = getenv("HOME");
    if (v[0] == '~' && v[1] == '/' && home)
        snprintf(out, cap, "%s%s", home, v + 1);
    else
        snprintf(out, cap, "%s", v);
}

static int bad(const char *path, int line, const char *what)
{
    fprintf(stderr, "rfs: %s:%d: %s\n", path, line, what);
    return CLI_EXIT_USAGE;
}

static int parse(FILE *f, const char *path, config *cf)
{
    char buf[2048];
    int line = 0;
    host_entry *cur = &cf->dflt;
    while (fgets(buf, sizeof buf, f)) {
        line++;
        char *hash = strchr(buf, '#');
        if (hash)
            *hash = '\0';
        char *s = rfs_trim(buf);
        if (!*s)
            continue;
        if (*s == '[') {
            char name[128];
            if (sscanf(s, "[host %63[A-Za-z0-9_.-]]", name) != 1 || s[strlen(s) - 1] != ']')
                return bad(path, line, "expected [host NAME] (letters, digits, _ . -)");
            if (cf->nhosts == MAX_HOSTS)
                return bad(path, line, "too many hosts (at most 64)");
            cur = &cf->host[cf->nhosts++];
            snprintf(cur->name, sizeof cur->name, "%s", name);
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq)
            return bad(path, line, "expected KEY = VALUE");
        *eq = '\0';
        char *k = rfs_trim(s), *v = rfs_trim(eq + 1);
        if (strcmp(k, "streams") == 0) {
            char *end;
            long n = strcmp(v, "auto") == 0 ? -1 : strtol(v, &end, 10);
            if (n != -1 && (*end || n < 1 || n > CLI_MAX_STREAMS))
                return bad(path, line, "streams must be auto or a number from 1 to 16");
            cur->streams = (int)n; /* -1: auto, 0: not set */
        } else if (strcmp(k, "token_file") == 0) {
            expand_home(v, cur->token_file, sizeof cur->token_file);
        } else if (strcmp(k, "address") == 0 && cur != &cf->dflt) {
            if (!strchr(v, ':') || strlen(v) >= sizeof cur->address)
                return bad(path, line, "address must be HOST:PORT");
            snprintf(cur->address, sizeof cur->address, "%s", v);
        } else {
            return bad(path, line, "unknown key (streams, token_file; address in [host])");
        }
    }
    for (int i = 0; i < cf->nhosts; i++)
        if (!cf->host[i].address[0]) {
            fprintf(stderr, "rfs: %s: [host %s] has no address\n", path, cf->host[i].name);
            return CLI_EXIT_USAGE;
        }
    return CLI_EXIT_OK;
}

static const char *config_path(char *buf, size_t cap)
{
    const char *e = getenv("RFS_CONFIG");
    if (e)
        return *e ? e : NULL; /* RFS_CONFIG= : no file */
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, cap, "%s/rfs/config", xdg);
    else if (home)
        snprintf(buf, cap, "%s/.config/rfs/config", home);
    else
        return NULL;
    return buf;
}

/* The alias a name uses ("rfs://NAME/..." or "rfs:NAME:/..." or "rfs:NAME"), and where its
 * path starts; NULL if the name has a port or no alias matches. */
static const host_entry *alias_of(const config *cf, const char *s, const char **rest, int *slashes)
{
    const char *h;
    if (strncmp(s, "rfss:", 5) == 0)
        s++; /* "rfss://NAME/p": TLS comes from $RFS_TLS, which main sets for rfss: names */
    else if (strncmp(s, "rfs+ucx:", 8) == 0)
        s += 4; /* likewise $RFS_TRANSPORT for rfs+ucx: names */
    else if (strncmp(s, "rfs:", 4) != 0)
        return NULL;
    *slashes = strncmp(s + 3, "://", 3) == 0;
    h = s + (*slashes ? 6 : 4);
    size_t n = strcspn(h, *slashes ? "/" : ":");
    for (int i = 0; i < cf->nhosts; i++)
        if (strlen(cf->host[i].name) == n && strncmp(h, cf->host[i].name, n) == 0) {
            *rest = h + n;
            /* "rfs:NAME:/p" / "rfs:NAME" / "rfs://NAME/p" / "rfs://NAME"; never "rfs:NAME:7070:/p" */
            if (!*slashes && **rest == ':' && (*rest)[1] != '/')
                return NULL;
            return &cf->host[i];
        }
    return NULL;
}

/* What the arguments and options point to after the rewrite: reachable until exit, like argv
 * (so leak checkers do not count them). */
static char *owned_args[CLI_MAX_ARGS];
static char owned_token_file[1024];

int cli_config_apply(cli_ctx *c)
{
    char buf[4096];
    const char *path = config_path(buf, sizeof buf);
    if (!path)
        return CLI_EXIT_OK;
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT && !getenv("RFS_CONFIG"))
            return CLI_EXIT_OK; /* no file: nothing configured */
        fprintf(stderr, "rfs: config %s: %s\n", path, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    config *cf = calloc(1, sizeof *cf);
    if (!cf) {
        fclose(f);
        return CLI_EXIT_FAIL;
    }
    int st = parse(f, path, cf);
    fclose(f);
    const host_entry *picked = NULL;
    for (int i = 0; st == CLI_EXIT_OK && i < c->o.nargs; i++) {
        const char *rest;
        int slashes;
        const host_entry *h = alias_of(cf, c->o.args[i], &rest, &slashes);
        if (!h) {
            for (int k = 0; !picked && rfs_is_name(c->o.args[i]) && k < cf->nhosts; k++)
                if (strstr(c->o.args[i], cf->host[k].address))
                    picked = &cf->host[k]; /* a host named by its address keeps its settings */
            continue;
        }
        if (!picked)
            picked = h;
        size_t cap = strlen(h->address) + strlen(rest) + 16;
        char *name = owned_args[i] = malloc(cap);
        if (!name) {
            st = CLI_EXIT_FAIL;
            break;
        }
        if (slashes)
            snprintf(name, cap, "rfs://%s%s", h->address, *rest ? rest : "/");
        else
            snprintf(name, cap, "rfs:%s%s", h->address, *rest ? rest : ":/");
        c->o.args[i] = name;
    }
    if (st == CLI_EXIT_OK) {
        const char *tf = picked && picked->token_file[0] ? picked->token_file : cf->dflt.token_file;
        int streams = picked && picked->streams ? picked->streams : cf->dflt.streams;
        if (!c->o.token_file && tf[0]) {
            snprintf(owned_token_file, sizeof owned_token_file, "%s", tf);
            c->o.token_file = owned_token_file;
        }
        if (!c->o.streams_given && streams)
            c->o.streams = streams < 0 ? 0 : streams;
    }
    free(cf);
    return st;
}
