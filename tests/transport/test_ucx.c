/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* UCX transport over loopback, listener and client in one process: a bulk transfer whose
 * bytes the server side checks, running nonblocking on t->fd (rfsd's pattern) and answering
 * with a digest that the client's reading thread waits for while its writing thread sends,
 * the end of stream when the client closes, and a connect to a port nobody serves. Bulk both
 * ways at once is not tested: it stalls with UCX 1.13 (docs/protocol.md "Transports"). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "transport/ucx.h"

#define BULK (24u << 20)

typedef struct echo_server {
    rfs_ucx_listener *l;
    size_t received;
    uint64_t digest;  /* FNV-1a of the bytes received */
    int saw_end;      /* recv_nb gave 0 after the client closed */
} echo_server;

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211u;
    return h;
}

static void wait_fd(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_true(poll(&p, 1, 20000) > 0);  /* bounded: a lost wakeup fails the test */
}

/* Accepts one connection, takes BULK bytes, answers their digest, then waits for the end;
 * nonblocking throughout. */
static void *echo_main(void *arg)
{
    echo_server *s = arg;
    rfs_transport *t = NULL;
    while (!t) {
        int rc = rfs_ucx_accept(s->l, &t);
        if (rc < 0)
            fprintf(stderr, "accept: %s\n", rfs_last_error());
        assert_true(rc >= 0);
        if (!t)
            wait_fd(rfs_ucx_listener_fd(s->l));
    }
    static uint8_t buf[1 << 20];
    s->digest = 14695981039346656037u;
    for (;;) {
        long n = rfs_transport_recv_nb(t, buf, sizeof buf);
        if (n == 0) {
            s->saw_end = 1;
            break;
        }
        if (n < 0) {
            if (errno != EAGAIN)
                fprintf(stderr, "server recv: %s\n", strerror(errno));
            assert_int_equal(errno, EAGAIN);
            wait_fd(t->fd);
            continue;
        }
        s->digest = fnv(s->digest, buf, (size_t)n);
        s->received += (size_t)n;
        if (s->received < BULK)
            continue;
        struct iovec v = {.iov_base = &s->digest, .iov_len = sizeof s->digest};
        long w;
        while ((w = rfs_transport_send_nb(t, &v, 1, 0)) < 0) {
            assert_int_equal(errno, EAGAIN);
            wait_fd(t->fd);
        }
        assert_int_equal(w, (long)sizeof s->digest);
    }
    rfs_transport_close(t);
    return NULL;
}

typedef struct writer_arg {
    rfs_transport *t;
    const uint8_t *data;
    int rc;
} writer_arg;

static void *writer_main(void *arg)
{
    writer_arg *w = arg;
    /* uneven pieces, several iovecs each, so copies straddle send boundaries */
    for (size_t off = 0; off < BULK && !w->rc;) {
        size_t a = 100000 < BULK - off ? 100000 : BULK - off;
        size_t b = 3u << 20 < BULK - off - a ? 3u << 20 : BULK - off - a;
        struct iovec v[2] = {{(void *)(w->data + off), a}, {(void *)(w->data + off + a), b}};
        w->rc = rfs_transport_write_all(w->t, v, 2);
        off += a + b;
    }
    return NULL;
}

static void test_bulk_echo(void **state)
{
    echo_server s = {0};
    assert_int_equal(rfs_ucx_listen("127.0.0.1", 0, &s.l), 0);
    char addr[300];
    rfs_ucx_listener_addr(s.l, addr, sizeof addr);
    unsigned port = (unsigned)atoi(strrchr(addr, ':') + 1);
    assert_true(port > 0);
    pthread_t srv;
    assert_int_equal(pthread_create(&srv, NULL, echo_main, &s), 0);

    rfs_transport *t;
    rfs_transport_opts o = {.connect_timeout_ms = 10000};
    int rc = rfs_ucx_connect("127.0.0.1", port, &o, &t);
    if (rc)
        fprintf(stderr, "connect: %s\n", rfs_last_error());
    assert_int_equal(rc, 0);
    assert_true(rfs_ucx_is(t));
    uint8_t *data = malloc(BULK);
    for (size_t i = 0; i < BULK; i++)
        data[i] = (uint8_t)(i * 2654435761u >> 13);
    writer_arg w = {.t = t, .data = data};
    pthread_t wr;
    assert_int_equal(pthread_create(&wr, NULL, writer_main, &w), 0);
    uint64_t digest = 0;  /* read while the writer thread sends */
    assert_int_equal(rfs_transport_read_all(t, &digest, sizeof digest), 0);
    pthread_join(wr, NULL);
    assert_int_equal(w.rc, 0);
    assert_true(digest == fnv(14695981039346656037u, data, BULK));
    rfs_transport_close(t);
    pthread_join(srv, NULL);
    assert_int_equal(s.received, BULK);
    assert_true(s.saw_end);
    rfs_ucx_listener_free(s.l);
    free(data);
}

/* A loopback port with nothing listening: the connect fails (not hangs), as a connection
 * error. */
static void test_nobody_listening(void **state)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sl), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &sl), 0);
    close(fd);  /* a port that was free a moment ago and has no listener */
    rfs_transport *t = NULL;
    rfs_transport_opts o = {.connect_timeout_ms = 5000};
    int rc = rfs_ucx_connect("127.0.0.1", ntohs(a.sin_port), &o, &t);
    assert_true(rc == RFS_E_CONN || rc == RFS_E_TIMEOUT);
    assert_null(t);
    assert_non_null(strstr(rfs_last_error(), "cannot connect"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bulk_echo),
        cmocka_unit_test(test_nobody_listening),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
