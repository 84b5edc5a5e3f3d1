/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Reply queue and writer thread of one connection (reply.h). */
#include "reply.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"

void rfsd_out_encode(rfsd_out *o, const rfs_rep *r, int file_fd, uint64_t file_off,
                     const char *peer)
{
    o->next = NULL;
    o->pos = 0;
    o->tail = NULL;
    o->tail_len = 0;
    o->file_fd = -1;
    o->file_off = 0;
    o->file_len = 0;
    rfs_rep lr = *r;
    if (r->status == 0 && r->op == RFS_OP_LIST && r->u.list.entries) {
        /* the entries go straight from the caller's buffer, after the fixed fields */
        o->tail = r->u.list.entries;
        o->tail_len = r->u.list.entries_len;
        lr.u.list.entries = NULL;
    } else if (r->status == 0 && file_fd >= 0 && r->data_len > 0) {
        o->file_fd = file_fd;
        o->file_off = file_off;
        o->file_len = r->data_len;
        lr.data = NULL;
    } else if (r->status == 0 && r->data_len > 0) {
        o->tail = r->data;
        o->tail_len = r->data_len;
    }
    if (r->pack_codec)
        lr.data_len = r->pack_raw_len; /* the frame as it would be raw, then packed */
    if (rfs_rep_encode(&lr, o->head, sizeof o->head, &o->head_len) == RFS_OK &&
        (!r->pack_codec || rfs_frame_add_pack(o->head, &o->head_len, sizeof o->head, r->pack_codec,
                                              r->pack_raw_len, r->data_len) == RFS_OK))
        return;
    /* our own bug; tell the client something rather than leave the request hanging */
    RFS_LOGE("%s: cannot encode %s reply: %s", peer, rfs_op_name(r->op), rfs_last_error());
    static const char msg[] = "server could not encode its reply";
    rfs_rep e = {.op = r->op, .id = r->id, .status = rfs_err_to_wire(RFS_E_IO)};
    e.u.err.s = msg;
    e.u.err.len = sizeof msg - 1;
    o->tail = NULL;
    o->tail_len = 0;
    o->file_fd = -1;
    o->file_len = 0;
    if (rfs_rep_encode(&e, o->head, sizeof o->head, &o->head_len) != RFS_OK)
        o->head_len = 0; /* cannot happen; an empty frame is at least not a corrupt one */
}

#define RATE_MIN_BYTES ((uint64_t)256 << 10)
#define RATE_MAX_GAP_NS 1000000000

/* The socket was found full: see rfsd_replyq.link_bps. A gap over a second may hide an idle
 * link (the client not reading is not the link's rate) and is not used. */
static void note_full(rfsd_replyq *q)
{
    int64_t now = rfs_now_ns();
    if (q->full_ns && now - q->full_ns < RATE_MAX_GAP_NS && q->sent_since_full >= RATE_MIN_BYTES) {
        double rate = (double)q->sent_since_full / ((double)(now - q->full_ns) / 1e9);
        uint64_t old = atomic_load(&q->link_bps);
        atomic_store(&q->link_bps,
                     old ? (uint64_t)(0.7 * (double)old + 0.3 * rate) : (uint64_t)rate);
    }
    q->full_ns = now;
    q->sent_since_full = 0;
}

/* Sends what the socket takes of o without waiting: 1 the frame is out, 0 the socket is full,
 * -1 the connection failed (logged). Only the token holder (q->sending) calls this. */
static int send_some(rfsd_replyq *q, rfsd_out *o)
{
    size_t mem = o->head_len + o->tail_len, total = mem + o->file_len;
    while (o->pos < total) {
        ssize_t n;
        if (o->pos < mem) {
            struct iovec iov[2];
            int cnt = 0;
            if (o->pos < o->head_len)
                iov[cnt++] = (struct iovec){o->head + o->pos, o->head_len - o->pos};
            if (o->tail_len) {
                size_t skip = o->pos > o->head_len ? o->pos - o->head_len : 0;
                iov[cnt++] = (struct iovec){(void *)(o->tail + skip), o->tail_len - skip};
            }
            n = rfs_transport_send_nb(q->t, iov, cnt, o->file_len != 0);
        } else {
            n = rfs_transport_sendfile_nb(q->t, o->file_fd, o->file_off + (o->pos - mem),
                                          total - o->pos);
            if (n == 0) {
                RFS_LOGI("%s: cannot send reply (file shrank while being sent); dropping the "
                         "connection",
                         q->peer);
                return -1;
            }
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                note_full(q);
                return 0;
            }
            if (errno == EPROTO)
                RFS_LOGI("%s; dropping the connection", rfs_last_error());
            else
                RFS_LOGI("%s: cannot send reply (%s); dropping the connection", q->peer,
                         strerror(errno));
            return -1;
        }
        o->pos += (size_t)n;
        q->sent_since_full += (uint64_t)n;
        atomic_store_explicit(&q->stall_ns, rfs_now_ns(), memory_order_relaxed);
    }
    return 1;
}

