/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfsd --backend mpiio, the MPI side: one thread per process makes every MPI call after start,
 * so rfsd's worker threads never enter MPI (MPI_THREAD_SERIALIZED is enough, with MPICH and
 * Open MPI alike). Process 0's thread orders the collective calls: the others tell it which
 * parts they hold, and it tells all, in one order, which call to issue next; so every process
 * issues the same collective calls in the same order, whatever order the clients' requests
 * reach them in, and none can deadlock (docs/design.md "The MPI-IO backend"). */
#ifndef RFSD_COLL_MPI_H
#define RFSD_COLL_MPI_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"
#include "rfs/rfs.h"

enum { RFSD_PIECE_IO = 1, RFSD_PIECE_CLOSE = 2 };

/* One rank's part of a collective call (or of a collective close), from a worker to the MPI
 * thread. The worker owns it again once done is set (IO); the MPI thread frees a CLOSE. */
typedef struct rfsd_piece {
    int kind; /* RFSD_PIECE_* */
    uint8_t id[RFS_COLL_ID_LEN];
    uint32_t seq, nranks;
    uint32_t flags; /* RFS_O_* of the handle */
    char *path;     /* the file on this host (owned by the handle's membership) */
    const char *hints;
    const char *shown; /* the client's path, for messages */
    int is_write;
    rfs_extent *ext; /* the part's file runs, in the order of its data */
    size_t n;
    const uint8_t *wdata; /* writes: the data, packed in run order */
    uint8_t *rbuf;        /* reads: room for every run's bytes, packed */
    uint64_t total;       /* the runs' bytes */
    /* results */
    int done, rc;
    uint64_t got; /* reads: the bytes before the end of file, in run order */
    char msg[RFS_MAX_MSG];
    struct rfsd_piece *next;
} rfsd_piece;

/* After MPI_Init_thread and the group's start-up: the MPI thread takes over MPI. max_waiting
 * is how many parts may wait at once (workers that can block); a call whose parts are not all
 * in after timeout_ms fails. 0, or -1 after a message. */
int rfsd_coll_mpi_start(unsigned max_waiting, unsigned timeout_ms);
/* 1 once started and until stopped. */
int rfsd_coll_mpi_running(void);
/* Hands p to the MPI thread. IO parts: RFS_OK, or RFS_E_BUSY when max_waiting parts wait
 * already (then p stays the caller's). */
int rfsd_coll_submit(rfsd_piece *p);
/* Waits until the MPI thread is done with an IO part; returns p->rc. */
int rfsd_coll_wait(rfsd_piece *p);
/* Shutdown (main thread, before the connections are drained): process 0 tells every process
 * to close its files and stop, parts still waiting fail, and MPI is finalized (no worker ever
 * calls MPI). A process whose group does not answer within 10 s leaves without finalizing. */
void rfsd_coll_mpi_stop(void);

#endif
