/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Locks and counters of a server group in the shared file system (fs_shared.h). */
#include "fs_shared.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/err.h"
#include "rfs/rfs.h"
#include "server.h"

/* State file: a presence byte (offset 0, read-locked by every handle), then the counters at
 * TABLE_OFF: RFSD_FSS_COUNTERS slots of {u32 key, u32 used, u64 value}, host order (the
 * file never leaves the group's machines, which share one architecture). */
#define TABLE_OFF 8
#define SLOT_SIZE 16
#define TABLE_SIZE (RFSD_FSS_COUNTERS * SLOT_SIZE)
#define ATTACH_TRIES 16 /* each retry means another handle removed the file meanwhile */

static int dir_fd = -1;
static atomic_int waiters;
static int max_waiters = 1;

int rfsd_fss_init(const char *dir, int max_wait)
{
    dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) {
        fprintf(stderr, "rfsd: --mpi-state-dir %s: %s\n", dir, strerror(errno));
        return -1;
    }
    max_waiters = max_wait < 1 ? 1 : max_wait;
    return 0;
}

int rfsd_fss_on(void)
{
    return dir_fd >= 0;
}

static int ofd_lock(int fd, int cmd, short type, uint64_t off, uint64_t len)
{
    struct flock fl = {
        .l_type = type, .l_whence = SEEK_SET, .l_start = (off_t)off, .l_len = (off_t)len};
    return fcntl(fd, cmd, &fl);
}

/* The data file's name in the state directory: its file system's id and inode number, which
 * every process that mounts the file system sees alike (st_dev need not be). */
static int state_name(int data_fd, const char *shown, char *out, size_t cap)
{
    struct stat st;
    struct statfs sf;
    if (fstat(data_fd, &st) || fstatfs(data_fd, &sf))
        return rfs_fail(RFS_E_IO, "%s: %s", shown, strerror(errno));
    unsigned long long fsid;
    memcpy(&fsid, &sf.f_fsid, sizeof fsid < sizeof sf.f_fsid ? sizeof fsid : sizeof sf.f_fsid);
    snprintf(out, cap, "%016llx-%llx.rfs-state", fsid, (unsigned long long)st.st_ino);
    return RFS_OK;
}

int rfsd_fss_attach(int data_fd, const char *shown, int *state_fd)
{
    char name[64];
    int rc = state_name(data_fd, shown, name, sizeof name);
    if (rc)
        return rc;
    for (int i = 0; i < ATTACH_TRIES; i++) {
        int fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            return rfs_fail(RFS_E_IO, "%s: server state file: %s", shown, strerror(errno));
        struct stat st;
        /* waits only while a last handle elsewhere removes the file (a few system calls) */
        if (ofd_lock(fd, F_OFD_SETLKW, F_RDLCK, 0, 1) == 0 && fstat(fd, &st) == 0 &&
            st.st_nlink > 0) {
            *state_fd = fd;
            return RFS_OK;
        }
        close(fd); /* removed between our open and our lock: make it again */
    }
    return rfs_fail(RFS_E_BUSY, "%s: server state file keeps being removed", shown);
}

