/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The MPI thread of rfsd --backend mpiio (coll_mpi.h).
 *
 * Messages on a private communicator, all from or to process 0:
 *   NOTE (any process -> 0): "I hold one part of call (id, seq)" or "one rank closed id";
 *   CMD  (0 -> every other): EXEC (id, seq), ABORT (id, seq), CLOSE id, STOP.
 * Process 0 counts the parts of each call over the group; when they reach the call's number of
 * client ranks it sends EXEC to all and issues the call itself. Commands travel on one tag from
 * one sender, so every process sees them in the same order (MPI keeps point-to-point order),
 * and the collective calls they start match up. A call whose parts do not all arrive within
 * COLL_TIMEOUT_MS (a client rank died, or sent its part elsewhere) is aborted the same way:
 * every process fails its waiting parts of it. */
#include "coll_mpi.h"

#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"

#define TAG_NOTE 71
#define TAG_CMD 72
#define IDLE_WAIT_NS 200000 /* the thread's nap when there is nothing to do */

enum { NOTE_IO = 1, NOTE_CLOSE, CMD_EXEC, CMD_ABORT, CMD_CLOSE, CMD_STOP };

/* The fixed head of a NOTE or CMD; the path and hints follow. The group's processes run the
 * same binary on the same kind of host, so the struct goes as bytes. */
typedef struct msg_head {
    uint8_t id[RFS_COLL_ID_LEN];
    uint32_t seq, nranks, flags;
    uint16_t kind, is_write, path_len, hints_len;
} msg_head;
#define MSG_MAX (sizeof(msg_head) + RFS_MAX_PATH + 1 + RFS_COLL_MAX_HINTS + 1)

typedef struct msg {
    msg_head h;
    char path[RFS_MAX_PATH + 1];
    char hints[RFS_COLL_MAX_HINTS + 1];
} msg;

/* Process 0: the parts counted so far of one call (seq UINT32_MAX: the closes of id). */
typedef struct tally {
    msg m;
    uint32_t count;
    int64_t first_ns;
    struct tally *next;
} tally;

/* An MPI file this process holds, opened by every process for the collective open id. */
typedef struct open_file {
    uint8_t id[RFS_COLL_ID_LEN];
    MPI_File fh;
    struct open_file *next;
} open_file;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static rfsd_piece *inbox, *waiting; /* under mu: handed over; noted and waiting for EXEC */
static unsigned nwaiting, max_waiting, timeout_ms;
static atomic_int stop_asked, running;
static pthread_t thread;
static MPI_Comm comm;
static int me, nprocs;
static tally *tallies;   /* process 0 only; MPI thread only */
static open_file *files; /* MPI thread only */
static uint8_t note_in[MSG_MAX], cmd_in[MSG_MAX];

static void to_msg(const rfsd_piece *p, int kind, msg *m)
{
    memset(&m->h, 0, sizeof m->h);
    memcpy(m->h.id, p->id, RFS_COLL_ID_LEN);
    m->h.seq = p->kind == RFSD_PIECE_CLOSE ? UINT32_MAX : p->seq;
    m->h.nranks = p->nranks;
    m->h.flags = p->flags;
    m->h.kind = (uint16_t)kind;
    m->h.is_write = (uint16_t)p->is_write;
    snprintf(m->path, sizeof m->path, "%s", p->path);
    snprintf(m->hints, sizeof m->hints, "%s", p->hints ? p->hints : "");
    m->h.path_len = (uint16_t)strlen(m->path);
    m->h.hints_len = (uint16_t)strlen(m->hints);
}

static int pack(const msg *m, uint8_t *out)
{
    memcpy(out, &m->h, sizeof m->h);
    memcpy(out + sizeof m->h, m->path, m->h.path_len);
    memcpy(out + sizeof m->h + m->h.path_len, m->hints, m->h.hints_len);
    return (int)(sizeof m->h + m->h.path_len + m->h.hints_len);
}

