/* rfs recover STAGING_DIR: delivers the writes that ABT staged but never sent (the process died
 * or the server was unreachable), from every journal no live process holds; see docs/abt.md. */
#include <stdio.h>
#include <string.h>

#include "abt/abt.h"
#include "cli/cli.h"

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

int cli_cmd_recover(cli_ctx *c)
{
    const char *dir = c->o.args[0];
    progress_ctx p = {.quiet = c->o.quiet};
    uint64_t records = 0, bytes = 0;
    int rc = rfs_abt_recover(dir, &c->ropts, on_record, &p, &records, &bytes);
    if (rc != RFS_OK) {
        fprintf(stderr, "rfs recover: %s: %s (%llu records, %llu bytes delivered before it)\n",
                dir, rfs_last_error()[0] ? rfs_last_error() : rfs_strerror(rc),
                (unsigned long long)records, (unsigned long long)bytes);
        return CLI_EXIT_FAIL;
    }
    printf("rfs recover: %s: %llu records, %llu bytes delivered\n", dir,
           (unsigned long long)records, (unsigned long long)bytes);
    return CLI_EXIT_OK;
}
