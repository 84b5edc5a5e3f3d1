/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The descriptor side of the POSIX shim of librfs-mpiio.so (posix/posix_shim.c): read-only
 * opens of rfs names, called the way PnetCDF and other libraries do outside MPI-IO (the name
 * calls, unlink/rename/truncate..., are t_posix_write.c).
 *
 *   t_posix RFSNAME SIZE LOCALFILE
 *
 * RFSNAME (rfs:HOST:PORT:/path) names an existing server file of SIZE bytes whose byte i is
 * t_pat(i, 0); LOCALFILE.RANK is a local file that must keep working through the same calls.
 * Every rank runs the checks on its own. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "t_common.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

static long long fsize;

static int pattern_ok(const unsigned char *b, long long off, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != t_pat(off + (long long)i, 0))
            return 0;
    return 1;
}

/* Reads the whole file through fd with read() in odd-sized pieces. */
static void read_all(int fd, const char *what)
{
    unsigned char buf[777];
    long long total = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        if (!pattern_ok(buf, total, (size_t)n)) {
            CHECK(0, "%s: bytes at %lld differ", what, total);
            return;
        }
        total += n;
    }
    CHECK(n == 0 && total == fsize, "%s: read %lld bytes, last rc %zd errno %d", what, total, n,
          errno);
}

typedef struct worker_arg {
    int fd;
    int ok;
} worker_arg;

static void *preader(void *p)
{
    worker_arg *a = p;
    unsigned char buf[512];
    a->ok = 1;
    for (int k = 0; k < 50; k++) {
        long long off = (k * 1237LL) % (fsize - (long long)sizeof buf);
        ssize_t n = pread(a->fd, buf, sizeof buf, off);
        if (n != (ssize_t)sizeof buf || !pattern_ok(buf, off, sizeof buf))
            a->ok = 0;
    }
    return NULL;
}

/* "rfs:H:P:/path" -> "H:P:/path" (what PnetCDF passes after stripping the prefix) and
 * "rfs://H:P/path". */
