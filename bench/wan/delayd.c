/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* delayd: the delay stage of the rfs WAN testbed.
 *
 * The machine has no netem, so latency is added here, per IP packet, which keeps TCP end to
 * end (the kernels at both ends see the real RTT, so windows, slow start and congestion
 * control behave as on a long path; a TCP-terminating proxy would hide all of that).
 *
 * delayd creates one TUN device in each of two network namespaces (ns A = client side,
 * ns B = server side). Whatever the kernel in A sends out of its TUN device, delayd reads,
 * stamps with "release at now + D" and keeps in a FIFO; when the time comes it writes the
 * packet into B's TUN device, where B's kernel receives it. The same happens B -> A. The two
 * devices thus form a point-to-point link with one-way delay D; the rate limit is a tbf qdisc
 * that bench/wan/up puts on each device (egress, before the delay).
 *
 * Packets per second is what limits a userspace forwarder on 2 cores, so the devices are made
 * with IFF_VNET_HDR and TCP segmentation/checksum offload: the kernel hands over TSO super
 * packets of up to 64 KiB with a virtio-net header, and delayd passes header and packet
 * unchanged to the other device, where the kernel accepts it like a GRO-merged packet. The
 * wire MTU seen by TCP stays whatever the script sets. --no-offload turns this off.
 *
 * One thread per direction, each with its own byte ring (variable-length records, no copies:
 * read() lands directly in the ring), so nothing is shared between threads but counters.
 * The main thread only handles signals: SIGUSR1 dumps counters as JSON to --stats,
 * SIGTERM/SIGINT exit (closing the TUN fds deletes the devices).
 *
 * SIGRTMIN cuts the link and SIGRTMIN+1 heals it (bench/wan/linkcut.py). While cut, every
 * packet read and every packet still queued is dropped without a word: TCP at both ends sees
 * silence, as on a broken long path (no RST, no ICMP, no local error). The kernel has no
 * netfilter and no tc drop action here, so the cut lives where the packets already pass.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* Largest packet a TUN read can return: IPv4/IPv6 GSO packets are at most 64 KiB, plus the
 * 10/12-byte virtio-net header. Anything larger is impossible without BIG TCP on the device. */
#define MAX_PKT (65536 + 64)
#define REC_HDR 16u
#define MAX_REC (REC_HDR + MAX_PKT + 16)
#define READ_BATCH 64
#define IDLE_WAKE_NS 100000000LL /* wake at least every 100 ms to notice shutdown */

struct rec_hdr {
    int64_t release_ns;
    uint32_t len;
    uint32_t pad;
};

/* FIFO of variable-length records in one buffer. Records never straddle the end: when the
 * space left at the end is too small, the writer restarts at 0 and remembers where the old
 * records end (wrap_at). Only one thread touches a ring. */
struct ring {
    uint8_t *buf;
    size_t size, head, tail, wrap_at, bytes;
    size_t count;
};

struct dir_stats {
    _Atomic uint64_t pkts, bytes, drops_full, drops_cut, write_errs, max_queued_bytes;
};

struct direction {
    const char *name;
    int in_fd, out_fd;
    int64_t delay_ns;
    struct ring ring;
    struct dir_stats st;
    pthread_t thread;
};

static atomic_int stop_flag;

/* 1 while the link is cut (SIGRTMIN), 0 once healed (SIGRTMIN+1). */
static _Atomic int cut_flag;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static size_t rec_size(uint32_t len)
{
    return REC_HDR + (((size_t)len + 15u) & ~(size_t)15u);
}

/* Where the next record may be written (room for MAX_REC guaranteed), or NULL if full. */
static uint8_t *ring_reserve(struct ring *r)
{
    if (r->count == 0) {
        r->head = r->tail = 0;
        r->wrap_at = r->size;
    }
    if (r->tail >= r->head) {
        if (r->size - r->tail >= MAX_REC)
            return r->buf + r->tail;
        /* strict '>' keeps tail != head while records exist */
        if (r->head > MAX_REC) {
            r->wrap_at = r->tail;
            r->tail = 0;
            return r->buf;
        }
        return NULL;
    }
    if (r->head - r->tail > MAX_REC)
        return r->buf + r->tail;
    return NULL;
}

