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
#include "rfs/rfs_manifest.h"
#include "cli/escape.h"
#include "cli/transfer_pool.h"
#include "cli/tree_feed.h"
#include "common/err.h"
#include "common/fullio.h"

#define CP_MAX_DEPTH 256
/* Files up to this size go to the server in whole-file requests, many in flight, through one
 * fed batch per direction (cli/tree_feed.h); larger ones as a put or get each. */
#define CP_SMALL ((size_t)1 << 20)
/* The feeds of the tree being copied: small files to one server, small files from one. */
static tree_feed *puts_feed, *gets_feed;

/* A tree put to a server whose whole-file writes make their own parent directories
 * (RFS_FEAT_WPARENTS): the directories are made on a thread beside the files (empty ones
 * need it), so the first file goes out without waiting for them. */
static struct {
    int on; /* for the tree being put: no MKDIRs in the walk, RFS_WRITE_PARENTS on the feed */
    pthread_t th;
    cli_ctx *c;
    char src[PATH_MAX], dest[4400], url[4400];
    rfs_name dn;
    int status, made, levels;
} beside;

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

/* The length of the manifest name a log object's name "M.rfsm.lK.XXXXXXXX" (manifest/log.c:
 * K decimal, 8 hex digits) starts with; 0 when name is no such name. */
static size_t log_of_manifest(const char *name)
{
    const char *x = strrchr(name, '.');
    if (!x || strlen(x + 1) != 8 || strspn(x + 1, "0123456789abcdef") != 8)
        return 0;
    const char *p = x;
    while (p > name && p[-1] != '.')
        p--;
    if (p == name || p[0] != 'l' || p + 1 == x ||
        strspn(p + 1, "0123456789") != (size_t)(x - p - 1))
        return 0;
    size_t len = (size_t)(p - 1 - name);
    return len > 5 && strncmp(name + len - 5, ".rfsm", 5) == 0 ? len : 0;
}

/* The length of the manifest name an object name "M.rfsm.cC.rR" (manifest/layout.c), or a
 * log object's, starts with; 0 when name is no such object name. */
static size_t object_of_manifest(const char *name)
{
    size_t log = log_of_manifest(name);
    if (log)
        return log;
    const char *c = strrchr(name, '.');
    if (!c || c[1] != 'r' || !c[2] || strspn(c + 2, "0123456789") != strlen(c + 2))
        return 0;
    const char *p = c;
    while (p > name && p[-1] != '.')
        p--;
    if (p == name || p[0] != 'c' || p + 1 == c ||
        strspn(p + 1, "0123456789") != (size_t)(c - p - 1))
        return 0;
    size_t len = (size_t)(p - 1 - name);
    return len > 5 && strncmp(name + len - 5, ".rfsm", 5) == 0 ? len : 0;
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Leaves out of a directory's files the objects of the logical files listed beside them: the
 * manifest's copy through the layer carries their bytes (as new objects at the destination,
 * with these very names), and a plain copy of a stripe would overwrite them. */
static void drop_manifest_objects(cli_ctx *c, const char *dir, name_list *files)
{
    size_t nm = 0;
    char **manifests = malloc((files->n ? files->n : 1) * sizeof *manifests);
    if (!manifests)
        return;
    for (size_t i = 0; i < files->n; i++) {
        size_t len = strlen(files->v[i]);
        if (len > 5 && strcmp(files->v[i] + len - 5, ".rfsm") == 0)
            manifests[nm++] = files->v[i];
    }
    if (nm)
        qsort(manifests, nm, sizeof *manifests, by_string);
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < files->n; i++) {
        size_t len = nm ? object_of_manifest(files->v[i]) : 0;
        char key[1024];
        const char *k = key;
        if (len && len < sizeof key) {
            memcpy(key, files->v[i], len);
            key[len] = '\0';
        }
        if (len && len < sizeof key && bsearch(&k, manifests, nm, sizeof *manifests, by_string)) {
            free(files->v[i]);
            dropped++;
            continue;
        }
        files->v[kept] = files->v[i];
        files->sz[kept++] = files->sz[i];
    }
    files->n = kept;
    free(manifests);
    if (dropped && c->o.verbose && !c->o.quiet)
        fprintf(stderr,
                "rfs cp: %s: %zu object%s of logical files left out: each .rfsm is copied "
                "through the manifest layer\n",
                dir, dropped, dropped == 1 ? "" : "s");
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
    if (rfs_is_manifest_name(src) || rfs_is_manifest_name(dest))
        return cli_copy_manifest(&sub, src, dest);
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

