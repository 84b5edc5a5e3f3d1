/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Drives the manifest layer through the public C API (rfs/rfs_manifest.h) for
 * tests/e2e/test_manifest.py:
 *   manifest_e2e put URL LOCAL [SERVERS STRIPE_SIZE COUNT REPLICAS [PAUSE_AT]]
 *   manifest_e2e get URL LOCAL [PAUSE_AT]
 *   manifest_e2e delete URL
 * put copies a local file into the logical file (created with that layout), get the logical
 * file into a local one, both in CHUNK-byte requests. With PAUSE_AT, the program prints
 * "paused" after that many bytes and waits for a line on standard input (the test kills a
 * server meanwhile). Every outcome is printed as "STEP rc=N msg" (sync, close, ...); the exit
 * status is 0 only when every step succeeded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rfs/rfs_manifest.h"

#define CHUNK (192u << 10) /* not a multiple of the stripe sizes the tests use */

static int report(const char *step, int rc)
{
    printf("%s rc=%d %s\n", step, rc, rc ? rfs_last_error() : "");
    fflush(stdout);
    return rc;
}

static void pause_here(void)
{
    char line[16];
    printf("paused\n");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin))
        exit(3);
}

static int put(const char *url, const char *local, const rfs_manifest_params *p, long pause_at)
{
    FILE *in = fopen(local, "rb");
    if (!in)
        return report("open-local", -1);
    rfs_io *io = NULL;
    int rc =
        rfs_io_open_manifest(url, RFS_O_WRONLY | RFS_O_CREAT | RFS_O_TRUNC, 0644, NULL, p, &io);
    if (report("open", rc)) {
        fclose(in);
        return 1;
    }
    static char buf[CHUNK];
    uint64_t off = 0;
    size_t n;
    int failed = 0, paused = 0;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
        if (pause_at >= 0 && !paused && off >= (uint64_t)pause_at) {
            pause_here();
            paused = 1;
        }
        size_t done = 0;
        rc = io->ops->pwrite(io, buf, n, off, &done);
        if (rc || done != n) {
            failed |= report("write", rc ? rc : -1) != 0;
            break;
        }
        off += n;
    }
    fclose(in);
    failed |= report("sync", io->ops->sync(io)) != 0;
    failed |= report("close", io->ops->close(io)) != 0;
    return failed;
}

static int get(const char *url, const char *local, long pause_at)
{
    rfs_io *io = NULL;
    if (report("open", rfs_io_open_manifest(url, RFS_O_RDONLY, 0, NULL, NULL, &io)))
        return 1;
    uint64_t size = 0;
    int failed = report("size", io->ops->get_size(io, &size)) != 0;
    FILE *out = fopen(local, "wb");
    static char buf[CHUNK];
    int paused = 0;
    for (uint64_t off = 0; out && !failed && off < size;) {
        if (pause_at >= 0 && !paused && off >= (uint64_t)pause_at) {
            pause_here();
            paused = 1;
        }
        size_t want = size - off < sizeof buf ? (size_t)(size - off) : sizeof buf, done = 0;
        int rc = io->ops->pread(io, buf, want, off, &done);
        if (rc || done != want) {
            failed = report("read", rc ? rc : -1) != 0;
            break;
        }
        fwrite(buf, 1, done, out);
        off += done;
    }
    if (out)
        fclose(out);
    failed |= report("close", io->ops->close(io)) != 0;
    return failed;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "put")) {
        rfs_manifest_params p = {0};
        long pause_at = -1;
        if (argc >= 8) {
            p.servers = argv[4];
            p.stripe_size = strtoull(argv[5], NULL, 0);
            p.stripe_count = atoi(argv[6]);
            p.replicas = atoi(argv[7]);
        }
        if (argc >= 9)
            pause_at = atol(argv[8]);
        return put(argv[2], argv[3], &p, pause_at);
    }
    if (argc >= 4 && !strcmp(argv[1], "get"))
        return get(argv[2], argv[3], argc >= 5 ? atol(argv[4]) : -1);
    if (argc == 3 && !strcmp(argv[1], "delete"))
        return report("delete", rfs_manifest_delete(argv[2], NULL)) != 0;
    fprintf(stderr, "usage: manifest_e2e put|get|delete URL ...\n");
    return 2;
}
