/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The server group: the processes of one rfsd MPI job (rfsd --mpi) and where each client rank
 * is served (docs/design.md "Scaling out: rfsd as an MPI job"). Placement is a pure function
 * of the client's job id, its rank and the group's size, so every process answers PLACE
 * alike without asking the others, and a client that reconnects (to fence its old session)
 * lands on the process that served it before. Without --mpi the group is this process alone. */
#ifndef RFSD_GROUP_H
#define RFSD_GROUP_H

#include <stdint.h>

#include "proto/proto.h"

struct rfsd_conn;

/* This process is index of count; addrs[i] ("HOST:PORT", copied) is where process i listens.
 * 0, or -1 when out of memory. */
int rfsd_group_set(unsigned index, unsigned count, const char *const *addrs);
/* 1 when this process is one of a group of any size (set above): HELLO offers RFS_FEAT_PLACE. */
int rfsd_group_on(void);
/* This process's index in the group (0 without one). */
unsigned rfsd_group_index(void);
/* The process serving rank `rank` of job `job` in a group of count: round-robin from a start
 * the job's id picks, so the ranks of one job spread evenly and different jobs' rank 0 do not
 * all land on process 0. */
unsigned rfsd_group_place(const uint8_t job[RFS_PLACE_JOB_LEN], uint32_t rank, unsigned count);
/* Answers a PLACE request on c (reader thread). */
void rfsd_group_on_place(struct rfsd_conn *c, const rfs_req *req);
/* How many PLACE requests this process sent elsewhere and kept (log at shutdown, tests). */
void rfsd_group_counts(uint64_t *kept, uint64_t *moved);

#endif
