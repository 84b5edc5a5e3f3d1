/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* `rfs cp rfs://A/f rfs://B/g` as a third-party copy: B pulls the file from A with a one-time
 * grant this client got from A, so the bytes never pass through here (docs/protocol.md
 * "Third-party copy"). This client only follows the pull, to draw its progress and report
 * its outcome; if it dies, B stops the pull and leaves the destination as it was. When either
 * server cannot (an older rfsd, B without --tpc on, a quota export) or --no-tpc is given, the
 * copy streams through this client as before; -v says why. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "client/tpc.h"

#define TPC_DEFAULT_STREAMS 4
#define POLL_FIRST_MS 5 /* a small file is done at once: ask again soon */
#define POLL_MAX_MS 250

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* One server's features, remembered for the run (cp -r asks for every file). */
static unsigned features_of(cli_ctx *c, const char *url, const rfs_name *n, int *rc)
{
    static char server[300];
    static unsigned cached;
    char s[300];
    cli_server_str(n, s, sizeof s);
    if (server[0] && !strcmp(server, s)) {
        *rc = RFS_OK;
        return cached;
    }
    unsigned f = 0;
    if ((*rc = rfs_tpc_features(url, &c->ropts, &f)) != RFS_OK)
        return 0;
    snprintf(server, sizeof server, "%s", s);
    cached = f;
    return f;
}

static void say_fallback(cli_ctx *c, const char *src, const char *dst, const char *why)
{
    if (c->o.verbose)
        fprintf(stderr,
                "rfs %s: %s -> %s: no server-to-server copy (%s); copying through this "
                "client\n",
                c->cmd, src, dst, why);
}

int cli_copy_tpc(cli_ctx *c, const char *src_url, const rfs_name *src, const char *url,
                 const rfs_name *dst, int *fallback)
{
    *fallback = 1;
    if (c->o.no_tpc) {
        say_fallback(c, src_url, url, "--no-tpc");
        return CLI_EXIT_OK;
    }
    int rc;
    unsigned f = features_of(c, url, dst, &rc);
    if (rc != RFS_OK)
        return *fallback = 0, cli_fail_remote(c, dst, rc, NULL);
    if (!(f & RFS_FEAT_TPC_DST)) {
        say_fallback(c, src_url, url,
                     (f & RFS_FEAT_TPC_SRC) ? "the destination server does not pull copies: "
                                              "rfsd --tpc on enables it"
                                            : "the destination server is an older rfsd");
        return CLI_EXIT_OK;
    }
    unsigned streams = c->o.streams > 0 ? (unsigned)c->o.streams : TPC_DEFAULT_STREAMS;
    if (streams > RFS_TPC_MAX_USES)
        streams = RFS_TPC_MAX_USES;
    rfs_tpc_grant_info g;
    rc = rfs_tpc_grant(src_url, &c->ropts, streams, &g);
    if (rc == RFS_E_UNSUPPORTED) {
        say_fallback(c, src_url, url, rfs_last_error());
        return CLI_EXIT_OK;
    }
    if (rc != RFS_OK)
        return *fallback = 0, cli_fail_remote(c, src, rc, NULL);
    uint32_t flags =
        (c->o.no_clobber ? RFS_TPC_EXCL : 0) | (c->o.verify ? RFS_TPC_VERIFY : 0) | RFS_TPC_SYNC;
    rfs_tpc_pull *p = NULL;
    rc = rfs_tpc_pull_begin(url, &c->ropts, src->host, src->port, src->path, &g, flags, 0, streams,
                            &p);
    explicit_bzero(g.key, sizeof g.key);
    if (rc == RFS_E_UNSUPPORTED) {
        say_fallback(c, src_url, url, rfs_last_error());
        return CLI_EXIT_OK;
    }
    *fallback = 0;
    if (rc != RFS_OK)
        return cli_fail_remote(c, dst, rc, NULL);
    progress pr;
    progress_init(&pr, dst->path, g.size, !c->o.quiet && !c->o.no_progress);
    int finished = 0, wait = POLL_FIRST_MS;
    uint64_t done = 0, total = g.size;
    uint32_t crc = 0;
    for (;;) { /* ends: the server finishes, fails, or the connection does (io timeout) */
        rc = rfs_tpc_pull_poll(p, &finished, &done, &total, &crc);
        if (rc != RFS_OK || finished)
            break;
        pr.total = total;
        progress_update(&pr, done);
        sleep_ms(wait);
        wait = wait * 2 > POLL_MAX_MS ? POLL_MAX_MS : wait * 2;
    }
    progress_finish(&pr, done, rc == RFS_OK);
    rfs_tpc_pull_end(p);
    if (rc != RFS_OK)
        return cli_fail_remote(c, dst, rc, NULL);
    if (c->o.verbose)
        fprintf(stderr,
                "rfs %s: %s -> %s: server-to-server copy of %" PRIu64 " bytes, crc32c "
                "%08x%s\n",
                c->cmd, src_url, url, total, crc, c->o.verify ? " (verified)" : "");
    return CLI_EXIT_OK;
}
