/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Invariant checks on arbitrary bytes fed to the frame decoders; shared by the libFuzzer
 * target (fuzz_frame.c) and the bounded garbage loop of the unit tests. */
#ifndef RFS_TEST_FRAME_CHECK_H
#define RFS_TEST_FRAME_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* Treats data as a stream of frames and decodes each as a request and as a reply. Aborts
 * (with a message on stderr) when an invariant breaks:
 *  - decoders return only 0 or the documented error codes;
 *  - every decoded pointer (paths, extents, payload, list entries, message) lies inside
 *    the frame's body;
 *  - a decoded request or reply re-encodes to exactly the bytes it came from.
 * Returns the number of frames that decoded successfully as a request or a reply. */
int rfs_check_frames(const uint8_t *data, size_t size);

#endif
