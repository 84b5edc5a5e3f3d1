/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* File descriptors as a shared resource (docs/security.md): rfsd raises its soft limit to the
 * hard one, keeps a reserve that OPEN may not use so that connections can always be accepted,
 * and answers clients it cannot serve with "server busy" instead of hanging them at HELLO. */
#ifndef RFSD_FDLIMIT_H
#define RFSD_FDLIMIT_H

#define RFSD_FD_RESERVE 64u /* descriptors below the limit that OPEN never takes */

/* Raises RLIMIT_NOFILE's soft limit to the hard limit and opens the spare descriptor. Returns
 * the limit in force. */
unsigned long rfsd_fd_init(void);
/* RFS_OK if a file opened as fd leaves the reserve untouched; else RFS_E_NOSPC naming the
 * limit (the caller closes fd). */
int rfsd_fd_check(int fd, const char *shown);
/* 1 if an accepted connection on fd would eat into the half of the reserve kept for replies. */
int rfsd_fd_conn_too_high(int fd);
/* Answers the client on fd (takes it) with an error reply to its HELLO, "server busy: <why>",
 * then closes it, on a detached thread so the acceptor never waits for a slow client. */
void rfsd_busy_reply(int fd, const char *why);
/* accept4 failed with EMFILE/ENFILE: frees the spare descriptor to accept one connection and
 * tell it busy (why), so the client is not left hanging. 0 if a connection was taken, -1 if
 * the spare is in use (the caller backs off). */
int rfsd_busy_accept_with_spare(int lfd, const char *why);

#endif