static void unpack(const uint8_t *in, int len, msg *m)
{
    memcpy(&m->h, in, sizeof m->h);
    if (len < (int)sizeof m->h || m->h.path_len > RFS_MAX_PATH ||
        m->h.hints_len > RFS_COLL_MAX_HINTS ||
        (size_t)len != sizeof m->h + m->h.path_len + m->h.hints_len) {
        m->h.kind = 0; /* only our own processes send here: not expected */
        return;
    }
    memcpy(m->path, in + sizeof m->h, m->h.path_len);
    m->path[m->h.path_len] = '\0';
    memcpy(m->hints, in + sizeof m->h + m->h.path_len, m->h.hints_len);
    m->hints[m->h.hints_len] = '\0';
}

static void finish(rfsd_piece *p, int rc, const char *fmt, const char *a, const char *b)
{
    p->rc = rc;
    if (rc)
        snprintf(p->msg, sizeof p->msg, fmt, a, b);
    pthread_mutex_lock(&mu);
    p->done = 1;
    nwaiting--;
    pthread_cond_broadcast(&done_cv);
    pthread_mutex_unlock(&mu);
}

/* The waiting parts of call (id, seq) on this process, taken off the list. */
static rfsd_piece *take_parts(const msg_head *h)
{
    rfsd_piece *got = NULL, **pp = &waiting;
    pthread_mutex_lock(&mu);
    while (*pp) {
        rfsd_piece *p = *pp;
        if (!memcmp(p->id, h->id, RFS_COLL_ID_LEN) && p->seq == h->seq) {
            *pp = p->next;
            p->next = got;
            got = p;
        } else {
            pp = &p->next;
        }
    }
    pthread_mutex_unlock(&mu);
    return got;
}

static void mpi_message(int code, char *out, size_t cap)
{
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(code, s, &n);
    snprintf(out, cap, "%.*s", n, s);
}

/* "key=value;..." from the client, as MPI_Info: only the keys a parallel file system's
 * MPI-IO acts on (docs/hints.md "Hints for the server group"). */
static MPI_Info info_of(const char *hints)
{
    MPI_Info info;
    MPI_Info_create(&info);
    char buf[RFS_COLL_MAX_HINTS + 1];
    snprintf(buf, sizeof buf, "%s", hints);
    char *save = NULL;
    for (char *kv = strtok_r(buf, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq || eq == kv)
            continue;
        *eq = '\0';
        if (!strcmp(kv, "striping_factor") || !strcmp(kv, "striping_unit") ||
            !strcmp(kv, "cb_nodes") || !strcmp(kv, "cb_buffer_size") || !strncmp(kv, "romio_", 6))
            MPI_Info_set(info, kv, eq + 1);
    }
    return info;
}

