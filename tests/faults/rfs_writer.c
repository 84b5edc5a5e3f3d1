/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* A client for the fault matrix: writes SIZE bytes of a known pattern to an rfs file in
 * CHUNK-sized rfs_pwrite calls through the C API, and prints what it was told:
 *   "wrote OFF LEN" after each write that returned success,
 *   "synced" after rfs_sync returned success, "closed" after rfs_close did,
 *   "error CALL CODE MESSAGE" for a failure (and exits 1).
 * The test then holds the bytes on the server's disk against exactly those lines.
 * Pattern: each 4 KiB block k of the file holds k (u64, little-endian) and then
 * (seed + k) & 0xff repeated, so a misplaced or stale block is visible.
 *
 * usage: rfs_writer URL SIZE SEED [--chunk N] [--io-timeout MS] [--retry MS] [--no-sync]
 *                   [--wait-line]   (reads one line from stdin before closing)
 *                   [--connect-timeout MS] (a short one keeps a test of a dead link short)
 *                   [--streams N|auto] [--max-frame BYTES] (prints "streams K" after open:
 *                   the connections the file got)
 *                   [--pause-at BYTES] (once that many bytes are written, prints "paused" and
 *                   reads one line from stdin before going on: a test injects its fault
 *                   there, whatever the machine's speed) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rfs/rfs.h"

#define BLOCK 4096u

static void fill(uint8_t *buf, uint64_t off, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++) {
        uint64_t at = off + i, k = at / BLOCK, in = at % BLOCK;
        buf[i] = in < 8 ? (uint8_t)(k >> (8 * in)) : (uint8_t)(seed + k);
    }
}

/* Not static: stores to them must survive optimisation for the leak checker to see them. */
rfs_file *open_file;
uint8_t *chunk_buf;

/* After a failure the program exits at once, without closing the file: closing would try the
 * unreachable server once more. The file and the buffer stay reachable from these globals, so
 * the sanitizer build does not call them leaks. */
static int fail(const char *call, int rc)
{
    printf("error %s %d %s\n", call, rc, rfs_last_error());
    fflush(stdout);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: rfs_writer URL SIZE SEED [--chunk N] [--io-timeout MS] "
                        "[--retry MS] [--no-sync] [--wait-line] [--connect-timeout MS] "
                        "[--streams N|auto] [--max-frame BYTES] [--pause-at BYTES]\n");
        return 2;
    }
    const char *url = argv[1];
    uint64_t size = strtoull(argv[2], NULL, 10);
    unsigned seed = (unsigned)strtoul(argv[3], NULL, 10);
    size_t chunk = 1 << 20;
    int do_sync = 1, wait_line = 0;
    uint64_t pause_at = UINT64_MAX;
    rfs_options o;
    memset(&o, 0, sizeof o);
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
            chunk = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--io-timeout") && i + 1 < argc)
            o.io_timeout_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--connect-timeout") && i + 1 < argc)
            o.connect_timeout_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--retry") && i + 1 < argc)
            o.retry_timeout_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-sync"))
            do_sync = 0;
        else if (!strcmp(argv[i], "--wait-line"))
            wait_line = 1;
        else if (!strcmp(argv[i], "--streams") && i + 1 < argc) {
            i++;
            o.streams = !strcmp(argv[i], "auto") ? RFS_STREAMS_AUTO : atoi(argv[i]);
        } else if (!strcmp(argv[i], "--max-frame") && i + 1 < argc)
            o.max_frame = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--pause-at") && i + 1 < argc)
            pause_at = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "rfs_writer: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    uint8_t *buf = chunk_buf = malloc(chunk);
    if (!buf)
        return 2;
    rfs_file *f;
    int rc = rfs_open(url, RFS_O_RDWR | RFS_O_CREAT, 0644, &o, &f);
    if (rc)
        return fail("open", rc);
    open_file = f;
    printf("streams %d\n", rfs_file_streams(f));
    printf("opened\n");
    fflush(stdout);
    for (uint64_t off = 0; off < size; off += chunk) {
        if (off >= pause_at) {
            char line[64];
            pause_at = UINT64_MAX;
            printf("paused\n");
            fflush(stdout);
            if (!fgets(line, sizeof line, stdin))
                line[0] = 0;
        }
        size_t len = size - off < chunk ? (size_t)(size - off) : chunk;
        fill(buf, off, len, seed);
        size_t done = 0;
        if ((rc = rfs_pwrite(f, buf, len, off, &done)))
            return fail("pwrite", rc);
        printf("wrote %llu %zu\n", (unsigned long long)off, len);
        fflush(stdout);
    }
    if (do_sync) {
        if ((rc = rfs_sync(f)))
            return fail("sync", rc);
        printf("synced\n");
        fflush(stdout);
    }
    if (wait_line) {
        char line[64];
        if (!fgets(line, sizeof line, stdin))
            line[0] = 0;
    }
    open_file = NULL;
    if ((rc = rfs_close(f)))
        return fail("close", rc);
    printf("closed\n");
    fflush(stdout);
    free(buf);
    return 0;
}
