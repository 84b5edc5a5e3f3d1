/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* `rfs recover`: delivers what a dead process staged but never sent, without ever applying a
 * record twice, overwriting a file another writer changed since, or deleting what it did not
 * prove to be a journal it fully delivered (abt.h, docs/abt.md). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "abt/journal.h"
#include "recover/recover.h"
#include "common/err.h"
#include "common/log.h"

/* ---- small tables ---- */

/* Versions per target name: the newest a journal recorded, or the set a run accepts. */
typedef struct ver_entry {
    char *name;
    rfs_journal_version v;
} ver_entry;

typedef struct ver_list {
    ver_entry *v;
    size_t n, cap;
} ver_list;

static int ver_add(ver_list *l, const char *name, const rfs_journal_version *v)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        ver_entry *nv = realloc(l->v, sizeof *nv * cap);
        if (!nv)
            return rfs_fail(RFS_E_NOMEM, "recover: out of memory");
        l->v = nv;
        l->cap = cap;
    }
    if (!(l->v[l->n].name = strdup(name)))
        return rfs_fail(RFS_E_NOMEM, "recover: out of memory");
    l->v[l->n++].v = *v;
    return RFS_OK;
}

static ver_entry *ver_find(ver_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].name, name) == 0)
            return &l->v[i];
    return NULL;
}

/* Keeps the newest (highest ticket) version per name. */
static int ver_newest(ver_list *l, const char *name, const rfs_journal_version *v)
{
    ver_entry *e = ver_find(l, name);
    if (!e)
        return ver_add(l, name, v);
    if (v->ticket > e->v.ticket)
        e->v = *v;
    return RFS_OK;
}

