/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs cp SRC... DEST: one command for every direction, by the form of the names: local to
 * remote is a put, remote to local a get (both atomic, with --resume and --verify), remote to
 * remote streams through this client (the server-to-server copy that would bypass it is not
 * there yet). -r copies directories like cp -r: into DEST if it is a directory, else as DEST.
 * A remote source may end in a shell pattern (a last component such as `*.h5`), matched against its
 * directory's listing as the shell would (a leading dot must be matched explicitly). */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/escape.h"
#include "cli/transfer_pool.h"
#include "common/err.h"
#include "common/fullio.h"

#define CP_MAX_DEPTH 256
/* Files up to this size go to the server batched, a whole file per request and many requests
 * in flight (rfs_write_files); larger ones as a put each. */
#define CP_SMALL ((size_t)1 << 20)
/* A full batch goes out on a thread of its own while the next one is read (put) or while the
 * one before it is installed (get), so the link never waits for the local disk; two batches
 * at most are in memory. Each still ends with its last round trip, so batches are large
 * (10 000 files of 4..64 KiB over 1 Gbit/s, 50 ms: 4.5 s with 32 MiB batches sent one after
 * the other). */
#define CP_BATCH_BYTES ((size_t)128 << 20)
/* The first batch goes as soon as it holds this much, so the link starts (and TCP's window
 * opens) while the rest is read. */
#define CP_FIRST_BATCH_BYTES ((size_t)8 << 20)
static int batches_sent, fetches_sent;
#define CP_BATCH_FILES 4096

/* Small local files waiting to be sent to one server. */
typedef struct small_batch {
    char server[4400]; /* an rfs name of the server */
    rfs_write_item item[CP_BATCH_FILES];
    char *src[CP_BATCH_FILES];
    char *dst[CP_BATCH_FILES];
    size_t n, bytes;
    /* while in flight */
    pthread_t th;
    int running; /* 0 no, 1 on thread th, 2 sent without a thread (no join) */
    unsigned flags;
    rfs_options o;
} small_batch;
static small_batch batches[2];
static small_batch *batch = &batches[0]; /* the one being filled; the other may be in flight */

/* Small remote files waiting to be fetched from one server. */
typedef struct fetch_batch {
    char server[4400];
    rfs_read_item item[CP_BATCH_FILES];
    char *src[CP_BATCH_FILES];
    char *dst[CP_BATCH_FILES];
    size_t n, bytes;
    pthread_t th;
    int running; /* as small_batch's */
    rfs_options o;
} fetch_batch;
static fetch_batch fetches[2];
static fetch_batch *fetch = &fetches[0];

typedef struct name_list {
    size_t n, cap;
    char **v;
    uint64_t *sz; /* each name's size, where the listing gave one (remote files) */
    int oom;
} name_list;

static int push_sized(name_list *l, const char *s, uint64_t size)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 16;
        char **nv = realloc(l->v, nc * sizeof *nv);
        if (nv)
            l->v = nv;
        uint64_t *ns = nv ? realloc(l->sz, nc * sizeof *ns) : NULL;
        if (!ns)
            return l->oom = 1, -1;
        l->sz = ns;
        l->cap = nc;
    }
    if (!(l->v[l->n] = strdup(s)))
        return l->oom = 1, -1;
    l->sz[l->n++] = size;
    return 0;
}

static int push(name_list *l, const char *s)
{
    return push_sized(l, s, 0);
}

static void list_free(name_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    free(l->sz);
    memset(l, 0, sizeof *l);
}

typedef struct named_size {
    char *name;
    uint64_t size;
} named_size;

static int by_entry_name(const void *a, const void *b)
{
    return strcmp(((const named_size *)a)->name, ((const named_size *)b)->name);
}

/* Sorts l->v[from..n) by name, sizes along (qsort must not see an empty, possibly NULL,
 * array). */
