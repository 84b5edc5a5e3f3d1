/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Wire protocol: frame and message encode/decode. Pure functions, no I/O, no allocation.
 * Specified in docs/protocol.md; every limit below is enforced by the decoders.
 *
 * A frame is a 24-byte header followed by body_len bytes of body. All integers little-endian.
 *   off size field
 *    0   4   magic   0x31534652 (bytes "RFS1")
 *    4   2   version (RFS_PROTO_VERSION)
 *    6   2   op      (rfs_op)
 *    8   2   flags   (RFS_F_REPLY on replies)
 *   10   2   reserved, must be 0
 *   12   4   req_id  chosen by the client; the reply carries the same id; replies may come in any order
 *   16   4   status  0 in requests; 0 or a positive error code (= -rfs_err) in replies
 *   20   4   body_len  (header + body must not exceed the negotiated max frame)
 * A reply with status != 0 has the body: u16 msg_len, msg bytes (UTF-8, no NUL).
 * Bodies begin with fixed fields; ops with a payload (PWRITE data, extents, ...) carry it after
 * the fixed fields, to the end of the body, so senders can write it straight from user memory.
 */
#ifndef RFS_PROTO_H
#define RFS_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define RFS_MAGIC 0x31534652u
#define RFS_PROTO_VERSION 1u
#define RFS_HDR_SIZE 24u
#define RFS_F_REPLY 0x0001u
#define RFS_F_SUM 0x0002u /* a u32 CRC-32C of the frame follows the header (frame_sum.c) */
#define RFS_SUM_LEN 4u
#define RFS_F_PACK 0x0004u /* the payload is compressed; a pack header leads (frame_pack.c) */
#define RFS_PACK_HDR 12u
/* Request: "tell me the file's version after this op" (RFS_FEAT_VER servers; the ops of
 * RFS_OPF_VERSIONED). Reply: a version block {u64 size, i64 mtime_ns} follows the header (after
 * the checksum field): the file as this op left it, read under the op's own write ordering. */
#define RFS_F_VER 0x0008u
#define RFS_VER_LEN 16u
/* HELLO request only, to RFS_FEAT_XSTREAM servers: this connection is an additional stream of
 * a client that already holds one, so the server may refuse it to keep room for other
 * clients' first connections (docs/protocol.md "Additional streams"). */
#define RFS_F_EXTRA 0x0010u
/* Request only, to RFS_FEAT_ZREAD servers, on the reads of rfs_frame_reply_may_pack: "the
 * reply's payload may be compressed" (its reply then has RFS_F_PACK, frame_pack.c). */
#define RFS_F_ZOK 0x0020u
/* Request only, with RFS_F_ZOK, to RFS_FEAT_SHUFFLE servers: the compressed reply may also use
 * the shuffled codecs (RFS_CODEC_ID_*_SHUF). */
#define RFS_F_ZSHUF 0x0040u
/* PREADV / PWRITEV request only, to RFS_FEAT_COLL servers, on a handle that sent COLL_JOIN:
 * "this list I/O is this rank's whole part of the next collective call on the file". The
 * server numbers a handle's RFS_F_COLL requests 0, 1, 2, ...; a client sends the next one only
 * after the reply to the previous one (docs/protocol.md "Collective calls"). */
#define RFS_F_COLL 0x0080u
#define RFS_CODEC_ID_LZ4 1u /* pack header codec ids (= common/compress.h RFS_CODEC_*) */
#define RFS_CODEC_ID_ZSTD 2u
#define RFS_CODEC_ID_LZ4_SHUF 3u  /* the payload byte-shuffled as 8-byte elements, then LZ4 */
#define RFS_CODEC_ID_ZSTD_SHUF 4u /* ... then Zstandard */

#define RFS_FRAME_MIN (64u * 1024u) /* smallest max-frame a peer may ask for */
/* 4 MiB of payload plus room for the header and an op's fixed fields: MPI-IO and the CLI move
 * data in 4 MiB pieces, and each should travel as one frame, not as 4 MiB - 4 KiB plus 4 KiB. */
