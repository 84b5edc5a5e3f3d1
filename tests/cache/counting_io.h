/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* An in-memory rfs_io below the cache that counts what reaches it: read calls and bytes, per
 * range; reads at or after a gate offset block while the gate is closed; reads touching a
 * failing range fail (a given number of times, or always). What the cache needs it does
 * itself; the other slots are the generic ops (no locks, counters, views or versions). */
#ifndef RFS_TEST_COUNTING_IO_H
#define RFS_TEST_COUNTING_IO_H

#include <pthread.h>
#include <stdint.h>

#include "rfs/rfs_io.h"

typedef struct counting_io {
    rfs_io io;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint8_t *data;
    uint64_t size;
    uint64_t reads, bytes_read, writes, syncs;
    uint64_t preadv_calls;
    /* reads whose bytes touch [watch_lo, watch_hi) */
    uint64_t watch_lo, watch_hi, watch_reads;
    uint64_t gate_at; /* reads starting at or after it wait while gate_closed */
    int gate_closed, blocked;
    uint64_t fail_lo, fail_hi; /* reads touching it fail */
    int fail_left;             /* failures left; -1: always */
    uint64_t failures;
    int *closed_flag;
} counting_io;

/* size bytes, byte i = byte_at(i). */
counting_io *counting_io_new(uint64_t size);
uint8_t byte_at(uint64_t i);
/* Waits (a deadline fails the test) until n reads are held at the gate. */
void counting_io_wait_blocked(counting_io *c, int n);
void counting_io_gate(counting_io *c, int closed);
uint64_t counting_io_get(counting_io *c, const uint64_t *field);

#endif