/* Logs the value in effect of every hint the client gave (the test of the pass-through). */
static void log_hints(MPI_File fh, const msg *m)
{
    MPI_Info got;
    if (MPI_File_get_info(fh, &got) != MPI_SUCCESS)
        return;
    char line[1024] = "", buf[RFS_COLL_MAX_HINTS + 1];
    size_t used = 0;
    snprintf(buf, sizeof buf, "%s", m->hints);
    char *save = NULL;
    for (char *kv = strtok_r(buf, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            continue;
        *eq = '\0';
        char val[256] = "(not set)";
        int flag = 0;
        MPI_Info_get(got, kv, (int)sizeof val - 1, val, &flag);
        int n = snprintf(line + used, sizeof line - used, " %s=%s", kv, flag ? val : "(not set)");
        if (n < 0 || (size_t)n >= sizeof line - used)
            break;
        used += (size_t)n;
    }
    MPI_Info_free(&got);
    RFS_LOGI("mpiio: process %d opened %s with %d processes; hints in effect:%s", me, m->path,
             nprocs, used ? line : " (none given)");
}

static int amode_of(uint32_t flags)
{
    switch (flags & RFS_O_ACCMODE) {
    case RFS_O_RDONLY: return MPI_MODE_RDONLY;
    case RFS_O_WRONLY: return MPI_MODE_WRONLY;
    default: return MPI_MODE_RDWR;
    }
}

/* The group's MPI file for the collective open id, opened by all on its first call. */
static int file_for(const msg *m, MPI_File *fh, char *err, size_t cap)
{
    for (open_file *f = files; f; f = f->next)
        if (!memcmp(f->id, m->h.id, RFS_COLL_ID_LEN)) {
            *fh = f->fh;
            return 0;
        }
    open_file *f = calloc(1, sizeof *f);
    MPI_Info info = info_of(m->hints);
    /* collective: every process gets here for the same command */
    int rc = MPI_File_open(comm, m->path, amode_of(m->h.flags), info, f ? &f->fh : fh);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS || !f) {
        if (rc == MPI_SUCCESS)
            MPI_File_close(fh);
        mpi_message(rc, err, cap);
        free(f);
        return -1;
    }
    memcpy(f->id, m->h.id, RFS_COLL_ID_LEN);
    f->next = files;
    files = f;
    *fh = f->fh;
    log_hints(f->fh, m);
    return 0;
}

static void close_file(const uint8_t id[RFS_COLL_ID_LEN])
{
    for (open_file **pp = &files; *pp; pp = &(*pp)->next)
        if (!memcmp((*pp)->id, id, RFS_COLL_ID_LEN)) {
            open_file *f = *pp;
            *pp = f->next;
            MPI_File_close(&f->fh);
            free(f);
            return;
        }
}

/* One run of one part, in file order for the collective call. */
typedef struct run {
    uint64_t off, len;
    rfsd_piece *p;
    uint64_t mem; /* where its bytes are in the part's data */
} run;

static int by_offset(const void *a, const void *b)
{
    const run *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static run *runs_of(rfsd_piece *parts, size_t *nruns)
{
    size_t n = 0;
    for (rfsd_piece *p = parts; p; p = p->next)
        n += p->n;
    run *r = malloc((n ? n : 1) * sizeof *r);
    if (!r)
        return NULL;
    size_t k = 0;
    for (rfsd_piece *p = parts; p; p = p->next) {
        uint64_t mem = 0;
        for (size_t i = 0; i < p->n; i++) {
            r[k++] = (run){p->ext[i].offset, p->ext[i].length, p, mem};
            mem += p->ext[i].length;
        }
    }
    qsort(r, n, sizeof *r, by_offset);
    *nruns = n;
    return r;
}

/* Writes: the file type has to increase, so a run another part already covers is cut to what
 * is left (overlapping collective writes have no defined winner in MPI either). */
static size_t cut_overlaps(run *r, size_t n)
{
    size_t k = 0;
    uint64_t end = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && r[i].off < end) {
            uint64_t d = end - r[i].off;
            if (d >= r[i].len)
                continue;
            r[i].off += d;
            r[i].mem += d;
            r[i].len -= d;
        }
        r[k++] = r[i];
        end = r[k - 1].off + r[k - 1].len;
    }
    return k;
}

/* File runs -> an hindexed file type (and, for writes, memory type at absolute addresses). */
static int make_types(const run *r, size_t n, int is_write, MPI_Datatype *ftype,
                      MPI_Datatype *mtype)
{
    int *lens = malloc((n ? n : 1) * sizeof *lens);
    MPI_Aint *offs = malloc((n ? n : 1) * sizeof *offs);
    MPI_Aint *addrs = is_write ? malloc((n ? n : 1) * sizeof *addrs) : NULL;
    int ok = lens && offs && (!is_write || addrs);
    for (size_t i = 0; ok && i < n; i++) {
        lens[i] = (int)r[i].len;
        offs[i] = (MPI_Aint)r[i].off;
        if (is_write)
            MPI_Get_address(r[i].p->wdata + r[i].mem, &addrs[i]);
    }
    ok = ok && MPI_Type_create_hindexed((int)n, lens, offs, MPI_BYTE, ftype) == MPI_SUCCESS &&
         MPI_Type_commit(ftype) == MPI_SUCCESS;
    if (ok && is_write)
        ok = MPI_Type_create_hindexed((int)n, lens, addrs, MPI_BYTE, mtype) == MPI_SUCCESS &&
             MPI_Type_commit(mtype) == MPI_SUCCESS;
    free(lens);
    free(offs);
    free(addrs);
    return ok ? 0 : -1;
}