#define RFS_FRAME_DEFAULT (4u * 1024u * 1024u + 4096u)
#define RFS_FRAME_HARD_MAX (64u * 1024u * 1024u) /* never accepted above this */
#define RFS_PRE_HELLO_MAX 4096u                  /* frames before HELLO/AUTH completes */
#define RFS_MAX_PATH 4095u
#define RFS_MAX_MSG 1024u
#define RFS_MAX_VIEWS 16u      /* view ids 0..15 per handle (slots, reused) */
#define RFS_MAX_EXTENTS 65536u /* (offset,len) pairs in one PREADV/PWRITEV */
#define RFS_EXTENT_WIRE 16u    /* u64 offset, u64 length */
#define RFS_NONCE_LEN 32u
/* HELLO reply feature bits: what this server can do beyond the version's mandatory ops, so a
 * client need not ask with a round trip. Clients ignore bits they do not know. */
#define RFS_FEAT_VIEWS 0x0001u   /* SET_VIEW / VIEW_READ / VIEW_WRITE are served */
#define RFS_FEAT_SUM 0x0002u     /* takes RFS_F_SUM frames and answers them with RFS_F_SUM */
#define RFS_FEAT_LZ4 0x0004u     /* takes write requests with LZ4-compressed payloads */
#define RFS_FEAT_ZSTD 0x0008u    /* takes write requests with Zstandard-compressed payloads */
#define RFS_FEAT_VER 0x0010u     /* answers RFS_F_VER requests with the file's version */
#define RFS_FEAT_TPC_SRC 0x0020u /* third-party copy source: TPC_GRANT and TPC_AUTH are served */
#define RFS_FEAT_TPC_DST \
    0x0040u /* third-party copy destination: TPC_PULL/TPC_STATUS (rfsd --tpc) */
#define RFS_FEAT_XSTREAM 0x0080u  /* takes RFS_F_EXTRA on HELLO (additional streams, a share) */
#define RFS_FEAT_ZREAD 0x0100u    /* may compress read replies asked with RFS_F_ZOK */
#define RFS_FEAT_SHUFFLE 0x0200u  /* takes the shuffled codecs on writes, and RFS_F_ZSHUF */
#define RFS_FEAT_WPARENTS 0x0400u /* takes RFS_WF_PARENTS on WRITE_FILE */
/* one process of a server group (rfsd --mpi): PLACE says which process serves a client rank */
#define RFS_FEAT_PLACE 0x0800u
/* LIST_TREE is served: a directory and as many of its descendants' listings as fit, in one
 * reply (docs/protocol.md "LIST_TREE"). */
#define RFS_FEAT_LTREE 0x2000u
/* Capabilities (docs/security.md "Capabilities"): CAP_AUTH, CAP_ISSUE and CAP_REVOKE are
 * served; signed capability strings stand in for a token. */
#define RFS_FEAT_CAP 0x4000u
/* the longest capability string on the wire (CAP_AUTH, CAP_REVOKE, CAP_ISSUE's reply) */
#define RFS_CAP_WIRE_MAX 1536u
/* CAP_ISSUE flags: a lease of the connection's own capability (or identity) */
#define RFS_CAP_ISSUE_LEASE 0x1u
#define RFS_PLACE_JOB_LEN 16u   /* PLACE: the client job's id (all zero: unknown) */
#define RFS_PLACE_MAX_ADDR 255u /* PLACE reply: "HOST:PORT" of the process to use */
/* a server group whose processes turn collective calls into MPI-IO collective calls (rfsd
 * --backend mpiio): COLL_JOIN and RFS_F_COLL are served */
#define RFS_FEAT_COLL 0x1000u
#define RFS_COLL_ID_LEN 16u      /* COLL_JOIN: the id one collective open shares on all ranks */
#define RFS_COLL_MAX_HINTS 2048u /* COLL_JOIN: "key=value;..." hints for MPI_File_open */
/* MKDIR's mode field: also make the missing parent directories (as mkdir -p), so a client can
 * send a whole tree's directories at once in any order. An older server refuses the bit
 * (RFS_E_INVAL, "bits outside 07777"); a client then goes a level at a time. */
#define RFS_MKDIR_PARENTS 0x10000u
#define RFS_MAC_LEN 32u
#define RFS_SESSION_LEN 16u        /* SESSION ids and the server host's boot id */
#define RFS_LIST_MAX_ENTRIES 1024u /* per LIST reply */
/* LIST_TREE: the most entries one reply carries in all, and its most bytes (the reply must
 * also fit the frame limit), so it costs the server a bounded walk and buffer. */
