/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The connection layer against a scripted fake server (in-process, 127.0.0.1:0): replies out
 * of order, a server that dies, stays silent, sends too much, lies about ids, fails mutual
 * authentication or does not support an op; and connection sharing in the pool. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "client/client.h"
#include "common/auth.h"
#include "common/err.h"
#include "proto/proto.h"
#include "rfs/rfs.h"

enum mode {
    M_NORMAL,
    M_REVERSE,     /* collect `collect` PREADs, answer them last to first */
    M_DIE_ON_DATA, /* close the connection at the first PREAD/PWRITE */
    M_SILENT,      /* never answer PREAD */
    M_OVERLONG,    /* answer PREAD with one byte more than asked */
    M_UNKNOWN_ID,  /* answer PREAD with an id nobody asked for */
    M_IMPOSTOR,    /* AUTH reply with a MAC made without the token */
    M_HALF_STALL,  /* PREAD reply: full header, half the payload, then nothing more */
    M_HALF_DIE,    /* PREAD reply: full header, half the payload, then close */
    M_REJECT_AUTH, /* AUTH reply with an error */
    M_AUTH_LATE,   /* AUTH reply held until the next frame has arrived, then sent */
    M_AUTH_AFTER,  /* AUTH reply held; the next request is answered first */
    M_VIEWS,       /* announces views; a SET_VIEW is answered only once the next frame came */
    M_HOLD_WRITES, /* PWRITE replies held until a CLOSE comes, then sent before its */
    M_HOLD_NOSPC,  /* the same, the first held write answered "disk full" */
};

#define MAX_CONNS 8

typedef struct fake {
    int lfd;
    unsigned port;
    enum mode mode;
    int collect;
    const char *token;
    pthread_t acceptor;
    pthread_mutex_t lock;
    int fds[MAX_CONNS];
    pthread_t handlers[MAX_CONNS];
    int nconns;
    uint16_t after_auth_op; /* first frame read after AUTH (the pipelined request) */
    int data_frames;        /* PWRITE frames received */
    uint16_t after_view_op; /* M_VIEWS: the frame that came while a SET_VIEW was unanswered */
    int handlers_done;      /* handlers that have read to the end and quit */
    int held_at_close;      /* M_HOLD_*: PWRITE replies held when the CLOSE came */
} fake;

typedef struct handler_arg {
    fake *fk;
    int fd;
} handler_arg;

static uint8_t pattern(uint64_t off)
{
    return (uint8_t)(off * 31u + 7u);
}