/* Sends queued frames, oldest first, until the queue is empty (1), the socket is full (0) or
 * the connection failed (-1). Frames sent are pushed on *done. Caller holds the token. */
static int push(rfsd_replyq *q, rfsd_out **done)
{
    for (;;) {
        pthread_mutex_lock(&q->mu);
        rfsd_out *o = q->head;
        pthread_mutex_unlock(&q->mu);
        if (!o)
            return 1;
        int r = send_some(q, o);
        if (r != 1)
            return r;
        pthread_mutex_lock(&q->mu);
        q->head = o->next;
        if (!q->head)
            q->tail = NULL;
        pthread_mutex_unlock(&q->mu);
        o->next = *done;
        *done = o;
    }
}

static void finish(rfsd_out *list, int sent)
{
    while (list) {
        rfsd_out *next = list->next;
        list->done(list, sent); /* may free list */
        list = next;
    }
}

/* Gives the token back after push returned r. Frames left over go to the writer; after a
 * failure every waiting frame is dropped and the socket shut, which also ends the reader. */
static void release(rfsd_replyq *q, int r, rfsd_out *done)
{
    rfsd_out *dropped = NULL;
    pthread_mutex_lock(&q->mu);
    q->sending = 0;
    if (r < 0) {
        q->broken = 1;
        dropped = q->head;
        q->head = q->tail = NULL;
    } else if (q->head) {
        pthread_cond_signal(&q->cv); /* also frames queued while we held the token */
    }
    pthread_mutex_unlock(&q->mu);
    if (r < 0)
        rfs_transport_shutdown(q->t);
    finish(done, 1);
    finish(dropped, 0);
}

/* Waits until the socket can take more: 0, or -1 when nothing went out for the send timeout. */
static int wait_writable(rfsd_replyq *q)
{
    for (;;) {
        int64_t since = atomic_load_explicit(&q->stall_ns, memory_order_relaxed);
        int64_t left = since + (int64_t)q->timeout_ms * 1000000 - rfs_now_ns();
        if (left <= 0) {
            RFS_LOGI("%s: the client read none of its replies for %d ms; dropping the "
                     "connection (rfsd --send-timeout-ms)",
                     q->peer, q->timeout_ms);
            return -1;
        }
        struct pollfd pf = {.fd = q->t->fd, .events = rfs_transport_wants(q->t, POLLOUT)};
        int n = poll(&pf, 1, (int)((left + 999999) / 1000000));
        if (n > 0)
            return 0; /* writable, or an error that the next send reports */
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

static void *writer_main(void *arg)
{
    rfsd_replyq *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->stop && (!q->head || q->sending))
            pthread_cond_wait(&q->cv, &q->mu);
        if (!q->head || q->sending)
            break; /* stopping, nothing left */
        q->sending = 1;
        pthread_mutex_unlock(&q->mu);
        rfsd_out *done = NULL;
        int r;
        while ((r = push(q, &done)) == 0) {
            finish(done, 1); /* their requests end now, not after the client's next read */
            done = NULL;
            if (wait_writable(q)) {
                r = -1;
                break;
            }
        }
        release(q, r, done);
        pthread_mutex_lock(&q->mu);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int rfsd_replyq_start(rfsd_replyq *q, rfs_transport *t, const char *peer, int timeout_ms)
{
    memset(q, 0, sizeof *q);
    q->t = t;
    q->peer = peer;
    q->timeout_ms = timeout_ms;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    int e = pthread_create(&q->writer, &attr, writer_main, q);
    pthread_attr_destroy(&attr);
    if (e) {
        pthread_mutex_destroy(&q->mu);
        pthread_cond_destroy(&q->cv);
        return -1;
    }
    return 0;
}

void rfsd_replyq_submit(rfsd_replyq *q, rfsd_out *o)
{
    o->next = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->broken) {
        pthread_mutex_unlock(&q->mu);
        o->done(o, 0);
        return;
    }
    if (q->tail) {
        q->tail->next = o;
    } else {
        q->head = o;
        atomic_store_explicit(&q->stall_ns, rfs_now_ns(), memory_order_relaxed);
    }
    q->tail = o;
    if (q->sending) { /* the holder sends it, or hands it to the writer when it gives up */
        pthread_mutex_unlock(&q->mu);
        return;
    }
    q->sending = 1;
    pthread_mutex_unlock(&q->mu);
    rfsd_out *done = NULL;
    int r = push(q, &done);
    release(q, r, done);
}

int rfsd_replyq_broken(rfsd_replyq *q)
{
    pthread_mutex_lock(&q->mu);
    int b = q->broken;
    pthread_mutex_unlock(&q->mu);
    return b;
}

void rfsd_replyq_stop(rfsd_replyq *q)
{
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->writer, NULL);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
}
