#include "abt/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "common/fullio.h"

/* Record layout:
 *   0 u32 magic  4 u8 version  5 u8 state  6 u16 name_len  8 u32 n_ext  12 u32 crc
 *  16 u64 seq   24 u64 data_len   32 name | n_ext * (u64 off, u64 len) | data
 * crc (CRC-32) covers bytes 16..31, name, extents and data; state is outside it because it
 * is flipped in place after delivery. */
#define J_MAGIC 0x4A534652u /* "RFSJ" */
#define J_VERSION 1u
#define J_HDR 32u
#define J_STATE_OFF 5u

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t crc_update(uint32_t crc, const void *p, size_t n)
{
    const uint8_t *b = p;
    crc = ~crc;
    while (n--)
        crc = crc_table[(crc ^ *b++) & 0xFFu] ^ (crc >> 8);
    return ~crc;
}

static int write_full(int fd, const void *buf, size_t len, uint64_t off)
{
    return rfs_pwrite_full(fd, buf, len, off);
}

/* Exactly len bytes, or -1: a journal record never ends early. */
static int read_full(int fd, void *buf, size_t len, uint64_t off)
{
    ssize_t n = rfs_pread_full(fd, buf, len, off);
    if (n >= 0 && (size_t)n != len)
        errno = EIO;
    return n >= 0 && (size_t)n == len ? 0 : -1;
}

