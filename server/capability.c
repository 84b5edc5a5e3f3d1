/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Capabilities, rfsd's side (capability.h). */
#include "capability.h"
#include "cap_revoked.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/capability.h"
#include "common/err.h"
#include "common/log.h"
#include "conn.h"
#include "exports.h"

typedef struct trusted {
    uint8_t pub[RFS_CAP_PUB_LEN];
    uint8_t id[RFS_CAP_KEYID_LEN];
} trusted;

/* The key: loaded at start, used by CAP_ISSUE's signatures and freed at exit. */
static pthread_rwlock_t mu = PTHREAD_RWLOCK_INITIALIZER;
static rfs_cap_key *key; /* NULL: this server issues nothing */
static uint8_t own_pub[RFS_CAP_PUB_LEN], own_id[RFS_CAP_KEYID_LEN];
static trusted trust[RFSD_CAP_MAX_TRUST];
static unsigned ntrust;
static unsigned lease_s = RFSD_CAP_LEASE_S_DEFAULT;
static long long clock_offset_s;

/* Unix seconds, as capabilities count time; tests move it with --cap-clock-offset-s. */
uint64_t rfsd_cap_now(void)
{
    long long t = (long long)time(NULL) + clock_offset_s;
    return t < 0 ? 0 : (uint64_t)t;
}

static void utc(uint64_t t, char *out, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || !strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, cap, "%" PRIu64, t);
}

static int key_path(const rfsd_config *cfg, char *out, size_t cap)
{
    if (cfg->cap_key)
        return snprintf(out, cap, "%s", cfg->cap_key) < (int)cap ? 0 : -1;
    if (cfg->state_dir)
        return snprintf(out, cap, "%s/cap-key.pem", cfg->state_dir) < (int)cap ? 0 : -1;
    return -1;
}

static int load_key(const rfsd_config *cfg)
{
    char path[4096];
    if (key_path(cfg, path, sizeof path))
        return 0; /* no key: verifies trusted issuers' capabilities, issues none */
    if (rfs_cap_key_load(path, cfg->cap_key == NULL, &key)) {
        fprintf(stderr, "rfsd: %s\n", rfs_last_error());
        return -1;
    }
    rfs_cap_key_pub(key, own_pub);
    rfs_cap_key_id(own_pub, own_id);
    return 0;
}

static int add_trust_text(const char *s, const char *from)
{
    if (ntrust >= RFSD_CAP_MAX_TRUST) {
        fprintf(stderr, "rfsd: --cap-trust: at most %u keys\n", RFSD_CAP_MAX_TRUST);
        return -1;
    }
    if (rfs_cap_pub_parse(s, trust[ntrust].pub)) {
        fprintf(stderr, "rfsd: --cap-trust %s: %s\n", from, rfs_last_error());
        return -1;
    }
    rfs_cap_key_id(trust[ntrust].pub, trust[ntrust].id);
    ntrust++;
    return 0;
}

/* A key given inline ("rfspub1....") or a file of keys, one a line ('#' starts a comment). */
static int add_trust(const char *arg)
{
    if (!strncmp(arg, RFS_PUB_PREFIX, strlen(RFS_PUB_PREFIX)))
        return add_trust_text(arg, "(inline key)");
    FILE *f = fopen(arg, "re");
    if (!f) {
        fprintf(stderr,
                "rfsd: --cap-trust %s: %s (give a key as rfsd --print-cap-key prints it, "
                "or a file of them)\n",
                arg, strerror(errno));
        return -1;
    }
    char line[256];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || *p == '\n' || !*p)
            continue;
        rc = add_trust_text(p, arg);
    }
    fclose(f);
    return rc;
}

int rfsd_cap_init(const rfsd_config *cfg)
{
    lease_s = cfg->cap_lease_s ? cfg->cap_lease_s : RFSD_CAP_LEASE_S_DEFAULT;
    clock_offset_s = cfg->cap_clock_offset_s;
    if (load_key(cfg))
        return -1;
    for (unsigned i = 0; i < cfg->ncap_trust; i++)
        if (add_trust(cfg->cap_trust[i]))
            return -1;
    if (rfsd_revoked_init(cfg->state_dir, rfsd_cap_now()))
        return -1;
    if (key) {
        char pub[RFS_PUB_STR_LEN];
        rfs_cap_pub_format(own_pub, pub);
        RFS_LOGI("capabilities: this server signs with %s (%u revocations kept, leases of %u s); "
                 "it takes the leases of %u other issuers",
                 pub, rfsd_revoked_count(), lease_s, ntrust);
    } else if (ntrust) {
        RFS_LOGI("capabilities: no signing key (--state-dir); takes the leases of %u issuers",
                 ntrust);
    }
    return 0;
}

