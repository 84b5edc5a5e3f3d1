/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfsd --config FILE: every command-line option as a key, one per line, so a site keeps its
 * settings in /etc/rfs/rfsd.conf and the systemd unit stays short:
 *
 *   # /etc/rfs/rfsd.conf
 *   root = /data/export
 *   listen = 0.0.0.0:7070
 *   token-file = /etc/rfs/token
 *   allow-setid              # a flag: a key without a value
 *   export scratch /data/scratch quota=2T
 *   identity alice token-file=/etc/rfs/alice.token exports=scratch:rw
 *
 * Lines starting with the words export or identity carry several settings of their own (which
 * contain '='), so the rest of the line is the option's value: "--export=scratch /data/...".
 *
 * The file becomes "--key=value" arguments placed before the command line's, so the command
 * line wins and the option parser checks both the same way (an unknown key gets the
 * unknown-option message, showing the --key=value it became). */
#include "config_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"

#define MAX_LINE 4096

static int add(char ***v, int *n, int *cap, char *s)
{
    if (!s)
        return -1;
    if (*n + 1 >= *cap) {
        int nc = *cap ? 2 * *cap : 32;
        char **nv = realloc(*v, sizeof *nv * (size_t)nc);
        if (!nv) {
            free(s);
            return -1;
        }
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = s;
    (*v)[*n] = NULL;
    return 0;
}

/* Appends the file's options to *v as "--key=value" / "--key". */
static int read_file(const char *path, char ***v, int *n, int *cap)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "rfsd: --config %s: %s\n", path, strerror(errno));
        return -1;
    }
    char buf[MAX_LINE];
    int line = 0, rc = 0;
    while (rc == 0 && fgets(buf, sizeof buf, f)) {
        line++;
        if (!strchr(buf, '\n') && !feof(f)) {
            fprintf(stderr, "rfsd: %s:%d: line longer than %d bytes\n", path, line, MAX_LINE - 2);
            rc = -1;
            break;
        }
        char *hash = strchr(buf, '#');
        if (hash)
            *hash = '\0';
        char *s = rfs_trim(buf);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        char *key = s, *val = NULL;
        size_t word = strcspn(s, " \t");
        if ((word == 6 && !strncmp(s, "export", 6)) || (word == 8 && !strncmp(s, "identity", 8))) {
            const char *after = s + word + strspn(s + word, " \t");
            if (s[word] && *after != '=') {
                s[word] = '\0';
                eq = s + word; /* "export NAME PATH ...": the line's rest is the value */
            }
        }
        if (eq) {
            *eq = '\0';
            key = rfs_trim(s);
            val = rfs_trim(eq + 1);
        }
        if (!*key || strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(key) ||
            strcmp(key, "config") == 0 || (val && !*val)) {
            fprintf(stderr,
                    "rfsd: %s:%d: expected 'key = value' or a flag name (the long "
                    "options of rfsd --help, without the dashes)\n",
                    path, line);
            rc = -1;
            break;
        }
        size_t len = strlen(key) + (val ? strlen(val) : 0) + 4;
        char *arg = malloc(len);
        if (arg)
            snprintf(arg, len, val ? "--%s=%s" : "--%s", key, val ? val : "");
        rc = add(v, n, cap, arg);
    }
    fclose(f);
    return rc;
}

void rfsd_config_free(int argc, char **v, char **argv)
{
    if (v == argv)
        return;
    for (int i = 0; i < argc; i++)
        free(v[i]);
    free(v);
}

int rfsd_config_expand(int argc, char **argv, int *out_argc, char ***out_argv)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            path = argv[i + 1];
        else if (strncmp(argv[i], "--config=", 9) == 0)
            path = argv[i] + 9;
    }
    *out_argc = argc;
    *out_argv = argv;
    if (!path)
        return 0;
    char **v = NULL;
    int n = 0, cap = 0;
    int rc = add(&v, &n, &cap, strdup(argv[0]));
    if (rc == 0)
        rc = read_file(path, &v, &n, &cap);
    for (int i = 1; rc == 0 && i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0) {
            i++;
            continue;
        }
        if (strncmp(argv[i], "--config=", 9) == 0)
            continue;
        rc = add(&v, &n, &cap, strdup(argv[i]));
    }
    if (rc != 0) {
        for (int i = 0; i < n; i++)
            free(v[i]);
        free(v);
        return -1;
    }
    *out_argc = n;
    *out_argv = v;
    return 0;
}
