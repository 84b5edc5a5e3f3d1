/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* TCP transport against real loopback sockets: IPv4 and IPv6 connect, bulk transfer across
 * threads with forced short writes, EOF and reset reporting, shutdown waking a reader,
 * refused and timed-out connects. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "transport/transport.h"

/* Listening socket on a loopback address, port chosen by the kernel. -1 if the family is
 * unavailable (IPv6 disabled). */
static int listen_on(int family, int backlog, unsigned *port)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_storage ss = {0};
    socklen_t sl;
    if (family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        sl = sizeof *a;
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        sl = sizeof *a;
    }
    if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || (backlog >= 0 && listen(fd, backlog) < 0)) {
        close(fd);
        return -1;
    }
    sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                    : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return fd;
}

/* Connected pair: client via rfs_tcp_connect, server via accept + rfs_tcp_from_fd. The
 * server end may be non-blocking (as an event-driven server would hand it over). */
static void pair_ex(int family, const char *host, const rfs_transport_opts *o, int nonblock,
                    rfs_transport **cli, rfs_transport **srv)
{
    unsigned port;
    int lfd = listen_on(family, 4, &port);
    assert_true(lfd >= 0);
    assert_int_equal(rfs_tcp_connect(host, port, o, cli), RFS_OK);
    int afd = accept4(lfd, NULL, NULL, nonblock ? SOCK_NONBLOCK : 0);
    assert_true(afd >= 0);
    assert_int_equal(rfs_tcp_from_fd(afd, o, srv), RFS_OK);
    close(lfd);
}

static void pair(int family, const char *host, const rfs_transport_opts *o, rfs_transport **cli,
                 rfs_transport **srv)
{
    pair_ex(family, host, o, 0, cli, srv);
}

static void exchange(rfs_transport *a, rfs_transport *b)
{
    struct iovec iov[2] = {{(void *)"hello ", 6}, {(void *)"world", 5}};
    assert_int_equal(rfs_transport_write_all(a, iov, 2), RFS_OK);
    char got[12] = {0};
    assert_int_equal(rfs_transport_read_all(b, got, 11), RFS_OK);
    assert_string_equal(got, "hello world");
}

static void test_ipv4(void **state)
{
    rfs_transport *c, *s;
    pair(AF_INET, "127.0.0.1", NULL, &c, &s);
    exchange(c, s);
    exchange(s, c);
    /* Peer names are "host:port" for messages. */
    assert_true(strncmp(c->peer, "127.0.0.1:", 10) == 0);
    assert_true(strncmp(s->peer, "127.0.0.1:", 10) == 0);
    rfs_transport_close(c);
    rfs_transport_close(s);
}

static void test_ipv6(void **state)
{
    unsigned port;
    int probe = listen_on(AF_INET6, 1, &port);
    if (probe < 0)
        skip(); /* no IPv6 loopback on this host */
    close(probe);
    rfs_transport *c, *s;
    pair(AF_INET6, "::1", NULL, &c, &s);
    exchange(c, s);
    assert_true(strncmp(c->peer, "[::1]:", 6) == 0);
    assert_true(strncmp(s->peer, "[::1]:", 6) == 0);
    rfs_transport_close(c);
    rfs_transport_close(s);
}

#define BULK (5u * 1024u * 1024u + 123u)

static uint8_t pattern(size_t i)
{
    return (uint8_t)((i * 131u) ^ (i >> 11));
}

struct writer_arg {
    rfs_transport *t;
    uint8_t *data;
    int rc;
};

/* Sends BULK bytes as 200 iovecs of uneven sizes (more than one sendmsg batch), through a
 * small socket buffer so the kernel takes them in many partial writes. */
static void *writer(void *p)
{
    struct writer_arg *a = p;
    enum { N = 200 };
    struct iovec iov[N];
    size_t off = 0;
    for (int i = 0; i < N; i++) {
        size_t len = i == N - 1 ? BULK - off : (size_t)(i % 7 == 0 ? 0 : 1000 + 97 * i);
        iov[i].iov_base = a->data + off;
        iov[i].iov_len = len;
        off += len;
    }
    a->rc = rfs_transport_write_all(a->t, iov, N);
    return NULL;
}

/* Writer thread on one end, reader on the other, reading in odd-sized pieces so reads and
 * writes never line up. */