static int read_full(int fd, void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void send_rep(int fd, rfs_rep *r, const void *payload, size_t plen)
{
    uint8_t buf[4096];
    size_t len;
    r->data_len = (uint32_t)plen;
    if (rfs_rep_encode(r, buf, sizeof buf, &len) != 0)
        fail_msg("fake: encode %s reply: %s", rfs_op_name(r->op), rfs_last_error());
    write_full(fd, buf, len);
    if (plen)
        write_full(fd, payload, plen);
}

static void send_err(int fd, uint16_t op, uint32_t id, int err, const char *msg)
{
    rfs_rep r;
    memset(&r, 0, sizeof r);
    r.op = op;
    r.id = id;
    r.status = rfs_err_to_wire(err);
    r.u.err.s = msg;
    r.u.err.len = (uint16_t)strlen(msg);
    send_rep(fd, &r, NULL, 0);
}

static void send_read(int fd, uint32_t id, uint64_t off, uint32_t len)
{
    uint8_t *d = malloc(len ? len : 1);
    for (uint32_t i = 0; i < len; i++)
        d[i] = pattern(off + i);
    rfs_rep r;
    memset(&r, 0, sizeof r);
    r.op = RFS_OP_PREAD;
    r.id = id;
    send_rep(fd, &r, d, len);
    free(d);
}

/* A PREAD reply that promises len bytes and delivers only half of them. */
static void send_half_read(int fd, uint32_t id, uint64_t off, uint32_t len)
{
    uint8_t hb[RFS_HDR_SIZE];
    rfs_rep r;
    memset(&r, 0, sizeof r);
    r.op = RFS_OP_PREAD;
    r.id = id;
    r.data_len = len;
    size_t n;
    if (rfs_rep_encode(&r, hb, sizeof hb, &n) != 0)
        fail_msg("fake: encode: %s", rfs_last_error());
    write_full(fd, hb, n);
    uint8_t *d = malloc(len / 2 + 1);
    for (uint32_t i = 0; i < len / 2; i++)
        d[i] = pattern(off + i);
    write_full(fd, d, len / 2);
    free(d);
}

static void *handler_main(void *arg)
{
    handler_arg *ha = arg;
    fake *fk = ha->fk;
    int fd = ha->fd;
    free(ha);
    uint8_t server_nonce[RFS_NONCE_LEN];
    memset(server_nonce, 0x42, sizeof server_nonce);
    struct {
        uint32_t id;
        uint64_t off;
        uint32_t len;
    } held[64];
    int nheld = 0;
    rfs_rep auth_rep; /* an AUTH reply held back (M_AUTH_LATE / M_AUTH_AFTER) */
    int auth_held = 0, auth_seen = 0;
    rfs_rep view_rep; /* a SET_VIEW reply held back (M_VIEWS) */
    int view_held = 0;
    struct timeval tv = {.tv_sec = 20}; /* no test hangs on a client that never sends */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (;;) {
        uint8_t hb[RFS_HDR_SIZE];
        if (read_full(fd, hb, sizeof hb))
            break;
        rfs_hdr h;
        if (rfs_hdr_decode(hb, RFS_FRAME_HARD_MAX, &h))
            break;
        uint8_t *body = malloc(h.body_len ? h.body_len : 1);
        if (h.body_len && read_full(fd, body, h.body_len)) {
            free(body);
            break;
        }
        rfs_req q;
        if (rfs_req_decode(&h, body, h.body_len, &q)) {
            free(body);
            break;
        }
        if (auth_seen && !fk->after_auth_op && q.op != RFS_OP_AUTH && q.op != RFS_OP_SESSION) {
            pthread_mutex_lock(&fk->lock);
            fk->after_auth_op = q.op;
            pthread_mutex_unlock(&fk->lock);
        }
        if (q.op == RFS_OP_PWRITE) {
            pthread_mutex_lock(&fk->lock);
            fk->data_frames++;
            pthread_mutex_unlock(&fk->lock);
        }
        if (auth_held && fk->mode == M_AUTH_LATE) {
            send_rep(fd, &auth_rep, NULL, 0);
            auth_held = 0;
        }
        rfs_rep r;
        memset(&r, 0, sizeof r);
        r.op = q.op;
        r.id = q.id;
        int quit = 0;
        switch (q.op) {
        case RFS_OP_HELLO:
            r.u.hello.version = RFS_PROTO_VERSION;
            r.u.hello.max_frame = q.u.hello.max_frame;
            r.u.hello.auth_required = fk->token != NULL;
            r.u.hello.features = fk->mode == M_VIEWS ? RFS_FEAT_VIEWS : 0;
            memcpy(r.u.hello.nonce, server_nonce, RFS_NONCE_LEN);
            send_rep(fd, &r, NULL, 0);
            break;
        case RFS_OP_AUTH: {
            uint8_t expect[RFS_MAC_LEN];
            rfs_auth_client_mac(fk->token, strlen(fk->token), server_nonce, q.u.auth.client_nonce,
                                expect);
            if (fk->mode == M_REJECT_AUTH || !rfs_auth_equal(expect, q.u.auth.mac, RFS_MAC_LEN)) {
                send_err(fd, q.op, q.id, RFS_E_AUTH, "bad token");
                break;
            }
            const char *secret = fk->mode == M_IMPOSTOR ? "not-the-token" : fk->token;
            rfs_auth_server_mac(secret, strlen(secret), server_nonce, q.u.auth.client_nonce,
                                r.u.auth.server_mac);
            auth_seen = 1;
            if (fk->mode == M_AUTH_LATE || fk->mode == M_AUTH_AFTER) {
                auth_rep = r;
                auth_held = 1;
                break;
            }
            send_rep(fd, &r, NULL, 0);
            break;
        }
        case RFS_OP_OPEN:
            r.u.open.fh = 7;
            send_rep(fd, &r, NULL, 0);
            break;
        case RFS_OP_CLOSE:
            if (fk->mode == M_HOLD_WRITES || fk->mode == M_HOLD_NOSPC) {
                pthread_mutex_lock(&fk->lock);
                fk->held_at_close = nheld;
                pthread_mutex_unlock(&fk->lock);
                for (int i = 0; i < nheld; i++) {
                    if (i == 0 && fk->mode == M_HOLD_NOSPC) {
                        send_err(fd, RFS_OP_PWRITE, held[i].id, RFS_E_NOSPC, "disk full");
                        continue;
                    }
                    rfs_rep w;
                    memset(&w, 0, sizeof w);
                    w.op = RFS_OP_PWRITE;
                    w.id = held[i].id;
                    w.u.u64.value = held[i].len;
                    send_rep(fd, &w, NULL, 0);
                }
                nheld = 0;
            }
            send_rep(fd, &r, NULL, 0);
            break;
        case RFS_OP_SYNC: send_rep(fd, &r, NULL, 0); break;
        case RFS_OP_SET_VIEW:
            if (fk->mode != M_VIEWS) {
                send_err(fd, q.op, q.id, RFS_E_UNSUPPORTED, "no views here");
                break;
            }
            view_rep = r;
            view_held = 1;
            break;
        case RFS_OP_VIEW_WRITE:
            if (view_held) {
                pthread_mutex_lock(&fk->lock);
                fk->after_view_op = q.op;
                pthread_mutex_unlock(&fk->lock);
                send_rep(fd, &view_rep, NULL, 0);
                view_held = 0;
            }
            r.u.u64.value = q.data_len;
            send_rep(fd, &r, NULL, 0);
            break;
        case RFS_OP_COUNTER:
            send_err(fd, q.op, q.id, RFS_E_UNSUPPORTED, "counters are not supported here");
            break;
        case RFS_OP_PWRITE:
            if (fk->mode == M_DIE_ON_DATA) {
                quit = 1;
                break;
            }
            if ((fk->mode == M_HOLD_WRITES || fk->mode == M_HOLD_NOSPC) &&
                nheld < (int)(sizeof held / sizeof held[0])) {
                held[nheld].id = q.id;
                held[nheld].off = q.u.pwrite.off;
                held[nheld].len = q.data_len;
                nheld++;
                break;
            }
            r.u.u64.value = q.data_len;
            send_rep(fd, &r, NULL, 0);
            break;
        case RFS_OP_PREAD:
            switch (fk->mode) {
            case M_DIE_ON_DATA: quit = 1; break;
            case M_SILENT: break;
            case M_HALF_STALL:
            case M_HALF_DIE:
                send_half_read(fd, q.id, q.u.pread.off, q.u.pread.len);
                quit = fk->mode == M_HALF_DIE;
                break;
            case M_OVERLONG: send_read(fd, q.id, q.u.pread.off, q.u.pread.len + 1); break;
            case M_UNKNOWN_ID: send_read(fd, q.id + 1000, q.u.pread.off, q.u.pread.len); break;
            case M_REVERSE:
                held[nheld].id = q.id;
                held[nheld].off = q.u.pread.off;
                held[nheld].len = q.u.pread.len;
                if (++nheld == fk->collect) {
                    while (nheld > 0) {
                        nheld--;
                        send_read(fd, held[nheld].id, held[nheld].off, held[nheld].len);
                    }
                }
                break;
            default: send_read(fd, q.id, q.u.pread.off, q.u.pread.len);
            }
            break;
        default: send_err(fd, q.op, q.id, RFS_E_UNSUPPORTED, "fake server");
        }
        if (auth_held && fk->mode == M_AUTH_AFTER && q.op != RFS_OP_AUTH) {
            send_rep(fd, &auth_rep, NULL, 0);
            auth_held = 0;
        }
        free(body);
        if (quit)
            break;
    }
    shutdown(fd, SHUT_RDWR);
    pthread_mutex_lock(&fk->lock);
    fk->handlers_done++;
    pthread_mutex_unlock(&fk->lock);
    return NULL;
}

static void *acceptor_main(void *arg)
{
    fake *fk = arg;
    for (;;) {
        int fd = accept(fk->lfd, NULL, NULL);
        if (fd < 0)
            return NULL;
        pthread_mutex_lock(&fk->lock);
        if (fk->nconns == MAX_CONNS) {
            pthread_mutex_unlock(&fk->lock);
            close(fd);
            continue;
        }
        handler_arg *ha = malloc(sizeof *ha);
        ha->fk = fk;
        ha->fd = fd;
        fk->fds[fk->nconns] = fd;
        pthread_create(&fk->handlers[fk->nconns], NULL, handler_main, ha);
        fk->nconns++;
        pthread_mutex_unlock(&fk->lock);
    }
}

static fake *fake_start(enum mode mode, const char *token)
{
    fake *fk = calloc(1, sizeof *fk);
    fk->mode = mode;
    fk->token = token;
    pthread_mutex_init(&fk->lock, NULL);
    fk->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fk->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fk->lfd, 16), 0);
    socklen_t al = sizeof a;
    getsockname(fk->lfd, (struct sockaddr *)&a, &al);
    fk->port = ntohs(a.sin_port);
    pthread_create(&fk->acceptor, NULL, acceptor_main, fk);
    return fk;
}

