/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* UCX transport over loopback, each server in a process of its own (its own UCP context, as
 * rfsd and a client have): a bulk echo with the client reading and writing from two threads at
 * once while the server side runs nonblocking on t->fd (rfsd's pattern), the end of stream
 * when the client closes; a reader that does not read holding the sender back; a killed peer
 * failing a blocked reader and writer; a connect to a port nobody serves failing within its
 * timeout. */
#include <sys/wait.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "transport/ucx.h"

#define BULK (24u << 20)

/* In the child: a failed check ends it with a message and status 1 (no cmocka there). */
#define CHILD_CHECK(cond)                                                             \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "echo server: %s failed (%s)\n", #cond, strerror(errno)); \
            _exit(1);                                                                 \
        }                                                                             \
    } while (0)

static void wait_fd(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    CHILD_CHECK(poll(&p, 1, 20000) > 0); /* bounded: a lost wakeup fails the test */
}

/* Echoes the connection until its end, nonblocking throughout; 0 when it echoed BULK bytes and
 * saw the end. */
static int serve_echo(rfs_transport *t, int ctl)
{
    (void)ctl;
    static uint8_t buf[1 << 20];
    size_t echoed = 0;
    for (;;) {
        long n = rfs_transport_recv_nb(t, buf, sizeof buf);
        if (n == 0)
            break;
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
        echoed += (size_t)n;
    }
    return echoed == BULK ? 0 : 1;
}

static int serve_late_reader(rfs_transport *t, int ctl);
static int serve_then_hang(rfs_transport *t, int ctl);
static int serve_send_then_hang(rfs_transport *t, int ctl);

static const struct role {
    const char *name;
    int (*serve)(rfs_transport *t, int ctl);
} roles[] = {{"echo", serve_echo},
             {"late-reader", serve_late_reader},
             {"hang", serve_then_hang},
             {"send-hang", serve_send_then_hang}};

/* The server side of a test, in a process of its own started fresh (exec: a forked copy of a
 * process whose UCX context is running does not work): listens, writes its port to port_fd,
 * accepts one connection and hands it to the role; exits with the role's result. */
static int server_main(const char *name, int port_fd, int ctl)
{
    const struct role *r = NULL;
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
        if (!strcmp(roles[i].name, name))
            r = &roles[i];
    CHILD_CHECK(r != NULL);
    rfs_ucx_listener *l;
    CHILD_CHECK(rfs_ucx_listen("127.0.0.1", 0, &l) == 0);
    char addr[300];
    rfs_ucx_listener_addr(l, addr, sizeof addr);
    unsigned p = (unsigned)atoi(strrchr(addr, ':') + 1);
    CHILD_CHECK(write(port_fd, &p, sizeof p) == sizeof p);
    close(port_fd);
    rfs_transport *t = NULL;
    while (!t) {
        CHILD_CHECK(rfs_ucx_accept(l, &t) >= 0);
        if (!t)
            wait_fd(rfs_ucx_listener_fd(l));
    }
    int rc = r->serve(t, ctl);
    rfs_transport_close(t);
    rfs_ucx_listener_free(l);
    return rc;
}

static pid_t start_server(const char *role, int ctl, unsigned *port)
{
    int pp[2];
    assert_int_equal(pipe(pp), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        char pfd[16], cfd[16];
        snprintf(pfd, sizeof pfd, "%d", pp[1]);
        snprintf(cfd, sizeof cfd, "%d", ctl);
        execl("/proc/self/exe", "test_transport_ucx", "serve", role, pfd, cfd, (char *)NULL);
        _exit(127);
    }
    close(pp[1]);
    assert_int_equal(read(pp[0], port, sizeof *port), (long)sizeof *port);
    close(pp[0]);
    return child;
}

