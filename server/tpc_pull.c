/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Third-party copy pulls (tpc_pull.h). The outgoing side is the client library's connection
 * (client/conn.c): pipelined PREADs, frame checksums, TLS, timeouts, all as a client has them. */
#include "tpc_pull.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "client/client.h"
#include "common/err.h"
#include "common/log.h"
#include "conn.h"
#include "exports.h"
#include "guard.h"

#define CHUNK ((uint32_t)4 << 20) /* bytes per PREAD: one default frame's payload */
#define WINDOW_CHUNKS 16u         /* PREADs in flight per pull, over all its streams */
#define VERIFY_PIECE ((uint64_t)256 << 20)

typedef struct job job;

typedef struct stream {
    job *j;
    int index;
    pthread_t th;
} stream;

struct job {
    job *next;
    uint32_t id;
    char peer[80]; /* the client, for the log */
    /* what to do */
    char host[RFS_TPC_MAX_HOST + 1];
    unsigned port, nstreams;
    uint32_t flags;
    uint8_t pin[RFS_TPC_PIN_LEN];
    rfs_copts o;
    char src[RFS_MAX_PATH + 1];
    char dst[RFS_MAX_PATH + 1];  /* as the client named it, for messages */
    int dfd;                     /* the destination's directory */
    char name[RFS_MAX_NAME + 1]; /* the destination's name in it */
    char tmp[RFS_MAX_NAME + 64]; /* the temporary beside it */
    int fd;                      /* the temporary (read back for its checksum) */
    /* progress */
    pthread_t th;
    atomic_int cancel;
    _Atomic uint64_t done;
    _Atomic uint64_t total;
    atomic_int size_known;
    _Atomic uint64_t next_chunk;
    _Atomic uint32_t chunk; /* bytes per PREAD, the same for every stream */
    pthread_mutex_t mu;     /* conns, first error */
    rfs_conn *conns[RFS_TPC_MAX_USES];
    int rc;
    char msg[RFS_MAX_MSG];
    /* outcome (jobs_mu) */
    int finished;
    uint32_t crc;
};

struct rfsd_tpc_jobs {
    job *head;
    unsigned n;
};

static pthread_mutex_t jobs_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned running; /* jobs whose thread runs, whole server */
static uint32_t next_id = 1;

