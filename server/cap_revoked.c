/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The revocation list of this server's capabilities (cap_revoked.h). */
#include "cap_revoked.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"

typedef struct revoked {
    uint64_t serial, expires;
} revoked;

/* Read before every request of a connection authenticated by one of this server's
 * capabilities, written only by CAP_REVOKE. */
static pthread_rwlock_t mu = PTHREAD_RWLOCK_INITIALIZER;
static revoked *rev; /* RFSD_CAP_MAX_REVOKED entries, sorted by serial */
static unsigned nrev;
static char path[4096]; /* "": no state dir */

static int by_serial(const void *a, const void *b)
{
    uint64_t x = ((const revoked *)a)->serial, y = ((const revoked *)b)->serial;
    return x < y ? -1 : x > y;
}

/* Where serial is in the sorted list, or would go. */
static unsigned find_slot(uint64_t serial)
{
    unsigned lo = 0, hi = nrev;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (rev[mid].serial < serial)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Writes the list anew beside, then renames it over the old one (a crash leaves either). */
static int save(void)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return rfs_fail(RFS_E_IO, "revocation list %s: %s", tmp, strerror(errno));
    FILE *f = fdopen(fd, "w");
    int ok = f != NULL;
    for (unsigned i = 0; ok && i < nrev; i++)
        ok = fprintf(f, "%016" PRIx64 " %" PRIu64 "\n", rev[i].serial, rev[i].expires) > 0;
    ok = f && fflush(f) == 0 && fsync(fd) == 0 && ok;
    if (f)
        fclose(f);
    else
        close(fd);
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return rfs_fail(RFS_E_IO, "revocation list %s: cannot write it", path);
    }
    return RFS_OK;
}

int rfsd_revoked_init(const char *state_dir, uint64_t now)
{
    if (!(rev = calloc(RFSD_CAP_MAX_REVOKED, sizeof *rev))) {
        fprintf(stderr, "rfsd: out of memory\n");
        return -1;
    }
    if (!state_dir)
        return 0;
    snprintf(path, sizeof path, "%s/cap-revoked", state_dir);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    unsigned long long s, e;
    while (nrev < RFSD_CAP_MAX_REVOKED && fscanf(f, "%llx %llu", &s, &e) == 2)
        if (e > now)
            rev[nrev++] = (revoked){s, e};
    fclose(f);
    qsort(rev, nrev, sizeof *rev, by_serial);
    return 0;
}

unsigned rfsd_revoked_count(void)
{
    pthread_rwlock_rdlock(&mu);
    unsigned n = nrev;
    pthread_rwlock_unlock(&mu);
    return n;
}

int rfsd_revoked_has(uint64_t serial)
{
    pthread_rwlock_rdlock(&mu);
    unsigned i = rev ? find_slot(serial) : 0;
    int found = i < nrev && rev[i].serial == serial;
    pthread_rwlock_unlock(&mu);
    return found;
}

int rfsd_revoked_add(uint64_t serial, uint64_t expires, uint64_t now)
{
    if (!path[0])
        return rfs_fail(RFS_E_UNSUPPORTED, "this server keeps no revocations (start it with "
                                           "--state-dir DIR)");
    pthread_rwlock_wrlock(&mu);
    unsigned at = find_slot(serial);
    if (at < nrev && rev[at].serial == serial) {
        pthread_rwlock_unlock(&mu);
        return RFS_OK;
    }
    if (nrev >= RFSD_CAP_MAX_REVOKED) {
        unsigned kept = 0; /* room: revocations of expired capabilities are forgotten */
        for (unsigned i = 0; i < nrev; i++)
            if (rev[i].expires > now)
                rev[kept++] = rev[i];
        nrev = kept;
        at = find_slot(serial);
    }
    if (nrev >= RFSD_CAP_MAX_REVOKED) {
        pthread_rwlock_unlock(&mu);
        return rfs_fail(RFS_E_NOSPC, "the revocation list is full (%u unexpired revocations)",
                        RFSD_CAP_MAX_REVOKED);
    }
    memmove(rev + at + 1, rev + at, (nrev - at) * sizeof *rev);
    rev[at] = (revoked){serial, expires};
    nrev++;
    int rc = save();
    if (rc) { /* not kept on disk: not in force either, so the caller knows to retry */
        memmove(rev + at, rev + at + 1, (nrev - at - 1) * sizeof *rev);
        nrev--;
    }
    pthread_rwlock_unlock(&mu);
    return rc;
}

void rfsd_revoked_clear(void)
{
    pthread_rwlock_wrlock(&mu);
    free(rev);
    rev = NULL;
    nrev = 0;
    pthread_rwlock_unlock(&mu);
}
