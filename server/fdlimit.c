/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Descriptor limits (issue #21 item 3). Without these, five clients opening 4096 files each
 * used up rfsd's 1024 descriptors: accept failed and every new client hung at HELLO. */
#include "fdlimit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "proto/proto.h"

static unsigned long fd_limit = 1024;
static atomic_int spare = -1; /* /dev/null, closed to accept one client when fds run out */

unsigned long rfsd_fd_init(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            rlim_t want = rl.rlim_max;
            rl.rlim_cur = want;
            if (setrlimit(RLIMIT_NOFILE, &rl))
                RFS_LOGW("cannot raise the descriptor limit to %llu: %s", (unsigned long long)want,
                         strerror(errno));
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        fd_limit = rl.rlim_cur == RLIM_INFINITY ? (unsigned long)-1 : (unsigned long)rl.rlim_cur;
    }
    atomic_store(&spare, open("/dev/null", O_RDONLY | O_CLOEXEC));
    return fd_limit;
}

int rfsd_fd_check(int fd, const char *shown)
{
    if (fd_limit > RFSD_FD_RESERVE && (unsigned long)fd < fd_limit - RFSD_FD_RESERVE)
        return RFS_OK;
    return rfs_fail(RFS_E_NOSPC,
                    "%s: the server is out of file descriptors (%lu, of which %u "
                    "are kept for new connections); close some files",
                    shown, fd_limit, RFSD_FD_RESERVE);
}

int rfsd_fd_conn_too_high(int fd)
{
    return fd_limit > RFSD_FD_RESERVE && (unsigned long)fd >= fd_limit - RFSD_FD_RESERVE / 2;
}

/* Busy answers in progress: a flood of connections past the limit must not become a flood of
 * threads; past this many the extra clients are just closed (they see EOF, not a hang). */
#define BUSY_THREADS_MAX 32
static atomic_int busy_threads;

typedef struct busy {
    int fd, uses_spare;
    char why[200];
} busy;

static int read_all(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, (char *)buf + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* Reads the client's HELLO (bounded in size and time) and answers it with the error. */
static void *busy_main(void *arg)
{
    busy *b = arg;
    struct timeval tv = {.tv_sec = 2};
    setsockopt(b->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(b->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    uint8_t hdr[RFS_HDR_SIZE], body[RFS_PRE_HELLO_MAX];
    rfs_hdr h;
    if (read_all(b->fd, hdr, sizeof hdr) == 0) {
        rfs_hdr_decode(hdr, RFS_PRE_HELLO_MAX, &h); /* raw fields even when refused */
        /* A TLS ClientHello gets the answer in plaintext too: the client recognises an rfs
         * frame where it expected TLS and shows the message (transport/tls.c). */
        int tls = hdr[0] == 0x16;
        if (tls)
            (void)!recv(b->fd, body, sizeof body, MSG_DONTWAIT);
        if (tls ||
            (h.body_len <= sizeof body - RFS_HDR_SIZE && read_all(b->fd, body, h.body_len) == 0)) {
            rfs_rep r = {.op = h.op, .id = h.req_id, .status = rfs_err_to_wire(RFS_E_BUSY)};
            char msg[256];
            snprintf(msg, sizeof msg, "server busy: %s; try again later", b->why);
            r.u.err.s = msg;
            r.u.err.len = (uint16_t)strlen(msg);
            uint8_t out[RFS_HDR_SIZE + 2 + sizeof msg];
            size_t len;
            if (rfs_rep_encode(&r, out, sizeof out, &len) == RFS_OK)
                (void)!send(b->fd, out, len, MSG_NOSIGNAL);
        }
    }
    close(b->fd);
    if (b->uses_spare)
        atomic_store(&spare, open("/dev/null", O_RDONLY | O_CLOEXEC));
    free(b);
    atomic_fetch_sub(&busy_threads, 1);
    return NULL;
}

static void start_busy(int fd, const char *why, int uses_spare)
{
    if (atomic_fetch_add(&busy_threads, 1) >= BUSY_THREADS_MAX) {
        atomic_fetch_sub(&busy_threads, 1);
        close(fd);
        if (uses_spare)
            atomic_store(&spare, open("/dev/null", O_RDONLY | O_CLOEXEC));
        return;
    }
    busy *b = calloc(1, sizeof *b);
    pthread_t t;
    pthread_attr_t a;
    int ok = b != NULL && pthread_attr_init(&a) == 0;
    if (ok) {
        b->fd = fd;
        b->uses_spare = uses_spare;
        snprintf(b->why, sizeof b->why, "%s", why);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&a, 64 << 10);
        ok = pthread_create(&t, &a, busy_main, b) == 0;
        pthread_attr_destroy(&a);
    }
    if (!ok) {
        atomic_fetch_sub(&busy_threads, 1);
        close(fd);
        free(b);
        if (uses_spare)
            atomic_store(&spare, open("/dev/null", O_RDONLY | O_CLOEXEC));
    }
}

void rfsd_busy_reply(int fd, const char *why)
{
    start_busy(fd, why, 0);
}

int rfsd_busy_accept_with_spare(int lfd, const char *why)
{
    int s = atomic_exchange(&spare, -1);
    if (s < 0)
        return -1;
    close(s);
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        atomic_store(&spare, open("/dev/null", O_RDONLY | O_CLOEXEC));
        return -1;
    }
    RFS_LOGW("out of file descriptors (limit %lu): telling a new client the server is busy",
             fd_limit);
    start_busy(fd, why, 1);
    return 0;
}
