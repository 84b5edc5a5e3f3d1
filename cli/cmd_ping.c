/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs ping URL [--count N]: round trips of an empty request, like ping(8) but without waiting
 * between probes (it measures the server and path, not a heartbeat). */
#include <stdio.h>

#include "cli/cli.h"

/* The third field of a net.ipv4.tcp_[rw]mem sysctl: how far autotuning may grow a socket's
 * buffer. -1 when unreadable. */
static long long tcp_mem_max(const char *which)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/sys/net/ipv4/%s", which);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -1;
    long long lo, def, hi;
    int n = fscanf(fp, "%lld %lld %lld", &lo, &def, &hi);
    fclose(fp);
    return n == 3 ? hi : -1;
}

/* One TCP connection carries at most its window per round trip, and this host's buffer maxima
 * bound the window: on a long path that, not the link, is often the limit (docs/tuning.md). */
static void print_window_cap(double rtt_ms)
{
    long long w = tcp_mem_max("tcp_wmem"), r = tcp_mem_max("tcp_rmem");
    if (rtt_ms < 1.0 || w <= 0 || r <= 0)
        return;
    /* A receiver advertises about half its buffer (net.ipv4.tcp_adv_win_scale's default). */
    double wr = (double)w / (rtt_ms / 1e3) / 1e6, rr = (double)r / 2 / (rtt_ms / 1e3) / 1e6;
    double need = 1e9 / 8 * (rtt_ms / 1e3); /* bytes in flight for 1 Gbit/s */
    printf("tcp: at this round trip one stream carries at most %.0f MB/s writing "
           "(net.ipv4.tcp_wmem max %lld) and %.0f MB/s reading (tcp_rmem max %lld)\n",
           wr, w, rr, r);
    if ((double)w < need || (double)r / 2 < need)
        printf("tcp: 1 Gbit/s needs %.1f MB in flight: raise net.ipv4.tcp_wmem and tcp_rmem's "
               "third field to at least %.0f on both hosts (and the server's), or use several "
               "streams (rfs_streams=auto, rfs put --streams N)\n",
               need / 1e6, 2 * need);
}

/* The connection as TCP runs it: the congestion control, and whether writes after a pause
 * (an application computing between checkpoints) restart in slow start (docs/tuning.md). */
static void print_tcp(const rfs_tcp_info *t)
{
    const char *ssai = t->slow_start_after_idle == 1   ? "on"
                       : t->slow_start_after_idle == 0 ? "off"
                                                       : "unknown";
    printf(
        "tcp: congestion control %s, slow start after idle %s, srtt %.3f ms, cwnd %u x %u bytes\n",
        t->congestion[0] ? t->congestion : "unknown", ssai, t->rtt_ms, t->cwnd_segments, t->mss);
    if (t->restarts_after_idle)
        printf("tcp: a write after an idle period longer than the retransmission timeout starts "
               "again from the initial window; on a long link see docs/tuning.md "
               "(RFS_TCP_CONGESTION=bbr or net.ipv4.tcp_slow_start_after_idle=0)\n");
}

int cli_cmd_ping(cli_ctx *c)
{
    char url[4400];
    rfs_name name;
    if (cli_url_normalize(c->cmd, c->o.args[0], url, sizeof url, &name))
        return CLI_EXIT_USAGE;
    char server[300];
    cli_server_str(&name, server, sizeof server);
    double min = 0, max = 0, sum = 0;
    rfs_tcp_info tcp;
    for (int i = 0; i < c->o.count; i++) {
        double rtt = 0;
        int rc = rfs_ping_tcp(url, &c->ropts, &rtt, &tcp);
        if (rc != RFS_OK)
            return cli_fail_remote(c, &name, rc, NULL);
        if (i == 0 || rtt < min)
            min = rtt;
        if (i == 0 || rtt > max)
            max = rtt;
        sum += rtt;
        if (!c->o.quiet)
            printf("reply from %s: seq=%d time=%.3f ms\n", server, i + 1, rtt * 1e3);
    }
    printf("%s: %d replies, rtt min/avg/max = %.3f/%.3f/%.3f ms\n", server, c->o.count, min * 1e3,
           sum / c->o.count * 1e3, max * 1e3);
    print_tcp(&tcp);
    print_window_cap(tcp.rtt_ms);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