#define RFS_LTREE_MAX_ENTRIES 65536u
#define RFS_LTREE_MAX_BYTES (4u << 20)
/* CHECKSUM: the most bytes one request may cover, so a request costs the server a bounded
 * amount of disk reading (a client iterates, chaining the value through `seed`). */
#define RFS_CHECKSUM_MAX_LEN (1u << 30)
#define RFS_SUM_CRC32C 1u /* CHECKSUM algorithm ids */

typedef enum rfs_op {
    RFS_OP_HELLO = 1,
    RFS_OP_AUTH = 2,
    RFS_OP_PING = 3,
    RFS_OP_SESSION = 4,
    RFS_OP_TPC_AUTH = 5,  /* AUTH with a one-time grant instead of a token (tpc) */
    RFS_OP_PLACE = 6,     /* which process of a server group serves this client rank */
    RFS_OP_COLL_JOIN = 7, /* this handle is one rank of a collective open (RFS_FEAT_COLL) */
    RFS_OP_CAP_AUTH = 8,  /* AUTH with a signed capability instead of a token (RFS_FEAT_CAP) */
    RFS_OP_OPEN = 10,
    RFS_OP_CLOSE = 11,
    RFS_OP_PREAD = 12,
    RFS_OP_PWRITE = 13,
    RFS_OP_PREADV = 14,
    RFS_OP_PWRITEV = 15,
    RFS_OP_SYNC = 16,
    RFS_OP_GET_SIZE = 17,
    RFS_OP_SET_SIZE = 18,
    RFS_OP_PREALLOCATE = 19,
    RFS_OP_STAT = 20,
    RFS_OP_DELETE = 21,
    RFS_OP_RENAME = 22,
    RFS_OP_MKDIR = 23,
    RFS_OP_LIST = 24,
    RFS_OP_CHECKSUM = 25,
    RFS_OP_CHMOD = 26,
    RFS_OP_STATFS = 27,
    RFS_OP_WRITE_FILE = 28,
    RFS_OP_READ_FILE = 29,
    RFS_OP_COUNTER = 30,
    RFS_OP_LOCK = 31,
    RFS_OP_UNLOCK = 32,
    RFS_OP_LIST_TREE = 33, /* a directory's listing with its descendants', breadth first */
    RFS_OP_SET_VIEW = 40,
    RFS_OP_VIEW_READ = 41,
    RFS_OP_VIEW_WRITE = 42,
    RFS_OP_TPC_GRANT = 50,  /* third-party copy: a one-time read capability for a path */
    RFS_OP_TPC_PULL = 51,   /* third-party copy: this server pulls a file from another */
    RFS_OP_TPC_STATUS = 52, /* third-party copy: progress and outcome of a pull */
    RFS_OP_CAP_ISSUE = 53,  /* sign a capability (or a lease) for one file (RFS_FEAT_CAP) */
    RFS_OP_CAP_REVOKE = 54, /* record a capability of this server as revoked (RFS_FEAT_CAP) */
    RFS_OP_OBJ_LEASE = 55,  /* set the lease of an object of a logical file (RFS_FEAT_CAP) */
} rfs_op;

/* Third-party copy (docs/protocol.md "Third-party copy"). */
#define RFS_TPC_ID_LEN 16u   /* grant id */
#define RFS_TPC_KEY_LEN 32u  /* grant key (256 random bits) */
#define RFS_TPC_PIN_LEN 32u  /* SHA-256 of the source's TLS certificate */
#define RFS_TPC_MAX_USES 16u /* connections one grant admits (the pull's streams) */
#define RFS_TPC_MAX_HOST 255u
#define RFS_TPC_EXCL 0x1u   /* TPC_PULL flags: never replace an existing destination */
#define RFS_TPC_VERIFY 0x2u /* compare with the source's CHECKSUM before the rename */
#define RFS_TPC_TLS 0x4u    /* connect to the source over TLS, verified by pin */
#define RFS_TPC_SYNC 0x8u   /* data and directory on stable storage before success */
#define RFS_TPC_KNOWN (RFS_TPC_EXCL | RFS_TPC_VERIFY | RFS_TPC_TLS | RFS_TPC_SYNC)
#define RFS_TPC_RUNNING 1u /* TPC_STATUS states */
#define RFS_TPC_DONE 2u

