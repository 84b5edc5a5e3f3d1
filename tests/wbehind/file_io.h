/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* An rfs_io over a local file, for the write-behind tests: every process of a test opens the
 * same file, as the ranks of a job open the same remote file. Writes that reach [fail_lo,
 * fail_hi) fail with RFS_E_IO. */
#ifndef RFS_TESTS_WBEHIND_FILE_IO_H
#define RFS_TESTS_WBEHIND_FILE_IO_H

#include "rfs/rfs_io.h"

int file_io_open(const char *path, uint64_t fail_lo, uint64_t fail_hi, rfs_io **out);
/* From now on this process's writes wait while *word (shared memory) is non-zero; NULL: never. */
void file_io_hold(int *word);
/* This process's writes that waited so far (held), and its pwrite and pwritev calls. */
int file_io_held(void);
int file_io_write_calls(void);
/* From now on this process's refused writes return as if they went (as a write that returns
 * before its reply does), and the next flush that reports, or the close, fails with
 * RFS_E_IO naming the first. */
void file_io_fail_late(int on);
/* From now on this process's plain writes act as writes through a write window (each
 * returns once sent and advances the write mark) and its list writes as writes spread over
 * several frames, which return only once answered: they wait while *answers_held (shared
 * memory; bounded) and count as writes that waited (file_io_held). */
void file_io_window(int *answers_held);
/* This process's flush calls (the layer above waiting for writes to be answered). */
int file_io_flush_calls(void);

#endif
