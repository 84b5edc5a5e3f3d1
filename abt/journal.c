/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
#include "abt/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/debug.h"
#include "common/err.h"
#include "common/fullio.h"

/* File header (RFS_JOURNAL_FILE_HDR = 128 bytes):
 *   0 char[8] "RFSJRNL\n"  8 u32 format  12 u32 header size  16 i64 created (ns, realtime)
 *  24 u32 writer pid  28 u32 CRC-32C of bytes 0..27 and 32..127  32 char[64] host  96 zero
 *
 * Record (J_HDR = 40 bytes, then name | n_ext * (u64 off, u64 len) | data):
 *   0 u32 magic "RFSJ"  4 u8 kind  5 u8 state  6 u16 name_len  8 u32 n_ext
 *  12 u32 body CRC (name, extents, data)  16 u64 seq (data) / ticket (version)
 *  24 u64 data length  32 u32 head CRC (bytes 0..4 and 6..31)  36 u32 zero
 * The head CRC makes the lengths trustworthy on their own: a record whose head is intact but
 * which runs past the end of the file was cut short (torn tail), while a record whose head or
 * body fails its CRC is corruption. The state byte is outside both CRCs because it is flipped
 * in place after delivery. A version record's data is u64 size, i64 mtime_ns, u32 flags
 * (1: known, 2: exists), u32 zero; its state is always "done". */
static const char J_FILE_MAGIC[8] = {'R', 'F', 'S', 'J', 'R', 'N', 'L', '\n'};
#define J_MAGIC 0x4A534652u /* "RFSJ" */
#define J_HDR 40u
#define J_STATE_OFF 5u
#define J_VERSION_DATA 24u
/* No single staged write is near this; a larger claimed length is a damaged head. */
#define J_MAX_DATA (1ull << 46)

static int write_full(int fd, const void *buf, size_t len, uint64_t off)
{
    return rfs_pwrite_full(fd, buf, len, off);
}

/* Exactly len bytes, or -1: a journal record never ends early. */
static int read_full(int fd, void *buf, size_t len, uint64_t off)
{
    ssize_t n = rfs_pread_full(fd, buf, len, off);
    if (n >= 0 && (size_t)n != len)
        errno = EIO;
    return n >= 0 && (size_t)n == len ? 0 : -1;
}

/* ---- file header ---- */

static uint32_t file_hdr_crc(const uint8_t *h)
{
    uint32_t c = rfs_crc32c(0, h, 28);
    return rfs_crc32c(c, h + 32, RFS_JOURNAL_FILE_HDR - 32);
}

static int write_file_header(int fd)
{
    uint8_t h[RFS_JOURNAL_FILE_HDR];
    memset(h, 0, sizeof h);
    memcpy(h, J_FILE_MAGIC, 8);
    uint32_t fmt = RFS_JOURNAL_FORMAT, hsz = RFS_JOURNAL_FILE_HDR, pid = (uint32_t)getpid();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t created = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    memcpy(h + 8, &fmt, 4);
    memcpy(h + 12, &hsz, 4);
    memcpy(h + 16, &created, 8);
    memcpy(h + 24, &pid, 4);
    gethostname((char *)h + 32, 63);
    uint32_t crc = file_hdr_crc(h);
    memcpy(h + 28, &crc, 4);
    return write_full(fd, h, sizeof h, 0);
}