/* WRITE_FILE flags */
#define RFS_WF_EXCL 0x1u /* fail with RFS_E_EXIST if the target exists */
#define RFS_WF_SYNC 0x2u /* data and directory on stable storage before the reply */
/* Make the missing parent directories (as mkdir -p, mode 0777 within the server's rules) and
 * write the file, so a tree's files need not wait for its MKDIRs (RFS_FEAT_WPARENTS servers;
 * an older one refuses the bit with RFS_E_INVAL). */
#define RFS_WF_PARENTS 0x4u
#define RFS_WF_KNOWN (RFS_WF_EXCL | RFS_WF_SYNC | RFS_WF_PARENTS)

/* Open flags on the wire are the RFS_O_* values of rfs/rfs.h. */

typedef struct rfs_hdr {
    uint16_t version;
    uint16_t op;
    uint16_t flags;
    uint32_t req_id;
    uint32_t status;
    uint32_t body_len;
} rfs_hdr;

/* A path on the wire: u16 length + bytes (no NUL, not empty, <= RFS_MAX_PATH, no NUL inside).
 * Decoded paths point into the body; they are NOT NUL-terminated. */
typedef struct rfs_wpath {
    const char *s;
    uint16_t len;
} rfs_wpath;

typedef struct rfs_req {
    uint16_t op;
    uint32_t id;
    union {
        struct {
            uint16_t min_version, max_version;
            uint32_t max_frame;
        } hello;
        struct {
            uint8_t client_nonce[RFS_NONCE_LEN];
            uint8_t mac[RFS_MAC_LEN];
        } auth;
        /* id: this connection's session (random, chosen by the client); fence: a previous
         * session of the same client to end first (all zero: none). */
        struct {
            uint8_t id[RFS_SESSION_LEN];
            uint8_t fence[RFS_SESSION_LEN];
        } session;
        /* COLL_JOIN: handle fh is one of nranks ranks that opened the file together under id;
         * hints ("key=value;...", printable) go to the server group's MPI_File_open. */
        struct {
            uint32_t fh;
            uint8_t id[RFS_COLL_ID_LEN];
            uint32_t nranks;
            rfs_wpath hints;
        } coll_join;
        /* PLACE: rank `rank` of the client job `job` asks where it is served. */
        struct {
            uint8_t job[RFS_PLACE_JOB_LEN];
            uint32_t rank;
        } place;
        struct {
            rfs_wpath path;
            uint32_t flags;
            uint32_t mode;
        } open;
        struct {
            uint32_t fh;
        } fh; /* CLOSE, SYNC, GET_SIZE */
        struct {
            uint32_t fh;
            uint64_t off;
            uint32_t len;
        } pread;
        struct {
            uint32_t fh;
            uint64_t off;
        } pwrite; /* + data */
        /* PREADV / PWRITEV: count extents of 16 bytes follow the fixed fields (read them with
         * rfs_extent_at); PWRITEV data follows the extents and must equal their total length. */
        struct {
            uint32_t fh;
            uint32_t count;
            const uint8_t *ext;
            uint64_t total;
        } iov;
        struct {
            uint32_t fh;
            uint64_t size;
        } size; /* SET_SIZE, PREALLOCATE */
        struct {
            rfs_wpath path;
        } path; /* STAT, DELETE, STATFS */
        struct {
            rfs_wpath from, to;
        } rename;
        struct {
            rfs_wpath path;
            uint32_t mode;
        } mkdir; /* MKDIR, CHMOD */
        /* WRITE_FILE: a whole file in one request (+ data), written beside the target and
         * renamed over it; flags RFS_WF_*. */
        struct {
            rfs_wpath path;
            uint32_t flags;
            uint32_t mode;
        } write_file;
        /* READ_FILE: the whole file if it has at most max bytes, else RFS_E_TOOBIG. */
        struct {
            rfs_wpath path;
            uint32_t max;
        } read_file;
        struct {
            rfs_wpath path;
            uint32_t start;
        } list; /* start: index of first entry (LIST_TREE: the most reply bytes, 0: any) */
        struct {
            uint32_t fh;
            uint32_t key;
            uint32_t set;
            int64_t delta;
        } counter;
        struct {
            uint32_t fh;
            uint64_t off, len;
            uint32_t mode;
            uint32_t wait_ms;
        } lock;
        struct {
            uint32_t fh;
            uint64_t off, len;
        } unlock;
        struct {
            uint32_t fh;
            uint32_t view_id;
            uint64_t disp;
        } set_view; /* + data = encoding */
        struct {
            uint32_t fh;
            uint32_t view_id;
            uint64_t pos;
            uint32_t len;
        } view_read;
        struct {
            uint32_t fh;
            uint32_t view_id;
            uint64_t pos;
        } view_write; /* + data */
        /* CHECKSUM: algorithm over [off, off+len) of the file, continuing from seed. */
        struct {
            uint32_t fh;
            uint32_t algo;
            uint64_t off, len, seed;
        } checksum;
        /* TPC_AUTH: proves knowledge of grant `id`'s key (MAC as AUTH's, keyed by it). */
        struct {
            uint8_t id[RFS_TPC_ID_LEN];
            uint8_t client_nonce[RFS_NONCE_LEN];
            uint8_t mac[RFS_MAC_LEN];
        } tpc_auth;
        /* TPC_GRANT: a read capability for path, good for `uses` connections. */
        struct {
            rfs_wpath path;
            uint32_t uses;
        } tpc_grant;
        /* TPC_PULL: copy src on host:port (grant id/key; pin when RFS_TPC_TLS) to dst here. */
        struct {
            uint32_t flags, mode, port, streams;
            uint8_t id[RFS_TPC_ID_LEN];
            uint8_t key[RFS_TPC_KEY_LEN];
            uint8_t pin[RFS_TPC_PIN_LEN];
            rfs_wpath host, src, dst;
        } tpc_pull;
        struct {
            uint32_t job;
        } tpc_status;
        /* CAP_AUTH, CAP_REVOKE: a capability string (1..RFS_CAP_WIRE_MAX printable bytes) */
        struct {
            rfs_wpath str;
        } cap;
        /* OBJ_LEASE: the object at path lives until expires (Unix seconds; 0: for ever) */
        struct {
            rfs_wpath path;
            uint64_t expires;
        } obj_lease;
        /* CAP_ISSUE: a capability for path with right (1 read, 2 write, 3 manage) until
         * expires (Unix seconds); flags RFS_CAP_ISSUE_LEASE: a lease instead. */
        struct {
            rfs_wpath path;
            uint32_t right, flags;
            uint64_t expires;
        } cap_issue;
    } u;
    /* Trailing payload: PING (echoed), PWRITE, PWRITEV, SET_VIEW, VIEW_WRITE. */
    const uint8_t *data;
    uint32_t data_len;
    int want_ver;     /* RFS_F_VER: the reply is to carry the file's version */
    int extra_stream; /* RFS_F_EXTRA on a HELLO: an additional stream of a client */
    int zok;          /* RFS_F_ZOK: the reply's payload may come compressed */
    int zshuf;        /* RFS_F_ZSHUF: ... also by a shuffled codec */
    int coll;         /* RFS_F_COLL: this rank's part of the handle's next collective call */
} rfs_req;