static void ring_commit(struct ring *r, int64_t release_ns, uint32_t len)
{
    struct rec_hdr *h = (struct rec_hdr *)(r->buf + r->tail);
    h->release_ns = release_ns;
    h->len = len;
    r->tail += rec_size(len);
    r->count++;
    r->bytes += len;
}

static struct rec_hdr *ring_front(struct ring *r)
{
    return r->count ? (struct rec_hdr *)(r->buf + r->head) : NULL;
}

static void ring_pop(struct ring *r)
{
    struct rec_hdr *h = ring_front(r);
    r->bytes -= h->len;
    r->head += rec_size(h->len);
    r->count--;
    if (r->head >= r->wrap_at) {
        r->head = 0;
        r->wrap_at = r->size;
    }
}

static void stat_max(_Atomic uint64_t *slot, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(slot, memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak(slot, &cur, v))
        ;
}

/* Write every packet whose release time has come. Returns 1 if the output device pushed back
 * (EAGAIN) and we must wait for POLLOUT, else 0. */
static int release_due(struct direction *d)
{
    struct rec_hdr *h;
    int64_t now = now_ns();
    while ((h = ring_front(&d->ring)) != NULL && h->release_ns <= now) {
        if (atomic_load_explicit(&cut_flag, memory_order_relaxed)) {
            /* queued before the cut, due during it: lost on the broken path */
            atomic_fetch_add_explicit(&d->st.drops_cut, 1, memory_order_relaxed);
            ring_pop(&d->ring);
            continue;
        }
        ssize_t n = write(d->out_fd, (uint8_t *)h + REC_HDR, h->len);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 1;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            atomic_fetch_add_explicit(&d->st.write_errs, 1, memory_order_relaxed);
        ring_pop(&d->ring);
        /* refresh the clock only when the head is not yet due, saving a vDSO call per packet */
        if ((h = ring_front(&d->ring)) != NULL && h->release_ns > now)
            now = now_ns();
    }
    return 0;
}

/* Read up to READ_BATCH packets that are waiting, stamping each with its release time. */
static void read_batch(struct direction *d, uint8_t *scratch)
{
    for (int i = 0; i < READ_BATCH; i++) {
        uint8_t *slot = ring_reserve(&d->ring);
        uint8_t *dst = slot ? slot + REC_HDR : scratch;
        ssize_t n = read(d->in_fd, dst, MAX_PKT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return; /* EAGAIN: drained */
        }
        if (n == 0)
            return;
        if (atomic_load_explicit(&cut_flag, memory_order_relaxed)) {
            atomic_fetch_add_explicit(&d->st.drops_cut, 1, memory_order_relaxed);
            continue;
        }
        if (!slot) {
            /* more than --ring-mb in flight: behave like a router with a full buffer */
            atomic_fetch_add_explicit(&d->st.drops_full, 1, memory_order_relaxed);
            continue;
        }
        ring_commit(&d->ring, now_ns() + d->delay_ns, (uint32_t)n);
        atomic_fetch_add_explicit(&d->st.pkts, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&d->st.bytes, (uint64_t)n, memory_order_relaxed);
        stat_max(&d->st.max_queued_bytes, d->ring.bytes);
    }
}

