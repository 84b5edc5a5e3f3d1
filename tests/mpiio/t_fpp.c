/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* File per process (docs/manifest.md "Where a new file starts"): each rank makes its own
 * small file PREFIX-<rank>.rfsm through MPI_COMM_SELF, writes it in two pieces and syncs;
 * after a barrier every rank reads every rank's file back and checks each byte. Given a
 * local PREFIX the files are plain local files (the reference run). */
#include "t_common.h"

enum { FILE_BYTES = 3000, SPLIT = 1234 };

static void name_of(char *out, size_t cap, const char *prefix, int r)
{
    snprintf(out, cap, "%s-%d.rfsm", prefix, r);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    char name[4096];
    unsigned char buf[FILE_BYTES];
    name_of(name, sizeof name, argv[1], t_rank);
    for (int i = 0; i < FILE_BYTES; i++)
        buf[i] = t_pat(i, t_rank);
    MPI_File fh;
    MPI_OK(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    MPI_OK(MPI_File_write_at(fh, 0, buf, SPLIT, MPI_BYTE, MPI_STATUS_IGNORE));
    MPI_OK(
        MPI_File_write_at(fh, SPLIT, buf + SPLIT, FILE_BYTES - SPLIT, MPI_BYTE, MPI_STATUS_IGNORE));
    MPI_OK(MPI_File_sync(fh));
    MPI_OK(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < t_size; r++) {
        name_of(name, sizeof name, argv[1], r);
        MPI_OK(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
        MPI_Offset size = -1;
        MPI_OK(MPI_File_get_size(fh, &size));
        CHECK(size == FILE_BYTES, "%s: size %lld", name, (long long)size);
        memset(buf, 0, sizeof buf);
        MPI_OK(MPI_File_read_at(fh, 0, buf, FILE_BYTES, MPI_BYTE, MPI_STATUS_IGNORE));
        int bad = -1;
        for (int i = 0; i < FILE_BYTES && bad < 0; i++)
            if (buf[i] != t_pat(i, r))
                bad = i;
        CHECK(bad < 0, "%s: byte %d differs", name, bad);
        MPI_OK(MPI_File_close(&fh));
    }
    return t_finish();
}
