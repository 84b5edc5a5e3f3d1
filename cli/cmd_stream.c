/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Standard input and output as the local side: `rfs cat URL`, `rfs get URL -` and
 * `rfs put - URL`. Streams have no size known in advance and cannot be re-read, so they move
 * sequentially over one connection in large requests (the library pipelines each one's
 * frames), and --resume does not apply. A put from stdin is still atomic: it writes a hidden
 * temporary file beside the destination and renames it into place once synced (and verified
 * with --verify against the crc32c of what was read); on failure the temporary is removed. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/transfer_pool.h"
#include "common/crc32c.h"
#include "common/fullio.h"

#define STREAM_CHUNK ((size_t)8 << 20)

/* Writes the whole remote file to stdout; with --verify, compares the crc32c of what was sent
 * with the server's at the end (the bytes are out by then: the exit status says). */
int cli_stream_out(cli_ctx *c, const char *url, const rfs_name *name)
{
    rfs_file *f;
    int rc = rfs_open(url, RFS_O_RDONLY, 0, &c->ropts, &f);
    if (rc != RFS_OK)
        return cli_fail_remote(c, name, rc, NULL);
    char *buf = malloc(STREAM_CHUNK);
    if (!buf) {
        rfs_close(f);
        return cli_fail_local(c, "buffer", ENOMEM);
    }
    uint64_t off = 0;
    uint32_t crc = 0;
    int status = CLI_EXIT_OK;
    for (;;) {
        size_t done = 0;
        rc = rfs_pread(f, buf, STREAM_CHUNK, off, &done);
        if (rc != RFS_OK) {
            status = cli_fail_remote(c, name, rc, NULL);
            break;
        }
        if (done && rfs_write_full(STDOUT_FILENO, buf, done) != 0) {
            /* A closed pipe (`rfs cat ... | head`) is the reader's choice, not a failure. */
            status = errno == EPIPE ? CLI_EXIT_OK : cli_fail_local(c, "standard output", errno);
            c->o.verify = 0;
            break;
        }
        if (c->o.verify)
            crc = rfs_crc32c(crc, buf, done);
        off += done;
        if (done < STREAM_CHUNK)
            break; /* end of file */
    }
    free(buf);
    if (status == CLI_EXIT_OK && c->o.verify) {
        uint32_t server = 0;
        uint64_t covered = 0;
        rc = rfs_checksum(f, 0, off, &server, &covered);
        if (rc != RFS_OK) {
            status = cli_fail_remote(c, name, rc, NULL);
        } else if (server != crc || covered != off) {
            char msg[512];
            snprintf(msg, sizeof msg,
                     "verification failed: crc32c of the %" PRIu64 " bytes "
                     "written to standard output is %08x, the server's is %08x",
                     off, crc, server);
            status = cli_fail_remote(c, name, RFS_E_IO, msg);
        }
    }
    int crc_close = rfs_close(f);
    if (crc_close != RFS_OK && status == CLI_EXIT_OK)
        status = cli_fail_remote(c, name, crc_close, NULL);
    return status;
}

int cli_cmd_cat(cli_ctx *c)
{
    char url[4400];
    rfs_name name;
    if (cli_url_normalize(c->cmd, c->o.args[0], url, sizeof url, &name))
        return CLI_EXIT_USAGE;
    int status;
    if (cli_through_layer(c, url, &status))
        return status == CLI_EXIT_OK ? cli_copy_manifest(c, url, "-") : status;
    return cli_stream_out(c, url, &name);
}

