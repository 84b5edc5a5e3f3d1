/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Collective calls run by the server group (rfsd --mpi --backend mpiio; docs/mpiio.md
 * "Collective calls on a server group"). At open every rank joins its remote file to one
 * collective open, named by 16 random bytes rank 0 draws; a collective call then sends each
 * rank's own runs and data as one request, and the group's processes issue one MPI-IO
 * collective call on the parallel file system, which aggregates there instead of among the
 * ranks across the network. */
#include "mpiio/mpiio_internal.h"

#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static int for_server(const char *key)
{
    return !strcmp(key, "striping_factor") || !strcmp(key, "striping_unit") ||
           !strcmp(key, "cb_nodes") || !strcmp(key, "cb_buffer_size") || !strncmp(key, "romio_", 6);
}

static void add_hint(char *out, size_t cap, size_t *used, const char *key, const char *val)
{
    if (!for_server(key) || strchr(val, ';'))
        return;
    int n = snprintf(out + *used, cap - *used, "%s%s=%s", *used ? ";" : "", key, val);
    if (n < 0 || (size_t)n >= cap - *used) {
        out[*used] = '\0';
        return;
    }
    *used += (size_t)n;
}

/* The hints a parallel file system's MPI-IO acts on, as "key=value;...": from $RFS_HINTS
 * (for programs that set none), then from the open's info, which the server reads last. */
static void server_hints(MPI_Info info, char *out, size_t cap)
{
    out[0] = '\0';
    size_t used = 0;
    const char *env = getenv("RFS_HINTS");
    if (env && strlen(env) < 2048) {
        char buf[2048], *save = NULL;
        snprintf(buf, sizeof buf, "%s", env);
        for (char *kv = strtok_r(buf, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
            char *eq = strchr(kv, '=');
            if (eq) {
                *eq = '\0';
                add_hint(out, cap, &used, kv, eq + 1);
            }
        }
    }
    int nkeys = 0;
    if (info == MPI_INFO_NULL || PMPI_Info_get_nkeys(info, &nkeys) != MPI_SUCCESS)
        return;
    for (int i = 0; i < nkeys; i++) {
        char key[MPI_MAX_INFO_KEY + 1], val[256];
        int flag = 0;
        if (PMPI_Info_get_nthkey(info, i, key) == MPI_SUCCESS &&
            PMPI_Info_get(info, key, (int)sizeof val - 1, val, &flag) == MPI_SUCCESS && flag)
            add_hint(out, cap, &used, key, val);
    }
}

void mp_srv_coll_open(mp_file *f, MPI_Info info)
{
    unsigned char id[16] = {0};
    if (f->rank == 0 && getrandom(id, sizeof id, 0) != (ssize_t)sizeof id)
        memset(id, 0, sizeof id); /* all zero: nobody joins (below) */
    PMPI_Bcast(id, (int)sizeof id, MPI_BYTE, 0, f->comm);
    static const unsigned char zero[16];
    char hints[2048];
    server_hints(info, hints, sizeof hints);
    /* { joined, max part } over all ranks: the least of each */
    long long mine[2] = {0, 0}, all[2];
    size_t max_part = 0;
    if (memcmp(id, zero, sizeof id) && f->size > 1 &&
        f->io->ops->coll_join(f->io, id, (unsigned)f->size, hints, &max_part) == RFS_OK) {
        mine[0] = 1;
        mine[1] = (long long)max_part;
    }
    rfs_clear_error(); /* an older server (RFS_E_UNSUPPORTED) is the common case */
    PMPI_Allreduce(mine, all, 2, MPI_LONG_LONG, MPI_MIN, f->comm);
    f->srv_coll = all[0] == 1 && all[1] > 0;
    f->srv_coll_max = f->srv_coll ? (size_t)all[1] : 0;
    if (f->srv_coll && f->rank == 0)
        RFS_LOGD("mpiio: %s: collective calls run on the server group (hints '%s')", f->name,
                 hints);
}

/* This rank's access in chunks that each fit one request: runs cut so that a chunk's data and
 * runs (16 bytes each) stay under max_part, with at most max_runs runs. next_chunk fills out
 * (room for max_runs) and returns its runs; *data_off and *len place the chunk in the packed
 * data. */
typedef struct chunker {
    const rfs_extent *runs;
    size_t nruns, i;   /* next run */
    uint64_t in_run;   /* bytes of runs[i] already taken */
    uint64_t data_off; /* bytes taken so far */
} chunker;

static size_t next_chunk(chunker *c, rfs_extent *out, size_t max_runs, uint64_t max_part,
                         uint64_t *data_off, uint64_t *len)
{
    size_t n = 0;
    *data_off = c->data_off;
    *len = 0;
    /* each run costs 16 bytes of the request besides its data */
    while (c->i < c->nruns && n < max_runs && *len + 16 * (n + 1) < max_part) {
        uint64_t room = max_part - 16 * (n + 1) - *len;
        uint64_t left = c->runs[c->i].length - c->in_run;
        uint64_t take = left < room ? left : room;
        out[n].offset = c->runs[c->i].offset + c->in_run;
        out[n].length = take;
        n++;
        *len += take;
        c->in_run += take;
        if (c->in_run == c->runs[c->i].length) {
            c->i++;
            c->in_run = 0;
        }
    }
    c->data_off += *len;
    return n;
}

int mp_srv_coll_access(mp_file *f, int is_write, int code, const rfs_extent *runs, size_t nruns,
                       void *data, int64_t *moved)
{
    /* a frame's worth of data and runs (16 bytes each) per request */
    uint64_t max_part = f->srv_coll_max;
    size_t max_runs = max_part / 16;
    if (max_runs > 65536) /* the protocol's runs per request */
        max_runs = 65536;
    rfs_extent *part = malloc(max_runs * sizeof *part);
    if (!part && code == MPI_SUCCESS)
        code = mp_error_code(MPI_ERR_NO_MEM, "rfs: %s: out of memory", f->name);
    /* every rank counts its chunks; all issue as many calls as the rank with the most */
    long long mine = 0, calls = 0;
    if (code == MPI_SUCCESS) {
        chunker c = {runs, nruns, 0, 0, 0};
        uint64_t off, len;
        while (next_chunk(&c, part, max_runs, max_part, &off, &len) > 0)
            mine++;
    }
    PMPI_Allreduce(&mine, &calls, 1, MPI_LONG_LONG, MPI_MAX, f->comm);
    chunker c = {runs, code == MPI_SUCCESS ? nruns : 0, 0, 0, 0};
    int64_t got = 0;
    int at_eof = 0;
    for (long long k = 0; k < calls; k++) {
        uint64_t off = 0, len = 0;
        /* a failed rank still sends its (empty) parts: the others' calls need them */
        size_t n = code == MPI_SUCCESS ? next_chunk(&c, part, max_runs, max_part, &off, &len) : 0;
        size_t done = 0;
        int rc = f->io->ops->coll_listio(f->io, is_write, part, n, (char *)data + off, &done);
        if (rc != RFS_OK && code == MPI_SUCCESS)
            code = mp_io_error(f, rc, is_write ? "collective write" : "collective read",
                               rfs_last_error());
        if (!at_eof)
            got += (int64_t)done;
        at_eof = at_eof || (!is_write && done < len); /* a stream stops at the end of file */
    }
    free(part);
    *moved = code == MPI_SUCCESS ? got : 0;
    return code;
}
