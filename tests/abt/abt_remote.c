/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Drives the ABT layer over the real remote client, for tests/e2e/test_abt_remote.py.
 *   abt_remote write NAME STAGING_DIR CAP_BYTES SIZE_BYTES SEED [--wait]
 *     Opens NAME through ABT (buffer 256 KiB, memory cap CAP_BYTES), writes SIZE_BYTES of a
 *     seeded pattern in 100 000-byte writes, syncs, closes, finalizes. With --wait it prints
 *     "opened" after the open and waits for a line on stdin before writing (the test kills the
 *     server in between). With --split instead it writes the first half, syncs, prints
 *     "synced=CODE" and waits for a line before writing the rest (the server dies in between,
 *     after a delivery). With --answered it writes the first half and waits, without a sync,
 *     until the server answered all of it (the rfs_io write mark), prints "answered=1" (0 if
 *     that took over 60 s) and waits for a line: the test kills the server right after the
 *     deliveries, with nothing else sent. Prints "sync=CODE close=CODE finalize=CODE" and the
 *     last message.
 *   abt_remote recover STAGING_DIR
 *     Replays the journals left in STAGING_DIR; prints "records=N bytes=M". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "abt/abt.h"
#include "recover/recover.h"

static void pattern(unsigned char *p, size_t n, uint64_t off, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t x = off + i;
        p[i] = (unsigned char)((x * 2654435761u) >> 13 ^ seed ^ (x >> 20));
    }
}

static int do_write(int argc, char **argv)
{
    if (argc < 7)
        return 2;
    const char *name = argv[2];
    rfs_abt_config c;
    rfs_abt_config_default(&c);
    c.staging_dir = argv[3];
    c.max_memory = strtoull(argv[4], NULL, 10);
    c.buffer_size = 256u << 10;
    uint64_t size = strtoull(argv[5], NULL, 10);
    unsigned seed = (unsigned)atoi(argv[6]);
    int wait = argc > 7 && strcmp(argv[7], "--wait") == 0;
    int split = argc > 7 && strcmp(argv[7], "--split") == 0;
    int answered = argc > 7 && strcmp(argv[7], "--answered") == 0;

    rfs_io *remote, *io;
    int rc = rfs_io_open_remote(name, RFS_O_RDWR | RFS_O_CREAT, 0644, NULL, &remote);
    if (rc != RFS_OK) {
        printf("open=%d %s\n", rc, rfs_last_error());
        return 1;
    }
    if ((rc = rfs_abt_wrap(remote, name, &c, &io)) != RFS_OK) {
        printf("wrap=%d %s\n", rc, rfs_last_error());
        return 1;
    }
    if (wait) {
        printf("opened\n");
        fflush(stdout);
        char line[16];
        if (!fgets(line, sizeof line, stdin))
            return 1;
    }
    unsigned char *buf = malloc(100000);
    for (uint64_t off = 0; off < size; off += 100000) {
        if (split && off == (size / 2 / 100000) * 100000) {
            /* First half delivered (sync), then the test kills the server. */
            int s1 = io->ops->sync(io);
            printf("synced=%d\n", s1);
            fflush(stdout);
            char line[16];
            if (!fgets(line, sizeof line, stdin))
                return 1;
        }
        if (answered && off == (size / 2 / 100000) * 100000) {
            /* First half answered by the server; nothing more is sent before the kill (the
             * SYNC a sync would add, STATs asking for the version, are what is not wanted). */
            uint64_t mark = io->ops->write_mark(io);
            int ok = 0;
            for (int i = 0; i < 60000 && !(ok = io->ops->mark_answered(io, mark)); i++)
                nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
            printf("answered=%d\n", ok);
            fflush(stdout);
            char line[16];
            if (!fgets(line, sizeof line, stdin))
                return 1;
        }
        size_t n = size - off < 100000 ? (size_t)(size - off) : 100000;
        pattern(buf, n, off, seed);
        if ((rc = io->ops->pwrite(io, buf, n, off, NULL)) != RFS_OK) {
            printf("pwrite=%d %s\n", rc, rfs_last_error());
            return 1;
        }
    }
    free(buf);
    char msg[3][2048];
    int s = io->ops->sync(io);
    snprintf(msg[0], sizeof msg[0], "%s", s ? rfs_last_error() : "");
    int cl = io->ops->close(io);
    snprintf(msg[1], sizeof msg[1], "%s", cl ? rfs_last_error() : "");
    int fin = rfs_abt_finalize();
    snprintf(msg[2], sizeof msg[2], "%s", fin ? rfs_last_error() : "");
    rfs_abt_stats st;
    rfs_abt_get_stats(&st);
    printf("sync=%d close=%d finalize=%d staged_fg=%llu\n", s, cl, fin,
           (unsigned long long)st.bytes_staged_fg);
    for (int i = 0; i < 3; i++)
        if (msg[i][0])
            printf("msg: %s\n", msg[i]);
    return 0;
}

static int do_recover(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    rfs_abt_recover_result res;
    int rc = rfs_abt_recover(argv[2], NULL, &res);
    printf("recover=%d records=%llu bytes=%llu %s\n", rc, (unsigned long long)res.records,
           (unsigned long long)res.bytes, rc ? rfs_last_error() : "");
    return rc == RFS_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "write") == 0)
        return do_write(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "recover") == 0)
        return do_recover(argc, argv);
    fprintf(stderr, "usage: abt_remote write|recover ...\n");
    return 2;
}
