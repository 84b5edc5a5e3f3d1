/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Leases of a logical file's objects (obj_lease.h). */
#include "obj_lease.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "capability.h"
#include "common/err.h"
#include "common/log.h"
#include "conn.h"
#include "exports.h"
#include "quota.h"

typedef struct olease {
    uint64_t expires;
    char *export_name; /* "" for --root */
    char *shown, *rel; /* the client's path, and beneath the export's root */
} olease;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static olease *table; /* RFSD_OLEASE_MAX */
static unsigned count;
static size_t bytes;
static char path_file[4200]; /* "": no --state-dir */
static int reclaim, stopping, thread_on;
static pthread_t thread;

static void put_hex(FILE *f, const char *s)
{
    if (!*s)
        fputc('-', f);
    for (; *s; s++)
        fprintf(f, "%02x", (unsigned char)*s);
}

/* hex back into a new string ("-": empty); NULL when malformed */
static char *get_hex(const char *h)
{
    if (!strcmp(h, "-"))
        return strdup("");
    size_t n = strlen(h);
    if (n % 2 || n / 2 > RFS_MAX_PATH + 1)
        return NULL;
    char *s = malloc(n / 2 + 1);
    for (size_t i = 0; s && i < n / 2; i++) {
        unsigned v;
        if (sscanf(h + 2 * i, "%2x", &v) != 1 || v == 0) {
            free(s);
            return NULL;
        }
        s[i] = (char)v;
    }
    if (s)
        s[n / 2] = '\0';
    return s;
}

static void drop(unsigned i)
{
    bytes -= strlen(table[i].shown) + strlen(table[i].rel) + strlen(table[i].export_name);
    free(table[i].export_name);
    free(table[i].shown);
    free(table[i].rel);
    table[i] = table[--count];
}

/* Written beside and renamed over: a crash leaves the old table or the new one. */
static int save(void)
{
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path_file);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return rfs_fail(RFS_E_IO, "object leases %s: %s", tmp, strerror(errno));
    FILE *f = fdopen(fd, "w");
    int ok = f != NULL;
    for (unsigned i = 0; ok && i < count; i++) {
        fprintf(f, "%" PRIu64 " ", table[i].expires);
        put_hex(f, table[i].export_name);
        fputc(' ', f);
        put_hex(f, table[i].shown);
        fputc(' ', f);
        put_hex(f, table[i].rel);
        ok = fputc('\n', f) != EOF;
    }
    ok = f && fflush(f) == 0 && fsync(fd) == 0 && ok;
    if (f)
        fclose(f);
    else
        close(fd);
    if (!ok || rename(tmp, path_file) != 0) {
        unlink(tmp);
        return rfs_fail(RFS_E_IO, "object leases %s: cannot write them", path_file);
    }
    return RFS_OK;
}

static void load(void)
{
    FILE *f = fopen(path_file, "re");
    if (!f)
        return;
    char line[3 * (2 * (RFS_MAX_PATH + 2)) + 64];
    while (count < RFSD_OLEASE_MAX && fgets(line, sizeof line, f)) {
        char e[32], a[2 * 65 + 2], s[2 * RFS_MAX_PATH + 2], r[2 * RFS_MAX_PATH + 6];
        unsigned long long t;
        if (sscanf(line, "%31s %131s %8191s %8195s", e, a, s, r) != 4 || sscanf(e, "%llu", &t) != 1)
            continue;
        olease o = {
            .expires = t, .export_name = get_hex(a), .shown = get_hex(s), .rel = get_hex(r)};
        if (!o.export_name || !o.shown || !o.rel) {
            free(o.export_name), free(o.shown), free(o.rel);
            continue;
        }
        bytes += strlen(o.shown) + strlen(o.rel) + strlen(o.export_name);
        table[count++] = o;
    }
    fclose(f);
}

static const rfsd_export *export_named(const char *name)
{
    if (!rfsd_exports_named())
        return *name ? NULL : rfsd_export_at(0);
    return rfsd_export_find(name);
}

/* Deletes the objects whose lease lapsed (mu held). Only regular files: a directory or a
 * link put there since is left alone, and so is its lease entry's export if it is gone. */
static void reclaim_now(void)
{
    uint64_t t = rfsd_cap_now();
    int changed = 0;
    for (unsigned i = 0; i < count;) {
        if (table[i].expires > t) {
            i++;
            continue;
        }
        const rfsd_export *ex = export_named(table[i].export_name);
        rfsd_path p;
        snprintf(p.shown, sizeof p.shown, "%s", table[i].shown);
        snprintf(p.rel, sizeof p.rel, "%s", table[i].rel);
        rfs_stat_info st;
        int rc = ex ? rfsd_be_stat(ex->root_fd, &p, &st) : RFS_E_NOENT;
        if (rc == RFS_OK && st.type == RFS_TYPE_FILE)
            rc = ex->quota ? rfsd_quota_delete(ex->quota, ex->root_fd, &p)
                           : rfsd_be_delete(ex->root_fd, &p);
        if (rc == RFS_OK)
            RFS_LOGI("object lease: %s lapsed; reclaimed (--reclaim-expired)", table[i].shown);
        else
            RFS_LOGI("object lease: %s lapsed; nothing to reclaim (%s)", table[i].shown,
                     rfs_last_error());
        rfs_clear_error();
        drop(i);
        changed = 1;
    }
    if (changed && save())
        RFS_LOGW("%s", rfs_last_error());
}

