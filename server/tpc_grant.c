/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Grants of third-party copy (tpc_grant.h). */
#include "tpc_grant.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "conn.h"
#include "exports.h"

typedef struct grant {
    int live;
    uint8_t id[RFS_TPC_ID_LEN];
    uint8_t key[RFS_TPC_KEY_LEN];
    int64_t expires_ns, made_ns;
    unsigned uses;
    unsigned ttl_ms;
    uint64_t rmask; /* the export the path lies in */
    char grantor[RFSD_IDENT_NAME_MAX + 1];
    char path[RFS_MAX_PATH + 1];
} grant;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static grant table[RFSD_TPC_MAX_GRANTS];

static void forget(grant *g)
{
    explicit_bzero(g, sizeof *g);
}

/* A free slot: an unused one, else an expired one, else the oldest grant's (a flood of grants
 * cannot grow memory; a client whose grant was pushed out gets a clear refusal at TPC_AUTH). */
static grant *slot_for_new(int64_t now)
{
    grant *oldest = &table[0];
    for (unsigned i = 0; i < RFSD_TPC_MAX_GRANTS; i++) {
        grant *g = &table[i];
        if (!g->live || g->expires_ns <= now)
            return g;
        if (g->made_ns < oldest->made_ns)
            oldest = g;
    }
    RFS_LOGI("tpc: grant table full (%u): the oldest grant, for %s, is dropped",
             RFSD_TPC_MAX_GRANTS, oldest->path);
    return oldest;
}

int rfsd_tpc_grant(rfsd_conn *c, const rfs_req *q, rfs_rep *rep)
{
    if (c->who.granted)
        return rfs_fail(RFS_E_ACCESS, "TPC_GRANT: a connection authenticated by a grant cannot "
                                      "make grants");
    rfsd_path p;
    const rfsd_export *ex;
    int rc = rfsd_resolve(c, &q->u.tpc_grant.path, RFSD_NEED_READ, 0, &p, &ex);
    if (rc)
        return rc;
    int fd;
    struct stat st;
    if ((rc = rfsd_be_open(ex->root_fd, &p, RFS_O_RDONLY, 0, &fd, &st)))
        return rc;
    close(fd);
    unsigned ttl =
        c->srv->cfg.tpc_grant_ttl_ms ? c->srv->cfg.tpc_grant_ttl_ms : RFSD_TPC_GRANT_TTL_MS;
    int64_t now = rfs_now_ns();
    pthread_mutex_lock(&mu);
    grant *g = slot_for_new(now);
    forget(g);
    if (rfs_auth_random(g->id, sizeof g->id) || rfs_auth_random(g->key, sizeof g->key)) {
        forget(g);
        pthread_mutex_unlock(&mu);
        return rfs_fail(RFS_E_IO, "TPC_GRANT: no randomness for the grant");
    }
    g->live = 1;
    g->made_ns = now;
    g->expires_ns = now + (int64_t)ttl * 1000000;
    g->uses = q->u.tpc_grant.uses;
    g->ttl_ms = ttl;
    g->rmask = (uint64_t)1 << ex->index;
    snprintf(g->grantor, sizeof g->grantor, "%s", c->who.name);
    snprintf(g->path, sizeof g->path, "%s", p.shown);
    memcpy(rep->u.tpc_grant.id, g->id, RFS_TPC_ID_LEN);
    memcpy(rep->u.tpc_grant.key, g->key, RFS_TPC_KEY_LEN);
    pthread_mutex_unlock(&mu);
    rep->u.tpc_grant.ttl_ms = ttl;
    rep->u.tpc_grant.size = (uint64_t)st.st_size;
    RFS_LOGD("%s: tpc grant for %s (%u uses) to %s", c->peer, p.shown, q->u.tpc_grant.uses,
             c->who.name);
    return RFS_OK;
}

int rfsd_tpc_auth(const uint8_t *server_nonce, const rfs_req *q, rfsd_who *who,
                  uint8_t server_mac[RFS_MAC_LEN])
{
    int64_t now = rfs_now_ns();
    pthread_mutex_lock(&mu);
    grant *g = NULL;
    for (unsigned i = 0; i < RFSD_TPC_MAX_GRANTS && !g; i++)
        if (table[i].live && !memcmp(table[i].id, q->u.tpc_auth.id, RFS_TPC_ID_LEN))
            g = &table[i];
    if (!g) {
        pthread_mutex_unlock(&mu);
        return rfs_fail(RFS_E_AUTH, "third-party copy grant unknown here: never made, already "
                                    "used up, or dropped (grants are kept in memory only)");
    }
    if (g->expires_ns <= now) {
        unsigned ttl = g->ttl_ms;
        forget(g);
        pthread_mutex_unlock(&mu);
        return rfs_fail(RFS_E_AUTH,
                        "third-party copy grant expired (grants last %u ms from "
                        "their making; rfsd --tpc-grant-ttl-ms)",
                        ttl);
    }
    uint8_t want[RFS_MAC_LEN];
    rfs_auth_client_mac((const char *)g->key, RFS_TPC_KEY_LEN, server_nonce,
                        q->u.tpc_auth.client_nonce, want);
    if (!rfs_auth_equal(want, q->u.tpc_auth.mac, RFS_MAC_LEN)) {
        /* a wrong key burns the grant: a guesser gets one try, the honest pull fails loudly */
        forget(g);
        pthread_mutex_unlock(&mu);
        return rfs_fail(RFS_E_AUTH, "third-party copy grant refused: wrong key (the grant is "
                                    "now revoked)");
    }
    rfs_auth_server_mac((const char *)g->key, RFS_TPC_KEY_LEN, server_nonce,
                        q->u.tpc_auth.client_nonce, server_mac);
    memset(who, 0, sizeof *who);
    snprintf(who->name, sizeof who->name, "tpc:%.59s", g->grantor);
    who->rmask = g->rmask;
    who->wmask = 0;
    who->granted = 1;
    snprintf(who->grant_path, sizeof who->grant_path, "%s", g->path);
    if (--g->uses == 0)
        forget(g);
    pthread_mutex_unlock(&mu);
    return RFS_OK;
}

void rfsd_tpc_grants_clear(void)
{
    pthread_mutex_lock(&mu);
    for (unsigned i = 0; i < RFSD_TPC_MAX_GRANTS; i++)
        forget(&table[i]);
    pthread_mutex_unlock(&mu);
}
