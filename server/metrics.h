/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfsd's counters in Prometheus' text format, written to a file (--metrics-file) that a
 * node_exporter textfile collector or any scraper reads (metrics.c). */
#ifndef RFSD_METRICS_H
#define RFSD_METRICS_H

#include <stdint.h>

typedef struct rfsd_server rfsd_server;

/* One executed request: its op, result, payload bytes in and out, time spent executing. */
void rfsd_metrics_request(uint16_t op, int rc, uint64_t bytes_in, uint64_t bytes_out, int64_t ns);
/* A connection accepted and handed a reader. */
void rfsd_metrics_connection(void);
/* Starts the writer (every interval_ms, atomically: temporary file + rename). 0 or -1. */
int rfsd_metrics_start(rfsd_server *srv, const char *path, int interval_ms);
/* Writes the last state and stops the writer (no-op if never started). */
void rfsd_metrics_stop(void);

#endif
