/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Placement of client ranks on the processes of a server group (group.h). */
#include "group.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "conn.h"

static unsigned self, size = 1;
static char **addr_of; /* NULL: no group */
static atomic_ullong kept, moved;

int rfsd_group_set(unsigned index, unsigned count, const char *const *addrs)
{
    char **a = calloc(count, sizeof *a);
    if (!a)
        return -1;
    for (unsigned i = 0; i < count; i++)
        if (!(a[i] = strdup(addrs[i])))
            return -1; /* start-up: the process exits */
    self = index;
    size = count;
    addr_of = a;
    return 0;
}

int rfsd_group_on(void)
{
    return addr_of != NULL;
}

unsigned rfsd_group_index(void)
{
    return self;
}

unsigned rfsd_group_place(const uint8_t job[RFS_PLACE_JOB_LEN], uint32_t rank, unsigned count)
{
    /* FNV-1a over the id: any mixing will do, it only has to be the same in every process */
    uint64_t h = 1469598103934665603ull;
    for (unsigned i = 0; i < RFS_PLACE_JOB_LEN; i++)
        h = (h ^ job[i]) * 1099511628211ull;
    int unknown = 1;
    for (unsigned i = 0; i < RFS_PLACE_JOB_LEN; i++)
        unknown &= job[i] == 0;
    uint64_t start = unknown ? 0 : h % count;
    return (unsigned)((start + rank % count) % count);
}

void rfsd_group_on_place(rfsd_conn *c, const rfs_req *req)
{
    rfs_rep rep = {.op = RFS_OP_PLACE, .id = req->id};
    unsigned at = rfsd_group_place(req->u.place.job, req->u.place.rank, size);
    rep.u.place.index = at;
    rep.u.place.count = size;
    if (at != self) { /* elsewhere: the client closes this connection and dials there */
        rep.u.place.addr.s = addr_of[at];
        rep.u.place.addr.len = (uint16_t)strlen(addr_of[at]);
        atomic_fetch_add(&moved, 1);
        RFS_LOGD("%s: rank %u is served by process %u at %s", c->peer, req->u.place.rank, at,
                 addr_of[at]);
    } else {
        atomic_fetch_add(&kept, 1);
        RFS_LOGD("%s: rank %u is served here (process %u)", c->peer, req->u.place.rank, at);
    }
    rfsd_conn_send(c, &rep);
}

void rfsd_group_counts(uint64_t *k, uint64_t *m)
{
    *k = atomic_load(&kept);
    *m = atomic_load(&moved);
}
