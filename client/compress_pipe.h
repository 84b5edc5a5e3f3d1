/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Compression of write payloads on their way out (docs/hints.md rfs_compress, docs/protocol.md
 * "Compressed payloads"). A file's stream threads each compress their next frame right before
 * sending it, while the frames sent before it are still on the wire (the socket buffer holds
 * them), so compression runs in a pipeline with sending, on as many threads as the file has
 * streams. In auto mode a per-file state decides from measured ratios, speeds and the link's
 * rate, by SEMPLAR's condition T_comp + T_comp_xmit + T_decomp < T_uncomp_xmit. */
#ifndef RFS_CLIENT_COMPRESS_PIPE_H
#define RFS_CLIENT_COMPRESS_PIPE_H

#include <stddef.h>
#include <stdint.h>

#define RFS_Z_NONE 0u
#define RFS_Z_LZ4 1u     /* = RFS_CODEC_LZ4 */
#define RFS_Z_ZSTD 2u    /* = RFS_CODEC_ZSTD */
#define RFS_Z_AUTO 3u

typedef struct rfs_conn rfs_conn;
typedef struct rfs_zstate rfs_zstate;

/* A payload as it goes out: codec 0 means the raw bytes (data, len) unchanged. */
typedef struct rfs_packed {
    unsigned codec;
    const void *data;
    uint32_t len;
} rfs_packed;

/* "none", "lz4", "zstd", "zstd:LEVEL" (1..19), "auto"; RFS_E_INVAL with a message otherwise. */
int rfs_zmode_parse(const char *s, unsigned *mode, int *level);
/* The mode as the hint spells it ("zstd:3"), for MPI_File_get_info and messages. */
void rfs_zmode_name(unsigned mode, int level, char *buf, size_t cap);

rfs_zstate *rfs_zstate_new(unsigned mode, int level);
void rfs_zstate_free(rfs_zstate *z);

/* Decides how the n payload bytes at src go to connection c and compresses them if so. The
 * compressed bytes live in a buffer of the calling thread, valid until its next call. A NULL z
 * or a server without the codec sends raw. */
void rfs_zpack(rfs_zstate *z, rfs_conn *c, const void *src, size_t n, rfs_packed *out);

/* What auto mode did, for tests and benchmarks: frames compressed and sent raw, raw and wire
 * bytes of the compressed ones, and the current choice (0 none, else the codec). */
typedef struct rfs_zstats {
    uint64_t packed, raw, raw_bytes, wire_bytes;
    unsigned choice;
    double link_bps;
} rfs_zstats;
void rfs_zstate_stats(rfs_zstate *z, rfs_zstats *out);

#endif