typedef struct rfs_list_entry {
    rfs_wpath name;
    uint32_t type; /* RFS_TYPE_* */
    uint32_t mode;
    uint64_t size;
    int64_t mtime_ns;
} rfs_list_entry;

typedef struct rfs_rep {
    uint16_t op;
    uint32_t id;
    uint32_t status; /* 0 or -rfs_err */
    union {
        struct {
            const char *s;
            uint16_t len;
        } err; /* status != 0 */
        struct {
            uint16_t version;
            uint16_t features;
            uint32_t max_frame;
            uint32_t auth_required;
            uint8_t nonce[RFS_NONCE_LEN];
        } hello;
        struct {
            uint8_t server_mac[RFS_MAC_LEN];
        } auth;
        /* PLACE: process `index` of `count` serves the rank, at addr ("HOST:PORT"); an empty
         * addr means this connection's process. */
        struct {
            uint32_t index, count;
            rfs_wpath addr;
        } place;
        /* lease_ms: silence after which the server ends a session; boot: the server host's
         * boot id (a change means its page cache, and unsynced writes, may be gone). */
        struct {
            uint32_t lease_ms;
            uint32_t fenced;
            uint8_t boot[RFS_SESSION_LEN];
        } session;
        struct {
            uint32_t fh;
            uint64_t size;
        } open;
        /* PWRITE / PWRITEV / VIEW_WRITE: bytes written; GET_SIZE: size; COUNTER: old value. */
        struct {
            uint64_t value;
        } u64;
        struct {
            uint32_t type, mode;
            uint64_t size;
            int64_t mtime_ns;
        } stat;
        /* LIST: count entries follow (rfs_list_entry_next); next = start of the next page,
         * or 0 when this page is the last. */
        struct {
            uint32_t count;
            uint32_t next;
            const uint8_t *entries;
            uint32_t entries_len;
        } list;
        /* CHECKSUM: len = bytes covered (fewer than asked only at end of file). */
        struct {
            uint32_t algo;
            uint64_t len;
            uint64_t value;
        } checksum;
        /* STATFS: the file system holding the path; avail = free to this server's writes. */
        struct {
            uint64_t total, free, avail, files, files_free;
        } statfs;
        struct {
            uint8_t id[RFS_TPC_ID_LEN];
            uint8_t key[RFS_TPC_KEY_LEN];
            uint32_t ttl_ms;
            uint64_t size;
        } tpc_grant;
        struct {
            uint32_t job;
        } tpc_pull;
        /* TPC_STATUS: crc is the CRC-32C of the copy, valid in state RFS_TPC_DONE. */
        struct {
            uint32_t state, crc;
            uint64_t done, total;
        } tpc_status;
        /* CAP_AUTH: the right the connection now has, and until when (Unix seconds) */
        struct {
            uint32_t right;
            uint64_t expires;
        } cap_auth;
        /* CAP_ISSUE: the capability string */
        struct {
            rfs_wpath str;
        } cap_issue;
    } u;
    /* Trailing payload: PING, PREAD, PREADV, VIEW_READ (bytes read; short only at EOF). */
    const uint8_t *data;
    uint32_t data_len;
    /* RFS_F_VER: the file's size and mtime right after this op (success or error reply). */
    int has_ver;
    struct {
        uint64_t size;
        int64_t mtime_ns;
    } ver;
    /* Sending side of a packed read reply (rfs_frame_add_pack after encoding): data holds
     * data_len compressed bytes of pack_raw_len raw ones, by codec pack_codec (0: raw). */
    unsigned pack_codec;
    uint32_t pack_raw_len;
} rfs_rep;

