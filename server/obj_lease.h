/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Leases of a logical file's objects (docs/manifest.md "Leases"; IBP's time-limited
 * allocations, mpiio-logistical-networking.txt sec. 3): OBJ_LEASE records until when an
 * object on this data server is wanted, in --state-dir/object-leases. Objects whose lease
 * lapsed are deleted only with --reclaim-expired (at start, then every minute); without it
 * nothing is ever deleted, so an operator enables reclamation knowingly. Objects that never
 * got a lease are never reclaimed. */
#ifndef RFSD_OBJ_LEASE_H
#define RFSD_OBJ_LEASE_H

#include "proto/proto.h"
#include "server.h"

#define RFSD_OLEASE_MAX 65536u            /* leases kept (objects with one) */
#define RFSD_OLEASE_RECLAIM_S 60u         /* --reclaim-expired: how often to look */
#define RFSD_OLEASE_MAX_BYTES (16u << 20) /* paths kept, in all */

struct rfsd_conn;

/* Loads the table (with --state-dir) and, with --reclaim-expired, reclaims what lapsed and
 * starts the thread that does it every minute. 0, or -1 after a message on stderr. */
int rfsd_olease_init(const rfsd_config *cfg);
/* OBJ_LEASE: rep->u.u64.value is the expiry kept. */
int rfsd_olease_set(struct rfsd_conn *c, const rfs_req *q, rfs_rep *rep);
/* Stops the reclaiming thread (exit). */
void rfsd_olease_stop(void);

#endif