static void sort_names(name_list *l, size_t from)
{
    size_t k = l->n > from ? l->n - from : 0;
    named_size *t = k > 1 ? malloc(k * sizeof *t) : NULL;
    if (!t) /* nothing to sort, or no memory: the order is only cosmetic */
        return;
    for (size_t i = 0; i < k; i++)
        t[i] = (named_size){l->v[from + i], l->sz[from + i]};
    qsort(t, k, sizeof *t, by_entry_name);
    for (size_t i = 0; i < k; i++) {
        l->v[from + i] = t[i].name;
        l->sz[from + i] = t[i].size;
    }
    free(t);
}

typedef struct listed {
    name_list files, dirs, other;
    const char *pattern; /* NULL: every entry */
} listed;

static int take(void *ctx, const char *entry, const rfs_stat_info *st)
{
    listed *l = ctx;
    if (strcmp(entry, ".") == 0 || strcmp(entry, "..") == 0)
        return 0;
    if (l->pattern && fnmatch(l->pattern, entry, FNM_PERIOD) != 0)
        return 0;
    name_list *to = st->type == RFS_TYPE_FILE  ? &l->files
                    : st->type == RFS_TYPE_DIR ? &l->dirs
                                               : &l->other;
    return push_sized(to, entry, st->size) ? 1 : 0;
}

static void listed_free(listed *l)
{
    list_free(&l->files);
    list_free(&l->dirs);
    list_free(&l->other);
}

static int has_pattern(const char *s)
{
    return strpbrk(s, "*?[") != NULL;
}

/* "rfs:HOST:PORT:" + path */
static int remote_url(const rfs_name *n, const char *path, char *out, size_t cap)
{
    char server[300];
    cli_server_str(n, server, sizeof server);
    int r = snprintf(out, cap, "rfs:%s:%s", server, path);
    return r < 0 || (size_t)r >= cap ? -1 : 0;
}

static int join(char *out, size_t cap, const char *dir, const char *name)
{
    size_t dl = strlen(dir);
    int r = snprintf(out, cap, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", name);
    return r < 0 || (size_t)r >= cap ? -1 : 0;
}

static int worst(int a, int b)
{
    return a == CLI_EXIT_USAGE || b == CLI_EXIT_USAGE ? CLI_EXIT_USAGE : a ? a : b;
}

/* One file, by direction; dest is the final name (never a directory here). */
static int copy_file(cli_ctx *c, const char *src, const char *dest)
{
    cli_ctx sub = *c;
    sub.o.args[0] = src;
    sub.o.args[1] = dest;
    sub.o.nargs = 2;
    int rs = rfs_is_name(src), rd = rfs_is_name(dest);
    if (rs && rd) {
        char su[4400], du[4400];
        if (c->o.resume)
            return cli_usage(c->cmd, "--resume is for copies to or from a local file");
        rfs_name sn, dn;
        if (cli_url_normalize(c->cmd, src, su, sizeof su, &sn) ||
            cli_url_normalize(c->cmd, dest, du, sizeof du, &dn))
            return CLI_EXIT_USAGE;
        int fallback = 0;
        int st = cli_copy_tpc(&sub, su, &sn, du, &dn, &fallback);
        return fallback ? cli_copy_remote(&sub, su, &sn, du, &dn) : st;
    }
    return rs ? cli_cmd_get(&sub) : cli_cmd_put(&sub);
}

static int copy_tree(cli_ctx *c, const char *src, const char *dest, int depth);

static void batch_clear(small_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free((void *)b->item[i].data);
        free((void *)b->item[i].path);
        free(b->src[i]);
        free(b->dst[i]);
    }
    b->n = b->bytes = 0;
}

static void *batch_send(void *arg)
{
    small_batch *b = arg;
    rfs_write_files(b->server, b->item, b->n, b->flags, &b->o);
    return NULL;
}

/* Waits for the batch in flight, if any; a file it could not take (too big for one request
 * after all, an older server, a lost connection) goes again as a put, which knows how to
 * recover. */
