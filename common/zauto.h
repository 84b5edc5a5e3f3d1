/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Whether and how to compress a payload on its way out (docs/hints.md rfs_compress, docs/protocol.md
 * "Compressed payloads"): a fixed codec, or auto, which decides from measured ratios and speeds
 * and the link's rate by SEMPLAR's condition T_comp + T_comp_xmit + T_decomp < T_uncomp_xmit.
 * One state per file: the client's writes (client/compress_pipe.h) and rfsd's read replies
 * (server/zreply.c) use the same decision. */
#ifndef RFS_COMMON_ZAUTO_H
#define RFS_COMMON_ZAUTO_H

#include "common/compress.h"

#include <stddef.h>
#include <stdint.h>

#define RFS_Z_NONE 0u
#define RFS_Z_LZ4 1u       /* = RFS_CODEC_LZ4 (a fixed codec's mode is its codec id) */
#define RFS_Z_ZSTD 2u      /* = RFS_CODEC_ZSTD */
#define RFS_Z_LZ4_SHUF 3u  /* = RFS_CODEC_LZ4_SHUF */
#define RFS_Z_ZSTD_SHUF 4u /* = RFS_CODEC_ZSTD_SHUF */
#define RFS_Z_AUTO 15u

typedef struct rfs_zstate rfs_zstate;

/* A payload as it goes out: codec 0 means the raw bytes (data, len) unchanged. */
typedef struct rfs_packed {
    unsigned codec;
    const void *data;
    uint32_t len;
} rfs_packed;

/* "none", "lz4", "zstd", "zstd:LEVEL" (1..19), either codec followed by "+shuffle"
 * ("zstd:3+shuffle"), "auto"; RFS_E_INVAL with a message otherwise. */
int rfs_zmode_parse(const char *s, unsigned *mode, int *level);
/* 1 when rfs_zmode_parse takes s; leaves no error behind (for checking a hint or option). */
int rfs_zmode_valid(const char *s);
/* The mode as the hint spells it ("zstd:3"), for MPI_File_get_info and messages. */
void rfs_zmode_name(unsigned mode, int level, char *buf, size_t cap);

rfs_zstate *rfs_zstate_new(unsigned mode, int level);
void rfs_zstate_free(rfs_zstate *z);

/* Decides how the n payload bytes at src go out and compresses them if so. offered: bit k set
 * when the receiver takes codec k; B: the link's rate in bytes/s (0: unknown, then raw in auto
 * mode). A fixed shuffled codec the receiver does not take goes out as its plain codec. The
 * compressed bytes live in a buffer of the calling thread, valid until its next
 * call. A NULL z sends raw. */
void rfs_zstate_pack(rfs_zstate *z, unsigned offered, double B, const void *src, size_t n,
                     rfs_packed *out);
/* Auto mode only: 1 when packing n more bytes would look at them (the codec is on, or a sample
 * is due); 0 when they would go raw unseen, so a sender that can move them without reading
 * them (sendfile) may, after telling rfs_zstate_skip. A fixed codec: always 1. */
int rfs_zstate_wants(rfs_zstate *z, size_t n);
/* n bytes went out raw without rfs_zstate_pack (after rfs_zstate_wants said 0). */
void rfs_zstate_skip(rfs_zstate *z, size_t n);

/* Auto's estimates for one codec, from samples and the frames it compressed. */
typedef struct rfs_zest {
    int known;
    double ratio;  /* raw / compressed */
    double cspeed; /* raw bytes per second */
    double dspeed; /* 0: not measured */
} rfs_zest;
/* Auto's choice (0 raw, else a codec id) for a link (or a connection's share of it) of B bytes/s
 * given the estimates by codec id, the codecs the receiver takes and the current choice: the
 * codec whose pipeline carries the most raw bytes (its slowest stage: compression, the link at
 * its ratio, decompression), if that beats raw, with a 10% gain needed to change the choice.
 * The decision of rfs_zstate_pack, apart for tests. */
unsigned rfs_zauto_pick(const rfs_zest e[RFS_CODEC_LAST + 1], unsigned offered, unsigned current,
                        double B);

/* What auto mode did, for tests and benchmarks: frames compressed and sent raw, raw and wire
 * bytes of the compressed ones, and the current choice (0 none, else the codec). */
typedef struct rfs_zstats {
    uint64_t packed, raw, raw_bytes, wire_bytes;
    unsigned choice;
    double link_bps;
} rfs_zstats;
void rfs_zstate_stats(rfs_zstate *z, rfs_zstats *out);

#endif
