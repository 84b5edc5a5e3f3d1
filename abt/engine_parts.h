/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* What the files of the ABT engine share with each other (not with abt_io.c): the engine
 * itself, its tuning constants and the functions one part calls in another. Unless said
 * otherwise, a function is called with the engine's mu held. */
#ifndef RFS_ABT_ENGINE_PARTS_H
#define RFS_ABT_ENGINE_PARTS_H

#include "abt/engine.h"

/* Coalescing stops at this many extents per chunk: one list-I/O frame carries them. */
#define CHUNK_MAX_EXT 65536u
/* Bx is re-estimated once this much time passed between completions (see note_bandwidth). */
#define BX_WINDOW_S 0.25
/* Senders start a chunk only once the application has been out of ABT's write calls for
 * SEND_QUIET_S, or the chunk has waited SEND_DEFER_MAX_S (see sendable()). */
#define SEND_QUIET_S 0.0005
#define SEND_DEFER_MAX_S 0.02

static inline int abt_overlaps(const abt_chunk *a, uint64_t lo, uint64_t hi)
{
    return a->lo < hi && lo < a->hi;
}

/* engine.c: the calling thread's CPU time so far, in seconds (no lock needed). */
double abt_thread_cpu(void);

/* pool.c: the buffer pool. */
void abt_pool_set_cap(abt_engine *e, uint64_t cap_bytes);
/* A buffer of size bytes, or NULL when the cap has no room for it. */
void *abt_pool_get(abt_engine *e, uint64_t size);
void abt_pool_put(abt_engine *e, void *b, uint64_t size);
void abt_pool_release_all(abt_engine *e);
/* Touches buffers up to prefault_bytes ahead of use; drops mu while touching. */
void abt_pool_prefault(abt_engine *e);

/* staging.c: the journal's room and appends. */
uint64_t abt_rec_bytes(const abt_file *f, uint64_t len, uint32_t n_ext);
/* The append offset of st's journal (takes the journal's own lock). */
uint64_t abt_journal_end(abt_stage *st);
/* Makes sure st's journal has room for everything it may have to take, plus extra. */
int abt_reserve(abt_engine *e, abt_stage *st, uint64_t extra);
/* Gives the room held past the journal's end back to the file system. */
void abt_release_reserve(abt_stage *st);
/* Truncates st's journal when nothing in it is pending; the room held ahead went with it. */
void abt_trim_journal(abt_stage *st);
/* Stages a chunk's data; called WITHOUT mu, with the chunk marked busy. */
int abt_stage_chunk(abt_chunk *c, const void *data, int sync, int from_memory);

/* queue.c */
void abt_fifo_remove(abt_engine *e, abt_chunk *c);

/* place.c: copies the next len bytes of the source to dst (called without mu: the chunk's
 * bytes are the caller's while it is busy). */
void abt_src_copy(abt_src *s, uint8_t *dst, size_t len);
/* Puts a new chunk's data in a buffer or in the journal; may wait for room. */
int abt_place_piece(abt_chunk *c, abt_src *src);

/* waits.c: waits on cv until woken or until the monotonic time `until`. */
void abt_wait_until(abt_engine *e, pthread_cond_t *cv, double until);

/* sender.c / stager.c: the threads' bodies (arg: the engine). */
void *abt_sender_main(void *arg);
void *abt_stager_main(void *arg);

/* complete.c: a send is over (rc, msg: its outcome; noted: the version after it is already
 * in the journal's table). The chunk leaves the queue. */
void abt_finish_chunk(abt_chunk *c, int rc, const char *msg, int noted);

#endif