/* Reads: the union of the runs (parts may read the same bytes), in place; *total its bytes. */
static size_t merge_runs(run *r, size_t n, run *u, uint64_t *total)
{
    size_t k = 0;
    *total = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].len == 0)
            continue;
        if (k && r[i].off <= u[k - 1].off + u[k - 1].len) {
            uint64_t end = r[i].off + r[i].len;
            if (end > u[k - 1].off + u[k - 1].len) {
                *total += end - (u[k - 1].off + u[k - 1].len);
                u[k - 1].len = end - u[k - 1].off;
            }
            continue;
        }
        u[k] = (run){r[i].off, r[i].len, NULL, *total};
        *total += r[i].len;
        k++;
    }
    return k;
}

/* Bytes of a part's runs, in order, before the end of file (a read stops at the first run
 * that reaches past it, as a stream does). */
static uint64_t before_eof(const rfsd_piece *p, uint64_t size)
{
    uint64_t got = 0;
    for (size_t i = 0; i < p->n; i++) {
        uint64_t o = p->ext[i].offset, l = p->ext[i].length;
        if (o + l <= size) {
            got += l;
            continue;
        }
        if (size > o)
            got += size - o;
        break;
    }
    return got;
}

/* The collective call itself: this process's parts (maybe none) in one MPI-IO call. */
static int collective(MPI_File fh, const msg *m, rfsd_piece *parts, char *err, size_t cap)
{
    size_t n;
    run *r = runs_of(parts, &n);
    run *u = NULL;
    uint8_t *ubuf = NULL;
    uint64_t total = 0;
    int failed_here = !r;
    if (r && m->h.is_write) {
        n = cut_overlaps(r, n);
    } else if (r) {
        u = malloc((n ? n : 1) * sizeof *u);
        n = u ? merge_runs(r, n, u, &total) : 0;
        ubuf = u ? malloc(total ? total : 1) : NULL;
        failed_here = !u || !ubuf || total > INT32_MAX;
    }
    /* even a process that could not prepare takes part, with nothing, so the others finish */
    if (failed_here)
        n = 0;
    MPI_Datatype ftype = MPI_BYTE, mtype = MPI_BYTE;
    const run *fr = m->h.is_write ? r : u;
    int typed = n > 0 && make_types(fr, n, m->h.is_write, &ftype, &mtype) == 0;
    if (n > 0 && !typed) {
        failed_here = 1;
        ftype = mtype = MPI_BYTE;
    }
    MPI_Status st;
    int rc = MPI_File_set_view(fh, 0, MPI_BYTE, typed ? ftype : MPI_BYTE, "native", MPI_INFO_NULL);
    if (rc == MPI_SUCCESS && m->h.is_write)
        rc = MPI_File_write_at_all(fh, 0, typed ? MPI_BOTTOM : NULL, typed ? 1 : 0, mtype, &st);
    else if (rc == MPI_SUCCESS)
        rc = MPI_File_read_at_all(fh, 0, ubuf, typed ? (int)total : 0, MPI_BYTE, &st);
    if (typed) {
        MPI_Type_free(&ftype);
        if (m->h.is_write)
            MPI_Type_free(&mtype);
    }
    if (rc != MPI_SUCCESS)
        mpi_message(rc, err, cap);
    else if (failed_here)
        snprintf(err, cap, "server out of memory");
    if (rc == MPI_SUCCESS && !failed_here && !m->h.is_write) {
        MPI_Offset size = 0;
        MPI_File_get_size(fh, &size);
        /* each part's bytes from the union, where the union holds them */
        run *rs;
        size_t nr;
        if ((rs = runs_of(parts, &nr))) {
            size_t j = 0;
            for (size_t i = 0; i < nr; i++) {
                while (j + 1 < n && u[j].off + u[j].len <= rs[i].off)
                    j++;
                if (rs[i].len)
                    memcpy(rs[i].p->rbuf + rs[i].mem, ubuf + u[j].mem + (rs[i].off - u[j].off),
                           rs[i].len);
            }
            free(rs);
        } else {
            failed_here = 1;
            snprintf(err, cap, "server out of memory");
        }
        for (rfsd_piece *p = parts; p; p = p->next)
            p->got = before_eof(p, (uint64_t)size);
    }
    free(r);
    free(u);
    free(ubuf);
    return rc != MPI_SUCCESS || failed_here ? -1 : 0;
}

