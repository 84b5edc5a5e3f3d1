/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Step 1 and contiguous data access: open/close/amode, sizes, info, atomicity, sync, group,
 * c2f/f2c, type extent, write_at/read_at. Leaves a deterministic file. */
#include "t_common.h"

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    const char *name = argv[1];
    MPI_File fh;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_buffer_size", "65536");
    MPI_Info_set(info, "some_unknown_key", "x");
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    MPI_Info_free(&info);
    CHECK(fh != MPI_FILE_NULL, "handle");

    int amode = 0;
    MPI_OK(MPI_File_get_amode(fh, &amode));
    CHECK(amode == (MPI_MODE_CREATE | MPI_MODE_RDWR), "amode %x", amode);

    MPI_Group g, wg;
    int cmp = 0;
    MPI_OK(MPI_File_get_group(fh, &g));
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &cmp);
    CHECK(cmp == MPI_IDENT, "group %d", cmp);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);

    MPI_Info used;
    MPI_OK(MPI_File_get_info(fh, &used));
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    MPI_Info_get(used, "cb_buffer_size", MPI_MAX_INFO_VAL, v, &flag);
    CHECK(flag && !strcmp(v, "65536"), "cb_buffer_size %s", flag ? v : "(unset)");
    MPI_Info_free(&used);

    MPI_OK(MPI_File_set_size(fh, 0));
    MPI_Offset sz = -1;
    MPI_OK(MPI_File_get_size(fh, &sz));
    CHECK(sz == 0, "size %lld", (long long)sz);
    MPI_Barrier(MPI_COMM_WORLD); /* nobody writes before everyone saw the empty file */

    /* Each rank writes a 1000-byte block at rank*1000 with write_at. */
    enum { B = 1000 };
    unsigned char buf[B], rb[B];
    for (int i = 0; i < B; i++)
        buf[i] = t_pat(t_rank * B + i, t_rank);
    MPI_Status st;
    MPI_OK(MPI_File_write_at(fh, (MPI_Offset)t_rank * B, buf, B, MPI_BYTE, &st));
    int cnt = -1;
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == B, "write count %d", cnt);
    MPI_OK(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_File_sync(fh));
    MPI_OK(MPI_File_get_size(fh, &sz));
    CHECK(sz == (MPI_Offset)t_size * B, "size after writes %lld", (long long)sz);

    /* Read the next rank's block (sync-barrier-sync made it visible). */
    int peer = (t_rank + 1) % t_size;
    MPI_OK(MPI_File_read_at(fh, (MPI_Offset)peer * B, rb, B, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == B, "read count %d", cnt);
    for (int i = 0; i < B; i++)
        if (rb[i] != t_pat(peer * B + i, peer)) {
            CHECK(0, "byte %d of peer block", i);
            break;
        }

    /* Read past EOF: fewer elements. Ints: 250 per block; ask 300 at the last block. */
    int ib[300];
    MPI_OK(MPI_File_read_at(fh, (MPI_Offset)(t_size - 1) * B, ib, 300, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == 250, "ints read at EOF: %d", cnt);
    MPI_Count elems = 0;
    MPI_Get_elements_x(&st, MPI_INT, &elems);
    CHECK(elems == 250, "elements %lld", (long long)elems);
    /* Fully past EOF: 0. */
    MPI_OK(MPI_File_read_at(fh, (MPI_Offset)t_size * B + 10, ib, 3, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == 0, "read beyond EOF %d", cnt);

    int atom = -1;
    MPI_OK(MPI_File_set_atomicity(fh, 1));
    MPI_OK(MPI_File_get_atomicity(fh, &atom));
    CHECK(atom == 1, "atomicity %d", atom);
    /* An atomic-mode write: each rank rewrites its block's first 10 bytes. */
    MPI_OK(MPI_File_write_at(fh, (MPI_Offset)t_rank * B, buf, 10, MPI_BYTE, &st));
    MPI_OK(MPI_File_set_atomicity(fh, 0));
    MPI_OK(MPI_File_get_atomicity(fh, &atom));
    CHECK(atom == 0, "atomicity %d", atom);

    MPI_Aint ext = 0;
    MPI_OK(MPI_File_get_type_extent(fh, MPI_DOUBLE, &ext));
    CHECK(ext == sizeof(double), "extent %ld", (long)ext);

    MPI_Fint fi = MPI_File_c2f(fh);
    CHECK(MPI_File_f2c(fi) == fh, "c2f/f2c round trip");

    /* Preallocate grows, never shrinks; set_size truncates. */
    MPI_OK(MPI_File_preallocate(fh, (MPI_Offset)t_size * B + 500));
    MPI_OK(MPI_File_get_size(fh, &sz));
    CHECK(sz >= (MPI_Offset)t_size * B + 500, "preallocate %lld", (long long)sz);
    MPI_OK(MPI_File_set_size(fh, (MPI_Offset)t_size * B + 100));
    MPI_OK(MPI_File_get_size(fh, &sz));
    CHECK(sz == (MPI_Offset)t_size * B + 100, "set_size %lld", (long long)sz);

    MPI_OK(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL, "close sets MPI_FILE_NULL");

    /* Reopen read-only and verify everything. */
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    unsigned char *all = malloc((size_t)t_size * B + 100);
    MPI_OK(MPI_File_read_at(fh, 0, all, t_size * B + 100, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == t_size * B + 100, "whole read %d", cnt);
    for (int r = 0; r < t_size; r++)
        for (int i = 0; i < B; i++)
            if (all[r * B + i] != t_pat(r * B + i, r)) {
                CHECK(0, "final byte %d of block %d", i, r);
                r = t_size;
                break;
            }
    for (int i = 0; i < 100; i++)
        CHECK(all[t_size * B + i] == 0, "tail byte %d not zero", i);
    free(all);
    MPI_OK(MPI_File_close(&fh));
    return t_finish();
}