static void bulk(rfs_transport *from, rfs_transport *to)
{
    uint8_t *data = malloc(BULK), *got = malloc(BULK);
    assert_non_null(data);
    assert_non_null(got);
    for (size_t i = 0; i < BULK; i++)
        data[i] = pattern(i);
    struct writer_arg a = {from, data, -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, writer, &a), 0);
    size_t off = 0, piece = 1;
    while (off < BULK) {
        size_t n = piece < BULK - off ? piece : BULK - off;
        assert_int_equal(rfs_transport_read_all(to, got + off, n), RFS_OK);
        off += n;
        piece = piece * 3 % 65521 + 1;
    }
    pthread_join(t, NULL);
    assert_int_equal(a.rc, RFS_OK);
    assert_memory_equal(got, data, BULK);
    free(data);
    free(got);
}

static void test_bulk_across_threads(void **state)
{
    rfs_transport_opts o = {.sndbuf = 16384, .rcvbuf = 16384};
    rfs_transport *c, *s;
    pair(AF_INET, "127.0.0.1", &o, &c, &s);
    bulk(c, s);
    bulk(s, c);
    rfs_transport_close(c);
    rfs_transport_close(s);
}

/* A non-blocking socket makes the kernel take partial writes and return EAGAIN; the
 * transport must still deliver every byte, in order, in both directions. (Buffers below
 * 16 KiB are avoided: with loopback's 64 KiB MSS they stall on TCP's persist timer.) */
static void test_bulk_nonblocking_fd(void **state)
{
    rfs_transport_opts o = {.sndbuf = 16384, .rcvbuf = 16384};
    rfs_transport *c, *s;
    pair_ex(AF_INET, "127.0.0.1", &o, 1, &c, &s);
    bulk(s, c);
    bulk(c, s);
    rfs_transport_close(c);
    rfs_transport_close(s);
}

static void test_eof(void **state)
{
    rfs_transport *c, *s;
    pair(AF_INET, "127.0.0.1", NULL, &c, &s);
    struct iovec iov = {(void *)"0123456789", 10};
    assert_int_equal(rfs_transport_write_all(s, &iov, 1), RFS_OK);
    rfs_transport_close(s);
    char buf[20];
    assert_int_equal(rfs_transport_read_all(c, buf, 20), RFS_E_CONN);
    assert_non_null(strstr(rfs_last_error(), "closed by peer after 10 of 20 bytes"));
    assert_non_null(strstr(rfs_last_error(), "127.0.0.1:"));
    assert_memory_equal(buf, "0123456789", 10);
    assert_int_equal(rfs_transport_read_all(c, buf, 1), RFS_E_CONN);
    assert_non_null(strstr(rfs_last_error(), "connection closed by peer"));
    /* Writing to a closed peer fails with RFS_E_CONN instead of killing us with SIGPIPE.
     * The first writes may still be accepted by the kernel; the RST makes a later one fail. */
    static uint8_t chunk[65536];
    struct iovec w = {chunk, sizeof chunk};
    int rc = RFS_OK;
    for (int i = 0; i < 200 && rc == RFS_OK; i++)
        rc = rfs_transport_write_all(c, &w, 1);
    assert_int_equal(rc, RFS_E_CONN);
    assert_non_null(strstr(rfs_last_error(), "while sending"));
    rfs_transport_close(c);
}

static void *blocked_reader(void *p)
{
    rfs_transport *t = p;
    char b[4];
    return (void *)(intptr_t)rfs_transport_read_all(t, b, sizeof b);
}

static void test_shutdown_wakes_reader(void **state)
{
    rfs_transport *c, *s;
    pair(AF_INET, "127.0.0.1", NULL, &c, &s);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, blocked_reader, c), 0);
    /* Whether the reader is already blocked or not, shutdown makes its read end. */
    c->ops->shutdown(c);
    void *rc;
    pthread_join(t, &rc);
    assert_int_equal((int)(intptr_t)rc, RFS_E_CONN);
    rfs_transport_close(c);
    rfs_transport_close(s);
}

