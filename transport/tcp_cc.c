/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Congestion control choice and TCP diagnostics.
 *
 * Why this matters to rfs: a checkpointing application writes, computes for seconds, writes
 * again. With a loss-based congestion control (cubic, Linux's default, or reno) and
 * net.ipv4.tcp_slow_start_after_idle=1 (the default), every write after a pause longer than the
 * retransmission timeout starts from the initial window again and spends several round trips
 * in slow start: on a 100 Mbit/s, 50 ms link a 4 MiB write takes 528 ms instead of 387 ms
 * (docs/tuning.md). bbr is exempt (the kernel skips the restart for algorithms that run their
 * own control loop). Clients choose with $RFS_TCP_CONGESTION, rfsd with --tcp-congestion. */
#include "transport/tcp_cc.h"

#include "common/err.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* First line of a /proc/sys file, without its newline; "" if unreadable. */
static void read_sysctl(const char *path, char *buf, size_t cap)
{
    buf[0] = 0;
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (!fgets(buf, (int)cap, f))
        buf[0] = 0;
    fclose(f);
    buf[strcspn(buf, "\n")] = 0;
}

static int valid_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= RFS_TCP_CC_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
              name[i] == '_'))
            return 0;
    return 1;
}

static int explain(const char *name, int err)
{
    char list[512];
    if (err == ENOENT) {
        read_sysctl("/proc/sys/net/ipv4/tcp_available_congestion_control", list, sizeof list);
        return rfs_fail(RFS_E_INVAL,
                        "TCP congestion control \"%s\" is not available on this "
                        "kernel (available: %s; others may need their module loaded)",
                        name, list[0] ? list : "unknown");
    }
    if (err == EPERM) {
        read_sysctl("/proc/sys/net/ipv4/tcp_allowed_congestion_control", list, sizeof list);
        return rfs_fail(
            RFS_E_INVAL,
            "TCP congestion control \"%s\" is not permitted for this "
            "process (without CAP_NET_ADMIN only net.ipv4.tcp_allowed_congestion_control "
            "may be used: %s)",
            name, list[0] ? list : "unknown");
    }
    return rfs_fail(RFS_E_INVAL, "TCP congestion control \"%s\": %s", name, strerror(err));
}

int rfs_tcp_set_congestion(int fd, const char *name)
{
    if (!name || !valid_name(name))
        return rfs_fail(RFS_E_INVAL,
                        "bad TCP congestion control name \"%s\" (expected a kernel "
                        "name such as bbr or cubic, at most %d characters)",
                        name ? name : "", RFS_TCP_CC_MAX - 1);
    if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, (socklen_t)strlen(name)) < 0)
        return explain(name, errno);
    return RFS_OK;
}

int rfs_tcp_check_congestion(const char *name)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return rfs_fail(RFS_E_INVAL,
                        "TCP congestion control \"%s\": cannot make a socket to "
                        "check it: %s",
                        name ? name : "", strerror(errno));
    int rc = rfs_tcp_set_congestion(fd, name);
    close(fd);
    return rc;
}

int rfs_tcp_describe_fd(int fd, rfs_tcp_state *out)
{
    memset(out, 0, sizeof *out);
    socklen_t len = sizeof out->congestion - 1;
    if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, out->congestion, &len) < 0)
        return rfs_fail(RFS_E_IO, "TCP_CONGESTION: %s", strerror(errno));
    out->congestion[len < sizeof out->congestion ? len : sizeof out->congestion - 1] = 0;
    struct tcp_info ti;
    memset(&ti, 0, sizeof ti);
    len = sizeof ti;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
        return rfs_fail(RFS_E_IO, "TCP_INFO: %s", strerror(errno));
    out->rtt_ms = ti.tcpi_rtt / 1000.0;
    out->cwnd_segments = ti.tcpi_snd_cwnd;
    out->mss = ti.tcpi_snd_mss;
    /* /proc/sys/net is the calling thread's network namespace, the socket's in every case
     * rfs makes its own sockets. */
    char v[32];
    read_sysctl("/proc/sys/net/ipv4/tcp_slow_start_after_idle", v, sizeof v);
    out->slow_start_after_idle = v[0] == '0' ? 0 : v[0] == '1' ? 1 : -1;
    int rate_based = strncmp(out->congestion, "bbr", 3) == 0;
    out->restarts_after_idle = out->slow_start_after_idle != 0 && !rate_based;
    return RFS_OK;
}
