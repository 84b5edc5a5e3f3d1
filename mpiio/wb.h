/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Two-stage write-behind for MPI-IO (hint rfs_write_behind; wbehind/wbehind.h, docs/design.md
 * "Write-behind"): the MPI side. Only these functions call MPI, all in the application's
 * thread: the shared segments are made at open and freed at close. */
#ifndef RFS_MPIIO_WB_H
#define RFS_MPIIO_WB_H

#include "mpiio/mpiio_internal.h"

/* Collective over f->comm, on every rank whatever its open's outcome (ok == 0: this rank's
 * open failed, so nobody stacks the layer). Stacks write-behind on f->io when the hints ask
 * for it and the file may be written; the ranks sharing a node's memory form one group. */
int mp_wb_open(mp_file *f, int ok);
/* Whether mp_wb_prepare applies: the hints alone decide (the same on every rank). */
int mp_wb_preparable(const mp_file *f);
/* Collective over f->comm, while this rank's network open runs on another thread (open.c):
 * makes the node's shared segments ahead of mp_wb_open, which then uses them (or frees them
 * if the open failed), so their setup (the node communicator, the shared window, its
 * agreements: 7-15 ms at 4 ranks) overlaps the server's round trips. */
void mp_wb_prepare(mp_file *f);
/* Before f->io is closed: this rank's bytes to the server; collective: the group waits for
 * every rank's before the owners stop and the segments are freed (collective 0, at
 * finalize: the owner stops, peers that find it gone write their bytes themselves). */
void mp_wb_close(mp_file *f, int collective);
/* mp_wb_close for MPI_File_close, one round trip shorter (rfs_wb_flush_closing): the owners
 * answer once this rank's bytes are sent, each rank's close of f->io collects the replies
 * behind its CLOSE, and mp_wb_closed, after f->io is closed, hears from the owners. */
void mp_wb_close_begin(mp_file *f);
/* After f->io is closed (collective, only after mp_wb_close_begin; nothing without write-
 * behind): the group meets, this rank learns whether an owner's close failed with its bytes
 * (then code, if MPI_SUCCESS, becomes that error), and the segments are freed. */
int mp_wb_closed(mp_file *f, int code);
/* Atomic mode on (flag 1): this rank's bytes go to the server and writes pass straight
 * through; off: buffering again. Before the ranks agree on the call's outcome. */
void mp_wb_atomic(mp_file *f, int flag);

#endif
