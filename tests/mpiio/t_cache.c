/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The read cache seen from MPI-IO (tests/e2e/test_cache_mpi.py).
 *
 *   t_cache FILE read             FILE exists. Each rank reads it sequentially, strided at
 *                                 explicit offsets, strided through a file view (independent
 *                                 and collective) and sequentially again; rank 0 prints one line
 *                                 per phase and rank with the bytes read and their FNV-1a hash,
 *                                 which must match a run on a local file.
 *   t_cache FILE coherence ROUNDS [nosync]
 *                                 Rank 0 writes a region through its own handle, the others read
 *                                 it through read-only handles (the cache on by default), round
 *                                 after round, ordered by sync-barrier-sync. nosync: the readers
 *                                 skip their sync; rank 0 prints how many stale bytes they saw.
 *   t_cache FILE barrier          One handle open for writing, read cache hinted on; rank 0
 *                                 writes, MPI_Barrier, the others read, round after round,
 *                                 with no sync (as HDF5 orders ranks): a barrier drops the cache
 *                                 of a file open for writing, so readers see the newest bytes.
 *   t_cache FILE atomic on|off    One handle, read cache hinted on. Rank 0 writes, all sync,
 *                                 readers read (twice); then rank 0 writes again and tells them
 *                                 by message only (a barrier would drop the cache). on: atomic
 *                                 mode, so readers must see the newest bytes; rank 0 prints the
 *                                 stale bytes readers saw either way.
 */
#include "t_common.h"

#include <stdint.h>

#define CHUNK (64 * 1024)

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

#define FNV0 14695981039346656037ull

typedef struct phase {
    int64_t bytes;
    uint64_t hash;
} phase;

static int count_of(MPI_Status *st)
{
    int n = 0;
    MPI_Get_count(st, MPI_BYTE, &n);
    return n;
}

/* [from, from + len) in CHUNK reads at explicit offsets, stopping at end of file. */
static phase read_range(MPI_File fh, MPI_Offset from, MPI_Offset len, unsigned char *buf)
{
    phase p = {0, FNV0};
    for (MPI_Offset o = from; o < from + len; o += CHUNK) {
        MPI_Status st;
        int want = from + len - o < CHUNK ? (int)(from + len - o) : CHUNK;
        MPI_OK(MPI_File_read_at(fh, o, buf, want, MPI_BYTE, &st));
        int n = count_of(&st);
        p.bytes += n;
        p.hash = fnv(p.hash, buf, (size_t)n);
        if (n < want)
            break;
    }
    return p;
}

static void print_phases(const char *names[], phase *mine, int nph)
{
    phase *all = malloc(sizeof(phase) * (size_t)nph * (size_t)t_size);
    MPI_Gather(mine, (int)sizeof(phase) * nph, MPI_BYTE, all, (int)sizeof(phase) * nph, MPI_BYTE, 0,
               MPI_COMM_WORLD);
    if (t_rank == 0)
        for (int k = 0; k < nph; k++)
            for (int r = 0; r < t_size; r++)
                printf("phase %s rank %d bytes %lld fnv %016llx\n", names[k], r,
                       (long long)all[r * nph + k].bytes,
                       (unsigned long long)all[r * nph + k].hash);
    free(all);
}

