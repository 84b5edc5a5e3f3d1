/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Compression of write payloads on their way out (docs/hints.md rfs_compress, docs/protocol.md
 * "Compressed payloads"). A file's stream threads each compress their next frame right before
 * sending it, while the frames sent before it are still on the wire (the socket buffer holds
 * them), so compression runs in a pipeline with sending, on as many threads as the file has
 * streams. The decision itself is common/zauto.h's, per file; this side supplies what the
 * connection knows: the codecs the server takes and the link's rate. */
#ifndef RFS_CLIENT_COMPRESS_PIPE_H
#define RFS_CLIENT_COMPRESS_PIPE_H

#include "common/zauto.h"

typedef struct rfs_conn rfs_conn;

/* Decides how the n payload bytes at src go to connection c and compresses them if so. The
 * compressed bytes live in a buffer of the calling thread, valid until its next call. A NULL z
 * or a server without the codec sends raw. */
void rfs_zpack(rfs_zstate *z, rfs_conn *c, const void *src, size_t n, rfs_packed *out);

/* RFS_STATS=1: one line on stderr at close of a file that compressed anything: frames packed
 * and sent raw, raw and wire bytes, and auto's codec at the end (what auto did, for a user
 * asking why a transfer ran as it did). */
void rfs_zpack_report(rfs_zstate *z, const char *label);

#endif
