/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* client/options.c: defaults, clamping and where the token comes from. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/client.h"
#include "common/err.h"

static int clear_env(void **state)
{
    (void)state;
    unsetenv("RFS_TOKEN");
    unsetenv("RFS_TOKEN_FILE");
    return 0;
}

static void test_defaults(void **state)
{
    (void)state;
    rfs_copts o;
    assert_int_equal(rfs_copts_resolve(NULL, "L", &o), RFS_OK);
    assert_int_equal(o.connect_timeout_ms, 10000);
    assert_int_equal(o.io_timeout_ms, 120000);
    assert_int_equal(o.streams, 1);
    assert_int_equal(o.window, 8);
    assert_int_equal(o.max_frame, RFS_FRAME_DEFAULT);
    assert_false(o.has_token);
}

static void test_clamps(void **state)
{
    (void)state;
    rfs_options in = {.streams = 1000, .window = 1000, .max_frame = 1};
    rfs_copts o;
    assert_int_equal(rfs_copts_resolve(&in, "L", &o), RFS_OK);
    assert_int_equal(o.streams, RFS_CLIENT_MAX_STREAMS);
    assert_int_equal(o.window, RFS_CLIENT_MAX_WINDOW);
    assert_int_equal(o.max_frame, RFS_FRAME_MIN);
    in.max_frame = UINT32_MAX;
    assert_int_equal(rfs_copts_resolve(&in, "L", &o), RFS_OK);
    assert_int_equal(o.max_frame, RFS_FRAME_HARD_MAX);
    rfs_options neg = {.io_timeout_ms = -1};
    assert_int_equal(rfs_copts_resolve(&neg, "rfs:h:1:/f", &o), RFS_E_INVAL);
    assert_non_null(strstr(rfs_last_error(), "rfs:h:1:/f"));
}

static void test_auto_streams_cap(void **state)
{
    (void)state;
    rfs_copts o;
    rfs_options in = {.streams = RFS_STREAMS_AUTO};
    assert_int_equal(rfs_copts_resolve(&in, "L", &o), RFS_OK);
    assert_true(o.streams_auto);
    assert_int_equal(o.streams, RFS_AUTO_MAX_STREAMS);
    in.streams = RFS_STREAMS_AUTO_MAX(2);
    assert_int_equal(rfs_copts_resolve(&in, "L", &o), RFS_OK);
    assert_true(o.streams_auto);
    assert_int_equal(o.streams, 2);
    in.streams = RFS_STREAMS_AUTO_MAX(RFS_CLIENT_MAX_STREAMS);
    assert_int_equal(rfs_copts_resolve(&in, "L", &o), RFS_OK);
    assert_int_equal(o.streams, RFS_CLIENT_MAX_STREAMS);
    in.streams = RFS_STREAMS_AUTO_MAX(1);
    assert_int_equal(rfs_copts_resolve(&in, "L", &o), RFS_OK);
    assert_true(o.streams_auto);
    assert_int_equal(o.streams, 1);
    in.streams = RFS_STREAMS_AUTO_MAX(RFS_CLIENT_MAX_STREAMS + 1);
    assert_int_equal(rfs_copts_resolve(&in, "L", &o), RFS_E_INVAL);
    assert_non_null(strstr(rfs_last_error(), "RFS_STREAMS_AUTO_MAX"));
    in.streams = 3;
    assert_int_equal(rfs_copts_resolve(&in, "L", &o), RFS_OK);
    assert_false(o.streams_auto);
    assert_int_equal(o.streams, 3);
}

static void test_token_precedence(void **state)
{
    (void)state;
    char path[] = "/tmp/rfs-test-token-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "from-file\n", 10), 10);
    close(fd);

    rfs_copts o;
    setenv("RFS_TOKEN_FILE", path, 1);
    assert_int_equal(rfs_copts_resolve(NULL, "L", &o), RFS_OK);
    assert_true(o.has_token);
    assert_string_equal(o.token, "from-file"); /* newline stripped */

    setenv("RFS_TOKEN", "from-env", 1);
    assert_int_equal(rfs_copts_resolve(NULL, "L", &o), RFS_OK);
    assert_string_equal(o.token, "from-env");

    rfs_options in = {.token = "from-opts"};
    assert_int_equal(rfs_copts_resolve(&in, "L", &o), RFS_OK);
    assert_string_equal(o.token, "from-opts");

    /* An explicit empty token means "none", whatever the environment says. */
    in.token = "";
    assert_int_equal(rfs_copts_resolve(&in, "L", &o), RFS_OK);
    assert_false(o.has_token);
    unlink(path);
}

static void test_token_file_errors(void **state)
{
    (void)state;
    rfs_copts o;
    setenv("RFS_TOKEN_FILE", "/nonexistent/rfs-token", 1);
    assert_int_equal(rfs_copts_resolve(NULL, "rfs:h:1:/f", &o), RFS_E_NOENT);
    assert_non_null(strstr(rfs_last_error(), "RFS_TOKEN_FILE"));
    assert_non_null(strstr(rfs_last_error(), "/nonexistent/rfs-token"));

    char path[] = "/tmp/rfs-test-token-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    setenv("RFS_TOKEN_FILE", path, 1);
    assert_int_equal(rfs_copts_resolve(NULL, "L", &o), RFS_E_INVAL); /* empty file */
    unlink(path);

    char *big = malloc(RFS_TOKEN_MAX + 10);
    memset(big, 'x', RFS_TOKEN_MAX + 9);
    big[RFS_TOKEN_MAX + 9] = '\0';
    rfs_options in = {.token = big};
    assert_int_equal(rfs_copts_resolve(&in, "L", &o), RFS_E_INVAL);
    free(big);
}

static void test_chunk(void **state)
{
    (void)state;
    /* Room for headers and aligned to 4 KiB, for every legal frame size. */
    for (uint32_t mf = RFS_FRAME_MIN; mf <= RFS_FRAME_HARD_MAX; mf += 12345u * 7u) {
        size_t c = rfs_chunk_for_frame(mf);
        assert_true(c > 0);
        assert_int_equal(c % 4096, 0);
        assert_true(c + 2048 <= mf);
    }
    assert_int_equal(rfs_chunk_for_frame(RFS_FRAME_DEFAULT), RFS_FRAME_DEFAULT - 4096);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_defaults, clear_env),
        cmocka_unit_test_setup(test_clamps, clear_env),
        cmocka_unit_test_setup(test_auto_streams_cap, clear_env),
        cmocka_unit_test_setup(test_token_precedence, clear_env),
        cmocka_unit_test_setup(test_token_file_errors, clear_env),
        cmocka_unit_test(test_chunk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
