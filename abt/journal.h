/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The staging journal: an append-only local file of write records (file name, extents, data).
 * Staged data lives here until it reaches the server; each record has a state byte flipped to
 * "done" once delivered, so `rfs recover` can replay exactly what was not delivered if the
 * process dies. A live journal is held with an exclusive flock, so recovery never touches a
 * journal its owner is still using.
 *
 * Format 2 (docs/abt.md "The journal format"): a 128-byte file header (magic, format, writer
 * pid, host, creation time, CRC-32C) so that a *.rfsj file that is not a journal is recognised
 * and left alone; then records, each with a CRC-32C over its header and data. Besides data
 * records the journal holds version records: the size and mtime the server reported for a
 * target file after the writer's last delivery to it, so recovery can refuse to overwrite a
 * file another writer changed since. Records are host byte order: journals are replayed on
 * the machine (architecture) that wrote them. */
#ifndef RFS_ABT_JOURNAL_H
#define RFS_ABT_JOURNAL_H

#include <pthread.h>
#include <stdint.h>

#include "rfs/rfs.h"

#define RFS_JOURNAL_SUFFIX ".rfsj"
#define RFS_JOURNAL_MAX_NAME 8192u
#define RFS_JOURNAL_MAX_EXT (1u << 20)
#define RFS_JOURNAL_FORMAT 2u
#define RFS_JOURNAL_FILE_HDR 128u

typedef struct rfs_journal {
    int fd;
    char path[4200];
    pthread_mutex_t mu;
    uint64_t end;     /* append offset */
    uint64_t pending; /* records not yet marked done */
    uint64_t gen;     /* bumped when the records are truncated away (version records too);
                       * unique across the process's journals */
    struct rfs_journal *live_next; /* the process's open journals (journal.c) */
} rfs_journal;

/* Creates a new journal file in dir (created if missing), writes its header and locks it. */
int rfs_journal_open(const char *dir, rfs_journal **out);
/* Appends one pending record; returns where its data starts (for rfs_journal_read) and
 * where the record starts (for rfs_journal_mark_done). The first record for a name in a
 * journal is preceded by a version record of that name (see rfs_journal_track). */
int rfs_journal_append(rfs_journal *j, uint64_t seq, const char *name, const rfs_extent *ext,
                       uint32_t n_ext, const void *data, uint64_t len, int sync, uint64_t *rec_off,
                       uint64_t *data_off);
int rfs_journal_read(rfs_journal *j, uint64_t data_off, void *buf, uint64_t len);
int rfs_journal_mark_done(rfs_journal *j, uint64_t rec_off);
/* Truncates the journal to its header when no record is pending (bounds staging disk use);
 * the blocks allocated past its end go too. Returns 1 if it truncated. */
int rfs_journal_trim(rfs_journal *j);
/* Closes; removes the file when nothing in it is pending. Returns 1 if the file was kept. */
int rfs_journal_close(rfs_journal *j);

/* ---- target file versions (replay safety) ---- */

typedef struct rfs_journal_version {
    int known;  /* 0: the writer could not ask the server */
    int exists; /* 0: the file did not exist */
    uint64_t size;
    int64_t mtime_ns;
    uint64_t ticket; /* order of the probes in the writing process: the highest is newest */
} rfs_journal_version;

/* Asks the server for name's size and mtime with a STAT (ticket taken before asking, so a
 * probe started later never loses to an earlier one) and remembers it; when the process's
 * journal holds records for name, appends a version record. ABT uses it only for a server
 * whose replies carry no versions (an older rfsd, or RFS_FILE_VERSIONS=off; otherwise
 * rfs_journal_note): when it opens a file and after a delivery that left no other write of
 * the file in flight, when the file's queue drained or rfs_journal_track_due says so. Failure
 * to ask is not an error: the older version stays, and recovery then refuses rather than
 * overwrites (--force). */
void rfs_journal_track(const char *name);
/* 1 if name was not asked for RFS_JOURNAL_TRACK_INTERVAL_NS: during a long stream of writes
 * to a file ABT asks at most this often (a round trip each), and always when its queue of
 * the file drains. */
#define RFS_JOURNAL_TRACK_INTERVAL_NS 1000000000LL
int rfs_journal_track_due(const char *name);
/* The version from a source that needs no round trip: the reply of the write itself
 * (rfs_io version, docs/protocol.md "File versions"). read fills size and mtime_ns and returns
 * RFS_OK, or an error (nothing is noted). It is called under the table's lock, so the note that
 * read later is the newer one whatever the threads' order afterwards. A version equal to the
 * one noted appends nothing. Returns read's result. */