static void other_forms(const char *name, char *stripped, char *url, size_t cap)
{
    snprintf(stripped, cap, "%s", name + 4);
    const char *colon = strchr(name + 4, ':');
    const char *path = colon ? strchr(colon + 1, ':') : NULL;
    snprintf(url, cap, "rfs://%.*s%s", (int)(path ? path - (name + 4) : 0), name + 4,
             path ? path + 1 : "");
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    if (argc < 4) {
        fprintf(stderr, "usage: t_posix RFSNAME SIZE LOCALFILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *name = argv[1];
    char local[4200];
    snprintf(local, sizeof local, "%s.%d", argv[3], t_rank); /* one per rank: it is truncated */
    fsize = atoll(argv[2]);
    char stripped[4200], url[4200], missing[4300];
    other_forms(name, stripped, url, sizeof stripped);
    snprintf(missing, sizeof missing, "%s.missing", name);

    /* open + read + lseek + fstat + close, as PnetCDF's format probe does. */
    int fd = open(name, O_RDONLY);
    CHECK(fd >= 0, "open %s: %s", name, strerror(errno));
    if (fd >= 0) {
        read_all(fd, "read");
        CHECK(lseek(fd, 0, SEEK_END) == fsize, "lseek SEEK_END");
        CHECK(lseek(fd, 10, SEEK_SET) == 10, "lseek SEEK_SET");
        CHECK(lseek(fd, 5, SEEK_CUR) == 15, "lseek SEEK_CUR");
        unsigned char b8[8];
        CHECK(read(fd, b8, 8) == 8 && pattern_ok(b8, 15, 8), "read after lseek");
        CHECK(pread(fd, b8, 8, 100) == 8 && pattern_ok(b8, 100, 8), "pread");
        CHECK(lseek(fd, 0, SEEK_CUR) == 23, "pread must not move the position");
        CHECK(pread(fd, b8, 8, fsize) == 0, "pread at end of file");
        CHECK(lseek(fd, -1, SEEK_SET) == -1 && errno == EINVAL, "negative seek: errno %d", errno);
        struct stat st;
        CHECK(fstat(fd, &st) == 0 && st.st_size == fsize && S_ISREG(st.st_mode), "fstat size %lld",
              (long long)st.st_size);
        /* Several threads on one descriptor. */
        pthread_t th[4];
        worker_arg wa[4];
        for (int i = 0; i < 4; i++) {
            wa[i].fd = fd;
            pthread_create(&th[i], NULL, preader, &wa[i]);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(th[i], NULL);
            CHECK(wa[i].ok, "thread %d pread", i);
        }
        CHECK(close(fd) == 0, "close");
        errno = 0;
        CHECK(read(fd, b8, 1) == -1 && errno == EBADF, "read after close: errno %d", errno);
    }

    /* Other spellings: the stripped prefix (PnetCDF), the URL form, openat, open64. */
    const char *forms[2] = {stripped, url};
    for (int i = 0; i < 2; i++) {
        int f2 = open(forms[i], O_RDONLY | O_CLOEXEC);
        CHECK(f2 >= 0, "open %s: %s", forms[i], strerror(errno));
        if (f2 >= 0) {
            read_all(f2, forms[i]);
            close(f2);
        }
    }
    int f3 = openat(AT_FDCWD, name, O_RDONLY);
    CHECK(f3 >= 0, "openat: %s", strerror(errno));
    if (f3 >= 0)
        close(f3);

    /* Names: stat, access; open for writing refused; missing files. */
    struct stat st;
    CHECK(stat(name, &st) == 0 && st.st_size == fsize && S_ISREG(st.st_mode), "stat");
    CHECK(stat(stripped, &st) == 0 && st.st_size == fsize, "stat of the stripped name");
    CHECK(lstat(url, &st) == 0 && st.st_size == fsize, "lstat of the URL form");
    CHECK(access(name, F_OK) == 0 && access(name, R_OK) == 0, "access R_OK");
    CHECK(access(stripped, F_OK) == 0, "access of the stripped name (PnetCDF's NOCLOBBER check)");
    /* W_OK by the permission bits (the name is writable by MPI-IO, truncate(), rename()), but
     * open() for writing is refused: writes go through MPI-IO. */
    CHECK(access(name, W_OK) == 0, "access W_OK: %s", strerror(errno));
    int flags[4] = {O_WRONLY, O_RDWR, O_RDONLY | O_CREAT, O_RDONLY | O_TRUNC};
    for (int i = 0; i < 4; i++) {
        errno = 0;
        int w = open(name, flags[i], 0644);
        CHECK(w == -1 && errno == EROFS, "open with flags %#x: fd %d errno %d", flags[i], w, errno);
        if (w >= 0)
            close(w);
    }
    errno = 0;
    CHECK(open(missing, O_RDONLY) == -1 && errno == ENOENT, "open missing: errno %d", errno);
    errno = 0;
    CHECK(stat(missing, &st) == -1 && errno == ENOENT, "stat missing: errno %d", errno);
    errno = 0;
    CHECK(access(missing + 4, F_OK) == -1 && errno == ENOENT, "access stripped missing: errno %d",
          errno);

    /* No server there (port 1 on the loopback refuses at once): an error, not a hang. */
    errno = 0;
    CHECK(open("rfs:127.0.0.1:1:/x", O_RDONLY) == -1 && errno == ECONNREFUSED,
          "open without a server: errno %d", errno);

    /* Local files are untouched, including write access. */
    int lf = open(local, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(lf >= 0, "local open: %s", strerror(errno));
    if (lf >= 0) {
        CHECK(write(lf, "local", 5) == 5, "local write");
        CHECK(lseek(lf, 0, SEEK_SET) == 0, "local lseek");
        char lb[8] = {0};
        CHECK(read(lf, lb, 8) == 5 && !memcmp(lb, "local", 5), "local read");
        CHECK(fstat(lf, &st) == 0 && st.st_size == 5, "local fstat");
        CHECK(close(lf) == 0, "local close");
    }
    CHECK(stat(local, &st) == 0 && st.st_size == 5, "local stat");
    CHECK(access(local, W_OK) == 0, "local access W_OK");
    return t_finish();
}