static int batch_finish(cli_ctx *c, small_batch *b)
{
    if (!b->running)
        return CLI_EXIT_OK;
    if (b->running == 1)
        pthread_join(b->th, NULL);
    b->running = 0;
    int status = CLI_EXIT_OK;
    for (size_t i = 0; i < b->n; i++) {
        int r = b->item[i].result;
        if (r == RFS_OK)
            continue;
        if (r == RFS_E_EXIST && c->o.no_clobber) {
            fprintf(stderr, "rfs %s: %s exists (not overwritten: --no-clobber)\n", c->cmd,
                    b->dst[i]);
            status = worst(status, CLI_EXIT_FAIL);
        } else if (r == RFS_E_TOOBIG || r == RFS_E_CONN || r == RFS_E_TIMEOUT || r == RFS_E_PROTO ||
                   r == RFS_E_UNSUPPORTED) {
            status = worst(status, copy_file(c, b->src[i], b->dst[i]));
        } else {
            char url[4400];
            rfs_name n;
            if (cli_url_normalize(c->cmd, b->dst[i], url, sizeof url, &n) == 0)
                status = worst(status, cli_fail_remote(c, &n, r, NULL));
        }
    }
    batch_clear(b);
    return status;
}

/* Sends the batch being filled (on its own thread, or here if none can start) and finishes
 * the one sent before it, whose buffers then take the next files. */
static int batch_flush(cli_ctx *c)
{
    small_batch *full = batch, *other = batch == &batches[0] ? &batches[1] : &batches[0];
    if (full->n) {
        batches_sent++;
        full->flags = RFS_WRITE_SYNC | (c->o.no_clobber ? RFS_WRITE_EXCL : 0);
        full->o = c->ropts; /* a long link needs several connections, as a large file does */
        full->o.streams = c->o.streams > 0 ? c->o.streams : cli_streams(c, full->server);
        full->running = pthread_create(&full->th, NULL, batch_send, full) == 0 ? 1 : 2;
        if (full->running == 2)
            batch_send(full); /* no thread: sent here, just without the overlap */
    }
    int status = batch_finish(c, other);
    batch = other;
    return status;
}

static void fetch_clear(fetch_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->item[i].data);
        free((void *)b->item[i].path);
        free(b->src[i]);
        free(b->dst[i]);
    }
    b->n = b->bytes = 0;
}

/* data as the local file dest, through a temporary name beside it (a reader never sees half
 * of it). Not synced, like cp and rsync: --verify takes the get path, which syncs. */
static int install_local(cli_ctx *c, const char *dest, const void *data, size_t len)
{
    char tmp[PATH_MAX + 32], base[1024];
    const char *slash = strrchr(dest, '/');
    size_t dirlen = slash ? (size_t)(slash - dest) + 1 : 0;
    cli_basename(dest, base, sizeof base);
    if (snprintf(tmp, sizeof tmp, "%.*s.%s.rfs-part-XXXXXX", (int)dirlen, dest, base) >=
        (int)sizeof tmp)
        return cli_fail_local(c, dest, ENAMETOOLONG);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return cli_fail_local(c, dest, errno);
    mode_t um = umask(0);
    umask(um);
    int e = rfs_pwrite_full(fd, data, len, 0) != 0 ? errno : 0;
    if (!e && fchmod(fd, 0666 & ~um) != 0)
        e = errno;
    if (close(fd) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, dest) != 0)
        e = errno;
    if (e) {
        unlink(tmp);
        return cli_fail_local(c, dest, e);
    }
    return CLI_EXIT_OK;
}

static void *fetch_run(void *arg)
{
    fetch_batch *b = arg;
    rfs_read_files(b->server, b->item, b->n, &b->o);
    return NULL;
}

/* Waits for the fetch in flight, if any, and installs its files. */
static int fetch_finish(cli_ctx *c, fetch_batch *b)
{
    if (!b->running)
        return CLI_EXIT_OK;
    if (b->running == 1)
        pthread_join(b->th, NULL);
    b->running = 0;
    int status = CLI_EXIT_OK;
    for (size_t i = 0; i < b->n; i++) {
        rfs_read_item *it = &b->item[i];
        if (it->result == RFS_OK) {
            status = worst(status, install_local(c, b->dst[i], it->data, it->len));
        } else if (it->result == RFS_E_TOOBIG || it->result == RFS_E_CONN ||
                   it->result == RFS_E_TIMEOUT || it->result == RFS_E_PROTO ||
                   it->result == RFS_E_UNSUPPORTED) {
            status = worst(status, copy_file(c, b->src[i], b->dst[i])); /* grew, or gone */
        } else {
            char url[4400];
            rfs_name n;
            if (cli_url_normalize(c->cmd, b->src[i], url, sizeof url, &n) == 0)
                status = worst(status, cli_fail_remote(c, &n, it->result, NULL));
        }
    }
    fetch_clear(b);
    return status;
}

