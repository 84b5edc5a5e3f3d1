/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Identities: the table of named tokens and their rights, AUTH against it, and SIGHUP.
 *
 * The client's AUTH carries only an HMAC over both nonces, so rfsd computes it with every
 * identity's token (at most RFSD_MAX_IDENTITIES HMACs of a few microseconds). That keeps
 * the protocol and every client unchanged; tokens must therefore differ between identities
 * (checked). The table is replaced whole at a reload under a write lock, and connections made
 * with an identity that is gone or changed are closed under that same lock, so an AUTH racing
 * the reload either sees the new table or is closed with the old one. */
#include "identity.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/log.h"
#include "config_file.h"
#include "conn.h"
#include "exports.h"

typedef struct ident {
    rfsd_who who;
    char token[RFS_TOKEN_MAX];
    size_t token_len;
} ident;

typedef struct table {
    ident *v;
    unsigned n;
} table;

static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static table cur;
static uint64_t next_serial = 1;
static int legacy; /* --token-file: one identity, kept across token changes */
static const char *legacy_file;
/* What a reload's complaints add: what happens because of them. */
static const char *outcome = "";

static uint64_t all_exports(void)
{
    unsigned n = rfsd_exports_count();
    return n >= 64 ? UINT64_MAX : ((uint64_t)1 << n) - 1;
}

/* Reports a configuration problem: to stderr at start, to the log at a reload. */
#define COMPLAIN(at_start, ...)                    \
    do {                                           \
        if (at_start) {                            \
            fprintf(stderr, "rfsd: ");             \
            fprintf(stderr, __VA_ARGS__);          \
            fputc('\n', stderr);                   \
        } else {                                   \
            char m_[1024];                         \
            snprintf(m_, sizeof m_, __VA_ARGS__);  \
            RFS_LOGE("reload: %s%s", m_, outcome); \
        }                                          \
    } while (0)

/* Reads and checks a token file. 0, or -1 after a message. */
static int load_token(const char *file, const char *who, char *out, size_t *len, int at_start)
{
    char buf[RFS_TOKEN_MAX];
    if (rfs_auth_read_token_file(file, buf, sizeof buf)) {
        char why[600];
        snprintf(why, sizeof why, "%s", rfs_last_error());
        COMPLAIN(at_start, "%s%s%s%s", who ? "identity " : "", who ? who : "", who ? ": " : "",
                 why);
        return -1;
    }
    size_t n = strlen(buf);
    /* A short token can be guessed offline from one recorded handshake (the MAC is over
     * known nonces), so rfsd will not run with one. */
    if (n < RFSD_MIN_TOKEN) {
        COMPLAIN(at_start,
                 "the token in %s is %zu bytes; at least %u are required (make one "
                 "with: rfs token > %s)",
                 file, n, RFSD_MIN_TOKEN, file);
        memset(buf, 0, sizeof buf);
        return -1;
    }
    memcpy(out, buf, n);
    memset(buf, 0, sizeof buf);
    *len = n;
    struct stat st;
    if (stat(file, &st) == 0 && (st.st_mode & 077))
        RFS_LOGW("token file %s is readable by other users", file);
    return 0;
}