int rfs_journal_check_header(int fd, rfs_journal_info *info)
{
    uint8_t h[RFS_JOURNAL_FILE_HDR];
    ssize_t n = rfs_pread_full(fd, h, sizeof h, 0);
    if (n < 0)
        return rfs_fail(RFS_E_IO, "cannot read: %s", strerror(errno));
    uint32_t magic1 = 0;
    if (n >= 5)
        memcpy(&magic1, h, 4);
    if (n >= 5 && magic1 == J_MAGIC && h[4] == 1)
        return rfs_fail(RFS_E_VERSION, "a journal of format 1 (written by rfs before 2026-11-25, "
                                       "no file header): recover it with that version of rfs");
    if (n < 8 || memcmp(h, J_FILE_MAGIC, 8) != 0)
        return rfs_fail(RFS_E_INVAL, "not an rfs journal (%s)",
                        n == 0 ? "empty file" : "no journal header");
    uint32_t fmt, hsz, crc;
    memcpy(&fmt, h + 8, 4);
    memcpy(&hsz, h + 12, 4);
    if (n == (ssize_t)sizeof h && fmt > RFS_JOURNAL_FORMAT)
        return rfs_fail(RFS_E_VERSION, "a journal of format %u, newer than this rfs reads (%u)",
                        fmt, RFS_JOURNAL_FORMAT);
    memcpy(&crc, h + 28, 4);
    if (n != (ssize_t)sizeof h || hsz != RFS_JOURNAL_FILE_HDR || crc != file_hdr_crc(h))
        return rfs_fail(RFS_E_INVAL, "not an rfs journal (its header is %s)",
                        n != (ssize_t)sizeof h ? "cut short" : "damaged: checksum mismatch");
    memset(info, 0, sizeof *info);
    info->format = fmt;
    memcpy(&info->created_ns, h + 16, 8);
    memcpy(&info->pid, h + 24, 4);
    memcpy(info->host, h + 32, 63);
    return RFS_OK;
}

/* ---- record encoding ---- */

static uint32_t head_crc(const uint8_t *hdr)
{
    uint32_t c = rfs_crc32c(0, hdr, J_STATE_OFF);
    return rfs_crc32c(c, hdr + J_STATE_OFF + 1, 32 - J_STATE_OFF - 1);
}

/* Fills a record head (and writes name and extents after it) for body CRC body_crc. */
static void put_head(uint8_t *hdr, unsigned kind, int done, const char *name, uint32_t n_ext,
                     uint64_t seq, uint64_t len, uint32_t body_crc)
{
    uint32_t magic = J_MAGIC, zero = 0;
    uint16_t nl = (uint16_t)strlen(name);
    memcpy(hdr, &magic, 4);
    hdr[4] = (uint8_t)kind;
    hdr[J_STATE_OFF] = (uint8_t)(done != 0);
    memcpy(hdr + 6, &nl, 2);
    memcpy(hdr + 8, &n_ext, 4);
    memcpy(hdr + 12, &body_crc, 4);
    memcpy(hdr + 16, &seq, 8);
    memcpy(hdr + 24, &len, 8);
    uint32_t hc = head_crc(hdr);
    memcpy(hdr + 32, &hc, 4);
    memcpy(hdr + 36, &zero, 4);
}

/* A version record, encoded into out (J_HDR + name + J_VERSION_DATA bytes). */
static size_t encode_version(uint8_t *out, const char *name, const rfs_journal_version *v)
{
    size_t nl = strlen(name);
    uint8_t *d = out + J_HDR + nl;
    uint32_t flags = (v->known ? 1u : 0u) | (v->exists ? 2u : 0u), zero = 0;
    memcpy(out + J_HDR, name, nl);
    memcpy(d, &v->size, 8);
    memcpy(d + 8, &v->mtime_ns, 8);
    memcpy(d + 16, &flags, 4);
    memcpy(d + 20, &zero, 4);
    uint32_t bc = rfs_crc32c(0, out + J_HDR, nl + J_VERSION_DATA);
    put_head(out, RFS_JOURNAL_VERSION, 1, name, 0, v->ticket, J_VERSION_DATA, bc);
    return J_HDR + nl + J_VERSION_DATA;
}

/* ---- the writer's table of target file versions ---- */

typedef struct vt_entry {
    char *name;
    rfs_journal_version v;
    /* The generations (unique across journals) of the live journals whose records include
     * this name; a generation no live journal has any more is dropped when one is added. */
    uint64_t *gens;
    size_t n_gens, cap_gens;
    int64_t asked_ns; /* when it was last asked (CLOCK_MONOTONIC) */
} vt_entry;

