/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs recover STAGING_DIR [--to rfs:HOST:PORT] [--force]: delivers the writes that ABT staged
 * but never sent (the process died or the server was unreachable), from every journal no live
 * process holds; see docs/abt.md "The journal and recovery". */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "recover/recover.h"

typedef struct progress_ctx {
    int quiet;
    char last[512];
} progress_ctx;

static void on_record(void *ctx, const char *name, uint64_t bytes_done)
{
    progress_ctx *p = ctx;
    if (p->quiet || strcmp(p->last, name) == 0)
        return;
    snprintf(p->last, sizeof p->last, "%s", name);
    fprintf(stderr, "rfs recover: delivering to %s (%llu bytes so far)\n", name,
            (unsigned long long)bytes_done);
}

/* Every problem is worth a line, even with --quiet: it says what was kept and why. */
static void on_note(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "rfs recover: %s\n", line);
}

int cli_cmd_recover(cli_ctx *c)
{
    const char *dir = c->o.args[0];
    progress_ctx p = {.quiet = c->o.quiet};
    rfs_abt_recover_opts ro = {.opts = &c->ropts,
                               .to = c->o.to,
                               .force = c->o.force,
                               .progress = on_record,
                               .note = on_note,
                               .ctx = &p};
    rfs_abt_recover_result res;
    int rc = rfs_abt_recover(dir, &ro, &res);
    if (rc != RFS_OK &&
        res.journals_done + res.journals_held + res.journals_kept + res.not_journals == 0) {
        /* Nothing was looked at (bad directory, bad --to): the cause is the whole story. */
        fprintf(stderr, "rfs recover: %s: %s\n", dir,
                rfs_last_error()[0] ? rfs_last_error() : rfs_strerror(rc));
        return CLI_EXIT_FAIL;
    }
    printf("rfs recover: %s: %llu records, %llu bytes delivered; %u journals done, %u held by "
           "other processes, %u kept, %u files not journals\n",
           dir, (unsigned long long)res.records, (unsigned long long)res.bytes, res.journals_done,
           res.journals_held, res.journals_kept, res.not_journals);
    return rc == RFS_OK ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
