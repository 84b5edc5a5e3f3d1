/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs cp, get, put and cat where either side is a logical file over several servers (a .rfsm
 * name, docs/manifest.md): the data go through the manifest layer (rfs_io_open_manifest), in
 * COPY_CHUNK requests, each spread over the file's servers by the layer. The other side is a
 * local file (written beside its name and renamed over it when complete, as get does),
 * standard output ("-", for cat and get -) or an rfs name (plain or .rfsm). A new logical
 * file is laid out as --servers, --stripe-size, --stripe-count and --replicas say. --raw
 * (get, put, cat) bypasses all this: the manifest file itself is copied, as bytes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/err.h"
#include "common/fullio.h"
#include "manifest/manifest.h"
#include "rfs/rfs_manifest.h"

/* A few stripe units of the default size per request: every column busy at once. */
#define COPY_CHUNK (16u << 20)

typedef struct side {
    const char *name;
    int fd;         /* local file or standard output, else -1 */
    int out;        /* standard output: written in order, never renamed or closed */
    char tmp[4200]; /* local destination: the file written before the rename */
    rfs_io *io;     /* remote or logical file */
    rfs_name n;     /* remote: for messages */
} side;

static int fail(cli_ctx *c, side *s, int rc)
{
    return cli_fail_remote(c, &s->n, rc, NULL);
}

static int open_src(cli_ctx *c, side *s, uint64_t *size)
{
    if (!rfs_is_name(s->name)) {
        struct stat st;
        if ((s->fd = open(s->name, O_RDONLY | O_CLOEXEC)) < 0 || fstat(s->fd, &st) != 0)
            return cli_fail_local(c, s->name, errno);
        *size = (uint64_t)st.st_size;
        return CLI_EXIT_OK;
    }
    int rc = rfs_parse_name(s->name, &s->n);
    if (rc == RFS_OK)
        rc = rfs_is_manifest_name(s->name)
                 ? rfs_io_open_manifest(s->name, RFS_O_RDONLY, 0, &c->ropts, NULL, &s->io)
                 : rfs_io_open_remote(s->name, RFS_O_RDONLY, 0, &c->ropts, &s->io);
    if (rc == RFS_OK)
        rc = s->io->ops->get_size(s->io, size);
    return rc == RFS_OK ? CLI_EXIT_OK : fail(c, s, rc);
}

