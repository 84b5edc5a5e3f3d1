/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* CRC-32C. On x86-64 with SSE4.2 the crc32 instruction does 8 bytes per step; three
 * independent lanes over thirds of each 3 KiB block hide its 3-cycle latency, and the lanes
 * are joined by shifting with precomputed tables (zeros appended to a CRC are a linear map).
 * Elsewhere, slicing by 8: eight table lookups per 8 input bytes. Every data frame of the wire
 * protocol is checksummed (docs/protocol.md), so this runs over all bytes moved; rfsd also
 * checksums up to 1 GiB per CHECKSUM request. Tables are built once, on first use. */
#include "common/crc32c.h"

#include <pthread.h>
#include <string.h>

#define CRC32C_POLY 0x82F63B78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1u) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFFu];
}

static uint32_t crc_slice8(uint32_t c, const uint8_t *p, size_t len)
{
    while (len >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24);
        c = table[7][lo & 0xFFu] ^ table[6][(lo >> 8) & 0xFFu] ^ table[5][(lo >> 16) & 0xFFu] ^
            table[4][lo >> 24] ^ table[3][p[4]] ^ table[2][p[5]] ^ table[1][p[6]] ^ table[0][p[7]];
        p += 8;
        len -= 8;
    }
    while (len--)
        c = (c >> 8) ^ table[0][(c ^ *p++) & 0xFFu];
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HW_LANE 1024u /* bytes per lane per block */

/* shift[k][b]: the register after LANE zero bytes, for byte k of the register being b. */
static uint32_t shift_tab[4][256];
static int hw_ok;

static uint32_t shift_zeros(uint32_t c, size_t n)
{
    while (n--)
        c = (c >> 8) ^ table[0][c & 0xFFu];
    return c;
}

static void build_hw(void)
{
    build_tables();
    __builtin_cpu_init();
    hw_ok = __builtin_cpu_supports("sse4.2");
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++)
            shift_tab[k][b] = shift_zeros(b << (8 * k), HW_LANE);
}

static uint32_t shift_lane(uint32_t c)
{
    return shift_tab[0][c & 0xFFu] ^ shift_tab[1][(c >> 8) & 0xFFu] ^
           shift_tab[2][(c >> 16) & 0xFFu] ^ shift_tab[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t len)
{
    while (len && ((uintptr_t)p & 7u)) {
        c = __builtin_ia32_crc32qi(c, *p++);
        len--;
    }
    uint64_t c0 = c;
    while (len >= 3 * HW_LANE) {
        uint64_t c1 = 0, c2 = 0;
        for (size_t i = 0; i < HW_LANE; i += 8) {
            uint64_t a, b, d;
            memcpy(&a, p + i, 8);
            memcpy(&b, p + HW_LANE + i, 8);
            memcpy(&d, p + 2 * HW_LANE + i, 8);
            c0 = __builtin_ia32_crc32di(c0, a);
            c1 = __builtin_ia32_crc32di(c1, b);
            c2 = __builtin_ia32_crc32di(c2, d);
        }
        /* lane 0 is followed by 2 lanes, lane 1 by one: shift them over those bytes */
        c0 = shift_lane(shift_lane((uint32_t)c0) ^ (uint32_t)c1) ^ (uint32_t)c2;
        p += 3 * HW_LANE;
        len -= 3 * HW_LANE;
    }
    while (len >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        c0 = __builtin_ia32_crc32di(c0, a);
        p += 8;
        len -= 8;
    }
    c = (uint32_t)c0;
    while (len--)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}

static void init(void)
{
    build_hw();
}

uint32_t rfs_crc32c(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&table_once, init);
    uint32_t c = ~crc;
    c = hw_ok ? crc_hw(c, buf, len) : crc_slice8(c, buf, len);
    return ~c;
}
#else
static void init(void)
{
    build_tables();
}

uint32_t rfs_crc32c(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&table_once, init);
    return ~crc_slice8(~crc, buf, len);
}
#endif

/* Exposed for the unit test: the portable path must agree with the hardware one. */
uint32_t rfs_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&table_once, init);
    return ~crc_slice8(~crc, buf, len);
}
