/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs_io: the one interface every layer speaks (docs/design.md).
 *
 * The remote client implements it (client/io_remote.c); ABT and the cache wrap it with the same
 * ops; the MPI-IO layer only calls it. All offsets are absolute byte offsets in the file.
 * Every op returns RFS_OK or a negative rfs_err and sets the thread's rfs_last_error() message.
 * Ops may be called from several threads at once.
 *
 * No slot is ever NULL. pread, pwrite, sync, get_size, set_size and close every layer writes;
 * for the others, what a layer does not do itself it names with the generic rfs_io_gen_*
 * implementation below (as ROMIO's drivers name ADIOI_GEN_*), which does it with the layer's
 * other ops or reports RFS_E_UNSUPPORTED. Callers choose between ways of doing something by
 * the layer's features word (RFS_IO_F_*), never by looking at the slots.
 */
#ifndef RFS_RFS_IO_H
#define RFS_RFS_IO_H

#include "rfs/rfs.h"

#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rfs_io rfs_io;

/* One asynchronous contiguous access (start/end, RFS_IO_F_ASYNC): native nonblocking I/O that
 * needs no thread of the caller's while it runs. The caller owns it from start to end. */
typedef struct rfs_io_async {
    /* Called exactly once when the access has finished (done or failed), from whichever thread
     * saw it finish: the connection's receiver, or start's caller. It must not block, call MPI
     * or end the access; it only tells the owner that end will not wait. */
    void (*on_done)(struct rfs_io_async *a);
    void *user; /* the caller's */
    void *impl; /* the layer's */
} rfs_io_async;

/* A file's version on the server: its size and mtime (ns), as the server reported them. */
typedef struct rfs_io_version {
    uint64_t size;
    int64_t mtime_ns;
} rfs_io_version;

typedef struct rfs_io_ops {
    int (*pread)(rfs_io *io, void *buf, size_t len, uint64_t off, size_t *done);
    int (*pwrite)(rfs_io *io, const void *buf, size_t len, uint64_t off, size_t *done);
    int (*preadv)(rfs_io *io, const rfs_extent *ext, size_t n, void *buf, size_t *done);
    int (*pwritev)(rfs_io *io, const rfs_extent *ext, size_t n, const void *buf, size_t *done);
    /* pwritev whose data are not packed: the bytes for the extents, in order, are the memory
     * runs mem[0..nmem) (same total). A layer that copies the data anyway (ABT) takes them
     * from the application's memory directly, so the layer above need not pack them first
     * (RFS_IO_F_GATHER). Generic: packs and calls pwritev. */
    int (*pwritev_gather)(rfs_io *io, const rfs_extent *ext, size_t n, const struct iovec *mem,
                          size_t nmem, size_t *done);
    int (*sync)(rfs_io *io);
    /* Waits until every write that returned is confirmed by the server (no durability asked
     * for). report: returns their first failure (reported once); 0: leaves it for the next
     * call on the file. Generic: RFS_OK (writes are confirmed when they return). */
    int (*flush)(rfs_io *io, int report);
    /* A mark for the writes that returned so far, and whether the server has answered every
     * one of them yet (1) or not (0), without waiting and without reporting failures (they
     * stay for the next call). For a thread that must notice, while the application writes
     * on, when earlier writes are in the file (mpiio/fence.c; RFS_IO_F_MARKS). Generic: mark 0,
     * always answered (writes are answered when they return). */
    uint64_t (*write_mark)(rfs_io *io);
    int (*mark_answered)(rfs_io *io, uint64_t mark);
    int (*get_size)(rfs_io *io, uint64_t *size);
    int (*set_size)(rfs_io *io, uint64_t size);
    /* Generic: set_size when the file is shorter. */
    int (*preallocate)(rfs_io *io, uint64_t size);
    /* Shared counters (RFS_IO_F_COUNTERS) and byte-range locks (RFS_IO_F_LOCKS). Generic:
     * RFS_E_UNSUPPORTED. */
    int (*counter)(rfs_io *io, uint32_t key, int set, int64_t delta, int64_t *old);
    int (*lock)(rfs_io *io, uint64_t off, uint64_t len, unsigned mode, int wait_ms);
    int (*unlock)(rfs_io *io, uint64_t off, uint64_t len);
    /* A view id names one of RFS_IO_VIEW_SLOTS slots per file; set_view into a slot replaces what
     * it held once the accesses sent before it are done, so a caller may reuse ids forever.
     * Only with RFS_IO_F_VIEWS; generic: RFS_E_UNSUPPORTED. */
    int (*set_view)(rfs_io *io, uint32_t view_id, uint64_t disp, const void *enc, size_t enc_len);
    int (*view_read)(rfs_io *io, uint32_t view_id, uint64_t pos, void *buf, size_t len,
                     size_t *done);
    int (*view_write)(rfs_io *io, uint32_t view_id, uint64_t pos, const void *buf, size_t len,
                      size_t *done);
    /* Closes this layer and the ones below; frees io. Reports errors not yet reported. */
    int (*close)(rfs_io *io);
    /* Replay safety of ABT's journal (docs/abt.md "Replay safety"): the file's version after
     * the newest of this file's operations whose reply reported one (the open, then writes and
     * size changes). The first call makes later writes and size changes ask the server for it,
     * so once a write returned this is the version after it (or after a later write of the
     * file). RFS_E_UNSUPPORTED: the server does not report versions (an older rfsd; ask with
     * rfs_stat); RFS_E_BUSY: not known yet (a deferred open), ask again later. Generic:
     * RFS_E_UNSUPPORTED (RFS_IO_F_VERSIONS: the layer can ever give one). */
    int (*version)(rfs_io *io, rfs_io_version *v);
    /* Deletes the file `name` (an rfs name; opts as for an open), open or not (MPI_File_delete
     * has no open file, delete-on-close has closed it): each layer first does what a delete
     * means to it (ABT: the queued writes of that name are delivered before, so that none lands
     * after it), then passes it to the layers under it, `below[0]` first (a NULL-terminated
     * list of their op tables: a name op has no rfs_io to find them through). The bottom layer
     * deletes the file on the server (rfs_delete). Generic: passes it on; at the bottom,
     * RFS_E_UNSUPPORTED. */
    int (*remove)(const struct rfs_io_ops *const *below, const char *name, const rfs_options *opts);
    /* Asynchronous contiguous access of len bytes at off (RFS_IO_F_ASYNC; how: RFS_IO_ASYNC_*):
     * RFS_OK when it is
     * under way (a->on_done will be called once, perhaps before start returns, and end must be
     * called); any error (RFS_E_UNSUPPORTED: not this file, not now: use pread/pwrite) means
     * nothing was started. buf stays the layer's until end. end waits for the access (bounded
     * by the file's I/O timeout), releases it and returns its outcome; *done: bytes moved
     * (a read may stop short at end of file). Generic: start RFS_E_UNSUPPORTED. */
    int (*start)(rfs_io *io, unsigned how, void *buf, size_t len, uint64_t off, rfs_io_async *a);
    int (*end)(rfs_io *io, rfs_io_async *a, size_t *done);
    /* Collective calls served by a server group's MPI-IO (rfsd --backend mpiio; docs/protocol.md
     * "Collective calls"). coll_join: this file is rank-of-nranks of the collective open `id`
     * (16 bytes, the same on every rank), hints "key=value;..." for the group's MPI_File_open;
     * RFS_E_UNSUPPORTED when the server does not offer it; *max_part: the most bytes of data plus
     * 16 per run one part may have (one frame). coll_listio: this rank's whole part
     * of the file's next collective call, as one list I/O (reads: *done stops at the end of
     * file); every rank calls it once per call, with n == 0 when it has nothing. Only the
     * remote layer has them; the others name the generic ones (RFS_E_UNSUPPORTED). */
    int (*coll_join)(rfs_io *io, const unsigned char id[16], unsigned nranks, const char *hints,
                     size_t *max_part);
    int (*coll_listio)(rfs_io *io, int is_write, const rfs_extent *ext, size_t n, void *buf,
                       size_t *done);
} rfs_io_ops;

/* What a layer really does (rfs_io.features): the paths a caller may take. */
#define RFS_IO_F_VIEWS 0x01u    /* set_view/view_read/view_write reach server-side views */
#define RFS_IO_F_LOCKS 0x02u    /* lock/unlock */
#define RFS_IO_F_COUNTERS 0x04u /* counter */
#define RFS_IO_F_MARKS \
    0x08u                       /* writes may return before they are answered, and write_mark/
                                 * mark_answered follow them (flush works in any case) */
#define RFS_IO_F_VERSIONS 0x10u /* version can give the file's version */
#define RFS_IO_F_GATHER 0x20u   /* pwritev_gather takes the memory runs without packing them */
/* start/end may run an access without a thread (start may still decline: RFS_E_UNSUPPORTED) */
#define RFS_IO_F_ASYNC 0x40u

/* start's how: a write (else a read); and take it even where sending waits for the link (a
 * byte-stream transport such as TCP), where a thread usually overlaps better. */
#define RFS_IO_ASYNC_WRITE 0x1u
#define RFS_IO_ASYNC_STREAMS 0x2u

/* View slots per file that a server keeps (protocol: view_id 0..15 per handle). */
#define RFS_IO_VIEW_SLOTS 16u

struct rfs_io {
    const rfs_io_ops *ops;
    unsigned features; /* RFS_IO_F_*, set by the layer when it makes the rfs_io */
    char server[300];  /* "host:port", for messages */
    char path[4096];
};

/* The generic implementations (client/io_generic.c). */
int rfs_io_gen_preadv(rfs_io *io, const rfs_extent *ext, size_t n, void *buf, size_t *done);
int rfs_io_gen_pwritev(rfs_io *io, const rfs_extent *ext, size_t n, const void *buf, size_t *done);
int rfs_io_gen_pwritev_gather(rfs_io *io, const rfs_extent *ext, size_t n, const struct iovec *mem,
                              size_t nmem, size_t *done);
int rfs_io_gen_flush(rfs_io *io, int report);
uint64_t rfs_io_gen_write_mark(rfs_io *io);
int rfs_io_gen_mark_answered(rfs_io *io, uint64_t mark);
int rfs_io_gen_preallocate(rfs_io *io, uint64_t size);
int rfs_io_gen_counter(rfs_io *io, uint32_t key, int set, int64_t delta, int64_t *old);
int rfs_io_gen_lock(rfs_io *io, uint64_t off, uint64_t len, unsigned mode, int wait_ms);
int rfs_io_gen_unlock(rfs_io *io, uint64_t off, uint64_t len);
int rfs_io_gen_set_view(rfs_io *io, uint32_t view_id, uint64_t disp, const void *enc,
                        size_t enc_len);
int rfs_io_gen_view_read(rfs_io *io, uint32_t view_id, uint64_t pos, void *buf, size_t len,
                         size_t *done);
int rfs_io_gen_view_write(rfs_io *io, uint32_t view_id, uint64_t pos, const void *buf, size_t len,
                          size_t *done);
int rfs_io_gen_version(rfs_io *io, rfs_io_version *v);
int rfs_io_gen_remove(const rfs_io_ops *const *below, const char *name, const rfs_options *opts);
int rfs_io_gen_start(rfs_io *io, unsigned how, void *buf, size_t len, uint64_t off,
                     rfs_io_async *a);
int rfs_io_gen_end(rfs_io *io, rfs_io_async *a, size_t *done);
/* RFS_E_UNSUPPORTED: only the remote layer runs collective calls on a server group. */
int rfs_io_gen_coll_join(rfs_io *io, const unsigned char id[16], unsigned nranks, const char *hints,
                         size_t *max_part);
int rfs_io_gen_coll_listio(rfs_io *io, int is_write, const rfs_extent *ext, size_t n, void *buf,
                           size_t *done);
/* The file range [*lo, *hi) that extents ext[0..n) span (n == 0: lo UINT64_MAX, hi 0). */
void rfs_extents_span(const rfs_extent *ext, size_t n, uint64_t *lo, uint64_t *hi);
/* Deletes name through the layers stack[0], stack[1], ... (NULL-terminated). */
int rfs_io_remove(const rfs_io_ops *const *stack, const char *name, const rfs_options *opts);

/* The remote client's op table: the bottom of every stack, so the last of rfs_io_remove's list. */
const rfs_io_ops *rfs_io_remote_ops(void);
/* The remote client as an rfs_io (wraps rfs_open). */
int rfs_io_open_remote(const char *name, unsigned flags, unsigned mode, const rfs_options *opts,
                       rfs_io **out);
/* The same, but the server is contacted only by the first operation (hint rfs_defer_open); a
 * failed open is reported by that operation, at the latest by close. */
int rfs_io_open_deferred(const char *name, unsigned flags, unsigned mode, const rfs_options *opts,
                         rfs_io **out);

#ifdef __cplusplus
}
#endif
#endif
