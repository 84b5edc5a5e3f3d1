/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The per-op facts table (proto.h, docs/protocol.md "Per-op facts"): the one place that says
 * which ops need authentication, are barriers, carry payloads, may be retried, and so on. It is
 * indexed by op number so the lookup on every frame is one bounds check and one load. */
#include "proto/proto.h"

#include <stddef.h>

#define PRE RFS_OPF_PRE_AUTH
#define FH RFS_OPF_HANDLE
#define BAR RFS_OPF_BARRIER
#define RQD RFS_OPF_REQ_DATA
#define RPD RFS_OPF_REP_DATA
#define WR RFS_OPF_WRITES
#define MUT RFS_OPF_MUTATES
#define VER RFS_OPF_VERSIONED
#define PACK RFS_OPF_PACK
#define IDEM RFS_OPF_IDEMPOTENT
#define QUICK RFS_OPF_QUICK
#define AUD RFS_OPF_AUDITED
#define RPK RFS_OPF_REP_PACK

#define OP(o, f) [RFS_OP_##o] = {RFS_OP_##o, #o, (f)}

static const rfs_op_facts table[] = {
    OP(HELLO, PRE | IDEM),
    OP(AUTH, PRE), /* answers one nonce: a second AUTH is refused */
    OP(PING, PRE | RQD | RPD | IDEM | QUICK),
    OP(SESSION, 0),                 /* may fence an earlier session */
    OP(TPC_AUTH, PRE),              /* spends one use of its grant */
    OP(PLACE, IDEM),                /* the answer depends on the rank and the group only */
    OP(COLL_JOIN, FH | BAR | IDEM), /* joining again with the same id changes nothing */
    OP(CAP_AUTH, PRE),              /* a capability instead of AUTH's token */
    OP(OPEN, VER | AUD),            /* create, exclusive and truncate make a second differ */
    /* CLOSE twice leaves the file closed; the client only repeats it on a reopened handle */
    OP(CLOSE, FH | BAR | IDEM),
    OP(PREAD, FH | RPD | RPK | IDEM),
    OP(PWRITE, FH | RQD | WR | MUT | VER | PACK | IDEM), /* the same bytes to the same place */
    OP(PREADV, FH | RPD | IDEM),
    OP(PWRITEV, FH | RQD | WR | MUT | VER | PACK | IDEM),
    OP(SYNC, FH | BAR | IDEM),
    OP(GET_SIZE, FH | BAR | IDEM | QUICK),
    OP(SET_SIZE, FH | BAR | MUT | VER | IDEM),
    OP(PREALLOCATE, FH | BAR | MUT | VER | IDEM),
    OP(STAT, IDEM | QUICK),
    OP(DELETE, AUD), /* the second finds nothing to delete */
    OP(RENAME, AUD),
    OP(MKDIR, AUD), /* the second finds the directory there */
    OP(LIST, IDEM),
    OP(CHECKSUM, FH | IDEM),
    OP(CHMOD, AUD | IDEM),
    OP(STATFS, IDEM),
    OP(WRITE_FILE, RQD | PACK | AUD), /* RFS_WF_EXCL makes a second fail */
    OP(READ_FILE, RPD | AUD | IDEM),
    OP(COUNTER, FH | QUICK),   /* adds its delta each time it runs */
    OP(LOCK, FH | BAR | IDEM), /* the same holder may take the same range again */
    OP(UNLOCK, FH | BAR | IDEM | QUICK),
    OP(LIST_TREE, RPD | IDEM),
    OP(SET_VIEW, FH | BAR | RQD | IDEM),
    OP(VIEW_READ, FH | RPD | RPK | IDEM),
    OP(VIEW_WRITE, FH | RQD | WR | MUT | VER | PACK | IDEM),
    OP(TPC_GRANT, AUD), /* each hands out a new capability */
    OP(TPC_PULL, AUD),  /* each starts a new copy */
    OP(TPC_STATUS, IDEM),
    /* each CAP_ISSUE signs a new capability; revoking twice leaves it revoked; setting an
     * object's lease to the same end again changes nothing */
    OP(CAP_ISSUE, AUD),
    OP(CAP_REVOKE, AUD | IDEM),
    OP(OBJ_LEASE, AUD | IDEM),
};

const rfs_op_facts *rfs_op_facts_of(uint16_t op)
{
    if (op >= sizeof table / sizeof table[0] || !table[op].name)
        return NULL;
    return &table[op];
}

int rfs_op_has(uint16_t op, unsigned flags)
{
    const rfs_op_facts *f = rfs_op_facts_of(op);
    return f && (f->flags & flags) == flags;
}

int rfs_op_known(uint16_t op)
{
    return rfs_op_facts_of(op) != NULL;
}

const char *rfs_op_name(uint16_t op)
{
    const rfs_op_facts *f = rfs_op_facts_of(op);
    return f ? f->name : "UNKNOWN";
}