/* One table per process, shared by the journals of every runtime (an ABT engine has one per
 * staging directory): what a server said about a file holds for every writer of the process,
 * and each journal gets the version records of the names it holds records of. */
static pthread_mutex_t vt_mu = PTHREAD_MUTEX_INITIALIZER;
static vt_entry *vt;
static size_t vt_n, vt_cap;
static rfs_journal *vt_live; /* the process's open journals (live_next) */
static _Atomic uint64_t vt_ticket;
static uint64_t vt_next_gen = 1;

static int default_probe(const char *name, rfs_journal_version *v)
{
    return rfs_journal_probe_stat(name, NULL, v);
}
static rfs_journal_probe_fn vt_probe = default_probe;

void rfs_journal_set_probe(rfs_journal_probe_fn fn)
{
    vt_probe = fn ? fn : default_probe;
}

int rfs_journal_probe_stat(const char *name, const rfs_options *opts, rfs_journal_version *v)
{
    rfs_options o;
    if (opts)
        o = *opts;
    else {
        /* A dead server must not hold a sender thread for the default 120 s. */
        memset(&o, 0, sizeof o);
        o.connect_timeout_ms = 5000;
        o.io_timeout_ms = 10000;
    }
    rfs_stat_info st;
    int rc = rfs_stat(name, &o, &st);
    v->known = rc == RFS_OK || rc == RFS_E_NOENT;
    v->exists = rc == RFS_OK;
    v->size = rc == RFS_OK ? st.size : 0;
    v->mtime_ns = rc == RFS_OK ? st.mtime_ns : 0;
    return v->known ? RFS_OK : rc;
}

/* Called with vt_mu held. NULL when out of memory. */
static vt_entry *vt_find(const char *name)
{
    RFS_ASSERT_HELD(&vt_mu);
    for (size_t i = 0; i < vt_n; i++)
        if (strcmp(vt[i].name, name) == 0)
            return &vt[i];
    if (vt_n == vt_cap) {
        size_t cap = vt_cap ? vt_cap * 2 : 16;
        vt_entry *nv = realloc(vt, sizeof *nv * cap);
        if (!nv)
            return NULL;
        vt = nv;
        vt_cap = cap;
    }
    char *nm = strdup(name);
    if (!nm)
        return NULL;
    vt[vt_n] = (vt_entry){.name = nm};
    return &vt[vt_n++];
}

/* Appends a version record at the journal's end; called with j->mu held, so it can neither
 * interleave with a truncation nor leave a hole. */
