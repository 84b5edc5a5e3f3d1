/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs put LOCAL URL: copies a local file to the server, atomically.
 *
 * The data go to a hidden temporary file beside the destination, named after what it holds
 * (xfer_part_path of a hash of the source's absolute path, size and mtime and of the
 * destination's path), which is synced and renamed over the destination only once complete (and,
 * with --verify, checked). So a failed put never touches the previous file, and the partial
 * file it leaves is found again by `put --resume` of the same source to the same place; a
 * changed source gets another name and never resumes into stale data. docs/reliability.md. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "client/client.h"
#include "common/fullio.h"
#include "rfs/rfs_manifest.h"
#include "cli/progress.h"
#include "cli/transfer_pool.h"

typedef struct put_ctx {
    int fd;
    const char *local;
    rfs_file *f;
    int streams;      /* asked for (cli_streams) */
    int open_size_ok; /* the OPEN reply said how long the temporary file was */
    uint64_t open_size;
    int close_rc; /* rfs_close's, when finish closed the file itself */
} put_ctx;

/* Where the put goes: the final name and the temporary one, both as URLs and parsed. */
typedef struct put_names {
    char url[4400];
    rfs_name name;
    char tmp_url[4400];
    rfs_name tmp;
} put_names;

static int put_chunk(xfer *x, void *buf, uint64_t off, size_t len, xfer_error *e)
{
    put_ctx *p = x->ctx;
    ssize_t r = rfs_pread_full(p->fd, buf, len, off);
    if (r < 0 || (size_t)r < len) {
        e->local = 1;
        if (r < 0)
            snprintf(e->st.msg, sizeof e->st.msg, "reading %s: %s", p->local, strerror(errno));
        else
            snprintf(e->st.msg, sizeof e->st.msg, "%s: file shrank during the transfer", p->local);
        return RFS_E_IO;
    }
    size_t done = 0;
    int rc = rfs_pwrite(p->f, buf, len, off, &done);
    if (rc == RFS_OK && done != len) {
        snprintf(e->st.msg, sizeof e->st.msg, "short write at offset %llu (%zu of %zu bytes)",
                 (unsigned long long)off, done, len);
        return RFS_E_IO;
    }
    return rc;
}

/* The final remote name: URL (pn->url, normalized), or URL/<local name> when URL ends in '/' or
 * is a directory ("rfs put f rfs:h:p:/dir" stores /dir/f, like cp). Returns CLI_EXIT_OK or an
 * exit status. */
static int final_name(cli_ctx *c, const char *local, put_names *pn)
{
    int join = pn->name.path[strlen(pn->name.path) - 1] == '/';
    if (!join && !c->o.dest_not_dir) {
        rfs_stat_info st;
        int rc = rfs_stat(pn->url, &c->ropts, &st);
        if (rc == RFS_OK)
            join = st.type == RFS_TYPE_DIR;
        else if (rc != RFS_E_NOENT)
            return cli_fail_remote(c, &pn->name, rc, NULL);
    }
    if (join && (cli_url_join_basename(pn->url, sizeof pn->url, local) ||
                 rfs_parse_name(pn->url, &pn->name)))
        return cli_usage(c->cmd, "cannot derive a remote file name from '%s'", local);
    return CLI_EXIT_OK;
}

/* The temporary name: same directory as the final one (so the rename is atomic), named after
 * the source's identity and the destination. */
