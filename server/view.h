/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* File views kept per handle (SET_VIEW): a decoded, flattened filetype and a displacement.
 * VIEW_READ / VIEW_WRITE map a range of the view's data stream to file runs (rfs_flat_map)
 * and do the list I/O with packed data. Built without dtype/, every call is RFS_E_UNSUPPORTED. */
#ifndef RFSD_VIEW_H
#define RFSD_VIEW_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

/* A handle keeps this many decoded views: the client reuses ids as slots, so memory stays
 * bounded however often an application sets views. */
#define RFSD_MAX_VIEWS RFS_MAX_VIEWS

struct rfs_flat;

typedef struct rfsd_view {
    struct rfs_flat *flat; /* NULL: view not set */
    uint64_t disp;
    uint64_t bytes; /* memory the flattened view holds, charged to *acct */
    _Atomic uint64_t *acct;
} rfsd_view;

/* Decodes and flattens the filetype into slot v. The flattened view's memory is charged to
 * *acct (the connection's view bytes) and may not take it past limit: flattening stops at the
 * runs the remaining budget can hold, and the error names the limit (RFS_E_TOOBIG). */
int rfsd_view_set(rfsd_view *v, uint64_t disp, const uint8_t *enc, size_t len, const char *shown,
                  _Atomic uint64_t *acct, uint64_t limit);
/* Reads up to len bytes of the stream from pos; short only at end of file. */
int rfsd_view_read(const rfsd_view *v, int fd, const char *shown, uint64_t pos, void *buf,
                   size_t len, size_t *done);
int rfsd_view_write(const rfsd_view *v, int fd, const char *shown, uint64_t pos, const void *buf,
                    size_t len);
void rfsd_view_clear(rfsd_view *v);
/* The file offset just past the last byte a write of len bytes at stream position pos would
 * touch (0 for len 0), mapping the view without any I/O (quota checks before a VIEW_WRITE). */
int rfsd_view_end(const rfsd_view *v, uint64_t pos, size_t len, uint64_t *end);
/* Long view work (flattening, mapping) stops with RFS_E_BUSY once *flag is non-zero: rfsd
 * points it at its shutdown flag so SIGTERM is not held up by a hostile datatype. */
void rfsd_views_set_cancel(const atomic_int *flag);
/* 1 if this build serves views (announced in the HELLO reply's features). */
int rfsd_views_built(void);

#endif
