/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* A collective write or read on which one rank runs out of memory (tests/mpiio/failmalloc.c,
 * preloaded by tests/e2e/test_mpiio_nomem.py): every rank must get an error of class
 * MPI_ERR_NO_MEM from the same call, nobody may hang or abort, and the same call repeated
 * afterwards must succeed.
 *   t_nomem FILE write   the collective write is the one that fails
 *   t_nomem FILE read    the data go in with independent writes; the collective read fails
 * Each rank's NB blocks of 1 MiB are interleaved with the other ranks' (two-phase forced,
 * cb_buffer_size covering the whole access so there is a single round). The program's own
 * buffers come from mmap so that the injected failure hits the library's allocations only.
 * Prints "rank R first CALL: class C: MESSAGE" for the driver; byte at offset o is t_pat(o, 0). */
#include "t_common.h"

#include <sys/mman.h>

enum { MB = 1 << 20, NB = 32 };

static unsigned char *map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "rank %d: mmap %zu bytes failed\n", t_rank, len);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    int reading = argc > 2 && !strcmp(argv[2], "read");
    size_t len = (size_t)NB * MB;
    unsigned char *w = map(len), *r = map(len);
    for (size_t b = 0; b < NB; b++)
        for (size_t i = 0; i < MB; i++) {
            long long off = ((long long)b * t_size + t_rank) * MB + (long long)i;
            w[b * MB + i] = t_pat(off, 0);
        }

    MPI_Info info;
    MPI_Info_create(&info);
    char cbs[32];
    snprintf(cbs, sizeof cbs, "%lld", (long long)t_size * NB * MB);
    MPI_Info_set(info, "cb_buffer_size", cbs);
    MPI_Info_set(info, "romio_cb_write", "enable");
    MPI_File fh;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    MPI_Datatype ft;
    MPI_Type_vector(NB, MB, t_size * MB, MPI_BYTE, &ft);
    MPI_Type_commit(&ft);
    MPI_OK(MPI_File_set_view(fh, (MPI_Offset)t_rank * MB, MPI_BYTE, ft, "native", info));

    MPI_Status st;
    int rc, cnt = 0;
    if (reading) {
        MPI_OK(MPI_File_write_at(fh, 0, w, (int)len, MPI_BYTE, &st));
        MPI_Barrier(MPI_COMM_WORLD);
        rc = MPI_File_read_at_all(fh, 0, r, (int)len, MPI_BYTE, &st);
    } else {
        rc = MPI_File_write_at_all(fh, 0, w, (int)len, MPI_BYTE, &st);
    }
    printf("rank %d first %s: class %d: %s\n", t_rank, reading ? "read" : "write", t_class(rc),
           rc == MPI_SUCCESS ? "success" : t_errstr(rc));
    fflush(stdout);

    if (!reading) {
        MPI_OK(MPI_File_write_at_all(fh, 0, w, (int)len, MPI_BYTE, &st));
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        CHECK(cnt == (int)len, "second write count %d", cnt);
    }
    memset(r, 0, len);
    MPI_OK(MPI_File_read_at_all(fh, 0, r, (int)len, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == (int)len, "read count %d", cnt);
    CHECK(memcmp(r, w, len) == 0, "read back differs");
    MPI_OK(MPI_File_close(&fh));
    MPI_Type_free(&ft);
    MPI_Info_free(&info);
    return t_finish();
}
