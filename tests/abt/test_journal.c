/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The staging journal format: CRC-32C, the file header, version records, and how a scan
 * tells a clean journal from a torn tail and from corruption in the middle. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/crc32c.h"
#include "abt/journal.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/rfs-journal-test-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

static void test_crc32c_vectors(void **state)
{
    (void)state;
    assert_int_equal(rfs_crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(rfs_crc32c(0, "", 0), 0);
    uint8_t z[32], f[32], inc[32];
    memset(z, 0, sizeof z);
    memset(f, 0xFF, sizeof f);
    for (int i = 0; i < 32; i++)
        inc[i] = (uint8_t)i;
    /* RFC 3720 (iSCSI) appendix B.4 test patterns. */
    assert_int_equal(rfs_crc32c(0, z, 32), 0x8A9136AAu);
    assert_int_equal(rfs_crc32c(0, f, 32), 0x62A8AB43u);
    assert_int_equal(rfs_crc32c(0, inc, 32), 0x46DD794Eu);
    /* Any split gives the same CRC (the 8-byte loop and the byte tail agree). */
    uint8_t buf[1000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 131u + 7u);
    uint32_t whole = rfs_crc32c(0, buf, sizeof buf);
    for (size_t cut = 0; cut <= 17; cut++)
        assert_int_equal(rfs_crc32c(rfs_crc32c(0, buf, cut), buf + cut, sizeof buf - cut), whole);
}

static uint64_t probe_mtime;
static int fake_probe(const char *name, rfs_journal_version *v)
{
    (void)name;
    v->known = v->exists = 1;
    v->size = 42;
    v->mtime_ns = (int64_t)++probe_mtime;
    return 0;
}

/* A journal with `n` data records of 1000 bytes for "rfs:h:1:/f" (the first preceded by a
 * version record); returns its path in out. */
static void make_journal(int n, char *out, size_t cap, uint64_t *rec_off)
{
    rfs_journal_set_probe(fake_probe);
    rfs_journal_track("rfs:h:1:/f");
    rfs_journal *j;
    assert_int_equal(rfs_journal_open(dir, &j), 0);
    snprintf(out, cap, "%s", j->path);
    uint8_t data[1000];
    for (int i = 0; i < n; i++) {
        memset(data, 'a' + i, sizeof data);
        rfs_extent e = {(uint64_t)i * 1000u, 1000};
        uint64_t ro, dof;
        assert_int_equal(rfs_journal_append(j, (uint64_t)i + 1, "rfs:h:1:/f", &e, 1, data,
                                            sizeof data, 0, &ro, &dof),
                         0);
        rec_off[i] = ro;
    }
    rfs_journal_track("rfs:h:1:/f");           /* a delivery: a newer version record follows */
    assert_int_equal(rfs_journal_close(j), 1); /* pending records: kept */
}

typedef struct seen {
    int data, versions;
    uint64_t last_ticket;
    int64_t last_mtime;
} seen;

static int count(void *ctx, const rfs_journal_rec *r)
{
    seen *s = ctx;
    if (r->kind == RFS_JOURNAL_VERSION) {
        s->versions++;
        assert_true(r->version.ticket > s->last_ticket);
        s->last_ticket = r->version.ticket;
        s->last_mtime = r->version.mtime_ns;
        assert_true(r->version.known && r->version.exists && r->version.size == 42);
    } else {
        s->data++;
        assert_int_equal(r->len, 1000);
        assert_int_equal(((const uint8_t *)r->data)[0], 'a' + s->data - 1);
    }
    return 0;
}

static void flip(const char *path, uint64_t off)
{
    int fd = open(path, O_RDWR);
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
    b ^= 0x10;
    assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
    close(fd);
}

static void scan_path(const char *path, seen *s, rfs_journal_end *end)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    rfs_journal_info info;
    assert_int_equal(rfs_journal_check_header(fd, &info), 0);
    assert_int_equal(info.format, RFS_JOURNAL_FORMAT);
    memset(s, 0, sizeof *s);
    assert_int_equal(rfs_journal_scan(fd, 0, count, s, end), 0);
    close(fd);
}

static void test_clean_journal_and_versions(void **state)
{
    (void)state;
    char path[4300];
    uint64_t off[3];
    make_journal(3, path, sizeof path, off);
    seen s;
    rfs_journal_end end;
    scan_path(path, &s, &end);
    assert_int_equal(end.kind, RFS_JOURNAL_CLEAN);
    assert_int_equal(s.data, 3);
    assert_int_equal(s.versions, 2); /* before the first record, and after the "delivery" */
    assert_int_equal(s.last_mtime, (int64_t)probe_mtime);
}

