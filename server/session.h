/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Sessions, leases and fencing of stale connections (session.c, docs/reliability.md). */
#ifndef RFSD_SESSION_H
#define RFSD_SESSION_H

#include "conn.h"

/* How long a SESSION that fences waits for the old connection's requests in flight to end. */
#define RFSD_FENCE_WAIT_MS 30000

/* Records that a frame (or part of one) arrived on c: its lease starts again. */
void rfsd_session_heard(rfsd_conn *c);
/* Reads the host's boot id (all zero when unknown). */
void rfsd_boot_id(uint8_t out[RFS_SESSION_LEN]);
/* Handles a SESSION request on the reader thread (it may wait for a fenced connection to end).
 * Returns 0 to go on reading. */
int rfsd_session_request(rfsd_conn *c, const rfs_req *req);
/* Before an open for writing: waits while another connection that has fid open for writing has
 * been silent for more than half the lease (bounded by the lease). */
void rfsd_session_wait_silent_writers(rfsd_conn *c, const rfsd_fileid *fid, const char *path);

#endif