/* Header. decode returns 0, or a negative rfs_err: RFS_E_PROTO (bad magic, reserved bits,
 * unknown op), RFS_E_VERSION (version), RFS_E_TOOBIG (RFS_HDR_SIZE + body_len > max_frame). */
void rfs_hdr_encode(uint8_t out[RFS_HDR_SIZE], const rfs_hdr *h);
int rfs_hdr_decode(const uint8_t in[RFS_HDR_SIZE], uint32_t max_frame, rfs_hdr *h);
/* The fields an answer to any 24 bytes needs, read whether or not they are a valid header (a
 * server answers a foreign or mangled frame once, naming its op and request id). */
void rfs_hdr_peek(const uint8_t in[RFS_HDR_SIZE], uint32_t *magic, uint16_t *op, uint32_t *req_id);

/* Encode a request's header and fixed fields into out (cap bytes). The trailing payload
 * (r->data, r->data_len; for PWRITEV also the extents when ext_src is given) is NOT copied:
 * the header's body_len includes it and the caller sends it right after out[0..*len).
 * For PREADV/PWRITEV the extents are written from ext_src (count pairs of host-order u64).
 * Returns 0 or RFS_E_TOOBIG / RFS_E_INVAL. */
int rfs_req_encode(const rfs_req *r, const uint64_t *ext_src, uint8_t *out, size_t cap,
                   size_t *len);
/* Decode a request body (the header already decoded). Pointers in r point into body. */
int rfs_req_decode(const rfs_hdr *h, const uint8_t *body, size_t len, rfs_req *r);
/* The fixed fields of a PWRITE (RFS_PWRITE_FIXED bytes) whose data are still to be read: r is
 * what rfs_req_decode would give, with data NULL and data_len the rest of the body, and the
 * same checks (the write's range included). */
