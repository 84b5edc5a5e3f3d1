/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer entry: arbitrary bytes through the manifest decoder (manifest/format.c), as they
 * are and with their length field and CRC made to match (so that mutations reach the checks
 * behind the checksum); manifest_check.c aborts when an invariant breaks. */
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "manifest/manifest.h"
#include "manifest_check.h"

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rfsm_check_bytes(data, size);
    if (size < RFSM_HEADER_LEN + RFSM_TRAILER_LEN || size > RFSM_MAX_BYTES)
        return 0;
    uint8_t *b = malloc(size);
    if (!b)
        return 0;
    memcpy(b, data, size);
    put32(b + 8, (uint32_t)size);
    put32(b + size - RFSM_TRAILER_LEN, rfs_crc32c(0, b, size - RFSM_TRAILER_LEN));
    rfsm_check_bytes(b, size);
    free(b);
    return 0;
}
