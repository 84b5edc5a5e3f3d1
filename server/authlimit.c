/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Failed-AUTH backoff per source address. A small fixed table (RFSD_AUTH_TABLE entries): an
 * attacker with many addresses can only evict entries, never make the table grow, and a token
 * guessed online needs 2^128 tries anyway; the point is that one address cannot burn the
 * server's CPU on HMACs or flood its log, and that the honest addresses are not slowed. */
#include "authlimit.h"

#include <pthread.h>
#include <string.h>

#include "common/debug.h"
#include "common/clock.h"
#include "peraddr.h"

typedef struct {
    char addr[64]; /* "" : free */
    unsigned failures;
    uint64_t last_ms;  /* time of the last failure */
    uint64_t until_ms; /* no AUTH from this address before this time */
} entry;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static entry table[RFSD_AUTH_TABLE];
static unsigned base_ms = RFSD_AUTH_BACKOFF_MS;

void rfsd_authlimit_init(unsigned backoff_ms)
{
    base_ms = backoff_ms;
}

static uint64_t now_ms(void)
{
    return (uint64_t)rfs_now_ns() / 1000000u;
}

/* The entry of addr, or NULL (caller holds mu). Stale entries count as absent. */
static entry *find(const char *addr, uint64_t now)
{
    RFS_ASSERT_HELD(&mu);
    for (unsigned i = 0; i < RFSD_AUTH_TABLE; i++) {
        entry *e = &table[i];
        if (e->addr[0] && strcmp(e->addr, addr) == 0) {
            if (now - e->last_ms > (uint64_t)RFSD_AUTH_FORGET_S * 1000u) {
                e->addr[0] = '\0';
                return NULL;
            }
            return e;
        }
    }
    return NULL;
}

uint64_t rfsd_authlimit_wait_ms(const char *peer)
{
    char addr[64];
    rfsd_addr_of(peer, addr, sizeof addr);
    pthread_mutex_lock(&mu);
    uint64_t now = now_ms(), wait = 0;
    entry *e = find(addr, now);
    if (e && e->until_ms > now)
        wait = e->until_ms - now;
    pthread_mutex_unlock(&mu);
    return wait;
}

uint64_t rfsd_authlimit_failed(const char *peer, unsigned *failures)
{
    char addr[64];
    rfsd_addr_of(peer, addr, sizeof addr);
    pthread_mutex_lock(&mu);
    uint64_t now = now_ms();
    entry *e = find(addr, now);
    if (!e) {
        /* a free slot, else the one whose last failure is oldest */
        e = &table[0];
        for (unsigned i = 0; i < RFSD_AUTH_TABLE; i++) {
            if (!table[i].addr[0]) {
                e = &table[i];
                break;
            }
            if (table[i].last_ms < e->last_ms)
                e = &table[i];
        }
        memset(e, 0, sizeof *e);
        strcpy(e->addr, addr);
    }
    e->failures++;
    uint64_t delay = e->failures > RFSD_AUTH_FREE ? base_ms : 0;
    for (unsigned i = RFSD_AUTH_FREE + 1;
         delay && i < e->failures && delay < RFSD_AUTH_BACKOFF_MAX_MS; i++)
        delay *= 2;
    if (delay > RFSD_AUTH_BACKOFF_MAX_MS)
        delay = RFSD_AUTH_BACKOFF_MAX_MS;
    e->last_ms = now;
    e->until_ms = now + delay;
    *failures = e->failures;
    pthread_mutex_unlock(&mu);
    return delay;
}

void rfsd_authlimit_ok(const char *peer)
{
    char addr[64];
    rfsd_addr_of(peer, addr, sizeof addr);
    pthread_mutex_lock(&mu);
    entry *e = find(addr, now_ms());
    if (e)
        e->addr[0] = '\0';
    pthread_mutex_unlock(&mu);
}
