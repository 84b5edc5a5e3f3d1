/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Rate limit of failed AUTH attempts per source address (docs/security.md): after
 * RFSD_AUTH_FREE failures an address must wait an exponentially growing delay before each new
 * attempt (its HELLO is answered RFS_E_AUTH "retry in N ms"); other addresses are never slowed. */
#ifndef RFSD_AUTHLIMIT_H
#define RFSD_AUTHLIMIT_H

#include <stdint.h>

#define RFSD_AUTH_FREE 3u /* failures an address may make without delay (typos) */
#define RFSD_AUTH_BACKOFF_MS \
    1000u                                /* delay after the first failure beyond those
                                            (--auth-backoff-ms) */
#define RFSD_AUTH_BACKOFF_MAX_MS 300000u /* the delay doubles per failure up to this */
#define RFSD_AUTH_FORGET_S 600u          /* failures are forgotten after this long without one */
#define RFSD_AUTH_TABLE 1024u            /* addresses remembered (oldest forgotten first) */

void rfsd_authlimit_init(unsigned backoff_ms);
/* peer: "ADDR:PORT" or "[ADDR]:PORT"; only the address counts. 0 if the address may try to
 * authenticate now, else the milliseconds it must still wait. */
uint64_t rfsd_authlimit_wait_ms(const char *peer);
/* Records a failure and returns the delay now imposed on the address (ms); *failures gets the
 * count of recent failures. */
uint64_t rfsd_authlimit_failed(const char *peer, unsigned *failures);
/* A success forgets the address's failures. */
void rfsd_authlimit_ok(const char *peer);

#endif