/* Starts fetching the batch being filled, then installs the one fetched before it (whose
 * buffers then take the next files) while this one is on the wire. */
static int fetch_flush(cli_ctx *c)
{
    fetch_batch *full = fetch, *other = fetch == &fetches[0] ? &fetches[1] : &fetches[0];
    if (full->n) {
        fetches_sent++;
        full->o = c->ropts;
        full->o.streams = c->o.streams > 0 ? c->o.streams : cli_streams(c, full->server);
        full->running = pthread_create(&full->th, NULL, fetch_run, full) == 0 ? 1 : 2;
        if (full->running == 2)
            fetch_run(full); /* no thread: fetched here, just without the overlap */
    }
    int status = fetch_finish(c, other);
    fetch = other;
    return status;
}

/* Queues a small remote file (size from its listing) for the local dest. */
static int fetch_add(cli_ctx *c, const char *src, uint64_t size, const char *dest, int *queued)
{
    *queued = 0;
    char url[4400];
    rfs_name n;
    struct stat sb;
    if (c->o.verify || c->o.resume || size > CP_SMALL ||
        (c->o.no_clobber && lstat(dest, &sb) == 0) ||
        cli_url_normalize(c->cmd, src, url, sizeof url, &n))
        return CLI_EXIT_OK; /* the get path handles these (and says "exists") */
    int status = CLI_EXIT_OK;
    char server[300], sname[4400];
    cli_server_str(&n, server, sizeof server);
    snprintf(sname, sizeof sname, "rfs:%s:/", server);
    size_t cap_bytes = fetches_sent ? CP_BATCH_BYTES : CP_FIRST_BATCH_BYTES;
    if (fetch->n && (strcmp(fetch->server, sname) != 0 || fetch->n == CP_BATCH_FILES ||
                     fetch->bytes + size > cap_bytes))
        status = fetch_flush(c);
    snprintf(fetch->server, sizeof fetch->server, "%s", sname);
    size_t i = fetch->n;
    /* A little room: a file that grew a bit since the listing still comes in one piece. */
    size_t cap = (size_t)size + 4096;
    fetch->item[i] = (rfs_read_item){.path = strdup(n.path), .data = malloc(cap), .cap = cap};
    fetch->src[i] = strdup(src);
    fetch->dst[i] = strdup(dest);
    if (!fetch->item[i].path || !fetch->item[i].data || !fetch->src[i] || !fetch->dst[i]) {
        free((void *)fetch->item[i].path);
        free(fetch->item[i].data);
        free(fetch->src[i]);
        free(fetch->dst[i]);
        return worst(status, cli_fail_local(c, "batch", ENOMEM));
    }
    fetch->n++;
    fetch->bytes += cap;
    *queued = 1;
    return status;
}