static int temp_name(cli_ctx *c, const char *local, const struct stat *sb, put_names *pn)
{
    char abs[PATH_MAX];
    if (!realpath(local, abs))
        return cli_fail_local(c, local, errno);
    uint64_t h = xfer_hash(XFER_HASH_INIT, "put", 4);
    h = xfer_hash(h, abs, strlen(abs) + 1);
    uint64_t id[3] = {(uint64_t)sb->st_size, (uint64_t)sb->st_mtim.tv_sec,
                      (uint64_t)sb->st_mtim.tv_nsec};
    h = xfer_hash(h, id, sizeof id);
    /* The destination's path, not its host:port: a server restarted on another port or
     * reached through another address is still the same destination. */
    h = xfer_hash(h, pn->name.path, strlen(pn->name.path) + 1);
    char path[4400], server[300];
    cli_server_str(&pn->name, server, sizeof server);
    if (xfer_part_path(path, sizeof path, pn->name.path, h) ||
        snprintf(pn->tmp_url, sizeof pn->tmp_url, "rfs:%s:%s", server, path) >=
            (int)sizeof pn->tmp_url ||
        rfs_parse_name(pn->tmp_url, &pn->tmp))
        return cli_usage(c->cmd, "remote name too long for a temporary file beside it: %s",
                         pn->url);
    return CLI_EXIT_OK;
}

/* Opens (creating if needed) the temporary file.
 *
 * No lock is taken on it, on purpose: after a network cut the server may keep the interrupted
 * put's connection (and any lock it held) open for as long as it does not notice the peer is
 * gone, which would block the very --resume meant to follow. Instead, nothing ever shortens the
 * file below the source's size: every put that opens this name carries the same source (its
 * identity is in the name), so whatever two of them write concurrently, or whatever a stale
 * writer delivers late, is the same bytes at the same offsets, and the file converges to the
 * source. Only a tail beyond the source's size is cut (set_size in finish). */
static int open_temp(cli_ctx *c, put_names *pn, unsigned mode, const rfs_options *o, rfs_file **f)
{
    int rc = rfs_open(pn->tmp_url, RFS_O_RDWR | RFS_O_CREAT, mode, o, f);
    if (rc == RFS_E_ACCESS) {
        /* A leftover the server will not let us write (e.g. from a read-only source): start
         * over with a fresh one. */
        if (rfs_delete(pn->tmp_url, o) == RFS_OK)
            rc = rfs_open(pn->tmp_url, RFS_O_RDWR | RFS_O_CREAT | RFS_O_EXCL, mode, o, f);
    }
    if (rc != RFS_OK)
        return cli_fail_remote(c, &pn->tmp, rc, NULL);
    return CLI_EXIT_OK;
}

/* The temporary file's size when it was opened, from the OPEN reply (no round trip). */
static void note_open_size(put_ctx *p)
{
    p->open_size_ok = rfs_file_known_size(p->f, &p->open_size) == 0;
}

/* --resume: how much of the temporary file is the source's own bytes, in verified units. */
static int resume_point(cli_ctx *c, put_ctx *p, const put_names *pn, uint64_t total, uint64_t *keep)
{
    uint64_t have = 0;
    *keep = 0;
    int rc = rfs_get_size(p->f, &have);
    if (rc != RFS_OK)
        return cli_fail_remote(c, &pn->tmp, rc, NULL);
    xfer_error e = {0};
    rc = xfer_verified_prefix(p->f, p->fd, p->local, have < total ? have : total, keep, &e);
    if (rc == RFS_OK)
        return CLI_EXIT_OK;
    if (e.local) {
        fprintf(stderr, "rfs put: %s\n", e.st.msg);
        return CLI_EXIT_FAIL;
    }
    return cli_fail_remote(c, &pn->tmp, rc, e.st.msg);
}

static int report_xfer_error(cli_ctx *c, const put_names *pn, const xfer *x, uint64_t kept)
{
    if (x->error.local) {
        fprintf(stderr, "rfs put: %s\n", x->error.st.msg);
        return CLI_EXIT_FAIL;
    }
    /* Named after the destination the user gave; the library's message names the temporary
     * file, which is what --resume continues. */
    char msg[2048];
    if (kept + atomic_load(&x->done) > 0)
        snprintf(msg, sizeof msg, "%s (partial upload kept: rerun with --resume to continue)",
                 x->error.st.msg);
    else
        snprintf(msg, sizeof msg, "%s", x->error.st.msg);
    return cli_fail_remote(c, &pn->name, x->error.st.rc, msg);
}

static void *close_main(void *arg)
{
    put_ctx *p = arg;
    p->close_rc = rfs_close(p->f);
    return NULL;
}