static void test_bit_flip_in_the_middle_is_corruption(void **state)
{
    (void)state;
    char path[4300];
    uint64_t off[3];
    make_journal(3, path, sizeof path, off);
    struct stat st;
    stat(path, &st);
    flip(path, off[1] + 40 + strlen("rfs:h:1:/f") + 16 + 500); /* data of record 2 */
    seen s;
    rfs_journal_end end;
    scan_path(path, &s, &end);
    assert_int_equal(end.kind, RFS_JOURNAL_CORRUPT);
    assert_int_equal(s.data, 1);    /* the first data record is still good */
    assert_int_equal(end.index, 3); /* version, data 1, then the bad one */
    assert_int_equal(end.off, off[1]);
    assert_int_equal(end.bytes_after, (uint64_t)st.st_size - off[1]);
    assert_string_equal(end.name, "rfs:h:1:/f");
    assert_int_equal(end.claimed_len, 1000);
    assert_non_null(strstr(end.why, "checksum"));

    /* A flipped length in a record's head is caught by the head's own CRC, not taken for a
     * record running past the end of the file (a torn tail). */
    make_journal(3, path, sizeof path, off);
    flip(path, off[0] + 24 + 5);
    scan_path(path, &s, &end);
    assert_int_equal(end.kind, RFS_JOURNAL_CORRUPT);
    assert_int_equal(end.off, off[0]);
    assert_int_equal(s.data, 0);
}

static void test_torn_tail(void **state)
{
    (void)state;
    char path[4300];
    uint64_t off[3];
    make_journal(3, path, sizeof path, off);
    /* The last record cut short inside its data, as when the writer dies mid-append. Drop the
     * trailing version record first: it sits after the last data record. */
    assert_int_equal(truncate(path, (off_t)(off[2] + 40 + 10 + 16 + 300)), 0);
    seen s;
    rfs_journal_end end;
    scan_path(path, &s, &end);
    assert_int_equal(end.kind, RFS_JOURNAL_TORN);
    assert_int_equal(s.data, 2);
    assert_int_equal(end.off, off[2]);
    assert_int_equal(end.present, 40 + 10 + 16 + 300);
    assert_int_equal(end.want, 40 + 10 + 16 + 1000);
    /* Cut inside the record head. */
    assert_int_equal(truncate(path, (off_t)(off[2] + 20)), 0);
    scan_path(path, &s, &end);
    assert_int_equal(end.kind, RFS_JOURNAL_TORN);
    assert_int_equal(end.present, 20);
}

static void test_not_a_journal(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/x.rfsj", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    assert_int_equal(write(fd, "hello, world: my precious notes\n", 32), 32);
    rfs_journal_info info;
    assert_int_equal(rfs_journal_check_header(fd, &info), RFS_E_INVAL);
    assert_non_null(strstr(rfs_last_error(), "not an rfs journal"));
    /* The headerless format of older rfs is named as such. */
    assert_int_equal(pwrite(fd, "RFSJ\x01", 5, 0), 5);
    assert_int_equal(rfs_journal_check_header(fd, &info), RFS_E_VERSION);
    assert_int_equal(ftruncate(fd, 0), 0);
    assert_int_equal(rfs_journal_check_header(fd, &info), RFS_E_INVAL);
    close(fd);
}

/* Several journals live at once (ABT keeps one per staging directory, and one engine per
 * runtime): a version learned after a delivery goes to every journal that holds records of the
 * file, not only to the newest journal. */
static void test_versions_reach_every_live_journal(void **state)
{
    (void)state;
    rfs_journal_set_probe(fake_probe);
    rfs_journal_track("rfs:h:1:/f");
    rfs_journal *j[2];
    char path[2][4200];
    uint8_t data[1000];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(rfs_journal_open(dir, &j[k]), 0);
        snprintf(path[k], sizeof path[k], "%s", j[k]->path);
        memset(data, 'a', sizeof data);
        rfs_extent e = {(uint64_t)k * 1000u, 1000};
        uint64_t ro, dof;
        assert_int_equal(
            rfs_journal_append(j[k], 1, "rfs:h:1:/f", &e, 1, data, sizeof data, 0, &ro, &dof), 0);
    }
    rfs_journal_track("rfs:h:1:/f");
    for (int k = 0; k < 2; k++) {
        assert_int_equal(rfs_journal_close(j[k]), 1);
        seen s;
        rfs_journal_end end;
        scan_path(path[k], &s, &end);
        assert_int_equal(end.kind, RFS_JOURNAL_CLEAN);
        assert_int_equal(s.data, 1);
        assert_int_equal(s.versions, 2); /* before its record, and the one learned after */
        assert_int_equal(s.last_mtime, (int64_t)probe_mtime);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c_vectors),
        cmocka_unit_test_setup_teardown(test_clean_journal_and_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bit_flip_in_the_middle_is_corruption, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_journal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_versions_reach_every_live_journal, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