static int name_ok(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n <= RFSD_IDENT_NAME_MAX &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* "a:rw,b:ro,*:ro" -> masks. 0, or -1 after a message. */
static int parse_rights(const char *who, char *spec, uint64_t *r, uint64_t *w, int at_start)
{
    *r = *w = 0;
    for (char *save = NULL, *item = strtok_r(spec, ",", &save); item;
         item = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(item, ':');
        if (!colon || (strcmp(colon, ":rw") && strcmp(colon, ":ro"))) {
            COMPLAIN(at_start, "identity %s: exports item '%s': expected EXPORT:rw or EXPORT:ro",
                     who, item);
            return -1;
        }
        int rw = colon[2] == 'w';
        *colon = '\0';
        uint64_t bit;
        if (!strcmp(item, "*")) {
            bit = all_exports();
        } else {
            const rfsd_export *ex = rfsd_exports_named() ? rfsd_export_find(item) : NULL;
            if (!ex) {
                COMPLAIN(at_start, "identity %s: no export named '%s'%s", who, item,
                         rfsd_exports_named() ? ""
                                              : " (without --export lines the one export "
                                                "is --root: give it as '*')");
                return -1;
            }
            bit = (uint64_t)1 << ex->index;
        }
        *r |= bit;
        if (rw)
            *w |= bit;
    }
    return 0;
}

/* One --identity "NAME token-file=FILE exports=SPEC". A token file that cannot be used is an
 * error at start; at a reload only that identity is left out (*skip), so deleting a token file
 * and reloading revokes it. 0, or -1 after a message (then the whole configuration is bad). */
static int parse_identity(const char *spec, ident *out, int at_start, int *skip)
{
    char buf[4096];
    *skip = 0;
    if (strlen(spec) >= sizeof buf) {
        COMPLAIN(at_start, "--identity: longer than %zu bytes", sizeof buf - 1);
        return -1;
    }
    strcpy(buf, spec);
    char *save = NULL, *name = strtok_r(buf, " \t", &save);
    if (!name || !name_ok(name)) {
        COMPLAIN(at_start,
                 "--identity '%s': expected 'NAME token-file=FILE exports=EXPORT:rw,...' "
                 "with NAME of 1..%u letters, digits, '.', '_' or '-'",
                 spec, RFSD_IDENT_NAME_MAX);
        return -1;
    }
    memset(out, 0, sizeof *out);
    snprintf(out->who.name, sizeof out->who.name, "%s", name);
    const char *file = NULL;
    char *rights = NULL;
    for (char *kv = strtok_r(NULL, " \t", &save); kv; kv = strtok_r(NULL, " \t", &save)) {
        if (!strncmp(kv, "token-file=", 11) && kv[11] && !file) {
            file = kv + 11;
        } else if (!strncmp(kv, "exports=", 8) && kv[8] && !rights) {
            rights = kv + 8;
        } else {
            COMPLAIN(at_start,
                     "identity %s: unknown, empty or repeated setting '%s' (expected "
                     "token-file=FILE and exports=EXPORT:rw|ro,...)",
                     name, kv);
            return -1;
        }
    }
    if (!file || !rights) {
        COMPLAIN(at_start, "identity %s: needs token-file=FILE and exports=EXPORT:rw|ro,...", name);
        return -1;
    }
    if (parse_rights(name, rights, &out->who.rmask, &out->who.wmask, at_start))
        return -1;
    const char *saved = outcome;
    outcome = "; this identity is left out: its clients are refused";
    int bad = load_token(file, name, out->token, &out->token_len, at_start);
    outcome = saved;
    if (bad && at_start)
        return -1;
    *skip = bad;
    return 0;
}

static void table_free(table *t)
{
    if (t->v) {
        memset(t->v, 0, sizeof *t->v * t->n);
        free(t->v);
    }
    t->v = NULL;
    t->n = 0;
}

/* Builds a table from cfg. 0, or -1 after a message. */
static int build(const rfsd_config *cfg, table *t, int at_start)
{
    t->n = 0;
    t->v = calloc(cfg->nidentities ? cfg->nidentities : 1, sizeof *t->v);
    if (!t->v) {
        COMPLAIN(at_start, "out of memory for identities");
        return -1;
    }
    if (cfg->nidentities == 0 && cfg->token_file) {
        ident *d = &t->v[0];
        snprintf(d->who.name, sizeof d->who.name, "default");
        d->who.rmask = d->who.wmask = all_exports();
        if (load_token(cfg->token_file, NULL, d->token, &d->token_len, at_start)) {
            table_free(t);
            return -1;
        }
        t->n = 1;
        return 0;
    }
    for (unsigned i = 0; i < cfg->nidentities; i++) {
        int skip;
        ident *d = &t->v[t->n];
        if (parse_identity(cfg->identities[i], d, at_start, &skip)) {
            table_free(t);
            return -1;
        }
        if (skip)
            continue;
        for (unsigned k = 0; k < t->n; k++) {
            const char *clash = !strcmp(t->v[k].who.name, d->who.name) ? "name" : NULL;
            if (!clash && t->v[k].token_len == d->token_len &&
                !memcmp(t->v[k].token, d->token, d->token_len))
                clash = "token";
            if (clash) {
                COMPLAIN(at_start,
                         "identities %s and %s have the same %s (each identity needs "
                         "its own name and token)",
                         t->v[k].who.name, d->who.name, clash);
                table_free(t);
                return -1;
            }
        }
        t->n++;
    }
    return 0;
}

/* Serials: an identity unchanged since the old table (same name, token and rights) keeps its
 * serial, so its connections stay; anything else gets a new one. */
static void assign_serials(table *t, const table *old, int keep_all)
{
    for (unsigned i = 0; i < t->n; i++) {
        ident *d = &t->v[i];
        d->who.serial = 0;
        for (unsigned k = 0; old && k < old->n && !d->who.serial; k++) {
            const ident *o = &old->v[k];
            if (strcmp(o->who.name, d->who.name) || o->who.rmask != d->who.rmask ||
                o->who.wmask != d->who.wmask)
                continue;
            if (keep_all ||
                (o->token_len == d->token_len && !memcmp(o->token, d->token, d->token_len)))
                d->who.serial = o->who.serial;
        }
        if (!d->who.serial)
            d->who.serial = next_serial++;
    }
}

int rfsd_ident_init(const rfsd_config *cfg)
{
    if (cfg->no_auth)
        return 0;
    if (build(cfg, &cur, 1))
        return -1;
    legacy = cfg->nidentities == 0;
    legacy_file = cfg->token_file;
    assign_serials(&cur, NULL, 0);
    return 0;
}

int rfsd_ident_auth(const uint8_t *server_nonce, const uint8_t *client_nonce, const uint8_t *mac,
                    rfsd_who *who, uint8_t server_mac[RFS_AUTH_MAC])
{
    int found = -1;
    pthread_rwlock_rdlock(&table_lock);
    for (unsigned i = 0; i < cur.n; i++) {
        uint8_t want[RFS_AUTH_MAC];
        const ident *d = &cur.v[i];
        rfs_auth_client_mac(d->token, d->token_len, server_nonce, client_nonce, want);
        /* every token is tried even after a match: the time taken tells nothing of which */
        if (rfs_auth_equal(want, mac, RFS_AUTH_MAC) && found < 0)
            found = (int)i;
    }
    if (found >= 0) {
        const ident *d = &cur.v[found];
        *who = d->who;
        rfs_auth_server_mac(d->token, d->token_len, server_nonce, client_nonce, server_mac);
    }
    pthread_rwlock_unlock(&table_lock);
    return found >= 0 ? 0 : -1;
}

void rfsd_ident_anonymous(rfsd_who *who)
{
    memset(who, 0, sizeof *who);
    snprintf(who->name, sizeof who->name, "anonymous");
    who->rmask = who->wmask = all_exports();
}

/* 1 if serial names an identity of the current table (caller holds the table lock). */
static int current(uint64_t serial)
{
    for (unsigned i = 0; i < cur.n; i++)
        if (cur.v[i].who.serial == serial)
            return 1;
    return 0;
}

/* Closes the connections whose identity is not in the new table (caller holds the table
 * lock for writing, so no AUTH completes meanwhile). */
static unsigned close_revoked(rfsd_server *srv)
{
    unsigned n = 0;
    pthread_mutex_lock(&srv->mu);
    for (rfsd_conn *c = srv->conns; c; c = c->next) {
        /* c->who is written under the table's read lock at AUTH, so it is stable here, ready
         * or not: a connection that matched a revoked token just before the swap goes too */
        if (!c->who.serial || atomic_load(&c->closing) || current(c->who.serial))
            continue;
        RFS_LOGI("%s: identity %s was removed or changed by the reload: closing its connection",
                 c->peer, c->who.name);
        rfsd_conn_fence(c);
        n++;
    }
    pthread_mutex_unlock(&srv->mu);
    return n;
}

static void install(rfsd_server *srv, table *t, int keep_all, const char *what)
{
    pthread_rwlock_wrlock(&table_lock);
    assign_serials(t, &cur, keep_all);
    table old = cur;
    cur = *t;
    unsigned closed = close_revoked(srv);
    pthread_rwlock_unlock(&table_lock);
    table_free(&old);
    if (legacy)
        RFS_LOGI("SIGHUP: token reloaded from %s; connections already authenticated continue",
                 what);
    else
        RFS_LOGI("SIGHUP: %u identit%s loaded from %s; %u connection(s) of removed or changed "
                 "identities closed, the others continue",
                 cur.n, cur.n == 1 ? "y" : "ies", what, closed);
}

void rfsd_ident_reload(rfsd_server *srv, int argc, char **argv)
{
    if (srv->cfg.no_auth) {
        RFS_LOGI("SIGHUP: nothing to reload (--no-auth)");
        return;
    }
    table t = {0};
    if (legacy) {
        /* as before identities: the token file alone, and a bad file keeps the token */
        rfsd_config one = {.token_file = legacy_file};
        outcome = "; the previous token stays in force";
        int bad = build(&one, &t, 0);
        outcome = "";
        if (bad)
            return;
        install(srv, &t, 1, legacy_file);
        return;
    }
    int xargc = argc;
    char **xargv = argv;
    rfsd_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg || rfsd_config_expand(argc, argv, &xargc, &xargv) ||
        rfsd_parse_options(xargc, xargv, cfg) != 0) {
        RFS_LOGE("reload: the configuration has errors (above); the previous identities stay "
                 "in force");
        rfsd_config_free(xargc, xargv, argv);
        free(cfg);
        return;
    }
    if (!rfsd_exports_same(cfg))
        RFS_LOGW("reload: export changes need a restart; the running exports stay");
    if (cfg->nidentities == 0 || cfg->token_file || cfg->no_auth) {
        RFS_LOGE("reload: the configuration no longer has --identity lines (or has --token-file "
                 "or --no-auth): that needs a restart; the previous identities stay in force");
    } else {
        outcome = "; the previous identities stay in force";
        int bad = build(cfg, &t, 0);
        outcome = "";
        if (!bad)
            install(srv, &t, 0, "the configuration");
    }
    rfsd_config_free(xargc, xargv, argv);
    free(cfg);
}

void rfsd_ident_clear(void)
{
    pthread_rwlock_wrlock(&table_lock);
    table_free(&cur);
    pthread_rwlock_unlock(&table_lock);
}
