/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfsd --backend mpiio, the request side (coll.h): COLL_JOIN and RFS_F_COLL list I/O. */
#include "coll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "conn.h"
#ifdef RFSD_HAVE_MPI
#include "coll_mpi.h"
#endif

int rfsd_coll_on(void)
{
#ifdef RFSD_HAVE_MPI
    return rfsd_coll_mpi_running();
#else
    return 0;
#endif
}

/* The file's path on this host, as every process of the group sees the shared file system:
 * MPI_File_open takes a name, and the handle's descriptor knows it. A FUSE file system
 * (GlusterFS) may have dropped the descriptor's dentry, which the kernel then shows with
 * " (deleted)" although the name is still the file's: the name counts only if it leads to
 * the descriptor's file now. */
static char *real_path(int fd)
{
    char link[64], path[RFS_MAX_PATH + 1];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0 || n >= (ssize_t)sizeof path - 1)
        return NULL;
    path[n] = '\0';
    static const char gone[] = " (deleted)";
    size_t len = (size_t)n, g = sizeof gone - 1;
    if (len > g && !strcmp(path + len - g, gone))
        path[len - g] = '\0';
    struct stat byname, byfd;
    if (stat(path, &byname) || fstat(fd, &byfd) || byname.st_dev != byfd.st_dev ||
        byname.st_ino != byfd.st_ino)
        return NULL;
    return strdup(path);
}

int rfsd_coll_join(rfsd_handle *h, const rfs_req *q)
{
    if (!rfsd_coll_on())
        return rfs_fail(RFS_E_UNSUPPORTED,
                        "%s: COLL_JOIN: this server does not run collective calls through "
                        "MPI-IO (rfsd --mpi --backend mpiio)",
                        h->path);
    if (h->coll) {
        if (!memcmp(h->coll->id, q->u.coll_join.id, RFS_COLL_ID_LEN) &&
            h->coll->nranks == q->u.coll_join.nranks)
            return RFS_OK; /* a repeat after a lost reply */
        return rfs_fail(RFS_E_INVAL, "%s: the handle joined another collective open already",
                        h->path);
    }
    rfsd_coll_member *m = calloc(1, sizeof *m);
    char *hints = malloc((size_t)q->u.coll_join.hints.len + 1);
    char *path = real_path(h->fd);
    if (!m || !hints || !path) {
        free(m);
        free(hints);
        int named = path != NULL;
        free(path);
        /* the client then runs its collective calls itself (every rank must have joined) */
        return named ? rfs_fail(RFS_E_NOMEM, "%s: COLL_JOIN: server out of memory", h->path)
                     : rfs_fail(RFS_E_IO,
                                "%s: COLL_JOIN: the file has no name on this host "
                                "that leads to it (removed or renamed?)",
                                h->path);
    }
    memcpy(hints, q->u.coll_join.hints.s, q->u.coll_join.hints.len);
    hints[q->u.coll_join.hints.len] = '\0';
    memcpy(m->id, q->u.coll_join.id, RFS_COLL_ID_LEN);
    m->nranks = q->u.coll_join.nranks;
    m->hints = hints;
    m->real_path = path;
    h->coll = m; /* COLL_JOIN is a barrier on the handle: nothing else runs on it now */
    return RFS_OK;
}

#ifdef RFSD_HAVE_MPI
static void fill_piece(rfsd_piece *p, const rfsd_handle *h, int kind)
{
    p->kind = kind;
    memcpy(p->id, h->coll->id, RFS_COLL_ID_LEN);
    p->nranks = h->coll->nranks;
    p->flags = h->flags;
    p->path = h->coll->real_path;
    p->hints = h->coll->hints;
    p->shown = h->path;
}
#endif

int rfsd_coll_io(rfsd_handle *h, const rfs_req *q, rfs_rep *rep, uint8_t **buf)
{
    if (!h->coll)
        return rfs_fail(RFS_E_INVAL,
                        "%s: collective list I/O on a handle that did not join a "
                        "collective open (COLL_JOIN)",
                        h->path);
#ifdef RFSD_HAVE_MPI
    rfsd_piece p;
    memset(&p, 0, sizeof p);
    fill_piece(&p, h, RFSD_PIECE_IO);
    /* numbered in the order the handle's parts run: the client sends one at a time */
    p.seq = h->coll->next_seq++;
    p.is_write = q->op == RFS_OP_PWRITEV;
    p.n = q->u.iov.count;
    p.ext = malloc((p.n ? p.n : 1) * sizeof *p.ext);
    if (!p.ext)
        return rfs_fail(RFS_E_NOMEM, "%s: server out of memory", h->path);
    for (size_t i = 0; i < p.n; i++) {
        rfs_extent_at(q->u.iov.ext, (uint32_t)i, &p.ext[i].offset, &p.ext[i].length);
        p.total += p.ext[i].length;
    }
    if (p.is_write) {
        p.wdata = q->data;
    } else if (!(*buf = malloc(p.total ? (size_t)p.total : 1))) {
        free(p.ext);
        return rfs_fail(RFS_E_NOMEM, "%s: server out of memory", h->path);
    }
    p.rbuf = *buf;
    int rc = rfsd_coll_submit(&p);
    if (rc == RFS_OK)
        rc = rfsd_coll_wait(&p);
    free(p.ext);
    if (rc)
        return rc;
    if (p.is_write) {
        rep->u.u64.value = p.total;
    } else {
        rep->data = *buf;
        rep->data_len = (uint32_t)p.got;
    }
    return RFS_OK;
#else
    (void)q, (void)rep, (void)buf;
    return rfs_fail(RFS_E_UNSUPPORTED, "%s: built without MPI", h->path);
#endif
}

static void forget(rfsd_handle *h)
{
    if (!h->coll)
        return;
    free(h->coll->hints);
    free(h->coll->real_path);
    free(h->coll);
    h->coll = NULL;
}

void rfsd_coll_leave(rfsd_handle *h)
{
    if (!h->coll)
        return;
#ifdef RFSD_HAVE_MPI
    /* the MPI thread frees the part and its own copy of the path */
    rfsd_piece *p = calloc(1, sizeof *p);
    if (p) {
        fill_piece(p, h, RFSD_PIECE_CLOSE);
        p->hints = NULL;
        p->path = strdup(h->coll->real_path);
        if (!p->path || rfsd_coll_submit(p) != RFS_OK) {
            free(p->path);
            free(p);
        }
    }
#endif
    forget(h);
}
