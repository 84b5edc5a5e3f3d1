/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Per-file state every process of a server group must see (rfsd --mpi), kept in the file
 * system they share instead of in one process's memory (docs/design.md "Scaling out: rfsd as
 * an MPI job"):
 *  - byte-range locks (MPI atomic mode) are the file system's own open-file-description
 *    locks on the handle's descriptor: a handle owns its locks as it does in fileid.c, and a
 *    rank's lock excludes another rank's whichever processes serve them;
 *  - named counters (MPI shared file pointers) live in a small state file per data file in
 *    the group's state directory, changed under an exclusive lock. Every handle of the data
 *    file holds a shared lock on the state file's first byte while it is open, so the last
 *    handle to close anywhere finds itself alone and removes the file: a counter lives while
 *    the file is open somewhere, and a key never seen reads 0, as in one process.
 * A process that dies releases its locks with its descriptors: nothing of it lingers. */
#ifndef RFSD_FS_SHARED_H
#define RFSD_FS_SHARED_H

#include <stdatomic.h>
#include <stdint.h>

#define RFSD_FSS_COUNTERS 1024u /* named counters per file, as RFSD_MAX_COUNTERS_PER_FILE */

/* Turns the shared mode on with the state directory dir (on the file system all processes
 * share, outside every export). max_waiters: workers that may sit in a lock wait at once.
 * 0, or -1 after a message on stderr. */
int rfsd_fss_init(const char *dir, int max_waiters);
/* 1 once rfsd_fss_init succeeded: LOCK, UNLOCK and COUNTER go through the functions below. */
int rfsd_fss_on(void);

/* The state file of the data file open as data_fd, opened and marked as in use by one more
 * handle. *state_fd gets its descriptor. */
int rfsd_fss_attach(int data_fd, const char *shown, int *state_fd);
/* Gives back what attach took; the last handle anywhere removes the state file. */
void rfsd_fss_detach(int data_fd, int state_fd);

/* As rfsd_lock/rfsd_unlock (fileid.h), owned by the descriptor data_fd. */
int rfsd_fss_lock(int data_fd, const char *shown, uint64_t off, uint64_t len, uint32_t mode,
                  uint32_t wait_ms, const atomic_int *cancelled);
int rfsd_fss_unlock(int data_fd, const char *shown, uint64_t off, uint64_t len);
/* As rfsd_counter_op, on the counters of the state file. */
int rfsd_fss_counter(int state_fd, const char *shown, uint32_t key, int set, int64_t delta,
                     int64_t *old);

#endif