static void ver_free(ver_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int same_version(const rfs_journal_version *want, const rfs_journal_version *found)
{
    if (!want->exists) /* a deferred create that never got data leaves an empty file */
        return !found->exists || found->size == 0;
    return found->exists && found->size == want->size && found->mtime_ns == want->mtime_ns;
}

/* ---- one run ---- */

typedef struct pending {
    uint64_t seq, rec_off, index, len;
    size_t file; /* index into rj.files */
} pending;

typedef struct target {
    char *name; /* as recorded */
    char *dest; /* where it goes (--to applied) */
    rfs_file *f;
    uint64_t undelivered;
} target;

typedef struct run {
    const rfs_abt_recover_opts *ro;
    rfs_abt_recover_result *res;
    ver_list accepted; /* per dest: versions a file may have to be replayed onto */
} run;

typedef struct rjournal {
    run *r;
    const char *path;
    int fd;
    pending *v;
    size_t n, cap;
    target *files;
    size_t n_files;
    ver_list recorded; /* newest version per recorded name in this journal */
    uint64_t max_ticket;
    uint64_t delivered_records, delivered_bytes;
} rjournal;

static void note(run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(run *r, const char *fmt, ...)
{
    char line[6000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (r->ro->note)
        r->ro->note(r->ro->ctx, line);
    else
        RFS_LOGW("%s", line);
}

static void human(uint64_t b, char *out, size_t cap)
{
    if (b >= (1ull << 30))
        snprintf(out, cap, "%" PRIu64 " bytes (%.1f GiB)", b, (double)b / (1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(out, cap, "%" PRIu64 " bytes (%.1f MiB)", b, (double)b / (1 << 20));
    else if (b >= 1024)
        snprintf(out, cap, "%" PRIu64 " bytes (%.1f KiB)", b, (double)b / 1024);
    else
        snprintf(out, cap, "%" PRIu64 " bytes", b);
}

/* name with its server replaced by `to` ("rfs:HOST:PORT" or "rfs://HOST:PORT"; rfss: too). */
static int redirect(const char *name, const char *to, char **out)
{
    if (!to) {
        *out = strdup(name);
        return *out ? RFS_OK : rfs_fail(RFS_E_NOMEM, "recover: out of memory");
    }
    rfs_name src, dst;
    if (rfs_parse_name(name, &src) != RFS_OK)
        return rfs_fail(RFS_E_NAME, "journal names '%s', which is not an rfs name", name);
    char probe[600];
    size_t tl = strlen(to);
    while (tl > 0 && (to[tl - 1] == ':' || to[tl - 1] == '/'))
        tl--;
    int slashes = strncmp(to, "rfs://", 6) == 0 || strncmp(to, "rfss://", 7) == 0;
    snprintf(probe, sizeof probe, "%.*s%s", (int)tl, to, slashes ? "/x" : ":/x");
    if (tl == 0 || tl > 500 || rfs_parse_name(probe, &dst) != RFS_OK)
        return rfs_fail(RFS_E_NAME, "--to %s: not a server (want rfs:HOST:PORT)", to);
    size_t cap = strlen(src.path) + strlen(dst.host) + 32;
    if (!(*out = malloc(cap)))
        return rfs_fail(RFS_E_NOMEM, "recover: out of memory");
    /* TLS if either the journal's name or --to asks for it (rfss:) */
    snprintf(*out, cap, strchr(dst.host, ':') ? "%s:[%s]:%u:%s" : "%s:%s:%u:%s",
             dst.tls || src.tls ? "rfss" : "rfs", dst.host, (unsigned)dst.port, src.path);
    return RFS_OK;
}

static int target_for(rjournal *j, const char *name, size_t *idx)
{
    for (size_t i = 0; i < j->n_files; i++)
        if (strcmp(j->files[i].name, name) == 0) {
            *idx = i;
            return RFS_OK;
        }
    target *nf = realloc(j->files, sizeof *nf * (j->n_files + 1));
    if (!nf)
        return rfs_fail(RFS_E_NOMEM, "recover: out of memory");
    j->files = nf;
    target *t = &nf[j->n_files];
    memset(t, 0, sizeof *t);
    int rc = redirect(name, j->r->ro->to, &t->dest);
    if (rc == RFS_OK && !(t->name = strdup(name)))
        rc = rfs_fail(RFS_E_NOMEM, "recover: out of memory");
    if (rc != RFS_OK) {
        free(t->dest);
        return rc;
    }
    *idx = j->n_files++;
    return RFS_OK;
}

/* Scan callback: remembers undelivered data records and the newest version per name. */
static int collect(void *ctx, const rfs_journal_rec *rec)
{
    rjournal *j = ctx;
    if (rec->kind == RFS_JOURNAL_VERSION) {
        if (rec->version.ticket > j->max_ticket)
            j->max_ticket = rec->version.ticket;
        return ver_newest(&j->recorded, rec->name, &rec->version);
    }
    if (rec->done)
        return 0;
    size_t fi;
    int rc = target_for(j, rec->name, &fi);
    if (rc != RFS_OK)
        return rc;
    if (j->n == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 64;
        pending *nv = realloc(j->v, sizeof *nv * cap);
        if (!nv)
            return rfs_fail(RFS_E_NOMEM, "recover: out of memory");
        j->v = nv;
        j->cap = cap;
    }
    j->v[j->n++] = (pending){rec->seq, rec->rec_off, rec->index, rec->len, fi};
    j->files[fi].undelivered += rec->len;
    return 0;
}

static int by_seq(const void *a, const void *b)
{
    const pending *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* " (NAME: N bytes, NAME2: M bytes)" of what is still undelivered, when several files are. */
static void undelivered_list(const rjournal *j, char *out, size_t cap)
{
    size_t at = 0, files = 0;
    out[0] = '\0';
    for (size_t i = 0; i < j->n_files; i++)
        files += j->files[i].undelivered != 0;
    if (files < 2)
        return;
    for (size_t i = 0; i < j->n_files && at < cap; i++) {
        if (!j->files[i].undelivered)
            continue;
        char h[64];
        human(j->files[i].undelivered, h, sizeof h);
        at +=
            (size_t)snprintf(out + at, cap - at, "%s%s: %s", at ? ", " : " (", j->files[i].dest, h);
    }
    if (at + 2 < cap)
        strcat(out, ")");
}

static uint64_t undelivered_total(const rjournal *j)
{
    uint64_t t = 0;
    for (size_t i = 0; i < j->n_files; i++)
        t += j->files[i].undelivered;
    return t;
}

static void describe(const rfs_journal_version *v, char *out, size_t cap)
{
    if (!v->exists)
        snprintf(out, cap, "no file");
    else
        snprintf(out, cap, "size %" PRIu64 ", mtime %" PRId64 ".%09" PRId64, v->size,
                 v->mtime_ns / 1000000000, v->mtime_ns % 1000000000);
}

/* Replay safety: every file this journal will write must be as the writer left it. */
static int check_versions(rjournal *j)
{
    run *r = j->r;
    for (size_t i = 0; i < j->n_files; i++) {
        target *t = &j->files[i];
        ver_entry *want = ver_find(&j->recorded, t->name);
        rfs_journal_version found;
        int rc = rfs_journal_probe_stat(t->dest, r->ro->opts, &found);
        if (rc != RFS_OK)
            return rfs_fail(rc, "%s: cannot check the file before replaying: %s", t->dest,
                            rfs_last_error());
        if (r->ro->force)
            continue;
        if (!want || !want->v.known) {
            note(r,
                 "%s: %s: the writer recorded no version of the file (the server did not "
                 "answer it); replaying without the check",
                 j->path, t->dest);
            continue;
        }
        int ok = same_version(&want->v, &found);
        for (size_t k = 0; !ok && k < r->accepted.n; k++)
            ok = strcmp(r->accepted.v[k].name, t->dest) == 0 &&
                 same_version(&r->accepted.v[k].v, &found);
        if (!ok) {
            char w[96], f[96];
            describe(&want->v, w, sizeof w);
            describe(&found, f, sizeof f);
            return rfs_fail(RFS_E_EXIST,
                            "%s: changed on the server since the writer's last "
                            "delivery (expected %s, found %s): another writer? nothing of this "
                            "journal replayed; rerun with --force to overwrite",
                            t->dest, w, f);
        }
    }
    return RFS_OK;
}

static int deliver(void *ctx, const rfs_journal_rec *rec)
{
    rjournal *j = ctx;
    size_t fi;
    int rc = target_for(j, rec->name, &fi);
    if (rc != RFS_OK)
        return rc;
    target *t = &j->files[fi];
    if (!t->f && (rc = rfs_open(t->dest, RFS_O_WRONLY | RFS_O_CREAT, 0644, j->r->ro->opts, &t->f)))
        return rc;
    size_t done = 0;
    rc = rec->n_ext == 1 ? rfs_pwrite(t->f, rec->data, rec->len, rec->ext[0].offset, &done)
                         : rfs_pwritev(t->f, rec->ext, rec->n_ext, rec->data, &done);
    if (rc == RFS_OK && done != rec->len)
        rc = rfs_fail(RFS_E_IO, "short write (%zu of %" PRIu64 " bytes)", done, rec->len);
    /* Marked done only after the server acknowledged it: a crash in between replays the
     * record once more (same bytes to the same place), never loses it. */
    if (rc == RFS_OK)
        rc = rfs_journal_mark_done_fd(j->fd, rec->rec_off);
    if (rc != RFS_OK)
        return rc;
    t->undelivered -= rec->len;
    j->delivered_records++;
    j->delivered_bytes += rec->len;
    j->r->res->records++;
    j->r->res->bytes += rec->len;
    if (j->r->ro->progress)
        j->r->ro->progress(j->r->ro->ctx, t->dest, j->r->res->bytes);
    return RFS_OK;
}

/* Syncs and closes what was written, then records in the journal (and for the rest of the
 * run) the version this run left, so a later run or journal replays onto it without --force. */
static int finish_files(rjournal *j)
{
    rfs_status first = {RFS_OK, ""};
    for (size_t i = 0; i < j->n_files; i++) {
        target *t = &j->files[i];
        if (!t->f)
            continue;
        int rc = rfs_sync(t->f);
        int rc2 = rfs_close(t->f);
        t->f = NULL;
        if (first.rc == RFS_OK && (rc != RFS_OK || rc2 != RFS_OK))
            rfs_status_save(&first, rfs_fail_cause(rc != RFS_OK ? rc : rc2, "%s", t->dest));
        rfs_journal_version v;
        if (rfs_journal_probe_stat(t->dest, j->r->ro->opts, &v) == RFS_OK) {
            v.ticket = ++j->max_ticket;
            rfs_journal_append_version_fd(j->fd, t->name, &v);
            ver_add(&j->r->accepted, t->dest, &v);
        }
    }
    return first.rc == RFS_OK ? RFS_OK : rfs_status_raise(&first);
}

/* Who holds the flock on fd's file, from /proc/locks (0 if not found). */
static long lock_holder(int fd)
{
    struct stat st;
    FILE *f = fstat(fd, &st) == 0 ? fopen("/proc/locks", "r") : NULL;
    if (!f)
        return 0;
    char line[256];
    long pid = 0;
    while (!pid && fgets(line, sizeof line, f)) {
        long p;
        unsigned maj, min;
        unsigned long ino;
        char kind[16];
        if (strstr(line, "->"))
            continue; /* a waiter, not the holder */
        if (sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%lu", kind, &p, &maj, &min, &ino) == 5 &&
            strcmp(kind, "FLOCK") == 0 && ino == (unsigned long)st.st_ino &&
            maj == major(st.st_dev) && min == minor(st.st_dev))
            pid = p;
    }
    fclose(f);
    return pid;
}

/* 1 if path still names the file open on fd (another recover may have removed or renamed
 * it between our open and our lock). */
static int still_there(const char *path, int fd)
{
    struct stat a, b;
    return stat(path, &a) == 0 && fstat(fd, &b) == 0 && a.st_ino == b.st_ino &&
           a.st_dev == b.st_dev;
}

enum { J_DONE, J_HELD, J_KEPT, J_NOT_JOURNAL };

/* Opens and locks a journal; J_DONE with *fd on success, else the outcome (noted). */
static int open_locked(run *r, const char *path, int *fd)
{
    struct stat st;
    int ls = lstat(path, &st);
    if (ls == 0 && !S_ISREG(st.st_mode)) {
        note(r, "%s: not a regular file: left alone", path);
        return J_NOT_JOURNAL;
    }
    *fd = ls == 0 ? open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW) : -1;
    if (*fd < 0 && errno == ENOENT) {
        /* Gone since the directory was listed: another recover delivered and removed it. */
        note(r, "%s: already recovered by another process; skipped", path);
        return J_HELD;
    }
    if (*fd < 0) {
        rfs_fail(rfs_err_from_errno(errno), "%s: %s", path, strerror(errno));
        note(r, "%s", rfs_last_error());
        return J_KEPT;
    }
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        long pid = lock_holder(*fd);
        char who[64] = "";
        if (pid)
            snprintf(who, sizeof who, " (pid %ld)", pid);
        note(r,
             "%s: held by another process%s: its writer is alive or another rfs recover is "
             "delivering it; skipped",
             path, who);
        close(*fd);
        return J_HELD;
    }
    if (!still_there(path, *fd)) {
        note(r, "%s: already recovered by another process; skipped", path);
        close(*fd);
        return J_HELD;
    }
    return J_DONE;
}

/* Report scan past a corrupt record: what the intact records after it would have delivered. */
static int tally(void *ctx, const rfs_journal_rec *rec)
{
    rjournal *j = ctx;
    size_t fi;
    if (rec->kind != RFS_JOURNAL_DATA || rec->done)
        return 0;
    int rc = target_for(j, rec->name, &fi);
    if (rc == RFS_OK)
        j->files[fi].undelivered += rec->len;
    return rc;
}

/* What a corrupt record keeps from the files: its own claimed bytes and the pending records
 * after it (looked at, never delivered: order cannot be kept past a hole), per file. */
static void lost_per_file(rjournal *j, const rfs_journal_end *end, char *out, size_t cap)
{
    size_t fi;
    char unread[160] = "";
    if (end->name[0] && target_for(j, end->name, &fi) == RFS_OK)
        j->files[fi].undelivered += end->claimed_len;
    if (end->next_off) {
        rfs_journal_end e2;
        if (rfs_journal_scan_from(j->fd, end->next_off, end->index + 1, 0, tally, j, &e2) ==
                RFS_OK &&
            e2.kind != RFS_JOURNAL_CLEAN) {
            char h[64];
            human(e2.bytes_after, h, sizeof h);
            snprintf(unread, sizeof unread, "; %s from offset %" PRIu64 " on cannot be read", h,
                     e2.off);
        }
    } else {
        snprintf(unread, sizeof unread, "; its head is damaged, so what follows cannot be read");
    }
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; i < j->n_files && at < cap; i++) {
        if (!j->files[i].undelivered)
            continue;
        char h[64];
        human(j->files[i].undelivered, h, sizeof h);
        at += (size_t)snprintf(out + at, cap - at, "%s%s: %s", at ? ", " : "", j->files[i].dest, h);
    }
    if (!at)
        at += (size_t)snprintf(out, cap, "unknown");
    if (at < cap)
        snprintf(out + at, cap - at, "%s", unread);
}

/* Renames a journal with a bad record so no later run trusts it, and says what was lost. */
static void keep_corrupt(rjournal *j, const rfs_journal_end *end)
{
    char kept[4300], lost[64], per[2048];
    lost_per_file(j, end, per, sizeof per);
    snprintf(kept, sizeof kept, "%s.corrupt", j->path);
    if (rename(j->path, kept) != 0)
        snprintf(kept, sizeof kept, "%s (could not rename it: %s)", j->path, strerror(errno));
    human(end->bytes_after, lost, sizeof lost);
    rfs_fail(RFS_E_IO,
             "%s: record %" PRIu64 " at journal offset %" PRIu64 " is corrupt (%s); "
             "the records before it were delivered (%" PRIu64 " bytes); not delivered: %s (the "
             "last %s of the journal); journal kept as %s",
             j->path, end->index, end->off, end->why, j->delivered_bytes, per, lost, kept);
}

static void release(rjournal *j)
{
    for (size_t i = 0; i < j->n_files; i++) {
        if (j->files[i].f)
            rfs_close(j->files[i].f);
        free(j->files[i].name);
        free(j->files[i].dest);
    }
    free(j->files);
    free(j->v);
    ver_free(&j->recorded);
    close(j->fd);
}

/* Delivers the collected records in write order; on failure says which and what is left. */
static int deliver_all(rjournal *j)
{
    if (j->n) /* an empty list has no array: qsort(NULL, 0) is undefined (UBSan) */
        qsort(j->v, j->n, sizeof *j->v, by_seq);
    for (size_t i = 0; i < j->n; i++) {
        int rc = rfs_journal_read_at(j->fd, j->v[i].rec_off, deliver, j);
        if (rc == RFS_OK)
            continue;
        char left[1024], total[64];
        rfs_status cause; /* the delivery's failure, past closing the files */
        if (!rfs_last_error()[0])
            rfs_fail(rc, "%s", rfs_strerror(rc));
        rfs_status_save(&cause, rc);
        finish_files(j);
        undelivered_list(j, left, sizeof left);
        human(undelivered_total(j), total, sizeof total);
        const target *t = &j->files[j->v[i].file];
        const char *srv = strncmp(cause.msg, "rfs:", 4) == 0 ? "" : t->dest;
        return rfs_fail(rc,
                        "%s%s%s (record %" PRIu64 " at journal offset %" PRIu64 ", %s not "
                        "delivered%s; journal %s kept)",
                        srv, srv[0] ? ": " : "", cause.msg, j->v[i].index, j->v[i].rec_off, total,
                        left, j->path);
    }
    return finish_files(j);
}

/* A record cut short by the writer's death: its write never returned to the application
 * (foreground staging) or its data was also in memory (background staging), so dropping it
 * loses nothing the journal promised. Cut off now, so the version records this run appends
 * follow intact records and a later run reads them. */
static int drop_torn_tail(rjournal *j, const rfs_journal_end *end)
{
    note(j->r,
         "%s: record %" PRIu64 " at journal offset %" PRIu64 " is incomplete (%" PRIu64
         " of %s%" PRIu64 " bytes: the writer died while appending it); ignored",
         j->path, end->index, end->off, end->present, end->want ? "" : "at least ",
         end->want ? end->want : (uint64_t)40);
    if (ftruncate(j->fd, (off_t)end->off) != 0)
        return rfs_fail(rfs_err_from_errno(errno),
                        "%s: cannot cut off its incomplete last "
                        "record: %s",
                        j->path, strerror(errno));
    return RFS_OK;
}

static int recover_one(run *r, const char *path)
{
    rjournal j = {.r = r, .path = path, .fd = -1};
    int outcome = open_locked(r, path, &j.fd);
    if (outcome != J_DONE)
        return outcome;
    rfs_journal_info info;
    if (rfs_journal_check_header(j.fd, &info) != RFS_OK) {
        note(r, "%s: %s: left alone", path, rfs_last_error());
        close(j.fd);
        return J_NOT_JOURNAL;
    }
    rfs_journal_end end;
    int rc = rfs_journal_scan(j.fd, 0, collect, &j, &end);
    if (rc == RFS_OK && end.kind == RFS_JOURNAL_TORN)
        rc = drop_torn_tail(&j, &end);
    if (rc == RFS_OK)
        rc = check_versions(&j);
    if (rc == RFS_OK)
        rc = deliver_all(&j);
    if (rc == RFS_OK && end.kind == RFS_JOURNAL_CORRUPT) {
        keep_corrupt(&j, &end);
        rc = RFS_E_IO;
    } else if (rc == RFS_OK && unlink(path) != 0) {
        rc = rfs_fail(rfs_err_from_errno(errno), "%s: delivered, but cannot remove it: %s", path,
                      strerror(errno));
    } else if (rc != RFS_OK && !strstr(rfs_last_error(), path)) {
        rfs_status why;
        rfs_status_save(&why, rc);
        rfs_fail(rc, "%s: %s; journal kept", path, why.msg);
    }
    if (rc != RFS_OK)
        note(r, "%s", rfs_last_error());
    release(&j);
    return rc == RFS_OK ? J_DONE : J_KEPT;
}

/* ---- the directory ---- */

static int is_journal_name(const char *n)
{
    size_t l = strlen(n), sl = strlen(RFS_JOURNAL_SUFFIX);
    return l > sl && strcmp(n + l - sl, RFS_JOURNAL_SUFFIX) == 0;
}

static int take_newest(void *ctx, const rfs_journal_rec *rec)
{
    return ver_newest(ctx, rec->name, &rec->version);
}

/* Every journal's newest version per file is a state the file may be replayed onto: the ranks
 * of one job write the same file, and each journal knows only its own last delivery. Read
 * only, no lock: nothing is changed here. */
static void gather_versions(run *r, const char *dir, char **names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        rfs_journal_info info;
        if (fd < 0)
            continue;
        ver_list l = {0};
        rfs_journal_end end;
        if (rfs_journal_check_header(fd, &info) == RFS_OK &&
            rfs_journal_scan(fd, 1, take_newest, &l, &end) == RFS_OK) {
            for (size_t k = 0; k < l.n; k++) {
                char *dest = NULL;
                if (l.v[k].v.known && redirect(l.v[k].name, r->ro->to, &dest) == RFS_OK)
                    ver_add(&r->accepted, dest, &l.v[k].v);
                free(dest);
            }
        }
        ver_free(&l);
        close(fd);
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_journals(const char *dir, char ***out, size_t *n)
{
    DIR *d = opendir(dir);
    if (!d)
        return rfs_fail(rfs_err_from_errno(errno), "staging directory %s: %s", dir,
                        strerror(errno));
    char **v = NULL;
    size_t cnt = 0;
    struct dirent *e;
    int rc = RFS_OK;
    while (rc == RFS_OK && (e = readdir(d)) != NULL) {
        if (!is_journal_name(e->d_name))
            continue;
        char **nv = realloc(v, sizeof *nv * (cnt + 1));
        if (!nv || !(nv[cnt] = strdup(e->d_name))) {
            v = nv ? nv : v;
            rc = rfs_fail(RFS_E_NOMEM, "recover: out of memory");
            break;
        }
        v = nv;
        cnt++;
    }
    closedir(d);
    if (cnt > 1)
        qsort(v, cnt, sizeof *v, by_name);
    *out = v;
    *n = cnt;
    return rc;
}

int rfs_abt_recover(const char *dir, const rfs_abt_recover_opts *ro, rfs_abt_recover_result *res)
{
    rfs_abt_recover_opts none;
    rfs_abt_recover_result sink;
    if (!ro) {
        memset(&none, 0, sizeof none);
        ro = &none;
    }
    if (!res)
        res = &sink;
    memset(res, 0, sizeof *res);
    if (ro->to) {
        char *probe = NULL;
        int rc = redirect("rfs:x:1:/", ro->to, &probe);
        free(probe);
        if (rc != RFS_OK)
            return rc;
    }
    char **names = NULL;
    size_t n = 0;
    int err = list_journals(dir, &names, &n);
    run r = {.ro = ro, .res = res};
    if (err == RFS_OK)
        gather_versions(&r, dir, names, n);
    rfs_status first = {RFS_OK, ""}; /* the first journal not delivered, and why */
    for (size_t i = 0; err == RFS_OK && i < n; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        switch (recover_one(&r, path)) {
        case J_DONE: res->journals_done++; break;
        case J_HELD: res->journals_held++; break;
        case J_NOT_JOURNAL:
            res->not_journals++;
            if (!first.msg[0])
                snprintf(first.msg, sizeof first.msg, "%s: not an rfs journal: left alone", path);
            break;
        default:
            res->journals_kept++;
            if (!first.msg[0])
                rfs_status_save(&first, RFS_E_IO);
            break;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    ver_free(&r.accepted);
    if (err == RFS_OK && first.msg[0]) {
        first.rc = res->journals_kept ? RFS_E_IO : RFS_E_INVAL;
        err = rfs_status_raise(&first);
    }
    return err;
}
