/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* File versions from replies (docs/protocol.md "File versions"): ABT's journal must know the
 * file's size and mtime after its last delivery, so that `rfs recover` can tell another
 * writer's change from its own. An rfsd with RFS_FEAT_VER puts that version in the reply of
 * every write or size change that asks (RFS_F_VER), read under the write's own ordering on
 * the server; before, a separate STAT was sent after the delivery, which a writer dying in
 * between never sent, and which cost a round trip per file opened.
 *
 * A file asks only once rfs_file_version was called for it (ABT does at open): the server
 * then serialises that file's writes where it would not otherwise (docs/protocol.md). Each
 * connection keeps the handles of such files (fh -> box); rfs_conn_start marks their writes,
 * and the receiver notes the reply's version in the box before the caller is woken, so when a
 * write returned the box holds its version or a newer one. */
#include "client/client.h"

#include "common/debug.h"
#include "common/err.h"

#include <stdlib.h>

void rfs_verbox_init(rfs_verbox *b)
{
    pthread_mutex_init(&b->mu, NULL);
    b->tracking = b->known = 0;
    b->size = 0;
    b->mtime_ns = 0;
    b->epoch = 0;
}

void rfs_verbox_destroy(rfs_verbox *b)
{
    pthread_mutex_destroy(&b->mu);
}

uint64_t rfs_verbox_epoch(rfs_verbox *b)
{
    pthread_mutex_lock(&b->mu);
    uint64_t e = b->epoch;
    pthread_mutex_unlock(&b->mu);
    return e;
}

void rfs_verbox_note(rfs_verbox *b, uint64_t sent_epoch, uint64_t size, int64_t mtime_ns)
{
    pthread_mutex_lock(&b->mu);
    /* Nothing arrived since this request was sent: the server applied it after whatever the
     * box holds. Otherwise the two were in flight together: the larger (mtime, size) is the
     * later one (a tie is a state recovery could not tell apart anyway). */
    int newer = !b->known || sent_epoch == b->epoch || mtime_ns > b->mtime_ns ||
                (mtime_ns == b->mtime_ns && size > b->size);
    if (newer && (!b->known || size != b->size || mtime_ns != b->mtime_ns)) {
        b->known = 1;
        b->size = size;
        b->mtime_ns = mtime_ns;
        b->epoch++;
    } else if (newer) {
        b->epoch++; /* same version, but later: still orders the requests sent after it */
    }
    pthread_mutex_unlock(&b->mu);
}

/* c->lock held. */
static rfs_verbox *vreg_find(rfs_conn *c, uint32_t fh)
{
    RFS_ASSERT_HELD(&c->lock);
    for (size_t i = 0; i < c->nvreg; i++)
        if (c->vreg[i].fh == fh)
            return c->vreg[i].box;
    return NULL;
}

void rfs_conn_track(rfs_conn *c, uint32_t fh, rfs_verbox *box)
{
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nvreg; i++)
        if (c->vreg[i].fh == fh) {
            c->vreg[i].box = box;
            pthread_mutex_unlock(&c->lock);
            return;
        }
    if (c->nvreg == c->vreg_cap) {
        size_t cap = c->vreg_cap ? c->vreg_cap * 2 : 4;
        struct rfs_vreg *n = realloc(c->vreg, cap * sizeof *n);
        if (!n) {
            /* Untracked: its writes do not ask, the box keeps an older version, and
             * recovery refuses rather than overwrites. */
            pthread_mutex_unlock(&c->lock);
            return;
        }
        c->vreg = n;
        c->vreg_cap = cap;
    }
    c->vreg[c->nvreg].fh = fh;
    c->vreg[c->nvreg].box = box;
    c->nvreg++;
    pthread_mutex_unlock(&c->lock);
}

void rfs_conn_untrack(rfs_conn *c, uint32_t fh, rfs_verbox *box)
{
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nvreg; i++)
        if (c->vreg[i].fh == fh && c->vreg[i].box == box) {
            c->vreg[i] = c->vreg[--c->nvreg];
            break;
        }
    pthread_mutex_unlock(&c->lock);
}

static int versioned_fh(const rfs_req *q, uint32_t *fh)
{
    if (!rfs_op_has(q->op, RFS_OPF_MUTATES))
        return 0; /* OPEN asks for its version itself (file.c) */
    switch (q->op) {
    case RFS_OP_PWRITE: *fh = q->u.pwrite.fh; return 1;
    case RFS_OP_PWRITEV: *fh = q->u.iov.fh; return 1;
    case RFS_OP_VIEW_WRITE: *fh = q->u.view_write.fh; return 1;
    case RFS_OP_SET_SIZE:
    case RFS_OP_PREALLOCATE: *fh = q->u.size.fh; return 1;
    default: return 0;
    }
}

void rfs_conn_ver_request(rfs_conn *c, rfs_call *call, rfs_req *req)
{
    call->vtrack = 0;
    if (!c->vers) {
        req->want_ver = 0; /* an older server refuses the flag */
        return;
    }
    uint32_t fh;
    if (!versioned_fh(req, &fh))
        return;
    rfs_verbox *b = vreg_find(c, fh);
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    if (b->tracking) {
        req->want_ver = 1;
        call->vtrack = 1;
        call->vfh = fh;
        call->vepoch = b->epoch;
    }
    pthread_mutex_unlock(&b->mu);
}

void rfs_conn_ver_reply(rfs_conn *c, rfs_call *call)
{
    if (!call->vtrack || !call->rep.has_ver)
        return;
    pthread_mutex_lock(&c->lock);
    rfs_verbox *b = vreg_find(c, call->vfh);
    if (b)
        rfs_verbox_note(b, call->vepoch, call->rep.ver.size, call->rep.ver.mtime_ns);
    pthread_mutex_unlock(&c->lock);
}

/* Only the box's lock: ABT calls this under its version table's lock, which must never wait
 * for a file's recovery (f->rw) to end. The OPEN always asked a server that can answer, so a
 * box that knows no version means a server that cannot. */
int rfs_file_version(rfs_file *f, uint64_t *size, int64_t *mtime_ns)
{
    rfs_verbox *b = &f->ver;
    pthread_mutex_lock(&b->mu);
    int known = b->known;
    if (known)
        b->tracking = 1;
    *size = b->size;
    *mtime_ns = b->mtime_ns;
    pthread_mutex_unlock(&b->mu);
    if (!known)
        return rfs_fail(RFS_E_UNSUPPORTED, "%s: the server does not report file versions",
                        f->label);
    return RFS_OK;
}

int rfs_file_known_size(rfs_file *f, uint64_t *size)
{
    pthread_mutex_lock(&f->ver.mu);
    int known = f->ver.known;
    if (known)
        *size = f->ver.size;
    pthread_mutex_unlock(&f->ver.mu);
    return known ? 0 : -1;
}
