/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* An in-memory rfs_io for testing stacked layers: a growable byte array with a gate that holds
 * writes until the test opens it, and switchable failures. */
#ifndef RFS_TEST_FAKE_IO_H
#define RFS_TEST_FAKE_IO_H

#include <pthread.h>
#include <stdint.h>

#include "rfs/rfs_io.h"

typedef struct fake_io {
    rfs_io io;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint8_t *data;
    uint64_t size, cap;
    int gate_closed;    /* writes block while set */
    int writes_waiting; /* writes blocked at the gate */
    int fail_writes;    /* rfs_err returned by writes when non-zero */
    uint64_t writes, bytes_written, syncs;
    int closed;
    int *closed_flag; /* set on close (the fake frees itself) */
    int versions;     /* the version op answers: size, and the write count as mtime
                       * (0: RFS_E_UNSUPPORTED, as the remote client with an older server) */
} fake_io;

fake_io *fake_io_new(void);
void fake_io_gate(fake_io *f, int closed);
/* Waits (bounded by a deadline that fails the test) until n writes are blocked at the gate. */
int fake_io_wait_blocked(fake_io *f, int n);

#endif