static int append_version_locked(rfs_journal *j, const char *name, const rfs_journal_version *v)
{
    RFS_ASSERT_HELD(&j->mu);
    uint8_t buf[J_HDR + RFS_JOURNAL_MAX_NAME + J_VERSION_DATA];
    size_t n = encode_version(buf, name, v);
    if (write_full(j->fd, buf, n, j->end) != 0)
        return rfs_fail(rfs_err_from_errno(errno), "staging journal %s: write failed: %s", j->path,
                        strerror(errno));
    j->end += n;
    return RFS_OK;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int rfs_journal_track_due(const char *name)
{
    pthread_mutex_lock(&vt_mu);
    vt_entry *e = vt_find(name);
    int due = !e || mono_ns() - e->asked_ns >= RFS_JOURNAL_TRACK_INTERVAL_NS;
    pthread_mutex_unlock(&vt_mu);
    return due;
}

/* 1 if the journal of generation gen holds records of e's name (vt_mu held). */
static int vt_written(const vt_entry *e, uint64_t gen)
{
    for (size_t i = 0; i < e->n_gens; i++)
        if (e->gens[i] == gen)
            return 1;
    return 0;
}

static int vt_gen_live(uint64_t gen)
{
    for (rfs_journal *j = vt_live; j; j = j->live_next)
        if (j->gen == gen)
            return 1;
    return 0;
}

/* Notes that the journal of generation gen holds records of e's name (vt_mu held); the
 * generations of journals since truncated or closed are dropped. */
static int vt_add_written(vt_entry *e, uint64_t gen)
{
    size_t k = 0;
    for (size_t i = 0; i < e->n_gens; i++)
        if (vt_gen_live(e->gens[i]))
            e->gens[k++] = e->gens[i];
    e->n_gens = k;
    if (e->n_gens == e->cap_gens) {
        size_t cap = e->cap_gens ? e->cap_gens * 2 : 2;
        uint64_t *ng = realloc(e->gens, sizeof *ng * cap);
        if (!ng)
            return RFS_E_NOMEM;
        e->gens = ng;
        e->cap_gens = cap;
    }
    e->gens[e->n_gens++] = gen;
    return RFS_OK;
}

/* Makes v name's version and appends it to every live journal holding records of name;
 * vt_mu held. */
static void vt_set_locked(vt_entry *e, const char *name, const rfs_journal_version *v)
{
    e->v = *v;
    for (rfs_journal *j = vt_live; j; j = j->live_next) {
        pthread_mutex_lock(&j->mu);
        if (vt_written(e, j->gen))
            append_version_locked(j, name, v); /* failure: the older version stays */
        pthread_mutex_unlock(&j->mu);
    }
}

void rfs_journal_track(const char *name)
{
    if (strlen(name) > RFS_JOURNAL_MAX_NAME)
        return;
    rfs_journal_version v;
    memset(&v, 0, sizeof v);
    pthread_mutex_lock(&vt_mu);
    vt_entry *asked = vt_find(name);
    if (asked)
        asked->asked_ns = mono_ns();
    pthread_mutex_unlock(&vt_mu);
    v.ticket = atomic_fetch_add(&vt_ticket, 1) + 1;
    if (vt_probe(name, &v) != RFS_OK)
        return;
    pthread_mutex_lock(&vt_mu);
    vt_entry *e = vt_find(name);
    if (e && v.ticket > e->v.ticket)
        vt_set_locked(e, name, &v);
    pthread_mutex_unlock(&vt_mu);
}

int rfs_journal_note(const char *name, rfs_journal_read_fn read, void *ctx)
{
    if (strlen(name) > RFS_JOURNAL_MAX_NAME)
        return rfs_fail(RFS_E_TOOBIG, "journal: name too long");
    rfs_journal_version v;
    memset(&v, 0, sizeof v);
    pthread_mutex_lock(&vt_mu);
    /* Read under vt_mu: of two notes, the one that read later (a version at least as new:
     * the source only moves forward) takes the later ticket. */
    int rc = read(ctx, &v);
    vt_entry *e = rc == RFS_OK ? vt_find(name) : NULL;
    if (e) {
        v.known = 1;
        v.exists = 1;
        v.ticket = atomic_fetch_add(&vt_ticket, 1) + 1;
        e->asked_ns = mono_ns();
        if (!e->v.known || !e->v.exists || e->v.size != v.size || e->v.mtime_ns != v.mtime_ns)
            vt_set_locked(e, name, &v);
    }
    pthread_mutex_unlock(&vt_mu);
    return rc;
}

int rfs_journal_append_version_fd(int fd, const char *name, const rfs_journal_version *v)
{
    if (strlen(name) > RFS_JOURNAL_MAX_NAME)
        return rfs_fail(RFS_E_TOOBIG, "journal: name too long");
    struct stat st;
    if (fstat(fd, &st) != 0)
        return rfs_fail(RFS_E_IO, "journal: fstat: %s", strerror(errno));
    uint8_t buf[J_HDR + RFS_JOURNAL_MAX_NAME + J_VERSION_DATA];
    size_t n = encode_version(buf, name, v);
    if (write_full(fd, buf, n, (uint64_t)st.st_size) != 0 || fdatasync(fd) != 0)
        return rfs_fail(rfs_err_from_errno(errno), "journal: cannot record the file version: %s",
                        strerror(errno));
    return RFS_OK;
}

/* ---- the writer's journal ---- */

int rfs_journal_open(const char *dir, rfs_journal **out)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return rfs_fail(rfs_err_from_errno(errno), "staging directory %s: %s", dir,
                        strerror(errno));
    rfs_journal *j = calloc(1, sizeof *j);
    if (!j)
        return rfs_fail(RFS_E_NOMEM, "out of memory for the staging journal");
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(j->path, sizeof j->path, "%s/rfs-abt-%s-%ld-%lx%s", dir, host, (long)getpid(),
             (unsigned long)(ts.tv_nsec ^ (long)(uintptr_t)j), RFS_JOURNAL_SUFFIX);
    /* Made under a name recovery does not look at, locked, given its header, and only then
     * renamed: recovery never sees a half-made journal, nor takes its lock before the writer. */
    char tmp[sizeof j->path + 8];
    snprintf(tmp, sizeof tmp, "%s.new", j->path);
    j->fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (j->fd < 0) {
        int e = errno;
        free(j);
        return rfs_fail(rfs_err_from_errno(e), "staging journal in %s: %s", dir, strerror(e));
    }
    int ok = flock(j->fd, LOCK_EX | LOCK_NB) == 0 && write_file_header(j->fd) == 0 &&
             rename(tmp, j->path) == 0;
    if (!ok) {
        int e = errno;
        close(j->fd);
        unlink(tmp);
        free(j);
        return rfs_fail(rfs_err_from_errno(e), "staging journal in %s: %s", dir, strerror(e));
    }
    j->end = RFS_JOURNAL_FILE_HDR;
    pthread_mutex_init(&j->mu, NULL);
    pthread_mutex_lock(&vt_mu);
    j->gen = vt_next_gen++;
    j->live_next = vt_live;
    vt_live = j;
    pthread_mutex_unlock(&vt_mu);
    *out = j;
    return RFS_OK;
}

