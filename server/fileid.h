/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* State shared by every connection that has the same file open, keyed by the file's identity
 * (st_dev, st_ino): named 64-bit counters (MPI shared file pointers) and byte-range locks
 * (MPI atomic mode). An entry lives while at least one handle on any connection refers to it. */
#ifndef RFSD_FILEID_H
#define RFSD_FILEID_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct rfsd_fileid rfsd_fileid;

#define RFSD_MAX_COUNTERS_PER_FILE 1024u
#define RFSD_MAX_LOCKS_PER_FILE 65536u

/* Takes a reference (creates the entry on first open; fd, an open descriptor of the file, tells
 * which file system it lives on). NULL on allocation failure. */
rfsd_fileid *rfsd_fileid_get(dev_t dev, ino_t ino, int fd);
/* Drops a reference taken by get; the last one frees counters and locks. */
void rfsd_fileid_put(rfsd_fileid *f);

/* Bracket every data write to the file. On local file systems whose buffered writes hold the
 * inode lock exclusively anyway (tmpfs, ext4, XFS, btrfs), workers writing one file queue here
 * and sleep, instead of spinning in the kernel on that lock and taking CPU from the network
 * threads (6% of the server's CPU in a loopback put on 2 cores). On other file systems (NFS,
 * Lustre, GPFS...), where writes to different ranges do run in parallel, these do nothing. */
void rfsd_fileid_write_begin(rfsd_fileid *f);
void rfsd_fileid_write_end(rfsd_fileid *f);
/* The same for a write or size change whose reply carries the file's version (RFS_F_VER):
 * no other change of the file may land between it and the fstat that reads the version, so
 * the version is exactly the one this change produced, on every file system. Where writes
 * run in parallel the others take the lock shared and this one exclusive; it costs that
 * parallelism only while such writes (ABT's) arrive. */
void rfsd_fileid_vwrite_begin(rfsd_fileid *f);
void rfsd_fileid_vwrite_end(rfsd_fileid *f);

/* Atomic fetch-and-add (or store when set != 0); *old gets the value before. */
int rfsd_counter_op(rfsd_fileid *f, uint32_t key, int set, int64_t delta, int64_t *old);

/* Byte-range lock [off, off+len) (len 0 = to the end of any file) for owner; mode
 * RFS_LOCK_SHARED or RFS_LOCK_EXCL. Waits up to wait_ms (capped by the server's bound) for
 * conflicting locks held by other owners to go; then RFS_E_BUSY. `cancelled` is polled after
 * every wake-up: when it becomes non-zero (disconnect, shutdown) the wait ends with RFS_E_BUSY.
 * acct (NULL: none) counts the locks held by the owner's connection: at the per-connection
 * limit (rfsd_lock_set_max_per_conn) a new lock, or an UNLOCK that splits one, is RFS_E_NOSPC. */
int rfsd_lock(rfsd_fileid *f, const void *owner, uint64_t off, uint64_t len, uint32_t mode,
              uint32_t wait_ms, const atomic_int *cancelled, atomic_uint *acct);
/* Set once at start-up (rfsd --max-locks); default RFSD_MAX_LOCKS_PER_FILE. */
void rfsd_lock_set_max_per_conn(unsigned n);
/* Releases owner's locks within [off, off+len) (len 0 = to the end), splitting partly covered
 * ones. Releasing nothing is not an error. */
int rfsd_unlock(rfsd_fileid *f, const void *owner, uint64_t off, uint64_t len);
/* Releases every lock of owner (handle close, disconnect). */
void rfsd_unlock_all(rfsd_fileid *f, const void *owner);
/* Wakes every lock waiter so it re-checks its cancellation flag (shutdown, disconnect). */
void rfsd_fileid_wake_all(void);

/* Limits how many workers may sit in lock waits at once, so some worker always stays free to run
 * the UNLOCK that ends the wait. Set once at start-up. */
void rfsd_lock_set_max_waiters(int n);

#endif