int rfsd_cap_print_key(const rfsd_config *cfg)
{
    if (!cfg->state_dir && !cfg->cap_key) {
        fprintf(stderr, "rfsd: --print-cap-key needs --state-dir DIR or --cap-key FILE\n");
        return -1;
    }
    if (load_key(cfg))
        return -1;
    char pub[RFS_PUB_STR_LEN];
    rfs_cap_pub_format(own_pub, pub);
    printf("%s\n", pub);
    return 0;
}

void rfsd_cap_clear(void)
{
    pthread_rwlock_wrlock(&mu);
    rfs_cap_key_free(key);
    key = NULL;
    pthread_rwlock_unlock(&mu);
    rfsd_revoked_clear();
}

/* Parses s, finds its issuer's key and checks the signature (not the times). *local: issued
 * by this server. */
static int verify(const char *s, rfs_cap_parsed *p, int *local)
{
    int rc = rfs_cap_parse(s, p);
    if (rc)
        return rc;
    const uint8_t *pub = NULL;
    *local = key && !memcmp(p->cap.key_id, own_id, RFS_CAP_KEYID_LEN);
    if (*local)
        pub = own_pub;
    for (unsigned i = 0; !pub && i < ntrust; i++)
        if (!memcmp(p->cap.key_id, trust[i].id, RFS_CAP_KEYID_LEN))
            pub = trust[i].pub;
    if (!pub) {
        char id[2 * RFS_CAP_KEYID_LEN + 1];
        for (unsigned i = 0; i < RFS_CAP_KEYID_LEN; i++)
            snprintf(id + 2 * i, 3, "%02x", p->cap.key_id[i]);
        return rfs_fail(RFS_E_AUTH,
                        "capability refused: unknown issuer (key id %s is neither this "
                        "server's key nor one it trusts: rfsd --cap-trust)",
                        id);
    }
    return rfs_cap_check_sig(p, pub);
}

int rfsd_cap_auth(const rfs_req *q, rfsd_who *who, rfs_rep *rep)
{
    char s[RFS_CAP_WIRE_MAX + 1];
    memcpy(s, q->u.cap.str.s, q->u.cap.str.len);
    s[q->u.cap.str.len] = '\0';
    rfs_cap_parsed p;
    int local;
    int rc = verify(s, &p, &local);
    explicit_bzero(s, sizeof s);
    if (rc)
        return rc;
    const rfs_cap *c = &p.cap;
    uint64_t t = rfsd_cap_now();
    char when[64];
    if (t >= c->expires) {
        utc(c->expires, when, sizeof when);
        return rfs_fail(RFS_E_AUTH, "capability for %s expired at %s", c->path, when);
    }
    if (c->kind == RFS_CAP_KIND_LEASE && t >= c->auth_until) {
        utc(c->auth_until, when, sizeof when);
        return rfs_fail(RFS_E_AUTH,
                        "lease of the capability for %s expired at %s (open the file again "
                        "through its home server for a new one)",
                        c->path, when);
    }
    if (!local && c->kind != RFS_CAP_KIND_LEASE)
        return rfs_fail(RFS_E_AUTH,
                        "capability for %s refused: this server is a data server of its "
                        "issuer and takes only its short leases (open the file through its "
                        "home server, which hands them out)",
                        c->path);
    if (local && rfsd_revoked_has(c->serial))
        return rfs_fail(RFS_E_AUTH, "capability for %s refused: it was revoked", c->path);
    memset(who, 0, sizeof *who);
    snprintf(who->name, sizeof who->name, "cap:%s:%016" PRIx64, rfs_cap_right_name(c->right),
             c->serial);
    who->rmask = who->wmask = ~(uint64_t)0; /* confined by path and right instead */
    who->capped = 1;
    who->cap_local = local;
    who->cap = *c;
    rep->u.cap_auth.right = c->right;
    rep->u.cap_auth.expires = c->expires;
    return RFS_OK;
}

static int right_need(unsigned right)
{
    return right == RFS_CAP_READ ? RFSD_NEED_READ : RFSD_NEED_WRITE;
}

