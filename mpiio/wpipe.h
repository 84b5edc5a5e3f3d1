/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Pipelined list writes for two-phase collective writes (wpipe.c). */
#ifndef RFS_MPIIO_WPIPE_H
#define RFS_MPIIO_WPIPE_H

#include "mpiio/mpiio_internal.h"

/* Rounds in flight: the hint rfs_cb_pipeline (default 2, enough to keep the link busy across
 * round boundaries), at most this many; each holds one round's buffer (about cb_buffer_size)
 * until its replies are in, and the buffer then waits in the pipe for a later round
 * (mp_wpipe_reuse) until mp_wpipe_finish. */
#define MP_WPIPE_MAX_DEPTH 4

typedef struct mp_wpipe mp_wpipe;

/* Starts a pipe with `depth` writer threads (no MPI in them). NULL if no thread could be
 * started: the caller then writes synchronously. */
mp_wpipe *mp_wpipe_start(mp_file *f, int depth);
/* Queues the list write of ext[0..n) from buf (cap bytes allocated); the pipe takes ownership
 * of ext and buf. Blocks while `depth` writes are in flight. Returns RFS_OK, or the first
 * failure of an earlier write (the job is then dropped). */
int mp_wpipe_submit(mp_wpipe *p, rfs_extent *ext, size_t n, char *buf, size_t cap);
/* A data buffer of a finished write with room for at least need bytes, now the caller's, or
 * NULL if there is none: the next round fills pages already touched instead of fresh ones.
 * *cap gets its size. */
char *mp_wpipe_reuse(mp_wpipe *p, size_t need, size_t *cap);
/* Waits for every queued write, stops the threads and frees p. Returns RFS_OK or the first
 * failure (rfs_err); *st (may be NULL) gets it with its message. */
int mp_wpipe_finish(mp_wpipe *p, rfs_status *st);

#endif