int rfs_journal_open(const char *dir, rfs_journal **out)
{
    pthread_once(&crc_once, crc_init);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return rfs_fail(rfs_err_from_errno(errno), "staging directory %s: %s", dir, strerror(errno));
    rfs_journal *j = calloc(1, sizeof *j);
    if (!j)
        return rfs_fail(RFS_E_NOMEM, "out of memory for the staging journal");
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(j->path, sizeof j->path, "%s/rfs-abt-%s-%ld-%lx%s", dir, host, (long)getpid(),
             (unsigned long)(ts.tv_nsec ^ (long)(uintptr_t)j), RFS_JOURNAL_SUFFIX);
    j->fd = open(j->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (j->fd < 0) {
        int e = errno;
        free(j);
        return rfs_fail(rfs_err_from_errno(e), "staging journal in %s: %s", dir, strerror(e));
    }
    if (flock(j->fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(j->fd);
        unlink(j->path);
        free(j);
        return rfs_fail(RFS_E_IO, "staging journal in %s: cannot lock: %s", dir, strerror(e));
    }
    pthread_mutex_init(&j->mu, NULL);
    *out = j;
    return RFS_OK;
}

int rfs_journal_append(rfs_journal *j, uint64_t seq, const char *name, const rfs_extent *ext,
                       uint32_t n_ext, const void *data, uint64_t len, int sync,
                       uint64_t *rec_off, uint64_t *data_off)
{
    size_t name_len = strlen(name);
    if (name_len > RFS_JOURNAL_MAX_NAME || n_ext > RFS_JOURNAL_MAX_EXT)
        return rfs_fail(RFS_E_TOOBIG, "staging journal: record too large");
    size_t meta = J_HDR + name_len + (size_t)n_ext * 16u;
    uint8_t *hdr = malloc(meta);
    if (!hdr)
        return rfs_fail(RFS_E_NOMEM, "out of memory staging %llu bytes", (unsigned long long)len);
    uint32_t magic = J_MAGIC, n = n_ext;
    uint16_t nl = (uint16_t)name_len;
    memcpy(hdr, &magic, 4);
    hdr[4] = J_VERSION;
    hdr[J_STATE_OFF] = 0;
    memcpy(hdr + 6, &nl, 2);
    memcpy(hdr + 8, &n, 4);
    memcpy(hdr + 16, &seq, 8);
    memcpy(hdr + 24, &len, 8);
    memcpy(hdr + J_HDR, name, name_len);
    for (uint32_t i = 0; i < n_ext; i++) {
        memcpy(hdr + J_HDR + name_len + 16u * i, &ext[i].offset, 8);
        memcpy(hdr + J_HDR + name_len + 16u * i + 8, &ext[i].length, 8);
    }
    uint32_t crc = crc_update(0, hdr + 16, meta - 16);
    crc = crc_update(crc, data, len);
    memcpy(hdr + 12, &crc, 4);

    pthread_mutex_lock(&j->mu);
    uint64_t at = j->end;
    j->end += meta + len;
    j->pending++;
    pthread_mutex_unlock(&j->mu);

    int rc = write_full(j->fd, hdr, meta, at);
    if (rc == 0)
        rc = write_full(j->fd, data, len, at + meta);
    if (rc == 0 && sync)
        rc = fdatasync(j->fd);
    int e = errno;
    free(hdr);
    if (rc != 0)
        return rfs_fail(rfs_err_from_errno(e), "staging journal %s: write failed: %s", j->path, strerror(e));
    *rec_off = at;
    *data_off = at + meta;
    return RFS_OK;
}

int rfs_journal_read(rfs_journal *j, uint64_t data_off, void *buf, uint64_t len)
{
    if (read_full(j->fd, buf, len, data_off) != 0)
        return rfs_fail(RFS_E_IO, "staging journal %s: read failed: %s", j->path, strerror(errno));
    return RFS_OK;
}

int rfs_journal_mark_done_fd(int fd, uint64_t rec_off)
{
    uint8_t done = 1;
    return write_full(fd, &done, 1, rec_off + J_STATE_OFF) == 0 ? RFS_OK
        : rfs_fail(RFS_E_IO, "staging journal: cannot mark record delivered: %s", strerror(errno));
}

int rfs_journal_mark_done(rfs_journal *j, uint64_t rec_off)
{
    int rc = rfs_journal_mark_done_fd(j->fd, rec_off);
    pthread_mutex_lock(&j->mu);
    if (rc == RFS_OK && j->pending > 0)
        j->pending--;
    pthread_mutex_unlock(&j->mu);
    return rc;
}

void rfs_journal_trim(rfs_journal *j)
{
    pthread_mutex_lock(&j->mu);
    if (j->pending == 0 && j->end > 0) {
        if (ftruncate(j->fd, 0) == 0)
            j->end = 0;
    }
    pthread_mutex_unlock(&j->mu);
}

int rfs_journal_close(rfs_journal *j)
{
    int keep = j->pending > 0;
    if (!keep)
        unlink(j->path);
    close(j->fd);
    pthread_mutex_destroy(&j->mu);
    free(j);
    return keep;
}

/* Parses the record at off: 0 and *next on success (fn called), 1 if torn/corrupt, or fn's
 * non-zero value / a negative rfs_err. */
static int parse_one(int fd, uint64_t size, uint64_t off, rfs_journal_rec_fn fn, void *ctx,
                     uint64_t *next)
{
    uint8_t hdr[J_HDR];
    if (off >= size || size - off < J_HDR || read_full(fd, hdr, J_HDR, off) != 0)
        return 1;
    uint32_t magic, n_ext, crc;
    uint16_t nl;
    uint64_t seq, len;
    memcpy(&magic, hdr, 4);
    memcpy(&nl, hdr + 6, 2);
    memcpy(&n_ext, hdr + 8, 4);
    memcpy(&crc, hdr + 12, 4);
    memcpy(&seq, hdr + 16, 8);
    memcpy(&len, hdr + 24, 8);
    uint64_t meta = J_HDR + (uint64_t)nl + (uint64_t)n_ext * 16u;
    if (magic != J_MAGIC || hdr[4] != J_VERSION || nl == 0 || nl > RFS_JOURNAL_MAX_NAME ||
        n_ext > RFS_JOURNAL_MAX_EXT || meta > size - off || len > size - off - meta)
        return 1;
    uint8_t *rec = malloc(meta - J_HDR + len + 1);
    if (!rec)
        return rfs_fail(RFS_E_NOMEM, "journal: record of %llu bytes", (unsigned long long)len);
    if (read_full(fd, rec, meta - J_HDR + len, off + J_HDR) != 0) {
        free(rec);
        return 1;
    }
    uint32_t c = crc_update(0, hdr + 16, 16);
    c = crc_update(c, rec, meta - J_HDR + len);
    char *name = c == crc ? malloc((size_t)nl + 1) : NULL;
    rfs_extent *ext = name ? malloc(sizeof *ext * (n_ext ? n_ext : 1)) : NULL;
    if (!ext) {
        free(rec), free(name);
        return c == crc ? rfs_fail(RFS_E_NOMEM, "journal: out of memory") : 1;
    }
    memcpy(name, rec, nl);
    name[nl] = '\0';
    for (uint32_t i = 0; i < n_ext; i++) {
        memcpy(&ext[i].offset, rec + nl + 16u * i, 8);
        memcpy(&ext[i].length, rec + nl + 16u * i + 8, 8);
    }
    rfs_journal_rec r = {.rec_off = off, .seq = seq, .len = len, .done = hdr[J_STATE_OFF] != 0,
                         .name = name, .ext = ext, .n_ext = n_ext, .data = rec + meta - J_HDR};
    int rc = fn(ctx, &r);
    free(rec), free(name), free(ext);
    *next = off + meta + len;
    return rc;
}

static int file_size(int fd, uint64_t *size)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return rfs_fail(RFS_E_IO, "journal: fstat: %s", strerror(errno));
    *size = (uint64_t)st.st_size;
    return RFS_OK;
}

int rfs_journal_scan(int fd, rfs_journal_rec_fn fn, void *ctx, int *torn)
{
    pthread_once(&crc_once, crc_init);
    *torn = 0;
    uint64_t size = 0, off = 0;
    int rc = file_size(fd, &size);
    while (rc == RFS_OK && off < size) {
        rc = parse_one(fd, size, off, fn, ctx, &off);
        if (rc == 1) {
            *torn = 1;
            return RFS_OK;
        }
    }
    return rc;
}

int rfs_journal_read_at(int fd, uint64_t rec_off, rfs_journal_rec_fn fn, void *ctx)
{
    pthread_once(&crc_once, crc_init);
    uint64_t size = 0, next;
    int rc = file_size(fd, &size);
    if (rc == RFS_OK)
        rc = parse_one(fd, size, rec_off, fn, ctx, &next);
    return rc == 1 ? rfs_fail(RFS_E_IO, "journal: record at %llu is corrupt",
                              (unsigned long long)rec_off) : rc;
}
