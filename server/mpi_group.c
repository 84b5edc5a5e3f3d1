/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The start of a server group under MPI (mpi_group.h). */
#include "mpi_group.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "coll_mpi.h"
#include "group.h"

#define ADDR_MAX 272 /* "[v6 or host]:port" as sent to clients (RFS_PLACE_MAX_ADDR fits) */

/* The listening spec of this process: the configured port plus its rank on the node, so one
 * process per node keeps the port clients were told and several per node take the next ones. */
static int my_listen(const char *spec, int local_rank, char *out, size_t cap)
{
    char host[256], port[8];
    if (rfsd_split_host_port(spec, host, sizeof host, port, sizeof port)) {
        RFS_LOGE("--listen '%s': expected HOST:PORT or [IPV6]:PORT", spec);
        return -1;
    }
    long p = atol(port);
    if (p != 0)
        p += local_rank;
    if (p > 65535) {
        RFS_LOGE("--listen '%s': port %ld for rank %d on this node is out of range", spec, p,
                 local_rank);
        return -1;
    }
    snprintf(out, cap, strchr(host, ':') ? "[%s]:%ld" : "%s:%ld", host, p);
    return 0;
}

/* What clients dial for this process: the address it listens on, with --advertise or this
 * host's name in place of a wildcard host. */
static int advertised(const rfsd_config *cfg, const char *bound, char *out, size_t cap)
{
    char host[256], port[8];
    if (rfsd_split_host_port(bound, host, sizeof host, port, sizeof port))
        return -1;
    const char *h = cfg->advertise;
    char name[256];
    if (!h && (!strcmp(host, "0.0.0.0") || !strcmp(host, "::"))) {
        if (gethostname(name, sizeof name) != 0)
            return -1;
        name[sizeof name - 1] = '\0';
        h = name;
    }
    if (!h)
        h = host;
    int n = snprintf(out, cap, strchr(h, ':') ? "[%s]:%s" : "%s:%s", h, port);
    return n > 0 && (size_t)n <= RFS_PLACE_MAX_ADDR ? 0 : -1;
}

int rfsd_mpi_start(int *argc, char ***argv, const rfsd_config *cfg, int *lfd, char *addr,
                   size_t cap)
{
    int provided, rank, size, local_rank;
    /* posix: only this thread ever calls MPI, and only before any other thread exists.
     * mpiio: after the start-up only the MPI thread does (coll_mpi.h), which is not this one */
    int want = cfg->backend_mpiio ? MPI_THREAD_SERIALIZED : MPI_THREAD_SINGLE;
    if (MPI_Init_thread(argc, argv, want, &provided) != MPI_SUCCESS)
        return -1;
    if (provided < want) {
        fprintf(stderr,
                "rfsd: --backend mpiio: this MPI offers thread level %d, and %d is "
                "needed (MPI_THREAD_SERIALIZED)\n",
                provided, want);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);

    char spec[300], mine[ADDR_MAX] = "";
    int ok = my_listen(cfg->listen, local_rank, spec, sizeof spec) == 0 &&
             rfsd_listen(spec, addr, cap, lfd) == 0;
    if (ok && advertised(cfg, addr, mine, sizeof mine)) {
        RFS_LOGE("process %d: cannot make an address for clients from %s (--advertise HOST)", rank,
                 addr);
        ok = 0;
    }
    /* every process must listen, or none serves: a group with a hole would send clients to
     * a process that is not there */
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    char *table = all_ok ? malloc((size_t)size * ADDR_MAX) : NULL;
    const char **addrs = all_ok ? malloc((size_t)size * sizeof *addrs) : NULL;
    int *pids = all_ok ? malloc((size_t)size * sizeof *pids) : NULL;
    int have = table && addrs && pids, all_have = 0, pid = (int)getpid();
    MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all_have) {
        MPI_Allgather(mine, ADDR_MAX, MPI_CHAR, table, ADDR_MAX, MPI_CHAR, MPI_COMM_WORLD);
        /* for the operator (and tests): which process id serves which address */
        MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);
        for (int i = 0; i < size; i++)
            addrs[i] = table + (size_t)i * ADDR_MAX;
        all_have = rfsd_group_set((unsigned)rank, (unsigned)size, addrs) == 0;
    }
    /* posix: from here on the processes never talk to each other: a dead one cannot stall
     * the rest in MPI, and the shared state is in the file system (fs_shared.h). mpiio: the
     * MPI thread keeps MPI for collective calls, and finalizes at shutdown. */
    if (cfg->backend_mpiio && all_have)
        all_have = rfsd_coll_mpi_start(cfg->threads > 1 ? (unsigned)cfg->threads - 1 : 1,
                                       cfg->coll_timeout_ms) == 0;
    else
        MPI_Finalize();
    if (!all_have) {
        if (ok)
            RFS_LOGE("process %d of %d: another process of the group could not start", rank, size);
        free(table);
        free(addrs);
        free(pids);
        return -1;
    }
    RFS_LOGI("process %d of %d of the server group; clients are sent here as %s", rank, size, mine);
    if (rank == 0)
        for (int i = 0; i < size; i++)
            printf("rfsd group process %d at %s pid %d\n", i, addrs[i], pids[i]);
    free(table);
    free(addrs);
    free(pids);
    return 0;
}