/* The first failure of a pull wins; the others stop on its cancel. */
static void job_fail(job *j, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void job_fail(job *j, int rc, const char *fmt, ...)
{
    pthread_mutex_lock(&j->mu);
    if (!j->rc) {
        j->rc = rc;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(j->msg, sizeof j->msg, fmt, ap);
        va_end(ap);
    }
    for (unsigned i = 0; i < j->nstreams; i++)
        if (j->conns[i])
            rfs_conn_kill(j->conns[i], RFS_E_CONN, "third-party copy stopped");
    pthread_mutex_unlock(&j->mu);
    atomic_store(&j->cancel, 1);
}

static void cancel_job(job *j)
{
    job_fail(j, RFS_E_CONN, "%s: third-party copy cancelled: the client's connection ended",
             j->dst);
}

/* One stream: its own connection and handle, taking 4 MiB pieces of the file in turn and
 * keeping `window` reads in flight. */
static int stream_copy(job *j, rfs_conn *cn, uint32_t fh, uint64_t size, unsigned window)
{
    rfs_call calls[WINDOW_CHUNKS];
    uint8_t *bufs[WINDOW_CHUNKS];
    uint64_t offs[WINDOW_CHUNKS];
    uint32_t lens[WINDOW_CHUNKS];
    /* the first stream to get here fixes the piece size: chunk i is at i x chunk for all */
    uint32_t mf = rfs_conn_max_frame(cn);
    uint32_t mine = mf > CHUNK + 4096 ? CHUNK : mf - 4096, chunk = 0;
    if (!atomic_compare_exchange_strong(&j->chunk, &chunk, mine))
        mine = chunk;
    chunk = mine;
    if ((uint64_t)chunk + 4096 > mf)
        return rfs_fail(RFS_E_PROTO,
                        "%s: the source negotiated different frame sizes on the "
                        "copy's connections",
                        j->src);
    for (unsigned k = 0; k < window; k++) {
        rfs_call_init(&calls[k]);
        bufs[k] = NULL;
    }
    int rc = RFS_OK;
    uint64_t issued = 0, finished = 0;
    for (;;) {
        while (!rc && !atomic_load(&j->cancel) && issued - finished < window) {
            uint64_t idx = atomic_fetch_add(&j->next_chunk, 1);
            uint64_t off = idx * chunk;
            if (off >= size)
                break;
            unsigned k = (unsigned)(issued % window);
            if (!bufs[k] && !(bufs[k] = malloc(chunk))) {
                rc = rfs_fail(RFS_E_NOMEM, "out of memory for the copy's buffers");
                break;
            }
            offs[k] = off;
            lens[k] = (uint32_t)(size - off < chunk ? size - off : chunk);
            rfs_call_reset(&calls[k]);
            calls[k].dst = bufs[k];
            calls[k].dst_cap = lens[k];
            rfs_req req;
            memset(&req, 0, sizeof req);
            req.op = RFS_OP_PREAD;
            req.u.pread.fh = fh;
            req.u.pread.off = off;
            req.u.pread.len = lens[k];
            if ((rc = rfs_conn_start(cn, &calls[k], &req, NULL, j->o.io_timeout_ms)))
                break;
            issued++;
        }
        if (finished == issued)
            break;
        unsigned k = (unsigned)(finished % window);
        int wrc = rfs_conn_wait(cn, &calls[k]);
        finished++;
        if (rc || atomic_load(&j->cancel))
            continue; /* drain what is in flight before the buffers go */
        if ((rc = rfs_call_result(cn, &calls[k], wrc, j->src)))
            continue;
        if (calls[k].data_len != lens[k]) {
            rc = rfs_fail(RFS_E_IO,
                          "%s: the source file shrank during the copy (%llu bytes at "
                          "%llu, %zu read)",
                          j->src, (unsigned long long)lens[k], (unsigned long long)offs[k],
                          calls[k].data_len);
            continue;
        }
        if ((rc = rfsd_be_pwrite(j->fd, j->dst, bufs[k], lens[k], offs[k])))
            continue;
        atomic_fetch_add(&j->done, lens[k]);
    }
    for (unsigned k = 0; k < window; k++) {
        rfs_call_destroy(&calls[k]);
        free(bufs[k]);
    }
    return rc;
}

static int open_source(job *j, rfs_conn *cn, uint32_t *fh, uint64_t *size)
{
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_OPEN;
    req.u.open.flags = RFS_O_RDONLY;
    req.u.open.path.s = j->src;
    req.u.open.path.len = (uint16_t)strlen(j->src);
    rfs_call call;
    rfs_call_init(&call);
    int rc = rfs_conn_call(cn, &call, &req, j->o.io_timeout_ms, j->src);
    if (!rc) {
        *fh = call.rep.u.open.fh;
        *size = call.rep.u.open.size;
    }
    rfs_call_destroy(&call);
    return rc;
}

static void *stream_main(void *arg)
{
    stream *s = arg;
    job *j = s->j;
    rfs_conn *cn = NULL;
    int rc = rfs_conn_open(j->host, (uint16_t)j->port, &j->o, &cn);
    if (rc) {
        job_fail(j, rc, "source %s:%u: %s", j->host, j->port, rfs_last_error());
        return NULL;
    }
    pthread_mutex_lock(&j->mu);
    j->conns[s->index] = cn;
    int stop = j->rc != 0;
    pthread_mutex_unlock(&j->mu);
    if (stop) {
        rfs_conn_kill(cn, RFS_E_CONN, "third-party copy stopped");
        return NULL;
    }
    uint32_t fh = 0;
    uint64_t size = 0;
    if ((rc = open_source(j, cn, &fh, &size))) {
        job_fail(j, rc, "source %s:%u: %s", j->host, j->port, rfs_last_error());
        return NULL;
    }
    if (!atomic_exchange(&j->size_known, 1))
        atomic_store(&j->total, size);
    else if (atomic_load(&j->total) != size)
        rc = rfs_fail(RFS_E_IO, "%s: the source file changed size during the copy", j->src);
    unsigned window = WINDOW_CHUNKS / j->nstreams;
    if (!rc)
        rc = stream_copy(j, cn, fh, size, window < 2 ? 2 : window);
    if (rc && !atomic_load(&j->cancel))
        job_fail(j, rc, "source %s:%u: %s", j->host, j->port, rfs_last_error());
    return NULL;
}

/* --verify: the source's own CRC-32C of the file, asked over the first stream's connection. */
static int source_crc(job *j, uint64_t size, uint32_t *crc)
{
    rfs_conn *cn = j->conns[0];
    uint32_t fh;
    uint64_t sz;
    int rc = open_source(j, cn, &fh, &sz);
    uint64_t seed = 0;
    for (uint64_t off = 0; !rc && off < size;) {
        rfs_req req;
        memset(&req, 0, sizeof req);
        req.op = RFS_OP_CHECKSUM;
        req.u.checksum.fh = fh;
        req.u.checksum.algo = RFS_SUM_CRC32C;
        req.u.checksum.off = off;
        req.u.checksum.len = size - off < VERIFY_PIECE ? size - off : VERIFY_PIECE;
        req.u.checksum.seed = seed;
        rfs_call call;
        rfs_call_init(&call);
        rc = rfs_conn_call(cn, &call, &req, j->o.io_timeout_ms, j->src);
        if (!rc && call.rep.u.checksum.len != req.u.checksum.len)
            rc = rfs_fail(RFS_E_IO, "%s: the source file shrank during the copy", j->src);
        if (!rc) {
            seed = call.rep.u.checksum.value;
            off += call.rep.u.checksum.len;
        }
        rfs_call_destroy(&call);
    }
    *crc = (uint32_t)seed;
    return rc;
}

static int install(job *j, uint64_t size, uint32_t *crc)
{
    uint64_t covered = 0;
    int rc = rfsd_be_checksum(j->fd, j->dst, 0, size, 0, crc, &covered);
    if (!rc && covered != size)
        rc = rfs_fail(RFS_E_IO, "%s: the copy has %llu bytes, the source %llu", j->dst,
                      (unsigned long long)covered, (unsigned long long)size);
    if (!rc && (j->flags & RFS_TPC_VERIFY)) {
        uint32_t theirs = 0;
        if ((rc = source_crc(j, size, &theirs))) {
            char why[RFS_MAX_MSG];
            snprintf(why, sizeof why, "%s", rfs_last_error());
            rc = rfs_fail(rc, "source %s:%u: %s", j->host, j->port, why);
        } else if (theirs != *crc) {
            rc = rfs_fail(RFS_E_IO,
                          "%s: verification failed: crc32c of the copy is %08x, the "
                          "source's %08x; not renamed into place",
                          j->dst, *crc, theirs);
        }
    }
    if (!rc && (j->flags & RFS_TPC_SYNC) && fdatasync(j->fd) != 0)
        rc = rfs_fail(rfs_err_from_errno(errno), "%s: sync: %s", j->dst, strerror(errno));
    int fd = j->fd;
    j->fd = -1;
    if (close(fd) != 0 && !rc)
        rc = rfs_fail(rfs_err_from_errno(errno), "%s: close: %s", j->dst, strerror(errno));
    if (rc)
        return rc;
    if (renameat2(j->dfd, j->tmp, j->dfd, j->name,
                  (j->flags & RFS_TPC_EXCL) ? RENAME_NOREPLACE : 0) != 0) {
        if (errno == EEXIST)
            return rfs_fail(RFS_E_EXIST, "%s exists (not overwritten: no-clobber)", j->dst);
        return rfs_fail(rfs_err_from_errno(errno), "%s: rename into place: %s", j->dst,
                        strerror(errno));
    }
    if (j->flags & RFS_TPC_SYNC) {
        int dir = openat(j->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir >= 0) {
            if (fsync(dir) != 0)
                rc = rfs_fail(rfs_err_from_errno(errno), "%s: sync directory: %s", j->dst,
                              strerror(errno));
            close(dir);
        }
    }
    return rc;
}

static void *job_main(void *arg)
{
    job *j = arg;
    stream st[RFS_TPC_MAX_USES];
    unsigned started = 0;
    for (unsigned i = 0; i < j->nstreams; i++) {
        st[i].j = j;
        st[i].index = (int)i;
        if (rfs_thread_start(&st[i].th, stream_main, &st[i]) != 0) {
            job_fail(j, RFS_E_NOMEM, "%s: cannot start a copy thread", j->dst);
            break;
        }
        started++;
    }
    for (unsigned i = 0; i < started; i++)
        pthread_join(st[i].th, NULL);
    uint32_t crc = 0;
    int rc = j->rc;
    if (!rc) {
        rc = install(j, atomic_load(&j->total), &crc);
        if (rc)
            job_fail(j, rc, "%s", rfs_last_error());
    }
    /* taken out under the lock: a cancel (job_fail) may be killing them right now */
    rfs_conn *conns[RFS_TPC_MAX_USES];
    pthread_mutex_lock(&j->mu);
    for (unsigned i = 0; i < j->nstreams; i++) {
        conns[i] = j->conns[i];
        j->conns[i] = NULL;
    }
    pthread_mutex_unlock(&j->mu);
    for (unsigned i = 0; i < j->nstreams; i++)
        rfs_conn_free(conns[i]);
    if (j->fd >= 0) {
        close(j->fd);
        j->fd = -1;
    }
    if (j->rc)
        unlinkat(j->dfd, j->tmp, 0); /* nothing half-copied stays behind */
    RFS_LOGI("%s: third-party copy %s:%u:%s -> %s: %s (%llu bytes)", j->peer, j->host, j->port,
             j->src, j->dst, j->rc ? j->msg : "done", (unsigned long long)atomic_load(&j->done));
    pthread_mutex_lock(&jobs_mu);
    j->finished = 1;
    j->crc = crc;
    running--;
    pthread_mutex_unlock(&jobs_mu);
    return NULL;
}

static void job_free(job *j)
{
    if (j->dfd >= 0)
        close(j->dfd);
    pthread_mutex_destroy(&j->mu);
    explicit_bzero(&j->o, sizeof j->o);
    free(j);
}

int rfsd_tpc_host_allowed(const char *allow, const char *host, unsigned port)
{
    if (!allow || !*allow)
        return 1;
    char hp[RFS_TPC_MAX_HOST + 16];
    snprintf(hp, sizeof hp, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
    const char *p = allow;
    while (*p) {
        size_t n = strcspn(p, ", ");
        if (n && ((strlen(host) == n && !strncasecmp(p, host, n)) ||
                  (strlen(hp) == n && !strncasecmp(p, hp, n))))
            return 1;
        p += n;
        p += strspn(p, ", ");
    }
    return 0;
}

static void copy_wpath(char *out, size_t cap, const rfs_wpath *w)
{
    size_t n = w->len < cap - 1 ? w->len : cap - 1;
    memcpy(out, w->s, n);
    out[n] = '\0';
}

/* Checks, creates the temporary and fills j (not started). */
static int prepare(rfsd_conn *c, const rfs_req *q, job *j)
{
    const rfsd_config *cfg = &c->srv->cfg;
    copy_wpath(j->host, sizeof j->host, &q->u.tpc_pull.host);
    j->port = q->u.tpc_pull.port;
    if (!cfg->tpc)
        return rfs_fail(RFS_E_UNSUPPORTED, "third-party copy into this server is off (rfsd "
                                           "--tpc on enables it; docs/security.md)");
    /* UNSUPPORTED, like --tpc off: the client may still copy through itself */
    if (!rfsd_tpc_host_allowed(cfg->tpc_allow, j->host, j->port))
        return rfs_fail(RFS_E_UNSUPPORTED,
                        "third-party copy: source %s:%u is not in this server's "
                        "--tpc-allow list",
                        j->host, j->port);
    if (c->who.granted)
        return rfs_fail(RFS_E_ACCESS, "TPC_PULL: a connection authenticated by a grant cannot "
                                      "start pulls");
    j->flags = q->u.tpc_pull.flags;
    j->nstreams = q->u.tpc_pull.streams;
    copy_wpath(j->src, sizeof j->src, &q->u.tpc_pull.src);
    static const uint8_t zero[RFS_TPC_PIN_LEN];
    if ((j->flags & RFS_TPC_TLS) && !memcmp(q->u.tpc_pull.pin, zero, RFS_TPC_PIN_LEN))
        return rfs_fail(RFS_E_INVAL, "TPC_PULL: a TLS source needs its certificate's pin");
    int rc = rfs_copts_resolve(NULL, "third-party copy", &j->o);
    if (rc)
        return rc;
    explicit_bzero(j->o.token, sizeof j->o.token);
    j->o.has_token = 0;
    j->o.has_grant = 1;
    j->o.zmode = 0;
    memcpy(j->o.grant_id, q->u.tpc_pull.id, RFS_TPC_ID_LEN);
    memcpy(j->o.grant_key, q->u.tpc_pull.key, RFS_TPC_KEY_LEN);
    j->o.tls = !!(j->flags & RFS_TPC_TLS);
    j->o.tls_ca[0] = '\0';
    j->o.tls_pin[0] = '\0';
    if (j->o.tls)
        for (unsigned i = 0; i < RFS_TPC_PIN_LEN; i++)
            snprintf(j->o.tls_pin + 2 * i, 3, "%02x", q->u.tpc_pull.pin[i]);

    rfsd_path p;
    const rfsd_export *ex;
    if ((rc = rfsd_resolve(c, &q->u.tpc_pull.dst, RFSD_NEED_WRITE, 0, &p, &ex)))
        return rc;
    snprintf(j->dst, sizeof j->dst, "%s", p.shown);
    if (ex->quota)
        return rfs_fail(RFS_E_UNSUPPORTED,
                        "%s: third-party copy into an export with a quota is "
                        "not supported (the client copies through itself instead)",
                        p.shown);
    const char *last;
    if ((rc = rfsd_open_parent(ex->root_fd, &p, &j->dfd, &last)))
        return rc;
    snprintf(j->name, sizeof j->name, "%s", last);
    if (!strcmp(j->name, ".") || !strcmp(j->name, ".."))
        return rfs_fail(RFS_E_ISDIR, "%s: names a directory; name the file", p.shown);
    struct stat sb;
    if (fstatat(j->dfd, j->name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISDIR(sb.st_mode))
            return rfs_fail(RFS_E_ISDIR, "%s is a directory", p.shown);
        if (j->flags & RFS_TPC_EXCL)
            return rfs_fail(RFS_E_EXIST, "%s exists (not overwritten: no-clobber)", p.shown);
    }
    static _Atomic unsigned long seq;
    snprintf(j->tmp, sizeof j->tmp, ".%.200s.rfs-tpc-%ld-%lu", j->name, (long)getpid(),
             (unsigned long)++seq);
    uint32_t mode = rfsd_guard_mode(cfg, q->u.tpc_pull.mode ? q->u.tpc_pull.mode : 0644, 0);
    j->fd =
        openat(j->dfd, j->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
    if (j->fd < 0)
        return rfs_fail(rfs_err_from_errno(errno), "%s: create the temporary file: %s", p.shown,
                        strerror(errno));
    return RFS_OK;
}

int rfsd_tpc_pull_start(rfsd_conn *c, const rfs_req *q, rfs_rep *rep)
{
    job *j = calloc(1, sizeof *j);
    if (!j)
        return rfs_fail(RFS_E_NOMEM, "TPC_PULL: server out of memory");
    j->dfd = -1;
    j->fd = -1;
    pthread_mutex_init(&j->mu, NULL);
    snprintf(j->peer, sizeof j->peer, "%s", c->peer);
    int rc = prepare(c, q, j);
    if (!rc) {
        pthread_mutex_lock(&jobs_mu);
        if (!c->tpc && !(c->tpc = calloc(1, sizeof *c->tpc)))
            rc = rfs_fail(RFS_E_NOMEM, "TPC_PULL: server out of memory");
        else if (running >= RFSD_TPC_MAX_PULLS || c->tpc->n >= RFSD_TPC_MAX_PULLS_PER_CONN)
            rc = rfs_fail(RFS_E_BUSY,
                          "third-party copy: %u pulls run on this server (limit %u), "
                          "%u for this connection (limit %u); retry later",
                          running, RFSD_TPC_MAX_PULLS, c->tpc->n, RFSD_TPC_MAX_PULLS_PER_CONN);
        else if (rfs_thread_start(&j->th, job_main, j) != 0)
            rc = rfs_fail(RFS_E_NOMEM, "third-party copy: cannot start a thread");
        if (!rc) {
            j->id = next_id++;
            if (!next_id)
                next_id = 1;
            j->next = c->tpc->head;
            c->tpc->head = j;
            c->tpc->n++;
            running++;
            rep->u.tpc_pull.job = j->id;
        }
        pthread_mutex_unlock(&jobs_mu);
    }
    if (rc) {
        if (j->fd >= 0) {
            close(j->fd);
            unlinkat(j->dfd, j->tmp, 0);
        }
        job_free(j);
        return rc;
    }
    RFS_LOGD("%s: third-party copy %u: %s:%u:%s -> %s, %u stream(s)", c->peer, j->id, j->host,
             j->port, j->src, j->dst, j->nstreams);
    return RFS_OK;
}

/* Takes j out of c's list (jobs_mu held). */
static void unlink_job(rfsd_conn *c, job *j)
{
    for (job **pp = &c->tpc->head; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            c->tpc->n--;
            return;
        }
}

int rfsd_tpc_pull_status(rfsd_conn *c, const rfs_req *q, rfs_rep *rep)
{
    pthread_mutex_lock(&jobs_mu);
    job *j = c->tpc ? c->tpc->head : NULL;
    while (j && j->id != q->u.tpc_status.job)
        j = j->next;
    if (!j) {
        pthread_mutex_unlock(&jobs_mu);
        return rfs_fail(RFS_E_NOENT,
                        "TPC_STATUS: no third-party copy %u on this connection "
                        "(finished and reported already, or never started here)",
                        q->u.tpc_status.job);
    }
    int finished = j->finished;
    if (finished)
        unlink_job(c, j);
    pthread_mutex_unlock(&jobs_mu);
    uint64_t total = atomic_load(&j->total), done = atomic_load(&j->done);
    if (!finished) {
        rep->u.tpc_status.state = RFS_TPC_RUNNING;
        rep->u.tpc_status.total = total;
        rep->u.tpc_status.done = done < total ? done : total;
        return RFS_OK;
    }
    pthread_join(j->th, NULL);
    int rc = RFS_OK;
    if (j->rc) {
        rc = rfs_fail(j->rc, "%s", j->msg);
    } else {
        rep->u.tpc_status.state = RFS_TPC_DONE;
        rep->u.tpc_status.total = total;
        rep->u.tpc_status.done = total;
        rep->u.tpc_status.crc = j->crc;
    }
    job_free(j);
    return rc;
}

void rfsd_tpc_conn_end(rfsd_conn *c)
{
    pthread_mutex_lock(&jobs_mu);
    job *list = c->tpc ? c->tpc->head : NULL;
    if (c->tpc) {
        c->tpc->head = NULL;
        c->tpc->n = 0;
    }
    pthread_mutex_unlock(&jobs_mu);
    while (list) {
        job *j = list;
        list = j->next;
        cancel_job(j);
        pthread_join(j->th, NULL);
        job_free(j);
    }
    free(c->tpc);
    c->tpc = NULL;
}
