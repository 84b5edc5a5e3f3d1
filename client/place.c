/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Who this process is within its MPI job, for a server group's PLACE (docs/protocol.md
 * "Server groups"). Read from the environment the launcher set, not from MPI: connections are
 * made by threads that must not call MPI, and by programs that are not MPI programs at all. */
#include "client/client.h"

#include <stdlib.h>
#include <string.h>

static const char *first_env(const char *const *names)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        if (v && *v)
            return v;
    }
    return NULL;
}

int rfs_place_identity(uint8_t job[RFS_PLACE_JOB_LEN], uint32_t *rank)
{
    const char *off = getenv("RFS_PLACE");
    if (off && !strcmp(off, "off"))
        return -1;
    /* RFS_RANK first (tests, launchers we do not know); then MPICH/Hydra, Open MPI, PMIx */
    static const char *const ranks[] = {"RFS_RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                        NULL};
    const char *r = first_env(ranks);
    if (!r)
        return -1;
    char *end;
    unsigned long v = strtoul(r, &end, 10);
    if (*end || end == r || v > UINT32_MAX)
        return -1;
    *rank = (uint32_t)v;
    /* A job id only moves where a job's round-robin starts; MPICH's Hydra exports none, and
     * its jobs then all start at process 0. */
    static const char *const jobs[] = {"RFS_JOB", "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid",
                                       NULL};
    const char *j = first_env(jobs);
    memset(job, 0, RFS_PLACE_JOB_LEN);
    if (j) { /* two FNV-1a hashes of the id, with different offsets: 16 bytes */
        uint64_t h[2] = {1469598103934665603ull, 0x9E3779B97F4A7C15ull};
        for (int k = 0; k < 2; k++)
            for (const char *p = j; *p; p++)
                h[k] = (h[k] ^ (unsigned char)*p) * 1099511628211ull;
        memcpy(job, h, RFS_PLACE_JOB_LEN);
    }
    return 0;
}
