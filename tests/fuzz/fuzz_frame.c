/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer entry: arbitrary bytes go through rfs_hdr_decode, rfs_req_decode, rfs_rep_decode
 * and LIST entry iteration; frame_check.c aborts when an invariant breaks (pointer outside the
 * body, undocumented error code, decoded frame that does not re-encode to its own bytes). */
#include "frame_check.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rfs_check_frames(data, size);
    return 0;
}