/* Reads up to cap bytes from stdin (fewer only at end of input). */
static ssize_t read_stdin(void *ctx, char *buf, size_t cap, uint64_t off)
{
    (void)ctx;
    (void)off;
    size_t got = 0;
    while (got < cap) {
        ssize_t r = read(STDIN_FILENO, buf + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* Reads a remote source sequentially (remote-to-remote cp through this client). */
static ssize_t read_remote(void *ctx, char *buf, size_t cap, uint64_t off)
{
    size_t done = 0;
    int rc = rfs_pread(ctx, buf, cap, off, &done);
    if (rc != RFS_OK) {
        errno = EIO;
        return -1;
    }
    return (ssize_t)done;
}

typedef ssize_t (*stream_reader)(void *ctx, char *buf, size_t cap, uint64_t off);

/* source -> the temporary file; *total and *crc describe what was read. */
static int send_stream(cli_ctx *c, rfs_file *f, const rfs_name *tmp, stream_reader rd, void *rctx,
                       const char *src_name, uint64_t *total, uint32_t *crc)
{
    char *buf = malloc(STREAM_CHUNK);
    if (!buf)
        return cli_fail_local(c, "buffer", ENOMEM);
    int status = CLI_EXIT_OK;
    for (;;) {
        ssize_t n = rd(rctx, buf, STREAM_CHUNK, *total);
        if (n < 0) {
            if (rd == read_remote)
                fprintf(stderr, "rfs %s: reading %s: %s\n", c->cmd, src_name, rfs_last_error());
            status = rd == read_remote ? CLI_EXIT_FAIL : cli_fail_local(c, src_name, errno);
            break;
        }
        size_t done = 0;
        int rc = n ? rfs_pwrite(f, buf, (size_t)n, *total, &done) : RFS_OK;
        if (rc == RFS_OK && done != (size_t)n)
            rc = RFS_E_IO;
        if (rc != RFS_OK) {
            status = cli_fail_remote(c, tmp, rc, NULL);
            break;
        }
        *crc = rfs_crc32c(*crc, buf, (size_t)n);
        *total += (uint64_t)n;
        if ((size_t)n < STREAM_CHUNK)
            break;
    }
    free(buf);
    return status;
}

/* Cuts, syncs, verifies and renames the temporary file into place. */
static int install_stdin(cli_ctx *c, rfs_file *f, const char *tmp_url, const rfs_name *tmp,
                         const rfs_name *dst, uint64_t total, uint32_t crc)
{
    int rc = rfs_set_size(f, total);
    if (rc == RFS_OK)
        rc = rfs_sync(f);
    if (rc != RFS_OK)
        return cli_fail_remote(c, tmp, rc, NULL);
    if (c->o.verify) {
        uint32_t server = 0;
        uint64_t covered = 0;
        rc = rfs_checksum(f, 0, total, &server, &covered);
        if (rc != RFS_OK)
            return cli_fail_remote(c, tmp, rc, NULL);
        if (server != crc || covered != total) {
            char msg[512];
            snprintf(msg, sizeof msg,
                     "verification failed: crc32c of the %" PRIu64 " bytes read "
                     "from the source is %08x, the server's copy's %08x; not renamed into "
                     "place",
                     total, crc, server);
            return cli_fail_remote(c, dst, RFS_E_IO, msg);
        }
    }
    rc = rfs_rename(tmp_url, dst->path, &c->ropts);
    return rc == RFS_OK ? CLI_EXIT_OK : cli_fail_remote(c, dst, rc, NULL);
}

static int put_stream(cli_ctx *c, const char *url, const rfs_name *dst, stream_reader rd,
                      void *rctx, const char *src_name)
{
    size_t plen = strlen(dst->path);
    if (dst->path[plen - 1] == '/')
        return cli_usage(c->cmd,
                         "standard input has no name: give the remote file's, not a "
                         "directory (%s)",
                         url);
    rfs_stat_info st;
    int rc = rfs_stat(url, &c->ropts, &st);
    if (rc == RFS_OK && st.type == RFS_TYPE_DIR)
        return cli_usage(c->cmd, "standard input has no name: %s is a directory", url);
    if (rc == RFS_OK && c->o.no_clobber) {
        fprintf(stderr, "rfs %s: %s exists (not overwritten: --no-clobber)\n", c->cmd, url);
        return CLI_EXIT_FAIL;
    }
    if (rc != RFS_OK && rc != RFS_E_NOENT)
        return cli_fail_remote(c, dst, rc, NULL);
    /* A random temporary name: a stream has no identity to resume by. */
    uint64_t h = 0;
    if (getrandom(&h, sizeof h, 0) != (ssize_t)sizeof h)
        h = (uint64_t)getpid() * 0x9E3779B97F4A7C15ull ^ (uint64_t)time(NULL);
    char path[4400], server[300], tmp_url[4400];
    rfs_name tmp;
    cli_server_str(dst, server, sizeof server);
    if (xfer_part_path(path, sizeof path, dst->path, h) ||
        snprintf(tmp_url, sizeof tmp_url, "rfs:%s:%s", server, path) >= (int)sizeof tmp_url ||
        rfs_parse_name(tmp_url, &tmp))
        return cli_usage(c->cmd, "remote name too long for a temporary file beside it: %s", url);
    rfs_file *f;
    rc = rfs_open(tmp_url, RFS_O_RDWR | RFS_O_CREAT | RFS_O_EXCL, 0644, &c->ropts, &f);
    if (rc != RFS_OK)
        return cli_fail_remote(c, &tmp, rc, NULL);
    uint64_t total = 0;
    uint32_t crc = 0;
    int status = send_stream(c, f, &tmp, rd, rctx, src_name, &total, &crc);
    if (status == CLI_EXIT_OK)
        status = install_stdin(c, f, tmp_url, &tmp, dst, total, crc);
    int crc_close = rfs_close(f);
    if (crc_close != RFS_OK && status == CLI_EXIT_OK)
        status = cli_fail_remote(c, dst, crc_close, NULL);
    if (status != CLI_EXIT_OK)
        rfs_delete(tmp_url, &c->ropts); /* nothing to resume: leave nothing behind */
    return status;
}

int cli_put_stdin(cli_ctx *c, const char *url, const rfs_name *dst)
{
    if (c->o.resume)
        return cli_usage(c->cmd, "--resume needs a local file: standard input cannot be re-read");
    return put_stream(c, url, dst, read_stdin, NULL, "standard input");
}

int cli_copy_remote(cli_ctx *c, const char *src_url, const rfs_name *src, const char *url,
                    const rfs_name *dst)
{
    rfs_file *f;
    int rc = rfs_open(src_url, RFS_O_RDONLY, 0, &c->ropts, &f);
    if (rc != RFS_OK)
        return cli_fail_remote(c, src, rc, NULL);
    int status = put_stream(c, url, dst, read_remote, f, src_url);
    rfs_close(f);
    return status;
}
