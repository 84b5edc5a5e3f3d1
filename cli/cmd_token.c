/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* rfs token: prints a fresh authentication token for rfsd's --token-file and the clients'
 * RFS_TOKEN: 32 random bytes from the kernel (getrandom), in hex. rfsd refuses tokens shorter
 * than 16 bytes, so sites need an easy way to make a good one. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "cli/cli.h"

#define TOKEN_BYTES 32

int cli_cmd_token(cli_ctx *c)
{
    uint8_t raw[TOKEN_BYTES];
    size_t got = 0;
    while (got < sizeof raw) { /* blocks only until the kernel's pool is first seeded */
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "rfs %s: no random bytes from the kernel: %s\n", c->cmd,
                    strerror(errno));
            return CLI_EXIT_FAIL;
        }
        got += (size_t)n;
    }
    char hex[2 * TOKEN_BYTES + 1];
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    memset(raw, 0, sizeof raw);
    int ok = printf("%s\n", hex) > 0 && fflush(stdout) == 0;
    memset(hex, 0, sizeof hex);
    if (!ok) {
        fprintf(stderr, "rfs %s: cannot write the token\n", c->cmd);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}