int rfsd_cap_issue(rfsd_conn *c, const rfs_req *q, rfs_rep *rep, uint8_t **buf)
{
    if (!key)
        return rfs_fail(RFS_E_UNSUPPORTED, "this server has no capability signing key (start "
                                           "it with --state-dir DIR)");
    if (c->who.granted)
        return rfs_fail(RFS_E_ACCESS, "CAP_ISSUE: a third-party copy connection cannot make "
                                      "capabilities");
    int lease = (q->u.cap_issue.flags & RFS_CAP_ISSUE_LEASE) != 0;
    rfsd_path p;
    const rfsd_export *ex;
    rfs_cap cap = {.kind = lease ? RFS_CAP_KIND_LEASE : RFS_CAP_KIND_CAP,
                   .right = q->u.cap_issue.right,
                   .expires = q->u.cap_issue.expires};
    uint64_t t = rfsd_cap_now();
    int rc = rfsd_resolve(c, &q->u.cap_issue.path, right_need(cap.right), 0, &p, &ex);
    if (rc)
        return rc;
    if (strlen(p.shown) > RFS_CAP_MAX_PATH)
        return rfs_fail(RFS_E_NAME, "%s: a capability names a path of at most %u bytes", p.shown,
                        RFS_CAP_MAX_PATH);
    if (c->who.capped) {
        const rfs_cap *mine = &c->who.cap;
        if (!c->who.cap_local)
            return rfs_fail(RFS_E_ACCESS,
                            "%s: only the capability's issuer makes capabilities "
                            "or leases from it",
                            p.shown);
        if (strcmp(p.shown, mine->path) != 0)
            return rfs_fail(RFS_E_ACCESS, "%s: this connection's capability is for %s", p.shown,
                            mine->path);
        if (cap.right > mine->right ||
            (!lease && (mine->right != RFS_CAP_MANAGE || mine->kind != RFS_CAP_KIND_CAP)))
            return rfs_fail(RFS_E_ACCESS,
                            "%s: a %s capability cannot make a %s %s (a manage capability makes "
                            "capabilities; any capability makes leases of its right or less)",
                            p.shown, rfs_cap_right_name(mine->right), rfs_cap_right_name(cap.right),
                            lease ? "lease" : "capability");
        if (cap.expires == 0 || cap.expires > mine->expires)
            cap.expires = mine->expires; /* never longer than what it comes from */
        if (lease)
            cap.serial = mine->serial; /* revoking the capability ends its leases too */
    }
    if (lease && !c->who.capped && cap.expires == 0)
        cap.expires = t + lease_s; /* a token's lease: as long as it opens connections */
    if (cap.expires <= t)
        return rfs_fail(RFS_E_INVAL, "%s: the expiry asked for is in the past", p.shown);
    if (!cap.serial && rfs_auth_random((uint8_t *)&cap.serial, sizeof cap.serial))
        return rfs_fail(RFS_E_IO, "no randomness for the capability's serial");
    cap.auth_until = lease && t + lease_s < cap.expires ? t + lease_s : cap.expires;
    snprintf(cap.path, sizeof cap.path, "%s", p.shown);
    if (!(*buf = malloc(RFS_CAP_MAX_LEN + 1)))
        return rfs_fail(RFS_E_NOMEM, "server out of memory");
    pthread_rwlock_rdlock(&mu);
    rc = rfs_cap_sign(key, &cap, (char *)*buf, RFS_CAP_MAX_LEN + 1);
    pthread_rwlock_unlock(&mu);
    if (rc)
        return rc;
    rep->u.cap_issue.str.s = (const char *)*buf;
    rep->u.cap_issue.str.len = (uint16_t)strlen((const char *)*buf);
    RFS_LOGD("%s: %s %s for %s (serial %016" PRIx64 ") to %s", c->peer,
             rfs_cap_right_name(cap.right), lease ? "lease" : "capability", cap.path, cap.serial,
             c->who.name);
    return RFS_OK;
}

int rfsd_cap_revoke(rfsd_conn *c, const rfs_req *q)
{
    char s[RFS_CAP_WIRE_MAX + 1];
    memcpy(s, q->u.cap.str.s, q->u.cap.str.len);
    s[q->u.cap.str.len] = '\0';
    rfs_cap_parsed p;
    int local;
    int rc = verify(s, &p, &local);
    if (rc)
        return rc;
    if (!local)
        return rfs_fail(RFS_E_INVAL,
                        "capability for %s was not made by this server: revoke it "
                        "at its issuer",
                        p.cap.path);
    /* Who may: a manage capability for the same file, or an identity that may write it. */
    if (c->who.capped) {
        if (c->who.cap.right != RFS_CAP_MANAGE || c->who.cap.kind != RFS_CAP_KIND_CAP ||
            strcmp(c->who.cap.path, p.cap.path) != 0)
            return rfs_fail(RFS_E_ACCESS, "%s: revoking needs a manage capability for this file",
                            p.cap.path);
    } else {
        rfsd_path rp;
        const rfsd_export *ex;
        rfs_wpath w = {.s = p.cap.path, .len = (uint16_t)strlen(p.cap.path)};
        if ((rc = rfsd_resolve(c, &w, RFSD_NEED_WRITE, 0, &rp, &ex)))
            return rc;
    }
    uint64_t t = rfsd_cap_now();
    if (p.cap.expires <= t)
        return RFS_OK; /* nothing to stop: it is refused anyway */
    rc = rfsd_revoked_add(p.cap.serial, p.cap.expires, t);
    if (!rc)
        RFS_LOGI("%s: capability %016" PRIx64 " for %s revoked by %s", c->peer, p.cap.serial,
                 p.cap.path, c->who.name);
    return rc;
}