/* Queues a small local file for dest (a remote name), or reports that it is not one. */
static int batch_add(cli_ctx *c, const char *src, const char *dest, int *queued)
{
    *queued = 0;
    struct stat sb;
    char url[4400];
    rfs_name n;
    if (c->o.verify || c->o.resume || stat(src, &sb) != 0 || !S_ISREG(sb.st_mode) ||
        (size_t)sb.st_size > CP_SMALL || cli_url_normalize(c->cmd, dest, url, sizeof url, &n))
        return CLI_EXIT_OK;
    int status = CLI_EXIT_OK;
    char server[300];
    cli_server_str(&n, server, sizeof server);
    char sname[4400];
    snprintf(sname, sizeof sname, "rfs:%s:/", server);
    size_t cap = batches_sent ? CP_BATCH_BYTES : CP_FIRST_BATCH_BYTES;
    if (batch->n && (strcmp(batch->server, sname) != 0 || batch->n == CP_BATCH_FILES ||
                     batch->bytes + (size_t)sb.st_size > cap))
        status = batch_flush(c);
    snprintf(batch->server, sizeof batch->server, "%s", sname);
    FILE *f = fopen(src, "rb");
    if (!f)
        return worst(status, cli_fail_local(c, src, errno));
    size_t len = (size_t)sb.st_size;
    char *data = malloc(len ? len : 1);
    size_t got = data ? fread(data, 1, len, f) : 0;
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (!data || got != len) {
        free(data);
        return worst(status, cli_fail_local(c, src, !data ? ENOMEM : err ? err : EIO));
    }
    size_t i = batch->n;
    batch->src[i] = strdup(src);
    batch->dst[i] = strdup(dest);
    char *path = strdup(n.path);
    if (!batch->src[i] || !batch->dst[i] || !path) {
        free(batch->src[i]);
        free(batch->dst[i]);
        free(path);
        free(data);
        return worst(status, cli_fail_local(c, "batch", ENOMEM));
    }
    batch->item[i] =
        (rfs_write_item){.path = path, .data = data, .len = len, .mode = sb.st_mode & 0777};
    batch->n++;
    batch->bytes += len;
    *queued = 1;
    return status;
}

/* Whether dest names an existing directory (local or remote); -1 on a failure reported. */
static int is_dir(cli_ctx *c, const char *dest)
{
    if (!rfs_is_name(dest)) {
        struct stat sb;
        return stat(dest, &sb) == 0 && S_ISDIR(sb.st_mode);
    }
    char url[4400];
    rfs_name n;
    if (cli_url_normalize(c->cmd, dest, url, sizeof url, &n))
        return -1;
    if (n.path[strlen(n.path) - 1] == '/')
        return 1;
    rfs_stat_info st;
    int rc = rfs_stat(url, &c->ropts, &st);
    return rc == RFS_OK && st.type == RFS_TYPE_DIR;
}

static int make_dir(cli_ctx *c, const char *path)
{
    if (!rfs_is_name(path)) {
        if (mkdir(path, 0777) == 0 || errno == EEXIST)
            return CLI_EXIT_OK;
        return cli_fail_local(c, path, errno);
    }
    char url[4400];
    rfs_name n;
    if (cli_url_normalize(c->cmd, path, url, sizeof url, &n))
        return CLI_EXIT_USAGE;
    int rc = rfs_mkdir(url, 0777, &c->ropts);
    return rc == RFS_OK || rc == RFS_E_EXIST ? CLI_EXIT_OK : cli_fail_remote(c, &n, rc, NULL);
}

/* Listings of remote subdirectories fetched ahead, all at once (prefetch_listings): a tree of
 * many directories costs a round trip for a group of them, not one per directory. */
typedef struct prefetched {
    char *src; /* NULL: taken */
    listed l;
    rfs_status st; /* the listing's outcome, for the thread that takes it */
    cli_ctx *c;
} prefetched;
static prefetched *ahead;
static size_t nahead, ahead_end;
static _Atomic size_t ahead_next;

#define PREFETCH_THREADS 8

static void *prefetch_worker(void *arg)
{
    (void)arg;
    for (;;) {
        size_t i = atomic_fetch_add(&ahead_next, 1);
        if (i >= ahead_end)
            return NULL;
        prefetched *p = &ahead[i];
        p->st.rc = RFS_OK;
        rfs_status_first(&p->st, rfs_list(p->src, &p->c->ropts, take, &p->l));
    }
}

static void prefetch_clear(void)
{
    for (size_t i = 0; i < nahead; i++) {
        free(ahead[i].src);
        listed_free(&ahead[i].l);
    }
    free(ahead);
    ahead = NULL;
    nahead = 0;
}

/* Lists the remote directories src/dirs[i] in parallel, for list_source to take (deeper
 * levels add theirs while a level's are still waiting to be taken). */
