/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The storage backend: POSIX calls on files beneath the export root. Every function returns
 * RFS_OK or a negative rfs_err with a message (rfs_last_error) naming the client's path and the
 * cause; the server's real root path never appears. */
#ifndef RFSD_BACKEND_H
#define RFSD_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "confine.h"
#include "rfs/rfs.h"

/* flags: RFS_O_*; only regular files can be opened. */
int rfsd_be_open(int root_fd, const rfsd_path *p, uint32_t flags, uint32_t mode, int *fd_out,
                 struct stat *st);
/* Reads until len bytes or end of file; *done gets the count. */
int rfsd_be_pread(int fd, const char *shown, void *buf, size_t len, uint64_t off, size_t *done);
/* How many of the len bytes at off a read would return now (0 at or past end of file), for
 * replies sent straight from the file. */
int rfsd_be_readable(int fd, const char *shown, size_t len, uint64_t off, size_t *avail);
/* CRC-32C of [off, off+len) continued from seed, read through a bounded buffer; *done gets
 * the bytes covered (fewer than len only at end of file). */
int rfsd_be_checksum(int fd, const char *shown, uint64_t off, uint64_t len, uint32_t seed,
                     uint32_t *crc, uint64_t *done);
/* Writes all len bytes. */
int rfsd_be_pwrite(int fd, const char *shown, const void *buf, size_t len, uint64_t off);
int rfsd_be_sync(int fd, const char *shown);
int rfsd_be_get_size(int fd, const char *shown, uint64_t *size);
int rfsd_be_set_size(int fd, const char *shown, uint64_t size);
/* Makes sure blocks up to size are allocated; never shrinks the file. */
int rfsd_be_preallocate(int fd, const char *shown, uint64_t size);

int rfsd_be_stat(int root_fd, const rfsd_path *p, rfs_stat_info *st);
/* unlink a file, or rmdir an empty directory */
int rfsd_be_delete(int root_fd, rfsd_path *p);
int rfsd_be_rename(int root_fd, rfsd_path *from, rfsd_path *to);
int rfsd_be_mkdir(int root_fd, rfsd_path *p, uint32_t mode);
/* mkdir -p: the missing ancestors of p first (an existing one is fine), then p itself (whose
 * existing is RFS_E_EXIST, as for rfsd_be_mkdir). */
int rfsd_be_mkdir_parents(int root_fd, const rfsd_path *p, uint32_t mode);
/* Permission bits of a file or directory beneath the root (symbolic links are followed only
 * within it). guard(cfg-dependent) trims the bits a client may set, knowing whether the target
 * is a directory. */
int rfsd_be_chmod(int root_fd, const rfsd_path *p, uint32_t mode,
                  uint32_t (*guard)(const void *cfg, uint32_t mode, int is_dir), const void *cfg);
/* A whole file from one buffer, atomically: written to a hidden name in the target's
 * directory, then renamed over the target (excl: never over an existing one, RFS_E_EXIST);
 * with sync, data and directory are on stable storage before it returns. */
int rfsd_be_write_file(int root_fd, rfsd_path *p, uint32_t mode, int excl, int sync,
                       const void *data, size_t len);
/* A whole regular file of at most max bytes into a new malloc'd *out (*len bytes). */
int rfsd_be_read_file(int root_fd, const rfsd_path *p, uint32_t max, uint8_t **out, size_t *len);
/* Space and inodes of the file system holding the path. */
int rfsd_be_statfs(int root_fd, const rfsd_path *p, uint64_t *total, uint64_t *free_bytes,
                   uint64_t *avail, uint64_t *files, uint64_t *files_free);
/* Encodes the directory's entries from index `start` (".", ".." excluded) into out with
 * rfs_list_entry_encode, at most RFS_LIST_MAX_ENTRIES and cap bytes; *next = index of the
 * first entry not sent, or 0 when the listing is complete. */
int rfsd_be_list(int root_fd, const rfsd_path *p, uint32_t start, uint8_t *out, size_t cap,
                 size_t *used, uint32_t *count, uint32_t *next);

#endif
