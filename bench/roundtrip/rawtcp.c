/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Raw TCP reference for bench/roundtrip: what one plain TCP connection does on this machine,
 * with the same work around it as rfs (read a file, send it, receive it, write a file).
 *
 *   rawtcp recv OUTFILE         listen on 127.0.0.1:0, print the port, write what arrives to OUTFILE
 *   rawtcp send PORT INFILE     send INFILE to 127.0.0.1:PORT
 *   rawtcp pingserver           listen on 127.0.0.1:0, print the port, echo 4-byte messages
 *   rawtcp pingclient PORT N    N 4-byte ping-pongs; prints {"median_us":..,"p10_us":..,"p90_us":..}
 *
 * Built by bench/roundtrip/run.py with `cc -O2`. Buffers are 1 MiB, like a large rfs frame. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF (1 << 20)

static void die(const char *what)
{
    fprintf(stderr, "rawtcp: %s: %s\n", what, strerror(errno));
    exit(1);
}

static int listen_any(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 1))
        die("bind/listen");
    socklen_t len = sizeof a;
    if (getsockname(s, (struct sockaddr *)&a, &len))
        die("getsockname");
    printf("%u\n", ntohs(a.sin_port));
    fflush(stdout);
    int c = accept(s, NULL, NULL);
    if (c < 0)
        die("accept");
    close(s);
    return c;
}

static int connect_port(const char *port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(port))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, (struct sockaddr *)&a, sizeof a))
        die("connect");
    return s;
}

static void write_all(int fd, const char *p, size_t n, const char *what)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            die(what);
        p += w;
        n -= (size_t)w;
    }
}

static int do_recv(const char *out)
{
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die(out);
    int c = listen_any();
    char *buf = malloc(BUF);
    unsigned long long total = 0;
    for (;;) {
        ssize_t r = read(c, buf, BUF);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            die("read socket");
        if (r == 0)
            break;
        write_all(fd, buf, (size_t)r, "write file");
        total += (unsigned long long)r;
    }
    if (close(fd))
        die("close file");
    /* Tell the sender everything is on (page-cache) disk, so its exit marks the end. */
    write_all(c, "k", 1, "ack");
    close(c);
    free(buf);
    fprintf(stderr, "rawtcp: received %llu bytes\n", total);
    return 0;
}

static int do_send(const char *port, const char *in)
{
    int fd = open(in, O_RDONLY);
    if (fd < 0)
        die(in);
    int s = connect_port(port);
    char *buf = malloc(BUF);
    for (;;) {
        ssize_t r = read(fd, buf, BUF);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            die("read file");
        if (r == 0)
            break;
        write_all(s, buf, (size_t)r, "write socket");
    }
    shutdown(s, SHUT_WR);
    char ack;
    if (read(s, &ack, 1) != 1)
        die("no ack from receiver");
    close(s);
    close(fd);
    free(buf);
    return 0;
}

static void read_exact(int fd, char *p, size_t n)
{
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            exit(r == 0 ? 0 : 1); /* peer closed: done */
        p += r;
        n -= (size_t)r;
    }
}

static void nodelay(int s)
{
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static int do_pingserver(void)
{
    int c = listen_any();
    nodelay(c);
    char m[4];
    for (;;) { /* read_exact exits when the client closes */
        read_exact(c, m, 4);
        write_all(c, m, 4, "pong");
    }
    return 0;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int do_pingclient(const char *port, int n)
{
    int s = connect_port(port);
    nodelay(s);
    double *t = malloc(sizeof(double) * (size_t)n);
    char m[4] = {1, 2, 3, 4};
    for (int i = 0; i < n + n / 10; i++) { /* first tenth warms up, not recorded */
        double t0 = now_us();
        write_all(s, m, 4, "ping");
        read_exact(s, m, 4);
        if (i >= n / 10)
            t[i - n / 10] = now_us() - t0;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    printf("{\"median_us\": %.3f, \"p10_us\": %.3f, \"p90_us\": %.3f, \"n\": %d}\n", t[n / 2],
           t[n / 10], t[n * 9 / 10], n);
    close(s);
    free(t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "recv") == 0)
        return do_recv(argv[2]);
    if (argc == 4 && strcmp(argv[1], "send") == 0)
        return do_send(argv[2], argv[3]);
    if (argc == 2 && strcmp(argv[1], "pingserver") == 0)
        return do_pingserver();
    if (argc == 4 && strcmp(argv[1], "pingclient") == 0 && atoi(argv[3]) > 0)
        return do_pingclient(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: rawtcp recv OUT | send PORT IN | pingserver | pingclient PORT N\n");
    return 2;
}
