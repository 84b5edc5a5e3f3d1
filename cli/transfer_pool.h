/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Parallel copy engine behind `rfs put` and `rfs get`.
 *
 * `depth` threads take consecutive chunks of [0, total) from a shared cursor and copy each with
 * the caller's function, so while one thread waits for the network another does the local read
 * or write: the connections never idle behind the local disk.
 *
 * How --streams N maps onto connections: the client library pools connections per server, so
 * N rfs_files opened with one stream each would all share ONE TCP connection. The only way to
 * get N connections is one rfs_file opened with rfs_options.streams = N; the library then
 * splits every call into frames and deals them round-robin over its N connections. So a chunk
 * holds one frame per connection (N x 4 MiB, at most 64 MiB): each call cuts its part of the
 * file into N byte ranges, one per connection, and `depth` calls in flight keep every
 * connection busy. */
#ifndef RFS_CLI_TRANSFER_POOL_H
#define RFS_CLI_TRANSFER_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/cli.h"
#include "common/err.h"
#include "cli/progress.h"

typedef struct xfer_error {
    rfs_status st; /* rfs_err (remote failure) or RFS_E_IO for local ones, and the message */
    int local;     /* 1: the message describes a local file problem, not the server */
} xfer_error;

struct xfer;
/* Copies [off, off+len) through buf (at least len bytes).
 * Returns RFS_OK, or an error after filling *e (if e->st.msg is left empty the pool copies this
 * thread's error, rfs_status_save). */
typedef int (*xfer_chunk_fn)(struct xfer *x, void *buf, uint64_t off, size_t len, xfer_error *e);

typedef struct xfer {
    /* Set by the caller. */
    uint64_t total;
    uint64_t start; /* bytes [0, start) are already in place (--resume): copy [start, total) */
    int nstreams;   /* connections of the rfs_file (for the chunk size) */
    int depth;      /* copying threads */
    uint32_t frame; /* rfs_options.max_frame to ask for (0: library default) */
    size_t chunk;
    xfer_chunk_fn copy;
    int no_buffer; /* copy moves the data itself and gets buf = NULL */
    void *ctx;
    progress *prog;
    /* Filled by xfer_run. */
    _Atomic uint64_t cursor;
    _Atomic uint64_t done; /* bytes copied, from start on */
    _Atomic int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int running;
    xfer_error error; /* the first failure */
} xfer;

/* Tuning shared by put and get: the number of connections worth opening for `total` bytes
 * (at most requested_streams), chunk size and depth. Hidden environment overrides exist for
 * benchmarking: RFS_CLI_CHUNK (bytes), RFS_CLI_DEPTH (threads). */
void xfer_defaults(xfer *x, uint64_t total, int requested_streams);
/* The streams a transfer with url asks for: --streams N, or with auto one on a short path and
 * CLI_AUTO_STREAMS when the round trip is long (one ping per server and command). */
int cli_streams(cli_ctx *c, const char *url);
/* Starts deciding the streams for url's server and dialling them into the connection pool on
 * a thread of its own, while the command does other work (listing, making directories,
 * reading the first files); cli_streams then takes the result. One at a time. */
void cli_streams_warm(cli_ctx *c, const char *url);
/* Waits for the warm-up, if any, and takes its decision into c. */
void cli_streams_warm_end(cli_ctx *c);
/* The rfs_options.max_frame that put and get ask for (0: the library's default). */
uint32_t xfer_frame_size(void);
/* Runs the copy, updating x->prog. Returns RFS_OK or the first error (details in x->error). */
int xfer_run(xfer *x);

/* ---- Atomic, restartable, verifiable transfers (docs/reliability.md) ---- */

/* --resume trusts a partial file only in whole units of this size, each checked by crc32c. */
#define XFER_VERIFY_UNIT ((uint64_t)4 << 20)

/* 64-bit FNV-1a, for naming temporary files after what they hold (not for integrity). */
uint64_t xfer_hash(uint64_t h, const void *p, size_t n);
#define XFER_HASH_INIT 0xcbf29ce484222325ull
/* "<dir of target>/.<name of target>.rfs-part-<16 hex digits of key>": the hidden temporary
 * file beside target (the name is cut to 200 bytes so the whole stays a legal file name).
 * Returns 0, or -1 when it does not fit in cap. */
int xfer_part_path(char *out, size_t cap, const char *target, uint64_t key);

/* Sets *same to whether [off, off+len) holds the same bytes in the remote file f and the local
 * file fd (named local, for messages), by crc32c computed on both sides at once: the server
 * reads its copy (CHECKSUM op) while this process reads the local one. A side that is shorter
 * than off+len differs. crcs (may be NULL) get the remote and local values. Returns RFS_OK or
 * an error, with e filled. */
int xfer_compare(rfs_file *f, int fd, const char *local, uint64_t off, uint64_t len, int *same,
                 uint32_t crcs[2], xfer_error *e);
/* The longest prefix [0, *end) of [0, len) (len a multiple of XFER_VERIFY_UNIT) that is equal
 * on both sides, in whole units. Compares 16 parts of the range and descends into the first
 * that differs, so the cost is a few dozen round trips and about one read of len on each side,
 * however large the file. */
int xfer_verified_prefix(rfs_file *f, int fd, const char *local, uint64_t len, uint64_t *end,
                         xfer_error *e);

#endif