static int fake_conns(fake *fk)
{
    pthread_mutex_lock(&fk->lock);
    int n = fk->nconns;
    pthread_mutex_unlock(&fk->lock);
    return n;
}

static void fake_stop(fake *fk)
{
    shutdown(fk->lfd, SHUT_RDWR);
    pthread_join(fk->acceptor, NULL);
    for (int i = 0; i < fk->nconns; i++) {
        shutdown(fk->fds[i], SHUT_RDWR);
        pthread_join(fk->handlers[i], NULL);
        close(fk->fds[i]);
    }
    close(fk->lfd);
    pthread_mutex_destroy(&fk->lock);
    free(fk);
}

static void name_of(fake *fk, char *buf, size_t cap)
{
    snprintf(buf, cap, "rfs:127.0.0.1:%u:/f", fk->port);
}

/* rt NULL: the default runtime, as rfs_open uses. */
static rfs_file *open_in(rfs_runtime *rt, fake *fk, const rfs_options *o)
{
    char name[64];
    name_of(fk, name, sizeof name);
    rfs_file *f = NULL;
    int rc = rfs_open_in(rt, name, RFS_O_RDWR, 0, o, &f);
    if (rc)
        fail_msg("open %s: %s", name, rfs_last_error());
    return f;
}

static rfs_file *open_ok(fake *fk, const rfs_options *o)
{
    return open_in(NULL, fk, o);
}

