/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfsd --backend mpiio, the request side (docs/design.md "The MPI-IO backend"). A handle that
 * sent COLL_JOIN is one rank of a collective open; each of its RFS_F_COLL list I/O requests is
 * that rank's part of the next collective call. The part is handed to this process's MPI
 * thread (coll_mpi.h), which issues one MPI-IO collective call with every process of the group
 * once all ranks' parts have reached the group, and the request's worker waits for it. */
#ifndef RFSD_COLL_H
#define RFSD_COLL_H

#include <stdint.h>

#include "proto/proto.h"

struct rfsd_handle;

/* One handle's membership of a collective open (conn.h rfsd_handle.coll). */
typedef struct rfsd_coll_member {
    uint8_t id[RFS_COLL_ID_LEN];
    uint32_t nranks;
    uint32_t next_seq; /* the number the next RFS_F_COLL request gets */
    char *hints;       /* as the client sent them, NUL-terminated */
    char *real_path;   /* the file's path on this host, for MPI_File_open */
} rfsd_coll_member;

/* 1 when this process serves collective calls (rfsd --mpi --backend mpiio, MPI thread up). */
int rfsd_coll_on(void);
/* COLL_JOIN on h (worker thread). */
int rfsd_coll_join(struct rfsd_handle *h, const rfs_req *q);
/* An RFS_F_COLL PREADV or PWRITEV on h: blocks until the group's collective call is done.
 * Reads: *buf gets the malloc'd bytes, which rep points at. */
int rfsd_coll_io(struct rfsd_handle *h, const rfs_req *q, rfs_rep *rep, uint8_t **buf);
/* CLOSE of a joined handle, or its release with a lost connection: counts towards the group's
 * collective MPI_File_close (once every rank's handle is gone), and frees the membership. */
void rfsd_coll_leave(struct rfsd_handle *h);

#endif