static void exec_call(const msg *m)
{
    rfsd_piece *parts = take_parts(&m->h);
    char err[512] = "";
    MPI_File fh;
    int64_t t0 = rfs_now_ns();
    int rc = file_for(m, &fh, err, sizeof err);
    const char *what = m->h.is_write ? "collective write" : "collective read";
    int64_t t1 = rfs_now_ns();
    if (rc == 0)
        rc = collective(fh, m, parts, err, sizeof err);
    else
        RFS_LOGE("mpiio: MPI_File_open of %s by the group: %s", m->path, err);
    RFS_LOGD("mpiio: %s call %u of %s: open %.1f ms, call %.1f ms", what, m->h.seq, m->path,
             (double)(t1 - t0) / 1e6, (double)(rfs_now_ns() - t1) / 1e6);
    while (parts) {
        rfsd_piece *p = parts;
        parts = p->next;
        char where[300];
        snprintf(where, sizeof where, "%s: %s", p->shown, what);
        finish(p, rc ? RFS_E_IO : RFS_OK, "%s through the server group's MPI-IO: %s", where, err);
    }
}

static void abort_call(const msg *m)
{
    rfsd_piece *parts = take_parts(&m->h);
    while (parts) {
        rfsd_piece *p = parts;
        parts = p->next;
        char n[96];
        snprintf(n, sizeof n, "%u client ranks within %u ms", m->h.nranks, timeout_ms);
        finish(p, RFS_E_TIMEOUT,
               "%s: a collective call did not reach the server group from all %s (a client "
               "rank or a server process failed; rfsd --coll-timeout-ms)",
               p->shown, n);
    }
}

/* Runs one command, on every process in the same order. 1: STOP. */
static int run_cmd(const msg *m)
{
    switch (m->h.kind) {
    case CMD_EXEC: exec_call(m); return 0;
    case CMD_ABORT: abort_call(m); return 0;
    case CMD_CLOSE: close_file(m->h.id); return 0;
    case CMD_STOP:
        while (files)
            close_file(files->id);
        return 1;
    default: return 0;
    }
}

/* Process 0: sends a command to the others, then runs it here. */
static int broadcast_cmd(msg *m, int kind)
{
    m->h.kind = (uint16_t)kind;
    uint8_t out[MSG_MAX];
    int len = pack(m, out);
    for (int i = 1; i < nprocs; i++)
        MPI_Send(out, len, MPI_BYTE, i, TAG_CMD, comm);
    return run_cmd(m);
}

