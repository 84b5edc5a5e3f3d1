/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* librfs-mpiio internals: the handle struct behind an rfs MPI_File, the registries that tell our
 * handles from the MPI library's, the real (next) PMPI functions, error helpers, hints, views and
 * the byte-stream I/O engine. docs/mpiio.md explains the design.
 *
 * Rules every file here follows:
 *  - An rfs handle (mp_file *) never reaches a real PMPI_File_* function.
 *  - We define both MPI_File_x and PMPI_File_x, so calling PMPI_File_x from here would recurse:
 *    pass-through calls go through MP_REAL(PMPI_File_x) (dlsym RTLD_NEXT).
 *  - Functions marked "no MPI" may run in the I/O threads; everything else runs in the
 *    application's thread (MPI_THREAD_SINGLE programs must work).
 *  - Only rfs_io ops touch the file (ABT/cache layers get stacked below us later).
 */
#ifndef RFS_MPIIO_INTERNAL_H
#define RFS_MPIIO_INTERNAL_H

#include <mpi.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "client/runtime.h"
#include "common/capability.h"
#include "dtype/dtype.h"
#include "common/err.h"
#include "rfs/rfs_io.h"

#include "mpiio/mpiio_config.h"

/* ---- real functions of the MPI library (real.c) ---- */
void *mp_real_lookup(const char *name);
/* MP_REAL(PMPI_File_open)(...) calls the MPI library's PMPI_File_open, never ours. */
#define MP_REAL(fn)                                              \
    (*({                                                         \
        static __typeof__(&fn) mp_real_ptr_;                     \
        if (!mp_real_ptr_)                                       \
            mp_real_ptr_ = (__typeof__(&fn))mp_real_lookup(#fn); \
        mp_real_ptr_;                                            \
    }))

/* We define both MPI_x and PMPI_x; PMPI_x is an alias of our MPI_x. */
#define MP_ALIAS(name, params) int P##name params __attribute__((alias(#name)));
/* Buffer parameters MPI declares without const (reads). */
/* rfs_retry_timeout when no hint sets it (the C library default, RFS_DEFAULT_RETRY_TIMEOUT_MS) */
#define RFS_DEFAULT_RETRY_S 60

#define MP_NOCONST

/* ---- call marks for RFS_TRACE=1 (trace.c): where each MPI_File call on an rfs file begins and
 * ends, next to the client's per-request trace lines ---- */
int mp_stats_enabled(void);
int mp_trace_enabled(void);
void mp_trace_mark(const char *call, int begin);
#define MP_TRACE_BEGIN(call)          \
    do {                              \
        if (mp_trace_enabled())       \
            mp_trace_mark((call), 1); \
    } while (0)
#define MP_TRACE_END(call)            \
    do {                              \
        if (mp_trace_enabled())       \
            mp_trace_mark((call), 0); \
    } while (0)

/* Blocking data-access entry points: `impl` serves rfs files, anything else goes to the MPI
 * library. The explicit-offset form (MP_AT_ENTRY) and the file-pointer form (MP_PTR_ENTRY),
 * for reads (rw 0) and writes (rw 1), with int or MPI_Count counts. */
#define MP_AT_ENTRY(name, impl, rw, cnt_t, cbuf)                                                 \
    int name(MPI_File fh, MPI_Offset off, cbuf void *buf, cnt_t count, MPI_Datatype type,        \
             MPI_Status *st)                                                                     \
    {                                                                                            \
        mp_file *f = mp_file_of(fh);                                                             \
        if (!f)                                                                                  \
            return MP_REAL(P##name)(fh, off, buf, count, type, st);                              \
        MP_TRACE_BEGIN(#name);                                                                   \
        int rc_ = impl(f, rw, off, (void *)buf, (MPI_Count)count, type, st);                     \
        MP_TRACE_END(#name);                                                                     \
        return rc_;                                                                              \
    }                                                                                            \
    MP_ALIAS(name, (MPI_File fh, MPI_Offset off, cbuf void *buf, cnt_t count, MPI_Datatype type, \
                    MPI_Status *st))

#define MP_PTR_ENTRY(name, impl, rw, cnt_t, cbuf)                                         \
    int name(MPI_File fh, cbuf void *buf, cnt_t count, MPI_Datatype type, MPI_Status *st) \
    {                                                                                     \
        mp_file *f = mp_file_of(fh);                                                      \
        if (!f)                                                                           \
            return MP_REAL(P##name)(fh, buf, count, type, st);                            \
        MP_TRACE_BEGIN(#name);                                                            \
        int rc_ = impl(f, rw, (void *)buf, (MPI_Count)count, type, st);                   \
        MP_TRACE_END(#name);                                                              \
        return rc_;                                                                       \
    }                                                                                     \
    MP_ALIAS(name, (MPI_File fh, cbuf void *buf, cnt_t count, MPI_Datatype type, MPI_Status *st))

/* The _end of a split collective: hands back what _begin saved (mp_split_end). */
#define MP_SPLIT_END(name, cbuf)                          \
    int name(MPI_File fh, cbuf void *buf, MPI_Status *st) \
    {                                                     \
        mp_file *f = mp_file_of(fh);                      \
        if (!f)                                           \
            return MP_REAL(P##name)(fh, buf, st);         \
        return mp_split_end(f, st);                       \
    }                                                     \
    MP_ALIAS(name, (MPI_File fh, cbuf void *buf, MPI_Status *st))

/* ---- hints (hints.c) ---- */
enum mp_tristate { MP_AUTO = 0, MP_ENABLE = 1, MP_DISABLE = 2 };
enum mp_view_mode { MP_VIEW_AUTO = 0, MP_VIEW_SERVER = 1, MP_VIEW_CLIENT = 2 };

typedef struct mp_hints {
    int64_t cb_buffer_size; /* bytes per aggregator per two-phase round */
    int cb_nodes;           /* aggregators; 0 = one per node */
    int cb_write, cb_read;  /* mp_tristate (romio_cb_write / romio_cb_read) */
    int view_mode;          /* rfs_view */
    int io_threads;         /* rfs_io_threads (nonblocking pool size) */
    int nb_native;          /* rfs_nb_native: MP_AUTO (UCX files) / MP_ENABLE / MP_DISABLE */
    int streams;            /* rfs_streams: a count or RFS_STREAMS_AUTO */
    int streams_auto_max;   /* rfs_streams=auto:N; 0: a share of the node's (mp_streams_cap) */
    int tls;                /* rfs_tls: 1 require, 0 as the name and $RFS_TLS say */
    /* rfs_capability: authenticate with it instead of a token (never shown by get_info) */
    char capability[RFS_CAP_MAX_LEN + 1];
    char transport[4];      /* rfs_transport: "tcp", "ucx", or "": as the name and
                               $RFS_TRANSPORT say */
    int64_t ucx_inline_max; /* rfs_ucx_inline_max (bytes); -1: not given */
    int connect_timeout_ms; /* rfs_connect_timeout_ms */
    int io_timeout_ms;      /* rfs_io_timeout_ms */
    int retry_timeout_ms;   /* rfs_retry_timeout (s); 0: the library default, -1: off */
    int max_extents;        /* rfs_max_extents: runs per list I/O request */
    int cb_pipeline;        /* rfs_cb_pipeline: two-phase write rounds in flight (1: none,
                             * 0: automatic, see coll.c) */
    int lock_wait_ms;       /* rfs_lock_wait_ms: atomic-mode lock wait */
    int64_t write_window;   /* rfs_write_window: unconfirmed small-write bytes (0: off) */
    unsigned file_perm;     /* rfs_file_perm (octal) for created files */
    /* Active buffering with threads (abt/, docs/abt.md) and deferred operations. */
    int abt;                     /* rfs_abt: MP_ENABLE / MP_DISABLE */
    int64_t abt_buffer_size;     /* rfs_abt_buffer_size */
    int64_t abt_max_memory;      /* rfs_abt_max_memory; 0: the documented default share */
    int abt_threads;             /* rfs_abt_threads */
    int abt_bg_staging;          /* rfs_abt_bg_staging: MP_ENABLE / MP_DISABLE */
    int64_t abt_interval_ms;     /* rfs_abt_interval_ms: I of eq. (1); 0: learn it */
    int64_t abt_output;          /* rfs_abt_output: N of eq. (1) in bytes; 0: learn it */
    int abt_sync_staging;        /* rfs_abt_sync_staging: fdatasync staged data */
    int64_t abt_wait_timeout_ms; /* rfs_abt_wait_timeout_ms: bound on a write's wait for space */
    char staging_dir[1024];      /* rfs_staging_dir; "": $RFS_STAGING_DIR, $TMPDIR, /tmp */
    char compress[16];           /* rfs_compress; "": $RFS_COMPRESS, else auto (rfs_options) */
    int defer_open;              /* rfs_defer_open: MP_ENABLE / MP_DISABLE */
    int defer_close;             /* rfs_defer_close: MP_ENABLE / MP_DISABLE (needs rfs_abt) */
    int lazy_barrier;            /* rfs_lazy_barrier: MP_ENABLE / MP_DISABLE (fence.h) */
    int cache_read;              /* rfs_cache_read: MP_AUTO (MPI_MODE_RDONLY files) / MP_ENABLE /
                                  * MP_DISABLE (cache/cache.h) */
    int64_t cache_size;          /* rfs_cache_size: process-wide cap; 0: the documented default */
    int prefetch;                /* rfs_prefetch: RFS_PREFETCH_AUTO / _ENABLE / _DISABLE */
    int64_t prefetch_max;        /* rfs_prefetch_max: window cap; 0: the documented default */
    int prefetch_threads;        /* rfs_prefetch_threads */
    int write_behind;            /* rfs_write_behind: MP_AUTO / MP_ENABLE / MP_DISABLE */
    int64_t wb_page_size;        /* rfs_wb_page_size: the owners' write unit */
    int64_t wb_buffer_size;      /* rfs_wb_buffer_size: one local sub-buffer */
    int64_t wb_max_memory;       /* rfs_wb_max_memory: pages one owner holds */
    int ccache;                  /* rfs_cache: MP_AUTO / MP_ENABLE / MP_DISABLE (ccache/) */
    int64_t cc_page_size;        /* rfs_cache_page_size */
    int64_t cc_max_memory;       /* rfs_cache_max_memory: bytes of pages per rank */
    /* A new logical file over several servers (a .rfsm name, manifest/, docs/manifest.md). */
    char servers[1024];  /* rfs_servers: comma-separated rfs names; "": the home server */
    int64_t stripe_size; /* rfs_stripe_size; 0: 1 MiB */
    int stripe_count;    /* rfs_stripe_count; 0: every server */
    int replicas;        /* rfs_replicas; 0: 1 */
    int depot_fixed;     /* rfs_depot_order=fixed (1) or rotate (0): where a new file starts */
    /* A logical file's small-write and noncontiguous-read modes (manifest/modes.h). */
    int manifest_buffered;   /* rfs_manifest_mode=buffered (1), log (2) or direct (0) */
    int manifest_sieve;      /* rfs_manifest_read=sieve (1) or direct (0) */
    int64_t manifest_buffer; /* rfs_manifest_buffer: bytes of either buffer; 0: 4 MiB */
} mp_hints;

void mp_hints_default(mp_hints *h);
/* Applies RFS_HINTS then info (may be MPI_INFO_NULL). Unknown keys are ignored. */
void mp_hints_apply_env(mp_hints *h);
void mp_hints_apply_info(mp_hints *h, MPI_Info info);
/* A new info object holding every hint in effect. */
int mp_hints_to_info(const mp_hints *h, MPI_Info *out);
/* Parses one key=value; returns 1 if the key is ours and the value valid, 0 otherwise. */
int mp_hint_set(mp_hints *h, const char *key, const char *value);

/* ---- data representations (datarep.c) ---- */
/* A representation other than native (NULL everywhere means native: no conversion). */
typedef struct mp_datarep mp_datarep;
/* For set_view: *rep = NULL for "native"/"internal", else external32 or a registered one.
 * MPI_SUCCESS or an MPI_ERR_UNSUPPORTED_DATAREP code. */
int mp_datarep_find(const char *name, const mp_datarep **rep);
const char *mp_datarep_name(const mp_datarep *rep);
/* MPI_SUCCESS if the representation can size every predefined type in `type` and convert it
 * (a size change needs conversion functions), else an MPI_ERR_UNSUPPORTED_DATAREP code naming
 * the type. */
int mp_datarep_check(const mp_datarep *rep, MPI_Datatype type, const char *fname);
/* The type as laid out in the file: *out is type itself when no member changes size, else a
 * new committed type the caller frees. */
int mp_datarep_file_type(const mp_datarep *rep, MPI_Datatype type, MPI_Datatype *out);
/* 1 if some member of type has another size in the representation than in memory. */
int mp_datarep_resizes(const mp_datarep *rep, MPI_Datatype type);
/* What a status reports for fbytes bytes of the file stream of elements of type: fbytes when
 * sizes agree, else the memory bytes of the whole elements among them. */
int64_t mp_datarep_memory_bytes(const mp_datarep *rep, MPI_Datatype type, int64_t fbytes);
/* MPI_File_get_type_extent in the representation (rep may be NULL). */
int mp_datarep_extent(const mp_datarep *rep, MPI_Datatype type, MPI_Aint *extent);
/* count elements of type in user memory <-> len bytes of the representation. MPI calls. */
int mp_datarep_to_file(const mp_datarep *rep, const void *user, MPI_Count count, MPI_Datatype type,
                       void *out, int64_t len);
int mp_datarep_from_file(const mp_datarep *rep, const void *in, int64_t len, void *user,
                         MPI_Count count, MPI_Datatype type);

/* ---- views (view.c) ---- */
typedef struct mp_view {
    const mp_datarep *rep;                /* NULL: native bytes */
    char datarep[MPI_MAX_DATAREP_STRING]; /* as given to set_view, for get_view */
    int overlap; /* read-only file, filetype with overlapping runs: the server
                  * refuses such views, so they are mapped on the client */
    int refs;    /* guarded by mp_file.mu */
    int64_t disp;
    int64_t etype_size;
    MPI_Datatype etype, filetype;           /* our dups (or predefined as given), as laid out in the
                                             * file (datarep.c: sizes of the representation) */
    MPI_Datatype user_etype, user_filetype; /* dups of the types given, for get_view, when
                                             * the representation changed their layout; else NULL */
    int contig;     /* filetype is a plain run from 0: file offset = disp + pos */
    rfs_flat *flat; /* NULL when contig */
    uint8_t *enc;   /* portable encoding of the filetype (for the server) */
    size_t enc_len;
    uint64_t hash;     /* of disp and enc: finds a server slot already holding it */
    int slot;          /* server slot last found holding it, -1 none (mp_file.mu) */
    uint64_t slot_gen; /* that slot's generation then: stale once it is refilled */
} mp_view;

/* A server view slot (rfs_io view id): which view it holds, and the accesses in flight through
 * it, which keep it from being refilled under them. Guarded by mp_file.mu. */
typedef struct mp_view_slot {
    uint8_t *enc; /* NULL: empty */
    size_t enc_len;
    int64_t disp;
    uint64_t hash;
    uint64_t gen;      /* bumped at each refill */
    uint64_t last_use; /* LRU clock */
    unsigned pins;
} mp_view_slot;

/* ---- the handle ---- */
#define MP_FILE_MAGIC 0x52465346u /* "FSFR" */

typedef struct mp_file {
    uint32_t magic;
    rfs_runtime *rt; /* the process's default runtime: connections and workers */
    rfs_io *io;
    char *name;    /* as given to MPI_File_open */
    MPI_Comm comm; /* private dup of the open communicator */
    int rank, size;
    int amode;
    mp_hints hints;
    int atomic;
    /* The size the OPEN reply reported, while it may still answer MPI_File_get_size: set at
     * open when writes return early (the write window, ABT), cleared by the first other call
     * on the file and by every MPI_Barrier (manage.c, "get_size right after open"). */
    uint64_t size_at_open;
    int size_at_open_valid;
    /* Shared file pointer (shared.c): base + the server counter `shared_key`, in etypes. */
    uint32_t shared_key;  /* current server counter key; a fresh key's counter is 0 */
    uint32_t shared_key0; /* the key drawn at open; later keys derive from it */
    int shared_keys_used; /* fresh keys taken since open (bounded: the server keeps them) */
    int64_t shared_base;  /* pointer value where the counter reads 0 (MPI_MODE_APPEND) */
    int shared_dirty;     /* this rank changed the counter since it was last known 0 */
    pthread_mutex_t mu;   /* guards view refs/sent, server_views, pending */
    mp_view *view;
    mp_view_slot slots[RFS_IO_VIEW_SLOTS];
    uint64_t slot_clock;                      /* LRU clock and generation source for slots */
    uint64_t set_views_sent, set_views_saved; /* RFS_STATS */
    int server_views; /* 1: use set_view/view_read/view_write; 0: map on the client */
    int64_t ind_ptr;  /* individual file pointer, in etypes */
    MPI_Errhandler errh;
    MPI_File_errhandler_function *errfn; /* user handler, or NULL */
    int fidx;                            /* Fortran index, 0 = not yet assigned */
    int pending;                         /* nonblocking ops not yet completed */
    /* split collectives: _begin does the work, _end returns this */
    int split_active;
    MPI_Status split_status;
    int split_err;
    struct mp_fence *fence; /* lazy barriers (fence.h), or NULL */
    rfs_io *cache;          /* the read cache layer in io's stack (cache/cache.h), or NULL */
    struct mp_wb *wb;       /* write-behind (wb.h), or NULL */
    struct mp_cc *cc;       /* the collaborative cache (ccache.h), or NULL */
    /* Collective calls run by the server group's MPI-IO (srvcoll.c): every rank joined, and
     * the most bytes (data + 16 per run) one request may carry. */
    int srv_coll;
    size_t srv_coll_max;
} mp_file;

/* ---- registries (registry.c) ---- */
void mp_files_add(mp_file *f);
void mp_files_remove(mp_file *f);
/* The mp_file behind fh, or NULL if fh is not ours. Never dereferences a foreign handle. */
mp_file *mp_file_of(MPI_File fh);
/* mp_file_of without counting as a call on the file (keeps size_at_open_valid). */
mp_file *mp_file_peek(MPI_File fh);
/* Snapshot of all open files (finalize); caller frees the array. */
mp_file **mp_files_all(size_t *n);
/* A size change this layer did not see (truncate() through the POSIX interposer): no open
 * file answers get_size without asking the server any more (manage.c, fence.c). */
void mp_files_forget_sizes(void);
MPI_Fint mp_fortran_index(mp_file *f);
mp_file *mp_file_of_fortran(MPI_Fint i);
int mp_is_fortran_index(MPI_Fint i);
void mp_fortran_release(mp_file *f);

/* ---- errors and errhandlers (errors.c, errhandler.c) ---- */
/* MPI error class for an rfs_err. */
int mp_class_of(int rfs_err);
/* A dynamic MPI error code in `cls` whose MPI_Error_string is msg (bounded ring per class). */
int mp_error_code(int cls, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Code for a failed rfs_io op: class from err, message "op server:path: rfs message". */
int mp_io_error(const mp_file *f, int rfs_err, const char *what, const char *rfs_msg);
/* Sends code through f's error handler (or MPI_FILE_NULL's if f is NULL); returns code. */
int mp_raise(mp_file *f, int code);
int mp_raise_null(int code);
void mp_errh_inherit(mp_file *f);
void mp_errh_release(mp_file *f);

/* ---- engine (engine.c, pack.c) ---- */
/* Packed user data: a contiguous view of the memory datatype's bytes. */
typedef struct mp_buf {
    void *data; /* the bytes in type-map order */
    int64_t len;
    void *tmp;      /* non-NULL when data is a packing buffer we own */
    size_t tmp_cap; /* its size (it may be a reused, larger buffer) */
    void *user;     /* user buffer, count, type for unpacking */
    MPI_Count count;
    MPI_Datatype type;
    int64_t type_size;     /* bytes of one element in the file */
    const mp_datarep *rep; /* file representation (NULL: native); never used in place */
} mp_buf;
/* MPI calls: application thread only. */
int mp_buf_for_write(mp_buf *b, const void *buf, MPI_Count count, MPI_Datatype type,
                     const mp_datarep *rep);
/* The same without packing yet: b->data is set only when the memory is one dense run; pack
 * with mp_buf_pack unless the write goes out gathered (mp_gather_write). */
int mp_buf_for_write_lazy(mp_buf *b, const void *buf, MPI_Count count, MPI_Datatype type,
                          const mp_datarep *rep);
int mp_buf_pack(mp_buf *b);
/* The memory runs of an unpacked write buffer, in type-map order (what packing would copy),
 * at most max runs; *iov is malloc'd. MPI_SUCCESS, or an error when the type cannot be
 * described that way (negative offsets, too many runs): then pack instead. */
int mp_buf_runs(const mp_buf *b, size_t max, struct iovec **iov, size_t *n);
int mp_buf_for_read(mp_buf *b, void *buf, MPI_Count count, MPI_Datatype type,
                    const mp_datarep *rep);
/* After a read of `got` bytes into b->data: scatter them into the user buffer. */
int mp_buf_finish_read(mp_buf *b, int64_t got);
void mp_buf_free(mp_buf *b);
/* Bytes that `count` elements of type take in the file in representation rep (NULL: native,
 * the MPI size); MPI_SUCCESS or an error code. */
int mp_type_bytes(const mp_datarep *rep, MPI_Datatype type, MPI_Count count, int64_t *bytes);

/* Byte-stream I/O through a view: bytes [pos, pos+len) of the view's data stream.
 * Result: RFS_OK or negative rfs_err with *msg (static per-thread) describing it. No MPI. */
/* Waits for the server to confirm this rank's writes that returned early (the write window,
 * rfs_write_window) and returns an MPI code for their first failure. */
int mp_flush_writes(mp_file *f);
int mp_stream_io(mp_file *f, mp_view *v, int is_write, uint64_t pos, void *data, size_t len,
                 size_t *done);
/* Lists the file runs of stream bytes [pos,pos+len) (no MPI). Caller frees *ext. */
int mp_view_runs(const mp_view *v, uint64_t pos, uint64_t len, rfs_extent **ext, size_t *n);
/* A write of unpacked memory (mp_buf_for_write_lazy) straight into a layer that copies it
 * anyway (rfs_io pwritev_gather: ABT), without packing it first. Returns RFS_OK or a negative
 * rfs_err, or MP_NOT_GATHERED when that cannot be done here (no such layer, dense or
 * undescribable memory): the caller packs and writes as usual. MPI calls (datatype
 * decoding): application thread only. */
#define MP_NOT_GATHERED 1
/* One independent access of b through the file's current view (access.c): gathered when it
 * can be, else packed (writes), with atomic-mode locks. Returns MPI_SUCCESS or an MPI error
 * code whose message names the file and cause (a failed packing writes nothing); *done gets
 * the bytes moved. MPI calls: application thread only. */
int mp_indep_io(mp_file *f, int is_write, uint64_t pos, mp_buf *b, size_t *done);
int mp_gather_write(mp_file *f, mp_view *v, uint64_t pos, const mp_buf *b, size_t *done);
/* Runs a list I/O in chunks of hints.max_extents (no MPI). */
int mp_listio(mp_file *f, int is_write, const rfs_extent *ext, size_t n, void *data, size_t *done);

/* Stream bytes of the view before file offset size (no MPI). */
int64_t mp_view_eof_pos(const mp_view *v, int64_t size);
mp_view *mp_view_get(mp_file *f); /* takes a reference */
void mp_view_put(mp_file *f, mp_view *v);
int mp_view_default(mp_file *f); /* byte view at disp 0 */
void mp_view_slots_free(mp_file *f);
void mp_view_free(mp_view *v);

/* Checks for a data access; returns MPI_SUCCESS or a code (not yet raised). */
int mp_check_access(mp_file *f, int is_write, int explicit_offset);

/* Blocking independent access at stream byte position pos. Sets status. Returns MPI code
 * (not yet raised). *got receives bytes moved. */
int mp_access(mp_file *f, int is_write, uint64_t pos, void *buf, MPI_Count count, MPI_Datatype type,
              MPI_Status *st, int64_t *got);
void mp_set_status(MPI_Status *st, int64_t bytes);

/* Locks for atomic mode (no MPI). */
int mp_atomic_lock(mp_file *f, mp_view *v, int is_write, uint64_t pos, uint64_t len, uint64_t *lo,
                   uint64_t *hi);
void mp_atomic_unlock(mp_file *f, uint64_t lo, uint64_t hi);

/* ---- collective (coll.c) ---- */
/* Collective access; every rank of f->comm calls it. pos in stream bytes. */
/* srvcoll.c (docs/mpiio.md "Collective calls on a server group"). After a successful open,
 * collective: joins every rank's file to one collective open on the server group when the
 * server offers it (rfsd --backend mpiio), passing the striping_*, cb_nodes and romio_* hints. */
void mp_srv_coll_open(mp_file *f, MPI_Info info);
/* Collective: this rank's part of a collective call, run by the server group as one or more
 * MPI-IO collective calls (as many as the rank with the most chunks of one frame needs);
 * *moved gets its bytes (reads: up to the end of file). A rank that failed before takes part
 * with nothing. */
int mp_srv_coll_access(mp_file *f, int is_write, int code, const rfs_extent *runs, size_t nruns,
                       void *data, int64_t *moved);
int mp_coll_access(mp_file *f, int is_write, uint64_t pos, void *buf, MPI_Count count,
                   MPI_Datatype type, MPI_Status *st, int64_t *got);
/* Agrees on an error among ranks: returns the code of the lowest failing rank everywhere. */
int mp_agree_error(mp_file *f, MPI_Comm comm, int code);
/* _end of a split collective: hands back the status saved by _begin. */
int mp_split_end(mp_file *f, MPI_Status *st);

/* ---- shared file pointer (shared.c) ---- */
/* Atomic fetch-and-add on the shared pointer; *old gets the value before (etypes). */
int mp_shared_fetch_add(mp_file *f, int64_t delta, int64_t *old);
int mp_shared_set(mp_file *f, int64_t value);
/* Starts the shared pointer of a freshly opened file at `start` (no server request). */
void mp_shared_init(mp_file *f, uint32_t key, int64_t start);
/* Collective (set_view): puts the shared pointer back to 0 on every rank, with no server
 * request unless the pointer was moved since it was last 0 and the fresh keys are used up.
 * Returns MPI_SUCCESS or an error code (the same on every rank). */
int mp_shared_reset(mp_file *f);

/* ---- nonblocking (nonblock.c) ---- */
int mp_nb_start(mp_file *f, int is_write, uint64_t pos, void *buf, MPI_Count count,
                MPI_Datatype type, MPI_Request *req);
/* A request already complete (collective nonblocking done eagerly). */
int mp_nb_completed(mp_file *f, int code, int64_t bytes, MPI_Request *req);
/* Waits for all of f's nonblocking ops (close, sync, set_view). */
void mp_nb_drain(mp_file *f);
void mp_nb_shutdown(void);

/* ---- open/close (open.c) ---- */
int mp_close_file(mp_file *f, int collective);
void mp_finalize_files(void);

/* Utility */
int64_t mp_min64(int64_t a, int64_t b);

#endif
