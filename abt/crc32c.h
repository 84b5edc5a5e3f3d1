/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as used by iSCSI and ext4: detects
 * every burst error up to 32 bits and has better Hamming distance than zlib's CRC-32 at journal
 * record sizes. crc32c("123456789") = 0xE3069283. */
#ifndef RFS_ABT_CRC32C_H
#define RFS_ABT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues crc over n bytes at p; start with crc = 0. */
uint32_t rfs_crc32c(uint32_t crc, const void *p, size_t n);

#endif
