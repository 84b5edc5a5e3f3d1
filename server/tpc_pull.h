/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Third-party copy, destination side (docs/protocol.md "Third-party copy"): TPC_PULL makes
 * this server fetch a file from another rfsd, authenticated there by a grant the client got
 * from it, into a hidden temporary file beside the destination, renamed over it once whole
 * (and verified). The pull runs on its own threads, one connection per stream; the client
 * follows it with TPC_STATUS. It belongs to the client's connection: when that connection
 * ends, the pull stops and its temporary file is removed. Outgoing connections are an
 * operator's decision: off unless rfsd runs with --tpc on, and limited to --tpc-allow hosts
 * when that is given (docs/security.md "Third-party copy"). */
#ifndef RFSD_TPC_PULL_H
#define RFSD_TPC_PULL_H

#include "proto/proto.h"

#define RFSD_TPC_MAX_PULLS 16u /* pulls running at once, whole server */
#define RFSD_TPC_MAX_PULLS_PER_CONN 4u

struct rfsd_conn;

int rfsd_tpc_pull_start(struct rfsd_conn *c, const rfs_req *q, rfs_rep *rep);
/* Running: state and bytes; done: state, bytes and crc (the job is then forgotten); failed:
 * the pull's error (the job is then forgotten). */
int rfsd_tpc_pull_status(struct rfsd_conn *c, const rfs_req *q, rfs_rep *rep);
/* The client's connection ends: its pulls stop, their temporaries go. */
void rfsd_tpc_conn_end(struct rfsd_conn *c);
/* 1 if host (as the client named it) may be pulled from under --tpc-allow (NULL: any). */
int rfsd_tpc_host_allowed(const char *allow, const char *host, unsigned port);

#endif
