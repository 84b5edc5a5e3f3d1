/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* client/name.c: rfs name parsing in both spellings, IPv6, relative paths and every error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/client.h"
#include "common/err.h"
#include "rfs/rfs.h"

static void expect_ok(const char *s, const char *host, unsigned port, const char *path)
{
    rfs_name n;
    int rc = rfs_parse_name(s, &n);
    if (rc)
        print_error("parse '%s': %s\n", s, rfs_last_error());
    assert_int_equal(rc, RFS_OK);
    assert_string_equal(n.host, host);
    assert_int_equal(n.port, port);
    assert_string_equal(n.path, path);
}

/* Returns the message so callers can check it explains the problem. */
static const char *expect_bad(const char *s)
{
    rfs_name n;
    memset(&n, 0x5a, sizeof n);
    rfs_name before = n;
    int rc = rfs_parse_name(s, &n);
    if (rc != RFS_E_NAME)
        print_error("parse '%s' gave %d, expected RFS_E_NAME\n", s, rc);
    assert_int_equal(rc, RFS_E_NAME);
    /* The output is untouched on failure. */
    assert_memory_equal(&n, &before, sizeof n);
    assert_true(strlen(rfs_last_error()) > 0);
    return rfs_last_error();
}

static void test_is_name(void **state)
{
    (void)state;
    assert_true(rfs_is_name("rfs:h:1:/a"));
    assert_true(rfs_is_name("rfs://h:1/a"));
    assert_true(rfs_is_name("rfs:"));
    assert_false(rfs_is_name("/tmp/rfs:x"));
    assert_false(rfs_is_name("ufs:/tmp/a"));
    assert_false(rfs_is_name("RFS:h:1:/a"));
    assert_false(rfs_is_name("rfs"));
    assert_false(rfs_is_name(""));
    assert_false(rfs_is_name(NULL));
}

static void test_romio_form(void **state)
{
    (void)state;
    expect_ok("rfs:127.0.0.1:7070:/a/b", "127.0.0.1", 7070, "/a/b");
    expect_ok("rfs:data.example.org:1:/x", "data.example.org", 1, "/x");
    expect_ok("rfs:host-1:65535:/", "host-1", 65535, "/");
    /* A path may itself contain ':' (only the first two separate host and port). */
    expect_ok("rfs:h:7070:/a:b:c", "h", 7070, "/a:b:c");
    expect_ok("rfs:h:07070:/leading/zero", "h", 7070, "/leading/zero");
}

static void test_url_form(void **state)
{
    (void)state;
    expect_ok("rfs://127.0.0.1:7070/a/b", "127.0.0.1", 7070, "/a/b");
    expect_ok("rfs://h:9/", "h", 9, "/");
    expect_ok("rfs://h:9//double", "h", 9, "//double");
}

static void test_relative_paths(void **state)
{
    (void)state;
    /* Relative to the export root, which is what "/" is on the server. */
    expect_ok("rfs:h:7070:run42/out.h5", "h", 7070, "/run42/out.h5");
    expect_ok("rfs:h:7070:a", "h", 7070, "/a");
    expect_ok("rfs:h:7070:.", "h", 7070, "/.");
}

static void test_ipv6(void **state)
{
    (void)state;
    expect_ok("rfs:[::1]:7070:/a", "::1", 7070, "/a");
    expect_ok("rfs://[::1]:7070/a", "::1", 7070, "/a");
    expect_ok("rfs:[fe80::1%eth0]:80:/z", "fe80::1%eth0", 80, "/z");
    expect_ok("rfs://[2001:db8::10:1]:7070/d/e", "2001:db8::10:1", 7070, "/d/e");
    expect_ok("rfs:[::ffff:10.0.0.1]:5:/p", "::ffff:10.0.0.1", 5, "/p");
    assert_non_null(strstr(expect_bad("rfs:[::1:7070:/a"), "']'"));
    expect_bad("rfs:::1:7070:/a");    /* unbracketed IPv6 is ambiguous */
    expect_bad("rfs:[]:7070:/a");     /* empty */
    expect_bad("rfs:[host]:7070:/a"); /* brackets are for IPv6 only */
    expect_bad("rfs:[::1]7070:/a");
    expect_bad("rfs:[::1 ]:7070:/a");
}

static void test_server_and_label(void **state)
{
    (void)state;
    rfs_name n;
    char buf[5000];
    assert_int_equal(rfs_parse_name("rfs://[::1]:7070/x/y", &n), RFS_OK);
    rfs_name_server(&n, buf, sizeof buf);
    assert_string_equal(buf, "[::1]:7070");
    rfs_name_label(&n, buf, sizeof buf);
    assert_string_equal(buf, "rfs:[::1]:7070:/x/y");
    /* The label parses back to the same name. */
    rfs_name again;
    assert_int_equal(rfs_parse_name(buf, &again), RFS_OK);
    assert_memory_equal(&n, &again, sizeof n);
    assert_int_equal(rfs_parse_name("rfs:localhost:1:rel", &n), RFS_OK);
    rfs_name_label(&n, buf, sizeof buf);
    assert_string_equal(buf, "rfs:localhost:1:/rel");
}

static void test_bad_host(void **state)
{
    (void)state;
    assert_non_null(strstr(expect_bad("rfs::7070:/a"), "empty host"));
    assert_non_null(strstr(expect_bad("rfs://:7070/a"), "empty host"));
    expect_bad("rfs:ho st:7070:/a");
    expect_bad("rfs:h\tx:7070:/a");
    expect_bad("rfs:h/x:7070:/a");
    expect_bad("rfs:");
    expect_bad("rfs://");
    expect_bad("rfs:/tmp/a");
    expect_bad("nfs:h:1:/a");
    expect_bad("");
}

