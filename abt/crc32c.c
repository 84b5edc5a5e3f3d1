/* Slice-by-8 CRC-32C: eight 256-entry tables let the loop fold 8 input bytes per step, ~1 byte
 * per cycle, so checksumming staged data costs little next to writing it to disk. */
#include "abt/crc32c.h"

#include <pthread.h>
#include <string.h>

#define CRC32C_POLY 0x82F63B78u

static uint32_t tab[8][256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static void tab_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? CRC32C_POLY ^ (c >> 1) : c >> 1;
        tab[0][i] = c;
    }
    /* tab[s][i]: the CRC of byte i followed by s zero bytes. */
    for (uint32_t i = 0; i < 256; i++)
        for (int s = 1; s < 8; s++)
            tab[s][i] = (tab[s - 1][i] >> 8) ^ tab[0][tab[s - 1][i] & 0xFFu];
}

static uint32_t le32(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

uint32_t rfs_crc32c(uint32_t crc, const void *p, size_t n)
{
    pthread_once(&tab_once, tab_init);
    const uint8_t *b = p;
    crc = ~crc;
    while (n >= 8) {
        uint32_t lo = le32(b) ^ crc, hi = le32(b + 4);
        crc = tab[7][lo & 0xFFu] ^ tab[6][(lo >> 8) & 0xFFu] ^ tab[5][(lo >> 16) & 0xFFu] ^
              tab[4][lo >> 24] ^ tab[3][hi & 0xFFu] ^ tab[2][(hi >> 8) & 0xFFu] ^
              tab[1][(hi >> 16) & 0xFFu] ^ tab[0][hi >> 24];
        b += 8;
        n -= 8;
    }
    while (n--)
        crc = tab[0][(crc ^ *b++) & 0xFFu] ^ (crc >> 8);
    return ~crc;
}
