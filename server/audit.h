/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The audit log (docs/operations.md "Audit log"): one line per authentication, open (OPEN,
 * WRITE_FILE, READ_FILE), delete, rename, mkdir and chmod, with the time, identity, peer, op,
 * path(s) and result. Data ops are never logged: the data path pays nothing. */
#ifndef RFSD_AUDIT_H
#define RFSD_AUDIT_H

#include "proto/proto.h"
#include "server.h"

struct rfsd_conn;

/* --audit-log FILE (appended to, created 0600) or --audit (the log). 0, or -1 after a message
 * on stderr. */
int rfsd_audit_start(const rfsd_config *cfg);
/* SIGHUP: the file is opened again (after log rotation moved it). */
void rfsd_audit_reopen(void);
/* After a request ran (rc its result, rfs_last_error() its message): a line if the op is one
 * the log records. */
void rfsd_audit_request(const struct rfsd_conn *c, const rfs_req *q, int rc);
/* An AUTH: identity NULL when no token matched. */
void rfsd_audit_auth(const char *peer, const char *identity);
void rfsd_audit_stop(void);

#endif