/* Renames the synced temporary file into place while it is closed: the two round trips run
 * side by side (the close of a synced file cannot lose data; its error is still reported). */
static int rename_and_close(cli_ctx *c, put_ctx *p, const put_names *pn)
{
    pthread_t th;
    int closing = pthread_create(&th, NULL, close_main, p) == 0;
    if (!closing)
        close_main(p);
    int rc = rfs_rename(pn->tmp_url, pn->name.path, &c->ropts);
    rfs_status failed = {RFS_OK, ""};
    if (rc != RFS_OK)
        rfs_status_save(&failed, rc);
    if (closing)
        pthread_join(th, NULL);
    p->f = NULL;
    if (rc != RFS_OK)
        return cli_fail_remote(c, &pn->name, rfs_status_raise(&failed), NULL);
    if (p->close_rc != RFS_OK)
        return cli_fail_remote(c, &pn->name, p->close_rc, NULL);
    return CLI_EXIT_OK;
}

/* After every byte is written: cut any tail, sync, optionally verify, rename into place. Only a
 * file that was longer than the source when opened has a tail (nothing else writes past the
 * source's size: open_temp), so the cut costs a round trip only then. */
static int finish(cli_ctx *c, put_ctx *p, const put_names *pn, uint64_t total)
{
    int rc = RFS_OK;
    if (!p->open_size_ok || p->open_size > total)
        rc = rfs_set_size(p->f, total);
    if (rc == RFS_OK)
        rc = rfs_sync(p->f);
    if (rc != RFS_OK)
        return cli_fail_remote(c, &pn->tmp, rc, NULL);
    if (c->o.verify) {
        xfer_error e = {0};
        int same = 0;
        uint32_t crcs[2] = {0, 0};
        rc = xfer_compare(p->f, p->fd, p->local, 0, total, &same, crcs, &e);
        if (rc != RFS_OK && e.local) {
            fprintf(stderr, "rfs put: %s\n", e.st.msg);
            return CLI_EXIT_FAIL;
        }
        if (rc != RFS_OK)
            return cli_fail_remote(c, &pn->tmp, rc, e.st.msg);
        if (!same) {
            char msg[RFS_ERRMSG_MAX], server[300];
            cli_server_str(&pn->name, server, sizeof server);
            snprintf(msg, sizeof msg,
                     "%s:%s: verification failed: crc32c of the server's copy "
                     "%s is %08x, of %s %08x; not renamed into place (rerun with --resume to "
                     "repair)",
                     server, pn->name.path, pn->tmp.path, crcs[0], p->local, crcs[1]);
            return cli_fail_remote(c, &pn->name, RFS_E_IO, msg);
        }
    }
    return rename_and_close(c, p, pn);
}

