/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of `rfs put/get --verify`
 * and of the CHECKSUM protocol op (docs/protocol.md). Written here rather than taken from a
 * library: it is small, and the result must be identical on client and server builds. */
#ifndef RFS_COMMON_CRC32C_H
#define RFS_COMMON_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues crc over buf: start with crc = 0; rfs_crc32c(rfs_crc32c(0, a, n), b, m) equals the
 * CRC of a followed by b. rfs_crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t rfs_crc32c(uint32_t crc, const void *buf, size_t len);
/* The table-driven path alone (what a CPU without SSE4.2 runs), for tests and benchmarks. */
uint32_t rfs_crc32c_portable(uint32_t crc, const void *buf, size_t len);

#endif
