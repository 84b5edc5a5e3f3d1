/* rfs put LOCAL URL: copies a local file to the server, creating or truncating the remote file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/fullio.h"
#include "cli/progress.h"
#include "cli/transfer_pool.h"

typedef struct put_ctx {
    int fd;
    const char *local;
    rfs_file *f;
} put_ctx;

static int put_chunk(xfer *x, void *buf, uint64_t off, size_t len, xfer_error *e)
{
    put_ctx *p = x->ctx;
    ssize_t r = rfs_pread_full(p->fd, buf, len, off);
    if (r < 0 || (size_t)r < len) {
        e->local = 1;
        if (r < 0)
            snprintf(e->msg, sizeof e->msg, "reading %s: %s", p->local, strerror(errno));
        else
            snprintf(e->msg, sizeof e->msg, "%s: file shrank during the transfer", p->local);
        return RFS_E_IO;
    }
    size_t done = 0;
    int rc = rfs_pwrite(p->f, buf, len, off, &done);
    if (rc == RFS_OK && done != len) {
        snprintf(e->msg, sizeof e->msg, "short write at offset %llu (%zu of %zu bytes)",
                 (unsigned long long)off, done, len);
        return RFS_E_IO;
    }
    return rc;
}

int cli_cmd_put(cli_ctx *c)
{
    const char *local = c->o.args[0];
    char url[4400];
    rfs_name name;
    if (cli_url_normalize(c->cmd, c->o.args[1], url, sizeof url, &name))
        return CLI_EXIT_USAGE;

    put_ctx p = {.fd = -1, .local = local};
    p.fd = open(local, O_RDONLY | O_CLOEXEC);
    if (p.fd < 0)
        return cli_fail_local(c, local, errno);
    struct stat sb;
    if (fstat(p.fd, &sb) != 0) {
        int e = errno;
        close(p.fd);
        return cli_fail_local(c, local, e);
    }
    if (!S_ISREG(sb.st_mode)) {
        close(p.fd);
        return cli_fail_local(c, local, S_ISDIR(sb.st_mode) ? EISDIR : EINVAL);
    }

    /* "rfs put f rfs:h:p:/dir/" stores /dir/f, like cp. */
    if (name.path[strlen(name.path) - 1] == '/' &&
        (cli_url_join_basename(url, sizeof url, local) || rfs_parse_name(url, &name))) {
        close(p.fd);
        return cli_usage(c->cmd, "cannot derive a remote file name from '%s'", local);
    }

    xfer x;
    xfer_defaults(&x, (uint64_t)sb.st_size, c->o.streams);
    rfs_options o = c->ropts;
    o.streams = x.nstreams;
    o.max_frame = x.frame;
    unsigned mode = (unsigned)(sb.st_mode & 0777);
    int rc = rfs_open(url, RFS_O_WRONLY | RFS_O_CREAT | RFS_O_TRUNC, mode, &o, &p.f);
    if (rc == RFS_E_ISDIR) {
        /* The name is an existing directory: store the file inside it. */
        if (cli_url_join_basename(url, sizeof url, local) || rfs_parse_name(url, &name)) {
            close(p.fd);
            return cli_usage(c->cmd, "cannot derive a remote file name from '%s'", local);
        }
        rc = rfs_open(url, RFS_O_WRONLY | RFS_O_CREAT | RFS_O_TRUNC, mode, &o, &p.f);
    }
    if (rc != RFS_OK) {
        close(p.fd);
        return cli_fail_remote(c, &name, rc, NULL);
    }

    progress prog;
    progress_init(&prog, local, x.total, !c->o.quiet && !c->o.no_progress);
    x.copy = put_chunk;
    x.ctx = &p;
    x.prog = &prog;
    rc = xfer_run(&x);
    progress_finish(&prog, atomic_load(&x.done), rc == RFS_OK);

    /* Closing flushes: a write error the server reports late still fails the put. */
    int crc = rfs_close(p.f);
    char close_msg[1536];
    snprintf(close_msg, sizeof close_msg, "%s", crc != RFS_OK ? rfs_last_error() : "");
    close(p.fd);
    if (rc != RFS_OK) {
        if (x.error.local) {
            fprintf(stderr, "rfs put: %s\n", x.error.msg);
            return CLI_EXIT_FAIL;
        }
        return cli_fail_remote(c, &name, rc, x.error.msg);
    }
    if (crc != RFS_OK)
        return cli_fail_remote(c, &name, crc, close_msg);
    return CLI_EXIT_OK;
}