/* Waits (bounded: 10 s) until the fake saw n connections end; returns how many did. */
static int wait_conns_closed(fake *fk, int n)
{
    int done = 0;
    for (int i = 0; i < 10000; i++) {
        pthread_mutex_lock(&fk->lock);
        done = fk->handlers_done;
        pthread_mutex_unlock(&fk->lock);
        if (done >= n)
            break;
        usleep(1000);
    }
    return done;
}

static void test_replies_out_of_order(void **state)
{
    (void)state;
    fake *fk = fake_start(M_REVERSE, NULL);
    fk->collect = 8;
    rfs_options o = {.max_frame = RFS_FRAME_MIN, .window = 8, .token = ""};
    rfs_file *f = open_ok(fk, &o);
    size_t chunk = rfs_chunk_for_frame(RFS_FRAME_MIN);
    size_t len = 8 * chunk;
    uint8_t *buf = malloc(len);
    memset(buf, 0, len);
    size_t done = 0;
    /* All 8 requests must be in flight at once for the fake to answer at all. */
    assert_int_equal(rfs_pread(f, buf, len, 1000, &done), RFS_OK);
    assert_int_equal(done, len);
    for (size_t i = 0; i < len; i++)
        if (buf[i] != pattern(1000 + i))
            fail_msg("byte %zu misplaced", i);
    free(buf);
    assert_int_equal(rfs_close(f), RFS_OK);
    fake_stop(fk);
}

static void test_server_dies(void **state)
{
    (void)state;
    fake *fk = fake_start(M_DIE_ON_DATA, NULL);
    rfs_options o = {.token = "", .max_frame = RFS_FRAME_MIN, .retry_timeout_ms = -1};
    rfs_file *f = open_ok(fk, &o);
    size_t len = 1u << 20;
    uint8_t *buf = calloc(1, len);
    size_t done = 1;
    int rc = rfs_pwrite(f, buf, len, 0, &done);
    assert_int_equal(rc, RFS_E_CONN);
    assert_int_equal(done, 0);
    char server[32];
    snprintf(server, sizeof server, "127.0.0.1:%u", fk->port);
    assert_non_null(strstr(rfs_last_error(), server));
    assert_non_null(strstr(rfs_last_error(), "/f"));
    /* The handle died with the connection: later calls fail at once, and say why. */
    uint64_t size;
    assert_int_equal(rfs_get_size(f, &size), RFS_E_CONN);
    assert_non_null(strstr(rfs_last_error(), "reopen"));
    assert_int_equal(rfs_pread(f, buf, len, 0, &done), RFS_E_CONN);
    assert_int_equal(rfs_close(f), RFS_E_CONN);
    free(buf);
    fake_stop(fk);
}

/* A close after writes that returned before their replies (the write window) sends its
 * CLOSE before it collects those replies, so their round trip and the close's overlap: this
 * fake answers the writes only once the CLOSE has come. A client that waited for the writes
 * first would wait for the fake until its I/O timeout. */
static void close_after_windowed_writes(enum mode mode, int want)
{
    fake *fk = fake_start(mode, NULL);
    rfs_options o = {
        .token = "", .io_timeout_ms = 3000, .retry_timeout_ms = -1, .write_window = 1u << 20};
    rfs_runtime *rt; /* its own: its end closes the pooled connection (no thread left behind) */
    assert_int_equal(rfs_runtime_create(&rt), RFS_OK);
    rfs_file *f = open_in(rt, fk, &o);
    uint8_t buf[4096];
    memset(buf, 0x5a, sizeof buf);
    for (int i = 0; i < 8; i++) {
        size_t done = 0;
        assert_int_equal(rfs_pwrite(f, buf, sizeof buf, (uint64_t)i * sizeof buf, &done), RFS_OK);
        assert_int_equal(done, sizeof buf);
    }
    int rc = rfs_close(f);
    assert_int_equal(rc, want);
    if (want != RFS_OK) /* a write's failure is the close's error, though its CLOSE went well */
        assert_non_null(strstr(rfs_last_error(), "disk full"));
    pthread_mutex_lock(&fk->lock);
    int held = fk->held_at_close;
    pthread_mutex_unlock(&fk->lock);
    assert_int_equal(held, 8); /* every write was still unanswered when the CLOSE came */
    rfs_runtime_destroy(rt);
    fake_stop(fk);
}

static void test_close_overlaps_windowed_writes(void **state)
{
    (void)state;
    close_after_windowed_writes(M_HOLD_WRITES, RFS_OK);
}

