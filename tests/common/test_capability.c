/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Capability strings (common/capability.c): what is signed verifies with the issuer's key and
 * decodes to the same fields; any changed character, another key, a truncated or padded
 * string is refused; the file a capability covers is the file and a manifest's objects only;
 * key files are made once with mode 0600 and refused when others may read them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/capability.h"
#include "common/err.h"

typedef struct fixture {
    char dir[64];
    char path[128];
    rfs_cap_key *key;
    uint8_t pub[RFS_CAP_PUB_LEN];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/rfs-cap-test-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/cap-key.pem", f->dir);
    if (rfs_cap_key_load(f->path, 1, &f->key) != RFS_OK)
        return -1;
    rfs_cap_key_pub(f->key, f->pub);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    rfs_cap_key_free(f->key);
    unlink(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

static void sign(fixture *f, const char *path, unsigned right, char *out)
{
    rfs_cap c = {.kind = RFS_CAP_KIND_CAP,
                 .right = right,
                 .serial = 0x0123456789abcdefull,
                 .expires = 2000000000,
                 .auth_until = 2000000000};
    snprintf(c.path, sizeof c.path, "%s", path);
    assert_int_equal(rfs_cap_sign(f->key, &c, out, RFS_CAP_MAX_LEN + 1), RFS_OK);
}

static void test_round_trip(void **state)
{
    fixture *f = *state;
    char s[RFS_CAP_MAX_LEN + 1];
    sign(f, "/proj/run1.rfsm", RFS_CAP_WRITE, s);
    assert_true(rfs_cap_looks_like(s));
    rfs_cap_parsed p;
    assert_int_equal(rfs_cap_parse(s, &p), RFS_OK);
    assert_int_equal(rfs_cap_check_sig(&p, f->pub), RFS_OK);
    assert_int_equal(p.cap.kind, RFS_CAP_KIND_CAP);
    assert_int_equal(p.cap.right, RFS_CAP_WRITE);
    assert_true(p.cap.serial == 0x0123456789abcdefull);
    assert_true(p.cap.expires == 2000000000 && p.cap.auth_until == 2000000000);
    assert_string_equal(p.cap.path, "/proj/run1.rfsm");
    uint8_t id[RFS_CAP_KEYID_LEN];
    rfs_cap_key_id(f->pub, id);
    assert_memory_equal(p.cap.key_id, id, sizeof id);
    /* a trailing newline (pasted from a terminal) is not part of it */
    strcat(s, "\n");
    assert_int_equal(rfs_cap_parse(s, &p), RFS_OK);
    assert_int_equal(rfs_cap_check_sig(&p, f->pub), RFS_OK);
}

/* Every single-character change of the string is refused: by the decoder or the signature. */
static void test_every_changed_character_refused(void **state)
{
    fixture *f = *state;
    char s[RFS_CAP_MAX_LEN + 1];
    sign(f, "/a/b.txt", RFS_CAP_READ, s);
    size_t n = strlen(s);
    static const char alphabet[] = "Aa0-_";
    for (size_t i = strlen(RFS_CAP_PREFIX); i < n; i++) {
        for (const char *a = alphabet; *a; a++) {
            if (s[i] == *a)
                continue;
            char t[RFS_CAP_MAX_LEN + 1];
            memcpy(t, s, n + 1);
            t[i] = *a;
            rfs_cap_parsed p;
            int rc = rfs_cap_parse(t, &p);
            if (rc == RFS_OK)
                rc = rfs_cap_check_sig(&p, f->pub);
            if (rc != RFS_E_AUTH)
                fail_msg("changing character %zu to %c was accepted", i, *a);
        }
    }
}

static void test_malformed_refused(void **state)
{
    fixture *f = *state;
    char s[RFS_CAP_MAX_LEN + 1];
    sign(f, "/x", RFS_CAP_MANAGE, s);
    rfs_cap_parsed p;
    size_t n = strlen(s);
    for (size_t cut = 0; cut < n; cut += 7) { /* truncated anywhere */
        char t[RFS_CAP_MAX_LEN + 1];
        memcpy(t, s, cut);
        t[cut] = '\0';
        int rc = rfs_cap_parse(t, &p);
        if (rc == RFS_OK)
            rc = rfs_cap_check_sig(&p, f->pub);
        assert_int_equal(rc, RFS_E_AUTH);
    }
    char t[RFS_CAP_MAX_LEN + 8];
    snprintf(t, sizeof t, "%sAAAA", s); /* padded */
    assert_int_equal(rfs_cap_parse(t, &p), RFS_E_AUTH);
    assert_int_equal(rfs_cap_parse("rfscap2.AAAA", &p), RFS_E_AUTH);
    assert_int_equal(rfs_cap_parse("", &p), RFS_E_AUTH);
    assert_int_equal(rfs_cap_parse("rfscap1.!!!!", &p), RFS_E_AUTH);
}

static void test_other_key_refused(void **state)
{
    fixture *f = *state;
    char s[RFS_CAP_MAX_LEN + 1];
    sign(f, "/x", RFS_CAP_READ, s);
    char path2[160];
    snprintf(path2, sizeof path2, "%s/other.pem", f->dir);
    rfs_cap_key *k2;
    assert_int_equal(rfs_cap_key_load(path2, 1, &k2), RFS_OK);
    uint8_t pub2[RFS_CAP_PUB_LEN];
    rfs_cap_key_pub(k2, pub2);
    rfs_cap_parsed p;
    assert_int_equal(rfs_cap_parse(s, &p), RFS_OK);
    assert_int_equal(rfs_cap_check_sig(&p, pub2), RFS_E_AUTH);
    assert_non_null(strstr(rfs_last_error(), "bad signature"));
    rfs_cap_key_free(k2);
    unlink(path2);
}

static void test_covers(void **state)
{
    (void)state;
    rfs_cap c = {.kind = RFS_CAP_KIND_CAP, .right = RFS_CAP_READ};
    snprintf(c.path, sizeof c.path, "/run/out.rfsm");
    assert_true(rfs_cap_covers(&c, "/run/out.rfsm"));
    assert_true(rfs_cap_covers(&c, "/run/out.rfsm.c0.r0"));
    assert_true(rfs_cap_covers(&c, "/run/out.rfsm.c12.r3"));
    assert_false(rfs_cap_covers(&c, "/run/out.rfsm.c0.r"));
    assert_false(rfs_cap_covers(&c, "/run/out.rfsm.c0.r0/x"));
    assert_false(rfs_cap_covers(&c, "/run/out.rfsm.cx.r0"));
    assert_false(rfs_cap_covers(&c, "/run/out.rfsmx"));
    assert_false(rfs_cap_covers(&c, "/run/out"));
    assert_false(rfs_cap_covers(&c, "/run"));
    c.kind = RFS_CAP_KIND_LEASE; /* the objects only, not the manifest */
    assert_false(rfs_cap_covers(&c, "/run/out.rfsm"));
    assert_true(rfs_cap_covers(&c, "/run/out.rfsm.c1.r0"));
    c.kind = RFS_CAP_KIND_CAP;
    snprintf(c.path, sizeof c.path, "/run/plain.bin");
    assert_true(rfs_cap_covers(&c, "/run/plain.bin"));
    assert_false(rfs_cap_covers(&c, "/run/plain.bin.c0.r0")); /* objects: manifests only */
    assert_true(rfs_cap_is_temp(&c, "/run/.plain.bin.rfs-part-abc123"));
    c.kind = RFS_CAP_KIND_LEASE;
    assert_false(rfs_cap_is_temp(&c, "/run/.plain.bin.rfs-part-abc123"));
    c.kind = RFS_CAP_KIND_CAP;
    assert_false(rfs_cap_is_temp(&c, "/run/.plain.bin.rfs-part-"));
    assert_false(rfs_cap_is_temp(&c, "/run/.plain.bin.rfs-part-a/b"));
    assert_false(rfs_cap_is_temp(&c, "/other/.plain.bin.rfs-part-abc"));
    assert_false(rfs_cap_is_temp(&c, "/run/.plainXbin.rfs-part-abc"));
}

static void test_public_key_text(void **state)
{
    fixture *f = *state;
    char text[RFS_PUB_STR_LEN];
    rfs_cap_pub_format(f->pub, text);
    assert_int_equal(strlen(text), RFS_PUB_STR_LEN - 1);
    uint8_t back[RFS_CAP_PUB_LEN];
    assert_int_equal(rfs_cap_pub_parse(text, back), RFS_OK);
    assert_memory_equal(back, f->pub, sizeof back);
    text[20] = text[20] == 'A' ? 'B' : 'A';
    assert_int_equal(rfs_cap_pub_parse(text, back), RFS_OK); /* still a key, another one */
    assert_memory_not_equal(back, f->pub, sizeof back);
    assert_int_equal(rfs_cap_pub_parse("rfspub1.short", back), RFS_E_INVAL);
    assert_int_equal(rfs_cap_pub_parse("ssh-ed25519 AAAA", back), RFS_E_INVAL);
}

static void test_key_file(void **state)
{
    fixture *f = *state;
    struct stat st;
    assert_int_equal(stat(f->path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* loaded again: the same key */
    rfs_cap_key *k;
    assert_int_equal(rfs_cap_key_load(f->path, 0, &k), RFS_OK);
    uint8_t pub[RFS_CAP_PUB_LEN];
    rfs_cap_key_pub(k, pub);
    assert_memory_equal(pub, f->pub, sizeof pub);
    rfs_cap_key_free(k);
    /* readable by others: refused; missing without make: refused */
    chmod(f->path, 0644);
    assert_int_equal(rfs_cap_key_load(f->path, 0, &k), RFS_E_ACCESS);
    chmod(f->path, 0600);
    char missing[160];
    snprintf(missing, sizeof missing, "%s/none.pem", f->dir);
    assert_int_equal(rfs_cap_key_load(missing, 0, &k), RFS_E_IO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_every_changed_character_refused),
        cmocka_unit_test(test_malformed_refused),
        cmocka_unit_test(test_other_key_refused),
        cmocka_unit_test(test_covers),
        cmocka_unit_test(test_public_key_text),
        cmocka_unit_test(test_key_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