int rfsd_cap_gate(const rfsd_conn *c, const rfs_req *q)
{
    const rfs_cap *cap = &c->who.cap;
    if (q->op == RFS_OP_CLOSE || q->op == RFS_OP_UNLOCK || q->op == RFS_OP_PING)
        return RFS_OK; /* letting go is always allowed */
    if (rfsd_cap_now() >= cap->expires) {
        char when[64];
        utc(cap->expires, when, sizeof when);
        return rfs_fail(RFS_E_AUTH, "capability for %s expired at %s", cap->path, when);
    }
    if (c->who.cap_local && rfsd_revoked_has(cap->serial))
        return rfs_fail(RFS_E_AUTH, "capability for %s was revoked", cap->path);
    switch (q->op) {
    case RFS_OP_RENAME: {
        /* only `rfs put`'s last step: its temporary over the file itself */
        rfsd_path from, to;
        int rc = rfsd_path_from_wire(&q->u.rename.from, &from);
        if (rc == RFS_OK)
            rc = rfsd_path_from_wire(&q->u.rename.to, &to);
        if (rc == RFS_OK && (cap->right < RFS_CAP_WRITE || !rfs_cap_is_temp(cap, from.shown) ||
                             strcmp(to.shown, cap->path) != 0))
            return rfs_fail(RFS_E_ACCESS,
                            "RENAME refused: this connection holds a %s capability for %s, "
                            "which renames nothing but a temporary of it over it",
                            rfs_cap_right_name(cap->right), cap->path);
        return rc;
    }
    case RFS_OP_LIST:
    case RFS_OP_LIST_TREE:
    case RFS_OP_CHMOD:
    case RFS_OP_STATFS:
    case RFS_OP_TPC_GRANT:
    case RFS_OP_TPC_PULL:
    case RFS_OP_TPC_STATUS:
        return rfs_fail(RFS_E_ACCESS,
                        "%s refused: this connection holds a capability for %s and may only "
                        "open, read%s that file",
                        rfs_op_name(q->op), cap->path,
                        cap->right >= RFS_CAP_WRITE ? ", write and delete" : "");
    case RFS_OP_OPEN:
    case RFS_OP_STAT:
    case RFS_OP_DELETE:
    case RFS_OP_WRITE_FILE:
    case RFS_OP_READ_FILE: {
        /* the file and its objects only; MKDIR alone may name the directories above them */
        const rfs_wpath *w = q->op == RFS_OP_OPEN         ? &q->u.open.path
                             : q->op == RFS_OP_WRITE_FILE ? &q->u.write_file.path
                             : q->op == RFS_OP_READ_FILE  ? &q->u.read_file.path
                                                          : &q->u.path.path;
        rfsd_path p;
        int rc = rfsd_path_from_wire(w, &p);
        if (rc == RFS_OK && !rfs_cap_covers(cap, p.shown) &&
            !(cap->right >= RFS_CAP_WRITE && rfs_cap_is_temp(cap, p.shown)))
            return rfs_fail(RFS_E_ACCESS, "%s: wrong file: this connection's capability is for %s",
                            p.shown, cap->path);
        return rc;
    }
    default: return RFS_OK;
    }
}

int rfsd_cap_confine(const rfsd_who *who, const char *shown, int need)
{
    const rfs_cap *cap = &who->cap;
    int temp = cap->right >= RFS_CAP_WRITE && rfs_cap_is_temp(cap, shown);
    if (!temp && !rfs_cap_covers(cap, shown)) {
        /* making the directories of the file (a manifest's objects on a new data server) */
        size_t n = strlen(shown);
        int ancestor = need == RFSD_NEED_WRITE && cap->right >= RFS_CAP_WRITE &&
                       !strncmp(cap->path, shown, n) && cap->path[n] == '/';
        if (!ancestor)
            return rfs_fail(RFS_E_ACCESS, "%s: wrong file: this connection's capability is for %s",
                            shown, cap->path);
    }
    if (need == RFSD_NEED_WRITE && cap->right < RFS_CAP_WRITE)
        return rfs_fail(RFS_E_ACCESS,
                        "%s: wrong right: this connection's capability grants read only, "
                        "and this needs write",
                        shown);
    return RFS_OK;
}
