/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Shared-memory waits and peer liveness (shm.h). */
#include "wbehind/shm.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void rfs_shm_wait(uint32_t *word, uint32_t val, int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
}

void rfs_shm_wake(uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

int rfs_shm_pid_dead(int32_t pid)
{
    if (pid <= 0)
        return 0;
    if (kill((pid_t)pid, 0) != 0)
        return errno == ESRCH;
    /* Dead but not yet reaped by its parent still counts as dead. */
    char p[64], st[256];
    snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
    FILE *fp = fopen(p, "r");
    if (!fp)
        return 0;
    size_t n = fread(st, 1, sizeof st - 1, fp);
    fclose(fp);
    st[n] = '\0';
    const char *rp = strrchr(st, ')');
    return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}
