/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* A connection's reply queue (docs/design.md "Replies, pipelining and backpressure").
 *
 * Workers never block on a client's socket: a reply is sent at once if the socket takes it
 * without waiting, and whatever does not fit waits in the connection's queue, which the
 * connection's own writer thread drains as the client reads. A client that stops reading thus
 * holds up only itself (its requests stay in flight, so its reader stops at the in-flight
 * budget), never a worker. A queue that makes no progress for the send timeout
 * (rfsd --send-timeout-ms) breaks the connection. */
#ifndef RFSD_REPLY_H
#define RFSD_REPLY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"
#include "transport/transport.h"

/* Header, fixed fields and an error message: the largest part of a reply kept in the entry. */
#define RFSD_OUT_HEAD_MAX (RFS_HDR_SIZE + 2 + RFS_MAX_MSG + 64)

typedef struct rfsd_out rfsd_out;
struct rfsd_out {
    rfsd_out *next;
    /* Called exactly once when the frame is out (sent = 1) or dropped with its connection
     * (sent = 0), with no queue lock held. Until then the entry and its payload stay valid. */
    void (*done)(rfsd_out *o, int sent);
    void *ctx;
    size_t head_len;
    const uint8_t *tail; /* payload from memory, or NULL */
    size_t tail_len;
    int file_fd; /* payload sent from this file by the kernel, or -1 */
    uint64_t file_off;
    size_t file_len;
    size_t pos; /* bytes of the frame already sent */
    uint8_t head[RFSD_OUT_HEAD_MAX];
};

typedef struct rfsd_replyq {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* the writer waits here for frames to send */
    rfsd_out *head, *tail;
    int sending; /* a thread is writing to the socket: frames never interleave */
    int broken;  /* the socket failed or timed out: frames are dropped */
    int stop;
    _Atomic int64_t stall_ns; /* since when the head frame waits without a byte going out */
    rfs_transport *t;         /* the connection's transport (TCP or TLS), nonblocking */
    const char *peer;
    int timeout_ms;
    pthread_t writer;
    /* The link's drain rate, for compressing read replies (zreply.c): between two instants at
     * which the socket was full, the link took exactly what was sent in between. Updated by
     * the token holder only. */
    int64_t full_ns; /* the last such instant, 0 none */
    uint64_t sent_since_full;
    _Atomic uint64_t link_bps; /* smoothed, 0 until measured */
} rfsd_replyq;

/* Encodes r (header and fixed fields; an error's message) into o. The payload is not copied:
 * o points at r->data (or a LIST's entries), which must live until o->done. With file_fd >= 0
 * the r->data_len payload bytes are sent from that file at file_off instead (sendfile); if
 * the file then yields fewer bytes the frame cannot be completed and the connection breaks.
 * An encoding failure (our bug) turns the reply into an RFS_E_IO error reply. */
void rfsd_out_encode(rfsd_out *o, const rfs_rep *r, int file_fd, uint64_t file_off,
                     const char *peer);

/* t's socket must be nonblocking. Starts the writer thread. 0, or -1 when it cannot start. */
int rfsd_replyq_start(rfsd_replyq *q, rfs_transport *t, const char *peer, int timeout_ms);
/* Sends o now as far as the socket takes it without waiting; the rest is queued behind the
 * frames already waiting. o->done may run before this returns. */
void rfsd_replyq_submit(rfsd_replyq *q, rfsd_out *o);
/* 1 once the connection's socket failed: later frames are dropped. */
int rfsd_replyq_broken(rfsd_replyq *q);
/* Every submitted frame's done has run: stops and joins the writer. */
void rfsd_replyq_stop(rfsd_replyq *q);

#endif