static void test_close_reports_a_windowed_write_failure(void **state)
{
    (void)state;
    close_after_windowed_writes(M_HOLD_NOSPC, RFS_E_NOSPC);
}

static void test_silent_server_times_out(void **state)
{
    (void)state;
    fake *fk = fake_start(M_SILENT, NULL);
    rfs_options o = {.token = "", .io_timeout_ms = 300, .retry_timeout_ms = -1};
    rfs_file *f = open_ok(fk, &o);
    uint8_t buf[100];
    size_t done = 1;
    int64_t t0 = rfs_now_ns();
    assert_int_equal(rfs_pread(f, buf, sizeof buf, 0, &done), RFS_E_TIMEOUT);
    int64_t elapsed_ms = (rfs_now_ns() - t0) / 1000000;
    /* Bounded by the timeout (generous slack for a loaded machine), not hanging. */
    assert_true(elapsed_ms >= 250);
    assert_true(elapsed_ms < 30000);
    assert_int_equal(done, 0);
    assert_non_null(strstr(rfs_last_error(), "PREAD"));
    rfs_close(f);
    fake_stop(fk);
}

/* A server stalling or dying in the middle of a large reply's payload must end the call with
 * a timeout or a connection error, never a hang, and must not leave the stream usable. */
static void half_reply(enum mode mode, int expect)
{
    fake *fk = fake_start(mode, NULL);
    rfs_options o = {.token = "", .io_timeout_ms = 300, .retry_timeout_ms = -1};
    rfs_file *f = open_ok(fk, &o);
    size_t len = 512u << 10;
    uint8_t *buf = malloc(len);
    size_t done = 1;
    int64_t t0 = rfs_now_ns();
    assert_int_equal(rfs_pread(f, buf, len, 0, &done), expect);
    assert_true((rfs_now_ns() - t0) / 1000000 < 30000);
    assert_int_equal(done, 0);
    /* The connection is gone: the next call fails at once instead of reading a stale stream. */
    assert_int_not_equal(rfs_pread(f, buf, len, 0, &done), RFS_OK);
    free(buf);
    rfs_close(f);
    fake_stop(fk);
}

static void test_server_stalls_mid_reply(void **state)
{
    (void)state;
    half_reply(M_HALF_STALL, RFS_E_TIMEOUT);
}

static void test_server_dies_mid_reply(void **state)
{
    (void)state;
    half_reply(M_HALF_DIE, RFS_E_CONN);
}

static void test_overlong_reply(void **state)
{
    (void)state;
    fake *fk = fake_start(M_OVERLONG, NULL);
    rfs_options o = {.token = ""};
    rfs_file *f = open_ok(fk, &o);
    uint8_t buf[100];
    size_t done;
    assert_int_equal(rfs_pread(f, buf, sizeof buf, 0, &done), RFS_E_PROTO);
    assert_non_null(strstr(rfs_last_error(), "101 bytes"));
    rfs_close(f);
    fake_stop(fk);
}

static void test_unknown_reply_id(void **state)
{
    (void)state;
    fake *fk = fake_start(M_UNKNOWN_ID, NULL);
    rfs_options o = {.token = ""};
    rfs_file *f = open_ok(fk, &o);
    uint8_t buf[100];
    size_t done;
    assert_int_equal(rfs_pread(f, buf, sizeof buf, 0, &done), RFS_E_PROTO);
    assert_non_null(strstr(rfs_last_error(), "unknown request id"));
    rfs_close(f);
    fake_stop(fk);
}

/* Opening against a server that misbehaves in mode fails with RFS_E_AUTH saying why. */
static void open_refused(enum mode mode, const char *why)
{
    fake *fk = fake_start(mode, "s3cret");
    char name[64];
    name_of(fk, name, sizeof name);
    rfs_options o = {.token = "s3cret"};
    rfs_file *f = NULL;
    assert_int_equal(rfs_open(name, RFS_O_RDWR, 0, &o, &f), RFS_E_AUTH);
    assert_null(f);
    assert_non_null(strstr(rfs_last_error(), why));
    fake_stop(fk);
}

static void test_impostor_server(void **state)
{
    (void)state;
    open_refused(M_IMPOSTOR, "prove");
}

/* AUTH and the first request share a round trip: the server reads the OPEN before it has
 * answered AUTH (a client that waited for the AUTH reply would never send it: the fake's
 * read would time out and the open fail). */
static void test_auth_shares_round_trip_with_first_request(void **state)
{
    (void)state;
    fake *fk = fake_start(M_AUTH_LATE, "s3cret");
    rfs_options o = {.token = "s3cret"};
    rfs_file *f = open_ok(fk, &o);
    assert_int_equal(fk->after_auth_op, RFS_OP_OPEN);
    uint8_t buf[16];
    size_t done;
    assert_int_equal(rfs_pread(f, buf, sizeof buf, 5, &done), RFS_OK);
    assert_int_equal(buf[0], pattern(5));
    assert_int_equal(rfs_close(f), RFS_OK);
    fake_stop(fk);
}