static void mode_read(const char *name)
{
    MPI_File fh;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    MPI_Offset size = 0;
    MPI_OK(MPI_File_get_size(fh, &size));
    unsigned char *buf = malloc(1 << 20);
    phase ph[6];
    const char *names[6] = {"sequential",       "strided-at", "strided-view",
                            "strided-view-all", "reread",     "sequential-big"};
    /* Sequential: this rank's share and some of the next one's (the last rank's runs off the
     * end of the file). */
    MPI_Offset part = (size + t_size - 1) / t_size;
    ph[0] = read_range(fh, part * t_rank, part + 100000, buf);
    /* Strided at explicit offsets: 4 KiB blocks, a hole of two blocks after each rank's. */
    ph[1] = (phase){0, FNV0};
    for (MPI_Offset k = 0;; k++) {
        MPI_Offset o = (k * t_size + t_rank) * 3 * 4096 + 17;
        MPI_Status st;
        MPI_OK(MPI_File_read_at(fh, o, buf, 4096, MPI_BYTE, &st));
        int n = count_of(&st);
        ph[1].bytes += n;
        ph[1].hash = fnv(ph[1].hash, buf, (size_t)n);
        if (n < 4096)
            break;
    }
    /* Strided through a view: 1000-byte blocks, every rank's followed by a hole as long. */
    MPI_Datatype blk, ftype;
    MPI_Type_contiguous(1000, MPI_BYTE, &blk);
    MPI_Type_create_resized(blk, 0, 1000 * 2 * t_size, &ftype);
    MPI_Type_commit(&ftype);
    /* Only the bytes the file has: ROMIO reports full counts for view reads past its end. */
    MPI_Offset avail = 0;
    for (MPI_Offset b = 1000 * t_rank; b < size; b += 1000 * 2 * t_size)
        avail += size - b < 1000 ? size - b : 1000;
    MPI_Offset most = 0;
    MPI_Allreduce(&avail, &most, 1, MPI_OFFSET, MPI_MAX, MPI_COMM_WORLD);
    for (int coll = 0; coll < 2; coll++) {
        phase *p = &ph[2 + coll];
        *p = (phase){0, FNV0};
        MPI_OK(MPI_File_set_view(fh, 1000 * t_rank, MPI_BYTE, ftype, "native", MPI_INFO_NULL));
        for (MPI_Offset done = 0; done < (coll ? most : avail); done += 7000) {
            MPI_Offset left = avail - done > 0 ? avail - done : 0;
            int want = left < 7000 ? (int)left : 7000;
            MPI_Status st;
            if (coll)
                MPI_OK(MPI_File_read_all(fh, buf, want, MPI_BYTE, &st));
            else
                MPI_OK(MPI_File_read(fh, buf, want, MPI_BYTE, &st));
            int n = count_of(&st);
            CHECK(n == want, "view read: %d of %d bytes", n, want);
            p->bytes += n;
            p->hash = fnv(p->hash, buf, (size_t)n);
        }
    }
    MPI_OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MPI_Type_free(&ftype);
    MPI_Type_free(&blk);
    /* The first phase again: the same bytes (from the cache, with rfs). */
    ph[4] = read_range(fh, part * t_rank, part + 100000, buf);
    CHECK(ph[4].bytes == ph[0].bytes && ph[4].hash == ph[0].hash, "re-read differs");
    /* Whole file in 1 MiB reads. */
    ph[5] = (phase){0, FNV0};
    for (MPI_Offset o = 0;; o += 1 << 20) {
        MPI_Status st;
        MPI_OK(MPI_File_read_at(fh, o, buf, 1 << 20, MPI_BYTE, &st));
        int n = count_of(&st);
        ph[5].bytes += n;
        ph[5].hash = fnv(ph[5].hash, buf, (size_t)n);
        if (n < 1 << 20)
            break;
    }
    MPI_OK(MPI_File_close(&fh));
    print_phases(names, ph, 6);
    free(buf);
}

#define REGION (1024 * 1024 + 123)

static unsigned char pattern(int round, MPI_Offset i)
{
    return (unsigned char)((i * 7 + (i >> 9) + (MPI_Offset)round * 101 + 3) & 0xff);
}

static void write_region(MPI_File fh, int round, unsigned char *buf)
{
    for (MPI_Offset i = 0; i < REGION; i++)
        buf[i] = pattern(round, i);
    for (MPI_Offset o = 0; o < REGION; o += CHUNK) {
        int n = REGION - o < CHUNK ? (int)(REGION - o) : CHUNK;
        MPI_OK(MPI_File_write_at(fh, o, buf + o, n, MPI_BYTE, MPI_STATUS_IGNORE));
    }
}

/* Reads the region (sequentially, in chunks: prefetch kicks in) and counts the bytes that are
 * not round's. */
static int64_t stale_bytes(MPI_File fh, int round, unsigned char *buf)
{
    int64_t bad = 0;
    for (MPI_Offset o = 0; o < REGION; o += CHUNK) {
        int n = REGION - o < CHUNK ? (int)(REGION - o) : CHUNK;
        MPI_Status st;
        MPI_OK(MPI_File_read_at(fh, o, buf, n, MPI_BYTE, &st));
        CHECK(count_of(&st) == n, "short read at %lld", (long long)o);
        for (int i = 0; i < n; i++)
            bad += buf[i] != pattern(round, o + i);
    }
    return bad;
}

static void report_stale(int64_t mine)
{
    int64_t total = 0;
    MPI_Reduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (t_rank == 0)
        printf("stale %lld\n", (long long)total);
}

