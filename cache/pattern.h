/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Access-pattern detection for prefetch: sequential (each read starts where the last ended)
 * and constant stride (reads of one length, each a fixed step after the last), from the last
 * few reads of a file. Pure functions, no locks. */
#ifndef RFS_CACHE_PATTERN_H
#define RFS_CACHE_PATTERN_H

#include <stdint.h>

enum { CX_PAT_NONE = 0, CX_PAT_SEQ = 1, CX_PAT_STRIDED = 2 };

typedef struct cx_pattern {
    int have; /* a read was seen */
    uint64_t last_off, last_len;
    uint64_t stride; /* CX_PAT_STRIDED: step between starts */
    int kind;        /* what the last steps looked like */
    int streak;      /* steps in a row that matched kind */
} cx_pattern;

/* Steps that must agree before auto prefetch trusts a pattern (three reads). */
#define CX_PAT_CONFIRM 2

void cx_pattern_note(cx_pattern *p, uint64_t off, uint64_t len);
/* The pattern to prefetch for under mode (RFS_PREFETCH_*): auto needs CX_PAT_CONFIRM
 * matching steps; enable takes one step, and with none assumes sequential reading. */
int cx_pattern_decide(const cx_pattern *p, int mode);

#endif
