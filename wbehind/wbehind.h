/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Two-stage write-behind (mpiio-caching-write-behind.txt, "two-stage write-behind") as a
 * stacked rfs_io layer; docs/design.md "Write-behind" says where it sits and why.
 *
 * The file is cut into pages of page_size bytes aligned at 0; page i belongs to rank
 * i mod nranks of the group of processes that share this node's memory. A write is cut at page
 * boundaries and each piece appended to this rank's local sub-buffer for the page's owner
 * (stage one). A full sub-buffer is posted into a mailbox in shared memory; the owner's
 * background thread copies its pieces into its pages (stage two) and hands a page to its
 * sender thread, which writes it to the layer below, as soon as it is full, when the owner's
 * pages exceed max_memory (least recently used first), or when a rank whose data it holds
 * asks for a flush (flush, sync, barrier, size queries, reads, close). A flush returns once the owners have written and the server has
 * answered this rank's bytes (a collective close's flush: once they are sent, see
 * rfs_wb_flush_closing); a failure of an owner's write is handed to every rank whose
 * bytes the failed page held and reported by that rank's next flush (sync, close).
 *
 * The exchange between ranks uses only the shared segments and futexes: no MPI here, so it
 * works in MPI_THREAD_SINGLE programs. The caller (mpiio/wb.c) allocates the segments with
 * MPI in the application's thread. A rank that dies is noticed by its peers from its pid: bytes
 * they had posted and it had not taken are written by the posting rank itself; bytes it had
 * taken make the posting rank's next flush fail (RFS_E_IO naming the rank).
 */
#ifndef RFS_WBEHIND_H
#define RFS_WBEHIND_H

#include <stddef.h>
#include <stdint.h>

#include "rfs/rfs_io.h"

#define RFS_WB_DEFAULT_PAGE (1ull << 20)
#define RFS_WB_DEFAULT_BUFFER (256ull << 10)
#define RFS_WB_DEFAULT_MEMORY (32ull << 20)
#define RFS_WB_MIN_UNIT 4096ull

typedef struct rfs_wb_config {
    int rank, nranks;       /* this process and the group sharing the segments */
    void *const *segments;  /* nranks segments of rfs_wb_segment_size() bytes, each zeroed by
                             * its rank before any rank wraps; segments[r] is rank r's */
    uint64_t page_size;     /* the unit of the owners' writes (hint rfs_wb_page_size) */
    uint64_t buffer_size;   /* one sub-buffer (hint rfs_wb_buffer_size); same on every rank */
    uint64_t max_memory;    /* cap on the bytes of pages one owner holds (rfs_wb_max_memory) */
    int automatic;          /* 1: writes go straight below until the first one shorter than a
                             * page (rfs_write_behind=auto) */
    int timeout_ms;         /* bound on a wait for a live peer (rfs_io_timeout_ms); 0: none */
    struct rfs_runtime *rt; /* whose worker runs the owner thread; NULL: the default */
    const char *stats_name; /* non-NULL: close prints one line of stats naming the file */
} rfs_wb_config;

/* Bytes of one rank's shared segment for a group of nranks and this sub-buffer size. */
size_t rfs_wb_segment_size(int nranks, uint64_t buffer_size);

/* Stacks write-behind over `below` (takes ownership) and starts this rank's owner thread. */
int rfs_wb_wrap(rfs_io *below, const rfs_wb_config *c, rfs_io **out);

/* io must come from rfs_wb_wrap. */
/* This rank's buffered bytes reach the server (as the flush op with report 0): failures stay
 * for the next sync/flush/close. For close, before the ranks meet and detach. */
void rfs_wb_flush_mine(rfs_io *io);
/* rfs_wb_flush_mine for a collective close, one round trip shorter: the owners answer it once
 * this rank's bytes are sent below, not answered there (nor are this rank's own writes below
 * waited for), and each owner's close (the layer's close op) collects those answers while its
 * CLOSE travels behind them (client/file.c). An owner whose close fails hands the failure to
 * every rank whose bytes it had sent since its last confirmed flush. So the caller keeps the
 * segments mapped until every rank of the group has closed, then asks rfs_wb_closing_error.
 * After it only detach and close. An owner that dies between its answer and its close hands
 * nothing on (its pages were sent; a refusal of them is not heard): MPI's process managers
 * end the whole job when a rank dies, so MPI_File_close never returns there. */
void rfs_wb_flush_closing(rfs_io *io);
/* After every rank of the group closed following rfs_wb_flush_closing: the first failure an
 * owner handed to rank `rank` (RFS_OK: none), and that owner in *owner. buffer_size as in the
 * configuration. */
int rfs_wb_closing_error(void *const *segments, int rank, int nranks, uint64_t buffer_size,
                         int *owner);
/* After every rank of the group has called rfs_wb_flush_mine for the last time (a barrier):
 * stops the owner thread, which first writes what it still holds. From then on the layer
 * passes every op below and no longer touches the segments (they may be freed). */
void rfs_wb_detach(rfs_io *io);
/* 0: this rank's buffered bytes are flushed and writes go straight below (atomic mode);
 * 1: buffering again. */
void rfs_wb_set_enabled(rfs_io *io, int on);

typedef struct rfs_wb_stats {
    uint64_t writes, bytes; /* write calls buffered and their bytes */
    uint64_t posts;         /* sub-buffers posted to owners */
    uint64_t flushes;       /* flushes this rank asked for */
    uint64_t direct_bytes;  /* bytes written straight below (auto, off, gone peers) */
    uint64_t pages_written; /* owner: page writes below */
    uint64_t page_bytes;    /* owner: bytes those carried */
    uint64_t evictions;     /* owner: pages written for the memory cap */
    uint64_t pages_peak;    /* owner: most pages held at once */
    uint64_t memory_cap;    /* owner: max_memory in effect */
} rfs_wb_stats;
void rfs_wb_get_stats(rfs_io *io, rfs_wb_stats *s);

/* The layer's op table (every slot named). */
const rfs_io_ops *rfs_wb_ops(void);

#endif
