/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Aggregator placement for two-phase collective I/O. One aggregator per node by default, as
 * ROMIO does (cb_config_list "*:1"): an aggregator sends to the server over the node's network
 * link, so two on one node share that link while another node's link sits idle. Nodes are the
 * MPI_COMM_TYPE_SHARED groups of the file's communicator, whatever the rank placement (block,
 * round-robin or arbitrary). The node of every rank is found once per communicator (a split and
 * an allgather) and kept as an attribute of the file's private communicator, so it is freed
 * when the file is closed and the communicator freed. */
#include "mpiio/aggr.h"

#include <stdlib.h>
#include <string.h>

/* Attribute value: for every rank of the communicator, the lowest rank on its node. */
typedef struct node_map {
    int n;
    int leader[];
} node_map;

static int keyval = MPI_KEYVAL_INVALID;

static int delete_map(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)comm;
    (void)key;
    (void)extra;
    free(val);
    return MPI_SUCCESS;
}

/* Collective: finds every rank's node leader. */
static node_map *find_nodes(mp_file *f)
{
    node_map *m = malloc(sizeof *m + (size_t)f->size * sizeof m->leader[0]);
    int leader = f->rank, failed = 0;
    MPI_Comm node = MPI_COMM_NULL;
    if (PMPI_Comm_split_type(f->comm, MPI_COMM_TYPE_SHARED, f->rank, MPI_INFO_NULL, &node) ==
            MPI_SUCCESS &&
        node != MPI_COMM_NULL) {
        PMPI_Allreduce(&f->rank, &leader, 1, MPI_INT, MPI_MIN, node);
        PMPI_Comm_free(&node);
    } else {
        failed = 1;
    }
    /* Every rank takes part in the allgather even without memory, so nobody is left waiting. */
    int *all = m ? m->leader : calloc((size_t)f->size, sizeof *all);
    if (!all)
        abort(); /* one int per rank: nothing sensible to do without it */
    PMPI_Allgather(&leader, 1, MPI_INT, all, 1, MPI_INT, f->comm);
    if (!m) {
        free(all);
        return NULL;
    }
    m->n = f->size;
    if (failed) {
        /* Without node information: one node (the plain default of one aggregator). */
        for (int j = 0; j < m->n; j++)
            m->leader[j] = 0;
    }
    return m;
}

static const node_map *node_map_of(mp_file *f)
{
    if (keyval == MPI_KEYVAL_INVALID &&
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_map, &keyval, NULL) != MPI_SUCCESS)
        return NULL;
    void *val = NULL;
    int flag = 0;
    PMPI_Comm_get_attr(f->comm, keyval, &val, &flag);
    if (flag)
        return val;
    node_map *m = find_nodes(f);
    if (m && PMPI_Comm_set_attr(f->comm, keyval, m) != MPI_SUCCESS) {
        free(m);
        return NULL;
    }
    return m;
}

typedef struct member {
    int leader, rank;
} member;

static int cmp_member(const void *a, const void *b)
{
    const member *x = a, *y = b;
    if (x->leader != y->leader)
        return x->leader < y->leader ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

int mp_aggregators(mp_file *f, int want, int **ranks, int *n)
{
    int P = f->size;
    const node_map *m = node_map_of(f);
    member *mem = malloc((size_t)P * sizeof *mem);
    int *start = malloc(((size_t)P + 1) * sizeof *start); /* first member of each node */
    int *out = malloc((size_t)P * sizeof *out);
    if (!mem || !start || !out) {
        free(mem);
        free(start);
        free(out);
        return MPI_ERR_NO_MEM;
    }
    for (int j = 0; j < P; j++)
        mem[j] = (member){m ? m->leader[j] : 0, j};
    qsort(mem, (size_t)P, sizeof *mem, cmp_member);
    int nodes = 0, deepest = 0;
    for (int j = 0; j < P; j++)
        if (j == 0 || mem[j].leader != mem[j - 1].leader)
            start[nodes++] = j;
    start[nodes] = P;
    for (int i = 0; i < nodes; i++)
        if (start[i + 1] - start[i] > deepest)
            deepest = start[i + 1] - start[i];
    if (want <= 0)
        want = nodes;
    if (want > P)
        want = P;
    int k = 0;
    /* Round-robin over the nodes: depth d takes the (d+1)-th lowest rank of every node. */
    for (int d = 0; d < deepest && k < want; d++)
        for (int i = 0; i < nodes && k < want; i++)
            if (start[i] + d < start[i + 1])
                out[k++] = mem[start[i] + d].rank;
    qsort(out, (size_t)k, sizeof *out, cmp_int);
    free(mem);
    free(start);
    *ranks = out;
    *n = k;
    return MPI_SUCCESS;
}
