/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The per-op facts table (proto/op_facts.c): every op of rfs_op has exactly one entry, no other
 * number has one, the facts agree with each other, and the ones the protocol document lists by
 * name (barriers, pre-authentication ops, payloads) are what it says. */
#include "proto_util.h"

/* No default: a new member of rfs_op that is not added here fails the build (-Wswitch), and
 * the test below then fails until the table has it too. */
static int in_enum(rfs_op op)
{
    switch (op) {
    case RFS_OP_HELLO:
    case RFS_OP_AUTH:
    case RFS_OP_PING:
    case RFS_OP_SESSION:
    case RFS_OP_TPC_AUTH:
    case RFS_OP_PLACE:
    case RFS_OP_COLL_JOIN:
    case RFS_OP_OPEN:
    case RFS_OP_CLOSE:
    case RFS_OP_PREAD:
    case RFS_OP_PWRITE:
    case RFS_OP_PREADV:
    case RFS_OP_PWRITEV:
    case RFS_OP_SYNC:
    case RFS_OP_GET_SIZE:
    case RFS_OP_SET_SIZE:
    case RFS_OP_PREALLOCATE:
    case RFS_OP_STAT:
    case RFS_OP_DELETE:
    case RFS_OP_RENAME:
    case RFS_OP_MKDIR:
    case RFS_OP_LIST:
    case RFS_OP_CHECKSUM:
    case RFS_OP_CHMOD:
    case RFS_OP_STATFS:
    case RFS_OP_WRITE_FILE:
    case RFS_OP_READ_FILE:
    case RFS_OP_COUNTER:
    case RFS_OP_LOCK:
    case RFS_OP_UNLOCK:
    case RFS_OP_LIST_TREE:
    case RFS_OP_SET_VIEW:
    case RFS_OP_VIEW_READ:
    case RFS_OP_VIEW_WRITE:
    case RFS_OP_TPC_GRANT:
    case RFS_OP_TPC_PULL:
    case RFS_OP_TPC_STATUS:
    case RFS_OP_CAP_AUTH:
    case RFS_OP_CAP_ISSUE:
    case RFS_OP_CAP_REVOKE:
    case RFS_OP_OBJ_LEASE: return 1;
    }
    return 0;
}

static void test_every_op_has_one_entry(void **state)
{
    (void)state;
    unsigned known = 0;
    for (uint32_t n = 0; n <= UINT16_MAX; n++) {
        const rfs_op_facts *f = rfs_op_facts_of((uint16_t)n);
        int member = in_enum((rfs_op)n);
        if (member != (f != NULL))
            fail_msg("op %u: enum member %d, table entry %d", n, member, f != NULL);
        assert_int_equal(rfs_op_known((uint16_t)n), member);
        if (!f) {
            assert_string_equal(rfs_op_name((uint16_t)n), "UNKNOWN");
            continue;
        }
        known++;
        assert_int_equal(f->op, n);
        assert_non_null(f->name);
        assert_string_equal(rfs_op_name((uint16_t)n), f->name);
    }
    assert_int_equal(known, 41);
    assert_string_equal(rfs_op_name(RFS_OP_VIEW_WRITE), "VIEW_WRITE");
}

/* Facts that imply others: a table edit that breaks one is a mistake, not a new rule. */
static void test_facts_are_consistent(void **state)
{
    (void)state;
    for (uint32_t n = 0; n <= UINT16_MAX; n++) {
        const rfs_op_facts *f = rfs_op_facts_of((uint16_t)n);
        if (!f)
            continue;
        unsigned x = f->flags;
        if (x & RFS_OPF_WRITES)
            assert_true((x & RFS_OPF_MUTATES) && (x & RFS_OPF_REQ_DATA));
        if (x & RFS_OPF_MUTATES)
            assert_true((x & RFS_OPF_HANDLE) && (x & RFS_OPF_VERSIONED));
        if (x & RFS_OPF_BARRIER)
            assert_true(x & RFS_OPF_HANDLE);
        if (x & RFS_OPF_PACK)
            assert_true(x & RFS_OPF_REQ_DATA);
        if (x & RFS_OPF_REP_PACK)
            assert_true(x & RFS_OPF_REP_DATA);
        if (x & RFS_OPF_PRE_AUTH)
            assert_false(x & (RFS_OPF_HANDLE | RFS_OPF_AUDITED));
    }
}

static unsigned ops_with(unsigned flag)
{
    unsigned count = 0;
    for (uint32_t n = 0; n <= UINT16_MAX; n++)
        count += rfs_op_has((uint16_t)n, flag);
    return count;
}