/* The process's umask, read once before any batch thread runs (reading it means setting it). */
static mode_t cp_umask;

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
    int e = rfs_pwrite_full(fd, data, len, 0) != 0 ? errno : 0;
    if (!e && fchmod(fd, 0666 & ~cp_umask) != 0)
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

static int install_entry(void *ctx, feed_entry *e)
{
    return install_local(ctx, e->dst, e->r.data, e->r.len);
}

/* Ends a feed: waits for its files, then reports the ones that did not arrive, or sends a
 * file again as a put or get (too big for one request after all, an older server, a lost
 * connection: the single-file path knows how to recover). */
static int feed_end(cli_ctx *c, tree_feed **fp, int reading)
{
    if (!*fp)
        return CLI_EXIT_OK;
    int status;
    feed_entry *failed = tree_feed_finish(*fp, &status), *next;
    *fp = NULL;
    for (feed_entry *e = failed; e; e = next) {
        next = e->next;
        int r = reading ? e->r.result : e->w.result;
        if (!reading && r == RFS_E_EXIST && c->o.no_clobber) {
            fprintf(stderr, "rfs %s: %s exists (not overwritten: --no-clobber)\n", c->cmd, e->dst);
            status = worst(status, CLI_EXIT_FAIL);
        } else if (r == RFS_E_TOOBIG || r == RFS_E_CONN || r == RFS_E_TIMEOUT || r == RFS_E_PROTO ||
                   r == RFS_E_UNSUPPORTED) {
            status = worst(status, copy_file(c, e->src, e->dst));
        } else {
            char url[4400];
            rfs_name n;
            if (cli_url_normalize(c->cmd, reading ? e->src : e->dst, url, sizeof url, &n) == 0)
                status = worst(status, cli_fail_remote(c, &n, r, NULL));
        }
        feed_entry_free(e);
    }
    return status;
}

/* The feed of small files to (or from) the server sname, started on first use; NULL when none
 * can be made (the file then goes alone). A tree on another server ends the previous feed. */
