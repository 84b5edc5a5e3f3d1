/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs: remote file access client API (librfs.so).
 *
 * Names: "rfs:HOST:PORT:/path" (ROMIO's prefix convention) or "rfs://HOST:PORT/path";
 * IPv6 hosts in brackets ("rfs:[::1]:7070:/a", "rfs://[::1]:7070/a").
 * Authentication token: options.token, else $RFS_CAP, else $RFS_TOKEN, else the file named by
 * $RFS_TOKEN_FILE. A capability string ("rfscap1....", `rfs share`) given in any of these
 * authenticates as that capability instead (docs/security.md "Capabilities").
 *
 * Every function returns RFS_OK (0) or a negative rfs_err code. After a failure,
 * rfs_last_error() gives a message for the calling thread naming server, path and cause.
 * A rfs_file is safe to use from several threads at once.
 */
#ifndef RFS_RFS_H
#define RFS_RFS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: these values also travel on the wire (as positive u32 in reply frames). */
typedef enum rfs_err {
    RFS_OK = 0,
    RFS_E_NOENT = -1,  /* no such file or directory */
    RFS_E_EXIST = -2,  /* file exists (exclusive create) */
    RFS_E_ACCESS = -3, /* permission denied, or path outside the export root */
    RFS_E_AUTH = -4,   /* authentication failed or missing */
    RFS_E_ROFS = -5,   /* write to a file opened read-only / read-only export */
    RFS_E_INVAL = -6,  /* invalid argument */
    RFS_E_NOSPC = -7,  /* no space left on the server */
    RFS_E_ISDIR = -8,
    RFS_E_NOTDIR = -9,
    RFS_E_NOTEMPTY = -10,
    RFS_E_IO = -11,    /* I/O error on the server's storage */
    RFS_E_PROTO = -12, /* malformed or unexpected frame */
    RFS_E_CONN = -13,  /* cannot connect, or connection lost */
    RFS_E_TIMEOUT = -14,
    RFS_E_TOOBIG = -15, /* length over a protocol limit */
    RFS_E_NOMEM = -16,
    RFS_E_BADF = -17, /* unknown or closed handle */
    RFS_E_UNSUPPORTED = -18,
    RFS_E_BUSY = -19,    /* byte-range lock held by another client */
    RFS_E_NAME = -20,    /* malformed rfs name / URL */
    RFS_E_VERSION = -21, /* no common protocol version */
    RFS_E_FBIG = -22,    /* offset or size out of range */
    RFS_E_DQUOT = -23,
} rfs_err;
#define RFS_ERR_COUNT 24

const char *rfs_strerror(int err);
/* Message for the last failure in this thread ("" if none). Valid until the next rfs call. */
const char *rfs_last_error(void);

/* Open flags (rfs_open). Exactly one of RDONLY / WRONLY / RDWR. */
#define RFS_O_RDONLY 0x01u
#define RFS_O_WRONLY 0x02u
#define RFS_O_RDWR 0x03u
#define RFS_O_ACCMODE 0x03u
#define RFS_O_CREAT 0x04u
#define RFS_O_EXCL 0x08u
#define RFS_O_TRUNC 0x10u
#define RFS_O_APPEND 0x20u

#define RFS_STREAMS_AUTO (-1)
/* rfs_streams=auto opening at most n (1..16) connections: for processes that share a host's
 * link with others (MPI-IO gives each of a node's ranks a share of 8, docs/tuning.md). */
#define RFS_STREAMS_AUTO_MAX(n) (-1 - (n))

typedef struct rfs_options {
    const char *token;      /* token or capability; NULL: $RFS_CAP / $RFS_TOKEN / ... / none */
    int connect_timeout_ms; /* 0: default 10000 */
    int io_timeout_ms; /* 0: $RFS_IO_TIMEOUT_MS, else 120000; a reply not seen in this time fails */
    /* TCP connections per server for this file; 0: 1. RFS_STREAMS_AUTO: one on a short path;
     * on a long one (round trip >= 2 ms) up to 8 (RFS_STREAMS_AUTO_MAX(n): up to n), large
     * transfers adding streams while each raises the delivered rate (docs/tuning.md
     * "Streams"). */
    int streams;
    int sndbuf, rcvbuf; /* socket buffer sizes in bytes; 0: kernel default / autotune */
    uint32_t max_frame; /* requested max frame size; 0: default (4 MiB) */
    int window;         /* frames in flight per transfer; 0: default (8) */
    /* Write window: a pwrite of at most one frame returns once sent, without waiting for its
     * reply, while fewer than this many bytes are unconfirmed (it travels on the file's first
     * stream; a transfer over several streams first collects those replies). A failure is
     * then reported by the next call on the file; rfs_sync and rfs_close wait for every reply.
     * 0: off (every pwrite waits for its reply; the C API's default, MPI-IO's is 8 MiB). */
    size_t write_window;
    /* After a lost connection (server restart, cut or silent link), how long to keep trying
     * to reconnect, reopen the file and repeat the operation before failing it. 0: default
     * (60000, or $RFS_RETRY_TIMEOUT_MS); negative: never retry. docs/reliability.md. */
    int retry_timeout_ms;
    /* Compression of written data on the wire: "none", "lz4", "zstd", "zstd:LEVEL" (1..19) or
     * "auto" (measures and decides per file, docs/hints.md rfs_compress). NULL: $RFS_COMPRESS,
     * else auto. The server always stores the original bytes. */
    const char *compress;
    /* 1: TLS required (as an rfss: name asks); 0: as the name and $RFS_TLS say. The server is
     * verified by $RFS_TLS_PIN, else by $RFS_TLS_CA or the system's CAs (docs/security.md). */
    int tls;
    /* No field follows: callers built against an older header allocate this size. The
     * transport (TCP or UCX) comes from the name (rfs+ucx:) or $RFS_TRANSPORT. */
} rfs_options;

typedef struct rfs_file rfs_file;

/* One (offset, length) run of a list I/O request. */
typedef struct rfs_extent {
    uint64_t offset;
    uint64_t length;
} rfs_extent;

typedef struct rfs_stat_info {
    uint64_t size;
    uint32_t mode; /* permission bits */
    uint32_t type; /* RFS_TYPE_* */
    int64_t mtime_ns;
} rfs_stat_info;
#define RFS_TYPE_FILE 1u
#define RFS_TYPE_DIR 2u
#define RFS_TYPE_OTHER 3u

/* Parsed name. host without brackets. */
typedef struct rfs_name {
    char host[256];
    uint16_t port;
    char path[4096];
    /* 1: an rfs+ucx: name (the UCX transport). It sits where older headers had padding before
     * tls: the size and layout of the struct, which callers allocate, are unchanged. */
    unsigned char ucx;
    int tls; /* 1: an rfss: name (TLS required) */
} rfs_name;
/* Returns 1 if s starts with "rfs:", "rfss:" or "rfs+ucx:" (rfs://, rfss://, rfs+ucx://
 * included). */
int rfs_is_name(const char *s);
int rfs_parse_name(const char *s, rfs_name *out);

int rfs_open(const char *name, unsigned flags, unsigned mode, const rfs_options *opts,
             rfs_file **out);
int rfs_close(rfs_file *f);
/* Short counts only at end of file (reads). *done may be NULL. */
int rfs_pread(rfs_file *f, void *buf, size_t len, uint64_t off, size_t *done);
int rfs_pwrite(rfs_file *f, const void *buf, size_t len, uint64_t off, size_t *done);
/* Where rfs_pread_sink delivers data: called with each piece as it comes off the network, in
 * file order within one call of rfs_pread_sink, from a library thread (the one receiving
 * them, so the bytes are still in its cache). Pieces of different frames may be delivered
 * concurrently by different threads when the file has several streams. off is the piece's
 * offset in the remote file. Returns 0, or an errno value to stop the transfer. */
typedef int (*rfs_sink_fn)(void *ctx, uint64_t off, const void *data, size_t len);
/* Like rfs_pread, with the data handed to sink instead of copied into a buffer (rfs get
 * writes them to the local file this way). A sink failure returns RFS_E_IO naming the
 * errno; *done counts only bytes the sink accepted, in order from off. */
int rfs_pread_sink(rfs_file *f, rfs_sink_fn sink, void *ctx, size_t len, uint64_t off,
                   size_t *done);
/* List I/O: buf holds the runs' bytes packed back to back, in list order. */
int rfs_preadv(rfs_file *f, const rfs_extent *ext, size_t n, void *buf, size_t *done);
int rfs_pwritev(rfs_file *f, const rfs_extent *ext, size_t n, const void *buf, size_t *done);
int rfs_sync(rfs_file *f);
/* Waits until the server has confirmed every write of f that returned early (the write
 * window, rfs_options.write_window) and returns their first failure; no server round trip
 * of its own. rfs_sync and rfs_close do this too. */
int rfs_flush(rfs_file *f);
/* The same, but a failure stays for the next call on f to report. */
void rfs_flush_quiet(rfs_file *f);
int rfs_get_size(rfs_file *f, uint64_t *size);
int rfs_set_size(rfs_file *f, uint64_t size);
int rfs_preallocate(rfs_file *f, uint64_t size);
/* CRC-32C (Castagnoli) of the bytes [off, off+len) of the file as the server reads them from
 * its storage (the CHECKSUM op): compare with a local CRC to check a transfer end to end.
 * Long ranges are split into requests of bounded size, the CRC chained from one to the next.
 * *done (may be NULL) gets the bytes covered: fewer than len only at end of file. */
int rfs_checksum(rfs_file *f, uint64_t off, uint64_t len, uint32_t *crc, uint64_t *done);
/* "host:port" and path of an open file, for messages. */
const char *rfs_file_server(const rfs_file *f);
const char *rfs_file_path(const rfs_file *f);
/* Connections the file's transfers may use now (rfs_options.streams, or what auto and the
 * server allowed); 0 for NULL. */
int rfs_file_streams(const rfs_file *f);

int rfs_delete(const char *name, const rfs_options *opts);
int rfs_rename(const char *name, const char *new_path, const rfs_options *opts);
int rfs_mkdir(const char *name, unsigned mode, const rfs_options *opts);
/* Permission bits (within 07777) of a file or directory; the server clears set-uid/set-gid
 * unless it allows them (docs/security.md). Servers before protocol op 26: RFS_E_UNSUPPORTED. */
int rfs_chmod(const char *name, unsigned mode, const rfs_options *opts);
/* Space and inodes of the server file system holding name (like df). avail_bytes: what the
 * server's writes may still use. Servers before protocol op 27: RFS_E_UNSUPPORTED. */
typedef struct rfs_fs_info {
    uint64_t total_bytes, free_bytes, avail_bytes;
    uint64_t files, files_free;
} rfs_fs_info;
int rfs_statfs(const char *name, const rfs_options *opts, rfs_fs_info *out);

/* Whole small files, each in one request, many in flight on one connection (for directories
 * of small files, where per-file round trips would dominate). Each file is written beside its
 * target and renamed over it by the server: readers see the old file or the whole new one.
 * A file may be at most rfs_write_file_max() bytes. Servers before protocol op 28:
 * RFS_E_UNSUPPORTED / a protocol error. */
#define RFS_WRITE_EXCL 0x1u /* never replace an existing file (that item: RFS_E_EXIST) */
#define RFS_WRITE_SYNC 0x2u /* on the server's stable storage before success is reported */
/* Make the missing parent directories (as mkdir -p, mode 0777 within the server's rules), so
 * a tree's files need not wait for its directories. Servers without it: every item
 * RFS_E_UNSUPPORTED (nothing sent). */
#define RFS_WRITE_PARENTS 0x4u
typedef struct rfs_write_item {
    const char *path; /* absolute path on the server */
    const void *data;
    size_t len;
    unsigned mode; /* permission bits for a new file (0: 0644) */
    int result;    /* out: RFS_OK or this file's rfs_err */
} rfs_write_item;
size_t rfs_write_file_max(const char *name, const rfs_options *opts);
/* server_name: any rfs name of the server (its path is not used). Returns RFS_OK when every
 * item succeeded, else the first failure (rfs_last_error() names its file); each item's
 * result tells which ones were written. */
int rfs_write_files(const char *server_name, rfs_write_item *items, size_t n, unsigned flags,
                    const rfs_options *opts);
int rfs_write_file(const char *name, const void *data, size_t len, unsigned mode, unsigned flags,
                   const rfs_options *opts);
/* The reverse: whole files of at most cap bytes each into the caller's buffers (a larger
 * file: RFS_E_TOOBIG for that item), many requests in flight. */
typedef struct rfs_read_item {
    const char *path; /* absolute path on the server */
    void *data;       /* cap bytes */
    size_t cap;       /* at most rfs_write_file_max() */
    size_t len;       /* out: the file's bytes */
    int result;       /* out */
} rfs_read_item;
int rfs_read_files(const char *server_name, rfs_read_item *items, size_t n,
                   const rfs_options *opts);
int rfs_stat(const char *name, const rfs_options *opts, rfs_stat_info *st);
/* Calls fn for every entry of a directory; a non-zero return from fn stops the listing. */
typedef int (*rfs_list_fn)(void *ctx, const char *entry, const rfs_stat_info *st);
int rfs_list(const char *name, const rfs_options *opts, rfs_list_fn fn, void *ctx);
/* Round trip of an empty PING, in seconds. */
int rfs_ping(const char *name, const rfs_options *opts, double *rtt_s);

/* The TCP connection to a server as this client sees it (rfs_ping_tcp). The congestion control
 * is the system's default unless $RFS_TCP_CONGESTION names another (docs/tuning.md). */
typedef struct rfs_tcp_info {
    char congestion[16];         /* congestion control of the connection */
    int slow_start_after_idle;   /* net.ipv4.tcp_slow_start_after_idle: 1, 0, or -1 unknown */
    int restarts_after_idle;     /* 1: a write after an idle period longer than the
                                    retransmission timeout starts again in slow start */
    double rtt_ms;               /* the kernel's smoothed round-trip time */
    unsigned cwnd_segments, mss; /* congestion window now, in segments of mss bytes */
} rfs_tcp_info;
/* rfs_ping, and a description of the connection it used (tcp may be NULL). What the kernel
 * does not tell stays unknown: congestion "", slow_start_after_idle -1, numbers 0. */
int rfs_ping_tcp(const char *name, const rfs_options *opts, double *rtt_s, rfs_tcp_info *tcp);

/* ---- Services for the MPI-IO layer (also usable by other clients) ---- */

/* Atomic fetch-and-add on a named 64-bit counter kept by the server for this file (keyed by the
 * file's identity, so every client that opened the same file sees the same counter). Counters
 * start at 0 and live as long as some client has the file open. Used for the shared file pointer.
 * *old receives the value before the addition. set: if non-zero, store `delta` instead of adding. */
int rfs_counter(rfs_file *f, uint32_t key, int set, int64_t delta, int64_t *old);

/* Byte-range locks on the server, released by rfs_unlock or when the file's connection closes.
 * wait_ms: how long the server may wait for a conflicting lock to go (0 = try once). */
#define RFS_LOCK_SHARED 1u
#define RFS_LOCK_EXCL 2u
int rfs_lock(rfs_file *f, uint64_t off, uint64_t len, unsigned mode, int wait_ms);
int rfs_unlock(rfs_file *f, uint64_t off, uint64_t len);

/* File views: the server flattens a portable datatype encoding (docs/datatypes.md) and does the
 * list I/O itself, so a noncontiguous access is one small request. view_id is chosen by the
 * caller (per file); data are the packed bytes of the access. `pos` is the byte position in the
 * view's data stream (etype-offset * etype size). rfs_set_view does not wait for the server
 * when the server announced views (protocol HELLO features): a refused encoding is reported by
 * the file's next view call (rfs_view_read/rfs_view_write of that view, or rfs_set_view), which
 * then fails without touching data. With a server that did not announce them it waits, and
 * RFS_E_UNSUPPORTED comes back from rfs_set_view itself. */
int rfs_set_view(rfs_file *f, uint32_t view_id, uint64_t disp, const void *ftype_enc,
                 size_t enc_len);
int rfs_view_read(rfs_file *f, uint32_t view_id, uint64_t pos, void *buf, size_t len, size_t *done);
int rfs_view_write(rfs_file *f, uint32_t view_id, uint64_t pos, const void *buf, size_t len,
                   size_t *done);

#ifdef __cplusplus
}
#endif
#endif