static void test_refused(void **state)
{
    /* Bound but not listening: the port is ours, and connecting to it is refused. */
    unsigned port;
    int fd = listen_on(AF_INET, -1, &port);
    assert_true(fd >= 0);
    rfs_transport *c = (rfs_transport *)1;
    rfs_transport_opts o = {.connect_timeout_ms = 2000};
    assert_int_equal(rfs_tcp_connect("127.0.0.1", port, &o, &c), RFS_E_CONN);
    assert_null(c);
    assert_non_null(strstr(rfs_last_error(), "refused"));
    close(fd);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_timeout(void **state)
{
    /* A listener whose accept queue is full drops new SYNs, so a connect to it hangs until
     * our timeout fires: a local stand-in for a silent host. */
    unsigned port;
    int lfd = listen_on(AF_INET, 0, &port);
    assert_true(lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fillers[3];
    for (int i = 0; i < 3; i++) {
        fillers[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fillers[i], (struct sockaddr *)&a, sizeof a);
    }
    /* On loopback the handshake of a filler completes inside its connect() call, so the
     * queue is full before we try. */
    rfs_transport *c = NULL;
    rfs_transport_opts o = {.connect_timeout_ms = 300};
    double t0 = now_s();
    int rc = rfs_tcp_connect("127.0.0.1", port, &o, &c);
    double took = now_s() - t0;
    assert_int_equal(rc, RFS_E_TIMEOUT);
    assert_null(c);
    assert_non_null(strstr(rfs_last_error(), "300 ms"));
    /* Bounded: the timeout, not the kernel's minute-long SYN retries, ended the attempt. */
    assert_true(took < 10.0);
    for (int i = 0; i < 3; i++)
        close(fillers[i]);
    close(lfd);
}

static void test_bad_args(void **state)
{
    rfs_transport *c;
    assert_int_equal(rfs_tcp_connect("127.0.0.1", 0, NULL, &c), RFS_E_INVAL);
    assert_int_equal(rfs_tcp_connect("127.0.0.1", 70000, NULL, &c), RFS_E_INVAL);
    assert_int_equal(rfs_tcp_connect("", 1, NULL, &c), RFS_E_INVAL);
    assert_int_equal(rfs_tcp_connect("not an address", 7070, NULL, &c), RFS_E_CONN);
    assert_non_null(strstr(rfs_last_error(), "resolve"));
}

/* net.ipv4.tcp_slow_start_after_idle as this test sees it, -1 if unreadable. */
static int ssai_sysctl(void)
{
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_slow_start_after_idle", "r");
    int v = -1;
    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

/* reno is built into every kernel and open to unprivileged processes: set on both ends, read
 * back from the kernel, and judged as an algorithm that restarts after idle. */
static void test_congestion_set_and_described(void **state)
{
    rfs_transport_opts o = {.congestion = "reno"};
    rfs_transport *c, *s;
    pair(AF_INET, "127.0.0.1", &o, &c, &s);
    exchange(c, s);
    rfs_tcp_state st;
    assert_int_equal(rfs_tcp_describe(c, &st), RFS_OK);
    assert_string_equal(st.congestion, "reno");
    assert_int_equal(st.slow_start_after_idle, ssai_sysctl());
    assert_int_equal(st.restarts_after_idle, st.slow_start_after_idle != 0);
    assert_true(st.mss > 0 && st.cwnd_segments > 0 && st.rtt_ms >= 0);
    assert_int_equal(rfs_tcp_describe(s, &st), RFS_OK);
    assert_string_equal(st.congestion, "reno");
    rfs_transport_close(c);
    rfs_transport_close(s);
}

static void test_congestion_refused(void **state)
{
    assert_int_equal(rfs_tcp_check_congestion("reno"), RFS_OK);
    assert_int_equal(rfs_tcp_check_congestion("nosuchcc"), RFS_E_INVAL);
    assert_non_null(strstr(rfs_last_error(), "\"nosuchcc\" is not available"));
    assert_non_null(strstr(rfs_last_error(), "reno")); /* the list of those that are */
    const char *bad[] = {"", "a;b", "Reno", "averyveryverylongname"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(rfs_tcp_check_congestion(bad[i]), RFS_E_INVAL);
        assert_non_null(strstr(rfs_last_error(), "bad TCP congestion control name"));
    }
    /* Given to connect anyway, it fails the connect and says why. */
    unsigned port;
    int lfd = listen_on(AF_INET, 4, &port);
    assert_true(lfd >= 0);
    rfs_transport_opts o = {.congestion = "nosuchcc"};
    rfs_transport *c = NULL;
    assert_int_equal(rfs_tcp_connect("127.0.0.1", port, &o, &c), RFS_E_CONN);
    assert_null(c);
    assert_non_null(strstr(rfs_last_error(), "nosuchcc"));
    close(lfd);
}

static void not_tcp_close(rfs_transport *t)
{
    (void)t;
}

static void test_describe_needs_tcp(void **state)
{
    static const rfs_transport_ops other = {.close = not_tcp_close};
    rfs_transport t = {.ops = &other};
    rfs_tcp_state st;
    assert_int_equal(rfs_tcp_describe(&t, &st), RFS_E_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ipv4),
        cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_bulk_across_threads),
        cmocka_unit_test(test_bulk_nonblocking_fd),
        cmocka_unit_test(test_eof),
        cmocka_unit_test(test_shutdown_wakes_reader),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_congestion_set_and_described),
        cmocka_unit_test(test_congestion_refused),
        cmocka_unit_test(test_describe_needs_tcp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