int rfs_journal_append(rfs_journal *j, uint64_t seq, const char *name, const rfs_extent *ext,
                       uint32_t n_ext, const void *data, uint64_t len, int sync, uint64_t *rec_off,
                       uint64_t *data_off)
{
    size_t name_len = strlen(name);
    if (name_len == 0 || name_len > RFS_JOURNAL_MAX_NAME || n_ext > RFS_JOURNAL_MAX_EXT ||
        len > J_MAX_DATA)
        return rfs_fail(RFS_E_TOOBIG, "staging journal: record too large");
    size_t meta = J_HDR + name_len + (size_t)n_ext * 16u;
    uint8_t *hdr = malloc(meta);
    if (!hdr)
        return rfs_fail(RFS_E_NOMEM, "out of memory staging %llu bytes", (unsigned long long)len);
    memcpy(hdr + J_HDR, name, name_len);
    for (uint32_t i = 0; i < n_ext; i++) {
        memcpy(hdr + J_HDR + name_len + 16u * i, &ext[i].offset, 8);
        memcpy(hdr + J_HDR + name_len + 16u * i + 8, &ext[i].length, 8);
    }
    uint32_t bc = rfs_crc32c(0, hdr + J_HDR, meta - J_HDR);
    bc = rfs_crc32c(bc, data, len);
    put_head(hdr, RFS_JOURNAL_DATA, 0, name, n_ext, seq, len, bc);

    /* The first record of a name in this journal (generation) is preceded by the version the
     * writer last saw of it. Space is reserved and pending counted under j->mu, so a trim
     * cannot truncate under a record being written. */
    pthread_mutex_lock(&vt_mu);
    vt_entry *e = vt_find(name);
    pthread_mutex_lock(&j->mu);
    int rc = RFS_OK;
    if (e && !vt_written(e, j->gen)) {
        rc = append_version_locked(j, name, &e->v);
        if (rc == RFS_OK && vt_add_written(e, j->gen) != RFS_OK)
            rc = rfs_fail(RFS_E_NOMEM, "out of memory staging %llu bytes", (unsigned long long)len);
    }
    uint64_t at = j->end;
    if (rc == RFS_OK) {
        j->end += meta + len;
        j->pending++;
    }
    pthread_mutex_unlock(&j->mu);
    pthread_mutex_unlock(&vt_mu);
    if (rc != RFS_OK) {
        free(hdr);
        return rc;
    }

    int wr = write_full(j->fd, hdr, meta, at);
    if (wr == 0)
        wr = write_full(j->fd, data, len, at + meta);
    if (wr == 0 && sync)
        wr = fdatasync(j->fd);
    int err = errno;
    free(hdr);
    if (wr != 0) {
        /* The record was never completed: it is not pending. When nothing was appended after
         * it, its space is given back, so the journal does not carry a hole that recovery
         * would have to call corruption; otherwise the hole stays and recovery reports it. */
        pthread_mutex_lock(&j->mu);
        j->pending--;
        if (j->end == at + meta + len) {
            j->end = at;
            if (ftruncate(j->fd, (off_t)at) != 0) {
                /* the torn bytes stay past end; the next append overwrites them */
            }
        }
        pthread_mutex_unlock(&j->mu);
        return rfs_fail(rfs_err_from_errno(err), "staging journal %s: write failed: %s", j->path,
                        strerror(err));
    }
    *rec_off = at;
    *data_off = at + meta;
    return RFS_OK;
}

