/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The revoked serials of this server's capabilities (docs/security.md "Capabilities"), kept
 * in --state-dir/cap-revoked as "SERIAL EXPIRES" lines (hex serial, Unix seconds), sorted in
 * memory for a lookup before every request of a connection authenticated by one of them.
 * Bounded: a revocation is forgotten once its capability has expired (it is refused for that
 * anyway), when the list is read at start and whenever room is needed. */
#ifndef RFSD_CAP_REVOKED_H
#define RFSD_CAP_REVOKED_H

#include <stdint.h>

#define RFSD_CAP_MAX_REVOKED 65536u /* unexpired revocations kept */

/* Reads the list of state_dir (NULL: none is kept, every revocation is refused). 0, or -1
 * after a message on stderr. */
int rfsd_revoked_init(const char *state_dir, uint64_t now);
unsigned rfsd_revoked_count(void);
int rfsd_revoked_has(uint64_t serial);
/* Records serial, whose capability expires at `expires`, on disk before it counts. RFS_OK
 * (also when it was there), RFS_E_NOSPC, RFS_E_IO, or RFS_E_UNSUPPORTED without a state dir,
 * each with a message. */
int rfsd_revoked_add(uint64_t serial, uint64_t expires, uint64_t now);
void rfsd_revoked_clear(void);

#endif