/* A server that answers the pipelined request before proving itself is refused, and its
 * answer never reaches the caller. */
static void test_reply_before_server_proof_refused(void **state)
{
    (void)state;
    open_refused(M_AUTH_AFTER, "before proving");
}

/* File data is never sent to a server that has not proven it knows the token: a PWRITE that
 * is a connection's first request waits for the AUTH reply, which here is an impostor's. */
static void test_no_file_data_before_server_proof(void **state)
{
    (void)state;
    fake *fk = fake_start(M_IMPOSTOR, "s3cret");
    rfs_copts o;
    rfs_options opts = {.token = "s3cret"};
    assert_int_equal(rfs_copts_resolve(&opts, "test", &o), RFS_OK);
    rfs_conn *c = NULL;
    assert_int_equal(rfs_conn_open("127.0.0.1", (uint16_t)fk->port, &o, &c), RFS_OK);
    uint8_t data[1000];
    memset(data, 0x5c, sizeof data);
    rfs_req req;
    memset(&req, 0, sizeof req);
    req.op = RFS_OP_PWRITE;
    req.u.pwrite.fh = 7;
    req.data = data;
    req.data_len = sizeof data;
    rfs_call call;
    rfs_call_init(&call);
    int rc = rfs_conn_start(c, &call, &req, NULL, 10000);
    if (rc == RFS_OK)
        rc = rfs_conn_wait(c, &call);
    assert_int_equal(rc, RFS_E_AUTH);
    assert_non_null(strstr(rfs_last_error(), "prove"));
    rfs_call_destroy(&call);
    c->refs = 0;
    rfs_conn_free(c);
    /* The handler reads everything the client sent, up to the close. */
    int done = 0, frames = -1;
    for (int i = 0; i < 10000 && !done; i++) { /* bounded: 10 s */
        pthread_mutex_lock(&fk->lock);
        done = fk->handlers_done;
        frames = fk->data_frames;
        pthread_mutex_unlock(&fk->lock);
        if (!done)
            usleep(1000);
    }
    assert_int_equal(done, 1);
    assert_int_equal(frames, 0);
    fake_stop(fk);
}

/* A server that announces views in HELLO gets the first SET_VIEW pipelined with the access
 * behind it (the fake answers SET_VIEW only after that access arrived); one that does not
 * gets a SET_VIEW that is waited for, so its refusal comes back from rfs_set_view. */
static void test_views_feature_saves_round_trip(void **state)
{
    (void)state;
    static const uint8_t enc[] = {1, 2, 3, 4}; /* opaque to the client and to the fake */
    fake *fk = fake_start(M_VIEWS, NULL);
    rfs_options o = {.token = ""};
    rfs_file *f = open_ok(fk, &o);
    assert_int_equal(rfs_set_view(f, 1, 0, enc, sizeof enc), RFS_OK);
    uint8_t data[64] = {0};
    size_t done = 0;
    assert_int_equal(rfs_view_write(f, 1, 0, data, sizeof data, &done), RFS_OK);
    assert_int_equal(done, sizeof data);
    assert_int_equal(fk->after_view_op, RFS_OP_VIEW_WRITE);
    assert_int_equal(rfs_close(f), RFS_OK);
    fake_stop(fk);

    fk = fake_start(M_NORMAL, NULL);
    f = open_ok(fk, &o);
    assert_int_equal(rfs_set_view(f, 1, 0, enc, sizeof enc), RFS_E_UNSUPPORTED);
    assert_non_null(strstr(rfs_last_error(), "no views here"));
    assert_int_equal(rfs_close(f), RFS_OK);
    fake_stop(fk);
}

typedef struct sink_state {
    uint8_t *got;
    uint64_t base;
    uint64_t next; /* offset the next piece must start at (one stream: file order) */
    int pieces;
    int fail_at; /* piece number that fails with ENOSPC, or -1 */
} sink_state;

static int collect(void *ctx, uint64_t off, const void *data, size_t len)
{
    sink_state *s = ctx;
    if (off != s->next)
        return EILSEQ;
    if (s->pieces++ == s->fail_at)
        return ENOSPC;
    memcpy(s->got + (off - s->base), data, len);
    s->next = off + len;
    return 0;
}

/* rfs_pread_sink hands every byte to the sink in order, at the right offsets; a sink failure
 * ends the call with RFS_E_IO naming the errno, and the connection stays in step (the rest of
 * the payload was drained), so the next read on it works. */