/* Process 0: one more part (or close) of a call; EXEC or CLOSE once all are in. 1: STOP. */
static void count_note(const msg *m)
{
    tally **pp = &tallies;
    while (*pp && !(!memcmp((*pp)->m.h.id, m->h.id, RFS_COLL_ID_LEN) && (*pp)->m.h.seq == m->h.seq))
        pp = &(*pp)->next;
    if (!*pp) {
        tally *t = calloc(1, sizeof *t);
        if (!t) {
            RFS_LOGE("mpiio: out of memory counting a collective call's parts");
            return;
        }
        t->m = *m;
        t->first_ns = rfs_now_ns();
        *pp = t;
    }
    tally *t = *pp;
    if (++t->count < t->m.h.nranks)
        return;
    *pp = t->next;
    broadcast_cmd(&t->m, m->h.kind == NOTE_CLOSE ? CMD_CLOSE : CMD_EXEC);
    free(t);
}

static void expire_tallies(void)
{
    int64_t now = rfs_now_ns();
    for (tally **pp = &tallies; *pp;) {
        tally *t = *pp;
        if (t->m.h.kind == NOTE_IO && now - t->first_ns > (int64_t)timeout_ms * 1000000) {
            *pp = t->next;
            RFS_LOGW("mpiio: %s: collective call %u had %u of %u parts after %u ms: aborted",
                     t->m.path, t->m.h.seq, t->count, t->m.h.nranks, timeout_ms);
            broadcast_cmd(&t->m, CMD_ABORT);
            free(t);
        } else {
            pp = &t->next;
        }
    }
}

/* The parts handed over since the last look: noted (to process 0, or counted here). */
static int take_inbox(void)
{
    pthread_mutex_lock(&mu);
    rfsd_piece *in = inbox;
    inbox = NULL;
    pthread_mutex_unlock(&mu);
    /* oldest first: the order the workers handed them over */
    rfsd_piece *rev = NULL;
    while (in) {
        rfsd_piece *p = in;
        in = p->next;
        p->next = rev;
        rev = p;
    }
    int any = rev != NULL;
    while (rev) {
        rfsd_piece *p = rev;
        rev = p->next;
        msg m;
        to_msg(p, p->kind == RFSD_PIECE_CLOSE ? NOTE_CLOSE : NOTE_IO, &m);
        if (p->kind == RFSD_PIECE_IO) {
            pthread_mutex_lock(&mu);
            p->next = waiting;
            waiting = p;
            pthread_mutex_unlock(&mu);
        } else {
            free(p->path); /* a CLOSE part's own copy */
            free(p);
        }
        if (me == 0) {
            count_note(&m);
        } else {
            uint8_t out[MSG_MAX];
            MPI_Send(out, pack(&m, out), MPI_BYTE, 0, TAG_NOTE, comm);
        }
    }
    return any;
}

static void nap(void)
{
    struct timespec ts = {0, IDLE_WAIT_NS};
    nanosleep(&ts, NULL);
}

