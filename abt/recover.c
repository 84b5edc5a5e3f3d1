/* `rfs recover`: delivers what a dead process staged but never sent. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "abt/abt.h"
#include "abt/journal.h"
#include "common/err.h"
#include "common/log.h"

typedef struct pending {
    uint64_t seq, rec_off;
} pending;

typedef struct open_file {
    char *name;
    rfs_file *f;
} open_file;

typedef struct replay {
    const rfs_options *opts;
    pending *v;
    size_t n, cap;
    open_file *files;
    size_t n_files;
    int fd;
    rfs_abt_progress_fn progress;
    void *ctx;
    uint64_t records, bytes;
} replay;

static int collect(void *ctx, const rfs_journal_rec *r)
{
    replay *rp = ctx;
    if (r->done)
        return 0;
    if (rp->n == rp->cap) {
        size_t cap = rp->cap ? rp->cap * 2 : 64;
        pending *nv = realloc(rp->v, sizeof *nv * cap);
        if (!nv)
            return rfs_fail(RFS_E_NOMEM, "recover: out of memory");
        rp->v = nv;
        rp->cap = cap;
    }
    rp->v[rp->n++] = (pending){r->seq, r->rec_off};
    return 0;
}

static int by_seq(const void *a, const void *b)
{
    const pending *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int file_for(replay *rp, const char *name, rfs_file **out)
{
    for (size_t i = 0; i < rp->n_files; i++)
        if (strcmp(rp->files[i].name, name) == 0) {
            *out = rp->files[i].f;
            return RFS_OK;
        }
    open_file *nf = realloc(rp->files, sizeof *nf * (rp->n_files + 1));
    if (!nf)
        return rfs_fail(RFS_E_NOMEM, "recover: out of memory");
    rp->files = nf;
    int rc = rfs_open(name, RFS_O_WRONLY | RFS_O_CREAT, 0644, rp->opts, out);
    if (rc != RFS_OK)
        return rc;
    nf[rp->n_files].name = strdup(name);
    nf[rp->n_files].f = *out;
    rp->n_files++;
    return RFS_OK;
}

static int deliver(void *ctx, const rfs_journal_rec *r)
{
    replay *rp = ctx;
    rfs_file *f;
    int rc = file_for(rp, r->name, &f);
    size_t done = 0;
    if (rc == RFS_OK)
        rc = r->n_ext == 1 ? rfs_pwrite(f, r->data, r->len, r->ext[0].offset, &done)
                           : rfs_pwritev(f, r->ext, r->n_ext, r->data, &done);
    if (rc == RFS_OK && done != r->len)
        rc = rfs_fail(RFS_E_IO, "%s: short write during recovery", r->name);
    if (rc == RFS_OK)
        rc = rfs_journal_mark_done_fd(rp->fd, r->rec_off);
    if (rc == RFS_OK) {
        rp->records++;
        rp->bytes += r->len;
        if (rp->progress)
            rp->progress(rp->ctx, r->name, rp->bytes);
    }
    return rc;
}

static int close_files(replay *rp)
{
    int err = RFS_OK;
    for (size_t i = 0; i < rp->n_files; i++) {
        int rc = rfs_sync(rp->files[i].f);
        int rc2 = rfs_close(rp->files[i].f);
        if (err == RFS_OK)
            err = rc != RFS_OK ? rc : rc2;
        free(rp->files[i].name);
    }
    free(rp->files);
    rp->files = NULL;
    rp->n_files = 0;
    return err;
}

static int recover_one(const char *path, replay *rp)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return rfs_fail(rfs_err_from_errno(errno), "%s: %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        RFS_LOGW("%s is in use by a running process; skipped", path);
        return RFS_OK;
    }
    rp->fd = fd;
    rp->n = 0;
    int torn = 0;
    int rc = rfs_journal_scan(fd, collect, rp, &torn);
    if (torn)
        RFS_LOGW("%s: ends with an incomplete record (the writer died mid-append); it is ignored", path);
    qsort(rp->v, rp->n, sizeof *rp->v, by_seq);
    for (size_t i = 0; rc == RFS_OK && i < rp->n; i++)
        rc = rfs_journal_read_at(fd, rp->v[i].rec_off, deliver, rp);
    int crc = close_files(rp);
    if (rc == RFS_OK)
        rc = crc;
    if (rc == RFS_OK)
        unlink(path);
    close(fd);
    return rc;
}

int rfs_abt_recover(const char *dir, const rfs_options *opts, rfs_abt_progress_fn progress,
                    void *ctx, uint64_t *records, uint64_t *bytes)
{
    DIR *d = opendir(dir);
    if (!d)
        return rfs_fail(rfs_err_from_errno(errno), "staging directory %s: %s", dir, strerror(errno));
    replay rp = {.opts = opts, .progress = progress, .ctx = ctx};
    int err = RFS_OK;
    struct dirent *e;
    size_t sl = strlen(RFS_JOURNAL_SUFFIX);
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l <= sl || strcmp(e->d_name + l - sl, RFS_JOURNAL_SUFFIX) != 0)
            continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int rc = recover_one(path, &rp);
        if (rc != RFS_OK && err == RFS_OK)
            err = rc;
    }
    closedir(d);
    free(rp.v);
    if (records)
        *records = rp.records;
    if (bytes)
        *bytes = rp.bytes;
    return err;
}