typedef int (*rfs_journal_read_fn)(void *ctx, rfs_journal_version *v);
int rfs_journal_note(const char *name, rfs_journal_read_fn read, void *ctx);
/* How rfs_journal_track asks (default: rfs_stat with $RFS_TOKEN*); tests replace it. */
typedef int (*rfs_journal_probe_fn)(const char *name, rfs_journal_version *v);
void rfs_journal_set_probe(rfs_journal_probe_fn fn);
/* The default probe: rfs_stat(name, opts); a missing file gives known=1, exists=0. */
int rfs_journal_probe_stat(const char *name, const rfs_options *opts, rfs_journal_version *v);
/* Appends a version record to a journal opened for recovery (recover writes to the file too). */
int rfs_journal_append_version_fd(int fd, const char *name, const rfs_journal_version *v);

/* ---- reading (recovery, tests) ---- */

/* The file header. */
typedef struct rfs_journal_info {
    uint32_t format;
    uint32_t pid;
    char host[64];
    int64_t created_ns;
} rfs_journal_info;
/* Checks the file header of the file open on fd: RFS_OK and *info, or RFS_E_INVAL with
 * rfs_last_error saying why this is not a journal, or RFS_E_VERSION for a journal of another
 * format (1: the headerless format of rfs before 2026-11-25). */
int rfs_journal_check_header(int fd, rfs_journal_info *info);

#define RFS_JOURNAL_DATA 1u
#define RFS_JOURNAL_VERSION 2u

typedef struct rfs_journal_rec {
    uint64_t rec_off, rec_len; /* where the record starts and its length in the journal */
    uint64_t index;            /* 1-based position among the journal's records */
    unsigned kind;             /* RFS_JOURNAL_DATA or RFS_JOURNAL_VERSION */
    uint64_t seq, len;         /* DATA: write order and data bytes */
    int done;
    const char *name;
    const rfs_extent *ext;
    uint32_t n_ext;
    const void *data;            /* NULL in a metadata-only scan */
    rfs_journal_version version; /* VERSION records */
} rfs_journal_rec;

/* How a scan ended. */
typedef enum rfs_journal_end_kind {
    RFS_JOURNAL_CLEAN = 0, /* every byte belongs to an intact record */
    RFS_JOURNAL_TORN,      /* the last record is incomplete: the writer died mid-append */
    RFS_JOURNAL_CORRUPT,   /* a record fails its checksum or is malformed (data may follow) */
} rfs_journal_end_kind;

typedef struct rfs_journal_end {
    rfs_journal_end_kind kind;
    uint64_t index;         /* TORN/CORRUPT: 1-based number of the bad record */
    uint64_t off;           /* its offset in the journal */
    uint64_t bytes_after;   /* journal bytes from off to the end of the file */
    uint64_t present, want; /* TORN: bytes of the record present / its full length */
    char why[160];          /* CORRUPT: what is wrong */
    char name[512];         /* the file the bad record claims to be for, if its header is sane */
    uint64_t claimed_len;   /* and the data bytes it claims to carry (0 if unknown) */
    uint64_t next_off;      /* CORRUPT with an intact head: where the next record starts */
} rfs_journal_end;

/* Calls fn for each intact record of the journal open on fd (header already checked), in file
 * order, and says in *end how the scan ended. meta_only: data is not read (nor its checksum
 * verified): fn sees only the version records, for a quick look at them. fn returns 0 to go
 * on, or a negative rfs_err, which stops the scan and is returned. */
typedef int (*rfs_journal_rec_fn)(void *ctx, const rfs_journal_rec *r);
int rfs_journal_scan(int fd, int meta_only, rfs_journal_rec_fn fn, void *ctx, rfs_journal_end *end);
/* The same from the record at off, numbered first_index (to look past a corrupt record whose
 * head is intact: end->next_off). */
int rfs_journal_scan_from(int fd, uint64_t off, uint64_t first_index, int meta_only,
                          rfs_journal_rec_fn fn, void *ctx, rfs_journal_end *end);
/* Parses the one record at rec_off (as found by a scan), verifies it again and calls fn. */
int rfs_journal_read_at(int fd, uint64_t rec_off, rfs_journal_rec_fn fn, void *ctx);
/* Marks a record done in a journal opened for recovery. */
int rfs_journal_mark_done_fd(int fd, uint64_t rec_off);

#endif
