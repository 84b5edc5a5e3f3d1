/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Byte shuffle (docs/protocol.md "Compressed payloads", codecs lz4+shuffle and zstd+shuffle):
 * the n bytes seen as elements of `elem` bytes are regrouped by byte position, all first bytes,
 * then all second bytes, and so on. Arrays of doubles whose neighbours differ little (the
 * fields a simulation writes) then show long runs in the sign/exponent and high mantissa
 * planes: LZ4 compresses them better and both codecs several times faster. The n % elem
 * trailing bytes stay where they are. */
#ifndef RFS_COMMON_SHUFFLE_H
#define RFS_COMMON_SHUFFLE_H

#include <stddef.h>
#include <stdint.h>

void rfs_shuffle(uint8_t *dst, const uint8_t *src, size_t n, unsigned elem);
void rfs_unshuffle(uint8_t *dst, const uint8_t *src, size_t n, unsigned elem);

#endif
