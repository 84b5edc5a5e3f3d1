/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* common/auth.c: HMAC challenge-response and token files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/auth.h"
#include "common/err.h"

static uint8_t server_nonce[RFS_AUTH_NONCE], client_nonce[RFS_AUTH_NONCE];

static int setup_nonces(void **state)
{
    memset(server_nonce, 1, sizeof server_nonce);
    memset(client_nonce, 2, sizeof client_nonce);
    return 0;
}

static void hex(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

/* Known answers (HMAC-SHA256 computed independently with Python's hmac module) pin the
 * construction documented in docs/protocol.md, so client and server builds interoperate. */
static void test_known_answers(void **state)
{
    uint8_t mac[RFS_AUTH_MAC];
    char h[2 * RFS_AUTH_MAC + 1];
    rfs_auth_client_mac("secret", 6, server_nonce, client_nonce, mac);
    hex(mac, sizeof mac, h);
    assert_string_equal(h, "b48ac36df46cb39116f736dc56131a2c400086b5c29f8f1f1cb67c9c7252fa50");
    rfs_auth_server_mac("secret", 6, server_nonce, client_nonce, mac);
    hex(mac, sizeof mac, h);
    assert_string_equal(h, "e12cf7eb762f17fef03c8f965afd1fa24bd5cca3a095c087b1c34b73dfbd46a7");
}

static void test_macs_differ(void **state)
{
    uint8_t a[RFS_AUTH_MAC], b[RFS_AUTH_MAC], c[RFS_AUTH_MAC], s[RFS_AUTH_MAC];
    rfs_auth_client_mac("k", 1, server_nonce, client_nonce, a);
    rfs_auth_client_mac("k", 1, server_nonce, client_nonce, b);
    assert_true(rfs_auth_equal(a, b, RFS_AUTH_MAC)); /* deterministic */
    rfs_auth_server_mac("k", 1, server_nonce, client_nonce, s);
    assert_false(rfs_auth_equal(a, s, RFS_AUTH_MAC)); /* client != server: no reflection */
    rfs_auth_client_mac("K", 1, server_nonce, client_nonce, c);
    assert_false(rfs_auth_equal(a, c, RFS_AUTH_MAC)); /* secret matters */
    client_nonce[31] ^= 1;
    rfs_auth_client_mac("k", 1, server_nonce, client_nonce, c);
    client_nonce[31] ^= 1;
    assert_false(rfs_auth_equal(a, c, RFS_AUTH_MAC)); /* nonce matters */
    /* Swapping the nonces does not turn a client MAC into a server MAC. */
    rfs_auth_server_mac("k", 1, client_nonce, server_nonce, c);
    assert_false(rfs_auth_equal(a, c, RFS_AUTH_MAC));
}

static void test_equal_and_random(void **state)
{
    uint8_t a[32] = {0}, b[32] = {0};
    assert_true(rfs_auth_equal(a, b, 32));
    b[31] = 1;
    assert_false(rfs_auth_equal(a, b, 32));
    assert_true(rfs_auth_equal(a, b, 31));
    assert_int_equal(rfs_auth_random(a, 32), RFS_OK);
    assert_int_equal(rfs_auth_random(b, 32), RFS_OK);
    assert_false(rfs_auth_equal(a, b, 32));
}

static char dir[] = "/tmp/rfs-test-auth-XXXXXX";

static const char *token_file(const char *content, size_t len)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/token", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(content, 1, len, f), len);
    fclose(f);
    return path;
}

static void test_token_file(void **state)
{
    assert_non_null(mkdtemp(dir));
    char out[64];
    assert_int_equal(rfs_auth_read_token_file(token_file("hunter2\n", 8), out, sizeof out), RFS_OK);
    assert_string_equal(out, "hunter2");
    assert_int_equal(rfs_auth_read_token_file(token_file("crlf\r\n", 6), out, sizeof out), RFS_OK);
    assert_string_equal(out, "crlf");
    assert_int_equal(rfs_auth_read_token_file(token_file("no-newline", 10), out, sizeof out),
                     RFS_OK);
    assert_string_equal(out, "no-newline");
    /* Inner spaces are part of the secret. */
    assert_int_equal(rfs_auth_read_token_file(token_file("a b\n", 4), out, sizeof out), RFS_OK);
    assert_string_equal(out, "a b");

    assert_int_equal(rfs_auth_read_token_file(token_file("", 0), out, sizeof out), RFS_E_INVAL);
    assert_non_null(strstr(rfs_last_error(), "empty"));
    assert_int_equal(rfs_auth_read_token_file(token_file("\n\n", 2), out, sizeof out), RFS_E_INVAL);
    assert_int_equal(rfs_auth_read_token_file(token_file("ab\0cd", 5), out, sizeof out),
                     RFS_E_INVAL);
    assert_non_null(strstr(rfs_last_error(), "NUL"));

    /* Exactly cap-1 bytes fit; cap bytes do not. */
    char longtok[64];
    memset(longtok, 't', sizeof longtok);
    assert_int_equal(rfs_auth_read_token_file(token_file(longtok, 63), out, sizeof out), RFS_OK);
    assert_int_equal(strlen(out), 63);
    assert_int_equal(rfs_auth_read_token_file(token_file(longtok, 64), out, sizeof out),
                     RFS_E_INVAL);
    assert_non_null(strstr(rfs_last_error(), "longer"));

    char missing[160];
    snprintf(missing, sizeof missing, "%s/does-not-exist", dir);
    assert_int_equal(rfs_auth_read_token_file(missing, out, sizeof out), RFS_E_NOENT);
    assert_non_null(strstr(rfs_last_error(), "does-not-exist"));
    /* A directory is not a token file. */
    assert_int_not_equal(rfs_auth_read_token_file(dir, out, sizeof out), RFS_OK);

    unlink(token_file("", 0));
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_known_answers, setup_nonces),
        cmocka_unit_test_setup(test_macs_differ, setup_nonces),
        cmocka_unit_test(test_equal_and_random),
        cmocka_unit_test(test_token_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
