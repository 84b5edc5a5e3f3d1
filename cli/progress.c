/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Progress bar drawing; see progress.h. */
#include "cli/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

#define DRAW_INTERVAL_S 0.1
#define DEFAULT_MIN_SECONDS 1.0

double progress_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void progress_init(progress *p, const char *label, uint64_t total, int allowed)
{
    memset(p, 0, sizeof *p);
    p->enabled = allowed && isatty(STDERR_FILENO);
    p->start = progress_now();
    p->total = total;
    p->min_seconds = DEFAULT_MIN_SECONDS;
    const char *env = getenv("RFS_PROGRESS_MIN_SECONDS");
    if (env && *env) {
        char *end;
        double v = strtod(env, &end);
        if (*end == '\0' && v >= 0)
            p->min_seconds = v;
    }
    char base[256];
    cli_basename(label, base, sizeof base);
    size_t len = strlen(base);
    if (len >= sizeof p->label) /* keep the end of a long name: it is the distinctive part */
        snprintf(p->label, sizeof p->label, "...%s", base + len - (sizeof p->label - 4));
    else
        memcpy(p->label, base, len + 1);
}

static void human(double v, char *out, size_t cap)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(out, cap, "%.0f %s", v, units[u]);
    else
        snprintf(out, cap, "%.1f %s", v, units[u]);
}

static int term_columns(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

static void draw(progress *p, uint64_t done, double now)
{
    double elapsed = now - p->start;
    double rate = elapsed > 0 ? (double)done / elapsed : 0;
    double frac = p->total ? (double)done / (double)p->total : 1.0;
    if (frac > 1.0)
        frac = 1.0;
    char d[32], t[32], r[32], eta[32];
    human((double)done, d, sizeof d);
    human((double)p->total, t, sizeof t);
    human(rate, r, sizeof r);
    if (done >= p->total)
        snprintf(eta, sizeof eta, "%d:%02d", (int)elapsed / 60, (int)elapsed % 60);
    else if (rate > 0) {
        double left = (double)(p->total - done) / rate;
        if (left > 359999)
            left = 359999;
        int s = (int)left;
        if (s >= 3600)
            snprintf(eta, sizeof eta, "ETA %d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
        else
            snprintf(eta, sizeof eta, "ETA %d:%02d", s / 60, s % 60);
    } else
        snprintf(eta, sizeof eta, "ETA --:--");

    char tail[160];
    int tl = snprintf(tail, sizeof tail, " %3d%% %s / %s %s/s %s", (int)(frac * 100), d, t, r, eta);
    int cols =
        term_columns() - 1; /* never write into the last column: that wraps on some terminals */
    int bar = cols - (int)strlen(p->label) - tl - 3;
    char line[512];
    int n;
    if (bar >= 10) {
        if (bar > 60)
            bar = 60;
        char b[64];
        int fill = (int)(frac * bar);
        for (int i = 0; i < bar; i++)
            b[i] = i < fill ? '#' : '-';
        b[bar] = '\0';
        n = snprintf(line, sizeof line, "\r%s [%s]%s\033[K", p->label, b, tail);
    } else {
        n = snprintf(line, sizeof line, "\r%s%s\033[K", p->label, tail);
    }
    if (n > 0)
        fwrite(line, 1, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1, stderr);
    fflush(stderr);
    p->drawn = 1;
    p->last_draw = now;
}

void progress_update(progress *p, uint64_t done)
{
    if (!p->enabled)
        return;
    double now = progress_now();
    if (now - p->start < p->min_seconds)
        return;
    if (p->drawn && now - p->last_draw < DRAW_INTERVAL_S)
        return;
    draw(p, done, now);
}

void progress_finish(progress *p, uint64_t done, int ok)
{
    if (!p->enabled || !p->drawn)
        return;
    if (ok)
        draw(p, done, progress_now());
    fputc('\n', stderr);
    fflush(stderr);
}