static void test_pread_sink(void **state)
{
    (void)state;
    fake *fk = fake_start(M_NORMAL, NULL);
    rfs_options o = {.token = ""};
    rfs_file *f = open_ok(fk, &o);
    size_t n = (3u << 20) + 12345;
    sink_state s = {.got = malloc(n), .base = 777, .next = 777, .fail_at = -1};
    size_t done = 0;
    assert_int_equal(rfs_pread_sink(f, collect, &s, n, 777, &done), RFS_OK);
    assert_int_equal(done, n);
    assert_true(s.pieces > 1); /* delivered as it came, not in one piece */
    for (size_t i = 0; i < n; i++)
        if (s.got[i] != pattern(777 + i))
            fail_msg("byte %zu differs", i);
    s = (sink_state){.got = s.got, .base = 0, .next = 0, .fail_at = 2};
    assert_int_equal(rfs_pread_sink(f, collect, &s, n, 0, &done), RFS_E_IO);
    assert_non_null(strstr(rfs_last_error(), strerror(ENOSPC)));
    assert_true(done < n);
    uint8_t buf[100];
    assert_int_equal(rfs_pread(f, buf, sizeof buf, 9, &done), RFS_OK);
    assert_int_equal(done, sizeof buf);
    assert_int_equal(buf[0], pattern(9));
    assert_int_equal(rfs_pread_sink(f, NULL, &s, 10, 0, &done), RFS_E_INVAL);
    assert_int_equal(rfs_close(f), RFS_OK);
    free(s.got);
    fake_stop(fk);
}

static void test_auth_rejected_and_missing(void **state)
{
    (void)state;
    fake *fk = fake_start(M_NORMAL, "s3cret");
    char name[64];
    name_of(fk, name, sizeof name);
    rfs_file *f = NULL;
    rfs_options wrong = {.token = "guess"};
    assert_int_equal(rfs_open(name, RFS_O_RDWR, 0, &wrong, &f), RFS_E_AUTH);
    assert_non_null(strstr(rfs_last_error(), "rejected"));
    rfs_options none = {.token = ""};
    assert_int_equal(rfs_open(name, RFS_O_RDWR, 0, &none, &f), RFS_E_AUTH);
    assert_non_null(strstr(rfs_last_error(), "RFS_TOKEN"));
    assert_non_null(strstr(rfs_last_error(), name));
    rfs_options right = {.token = "s3cret"};
    assert_int_equal(rfs_open(name, RFS_O_RDWR, 0, &right, &f), RFS_OK);
    assert_int_equal(rfs_close(f), RFS_OK);
    fake_stop(fk);

    fk = fake_start(M_REJECT_AUTH, "s3cret");
    name_of(fk, name, sizeof name);
    assert_int_equal(rfs_open(name, RFS_O_RDWR, 0, &right, &f), RFS_E_AUTH);
    fake_stop(fk);
}

static void test_unsupported_passes_through(void **state)
{
    (void)state;
    fake *fk = fake_start(M_NORMAL, NULL);
    rfs_options o = {.token = ""};
    rfs_file *f = open_ok(fk, &o);
    int64_t old = 5;
    assert_int_equal(rfs_counter(f, 1, 0, 1, &old), RFS_E_UNSUPPORTED);
    assert_int_equal(old, 5);
    assert_non_null(strstr(rfs_last_error(), "counters are not supported"));
    assert_int_equal(rfs_lock(f, 0, 10, RFS_LOCK_EXCL, 0), RFS_E_UNSUPPORTED);
    /* An error reply does not hurt the connection. */
    uint8_t buf[10];
    size_t done;
    assert_int_equal(rfs_pread(f, buf, sizeof buf, 3, &done), RFS_OK);
    assert_int_equal(done, sizeof buf);
    assert_int_equal(buf[0], pattern(3));
    assert_int_equal(rfs_close(f), RFS_OK);
    fake_stop(fk);
}