static void test_documented_facts(void **state)
{
    (void)state;
    /* docs/protocol.md, "Pipelining": the barriers, and nothing else */
    const uint16_t barriers[] = {RFS_OP_SYNC,     RFS_OP_CLOSE,       RFS_OP_GET_SIZE,
                                 RFS_OP_SET_SIZE, RFS_OP_PREALLOCATE, RFS_OP_LOCK,
                                 RFS_OP_UNLOCK,   RFS_OP_SET_VIEW,    RFS_OP_COLL_JOIN};
    for (size_t i = 0; i < sizeof barriers / sizeof barriers[0]; i++)
        assert_true(rfs_op_has(barriers[i], RFS_OPF_BARRIER));
    assert_int_equal(ops_with(RFS_OPF_BARRIER), 9);
    /* before authentication: HELLO, AUTH, PING, TPC_AUTH, CAP_AUTH */
    assert_true(rfs_op_has(RFS_OP_TPC_AUTH, RFS_OPF_PRE_AUTH));
    assert_true(rfs_op_has(RFS_OP_CAP_AUTH, RFS_OPF_PRE_AUTH));
    assert_true(rfs_op_has(RFS_OP_PING, RFS_OPF_PRE_AUTH));
    assert_false(rfs_op_has(RFS_OP_SESSION, RFS_OPF_PRE_AUTH));
    assert_int_equal(ops_with(RFS_OPF_PRE_AUTH), 5);
    /* request payloads: PING, PWRITE, PWRITEV, SET_VIEW, VIEW_WRITE, WRITE_FILE */
    assert_int_equal(ops_with(RFS_OPF_REQ_DATA), 6);
    assert_true(rfs_op_has(RFS_OP_SET_VIEW, RFS_OPF_REQ_DATA | RFS_OPF_BARRIER));
    assert_false(rfs_op_has(RFS_OP_SET_VIEW, RFS_OPF_PACK));
    /* reply payloads: PING, PREAD, PREADV, VIEW_READ, READ_FILE, LIST_TREE */
    assert_int_equal(ops_with(RFS_OPF_REP_DATA), 6);
    assert_true(rfs_op_has(RFS_OP_READ_FILE, RFS_OPF_REP_DATA));
    assert_true(rfs_op_has(RFS_OP_LIST_TREE, RFS_OPF_REP_DATA | RFS_OPF_IDEMPOTENT));
    /* versions: OPEN and what changes an open file; not WRITE_FILE (no handle) */
    assert_true(rfs_op_has(RFS_OP_OPEN, RFS_OPF_VERSIONED));
    assert_false(rfs_op_has(RFS_OP_OPEN, RFS_OPF_MUTATES));
    assert_false(rfs_op_has(RFS_OP_WRITE_FILE, RFS_OPF_VERSIONED));
    assert_int_equal(ops_with(RFS_OPF_VERSIONED), 6);
    /* compressed payloads: the three writes and WRITE_FILE */
    assert_true(rfs_op_has(RFS_OP_WRITE_FILE, RFS_OPF_PACK));
    assert_int_equal(ops_with(RFS_OPF_PACK), 4);
    /* compressed replies: reads whose reply body is the payload alone */
    assert_true(rfs_op_has(RFS_OP_VIEW_READ, RFS_OPF_REP_PACK));
    assert_false(rfs_op_has(RFS_OP_PREADV, RFS_OPF_REP_PACK));
    assert_int_equal(ops_with(RFS_OPF_REP_PACK), 2);
    /* retries: the same bytes again are harmless, a second fetch-and-add or delete is not */
    assert_true(rfs_op_has(RFS_OP_PWRITE, RFS_OPF_IDEMPOTENT | RFS_OPF_MUTATES));
    assert_false(rfs_op_has(RFS_OP_COUNTER, RFS_OPF_IDEMPOTENT));
    assert_false(rfs_op_has(RFS_OP_DELETE, RFS_OPF_IDEMPOTENT));
    assert_false(rfs_op_has(RFS_OP_TPC_PULL, RFS_OPF_IDEMPOTENT));
    /* the audit log: namespace changes and capabilities, never plain reads of data */
    assert_true(rfs_op_has(RFS_OP_RENAME, RFS_OPF_AUDITED));
    assert_true(rfs_op_has(RFS_OP_TPC_GRANT, RFS_OPF_AUDITED));
    assert_true(rfs_op_has(RFS_OP_CAP_ISSUE, RFS_OPF_AUDITED));
    assert_false(rfs_op_has(RFS_OP_CAP_ISSUE, RFS_OPF_IDEMPOTENT));
    assert_false(rfs_op_has(RFS_OP_PREAD, RFS_OPF_AUDITED));
    /* several bits at once: all must hold; an unknown op has none */
    assert_false(rfs_op_has(RFS_OP_PREAD, RFS_OPF_HANDLE | RFS_OPF_BARRIER));
    assert_false(rfs_op_has(9, 0));
}

/* A foreign or mangled header still names its op and request id for the one answer. */
static void test_header_peek(void **state)
{
    (void)state;
    uint8_t hb[RFS_HDR_SIZE];
    rfs_hdr h = {.version = RFS_PROTO_VERSION, .op = RFS_OP_STAT, .req_id = 77, .body_len = 9};
    rfs_hdr_encode(hb, &h);
    hb[0] ^= 0xFF; /* bad magic: decode refuses and fills nothing */
    rfs_hdr got;
    assert_int_equal(rfs_hdr_decode(hb, RFS_FRAME_DEFAULT, &got), RFS_E_PROTO);
    assert_int_equal(got.req_id, 0);
    uint32_t magic, id;
    uint16_t op;
    rfs_hdr_peek(hb, &magic, &op, &id);
    assert_int_not_equal(magic, RFS_MAGIC);
    assert_int_equal(op, RFS_OP_STAT);
    assert_int_equal(id, 77);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_op_has_one_entry),
        cmocka_unit_test(test_facts_are_consistent),
        cmocka_unit_test(test_documented_facts),
        cmocka_unit_test(test_header_peek),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
