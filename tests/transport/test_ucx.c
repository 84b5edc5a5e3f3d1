/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* UCX transport over loopback, the listener in a child process (its own UCP context, as rfsd
 * and a client have): a bulk echo with the client reading and writing from two threads at
 * once while the server side runs nonblocking on t->fd (rfsd's pattern), the end of stream
 * when the client closes, and a connect to a port nobody serves failing within its timeout. */
#include <sys/wait.h>
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
    size_t echoed;
    int saw_end;     /* recv_nb gave 0 after the client closed */
} echo_server;

/* In the child: a failed check ends it with a message and status 1 (no cmocka there). */
#define CHILD_CHECK(cond)                                                                  \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "echo server: %s failed (%s)\n", #cond, strerror(errno));      \
            _exit(1);                                                                      \
        }                                                                                  \
    } while (0)

static void wait_fd(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    CHILD_CHECK(poll(&p, 1, 20000) > 0);  /* bounded: a lost wakeup fails the test */
}

/* Accepts one connection and echoes it until its end, nonblocking throughout. */
static void *echo_main(void *arg)
{
    echo_server *s = arg;
    rfs_transport *t = NULL;
    while (!t) {
        int rc = rfs_ucx_accept(s->l, &t);
        if (rc < 0)
            fprintf(stderr, "accept: %s\n", rfs_last_error());
        CHILD_CHECK(rc >= 0);
        if (!t)
            wait_fd(rfs_ucx_listener_fd(s->l));
    }
    static uint8_t buf[1 << 20];
    for (;;) {
        long n = rfs_transport_recv_nb(t, buf, sizeof buf);
        if (n == 0) {
            s->saw_end = 1;
            break;
        }
        if (n < 0) {
            CHILD_CHECK(errno == EAGAIN);
            wait_fd(t->fd);
            continue;
        }
        size_t off = 0;
        while (off < (size_t)n) {
            struct iovec v = {.iov_base = buf + off, .iov_len = (size_t)n - off};
            long w = rfs_transport_send_nb(t, &v, 1, 0);
            if (w < 0) {
                CHILD_CHECK(errno == EAGAIN);
                wait_fd(t->fd);
                continue;
            }
            off += (size_t)w;
        }
        s->echoed += (size_t)n;
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
    int pp[2];
    assert_int_equal(pipe(pp), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {  /* the server: listens, says its port, echoes one connection */
        echo_server s = {0};
        CHILD_CHECK(rfs_ucx_listen("127.0.0.1", 0, &s.l) == 0);
        char addr[300];
        rfs_ucx_listener_addr(s.l, addr, sizeof addr);
        unsigned p = (unsigned)atoi(strrchr(addr, ':') + 1);
        CHILD_CHECK(write(pp[1], &p, sizeof p) == sizeof p);
        echo_main(&s);
        CHILD_CHECK(s.echoed == BULK && s.saw_end);
        rfs_ucx_listener_free(s.l);
        _exit(0);
    }
    close(pp[1]);
    unsigned port = 0;
    assert_int_equal(read(pp[0], &port, sizeof port), (long)sizeof port);
    close(pp[0]);
    assert_true(port > 0);

    rfs_transport *t;
    rfs_transport_opts o = {.connect_timeout_ms = 10000};
    int rc = rfs_ucx_connect("127.0.0.1", port, &o, &t);
    if (rc)
        fprintf(stderr, "connect: %s\n", rfs_last_error());
    assert_int_equal(rc, 0);
    assert_true(rfs_ucx_is(t));
    uint8_t *data = malloc(BULK), *back = malloc(BULK);
    for (size_t i = 0; i < BULK; i++)
        data[i] = (uint8_t)(i * 2654435761u >> 13);
    writer_arg w = {.t = t, .data = data};
    pthread_t wr;
    assert_int_equal(pthread_create(&wr, NULL, writer_main, &w), 0);
    size_t got = 0;
    while (got < BULK) {  /* read_some and read_all both */
        long r = rfs_transport_read_some(t, back + got, BULK - got);
        assert_true(r > 0);
        got += (size_t)r;
        if (got < BULK && got % 3 == 0) {
            size_t k = BULK - got < 4096 ? BULK - got : 4096;
            assert_int_equal(rfs_transport_read_all(t, back + got, k), 0);
            got += k;
        }
    }
    pthread_join(wr, NULL);
    assert_int_equal(w.rc, 0);
    assert_memory_equal(data, back, BULK);
    rfs_transport_close(t);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    free(data);
    free(back);
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
