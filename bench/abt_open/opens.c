/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Opens N files one after the other through ABT over the remote client, as a program writing
 * one checkpoint file per output does (HDF5): open + ABT wrap timed, then one 64 KiB write,
 * close (which waits for the delivery). The connection stays pooled between files, so every
 * open after the first costs only its own round trips. Prints two lines per file: "open_ms I
 * MS" (open + wrap) and "close_ms I MS" (write + close). Used by bench/abt_open/run.py.
 *     opens PREFIX STAGING_DIR N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "abt/abt.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: opens PREFIX STAGING_DIR N\n");
        return 2;
    }
    int n = atoi(argv[3]);
    rfs_abt_config c;
    rfs_abt_config_default(&c);
    c.staging_dir = argv[2];
    c.max_memory = 64u << 20;
    static unsigned char buf[64 << 10];
    memset(buf, 7, sizeof buf);
    for (int i = 0; i < n; i++) {
        char name[4200];
        snprintf(name, sizeof name, "%s.%d", argv[1], i);
        double t0 = now_ms();
        rfs_io *remote, *io;
        int rc = rfs_io_open_remote(name, RFS_O_RDWR | RFS_O_CREAT, 0644, NULL, &remote);
        if (rc == RFS_OK && (rc = rfs_abt_wrap(remote, name, &c, &io)) != RFS_OK)
            remote->ops->close(remote);
        if (rc != RFS_OK) {
            fprintf(stderr, "open %s: %s\n", name, rfs_last_error());
            return 1;
        }
        double t1 = now_ms();
        printf("open_ms %d %.3f\n", i, t1 - t0);
        fflush(stdout);
        if ((rc = io->ops->pwrite(io, buf, sizeof buf, 0, NULL)) != RFS_OK ||
            (rc = io->ops->close(io)) != RFS_OK) {
            fprintf(stderr, "write/close %s: %s\n", name, rfs_last_error());
            return 1;
        }
        /* close waits for the delivery and the version noted after it */
        printf("close_ms %d %.3f\n", i, now_ms() - t1);
        fflush(stdout);
    }
    int rc = rfs_abt_finalize();
    if (rc != RFS_OK) {
        fprintf(stderr, "finalize: %s\n", rfs_last_error());
        return 1;
    }
    return 0;
}