int rfs_journal_read(rfs_journal *j, uint64_t data_off, void *buf, uint64_t len)
{
    if (read_full(j->fd, buf, len, data_off) != 0)
        return rfs_fail(RFS_E_IO, "staging journal %s: read failed: %s", j->path, strerror(errno));
    return RFS_OK;
}

int rfs_journal_mark_done_fd(int fd, uint64_t rec_off)
{
    uint8_t done = 1;
    return write_full(fd, &done, 1, rec_off + J_STATE_OFF) == 0
               ? RFS_OK
               : rfs_fail(RFS_E_IO, "staging journal: cannot mark record delivered: %s",
                          strerror(errno));
}

int rfs_journal_mark_done(rfs_journal *j, uint64_t rec_off)
{
    int rc = rfs_journal_mark_done_fd(j->fd, rec_off);
    pthread_mutex_lock(&j->mu);
    if (rc == RFS_OK && j->pending > 0)
        j->pending--;
    pthread_mutex_unlock(&j->mu);
    return rc;
}

int rfs_journal_trim(rfs_journal *j)
{
    int cut = 0;
    pthread_mutex_lock(&vt_mu);
    pthread_mutex_lock(&j->mu);
    if (j->pending == 0 && j->end > RFS_JOURNAL_FILE_HDR) {
        if (ftruncate(j->fd, RFS_JOURNAL_FILE_HDR) == 0) {
            j->end = RFS_JOURNAL_FILE_HDR;
            j->gen = vt_next_gen++; /* the version records went too */
            cut = 1;
        }
    }
    pthread_mutex_unlock(&j->mu);
    pthread_mutex_unlock(&vt_mu);
    return cut;
}

int rfs_journal_close(rfs_journal *j)
{
    pthread_mutex_lock(&vt_mu);
    for (rfs_journal **p = &vt_live; *p; p = &(*p)->live_next)
        if (*p == j) {
            *p = j->live_next;
            break;
        }
    pthread_mutex_unlock(&vt_mu);
    int keep = j->pending > 0;
    if (!keep)
        unlink(j->path);
    close(j->fd);
    pthread_mutex_destroy(&j->mu);
    free(j);
    return keep;
}

/* ---- reading ---- */

typedef struct parsed {
    uint8_t hdr[J_HDR];
    unsigned kind;
    int done;
    uint16_t nl;
    uint32_t n_ext, body_crc;
    uint64_t seq, len, meta, total;
} parsed;