#define RFS_PWRITE_FIXED 12u
int rfs_req_decode_pwrite_head(const rfs_hdr *h, const uint8_t *fixed, rfs_req *r);

/* Same for replies. For error replies set status and u.err. */
int rfs_rep_encode(const rfs_rep *r, uint8_t *out, size_t cap, size_t *len);
int rfs_rep_decode(const rfs_hdr *h, const uint8_t *body, size_t len, rfs_rep *r);

/* Extents of a decoded PREADV/PWRITEV request. */
void rfs_extent_at(const uint8_t *ext, uint32_t i, uint64_t *off, uint64_t *len);

/* LIST reply entries: encode appends one entry to out (returns bytes used, 0 if no room);
 * next decodes one entry from *p, advancing *p / *rem; returns 0, or RFS_E_PROTO. */
size_t rfs_list_entry_encode(const rfs_list_entry *e, uint8_t *out, size_t cap);
int rfs_list_entry_next(const uint8_t **p, size_t *rem, rfs_list_entry *e);
/* LIST_TREE reply data: one directory's block, `u16 len, rel, u32 count, count LIST entries`.
 * rel is the directory below the listed one ("" for itself), names joined by '/', each a valid
 * LIST name, so a client that recreates the tree cannot be steered outside its target. The
 * entries are checked too; *entries and *entries_len say where they lie, for rfs_list_entry_next. */
int rfs_ltree_block_next(const uint8_t **p, size_t *rem, rfs_wpath *rel, uint32_t *count,
                         const uint8_t **entries, size_t *entries_len);
/* Writes a block's header (rel, count) at out; bytes used, 0 if it does not fit in cap. */
size_t rfs_ltree_block_head(const char *rel, size_t rel_len, uint32_t count, uint8_t *out,
                            size_t cap);

/* Upper bound of encoded header+fixed fields for any op (excluding payloads and extents). */
#define RFS_ENC_FIXED_MAX (RFS_HDR_SIZE + 2u * (2u + RFS_MAX_PATH) + 64u)

/* ---- per-op facts (op_facts.c; docs/protocol.md "Per-op facts") ----
 * One table says what each op is, so the server, the client and the codecs ask it instead of
 * each listing ops in its own switch. A bit is a fact of the protocol; how a side acts on it
 * (which fields to read, how to run the op) stays with that side. */
#define RFS_OPF_PRE_AUTH 0x0001u /* may be sent before authentication: every other op needs it */
#define RFS_OPF_HANDLE 0x0002u   /* names an open file handle (fh) */
#define RFS_OPF_BARRIER 0x0004u /* on its handle: after every earlier request, before every later */
#define RFS_OPF_REQ_DATA 0x0008u   /* the request carries a trailing payload */
#define RFS_OPF_REP_DATA 0x0010u   /* a successful reply carries a trailing payload (bytes read) */
#define RFS_OPF_WRITES 0x0020u     /* writes the request's payload into the file's bytes */
#define RFS_OPF_MUTATES 0x0040u    /* changes the bytes or the size of an open file */
#define RFS_OPF_VERSIONED 0x0080u  /* may ask for the file's version (RFS_F_VER) */
#define RFS_OPF_PACK 0x0100u       /* its payload may travel compressed (RFS_F_PACK) */
#define RFS_OPF_IDEMPOTENT 0x0200u /* running it twice leaves what running it once does */
#define RFS_OPF_QUICK 0x0400u      /* bounded small work whatever its fields (rfsd's quick lane) */
#define RFS_OPF_AUDITED 0x0800u    /* changes the namespace or hands out access: rfsd's audit log */
#define RFS_OPF_REP_PACK 0x1000u   /* its reply's payload may travel compressed (RFS_F_ZOK) */

typedef struct rfs_op_facts {
    uint16_t op;
    const char *name;
    unsigned flags; /* RFS_OPF_* */
} rfs_op_facts;

/* The facts of op, or NULL for an op this build does not know. */
const rfs_op_facts *rfs_op_facts_of(uint16_t op);
/* 1 if op is known and has every bit of flags (0 for an unknown op). */
int rfs_op_has(uint16_t op, unsigned flags);