static void *mpi_thread(void *arg)
{
    (void)arg;
    MPI_Request note_rq = MPI_REQUEST_NULL, cmd_rq = MPI_REQUEST_NULL;
    if (me == 0 && nprocs > 1)
        MPI_Irecv(note_in, MSG_MAX, MPI_BYTE, MPI_ANY_SOURCE, TAG_NOTE, comm, &note_rq);
    if (me != 0)
        MPI_Irecv(cmd_in, MSG_MAX, MPI_BYTE, 0, TAG_CMD, comm, &cmd_rq);
    int stopped = 0;
    while (!stopped) {
        int busy = take_inbox();
        MPI_Status st;
        int flag = 0;
        if (me == 0) {
            if (note_rq != MPI_REQUEST_NULL && MPI_Test(&note_rq, &flag, &st) == MPI_SUCCESS &&
                flag) {
                int len = 0;
                MPI_Get_count(&st, MPI_BYTE, &len);
                msg m;
                unpack(note_in, len, &m);
                MPI_Irecv(note_in, MSG_MAX, MPI_BYTE, MPI_ANY_SOURCE, TAG_NOTE, comm, &note_rq);
                if (m.h.kind == NOTE_IO || m.h.kind == NOTE_CLOSE)
                    count_note(&m);
                busy = 1;
            }
            expire_tallies();
            if (atomic_load(&stop_asked)) {
                msg m;
                memset(&m, 0, sizeof m);
                stopped = broadcast_cmd(&m, CMD_STOP);
            }
        } else if (MPI_Test(&cmd_rq, &flag, &st) == MPI_SUCCESS && flag) {
            int len = 0;
            MPI_Get_count(&st, MPI_BYTE, &len);
            msg m;
            unpack(cmd_in, len, &m);
            stopped = run_cmd(&m);
            if (!stopped)
                MPI_Irecv(cmd_in, MSG_MAX, MPI_BYTE, 0, TAG_CMD, comm, &cmd_rq);
            busy = 1;
        }
        if (!busy && !stopped)
            nap();
    }
    if (note_rq != MPI_REQUEST_NULL) {
        MPI_Cancel(&note_rq);
        MPI_Wait(&note_rq, MPI_STATUS_IGNORE);
    }
    /* parts still waiting (their calls never completed): their clients hear why */
    pthread_mutex_lock(&mu);
    rfsd_piece *left = waiting;
    waiting = NULL;
    pthread_mutex_unlock(&mu);
    while (left) {
        rfsd_piece *p = left;
        left = p->next;
        finish(p, RFS_E_IO, "%s: %s: the server group is stopping", p->shown, "collective call");
    }
    atomic_store(&running, 0);
    return NULL;
}

int rfsd_coll_mpi_start(unsigned max_wait, unsigned timeout)
{
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &nprocs);
    max_waiting = max_wait ? max_wait : 1;
    timeout_ms = timeout;
    atomic_store(&running, 1);
    if (pthread_create(&thread, NULL, mpi_thread, NULL)) {
        atomic_store(&running, 0);
        RFS_LOGE("mpiio: cannot start the MPI thread");
        return -1;
    }
    RFS_LOGI("mpiio backend: process %d of %d; collective calls become MPI-IO collectives", me,
             nprocs);
    return 0;
}

int rfsd_coll_mpi_running(void)
{
    return atomic_load(&running);
}

int rfsd_coll_submit(rfsd_piece *p)
{
    pthread_mutex_lock(&mu);
    if (p->kind == RFSD_PIECE_IO) {
        /* a waiting part holds a worker: the last one stays free for everything else */
        if (nwaiting >= max_waiting || !atomic_load(&running)) {
            pthread_mutex_unlock(&mu);
            return atomic_load(&running)
                       ? rfs_fail(RFS_E_BUSY,
                                  "%s: %u collective parts wait on this server process already "
                                  "(rfsd --threads)",
                                  p->shown, nwaiting)
                       : rfs_fail(RFS_E_IO, "%s: the server group is stopping", p->shown);
        }
        nwaiting++;
    }
    p->next = inbox;
    inbox = p;
    pthread_mutex_unlock(&mu);
    return RFS_OK;
}

int rfsd_coll_wait(rfsd_piece *p)
{
    pthread_mutex_lock(&mu);
    while (!p->done)
        pthread_cond_wait(&done_cv, &mu);
    pthread_mutex_unlock(&mu);
    if (p->rc)
        return rfs_fail(p->rc, "%s", p->msg);
    return RFS_OK;
}

void rfsd_coll_mpi_stop(void)
{
    if (!atomic_load(&running) && !thread)
        return;
    atomic_store(&stop_asked, 1);
    /* process 0 sends STOP; the others end on it. Bounded: a group whose process 0 is gone
     * cannot finalize, and this one leaves without. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    if (pthread_timedjoin_np(thread, NULL, &until) != 0) {
        RFS_LOGW("mpiio: the group did not stop together within 10 s; leaving without "
                 "MPI_Finalize");
        return;
    }
    MPI_Comm_free(&comm);
    MPI_Finalize();
}
