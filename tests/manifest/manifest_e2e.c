/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Drives the manifest layer through the public C API (rfs/rfs_manifest.h) for
 * tests/e2e/test_manifest.py:
 *   manifest_e2e put URL LOCAL [SERVERS STRIPE_SIZE COUNT REPLICAS [PAUSE_AT]]
 *   manifest_e2e get URL LOCAL [PAUSE_AT]
 *   manifest_e2e delete URL
 *   manifest_e2e logcheck URL SERVERS LOCAL
 * put copies a local file into the logical file (created with that layout), get the logical
 * file into a local one, both in CHUNK-byte requests. With PAUSE_AT, the program prints
 * "paused" after that many bytes and waits for a line on standard input (the test kills a
 * server meanwhile). Every outcome is printed as "STEP rc=N msg" (sync, close, ...); the exit
 * status is 0 only when every step succeeded. logcheck drives log-structured writes
 * (docs/manifest.md "Log-structured writes") over a new file on SERVERS (2 columns of 4 KiB):
 * a strided list write, a compaction while the writer still holds its log (kept), an
 * overlapping write, a truncation and an extension, each read back through the writer and
 * compared with the bytes it should hold; then closed, read by a new open, compacted again
 * (the log goes), read again; LOCAL gets the expected bytes. */
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

/* ---- logcheck ---- */

#define LC_SIZE 32000u

static uint8_t pattern(uint64_t off, int gen)
{
    return (uint8_t)(off * 131u + (uint64_t)gen * 17u + 1u);
}

/* Reads [0, size) through io (a stripe-and-overlay read) and compares it with want. */
static int same(rfs_io *io, const uint8_t *want, uint64_t size, const char *step)
{
    static uint8_t got[LC_SIZE];
    uint64_t s = 0;
    int rc = io->ops->get_size(io, &s);
    if (rc == 0 && s != size) {
        printf("%s size %llu, want %llu\n", step, (unsigned long long)s, (unsigned long long)size);
        return 1;
    }
    size_t done = 0;
    if (rc == 0)
        rc = io->ops->pread(io, got, (size_t)size, 0, &done);
    if (report(step, rc))
        return 1;
    for (uint64_t i = 0; i < size; i++)
        if (got[i] != want[i]) {
            printf("%s byte %llu: %u, want %u\n", step, (unsigned long long)i, got[i], want[i]);
            return 1;
        }
    return 0;
}

static int logcheck(const char *url, const char *servers, const char *local)
{
    static uint8_t want[LC_SIZE], buf[LC_SIZE];
    rfs_manifest_params p = {.servers = servers, .stripe_size = 4096, .stripe_count = 2, .log = 1};
    rfs_io *io = NULL;
    /* The options are wiped and freed once the open returns: the log, opened at the first
     * write, must not read them (the layer keeps its own copies). */
    rfs_options *o = calloc(1, sizeof *o);
    const char *env = getenv("RFS_TOKEN");
    char *tok = env ? strdup(env) : NULL, *z = strdup("none");
    if (!o || (env && !tok) || !z)
        return 1;
    o->token = tok;
    o->compress = z;
    int orc = rfs_io_open_manifest(url, RFS_O_RDWR | RFS_O_CREAT | RFS_O_TRUNC, 0644, o, &p, &io);
    if (tok) {
        memset(tok, 'x', strlen(tok));
        free(tok);
    }
    memset(z, 'x', strlen(z));
    free(z);
    memset(o, 0xa5, sizeof *o);
    free(o);
    if (report("open", orc))
        return 1;
    /* 16 regions of 1000 bytes, holes of 1000 between: one list write */
    rfs_extent ext[16];
    size_t pos = 0;
    for (int k = 0; k < 16; k++) {
        ext[k] = (rfs_extent){(uint64_t)k * 2000, 1000};
        for (uint64_t i = 0; i < 1000; i++)
            want[ext[k].offset + i] = buf[pos++] = pattern(ext[k].offset + i, 1);
    }
    size_t done = 0;
    int failed = report("writev", io->ops->pwritev(io, ext, 16, buf, &done)) != 0;
    failed |= report("flush", io->ops->flush(io, 1)) != 0;
    failed = failed || same(io, want, 31000, "read1");
    /* compacted while this writer holds its log: the overlays go, the log stays */
    uint32_t ov = 0, lg = 0;
    failed = failed || report("compact1", rfs_manifest_compact(url, NULL, &ov, &lg));
    printf("compact1 overlays=%u logs=%u\n", ov, lg);
    failed = failed || same(io, want, 31000, "read2");
    /* over a region boundary and into a hole, appended to the same log */
    for (uint64_t i = 0; i < 1500; i++)
        want[500 + i] = buf[i] = pattern(500 + i, 2);
    failed = failed || report("write", io->ops->pwrite(io, buf, 1500, 500, &done));
    failed = failed || same(io, want, 31000, "read3");
    /* truncated inside an overlay, then extended: zeros past the cut */
    failed = failed || report("truncate", io->ops->set_size(io, 20500));
    memset(want + 20500, 0, LC_SIZE - 20500);
    failed = failed || same(io, want, 20500, "read4");
    failed = failed || report("extend", io->ops->set_size(io, LC_SIZE));
    failed = failed || same(io, want, LC_SIZE, "read5");
    failed |= report("close", io->ops->close(io)) != 0;
    if (failed)
        return 1;
    if (report("reopen", rfs_io_open_manifest(url, RFS_O_RDONLY, 0, NULL, NULL, &io)))
        return 1;
    failed = same(io, want, LC_SIZE, "read6");
    failed |= report("close", io->ops->close(io)) != 0;
    failed = failed || report("compact2", rfs_manifest_compact(url, NULL, &ov, &lg));
    printf("compact2 overlays=%u logs=%u\n", ov, lg);
    if (failed || report("reopen", rfs_io_open_manifest(url, RFS_O_RDONLY, 0, NULL, NULL, &io)))
        return 1;
    failed = same(io, want, LC_SIZE, "read7");
    failed |= report("close", io->ops->close(io)) != 0;
    FILE *out = fopen(local, "wb");
    if (!out || fwrite(want, 1, LC_SIZE, out) != LC_SIZE || fclose(out) != 0)
        return 1;
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
    if (argc == 5 && !strcmp(argv[1], "logcheck"))
        return logcheck(argv[2], argv[3], argv[4]);
    if (argc == 3 && !strcmp(argv[1], "delete"))
        return report("delete", rfs_manifest_delete(argv[2], NULL)) != 0;
    fprintf(stderr, "usage: manifest_e2e put|get|delete URL ...\n");
    return 2;
}