static void test_bad_port(void **state)
{
    (void)state;
    assert_non_null(strstr(expect_bad("rfs:h:0:/a"), "port 0"));
    assert_non_null(strstr(expect_bad("rfs:h:65536:/a"), "range"));
    expect_bad("rfs:h:99999999999999999999:/a");
    expect_bad("rfs:h::/a");
    expect_bad("rfs:h:x7:/a");
    expect_bad("rfs:h:-1:/a");
    expect_bad("rfs:h:+7:/a");
    expect_bad("rfs:h:7x:/a");
    expect_bad("rfs:h");
    expect_bad("rfs:h:/a"); /* port missing */
    expect_bad("rfs://h/a");
    expect_bad("rfs://h:/a");
    expect_bad("rfs://h:0/a");
    expect_bad("rfs://h:7070:/a"); /* URL form: '/' after the port */
}

static void test_missing_path(void **state)
{
    (void)state;
    assert_non_null(strstr(expect_bad("rfs:h:7070:"), "path"));
    assert_non_null(strstr(expect_bad("rfs:h:7070"), "PATH"));
    assert_non_null(strstr(expect_bad("rfs://h:7070"), "path"));
    expect_bad("rfs:h:7070:/a\nb"); /* control characters */
    expect_bad("rfs:h:7070:/a\x7f");
}

static void test_lengths(void **state)
{
    (void)state;
    char *s = malloc(8192);
    /* host: 255 characters fit, 256 do not */
    strcpy(s, "rfs:");
    memset(s + 4, 'h', 255);
    strcpy(s + 4 + 255, ":1:/a");
    rfs_name n;
    assert_int_equal(rfs_parse_name(s, &n), RFS_OK);
    assert_int_equal(strlen(n.host), 255);
    memset(s + 4, 'h', 256);
    strcpy(s + 4 + 256, ":1:/a");
    assert_non_null(strstr(expect_bad(s), "255"));

    /* a path component: 255 bytes fit, 256 do not (RFS_E_NAME naming the limit) */
    strcpy(s, "rfs:h:1:/d/");
    memset(s + 11, 'q', 255);
    s[11 + 255] = '\0';
    assert_int_equal(rfs_parse_name(s, &n), RFS_OK);
    strcat(s, "q/e");
    assert_non_null(strstr(expect_bad(s), "limit 255"));

    /* path: 4095 bytes fit (with the leading '/' added to a relative one), 4096 do not;
     * components of 63 bytes keep each under the component limit */
    strcpy(s, "rfs:h:1:/");
    memset(s + 9, 'p', 4094);
    for (int i = 63; i < 4094; i += 64)
        s[9 + i] = '/';
    s[9 + 4094] = '\0';
    assert_int_equal(rfs_parse_name(s, &n), RFS_OK);
    assert_int_equal(strlen(n.path), 4095);
    strcat(s, "p");
    assert_non_null(strstr(expect_bad(s), "4095"));
    strcpy(s, "rfs:h:1:");
    memset(s + 8, 'p', 4095);
    for (int i = 63; i < 4095; i += 64)
        s[8 + i] = '/';
    s[8 + 4095] = '\0';
    expect_bad(s); /* 4095 + the added '/' */
    s[8 + 4094] = '\0';
    assert_int_equal(rfs_parse_name(s, &n), RFS_OK);
    free(s);
}

/* rfss: and rfss:// ask for TLS; the label keeps it, so a name rebuilt from a label (the CLI
 * does) still asks for TLS. */
static void test_tls_names(void **state)
{
    (void)state;
    const char *tls[] = {"rfss://h:7070/a/b", "rfss:h:7070:/a/b", "rfss:h:7070:a/b"};
    for (size_t i = 0; i < sizeof tls / sizeof *tls; i++) {
        rfs_name n;
        assert_true(rfs_is_name(tls[i]));
        assert_int_equal(rfs_parse_name(tls[i], &n), RFS_OK);
        assert_int_equal(n.tls, 1);
        assert_string_equal(n.host, "h");
        assert_string_equal(n.path, "/a/b");
        char label[RFS_CLIENT_LABEL_MAX];
        rfs_name_label(&n, label, sizeof label);
        assert_string_equal(label, "rfss:h:7070:/a/b");
        rfs_name back;
        assert_int_equal(rfs_parse_name(label, &back), RFS_OK);
        assert_int_equal(back.tls, 1);
    }
    rfs_name n;
    assert_int_equal(rfs_parse_name("rfs://h:7070/x", &n), RFS_OK);
    assert_int_equal(n.tls, 0);
    assert_false(rfs_is_name("rfsss://h:1/x"));
    expect_bad("rfss//h:7070/x");
    expect_bad("rfss:/h:7070/x");
}

static void test_null_args(void **state)
{
    (void)state;
    rfs_name n;
    assert_int_equal(rfs_parse_name(NULL, &n), RFS_E_INVAL);
    assert_int_equal(rfs_parse_name("rfs:h:1:/a", NULL), RFS_E_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_is_name),      cmocka_unit_test(test_romio_form),
        cmocka_unit_test(test_url_form),     cmocka_unit_test(test_relative_paths),
        cmocka_unit_test(test_ipv6),         cmocka_unit_test(test_server_and_label),
        cmocka_unit_test(test_bad_host),     cmocka_unit_test(test_bad_port),
        cmocka_unit_test(test_missing_path), cmocka_unit_test(test_lengths),
        cmocka_unit_test(test_tls_names),    cmocka_unit_test(test_null_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