enum { P_OK = 0, P_TORN = 1, P_CORRUPT = 2 };

static int corrupt(rfs_journal_end *end, const char *why)
{
    end->kind = RFS_JOURNAL_CORRUPT;
    snprintf(end->why, sizeof end->why, "%s", why);
    return P_CORRUPT;
}

/* Reads and checks the head of the record at off (avail bytes to the end of the file). */
static int parse_head(int fd, uint64_t off, uint64_t avail, parsed *p, rfs_journal_end *end)
{
    size_t n = avail < J_HDR ? (size_t)avail : J_HDR;
    if (read_full(fd, p->hdr, n, off) != 0)
        return corrupt(end, "unreadable");
    uint32_t magic = J_MAGIC;
    if (n < J_HDR) {
        /* Cut inside the head: torn if what is there starts like a record. */
        if (memcmp(p->hdr, &magic, n < 4 ? n : 4) != 0)
            return corrupt(end, "bad record magic");
        end->kind = RFS_JOURNAL_TORN;
        end->present = n;
        end->want = 0;
        return P_TORN;
    }
    uint32_t hc;
    memcpy(&hc, p->hdr + 32, 4);
    int zero = 1;
    for (size_t i = 0; i < J_HDR && zero; i++)
        zero = p->hdr[i] == 0;
    if (zero)
        return corrupt(end, "record head is all zeros (never written)");
    if (memcmp(p->hdr, &magic, 4) != 0)
        return corrupt(end, "bad record magic");
    if (hc != head_crc(p->hdr))
        return corrupt(end, "record head fails its checksum");
    p->kind = p->hdr[4];
    p->done = p->hdr[J_STATE_OFF] != 0;
    memcpy(&p->nl, p->hdr + 6, 2);
    memcpy(&p->n_ext, p->hdr + 8, 4);
    memcpy(&p->body_crc, p->hdr + 12, 4);
    memcpy(&p->seq, p->hdr + 16, 8);
    memcpy(&p->len, p->hdr + 24, 8);
    if ((p->kind != RFS_JOURNAL_DATA && p->kind != RFS_JOURNAL_VERSION) || p->nl == 0 ||
        p->nl > RFS_JOURNAL_MAX_NAME || p->n_ext > RFS_JOURNAL_MAX_EXT || p->len > J_MAX_DATA ||
        (p->kind == RFS_JOURNAL_VERSION && (p->len != J_VERSION_DATA || p->n_ext != 0)))
        return corrupt(end, "record head has impossible fields");
    p->meta = J_HDR + (uint64_t)p->nl + (uint64_t)p->n_ext * 16u;
    p->total = p->meta + p->len;
    if (p->total > avail) {
        /* The head is intact, so the length is true: the record was cut short. */
        end->kind = RFS_JOURNAL_TORN;
        end->present = avail;
        end->want = p->total;
        return P_TORN;
    }
    return P_OK;
}

static void decode_version(const uint8_t *d, rfs_journal_version *v, uint64_t ticket)
{
    uint32_t flags;
    memcpy(&v->size, d, 8);
    memcpy(&v->mtime_ns, d + 8, 8);
    memcpy(&flags, d + 16, 4);
    v->known = (flags & 1u) != 0;
    v->exists = (flags & 2u) != 0;
    v->ticket = ticket;
}

/* Reads, verifies and hands over the body of a record whose head parse_head accepted.
 * Returns P_CORRUPT, fn's value, or a negative rfs_err. */
