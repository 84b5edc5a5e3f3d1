/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Third-party copy, the client's part (docs/protocol.md "Third-party copy"): ask the source
 * server for a grant, hand it to the destination server with TPC_PULL, follow the pull with
 * TPC_STATUS. The bytes go from server to server; this client moves only these few frames.
 * Internal to the rfs command (not in librfs.map). */
#ifndef RFS_CLIENT_TPC_H
#define RFS_CLIENT_TPC_H

#include <stdint.h>

#include "proto/proto.h"
#include "rfs/rfs.h"

typedef struct rfs_tpc_grant_info {
    uint8_t id[RFS_TPC_ID_LEN];
    uint8_t key[RFS_TPC_KEY_LEN];
    uint8_t pin[RFS_TPC_PIN_LEN]; /* the source's certificate, when tls */
    int tls;
    uint64_t size; /* the source file's size when granted */
    uint32_t ttl_ms;
} rfs_tpc_grant_info;

/* The HELLO feature bits (RFS_FEAT_*) of the server of name. */
int rfs_tpc_features(const char *name, const rfs_options *opts, unsigned *features);
/* A grant to read the file `src_name` on `uses` connections. RFS_E_UNSUPPORTED when the
 * server does not make grants. */
int rfs_tpc_grant(const char *src_name, const rfs_options *opts, unsigned uses,
                  rfs_tpc_grant_info *out);

typedef struct rfs_tpc_pull rfs_tpc_pull;
/* Has the server of dst_name pull the granted file from src_host:src_port (as this client
 * names it: the destination server must reach it by that name) into dst_name's path.
 * flags: RFS_TPC_EXCL, RFS_TPC_VERIFY, RFS_TPC_SYNC (RFS_TPC_TLS follows the grant). */
int rfs_tpc_pull_begin(const char *dst_name, const rfs_options *opts, const char *src_host,
                       unsigned src_port, const char *src_path, const rfs_tpc_grant_info *g,
                       uint32_t flags, uint32_t mode, unsigned streams, rfs_tpc_pull **out);
/* One status request: *finished 1 once the copy is in place (crc set), else progress. A
 * failed pull returns its error (the destination is untouched). */
int rfs_tpc_pull_poll(rfs_tpc_pull *p, int *finished, uint64_t *done, uint64_t *total,
                      uint32_t *crc);
/* Ends the pull's connection (a pull still running is cancelled by the server). */
void rfs_tpc_pull_end(rfs_tpc_pull *p);

#endif