static void mode_coherence(const char *name, int rounds, int nosync)
{
    unsigned char *buf = malloc(REGION);
    MPI_File fh;
    if (t_rank == 0) {
        MPI_OK(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                             &fh));
        write_region(fh, 0, buf);
        MPI_OK(MPI_File_sync(fh));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (t_rank != 0)
        MPI_OK(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    int64_t stale = 0;
    for (int k = 1; k <= rounds; k++) {
        if (t_rank != 0) {
            /* Twice: the second time from the cache. */
            int64_t a = stale_bytes(fh, k - 1, buf), b = stale_bytes(fh, k - 1, buf);
            if (nosync)
                stale += a + b;
            else
                CHECK(a == 0 && b == 0, "round %d: %lld and %lld stale bytes", k, (long long)a,
                      (long long)b);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (t_rank == 0) {
            write_region(fh, k, buf);
            MPI_OK(MPI_File_sync(fh));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (t_rank != 0 && !nosync)
            MPI_OK(MPI_File_sync(fh));
    }
    if (t_rank != 0) {
        int64_t a = stale_bytes(fh, rounds, buf);
        if (nosync)
            stale += a;
        else
            CHECK(a == 0, "last round: %lld stale bytes", (long long)a);
    }
    MPI_OK(MPI_File_close(&fh));
    report_stale(stale);
    free(buf);
}

static void mode_barrier(const char *name)
{
    unsigned char *buf = malloc(REGION);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "rfs_cache_read", "enable");
    MPI_File fh;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh));
    MPI_Info_free(&info);
    for (int k = 0; k < 4; k++) {
        if (t_rank == 0)
            write_region(fh, k, buf);
        MPI_Barrier(MPI_COMM_WORLD);
        if (t_rank != 0) {
            int64_t a = stale_bytes(fh, k, buf), b = stale_bytes(fh, k, buf);
            CHECK(a == 0 && b == 0, "round %d: %lld and %lld stale bytes", k, (long long)a,
                  (long long)b);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_OK(MPI_File_close(&fh));
    free(buf);
}

static void mode_atomic(const char *name, int atomic)
{
    unsigned char *buf = malloc(REGION);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "rfs_cache_read", "enable");
    MPI_File fh;
    MPI_OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh));
    MPI_Info_free(&info);
    MPI_OK(MPI_File_set_atomicity(fh, atomic));
    int flag = -1;
    MPI_OK(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == atomic, "atomicity %d", flag);
    int token = 0;
    int64_t stale = 0;
    /* The first bytes are made visible the standard way (the write window may hold them
     * otherwise, outside atomic mode); only the second write is ordered by messages alone. */
    if (t_rank == 0)
        write_region(fh, 0, buf);
    MPI_OK(MPI_File_sync(fh));
    if (t_rank == 0) {
        for (int r = 1; r < t_size; r++)
            MPI_Send(&token, 1, MPI_INT, r, 1, MPI_COMM_WORLD);
        for (int r = 1; r < t_size; r++)
            MPI_Recv(&token, 1, MPI_INT, r, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        write_region(fh, 1, buf);
        for (int r = 1; r < t_size; r++)
            MPI_Send(&token, 1, MPI_INT, r, 3, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&token, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(stale_bytes(fh, 0, buf) == 0, "first read");
        CHECK(stale_bytes(fh, 0, buf) == 0, "second read");
        MPI_Send(&token, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
        MPI_Recv(&token, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        stale = stale_bytes(fh, 1, buf);
        if (atomic)
            CHECK(stale == 0, "atomic mode: %lld stale bytes", (long long)stale);
    }
    MPI_OK(MPI_File_close(&fh));
    report_stale(stale);
    free(buf);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    const char *mode = argc > 2 ? argv[2] : "";
    if (!strcmp(mode, "read"))
        mode_read(argv[1]);
    else if (!strcmp(mode, "coherence") && argc > 3)
        mode_coherence(argv[1], atoi(argv[3]), argc > 4 && !strcmp(argv[4], "nosync"));
    else if (!strcmp(mode, "barrier"))
        mode_barrier(argv[1]);
    else if (!strcmp(mode, "atomic") && argc > 3)
        mode_atomic(argv[1], !strcmp(argv[3], "on"));
    else {
        if (t_rank == 0)
            fprintf(
                stderr,
                "usage: t_cache FILE read | coherence ROUNDS [nosync] | barrier | atomic on|off\n");
        t_fail = 1;
    }
    return t_finish();
}
