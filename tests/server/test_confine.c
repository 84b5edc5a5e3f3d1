/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Root confinement (server/confine.c, backend_posix.c) on a real temporary tree:
 *   TMP/outside/secret, TMP/root/{file, dir/, abs -> TMP/outside/secret, up -> ../outside} */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "common/err.h"
#include "confine.h"

static char tmp[PATH_MAX];
static int root_fd = -1;

static void mkpath(rfsd_path *p, const char *s)
{
    rfs_wpath w = {s, (uint16_t)strlen(s)};
    assert_int_equal(rfsd_path_from_wire(&w, p), RFS_OK);
}

static int setup(void **st)
{
    (void)st;
    char path[PATH_MAX * 2];
    strcpy(tmp, "/tmp/rfsd-confine-XXXXXX");
    if (!mkdtemp(tmp))
        return -1;
    snprintf(path, sizeof path, "%s/outside", tmp);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/outside/secret", tmp);
    FILE *f = fopen(path, "w");
    fputs("secret", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/root", tmp);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/root/dir", tmp);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/root/file", tmp);
    f = fopen(path, "w");
    fclose(f);
    char target[PATH_MAX + 32];
    snprintf(target, sizeof target, "%s/outside/secret", tmp);
    snprintf(path, sizeof path, "%s/root/abs", tmp);
    if (symlink(target, path))
        return -1;
    snprintf(path, sizeof path, "%s/root/up", tmp);
    if (symlink("../outside", path))
        return -1;
    snprintf(path, sizeof path, "%s/root", tmp);
    root_fd = open(path, O_PATH | O_DIRECTORY);
    return root_fd < 0 ? -1 : 0;
}

static int teardown(void **st)
{
    (void)st;
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    close(root_fd);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_relative_forms(void **st)
{
    (void)st;
    rfsd_path p;
    mkpath(&p, "/run42/out.h5");
    assert_string_equal(p.rel, "run42/out.h5");
    assert_string_equal(p.shown, "/run42/out.h5");
    mkpath(&p, "///");
    assert_string_equal(p.rel, ".");
    rfs_wpath w = {"a\0b", 3};
    assert_int_equal(rfsd_path_from_wire(&w, &p), RFS_E_INVAL);
}

static void test_escapes_refused(void **st)
{
    (void)st;
    const char *bad[] = {"../outside/secret", "abs", "up/secret", "dir/../../outside/secret",
                         "/../outside/secret"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        rfsd_path p;
        int fd;
        struct stat s;
        mkpath(&p, bad[i]);
        assert_int_equal(rfsd_open_beneath(root_fd, &p, O_RDONLY, 0, &fd), RFS_E_ACCESS);
        assert_null(strstr(rfs_last_error(), tmp)); /* never the real root */
        assert_int_equal(rfsd_be_open(root_fd, &p, RFS_O_RDWR | RFS_O_TRUNC, 0, &fd, &s),
                         RFS_E_ACCESS);
    }
    rfsd_path p;
    mkpath(&p, "up/planted");
    assert_int_equal(rfsd_be_mkdir(root_fd, &p, 0755), RFS_E_ACCESS);
    mkpath(&p, "up/secret");
    assert_int_equal(rfsd_be_delete(root_fd, &p), RFS_E_ACCESS);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/outside/secret", tmp);
    struct stat s;
    assert_int_equal(stat(path, &s), 0);
    assert_int_equal(s.st_size, 6);
    snprintf(path, sizeof path, "%s/outside/planted", tmp);
    assert_int_not_equal(access(path, F_OK), 0);
}

static void test_parent_split(void **st)
{
    (void)st;
    rfsd_path p;
    int dfd;
    const char *last;
    mkpath(&p, "/dir/x/");
    assert_int_equal(rfsd_open_parent(root_fd, &p, &dfd, &last), RFS_OK);
    assert_string_equal(last, "x");
    close(dfd);
    const char *bad[] = {"/", ".", "dir/..", "dir/."};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mkpath(&p, bad[i]);
        assert_int_equal(rfsd_open_parent(root_fd, &p, &dfd, &last), RFS_E_INVAL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relative_forms),
        cmocka_unit_test(test_escapes_refused),
        cmocka_unit_test(test_parent_split),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