static rfs_transport *connect_to(unsigned port)
{
    rfs_transport *t = NULL;
    rfs_transport_opts o = {.connect_timeout_ms = 10000};
    int rc = rfs_ucx_connect("127.0.0.1", port, &o, &t);
    if (rc)
        fprintf(stderr, "connect: %s\n", rfs_last_error());
    assert_int_equal(rc, 0);
    return t;
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
    unsigned port;
    pid_t child = start_server("echo", -1, &port);
    rfs_transport *t = connect_to(port);
    assert_true(rfs_ucx_is(t));
    uint8_t *data = malloc(BULK), *back = malloc(BULK);
    for (size_t i = 0; i < BULK; i++)
        data[i] = (uint8_t)(i * 2654435761u >> 13);
    writer_arg w = {.t = t, .data = data};
    pthread_t wr;
    assert_int_equal(pthread_create(&wr, NULL, writer_main, &w), 0);
    size_t got = 0;
    while (got < BULK) { /* read_some and read_all both */
        long r = rfs_transport_read_some(t, back + got, BULK - got);
        assert_true(r > 0);
        got += (size_t)r;
        if (got < BULK && got % 3 == 0) {
            /* small, and large enough for messages fetched straight into the buffer */
            size_t want = got % 2 ? 4096 : (5u << 20) + 123;
            size_t k = BULK - got < want ? BULK - got : want;
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

/* Reads one byte, then nothing until a byte arrives on ctl, then everything to the end of the
 * stream; exits 0 when it got exactly 4 * BULK bytes of the pattern. */
static int serve_late_reader(rfs_transport *t, int ctl)
{
    static uint8_t buf[1 << 20];
    while (rfs_transport_recv_nb(t, buf, 1) != 1) /* the client's first byte: it is connected */
        wait_fd(t->fd);
    char go;
    CHILD_CHECK(read(ctl, &go, 1) == 1);
    size_t got = 0;
    for (;;) {
        long n = rfs_transport_recv_nb(t, buf, sizeof buf);
        if (n == 0)
            break;
        if (n < 0) {
            if (errno != EAGAIN)
                fprintf(stderr, "late reader: %s after %zu bytes\n", strerror(errno), got);
            CHILD_CHECK(errno == EAGAIN);
            wait_fd(t->fd);
            continue;
        }
        for (long i = 0; i < n; i++)
            CHILD_CHECK(buf[i] == (uint8_t)((got + (size_t)i) * 2654435761u >> 13));
        got += (size_t)n;
    }
    return got == BULK * 4 ? 0 : 1;
}

/* A reader that does not read holds the sender back, as a full socket does: send_nb says
 * EAGAIN after a bounded amount instead of queueing without end, and once the reader reads,
 * every byte arrives in order. */
static void test_sender_held_back_by_reader(void **state)
{
    int ctl[2];
    assert_int_equal(pipe(ctl), 0);
    unsigned port;
    pid_t child = start_server("late-reader", ctl[0], &port);
    close(ctl[0]);
    rfs_transport *t = connect_to(port);
    size_t total = BULK * 4;
    uint8_t *data = malloc(total);
    for (size_t i = 0; i < total; i++)
        data[i] = (uint8_t)(i * 2654435761u >> 13);
    struct iovec hello = {.iov_base = "h", .iov_len = 1};
    assert_int_equal(rfs_transport_write_all(t, &hello, 1), 0);
    size_t off = 0;
    int full = 0;
    while (off < total && !full) {
        struct iovec v = {.iov_base = data + off, .iov_len = total - off};
        long w = rfs_transport_send_nb(t, &v, 1, 0);
        if (w < 0) {
            assert_int_equal(errno, EAGAIN);
            full = 1;
        } else {
            off += (size_t)w;
        }
    }
    assert_true(full);
    assert_true(off > 0 && off <= (64u << 20)); /* bounded: SEND_CAP, not the whole 96 MiB */
    assert_int_equal(write(ctl[1], "g", 1), 1);
    struct iovec v = {.iov_base = data + off, .iov_len = total - off};
    assert_int_equal(rfs_transport_write_all(t, &v, 1), 0);
    rfs_transport_close(t);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(ctl[1]);
    free(data);
}

/* Reads a byte, says so on ctl, then waits to be killed. */
static int serve_then_hang(rfs_transport *t, int ctl)
{
    char c;
    while (rfs_transport_recv_nb(t, &c, 1) != 1)
        wait_fd(t->fd);
    CHILD_CHECK(write(ctl, "r", 1) == 1);
    for (;;)
        pause();
}

/* A peer killed mid-connection: a blocked reader and a writer with bytes in flight both get a
 * connection error (no hang; the test's own timeout would catch one). */
static void test_peer_killed(void **state)
{
    int ctl[2];
    assert_int_equal(pipe(ctl), 0);
    unsigned port;
    pid_t child = start_server("hang", ctl[1], &port);
    close(ctl[1]);
    rfs_transport *t = connect_to(port);
    struct iovec one = {.iov_base = "x", .iov_len = 1};
    assert_int_equal(rfs_transport_write_all(t, &one, 1), 0);
    char c;
    assert_int_equal(read(ctl[0], &c, 1), 1);
    kill(child, SIGKILL);
    assert_int_equal(waitpid(child, NULL, 0), child);
    assert_int_equal(rfs_transport_read_all(t, &c, 1), RFS_E_CONN);
    size_t big = BULK * 4;
    uint8_t *junk = calloc(1, big);
    struct iovec v = {.iov_base = junk, .iov_len = big};
    assert_int_equal(rfs_transport_write_all(t, &v, 1), RFS_E_CONN);
    rfs_transport_close(t);
    close(ctl[0]);
    free(junk);
}

/* Memory a late access by rfs would fault on once protected (see below). */
static uint8_t *map_buffer(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    return p;
}

typedef struct direct_arg {
    rfs_transport *t;
    uint8_t *buf;
    size_t len;
    int rc;
} direct_arg;

static void *direct_writer(void *arg)
{
    direct_arg *d = arg;
    struct iovec v[2] = {{"hdr", 3}, {d->buf, d->len}};
    d->rc = rfs_transport_write_all(d->t, v, 2);
    return NULL;
}

/* A peer killed while a write goes direct from the caller's buffer (the peer holds the
 * rendezvous unfetched): write_all fails with RFS_E_CONN, and from then on the buffer is the
 * caller's alone: it is made inaccessible, then the transport is driven and closed (a read by
 * UCX would fault), then unmapped. */
static void test_peer_killed_mid_direct_write(void **state)
{
    int ctl[2];
    assert_int_equal(pipe(ctl), 0);
    unsigned port;
    pid_t child = start_server("hang", ctl[1], &port);
    close(ctl[1]);
    size_t was = rfs_ucx_inline_max();
    rfs_ucx_set_inline_max(4096);
    rfs_transport *t = connect_to(port);
    struct iovec one = {.iov_base = "x", .iov_len = 1};
    assert_int_equal(rfs_transport_write_all(t, &one, 1), 0);
    char c;
    assert_int_equal(read(ctl[0], &c, 1), 1);
    direct_arg d = {.t = t, .len = BULK * 2};
    d.buf = map_buffer(d.len);
    memset(d.buf, 0x5a, d.len);
    pthread_t wr;
    assert_int_equal(pthread_create(&wr, NULL, direct_writer, &d), 0);
    kill(child, SIGKILL); /* the writer is blocked, or about to be: nobody fetches */
    assert_int_equal(waitpid(child, NULL, 0), child);
    pthread_join(wr, NULL);
    assert_int_equal(d.rc, RFS_E_CONN);
    assert_int_equal(mprotect(d.buf, d.len, PROT_NONE), 0);
    assert_int_equal(rfs_transport_read_all(t, &c, 1), RFS_E_CONN);
    rfs_transport_close(t);
    assert_int_equal(munmap(d.buf, d.len), 0);
    rfs_ucx_set_inline_max(was);
    close(ctl[0]);
}

/* Sends BULK bytes of the pattern, says so on ctl, then waits to be killed. */
static int serve_send_then_hang(rfs_transport *t, int ctl)
{
    static uint8_t buf[1 << 20];
    for (size_t off = 0; off < BULK;) {
        size_t k = sizeof buf < BULK - off ? sizeof buf : BULK - off;
        for (size_t i = 0; i < k; i++)
            buf[i] = (uint8_t)((off + i) * 2654435761u >> 13);
        struct iovec v = {.iov_base = buf, .iov_len = k};
        long w = rfs_transport_send_nb(t, &v, 1, 0);
        if (w < 0) {
            CHILD_CHECK(errno == EAGAIN);
            wait_fd(t->fd);
            continue;
        }
        off += (size_t)w;
    }
    CHILD_CHECK(write(ctl, "s", 1) == 1);
    for (;;)
        pause();
}

typedef struct reader_arg {
    rfs_transport *t;
    uint8_t *buf;
    size_t len;
    int rc;
} reader_arg;

static void *direct_reader(void *arg)
{
    reader_arg *r = arg;
    r->rc = rfs_transport_read_all(r->t, r->buf, r->len);
    return NULL;
}

/* A peer killed in the middle of a read that fetches straight into the caller's buffer (it
 * asked for more than the peer sent): read_all fails with RFS_E_CONN, what arrived is the
 * peer's bytes, and afterwards the buffer is never written again: it is made read-only while
 * the transport is driven and closed (a write by UCX would fault). */
static void test_peer_killed_mid_direct_read(void **state)
{
    int ctl[2];
    assert_int_equal(pipe(ctl), 0);
    unsigned port;
    pid_t child = start_server("send-hang", ctl[1], &port);
    close(ctl[1]);
    rfs_transport *t = connect_to(port);
    reader_arg r = {.t = t, .len = BULK * 2};
    r.buf = map_buffer(r.len);
    pthread_t rd;
    assert_int_equal(pthread_create(&rd, NULL, direct_reader, &r), 0);
    char c;
    assert_int_equal(read(ctl[0], &c, 1), 1);
    kill(child, SIGKILL);
    assert_int_equal(waitpid(child, NULL, 0), child);
    pthread_join(rd, NULL);
    assert_int_equal(r.rc, RFS_E_CONN);
    assert_int_equal(mprotect(r.buf, r.len, PROT_READ), 0);
    for (size_t i = 0; i < BULK; i += 4093) /* what was fetched, where it belongs */
        assert_true(r.buf[i] == 0 || r.buf[i] == (uint8_t)(i * 2654435761u >> 13));
    assert_int_equal(rfs_transport_read_all(t, &c, 1), RFS_E_CONN);
    rfs_transport_close(t);
    assert_int_equal(munmap(r.buf, r.len), 0);
    close(ctl[0]);
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
    close(fd); /* a port that was free a moment ago and has no listener */
    rfs_transport *t = NULL;
    rfs_transport_opts o = {.connect_timeout_ms = 5000};
    int rc = rfs_ucx_connect("127.0.0.1", ntohs(a.sin_port), &o, &t);
    assert_true(rc == RFS_E_CONN || rc == RFS_E_TIMEOUT);
    assert_null(t);
    assert_non_null(strstr(rfs_last_error(), "cannot connect"));
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "serve"))
        return server_main(argv[2], atoi(argv[3]), atoi(argv[4]));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bulk_echo),
        cmocka_unit_test(test_sender_held_back_by_reader),
        cmocka_unit_test(test_peer_killed),
        cmocka_unit_test(test_peer_killed_mid_direct_write),
        cmocka_unit_test(test_peer_killed_mid_direct_read),
        cmocka_unit_test(test_nobody_listening),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
