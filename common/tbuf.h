/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Buffers owned by the calling thread, grown on demand and freed when the thread ends: for
 * work that needs a frame-sized buffer on every call (compressing, unshuffling) and must not
 * pay an allocation each time. Each slot is a separate buffer, so a caller holding one slot's
 * buffer can use another's. */
#ifndef RFS_COMMON_TBUF_H
#define RFS_COMMON_TBUF_H

#include <stddef.h>
#include <stdint.h>

enum rfs_tbuf_slot {
    RFS_TBUF_PACKED,  /* zauto.c: a frame's compressed bytes, until the thread's next pack */
    RFS_TBUF_SHUFFLE, /* compress.c: the shuffled bytes inside one codec call */
    RFS_TBUF_SLOTS
};

/* The calling thread's buffer of slot, at least need bytes; NULL when out of memory (the
 * buffer it had stays). Valid until the thread's next call for the same slot. */
uint8_t *rfs_tbuf(enum rfs_tbuf_slot slot, size_t need);

#endif