static void *direction_main(void *arg)
{
    struct direction *d = arg;
    uint8_t *scratch = malloc(MAX_PKT);
    if (!scratch) {
        perror("delayd: malloc");
        exit(1);
    }
    /* default 50 us timer slack would add jitter to every release */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    while (!atomic_load(&stop_flag)) {
        int blocked = release_due(d);
        struct pollfd pfd[2] = {
            {.fd = d->in_fd, .events = POLLIN},
            {.fd = d->out_fd, .events = blocked ? POLLOUT : 0},
        };
        int64_t wait = IDLE_WAKE_NS;
        struct rec_hdr *h = ring_front(&d->ring);
        if (h && !blocked) {
            wait = h->release_ns - now_ns();
            if (wait < 0)
                wait = 0;
            if (wait > IDLE_WAKE_NS)
                wait = IDLE_WAKE_NS;
        }
        struct timespec ts = {.tv_sec = wait / 1000000000LL, .tv_nsec = wait % 1000000000LL};
        int rc = ppoll(pfd, blocked ? 2 : 1, &ts, NULL);
        if (rc < 0 && errno != EINTR) {
            perror("delayd: ppoll");
            exit(1);
        }
        if (rc > 0 && (pfd[0].revents & POLLIN))
            read_batch(d, scratch);
    }
    free(scratch);
    return NULL;
}

/* Create TUN device `name` inside the network namespace at `ns_path` (e.g. /run/netns/x). */
static int open_tun_in_ns(const char *ns_path, const char *name, int offload, int home_ns)
{
    int ns = open(ns_path, O_RDONLY | O_CLOEXEC);
    if (ns < 0 || setns(ns, CLONE_NEWNET) < 0) {
        fprintf(stderr, "delayd: enter %s: %s\n", ns_path, strerror(errno));
        exit(1);
    }
    close(ns);
    /* the device is created in the namespace of the thread that opens /dev/net/tun */
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        perror("delayd: /dev/net/tun");
        exit(1);
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI | (offload ? IFF_VNET_HDR : 0);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        fprintf(stderr, "delayd: TUNSETIFF %s in %s: %s\n", name, ns_path, strerror(errno));
        exit(1);
    }
    if (offload) {
        /* both devices use the same header size and flags, so packets pass through as-is */
        unsigned long off = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6;
        if (ioctl(fd, TUNSETOFFLOAD, off) < 0) {
            perror("delayd: TUNSETOFFLOAD");
            exit(1);
        }
    }
    if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
        perror("delayd: O_NONBLOCK");
        exit(1);
    }
    if (setns(home_ns, CLONE_NEWNET) < 0) {
        perror("delayd: return to own netns");
        exit(1);
    }
    return fd;
}