const char *rfs_op_name(uint16_t op);

/* ---- Additions (helpers shared by client and server; see docs/protocol.md) ---- */

/* Note: rfs_hdr_decode fills h with the raw header fields whenever the magic matches, even
 * when it returns an error, so a server can still answer req_id (and skip body_len bytes). */

#define RFS_MAX_NAME 255u        /* one LIST entry name (a directory entry, no '/') */
#define RFS_LIST_ENTRY_FIXED 26u /* u32 type, u32 mode, u64 size, i64 mtime_ns, u16 name_len */

/* 1 if op is a member of rfs_op (it has an entry in the facts table). */
int rfs_op_known(uint16_t op);

/* HELLO negotiation (server side): picks the highest version both sides speak and
 * min(client max_frame, server max_frame). Returns 0, or RFS_E_VERSION when the client's
 * [min_version, max_version] does not contain a version this build speaks. */
int rfs_hello_choose(uint16_t min_version, uint16_t max_version, uint32_t client_max_frame,
                     uint32_t server_max_frame, uint16_t *version, uint32_t *max_frame);

/* Bytes of a request's header + fixed fields + extents (what rfs_req_encode writes into out
 * when the extents are given), i.e. the `cap` it needs. 0 for an unknown op. */
size_t rfs_req_encoded_size(const rfs_req *r);

/* ---- frame checksums (frame_sum.c, docs/protocol.md "Frame checksums") ----
 * A frame with RFS_F_SUM has RFS_SUM_LEN more body bytes: right after the header, the CRC-32C
 * of the header (as sent, flag and body_len included) followed by the rest of the frame. */

/* Seals an encoded frame: frame[0..*len) holds its header and fixed fields (cap bytes of room),
 * tail the payload the caller sends after them. Sets the flag, grows body_len, inserts the
 * checksum after the header; *len grows by RFS_SUM_LEN. */
int rfs_frame_add_sum(uint8_t *frame, size_t *len, size_t cap, const void *tail, size_t tail_len);
/* For a frame with RFS_F_SUM: checks the checksum of h and the len body bytes, then strips it
 * (body and len past the field, h without the flag and those bytes), so the op decoders see
 * the frame as if it had none. A frame without the flag is left as is. RFS_E_IO on a
 * mismatch (the message says the frame was corrupted in transit), RFS_E_PROTO if too short. */
int rfs_frame_check_sum(rfs_hdr *h, const uint8_t **body, size_t *len);
/* The same in steps, for a receiver that reads the payload straight into place: the checksum
 * of the header, continued (rfs_crc32c) over the body after the field, compared at the end. */
uint32_t rfs_frame_sum_start(const rfs_hdr *h);
int rfs_frame_sum_compare(const rfs_hdr *h, uint32_t carried, uint32_t computed);
void rfs_frame_strip_sum(rfs_hdr *h);

/* ---- compressed payloads (frame_pack.c, docs/protocol.md "Compressed payloads") ----
 * A write request with RFS_F_PACK: after the header (and the checksum field, if any) a pack
 * header {u8 codec, u8 0[3], u32 fields_len, u32 raw_len}, the op's fixed fields, then the
 * payload compressed by codec. */
typedef struct rfs_pack_info {
    unsigned codec;
    uint32_t fields_len, raw_len, packed_len;
    const uint8_t *fields, *packed; /* into the body */
} rfs_pack_info;
/* frame[0..*len): header + fixed fields of a request whose raw payload has raw_len bytes and
 * goes out as packed_len compressed bytes. Inserts the pack header (before the checksum is
 * added), sets the flag and body_len. */
int rfs_frame_add_pack(uint8_t *frame, size_t *len, size_t cap, unsigned codec, uint32_t raw_len,
                       uint32_t packed_len);
/* Reads and checks the pack header of a body (its checksum field already stripped): a known
 * codec, a write op, fields inside the body, and the unpacked frame within max_frame
 * (RFS_E_TOOBIG: a decompression bomb is refused before any work). */
int rfs_frame_pack_info(const rfs_hdr *h, const uint8_t *body, size_t len, uint32_t max_frame,
                        rfs_pack_info *pi);

#endif