static void prefetch_listings(cli_ctx *c, const char *src, const name_list *dirs)
{
    if (dirs->n < 2)
        return;
    prefetched *grown = realloc(ahead, (nahead + dirs->n) * sizeof *ahead);
    if (!grown)
        return; /* listed the ordinary way */
    ahead = grown;
    size_t first = nahead;
    for (size_t i = 0; i < dirs->n; i++) {
        char p[4400];
        prefetched *e = &ahead[nahead];
        *e = (prefetched){.c = c};
        if (join(p, sizeof p, src, dirs->v[i]) || !(e->src = strdup(p)))
            continue;
        nahead++;
    }
    atomic_store(&ahead_next, first);
    ahead_end = nahead;
    pthread_t th[PREFETCH_THREADS];
    int started = 0;
    for (; started < PREFETCH_THREADS && (size_t)started + 1 < nahead - first; started++)
        if (pthread_create(&th[started], NULL, prefetch_worker, NULL) != 0)
            break;
    prefetch_worker(NULL);
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
}

/* The entries of a source directory, split into files and directories. */
static int list_source(cli_ctx *c, const char *src, listed *l)
{
    for (size_t i = 0; i < nahead; i++) {
        prefetched *p = &ahead[i];
        if (!p->src || strcmp(p->src, src) != 0)
            continue;
        free(p->src);
        p->src = NULL;
        *l = p->l;
        p->l = (listed){0};
        if (l->files.oom || l->dirs.oom || l->other.oom)
            return cli_fail_local(c, "listing", ENOMEM);
        if (p->st.rc == RFS_OK)
            return CLI_EXIT_OK;
        rfs_name n;
        if (rfs_parse_name(src, &n))
            return cli_usage(c->cmd, "%s: not a valid rfs name", src);
        return cli_fail_remote(c, &n, p->st.rc, p->st.msg);
    }
    if (rfs_is_name(src)) {
        char url[4400];
        rfs_name n;
        if (cli_url_normalize(c->cmd, src, url, sizeof url, &n))
            return CLI_EXIT_USAGE;
        int rc = rfs_list(url, &c->ropts, take, l);
        if (l->files.oom || l->dirs.oom || l->other.oom)
            return cli_fail_local(c, "listing", ENOMEM);
        return rc == RFS_OK ? CLI_EXIT_OK : cli_fail_remote(c, &n, rc, NULL);
    }
    DIR *d = opendir(src);
    if (!d)
        return cli_fail_local(c, src, errno);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[PATH_MAX];
        struct stat sb, lsb;
        if (join(p, sizeof p, src, e->d_name) || stat(p, &sb) != 0 || lstat(p, &lsb) != 0) {
            push(&l->other, e->d_name);
            continue;
        }
        /* Links to directories are not followed: the walk must end. */
        name_list *to = S_ISREG(sb.st_mode)                            ? &l->files
                        : S_ISDIR(sb.st_mode) && !S_ISLNK(lsb.st_mode) ? &l->dirs
                                                                       : &l->other;
        push(to, e->d_name);
    }
    closedir(d);
    if (l->files.oom || l->dirs.oom || l->other.oom)
        return cli_fail_local(c, "listing", ENOMEM);
    return CLI_EXIT_OK;
}

/* src (a directory) becomes dest (created if missing), recursively. */
/* Depth below which the remote directories of the tree being put exist already
 * (cli_premake_dirs): their MKDIRs are skipped. */
static int premade_levels;