static tree_feed *feed_for(cli_ctx *c, int reading, const char *sname, int *status)
{
    tree_feed **fp = reading ? &gets_feed : &puts_feed;
    if (*fp && strcmp(tree_feed_server(*fp), sname) != 0)
        *status = worst(*status, feed_end(c, fp, reading));
    if (!*fp) {
        rfs_options o = c->ropts; /* a long link needs several connections, as a large file does */
        o.streams = c->o.streams > 0 ? c->o.streams : cli_streams(c, sname);
        unsigned flags = reading ? 0
                                 : RFS_WRITE_SYNC | (c->o.no_clobber ? RFS_WRITE_EXCL : 0) |
                                       (beside.on ? RFS_WRITE_PARENTS : 0);
        *fp = tree_feed_new(reading, sname, &o, flags, install_entry, c);
    }
    return *fp;
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
    tree_feed *f = feed_for(c, 1, sname, &status);
    if (!f)
        return status;
    /* A little room: a file that grew a bit since the listing still comes in one piece. */
    size_t cap = (size_t)size + 4096;
    tree_feed_room(f, cap);
    feed_entry *e = calloc(1, sizeof *e);
    if (e) {
        e->r = (rfs_read_item){.path = strdup(n.path), .data = malloc(cap), .cap = cap};
        e->src = strdup(src);
        e->dst = strdup(dest);
    }
    if (!e || !e->r.path || !e->r.data || !e->src || !e->dst) {
        if (e)
            feed_entry_free(e);
        return worst(status, cli_fail_local(c, "batch", ENOMEM));
    }
    if (tree_feed_push(f, e))
        feed_entry_free(e); /* no thread: fetched alone */
    else
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
    tree_feed *f = feed_for(c, 0, sname, &status);
    if (!f)
        return status;
    size_t len = (size_t)sb.st_size;
    tree_feed_room(f, len);
    FILE *fp = fopen(src, "rb");
    if (!fp)
        return worst(status, cli_fail_local(c, src, errno));
    char *data = malloc(len ? len : 1);
    size_t got = data ? fread(data, 1, len, fp) : 0;
    int err = ferror(fp) ? errno : 0;
    fclose(fp);
    if (!data || got != len) {
        free(data);
        return worst(status, cli_fail_local(c, src, !data ? ENOMEM : err ? err : EIO));
    }
    feed_entry *e = calloc(1, sizeof *e);
    if (e) {
        e->w = (rfs_write_item){
            .path = strdup(n.path), .data = data, .len = len, .mode = sb.st_mode & 0777};
        e->src = strdup(src);
        e->dst = strdup(dest);
    }
    if (!e || !e->w.path || !e->src || !e->dst) {
        if (e)
            feed_entry_free(e);
        else
            free(data);
        return worst(status, cli_fail_local(c, "batch", ENOMEM));
    }
    if (tree_feed_push(f, e))
        feed_entry_free(e); /* no thread: sent alone */
    else
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

/* Listings of remote subdirectories fetched ahead, a level at a time (prefetch_listings): a
 * tree of many directories costs a round trip for a group of them, not one per directory,
 * and the walk goes into the first directories while the later listings are on the wire. */
typedef struct prefetched {
    char *src; /* NULL: taken */
    int ready; /* its listing has ended (under ahead_mu) */
    listed l;
    rfs_status st; /* the listing's outcome, for the walk that takes it */
} prefetched;
typedef struct prefetch_level {
    prefetched *v;
    size_t n;
    const char **paths; /* v[i]'s path on the server */
    int *results;
    char server[4400];
    rfs_options o;
    pthread_t th; /* joined before the level is freed: its exit frees the thread's own state
                   * (OpenSSL's per-thread random generator), which a process that ended first
                   * would leave behind */
    struct prefetch_level *next;
} prefetch_level;
static prefetch_level *levels;
static size_t levels_listing; /* levels whose thread runs (under ahead_mu) */
static pthread_mutex_t ahead_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ahead_cv = PTHREAD_COND_INITIALIZER; /* a listing or a level ended */
/* The listings of the source's subdirectories that came with its LIST_TREE (prefetch_tree),
 * published under ahead_mu before the source's own listing is marked ready. */
static prefetched *tree_extra;
static size_t tree_extra_n;

/* The prefetched listing of src that came with the tree, or NULL (under ahead_mu). */
static prefetched *tree_find_locked(const char *src)
{
    for (size_t i = 0; i < tree_extra_n; i++)
        if (tree_extra[i].src && strcmp(tree_extra[i].src, src) == 0)
            return &tree_extra[i];
    return NULL;
}

static int take_many(void *ctx, size_t i, const char *entry, const rfs_stat_info *st)
{
    prefetch_level *lv = ctx;
    if (entry)
        return take(&lv->v[i].l, entry, st);
    pthread_mutex_lock(&ahead_mu); /* directory i's listing ended */
    lv->v[i].st.rc = lv->results[i];
    lv->v[i].ready = 1;
    pthread_cond_broadcast(&ahead_cv);
    pthread_mutex_unlock(&ahead_mu);
    return 0;
}

static void *level_main(void *arg)
{
    prefetch_level *lv = arg;
    rfs_list_many(lv->server, lv->paths, lv->results, lv->n, take_many, lv, &lv->o);
    rfs_clear_error();
    pthread_mutex_lock(&ahead_mu);
    for (size_t i = 0; i < lv->n; i++) /* not reached: a failure before the listing began */
        if (!lv->v[i].ready) {
            lv->v[i].st.rc = lv->results[i] ? lv->results[i] : RFS_E_IO;
            lv->v[i].ready = 1;
        }
    levels_listing--;
    pthread_cond_broadcast(&ahead_cv);
    pthread_mutex_unlock(&ahead_mu);
    return NULL;
}

static void level_free(prefetch_level *lv)
{
    for (size_t i = 0; i < lv->n; i++) {
        free(lv->v[i].src);
        free((void *)lv->paths[i]);
        listed_free(&lv->v[i].l);
    }
    free(lv->v);
    free(lv->paths);
    free(lv->results);
    free(lv);
}

static void prefetch_clear(void)
{
    pthread_mutex_lock(&ahead_mu);
    while (levels_listing)
        pthread_cond_wait(&ahead_cv, &ahead_mu);
    pthread_mutex_unlock(&ahead_mu);
    while (levels) {
        prefetch_level *lv = levels;
        levels = lv->next;
        pthread_join(lv->th, NULL);
        level_free(lv);
    }
    for (size_t i = 0; i < tree_extra_n; i++) {
        free(tree_extra[i].src);
        listed_free(&tree_extra[i].l);
    }
    free(tree_extra);
    tree_extra = NULL;
    tree_extra_n = 0;
}

static void *tree_main(void *arg);

/* Starts listing the remote directories src/dirs[i] (src itself if dirs is NULL), all at once
 * on a thread of their own (rfs_list_many), for list_source to take as each arrives. */
static void prefetch_listings(cli_ctx *c, const char *src, const name_list *dirs)
{
    size_t n = dirs ? dirs->n : 1;
    if (dirs && n < 2)
        return;
    prefetch_level *lv = calloc(1, sizeof *lv);
    if (!lv || !(lv->v = calloc(n, sizeof *lv->v)) || !(lv->paths = calloc(n, sizeof *lv->paths)) ||
        !(lv->results = calloc(n, sizeof *lv->results))) {
        if (lv) {
            free(lv->v);
            free(lv->paths);
            free(lv);
        }
        return; /* listed the ordinary way */
    }
    for (size_t i = 0; i < n; i++) {
        char p[4400], url[4400];
        rfs_name rn;
        prefetched *e = &lv->v[lv->n];
        if ((dirs ? join(p, sizeof p, src, dirs->v[i])
                  : snprintf(p, sizeof p, "%s", src) >= (int)sizeof p) ||
            cli_url_normalize(c->cmd, p, url, sizeof url, &rn))
            continue;
        pthread_mutex_lock(&ahead_mu);
        int known = tree_find_locked(p) != NULL;
        pthread_mutex_unlock(&ahead_mu);
        if (known || !(e->src = strdup(p)))
            continue;
        if (!(lv->paths[lv->n] = strdup(rn.path))) {
            free(e->src);
            e->src = NULL;
            continue;
        }
        lv->n++;
    }
    if (!lv->n) {
        level_free(lv);
        return;
    }
    snprintf(lv->server, sizeof lv->server, "%s", lv->v[0].src);
    lv->o = c->ropts;
    pthread_mutex_lock(&ahead_mu);
    levels_listing++;
    /* a source of its own comes with its subdirectories' listings where the server can */
    int started = pthread_create(&lv->th, NULL, dirs ? level_main : tree_main, lv) == 0;
    if (!started)
        levels_listing--;
    pthread_mutex_unlock(&ahead_mu);
    if (!started) {
        level_free(lv);
        return;
    }
    lv->next = levels;
    levels = lv;
}

/* LIST_TREE of a remote source (prefetch_tree): its own listing goes to the level's only
 * entry, its subdirectories' to the tree's list, published when the reply is taken. */
typedef struct tree_take {
    prefetch_level *lv;
    prefetched *v;
    size_t n, cap;
    int oom;
    int top_whole; /* the source's own block came (it did not fit the budget otherwise) */
    char dir[RFS_MAX_PATH + 1]; /* v[n - 1]'s directory below the source */
} tree_take;

static int take_tree(void *ctx, const char *dir, const char *entry, const rfs_stat_info *st)
{
    tree_take *t = ctx;
    if (!dir[0]) {
        if (!entry)
            t->top_whole = 1;
        return entry ? take(&t->lv->v[0].l, entry, st) : 0;
    }
    prefetched *cur = t->n ? &t->v[t->n - 1] : NULL;
    if (t->oom)
        return 0;
    char p[4400];
    if (!cur || strcmp(t->dir, dir) != 0) { /* its first entry, or the end of an empty one */
        if (t->n == t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 64;
            prefetched *v = realloc(t->v, cap * sizeof *v);
            if (!v)
                return t->oom = 1, 1;
            t->v = v;
            t->cap = cap;
        }
        if (join(p, sizeof p, t->lv->v[0].src, dir) ||
            !(t->v[t->n] = (prefetched){.src = strdup(p), .ready = 1}).src)
            return t->oom = 1, 1;
        cur = &t->v[t->n++];
        snprintf(t->dir, sizeof t->dir, "%s", dir);
    }
    return entry ? take(&cur->l, entry, st) : 0;
}

/* The first listing of a get is asked to fit what a fresh TCP connection carries in its
 * first round trip (10 segments): the source and as many of its subdirectories as fit come
 * one round trip sooner than a level of LISTs would bring them, and the files in them start
 * while the other subdirectories are listed the ordinary way. A whole large tree in one reply
 * would instead wait for slow start to carry it (384 KB for 10 000 files: 5 round trips). */
#define TREE_FIRST_BYTES (12u << 10)

static void *tree_main(void *arg)
{
    prefetch_level *lv = arg;
    tree_take t = {.lv = lv};
    int rc = rfs_list_tree(lv->v[0].src, TREE_FIRST_BYTES, take_tree, &t, &lv->o);
    if (rc || t.oom || !t.top_whole) {
        /* an older server, a source too long for the budget, or any trouble: the source is
         * listed on its own (page by page if need be) */
        rfs_clear_error();
        for (size_t i = 0; i < t.n; i++) {
            free(t.v[i].src);
            listed_free(&t.v[i].l);
        }
        t.n = 0;
        listed_free(&lv->v[0].l);
        lv->v[0].l = (listed){0};
        rfs_list_many(lv->server, lv->paths, lv->results, 1, take_many, lv, &lv->o);
        rfs_clear_error();
    }
    pthread_mutex_lock(&ahead_mu);
    if (t.n) {
        tree_extra = t.v;
        tree_extra_n = t.n;
    } else {
        free(t.v);
    }
    if (!lv->v[0].ready) { /* not reached by the fallback's listing: it failed before */
        lv->v[0].st.rc =
            rc || t.oom || !t.top_whole ? (lv->results[0] ? lv->results[0] : RFS_E_IO) : RFS_OK;
        lv->v[0].ready = 1;
    }
    levels_listing--;
    pthread_cond_broadcast(&ahead_cv);
    pthread_mutex_unlock(&ahead_mu);
    return NULL;
}

/* Moves the subdirectories of src whose listings came with the tree to the front (in order):
 * their files can start while the others are listed. */
static void known_first(const char *src, name_list *dirs)
{
    size_t k = 0;
    pthread_mutex_lock(&ahead_mu);
    for (size_t i = 0; i < dirs->n && tree_extra_n; i++) {
        char p[4400];
        if (join(p, sizeof p, src, dirs->v[i]) || !tree_find_locked(p))
            continue;
        char *v = dirs->v[i];
        uint64_t sz = dirs->sz[i];
        memmove(dirs->v + k + 1, dirs->v + k, (i - k) * sizeof *dirs->v);
        memmove(dirs->sz + k + 1, dirs->sz + k, (i - k) * sizeof *dirs->sz);
        dirs->v[k] = v;
        dirs->sz[k++] = sz;
    }
    pthread_mutex_unlock(&ahead_mu);
}

/* The entries of a source directory, split into files and directories. */
static int list_source(cli_ctx *c, const char *src, listed *l)
{
    pthread_mutex_lock(&ahead_mu);
    prefetched *tp = tree_find_locked(src);
    if (tp) {
        *l = tp->l;
        tp->l = (listed){0};
        free(tp->src);
        tp->src = NULL;
    }
    pthread_mutex_unlock(&ahead_mu);
    if (tp)
        return l->files.oom || l->dirs.oom || l->other.oom ? cli_fail_local(c, "listing", ENOMEM)
                                                           : CLI_EXIT_OK;
    for (prefetch_level *lv = levels; lv; lv = lv->next)
        for (size_t i = 0; i < lv->n; i++) {
            prefetched *p = &lv->v[i];
            if (!p->src || strcmp(p->src, src) != 0)
                continue;
            pthread_mutex_lock(&ahead_mu);
            while (!p->ready)
                pthread_cond_wait(&ahead_cv, &ahead_mu);
            pthread_mutex_unlock(&ahead_mu);
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
            return cli_fail_remote(c, &n, p->st.rc, NULL);
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

/* Depth below which the remote directories of the tree being put exist already
 * (cli_premake_dirs): their MKDIRs are skipped. */
static int premade_levels;

static void *beside_main(void *arg)
{
    (void)arg;
    beside.status = make_dir(beside.c, beside.dest);
    if (beside.status == CLI_EXIT_OK)
        beside.made =
            cli_premake_dirs(beside.c, beside.src, beside.url, &beside.dn, &beside.levels);
    return NULL;
}

/* Starts making the directories of the tree src -> dest beside its files; 0 when the server
 * cannot take files before their directories (the walk then makes them first). */
static int beside_start(cli_ctx *c, const char *src, const char *dest)
{
    unsigned feat = 0;
    if (snprintf(beside.src, sizeof beside.src, "%s", src) >= (int)sizeof beside.src ||
        cli_url_normalize(c->cmd, dest, beside.url, sizeof beside.url, &beside.dn) ||
        rfs_server_features(beside.url, &c->ropts, &feat) != RFS_OK ||
        !(feat & RFS_FEAT_WPARENTS)) {
        rfs_clear_error();
        return 0;
    }
    snprintf(beside.dest, sizeof beside.dest, "%s", dest);
    beside.c = c;
    beside.made = beside.levels = 0;
    beside.on = pthread_create(&beside.th, NULL, beside_main, NULL) == 0;
    return beside.on;
}

/* Waits for the directories made beside the files; a level that could not be made whole is
 * reported (its files report their own failures). */
static int beside_end(void)
{
    if (!beside.on)
        return CLI_EXIT_OK;
    pthread_join(beside.th, NULL);
    beside.on = 0;
    if (beside.status == CLI_EXIT_OK && beside.made < beside.levels) {
        fprintf(stderr, "rfs %s: %s: not every directory of %s could be made on the server\n",
                beside.c->cmd, beside.dest, beside.src);
        return CLI_EXIT_FAIL;
    }
    return beside.status;
}

/* src (a directory) becomes dest (created if missing), recursively. */
static int copy_tree(cli_ctx *c, const char *src, const char *dest, int depth)
{
    if (depth > CP_MAX_DEPTH)
        return cli_usage(c->cmd, "%s: more than %d directory levels", src, CP_MAX_DEPTH);
    int put = !rfs_is_name(src) && rfs_is_name(dest), status = CLI_EXIT_OK;
    if (depth == 0 && put && beside_start(c, src, dest))
        ; /* made beside the files */
    else if (!(depth > 0 && put && (beside.on || depth <= premade_levels)))
        status = make_dir(c, dest);
    if (status != CLI_EXIT_OK)
        return status;
    if (depth == 0 && put && !beside.on) {
        char url[4400];
        rfs_name dn;
        int levels;
        if (cli_url_normalize(c->cmd, dest, url, sizeof url, &dn) == 0)
            premade_levels = cli_premake_dirs(c, src, url, &dn, &levels);
    }
    listed l = {0};
    status = list_source(c, src, &l);
    if (status == CLI_EXIT_OK) {
        drop_manifest_objects(c, src, &l.files);
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
            if (pass && rfs_is_name(src)) {
                known_first(src, nl);
                prefetch_listings(c, src, nl);
            }
            for (size_t i = 0; i < nl->n && status != CLI_EXIT_USAGE; i++) {
                char s[4400], d[4400];
                if (join(s, sizeof s, src, nl->v[i]) || join(d, sizeof d, dest, nl->v[i])) {
                    status = cli_usage(c->cmd, "path too long under %s", src);
                    break;
                }
                int queued = 0, st = CLI_EXIT_OK;
                /* a logical file (.rfsm) is copied through the manifest layer, as a copy of it
                 * alone is: its bytes, not a second manifest naming the same objects */
                int logical = rfs_is_manifest_name(s) || rfs_is_manifest_name(d);
                if (!pass && !logical && !rfs_is_name(s) && rfs_is_name(d))
                    st = batch_add(c, s, d, &queued);
                else if (!pass && !logical && rfs_is_name(s) && !rfs_is_name(d))
                    st = fetch_add(c, s, nl->sz[i], d, &queued);
                if (!queued && !pass && put && beside.on)
                    st = worst(st, beside_end()); /* a put of its own needs its directory */
                if (!queued)
                    st = worst(st, pass ? copy_tree(c, s, d, depth + 1) : copy_file(c, s, d));
                status = worst(status, st); /* like cp -r: go on, fail at the end */
            }
        }
    }
    listed_free(&l);
    if (depth == 0) {
        status = worst(status, beside_end());
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
        if (c->o.recursive) /* listed while it is asked whether it is a directory */
            prefetch_listings(c, src, NULL);
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
    if (!src_dir) { /* put and get place a file into a directory destination themselves */
        cli_ctx known = *c;
        known.o.dest_not_dir = !dest_dir && rfs_is_name(dest);
        return copy_file(&known, src, dest);
    }
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
    cp_umask = umask(0);
    umask(cp_umask);
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
    /* the small files still queued: sent (fetched), then waited for */
    status = worst(status, feed_end(c, &puts_feed, 0));
    status = worst(status, feed_end(c, &gets_feed, 1));
    prefetch_clear(); /* a listing asked for a source that was a file after all */
    cli_streams_warm_end(c);
    list_free(&srcs);
    return status;
}
