/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Error classes, messages and handlers. Class checks run on both local and rfs files (ROMIO
 * agrees on them); rfs-only checks: messages naming the data representation, server
 * and path, path escapes, unreachable server. */
#include "t_common.h"

static int handler_calls, handler_class;
static MPI_File handler_file;

static void on_error(MPI_File *fh, int *code, ...)
{
    handler_calls++;
    handler_file = *fh;
    MPI_Error_class(*code, &handler_class);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    const char *name = argv[1];
    int is_rfs = !strncmp(name, "rfs:", 4);
    char other[4200], created[4200];
    snprintf(other, sizeof other, "%s.missing", name);
    snprintf(created, sizeof created, "%s.excl", name);
    MPI_File fh;
    MPI_Status st;
    int rc;

    rc = MPI_File_open(MPI_COMM_WORLD, other, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(t_class(rc) == MPI_ERR_NO_SUCH_FILE, "open missing: %s", t_errstr(rc));
    if (is_rfs) {
        const char *s = t_errstr(rc);
        CHECK(strstr(s, "127.0.0.1:") && strstr(s, ".missing"), "message names server and path: %s",
              s);
    }
    rc =
        MPI_File_open(MPI_COMM_WORLD, other, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
    CHECK(t_class(rc) == MPI_ERR_AMODE, "RDONLY|CREATE: %s", t_errstr(rc));
    rc = MPI_File_open(MPI_COMM_WORLD, other, MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
    CHECK(t_class(rc) == MPI_ERR_AMODE, "no access mode: %s", t_errstr(rc));
    rc = MPI_File_open(MPI_COMM_WORLD, other, MPI_MODE_RDWR | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    CHECK(t_class(rc) == MPI_ERR_AMODE, "two access modes: %s", t_errstr(rc));

    /* EXCL: exactly one creation; a second EXCL open fails on every rank. */
    MPI_File_delete(created, MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, created, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY,
                         MPI_INFO_NULL, &fh));
    MPI_OK(MPI_File_close(&fh));
    rc = MPI_File_open(MPI_COMM_WORLD, created, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY,
                       MPI_INFO_NULL, &fh);
    CHECK(t_class(rc) == MPI_ERR_FILE_EXISTS, "second EXCL: %s", t_errstr(rc));
    MPI_Barrier(MPI_COMM_WORLD);
    if (t_rank == 0)
        MPI_OK(MPI_File_delete(created, MPI_INFO_NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    rc = MPI_File_delete(created, MPI_INFO_NULL);
    CHECK(t_class(rc) == MPI_ERR_NO_SUCH_FILE, "delete missing: %s", t_errstr(rc));

    /* The real file: write it, then misuse it read-only / write-only. */
    unsigned char buf[100];
    for (int i = 0; i < 100; i++)
        buf[i] = t_pat(i, 0);
    MPI_OK(
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
    if (t_rank == 0)
        MPI_OK(MPI_File_write_at(fh, 0, buf, 100, MPI_BYTE, &st));
    rc = MPI_File_read_at(fh, 0, buf, 10, MPI_BYTE, &st);
    CHECK(t_class(rc) == MPI_ERR_ACCESS, "read on WRONLY: %s", t_errstr(rc));
    /* external32 is a representation every MPI-IO knows; an unknown name is refused. */
    rc = MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL);
    CHECK(rc == MPI_SUCCESS, "external32: %s", t_errstr(rc));
    rc = MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "no-such-representation", MPI_INFO_NULL);
    CHECK(t_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "unknown datarep: %s", t_errstr(rc));
    if (is_rfs) {
        const char *s = t_errstr(rc);
        CHECK(strstr(s, "no-such-representation") != NULL, "message names it: %s", s);
    }
    MPI_OK(MPI_File_close(&fh));

    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    rc = MPI_File_write_at(fh, 0, buf, 10, MPI_BYTE, &st);
    CHECK(t_class(rc) == MPI_ERR_READ_ONLY, "write on RDONLY: %s", t_errstr(rc));

    /* A user error handler: called with the file and the error; survives MPI_Errhandler_free. */
    MPI_Errhandler eh, got;
    MPI_OK(MPI_File_create_errhandler(on_error, &eh));
    MPI_OK(MPI_File_set_errhandler(fh, eh));
    MPI_OK(MPI_File_get_errhandler(fh, &got));
    CHECK(got == eh, "get_errhandler returns the handler set");
    MPI_OK(MPI_Errhandler_free(&got));
    MPI_OK(MPI_Errhandler_free(&eh));
    rc = MPI_File_write_at(fh, 0, buf, 10, MPI_BYTE, &st);
    CHECK(handler_calls == 1 && handler_file == fh && handler_class == MPI_ERR_READ_ONLY,
          "handler calls %d class %d", handler_calls, handler_class);
    MPI_OK(MPI_File_call_errhandler(fh, MPI_ERR_OTHER));
    CHECK(handler_calls == 2 && handler_class == MPI_ERR_OTHER, "call_errhandler: %d %d",
          handler_calls, handler_class);
    MPI_OK(MPI_File_close(&fh));

    /* Errors of open go to the handler on MPI_FILE_NULL. */
    MPI_Errhandler eh2;
    MPI_OK(MPI_File_create_errhandler(on_error, &eh2));
    MPI_OK(MPI_File_set_errhandler(MPI_FILE_NULL, eh2));
    handler_calls = 0;
    rc = MPI_File_open(MPI_COMM_WORLD, other, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(handler_calls == 1 && handler_file == MPI_FILE_NULL &&
              handler_class == MPI_ERR_NO_SUCH_FILE,
          "FILE_NULL handler calls %d class %d", handler_calls, handler_class);
    MPI_OK(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    MPI_Errhandler_free(&eh2);

    if (is_rfs) {
        /* rfs:HOST:PORT: prefix of our name, to build hostile or unreachable names. */
        char prefix[300], bad[600];
        const char *p = strstr(name, ":/");
        int plen = p ? (int)(p - name) + 1 : 0;
        snprintf(prefix, sizeof prefix, "%.*s", plen, name);
        snprintf(bad, sizeof bad, "%s/../../../../etc/passwd", prefix);
        rc = MPI_File_open(MPI_COMM_WORLD, bad, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
        CHECK(rc != MPI_SUCCESS, "path escape must fail");
        if (rc == MPI_SUCCESS)
            MPI_File_close(&fh);
        rc = MPI_File_open(MPI_COMM_WORLD, "rfs:127.0.0.1:1:/x", MPI_MODE_RDONLY, MPI_INFO_NULL,
                           &fh);
        CHECK(t_class(rc) == MPI_ERR_IO && strstr(t_errstr(rc), "127.0.0.1:1"),
              "unreachable server: %s", t_errstr(rc));
        rc = MPI_File_open(MPI_COMM_WORLD, "rfs:nonsense", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
        CHECK(rc != MPI_SUCCESS, "malformed name must fail");
    }
    return t_finish();
}