static int copy_tree(cli_ctx *c, const char *src, const char *dest, int depth)
{
    if (depth > CP_MAX_DEPTH)
        return cli_usage(c->cmd, "%s: more than %d directory levels", src, CP_MAX_DEPTH);
    int status =
        depth > 0 && depth <= premade_levels && rfs_is_name(dest) ? CLI_EXIT_OK : make_dir(c, dest);
    if (status != CLI_EXIT_OK)
        return status;
    if (depth == 0 && !rfs_is_name(src) && rfs_is_name(dest)) {
        char url[4400];
        rfs_name dn;
        if (cli_url_normalize(c->cmd, dest, url, sizeof url, &dn) == 0)
            premade_levels = cli_premake_dirs(c, src, url, &dn);
    }
    listed l = {0};
    status = list_source(c, src, &l);
    if (status == CLI_EXIT_OK) {
        sort_names(&l.files, 0);
        sort_names(&l.dirs, 0);
        for (size_t i = 0; i < l.other.n; i++) {
            char shown[1100];
            cli_escape(l.other.v[i], shown, sizeof shown);
            fprintf(stderr, "rfs cp: %s: skipping %s (not a regular file or directory)\n", src,
                    shown);
        }
        for (int pass = 0; pass < 2; pass++) {
            name_list *nl = pass ? &l.dirs : &l.files;
            if (pass && rfs_is_name(src))
                prefetch_listings(c, src, nl);
            for (size_t i = 0; i < nl->n && status != CLI_EXIT_USAGE; i++) {
                char s[4400], d[4400];
                if (join(s, sizeof s, src, nl->v[i]) || join(d, sizeof d, dest, nl->v[i])) {
                    status = cli_usage(c->cmd, "path too long under %s", src);
                    break;
                }
                int queued = 0, st = CLI_EXIT_OK;
                if (!pass && !rfs_is_name(s) && rfs_is_name(d))
                    st = batch_add(c, s, d, &queued);
                else if (!pass && rfs_is_name(s) && !rfs_is_name(d))
                    st = fetch_add(c, s, nl->sz[i], d, &queued);
                if (!queued)
                    st = worst(st, pass ? copy_tree(c, s, d, depth + 1) : copy_file(c, s, d));
                status = worst(status, st); /* like cp -r: go on, fail at the end */
            }
        }
    }
    listed_free(&l);
    if (depth == 0) {
        premade_levels = 0;
        prefetch_clear();
    }
    return status;
}

static int copy_one(cli_ctx *c, const char *src, const char *dest, int dest_dir)
{
    char final[4400], base[1024];
    int src_dir;
    if (rfs_is_name(src)) {
        char url[4400];
        rfs_name n;
        if (cli_url_normalize(c->cmd, src, url, sizeof url, &n))
            return CLI_EXIT_USAGE;
        rfs_stat_info st;
        int rc = rfs_stat(url, &c->ropts, &st);
        if (rc != RFS_OK)
            return cli_fail_remote(c, &n, rc, NULL);
        src_dir = st.type == RFS_TYPE_DIR;
        cli_basename(n.path, base, sizeof base);
    } else {
        struct stat sb;
        if (stat(src, &sb) != 0)
            return cli_fail_local(c, src, errno);
        src_dir = S_ISDIR(sb.st_mode);
        cli_basename(src, base, sizeof base);
    }
    if (!src_dir && dest_dir && rfs_is_name(src) && rfs_is_name(dest)) {
        if (!base[0] || join(final, sizeof final, dest, base))
            return cli_usage(c->cmd, "cannot name %s inside %s", src, dest);
        return copy_file(c, src, final);
    }
    if (!src_dir) /* put and get place a file into a directory destination themselves */
        return copy_file(c, src, dest);
    if (!c->o.recursive)
        return cli_usage(c->cmd, "%s is a directory (use -r)", src);
    if (!dest_dir)
        return copy_tree(c, src, dest, 0);
    if (!base[0] || join(final, sizeof final, dest, base))
        return cli_usage(c->cmd, "cannot name %s inside %s", src, dest);
    return copy_tree(c, src, final, 0);
}

