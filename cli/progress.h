/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Progress bar of the rfs command on stderr: only on a terminal, only once a transfer has run
 * for about a second (RFS_PROGRESS_MIN_SECONDS overrides that delay, for tests), redrawn at
 * most ten times a second. Shows bytes done / total, percent, rate and time left. */
#ifndef RFS_CLI_PROGRESS_H
#define RFS_CLI_PROGRESS_H

#include <stdint.h>

typedef struct progress {
    int enabled;  /* stderr is a terminal and the user did not turn it off */
    int drawn;    /* something is on the line and needs a final newline */
    double start; /* monotonic seconds */
    double last_draw;
    double min_seconds;
    uint64_t total;
    char label[40];
} progress;

double progress_now(void);
/* allowed: not --quiet and not --no-progress; stderr being a tty is checked here. */
void progress_init(progress *p, const char *label, uint64_t total, int allowed);
void progress_update(progress *p, uint64_t done);
/* Draws the final state (when a bar was shown) and ends the line. */
void progress_finish(progress *p, uint64_t done, int ok);

#endif