static void dump_stats(const char *path, struct direction *dirs, int64_t start_ns)
{
    if (!path)
        return;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f, "{\"uptime_s\": %.3f, \"cut\": %d", (double)(now_ns() - start_ns) / 1e9,
            atomic_load(&cut_flag));
    for (int i = 0; i < 2; i++) {
        struct dir_stats *s = &dirs[i].st;
        fprintf(f,
                ", \"%s\": {\"pkts\": %llu, \"bytes\": %llu, \"drops_full\": %llu, "
                "\"drops_cut\": %llu, \"write_errs\": %llu, \"max_queued_bytes\": %llu}",
                dirs[i].name, (unsigned long long)atomic_load(&s->pkts),
                (unsigned long long)atomic_load(&s->bytes),
                (unsigned long long)atomic_load(&s->drops_full),
                (unsigned long long)atomic_load(&s->drops_cut),
                (unsigned long long)atomic_load(&s->write_errs),
                (unsigned long long)atomic_load(&s->max_queued_bytes));
    }
    fprintf(f, "}\n");
    fclose(f);
    rename(tmp, path);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: delayd --ns-a PATH --ns-b PATH --delay-us N [--dev NAME] [--ring-mb N]\n"
            "              [--pidfile F] [--stats F] [--no-offload]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *ns_a = NULL, *ns_b = NULL, *dev = "rfsw0", *pidfile = NULL, *stats = NULL;
    long long delay_us = -1;
    long ring_mb = 64;
    int offload = 1;
    static const struct option opts[] = {
        {"ns-a", required_argument, 0, 'a'},
        {"ns-b", required_argument, 0, 'b'},
        {"delay-us", required_argument, 0, 'd'},
        {"dev", required_argument, 0, 'n'},
        {"ring-mb", required_argument, 0, 'r'},
        {"pidfile", required_argument, 0, 'p'},
        {"stats", required_argument, 0, 's'},
        {"no-offload", no_argument, 0, 'o'},
        {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'a': ns_a = optarg; break;
        case 'b': ns_b = optarg; break;
        case 'n': dev = optarg; break;
        case 'p': pidfile = optarg; break;
        case 's': stats = optarg; break;
        case 'o': offload = 0; break;
        case 'd':
            delay_us = strtoll(optarg, &end, 10);
            if (!*optarg || *end || delay_us < 0 || delay_us > 10000000)
                usage();
            break;
        case 'r':
            ring_mb = strtol(optarg, &end, 10);
            if (!*optarg || *end || ring_mb < 1 || ring_mb > 4096)
                usage();
            break;
        default: usage();
        }
    }
    if (!ns_a || !ns_b || delay_us < 0 || strlen(dev) >= IFNAMSIZ)
        usage();

    /* signals are taken synchronously by the main thread only */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGUSR1);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGRTMIN);
    sigaddset(&sigs, SIGRTMIN + 1);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    int home_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home_ns < 0) {
        perror("delayd: /proc/self/ns/net");
        return 1;
    }
    struct direction dirs[2];
    memset(dirs, 0, sizeof dirs);
    int fd_a = open_tun_in_ns(ns_a, dev, offload, home_ns);
    int fd_b = open_tun_in_ns(ns_b, dev, offload, home_ns);
    dirs[0].name = "a_to_b";
    dirs[0].in_fd = fd_a;
    dirs[0].out_fd = fd_b;
    dirs[1].name = "b_to_a";
    dirs[1].in_fd = fd_b;
    dirs[1].out_fd = fd_a;
    for (int i = 0; i < 2; i++) {
        dirs[i].delay_ns = delay_us * 1000LL;
        dirs[i].ring.size = (size_t)ring_mb << 20;
        if (dirs[i].ring.size < 2 * MAX_REC)
            dirs[i].ring.size = 2 * MAX_REC;
        dirs[i].ring.buf = malloc(dirs[i].ring.size);
        if (!dirs[i].ring.buf) {
            perror("delayd: ring");
            return 1;
        }
        dirs[i].ring.wrap_at = dirs[i].ring.size;
    }
    int64_t start = now_ns();
    for (int i = 0; i < 2; i++) {
        if (pthread_create(&dirs[i].thread, NULL, direction_main, &dirs[i]) != 0) {
            fprintf(stderr, "delayd: pthread_create failed\n");
            return 1;
        }
    }
    /* the pid file doubles as the "devices exist" signal for bench/wan/up */
    if (pidfile) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", pidfile);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0 ||
            rename(tmp, pidfile) != 0) {
            perror("delayd: pidfile");
            return 1;
        }
    }
    fprintf(stderr, "delayd: pid %ld dev %s delay %lld us offload %d ring %ld MiB\n",
            (long)getpid(), dev, delay_us, offload, ring_mb);
    for (;;) {
        int sig = 0;
        if (sigwait(&sigs, &sig) != 0)
            continue;
        if (sig == SIGUSR1) {
            dump_stats(stats, dirs, start);
            continue;
        }
        if (sig == SIGRTMIN || sig == SIGRTMIN + 1) {
            atomic_store(&cut_flag, sig == SIGRTMIN);
            /* the stats file is how linkcut.py learns the state took effect */
            dump_stats(stats, dirs, start);
            continue;
        }
        break;
    }
    atomic_store(&stop_flag, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(dirs[i].thread, NULL);
    dump_stats(stats, dirs, start);
    if (pidfile)
        unlink(pidfile);
    return 0;
}