static int parse_body(int fd, uint64_t off, const parsed *p, int meta_only, rfs_journal_rec *r,
                      rfs_journal_rec_fn fn, void *ctx, rfs_journal_end *end)
{
    if (meta_only && p->kind == RFS_JOURNAL_DATA)
        return 0; /* a quick look wants only the versions */
    uint8_t *body = malloc(p->total - J_HDR + 1);
    char *name = malloc((size_t)p->nl + 1);
    rfs_extent *ext = malloc(sizeof *ext * (p->n_ext ? p->n_ext : 1));
    if (!body || !name || !ext) {
        free(body), free(name), free(ext);
        return rfs_fail(RFS_E_NOMEM, "journal: out of memory for a record of %llu bytes",
                        (unsigned long long)p->len);
    }
    int rc;
    if (read_full(fd, body, p->total - J_HDR, off + J_HDR) != 0)
        rc = corrupt(end, "unreadable");
    else if (rfs_crc32c(0, body, p->total - J_HDR) != p->body_crc) {
        rc = corrupt(end, "record data fails its checksum");
        end->next_off = off + p->total;
        memcpy(name, body, p->nl);
        name[p->nl] = '\0';
        snprintf(end->name, sizeof end->name, "%s", name);
        end->claimed_len = p->kind == RFS_JOURNAL_DATA ? p->len : 0;
    } else {
        memcpy(name, body, p->nl);
        name[p->nl] = '\0';
        for (uint32_t i = 0; i < p->n_ext; i++) {
            memcpy(&ext[i].offset, body + p->nl + 16u * i, 8);
            memcpy(&ext[i].length, body + p->nl + 16u * i + 8, 8);
        }
        r->kind = p->kind;
        r->seq = p->seq;
        r->len = p->len;
        r->done = p->done;
        r->name = name;
        r->ext = ext;
        r->n_ext = p->n_ext;
        r->data = body + p->meta - J_HDR;
        if (p->kind == RFS_JOURNAL_VERSION)
            decode_version(body + p->nl, &r->version, p->seq);
        rc = fn(ctx, r);
    }
    free(body), free(name), free(ext);
    return rc;
}

static int file_size(int fd, uint64_t *size)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return rfs_fail(RFS_E_IO, "journal: fstat: %s", strerror(errno));
    *size = (uint64_t)st.st_size;
    return RFS_OK;
}

int rfs_journal_scan(int fd, int meta_only, rfs_journal_rec_fn fn, void *ctx, rfs_journal_end *end)
{
    return rfs_journal_scan_from(fd, RFS_JOURNAL_FILE_HDR, 1, meta_only, fn, ctx, end);
}

int rfs_journal_scan_from(int fd, uint64_t off, uint64_t first_index, int meta_only,
                          rfs_journal_rec_fn fn, void *ctx, rfs_journal_end *end)
{
    memset(end, 0, sizeof *end);
    uint64_t size = 0, index = first_index - 1;
    int rc = file_size(fd, &size);
    while (rc == RFS_OK && off < size) {
        index++;
        parsed p;
        rfs_journal_rec r = {.rec_off = off, .index = index};
        rc = parse_head(fd, off, size - off, &p, end);
        if (rc == P_OK) {
            r.rec_len = p.total;
            rc = parse_body(fd, off, &p, meta_only, &r, fn, ctx, end);
        }
        if (rc == P_TORN || rc == P_CORRUPT) {
            end->index = index;
            end->off = off;
            end->bytes_after = size - off;
            return RFS_OK;
        }
        off += p.total;
    }
    return rc;
}

int rfs_journal_read_at(int fd, uint64_t rec_off, rfs_journal_rec_fn fn, void *ctx)
{
    uint64_t size = 0;
    int rc = file_size(fd, &size);
    if (rc != RFS_OK)
        return rc;
    rfs_journal_end end;
    memset(&end, 0, sizeof end);
    parsed p;
    rfs_journal_rec r = {.rec_off = rec_off};
    rc = rec_off < size ? parse_head(fd, rec_off, size - rec_off, &p, &end) : P_TORN;
    if (rc == P_OK) {
        r.rec_len = p.total;
        rc = parse_body(fd, rec_off, &p, 0, &r, fn, ctx, &end);
    }
    if (rc == P_TORN || rc == P_CORRUPT)
        return rfs_fail(RFS_E_IO, "journal: record at offset %llu changed since it was verified",
                        (unsigned long long)rec_off);
    return rc;
}