void rfsd_fss_detach(int data_fd, int state_fd)
{
    if (state_fd < 0)
        return;
    char name[64];
    /* Give up our presence first, then see whether anyone is left. Two handles closing at
     * once could each see the other's presence if they tried to upgrade theirs; this way the
     * last one to let go finds the byte free (or held only by another closer, which then
     * removes the file). */
    ofd_lock(state_fd, F_OFD_SETLK, F_UNLCK, 0, 1);
    if (ofd_lock(state_fd, F_OFD_SETLK, F_WRLCK, 0, 1) == 0 &&
        state_name(data_fd, "state", name, sizeof name) == RFS_OK) {
        struct stat a, b;
        if (fstat(state_fd, &a) == 0 && fstatat(dir_fd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
            a.st_ino == b.st_ino && a.st_dev == b.st_dev)
            unlinkat(dir_fd, name, 0);
    }
    rfs_clear_error();
    close(state_fd);
}

int rfsd_fss_lock(int data_fd, const char *shown, uint64_t off, uint64_t len, uint32_t mode,
                  uint32_t wait_ms, const atomic_int *cancelled)
{
    short type = mode == RFS_LOCK_EXCL ? F_WRLCK : F_RDLCK;
    if (wait_ms > RFSD_LOCK_WAIT_MAX_MS)
        wait_ms = RFSD_LOCK_WAIT_MAX_MS;
    int64_t until = rfs_now_ns() + (int64_t)wait_ms * 1000000;
    int waiting = 0, rc = RFS_OK;
    long pause_ns = 1000000; /* the holder may be another process: poll, doubling to 32 ms */
    for (;;) {
        if (ofd_lock(data_fd, F_OFD_SETLK, type, off, len) == 0)
            break;
        if (errno == EBADF) {
            rc = rfs_fail(RFS_E_ACCESS, "%s: a %s lock needs the file open for %s", shown,
                          type == F_WRLCK ? "exclusive" : "shared",
                          type == F_WRLCK ? "writing" : "reading");
            break;
        }
        if (errno != EAGAIN && errno != EACCES) {
            rc = rfs_fail(errno == ENOLCK ? RFS_E_NOSPC : RFS_E_IO, "%s: lock: %s", shown,
                          strerror(errno));
            break;
        }
        if (!waiting && wait_ms > 0) {
            if (atomic_fetch_add(&waiters, 1) >= max_waiters) {
                atomic_fetch_sub(&waiters, 1);
                rc = rfs_fail(RFS_E_BUSY,
                              "%s: range locked by another client, and every "
                              "worker that may wait is waiting",
                              shown);
                break;
            }
            waiting = 1;
        }
        if (rfs_now_ns() >= until || (cancelled && atomic_load(cancelled))) {
            rc = rfs_fail(RFS_E_BUSY, "%s: range locked by another client", shown);
            break;
        }
        struct timespec ts = {0, pause_ns};
        nanosleep(&ts, NULL);
        if (pause_ns < 32000000)
            pause_ns *= 2;
    }
    if (waiting)
        atomic_fetch_sub(&waiters, 1);
    return rc;
}

int rfsd_fss_unlock(int data_fd, const char *shown, uint64_t off, uint64_t len)
{
    if (ofd_lock(data_fd, F_OFD_SETLK, F_UNLCK, off, len) != 0)
        return rfs_fail(errno == ENOLCK ? RFS_E_NOSPC : RFS_E_IO, "%s: unlock: %s", shown,
                        strerror(errno));
    return RFS_OK;
}

typedef struct slot {
    uint32_t key, used;
    uint64_t value;
} slot;

int rfsd_fss_counter(int state_fd, const char *shown, uint32_t key, int set, int64_t delta,
                     int64_t *old)
{
    static _Thread_local slot table[RFSD_FSS_COUNTERS];
    /* held for a read and a write of the table: other processes wait microseconds */
    if (ofd_lock(state_fd, F_OFD_SETLKW, F_WRLCK, TABLE_OFF, TABLE_SIZE) != 0)
        return rfs_fail(RFS_E_IO, "%s: counter lock: %s", shown, strerror(errno));
    int rc = RFS_OK;
    ssize_t n = pread(state_fd, table, TABLE_SIZE, TABLE_OFF);
    if (n < 0) {
        rc = rfs_fail(RFS_E_IO, "%s: counters: %s", shown, strerror(errno));
        goto out;
    }
    memset((char *)table + n, 0, TABLE_SIZE - (size_t)n); /* a new file reads as empty */
    unsigned at = RFSD_FSS_COUNTERS, i;
    for (i = 0; i < RFSD_FSS_COUNTERS; i++) {
        if (table[i].used && table[i].key == key)
            break;
        if (!table[i].used && at == RFSD_FSS_COUNTERS)
            at = i;
    }
    if (i == RFSD_FSS_COUNTERS) {
        if (at == RFSD_FSS_COUNTERS) {
            rc = rfs_fail(RFS_E_NOSPC, "%s: more than %u counters on one file", shown,
                          RFSD_FSS_COUNTERS);
            goto out;
        }
        i = at;
        table[i] = (slot){.key = key, .used = 1, .value = 0};
    }
    *old = (int64_t)table[i].value;
    table[i].value = set ? (uint64_t)delta : table[i].value + (uint64_t)delta;
    if (pwrite(state_fd, &table[i], SLOT_SIZE, TABLE_OFF + (off_t)i * SLOT_SIZE) != SLOT_SIZE)
        rc = rfs_fail(RFS_E_IO, "%s: counters: %s", shown, strerror(errno));
out:
    ofd_lock(state_fd, F_OFD_SETLK, F_UNLCK, TABLE_OFF, TABLE_SIZE);
    return rc;
}
