/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Per-export byte quotas (docs/operations.md "Quotas"). The usage of an export is the sum of
 * the sizes (st_size) of the regular files beneath its root: counted by a scan when rfsd
 * starts, then kept by rfsd itself as its clients write, truncate, preallocate, replace and
 * delete files. A request that would take the usage past the quota is refused with
 * RFS_E_DQUOT before any of its bytes are written.
 *
 * Each open file has an accounted size (the size its usage counts, including writes admitted
 * and still running), shared by every handle on it, so writers filling disjoint parts of one
 * file (MPI ranks) are counted once, without serialising their writes. When the last handle on
 * a file closes, its accounted size is set to what the file really holds (a failed write, a
 * truncate racing a write, a change made behind rfsd's back while it was open). Files changed
 * behind rfsd's back while not open by it are counted only at the next start. */
#ifndef RFSD_QUOTA_H
#define RFSD_QUOTA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "confine.h"

typedef struct rfsd_quota rfsd_quota;
typedef struct rfsd_qfile rfsd_qfile;

/* A quota of limit bytes for the export called name, usage counted beneath dir. NULL after a
 * message on stderr. */
rfsd_quota *rfsd_quota_start(const char *name, const char *dir, uint64_t limit);
uint64_t rfsd_quota_used(const rfsd_quota *q);
uint64_t rfsd_quota_limit(const rfsd_quota *q);

/* STATFS of a quota export: the file system's figures capped by the quota, so that df and
 * clients planning space see what they may still write. */
void rfsd_quota_statfs(rfsd_quota *q, uint64_t *total, uint64_t *free_bytes, uint64_t *avail);

/* The accounting of an opened file (st: its fstat), one reference per handle. NULL: out of
 * memory. put with the handle's fd (still open) for the last handle's reconciliation. */
rfsd_qfile *rfsd_quota_file_get(rfsd_quota *q, const struct stat *st);
void rfsd_quota_file_put(rfsd_qfile *f, int fd);

/* Before a write of len bytes at off (append: at the end, wherever that is): admits the growth
 * it brings, or RFS_E_DQUOT naming the export and its quota. */
int rfsd_quota_write(rfsd_qfile *f, int append, uint64_t off, uint64_t len, const char *shown);
/* SET_SIZE (prealloc 0) or PREALLOCATE (1) to size through the backend, with its growth
 * admitted first and a shrink freed. */
int rfsd_quota_resize(rfsd_qfile *f, int fd, const char *shown, uint64_t size, int prealloc);

/* DELETE, RENAME and WRITE_FILE through the backend, freeing the bytes of the file they remove
 * or replace and admitting WRITE_FILE's growth first. */
int rfsd_quota_delete(rfsd_quota *q, int root_fd, rfsd_path *p);
int rfsd_quota_rename(rfsd_quota *q, int root_fd, rfsd_path *from, rfsd_path *to);
int rfsd_quota_write_file(rfsd_quota *q, int root_fd, rfsd_path *p, uint32_t mode, int excl,
                          int sync, const void *data, size_t len);

#endif