static int open_dest(cli_ctx *c, side *s)
{
    if (strcmp(s->name, "-") == 0) {
        s->fd = STDOUT_FILENO;
        s->out = 1;
        return CLI_EXIT_OK;
    }
    if (!rfs_is_name(s->name)) {
        struct stat st;
        if (c->o.no_clobber && stat(s->name, &st) == 0) {
            fprintf(stderr, "rfs %s: %s exists (-n): not overwritten\n", c->cmd, s->name);
            return CLI_EXIT_FAIL;
        }
        snprintf(s->tmp, sizeof s->tmp, "%s.rfs-part", s->name);
        if ((s->fd = open(s->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
            return cli_fail_local(c, s->tmp, errno);
        return CLI_EXIT_OK;
    }
    int rc = rfs_parse_name(s->name, &s->n);
    rfs_stat_info st;
    if (rc == RFS_OK && c->o.no_clobber && rfs_stat(s->name, &c->ropts, &st) == RFS_OK) {
        fprintf(stderr, "rfs %s: %s exists (-n): not overwritten\n", c->cmd, s->name);
        return CLI_EXIT_FAIL;
    }
    unsigned fl = RFS_O_WRONLY | RFS_O_CREAT | RFS_O_TRUNC;
    rfs_manifest_params p = {.servers = c->o.servers,
                             .stripe_size = c->o.stripe_size,
                             .stripe_count = c->o.stripe_count,
                             .replicas = c->o.replicas};
    if (rc == RFS_OK)
        rc = rfs_is_manifest_name(s->name)
                 ? rfs_io_open_manifest(s->name, fl, 0644, &c->ropts, &p, &s->io)
                 : rfs_io_open_remote(s->name, fl, 0644, &c->ropts, &s->io);
    return rc == RFS_OK ? CLI_EXIT_OK : fail(c, s, rc);
}

/* Reads up to len bytes at off; *got < len only at the end of the file. */
static int take(cli_ctx *c, side *s, void *buf, size_t len, uint64_t off, size_t *got)
{
    if (s->fd >= 0) {
        ssize_t r = pread(s->fd, buf, len, (off_t)off);
        if (r < 0)
            return cli_fail_local(c, s->name, errno);
        *got = (size_t)r;
        return CLI_EXIT_OK;
    }
    int rc = s->io->ops->pread(s->io, buf, len, off, got);
    return rc == RFS_OK ? CLI_EXIT_OK : fail(c, s, rc);
}

static int give(cli_ctx *c, side *s, const void *buf, size_t len, uint64_t off)
{
    if (s->out) /* the copy goes in order: a pipe takes it as it comes */
        return rfs_write_full(s->fd, buf, len) == 0 ? CLI_EXIT_OK
                                                    : cli_fail_local(c, "standard output", errno);
    if (s->fd >= 0) {
        ssize_t w = pwrite(s->fd, buf, len, (off_t)off);
        if (w < 0 || (size_t)w != len)
            return cli_fail_local(c, s->tmp, w < 0 ? errno : EIO);
        return CLI_EXIT_OK;
    }
    size_t done = 0;
    int rc = s->io->ops->pwrite(s->io, buf, len, off, &done);
    return rc == RFS_OK ? CLI_EXIT_OK : fail(c, s, rc);
}

/* Closes a side; ok: the copy is complete (a local destination is then renamed over its
 * name, a remote one synced first). */
static int finish(cli_ctx *c, side *s, int ok, int dest)
{
    int status = CLI_EXIT_OK;
    if (s->out)
        return status;
    if (s->fd >= 0) {
        if (dest && ok && fsync(s->fd) != 0)
            status = cli_fail_local(c, s->tmp, errno);
        close(s->fd);
        if (dest && ok && status == CLI_EXIT_OK && rename(s->tmp, s->name) != 0)
            status = cli_fail_local(c, s->name, errno);
        if (dest && status != CLI_EXIT_OK)
            unlink(s->tmp);
        return status;
    }
    if (!s->io)
        return status;
    int rc = dest && ok ? s->io->ops->sync(s->io) : RFS_OK;
    if (rc != RFS_OK)
        status = fail(c, s, rc);
    int crc = s->io->ops->close(s->io);
    if (crc != RFS_OK && status == CLI_EXIT_OK && (dest || ok))
        status = fail(c, s, crc);
    return status;
}

int cli_copy_manifest(cli_ctx *c, const char *src, const char *dest)
{
    side in = {.name = src, .fd = -1}, out = {.name = dest, .fd = -1};
    uint64_t size = 0;
    int status = open_src(c, &in, &size);
    if (status == CLI_EXIT_OK)
        status = open_dest(c, &out);
    char *buf = status == CLI_EXIT_OK ? malloc(COPY_CHUNK) : NULL;
    if (status == CLI_EXIT_OK && !buf)
        status = cli_fail_local(c, "copy buffer", ENOMEM);
    uint64_t off = 0;
    while (status == CLI_EXIT_OK && off < size) {
        size_t want = size - off < COPY_CHUNK ? (size_t)(size - off) : COPY_CHUNK, got = 0;
        status = take(c, &in, buf, want, off, &got);
        if (status == CLI_EXIT_OK && got)
            status = give(c, &out, buf, got, off);
        off += got;
        if (got < want)
            break; /* the source ended sooner than its size said */
    }
    free(buf);
    int ok = status == CLI_EXIT_OK;
    int s1 = finish(c, &out, ok, 1), s2 = finish(c, &in, ok, 0);
    if (status == CLI_EXIT_OK)
        status = s1 != CLI_EXIT_OK ? s1 : s2;
    if (status == CLI_EXIT_OK && !c->o.quiet && c->o.verbose)
        fprintf(stderr, "rfs %s: %s -> %s: %llu bytes through the manifest layer\n", c->cmd, src,
                dest, (unsigned long long)off);
    return status;
}

int cli_through_layer(cli_ctx *c, const char *remote, int *status)
{
    if (c->o.raw || !rfs_is_manifest_name(remote))
        return 0;
    *status = CLI_EXIT_OK;
    if (c->o.resume || c->o.verify)
        *status = cli_usage(c->cmd,
                            "%s is a logical file (.rfsm): --resume and --verify are for plain "
                            "files (--raw copies the manifest file itself)",
                            remote);
    return 1;
}

void cli_warn_raw_manifest(cli_ctx *c, int fd, const char *dest_path)
{
    struct stat sb;
    if (c->o.quiet || fstat(fd, &sb) != 0 || sb.st_size <= 0 || sb.st_size > RFSM_MAX_BYTES)
        return;
    void *buf = malloc((size_t)sb.st_size);
    if (!buf)
        return;
    rfsm *m = NULL;
    if (rfs_pread_full(fd, buf, (size_t)sb.st_size, 0) != (ssize_t)sb.st_size) {
        free(buf);
        return;
    }
    if (rfsm_decode(buf, (size_t)sb.st_size, "the local file", &m) != RFS_OK) {
        fprintf(stderr,
                "rfs %s: warning: %s is not a manifest this rfs can read (%s); the logical "
                "file will not open\n",
                c->cmd, dest_path, rfs_last_error());
        rfs_clear_error();
        free(buf);
        return;
    }
    free(buf);
    size_t len = strlen(dest_path);
    for (uint32_t i = 0; i < m->nobjects; i++) {
        const char *op = m->objects[i].path;
        if (strncmp(op, dest_path, len) == 0 && op[len] == '.')
            continue;
        fprintf(stderr,
                "rfs %s: warning: this manifest names objects made for another one (%s): both "
                "now share them, and deleting either logical file (MPI_File_delete, "
                "rfs_manifest_delete) deletes the other's data too; `rfs cp` of the logical "
                "file makes an independent copy\n",
                c->cmd, op);
        break;
    }
    rfsm_free(m);
}
