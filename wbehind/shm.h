/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* What the layers that share node memory between ranks need besides the memory itself: waits
 * on a word of shared memory and noticing a peer that died. Used by write-behind (wbehind/)
 * and the collaborative cache (ccache/); neither calls MPI from these paths. */
#ifndef RFS_WBEHIND_SHM_H
#define RFS_WBEHIND_SHM_H

#include <stdint.h>

/* futex on a word of shared memory (not FUTEX_PRIVATE: other processes wait on it too).
 * Returns when the word is no longer val, when woken, or after ms milliseconds. */
void rfs_shm_wait(uint32_t *word, uint32_t val, int ms);
void rfs_shm_wake(uint32_t *word);

/* 1 when the process pid has ended: gone, or dead but not yet reaped by its parent (the
 * process manager). 0 when alive or not known (pid <= 0). */
int rfs_shm_pid_dead(int32_t pid);

#endif