static int open_local(cli_ctx *c, const char *local, struct stat *sb)
{
    int fd = open(local, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -cli_fail_local(c, local, errno);
    int e = fstat(fd, sb) != 0      ? errno
            : S_ISDIR(sb->st_mode)  ? EISDIR
            : !S_ISREG(sb->st_mode) ? EINVAL
                                    : 0;
    if (e) {
        close(fd);
        return -cli_fail_local(c, local, e);
    }
    return fd;
}

static int run_put(cli_ctx *c, put_ctx *p, put_names *pn, uint64_t total)
{
    uint64_t kept = 0;
    int st = c->o.resume ? resume_point(c, p, pn, total, &kept) : CLI_EXIT_OK;
    if (st != CLI_EXIT_OK)
        return st;
    xfer x;
    xfer_defaults(&x, total - kept, p->streams);
    x.start = kept;
    x.total = total;
    progress prog;
    progress_init(&prog, p->local, total - kept, !c->o.quiet && !c->o.no_progress);
    x.copy = put_chunk;
    x.ctx = p;
    x.prog = &prog;
    int rc = xfer_run(&x);
    progress_finish(&prog, atomic_load(&x.done), rc == RFS_OK);
    if (rc != RFS_OK)
        return report_xfer_error(c, pn, &x, kept);
    if (c->o.resume && !c->o.quiet)
        printf("rfs put: resumed %s: %llu of %llu bytes already on the server (verified), "
               "%llu sent\n",
               pn->name.path, (unsigned long long)kept, (unsigned long long)total,
               (unsigned long long)(total - kept));
    return finish(c, p, pn, total);
}

/* -n: the destination must not exist (checked before sending; a file created by someone else
 * during the transfer is still replaced by the rename). */
static int clobber_check(cli_ctx *c, const put_names *pn)
{
    if (!c->o.no_clobber)
        return CLI_EXIT_OK;
    rfs_stat_info st;
    int rc = rfs_stat(pn->url, &c->ropts, &st);
    if (rc == RFS_E_NOENT)
        return CLI_EXIT_OK;
    if (rc != RFS_OK)
        return cli_fail_remote(c, &pn->name, rc, NULL);
    char server[300];
    cli_server_str(&pn->name, server, sizeof server);
    fprintf(stderr, "rfs put: %s:%s exists (not overwritten: --no-clobber)\n", server,
            pn->name.path);
    return CLI_EXIT_FAIL;
}

int cli_cmd_put(cli_ctx *c)
{
    const char *local = c->o.args[0];
    put_names pn;
    put_ctx p = {.fd = -1, .local = local};
    struct stat sb;
    int layered;
    if (cli_through_layer(c, c->o.args[1], &layered)) {
        if (layered == CLI_EXIT_OK && strcmp(local, "-") == 0)
            return cli_usage(c->cmd, "a logical file (.rfsm) is put from a local file, not "
                                     "standard input (--raw puts the manifest file itself)");
        return layered == CLI_EXIT_OK ? cli_copy_manifest(c, local, c->o.args[1]) : layered;
    }
    if (strcmp(local, "-") == 0) {
        if (cli_url_normalize(c->cmd, c->o.args[1], pn.url, sizeof pn.url, &pn.name))
            return CLI_EXIT_USAGE;
        return cli_put_stdin(c, pn.url, &pn.name);
    }
    p.fd = open_local(c, local, &sb);
    if (p.fd < 0)
        return -p.fd;
    if (cli_url_normalize(c->cmd, c->o.args[1], pn.url, sizeof pn.url, &pn.name)) {
        close(p.fd);
        return CLI_EXIT_USAGE;
    }
    if (c->o.raw && rfs_is_manifest_name(pn.url))
        cli_warn_raw_manifest(c, p.fd, pn.name.path);
    /* the streams' connections are dialled while the names are checked on the server */
    if (sb.st_size > 0)
        cli_streams_warm(c, pn.url);
    int st = final_name(c, local, &pn);
    if (st == CLI_EXIT_OK)
        st = clobber_check(c, &pn);
    if (st == CLI_EXIT_OK)
        st = temp_name(c, local, &sb, &pn);
    if (st != CLI_EXIT_OK) {
        close(p.fd);
        return st;
    }
    /* The library opens as many connections as the size is worth (xfer_defaults). */
    xfer probe;
    p.streams = cli_streams(c, pn.tmp_url);
    xfer_defaults(&probe, (uint64_t)sb.st_size, p.streams);
    rfs_options o = c->ropts;
    o.streams = probe.nstreams;
    o.max_frame = probe.frame;
    st = open_temp(c, &pn, (unsigned)(sb.st_mode & 0777), &o, &p.f);
    if (st == CLI_EXIT_OK) {
        note_open_size(&p);
        st = run_put(c, &p, &pn, (uint64_t)sb.st_size);
        /* A put that got as far as the rename closed the file there; otherwise a failing close
         * only matters if the put had not failed already. */
        int crc = p.f ? rfs_close(p.f) : RFS_OK;
        if (crc != RFS_OK && st == CLI_EXIT_OK)
            st = cli_fail_remote(c, &pn.name, crc, NULL);
    }
    close(p.fd);
    return st;
}
