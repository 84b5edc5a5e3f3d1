/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Per-address counters (peraddr.h). A fixed table of RFSD_MAX_CONNS entries: every entry in
 * use is held by at least one live connection, and there are never more live connections than
 * that, so a connection always finds an entry. Open/close only touch the counters of an entry
 * the connection already holds. */
#include "peraddr.h"

#include <pthread.h>
#include <string.h>

#include "server.h"

struct rfsd_addr {
    char name[64]; /* "" : free */
    unsigned conns;
    unsigned streams; /* of conns, those admitted as additional streams */
    unsigned handles;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static rfsd_addr table[RFSD_MAX_CONNS];

void rfsd_addr_of(const char *peer, char *out, unsigned long cap)
{
    const char *colon = strrchr(peer, ':');
    size_t n = colon ? (size_t)(colon - peer) : strlen(peer);
    if (n >= 2 && peer[0] == '[' && peer[n - 1] == ']') {
        peer++;
        n -= 2;
    }
    if (n >= cap)
        n = cap - 1;
    memcpy(out, peer, n);
    out[n] = '\0';
}

rfsd_addr *rfsd_addr_connect(const char *peer, unsigned max, unsigned *count)
{
    char name[64];
    rfsd_addr_of(peer, name, sizeof name);
    pthread_mutex_lock(&mu);
    rfsd_addr *a = NULL, *free_slot = NULL;
    for (unsigned i = 0; i < RFSD_MAX_CONNS && !a; i++) {
        if (!table[i].name[0]) {
            if (!free_slot)
                free_slot = &table[i];
        } else if (strcmp(table[i].name, name) == 0) {
            a = &table[i];
        }
    }
    if (!a && free_slot) {
        a = free_slot;
        memset(a, 0, sizeof *a);
        strcpy(a->name, name);
    }
    *count = a ? a->conns : 0;
    if (a && a->conns >= max)
        a = NULL;
    else if (a)
        a->conns++;
    pthread_mutex_unlock(&mu);
    return a;
}

void rfsd_addr_disconnect(rfsd_addr *a)
{
    pthread_mutex_lock(&mu);
    if (--a->conns == 0)
        a->name[0] = '\0';
    pthread_mutex_unlock(&mu);
}

int rfsd_addr_open(rfsd_addr *a, unsigned max)
{
    pthread_mutex_lock(&mu);
    int ok = a->handles < max;
    if (ok)
        a->handles++;
    pthread_mutex_unlock(&mu);
    return ok;
}

void rfsd_addr_close(rfsd_addr *a)
{
    pthread_mutex_lock(&mu);
    a->handles--;
    pthread_mutex_unlock(&mu);
}

unsigned rfsd_stream_share(unsigned max_stream_conns, unsigned max_conns)
{
    /* Additional streams only speed up a client that already works; first connections are
     * what other clients (more ranks, another user behind the same NAT) need to work at all,
     * so the streams may never take more than this share of the address's connections: the
     * rest stays for first connections whatever the streams do. */
    unsigned share = max_stream_conns ? max_stream_conns : max_conns / 2;
    return share ? share : 1;
}

int rfsd_addr_take_stream(rfsd_addr *a, unsigned max, unsigned *count)
{
    pthread_mutex_lock(&mu);
    *count = a->streams;
    int ok = a->streams < max;
    if (ok)
        a->streams++;
    pthread_mutex_unlock(&mu);
    return ok;
}

void rfsd_addr_drop_stream(rfsd_addr *a)
{
    pthread_mutex_lock(&mu);
    a->streams--;
    pthread_mutex_unlock(&mu);
}

const char *rfsd_addr_name(const rfsd_addr *a)
{
    return a->name;
}