static void test_pool_shares_connections(void **state)
{
    (void)state;
    fake *fk = fake_start(M_NORMAL, NULL);
    /* Its own runtime: no connection of another test is in its pool, and destroying it
     * closes the ones it made. */
    rfs_runtime *rt;
    assert_int_equal(rfs_runtime_create(&rt), RFS_OK);
    rfs_options one = {.token = ""};
    rfs_file *a = open_in(rt, fk, &one);
    rfs_file *b = open_in(rt, fk, &one);
    assert_int_equal(fake_conns(fk), 1);
    rfs_options three = {.token = "", .streams = 3};
    rfs_file *c = open_in(rt, fk, &three);
    assert_int_equal(fake_conns(fk), 3);
    /* A striped read uses all three and still lands every byte in place. */
    size_t len = 5u * 1024 * 1024 + 17;
    uint8_t *buf = malloc(len);
    size_t done;
    assert_int_equal(rfs_pread(c, buf, len, 9, &done), RFS_OK);
    assert_int_equal(done, len);
    for (size_t i = 0; i < len; i += 4093)
        assert_int_equal(buf[i], pattern(9 + i));
    free(buf);
    assert_int_equal(rfs_close(a), RFS_OK);
    assert_int_equal(rfs_close(b), RFS_OK);
    assert_int_equal(rfs_close(c), RFS_OK);
    /* Released connections linger in the pool: the next open reuses one, no new connection. */
    rfs_file *d = open_in(rt, fk, &one);
    assert_int_equal(fake_conns(fk), 3);
    assert_int_equal(rfs_close(d), RFS_OK);
    /* Another runtime has a pool of its own: it connects, and its end closes the connection. */
    rfs_runtime *other;
    assert_int_equal(rfs_runtime_create(&other), RFS_OK);
    rfs_file *o2 = open_in(other, fk, &one);
    assert_int_equal(fake_conns(fk), 4);
    assert_int_equal(rfs_close(o2), RFS_OK);
    rfs_runtime_destroy(other);
    assert_int_equal(wait_conns_closed(fk, 1), 1);
    /* Without lingering, the next pool call closes every idle connection: the open connects
     * afresh, and so does the one after it. */
    setenv("RFS_CONN_LINGER_MS", "0", 1);
    rfs_file *e = open_in(rt, fk, &one);
    assert_int_equal(fake_conns(fk), 5);
    assert_int_equal(rfs_close(e), RFS_OK);
    rfs_file *g = open_in(rt, fk, &one);
    assert_int_equal(fake_conns(fk), 6);
    assert_int_equal(rfs_close(g), RFS_OK);
    unsetenv("RFS_CONN_LINGER_MS");
    /* Every connection of the test ends with its runtimes. */
    rfs_runtime_destroy(rt);
    assert_int_equal(wait_conns_closed(fk, 6), 6);
    fake_stop(fk);
}

static void test_connect_refused(void **state)
{
    (void)state;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(s, (struct sockaddr *)&a, sizeof a);
    socklen_t al = sizeof a;
    getsockname(s, (struct sockaddr *)&a, &al);
    close(s); /* nothing listens on this port now */
    char name[64];
    snprintf(name, sizeof name, "rfs:127.0.0.1:%u:/x", ntohs(a.sin_port));
    rfs_file *f = NULL;
    /* Opening retries a refused connection within the retry timeout, then fails. */
    rfs_options o = {.token = "", .connect_timeout_ms = 2000, .retry_timeout_ms = 300};
    assert_int_equal(rfs_open(name, RFS_O_RDONLY, 0, &o, &f), RFS_E_CONN);
    assert_null(f);
    assert_non_null(strstr(rfs_last_error(), name));
    double rtt;
    assert_int_equal(rfs_ping(name, &o, &rtt), RFS_E_CONN);
}

static void test_bad_open_args(void **state)
{
    (void)state;
    rfs_file *f = (rfs_file *)1;
    assert_int_equal(rfs_open("rfs:h:0:/x", RFS_O_RDONLY, 0, NULL, &f), RFS_E_NAME);
    assert_null(f);
    assert_int_equal(rfs_open("rfs:h:1:/x", 0, 0, NULL, &f), RFS_E_INVAL);
    assert_int_equal(rfs_open("rfs:h:1:/x", RFS_O_RDWR | 0x1000, 0, NULL, &f), RFS_E_INVAL);
    assert_int_equal(rfs_open("rfs:h:1:/x", RFS_O_RDWR, 010000, NULL, &f), RFS_E_INVAL);
    assert_int_equal(rfs_open(NULL, RFS_O_RDWR, 0, NULL, &f), RFS_E_INVAL);
    assert_int_equal(rfs_open("rfs:h:1:/x", RFS_O_RDWR, 0, NULL, NULL), RFS_E_INVAL);
}

int main(void)
{
    unsetenv("RFS_TOKEN");
    unsetenv("RFS_TOKEN_FILE");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replies_out_of_order),
        cmocka_unit_test(test_server_dies),
        cmocka_unit_test(test_silent_server_times_out),
        cmocka_unit_test(test_server_stalls_mid_reply),
        cmocka_unit_test(test_server_dies_mid_reply),
        cmocka_unit_test(test_overlong_reply),
        cmocka_unit_test(test_unknown_reply_id),
        cmocka_unit_test(test_impostor_server),
        cmocka_unit_test(test_auth_rejected_and_missing),
        cmocka_unit_test(test_pread_sink),
        cmocka_unit_test(test_views_feature_saves_round_trip),
        cmocka_unit_test(test_auth_shares_round_trip_with_first_request),
        cmocka_unit_test(test_reply_before_server_proof_refused),
        cmocka_unit_test(test_no_file_data_before_server_proof),
        cmocka_unit_test(test_unsupported_passes_through),
        cmocka_unit_test(test_pool_shares_connections),
        cmocka_unit_test(test_connect_refused),
        cmocka_unit_test(test_bad_open_args),
        cmocka_unit_test(test_close_overlaps_windowed_writes),
        cmocka_unit_test(test_close_reports_a_windowed_write_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