/* A remote source ending in a pattern -> the matching names (sorted), else itself. */
static int expand(cli_ctx *c, const char *src, name_list *out)
{
    if (!rfs_is_name(src))
        return push(out, src) ? cli_fail_local(c, "arguments", ENOMEM) : CLI_EXIT_OK;
    char url[4400];
    rfs_name n;
    if (cli_url_normalize(c->cmd, src, url, sizeof url, &n))
        return CLI_EXIT_USAGE;
    char *slash = strrchr(n.path, '/');
    const char *pat = strpbrk(n.path, "*?[");
    if (pat && pat < slash) {
        /* A name that exists as written is taken literally, as the shell does. */
        rfs_stat_info st;
        if (rfs_stat(url, &c->ropts, &st) != RFS_OK)
            return cli_usage(c->cmd, "%s: patterns are matched in the last path component only",
                             src);
        return push(out, url) ? cli_fail_local(c, "arguments", ENOMEM) : CLI_EXIT_OK;
    }
    if (!has_pattern(slash + 1))
        return push(out, url) ? cli_fail_local(c, "arguments", ENOMEM) : CLI_EXIT_OK;
    listed l = {.pattern = slash + 1};
    char dir[4400], durl[4400];
    snprintf(dir, sizeof dir, "%.*s", slash == n.path ? 1 : (int)(slash - n.path), n.path);
    if (remote_url(&n, dir, durl, sizeof durl))
        return cli_usage(c->cmd, "path too long: %s", src);
    int status = list_source(c, durl, &l);
    if (status == CLI_EXIT_OK) {
        name_list *all[] = {&l.files, &l.dirs, &l.other};
        size_t before = out->n;
        for (int k = 0; k < 3; k++)
            for (size_t i = 0; i < all[k]->n; i++) {
                char p[4400], u[4400];
                if (join(p, sizeof p, dir, all[k]->v[i]) || remote_url(&n, p, u, sizeof u) ||
                    push(out, u))
                    status = cli_fail_local(c, "arguments", ENOMEM);
            }
        sort_names(out, before);
        if (out->n == before) {
            fprintf(stderr, "rfs cp: %s: no match\n", src);
            status = CLI_EXIT_FAIL;
        }
    }
    listed_free(&l);
    return status;
}

/* Between this host and one server (not two: that copy goes server to server), the
 * connections the copy will want are dialled while the names are listed and the first files
 * read: on a long path that is several round trips off the start. */
static void warm_up(cli_ctx *c, const char *dest)
{
    const char *remote = NULL;
    int nremote = 0;
    for (int i = 0; i < c->o.nargs; i++)
        if (rfs_is_name(c->o.args[i])) {
            remote = remote ? remote : c->o.args[i];
            nremote++;
        }
    if (!remote || (rfs_is_name(dest) && nremote > 1))
        return;
    char url[4400];
    rfs_name n;
    if (cli_url_normalize(c->cmd, remote, url, sizeof url, &n) == 0)
        cli_streams_warm(c, url);
}

int cli_cmd_cp(cli_ctx *c)
{
    const char *dest = c->o.args[c->o.nargs - 1];
    name_list srcs = {0};
    int status = CLI_EXIT_OK;
    warm_up(c, dest);
    for (int i = 0; i + 1 < c->o.nargs; i++)
        status = worst(status, expand(c, c->o.args[i], &srcs));
    for (size_t i = 0; i < srcs.n && status != CLI_EXIT_USAGE; i++)
        if (!rfs_is_name(srcs.v[i]) && !rfs_is_name(dest))
            status = cli_usage(c->cmd, "'%s' and '%s' are both local: use cp", srcs.v[i], dest);
    int dest_dir = status != CLI_EXIT_USAGE ? is_dir(c, dest) : 0;
    if (dest_dir < 0)
        status = CLI_EXIT_USAGE;
    if (status != CLI_EXIT_USAGE && srcs.n > 1 && !dest_dir)
        status = cli_usage(c->cmd, "copying %zu sources: %s must be a directory", srcs.n, dest);
    /* Like cp: every source is tried; the exit status is the worst. */
    for (size_t i = 0; i < srcs.n && status != CLI_EXIT_USAGE; i++)
        status = worst(status, copy_one(c, srcs.v[i], dest, dest_dir));
    /* the last batches: sent (fetched), then waited for */
    status = worst(status, batch_flush(c));
    status = worst(status, batch_flush(c));
    status = worst(status, fetch_flush(c));
    status = worst(status, fetch_flush(c));
    cli_streams_warm_end(c);
    list_free(&srcs);
    return status;
}
