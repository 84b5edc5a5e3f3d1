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
#include "cli/progress.h"

typedef struct xfer_error {
    int err;    /* rfs_err (remote failure) or RFS_E_IO for local ones */
    int local;  /* 1: msg describes a local file problem, not the server */
    char msg[1536];
} xfer_error;

struct xfer;
/* Copies [off, off+len) through buf (at least len bytes).
 * Returns RFS_OK, or an error after filling *e (if e->msg is left empty the pool copies this
 * thread's rfs_last_error()). */
typedef int (*xfer_chunk_fn)(struct xfer *x, void *buf, uint64_t off, size_t len, xfer_error *e);

typedef struct xfer {
    /* Set by the caller. */
    uint64_t total;
    int nstreams; /* connections of the rfs_file (for the chunk size) */
    int depth;    /* copying threads */
    uint32_t frame; /* rfs_options.max_frame to ask for (0: library default) */
    size_t chunk;
    xfer_chunk_fn copy;
    int no_buffer;  /* copy moves the data itself and gets buf = NULL */
    void *ctx;
    progress *prog;
    /* Filled by xfer_run. */
    _Atomic uint64_t cursor;
    _Atomic uint64_t done;
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
/* The rfs_options.max_frame that put and get ask for (0: the library's default). */
uint32_t xfer_frame_size(void);
/* Runs the copy, updating x->prog. Returns RFS_OK or the first error (details in x->error). */
int xfer_run(xfer *x);

#endif
