/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Compression codecs of the wire (docs/protocol.md, "Compressed payloads"): LZ4 and Zstandard
 * from Debian's liblz4 and libzstd, behind one small interface so client and server agree on
 * what a codec id means. Contexts are kept per thread (a zstd context is megabytes: one per
 * frame would cost more than compressing a small one). The shuffled codecs also keep a
 * scratch buffer per thread, as large as the largest payload the thread handled (at most a
 * frame). */
#ifndef RFS_COMMON_COMPRESS_H
#define RFS_COMMON_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#define RFS_CODEC_LZ4 1u
#define RFS_CODEC_ZSTD 2u
/* The same codecs over the payload byte-shuffled as 8-byte elements (common/shuffle.h). */
#define RFS_CODEC_LZ4_SHUF 3u
#define RFS_CODEC_ZSTD_SHUF 4u
#define RFS_CODEC_LAST 4u
#define RFS_SHUFFLE_ELEM 8u
#define RFS_ZSTD_LEVEL_DEFAULT 1
#define RFS_ZSTD_LEVEL_MAX 19

/* Bytes dst needs to compress n bytes with codec in the worst case (0: unknown codec). */
size_t rfs_codec_bound(unsigned codec, size_t n);
/* Compresses src[0..n) into dst (cap bytes, at least rfs_codec_bound). Returns the compressed
 * size, or 0 when the codec failed or the output would not be smaller than the input (the
 * caller then sends the bytes as they are). level: zstd only. */
size_t rfs_codec_compress(unsigned codec, int level, void *dst, size_t cap, const void *src,
                          size_t n);
/* Decompresses exactly raw_len bytes into dst from src[0..n). Never writes past raw_len; a
 * stream that is corrupt, truncated, or would yield more or fewer bytes is RFS_E_PROTO with a
 * message naming the codec. RFS_E_INVAL for an unknown codec. */
int rfs_codec_decompress(unsigned codec, void *dst, size_t raw_len, const void *src, size_t n);
const char *rfs_codec_name(unsigned codec);
/* 1 when codec is one of the ids above. */
int rfs_codec_known(unsigned codec);

#endif