static void *reclaimer(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += RFSD_OLEASE_RECLAIM_S;
        pthread_cond_timedwait(&wake, &mu, &until);
        if (!stopping)
            reclaim_now();
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int rfsd_olease_init(const rfsd_config *cfg)
{
    reclaim = cfg->reclaim_expired;
    if (!cfg->state_dir) {
        if (reclaim) {
            fprintf(stderr, "rfsd: --reclaim-expired needs --state-dir (where the leases are)\n");
            return -1;
        }
        return 0;
    }
    if (!(table = calloc(RFSD_OLEASE_MAX, sizeof *table))) {
        fprintf(stderr, "rfsd: out of memory\n");
        return -1;
    }
    snprintf(path_file, sizeof path_file, "%s/object-leases", cfg->state_dir);
    pthread_mutex_lock(&mu);
    load();
    if (reclaim)
        reclaim_now(); /* before the first client: what lapsed while rfsd was down goes now */
    pthread_mutex_unlock(&mu);
    if (reclaim) {
        if (pthread_create(&thread, NULL, reclaimer, NULL)) {
            fprintf(stderr, "rfsd: cannot start the object lease thread\n");
            return -1;
        }
        thread_on = 1;
        RFS_LOGI("object leases: %u kept; lapsed ones are reclaimed (--reclaim-expired)", count);
    }
    return 0;
}

void rfsd_olease_stop(void)
{
    pthread_mutex_lock(&mu);
    stopping = 1;
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&mu);
    if (thread_on)
        pthread_join(thread, NULL);
    thread_on = 0;
    pthread_mutex_lock(&mu);
    while (table && count)
        drop(count - 1);
    free(table);
    table = NULL;
    pthread_mutex_unlock(&mu);
}

int rfsd_olease_set(rfsd_conn *c, const rfs_req *q, rfs_rep *rep)
{
    rfsd_path p;
    const rfsd_export *ex;
    int rc = rfsd_resolve(c, &q->u.obj_lease.path, RFSD_NEED_WRITE, 0, &p, &ex);
    if (rc)
        return rc;
    if (!path_file[0])
        return rfs_fail(RFS_E_UNSUPPORTED,
                        "%s: this server keeps no object leases (start it "
                        "with --state-dir DIR)",
                        p.shown);
    uint64_t want = q->u.obj_lease.expires;
    if (want && want <= rfsd_cap_now())
        return rfs_fail(RFS_E_INVAL, "%s: the lease asked for ends in the past", p.shown);
    rfs_stat_info st;
    if ((rc = rfsd_be_stat(ex->root_fd, &p, &st)))
        return rc;
    if (st.type != RFS_TYPE_FILE)
        return rfs_fail(RFS_E_ISDIR, "%s: only files (objects) have leases", p.shown);
    pthread_mutex_lock(&mu);
    unsigned i = 0;
    while (i < count && (strcmp(table[i].shown, p.shown) || strcmp(table[i].export_name, ex->name)))
        i++;
    size_t need = strlen(p.shown) + strlen(p.rel) + strlen(ex->name);
    if (i == count && want) {
        if (count >= RFSD_OLEASE_MAX || bytes + need > RFSD_OLEASE_MAX_BYTES) {
            pthread_mutex_unlock(&mu);
            return rfs_fail(RFS_E_NOSPC, "%s: this server keeps at most %u object leases", p.shown,
                            RFSD_OLEASE_MAX);
        }
        olease o = {.expires = want,
                    .export_name = strdup(ex->name),
                    .shown = strdup(p.shown),
                    .rel = strdup(p.rel)};
        if (!o.export_name || !o.shown || !o.rel) {
            free(o.export_name), free(o.shown), free(o.rel);
            pthread_mutex_unlock(&mu);
            return rfs_fail(RFS_E_NOMEM, "server out of memory");
        }
        table[count++] = o;
        bytes += need;
    } else if (i < count && want) {
        table[i].expires = want;
    } else if (i < count) {
        drop(i); /* 0: no lease, kept for ever */
    }
    rc = save();
    pthread_mutex_unlock(&mu);
    if (rc == RFS_OK)
        rep->u.u64.value = want;
    return rc;
}
