/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* MPI_File_open / close / delete for rfs names, and closing forgotten files at MPI_Finalize.
 * Open is collective on a private dup of the communicator. All ranks open at once (O_CREAT on
 * the server is atomic, so concurrent creates make one file); only with MPI_MODE_EXCL does rank 0
 * open first, alone creating the file so that exactly one open wins, and the others then open
 * the existing file. All ranks agree on the outcome so either every rank has a handle or none
 * does. */
#include "mpiio/mpiio_internal.h"
#include "mpiio/fence.h"
#include "mpiio/ccache.h"
#include "mpiio/wb.h"

#include "abt/abt.h"
#include "cache/cache.h"
#include "common/log.h"
#include "manifest/layer.h"
#include "transport/ucx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* rfs_streams=auto: a node's ranks share one link, and 8 connections fill any link auto is
 * for (docs/tuning.md "Streams"), so each rank gets a share of 8. More would only spend the
 * server's per-address connections: a 64-rank node at 8 each would be refused by a default
 * rfsd (--max-conns-per-addr 256) before all its ranks had connected. */
#define MP_NODE_AUTO_STREAMS 8

/* Where this process sits: the nodes of the file's communicator, the ranks on this node, and
 * this rank's place among them (in rank order). */
typedef struct node_pos {
    int nodes, local, lrank;
} node_pos;

static const node_pos ONE_PROCESS = {1, 1, 0};

/* A collective access whose ranges interleave goes through the aggregators alone (two-phase,
 * coll.c), one per node by default: the node's link is then theirs, so they share the node's
 * 8 among themselves, on top of the other ranks' shares (those carry the independent I/O).
 * A node so has at most 16. Aggregators are the lowest ranks of each node (aggr.c); with
 * cb_nodes not a multiple of the nodes, some nodes count one aggregator more than they have. */
static int auto_streams_cap(const mp_hints *h, const node_pos *np)
{
    if (h->streams_auto_max > 0)
        return h->streams_auto_max;
    int local = np->local > 0 ? np->local : 1;
    int share = MP_NODE_AUTO_STREAMS / local;
    if ((h->cb_write != MP_DISABLE || h->cb_read != MP_DISABLE) && h->cb_nodes > 0) {
        int nodes = np->nodes > 0 ? np->nodes : 1;
        int aggr_here = (h->cb_nodes + nodes - 1) / nodes;
        if (aggr_here > local)
            aggr_here = local;
        if (np->lrank < aggr_here)
            share = MP_NODE_AUTO_STREAMS / aggr_here;
    }
    return share > 1 ? share : 1;
}

static void options_from_hints(const mp_hints *h, const node_pos *np, rfs_options *o)
{
    memset(o, 0, sizeof *o);
    o->connect_timeout_ms = h->connect_timeout_ms;
    o->io_timeout_ms = h->io_timeout_ms;
    o->retry_timeout_ms = h->retry_timeout_ms;
    o->streams =
        h->streams == RFS_STREAMS_AUTO ? RFS_STREAMS_AUTO_MAX(auto_streams_cap(h, np)) : h->streams;
    o->compress = h->compress[0] ? h->compress : NULL;
    o->tls = h->tls;
    if (h->capability[0])
        o->token = h->capability; /* h lives with the file: as long as its opens */
    /* ABT counts a chunk delivered (and drops its staged copy) when the write returns, so
     * under ABT every write must wait for the server's reply. */
    o->write_window = h->abt == MP_ENABLE ? 0 : (size_t)h->write_window;
}

static int check_amode(const char *name, int amode)
{
    int acc = amode & (MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR);
    if (acc != MPI_MODE_RDONLY && acc != MPI_MODE_WRONLY && acc != MPI_MODE_RDWR)
        return mp_error_code(MPI_ERR_AMODE,
                             "rfs: %s: amode needs exactly one of MPI_MODE_RDONLY, "
                             "MPI_MODE_WRONLY, MPI_MODE_RDWR",
                             name);
    if (acc == MPI_MODE_RDONLY && (amode & (MPI_MODE_CREATE | MPI_MODE_EXCL)))
        return mp_error_code(MPI_ERR_AMODE,
                             "rfs: %s: MPI_MODE_RDONLY cannot be combined with "
                             "MPI_MODE_CREATE or MPI_MODE_EXCL",
                             name);
    if (acc == MPI_MODE_RDWR && (amode & MPI_MODE_SEQUENTIAL))
        return mp_error_code(MPI_ERR_AMODE,
                             "rfs: %s: MPI_MODE_RDWR cannot be combined with "
                             "MPI_MODE_SEQUENTIAL",
                             name);
    int known = MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR | MPI_MODE_CREATE |
                MPI_MODE_EXCL | MPI_MODE_DELETE_ON_CLOSE | MPI_MODE_UNIQUE_OPEN |
                MPI_MODE_SEQUENTIAL | MPI_MODE_APPEND;
    if (amode & ~known)
        return mp_error_code(MPI_ERR_AMODE, "rfs: %s: unknown amode bits 0x%x", name,
                             amode & ~known);
    return MPI_SUCCESS;
}

static unsigned rfs_flags_of(int amode)
{
    unsigned fl = (amode & MPI_MODE_RDONLY)   ? RFS_O_RDONLY
                  : (amode & MPI_MODE_WRONLY) ? RFS_O_WRONLY
                                              : RFS_O_RDWR;
    if (amode & MPI_MODE_CREATE)
        fl |= RFS_O_CREAT;
    if (amode & MPI_MODE_EXCL)
        fl |= RFS_O_EXCL;
    return fl;
}

/* Collective: if any rank failed, every rank returns an error; ranks that did not fail get the
 * class and message of the lowest failing rank ("... (on rank N)"). */
int mp_agree_error(mp_file *f, MPI_Comm comm, int code)
{
    (void)f;
    int rank, size;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    int mine = code != MPI_SUCCESS ? rank : size, first = size;
    PMPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == size)
        return MPI_SUCCESS;
    struct {
        int cls;
        char msg[MPI_MAX_ERROR_STRING];
    } e;
    memset(&e, 0, sizeof e);
    if (rank == first) {
        int len = 0;
        MPI_Error_class(code, &e.cls);
        MPI_Error_string(code, e.msg, &len);
    }
    PMPI_Bcast(&e, (int)sizeof e, MPI_BYTE, first, comm);
    if (code != MPI_SUCCESS)
        return code;
    e.msg[sizeof e.msg - 1] = '\0';
    return mp_error_code(e.cls, "%s (on rank %d)", e.msg, first);
}

/* The shape of comm over nodes (shared-memory domains), from one split: local, the processes
 * of comm on this node (ABT's memory cap and the streams are shares of the node's), this
 * rank's place among them, and the number of nodes (the default aggregator count). */
static void node_shape(MPI_Comm comm, node_pos *np)
{
    MPI_Comm node;
    *np = ONE_PROCESS;
    if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return;
    int n = 1, lrank = 0;
    PMPI_Comm_size(node, &n);
    PMPI_Comm_rank(node, &lrank);
    np->local = n > 0 ? n : 1;
    np->lrank = lrank;
    int leader = lrank == 0, all = 1;
    PMPI_Allreduce(&leader, &all, 1, MPI_INT, MPI_SUM, comm);
    np->nodes = all > 0 ? all : 1;
    PMPI_Comm_free(&node);
}

/* The read cache by default only on files opened MPI_MODE_RDONLY: nobody of the job writes
 * them through MPI-IO, so nothing the cache holds can go stale before close (docs/hints.md).
 * With rfs_view=server the views must be mapped by the server, which the cache declines. */
static int cache_wanted(const mp_file *f)
{
    if (f->hints.view_mode == MP_VIEW_SERVER || f->hints.cache_read == MP_DISABLE || f->cc)
        return 0; /* (the collaborative cache caches reads itself) */
    if (f->hints.cache_read == MP_ENABLE)
        return 1;
    return (f->amode & (MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR)) == MPI_MODE_RDONLY;
}

static int stack_cache(mp_file *f, int node_ranks)
{
    if (!cache_wanted(f))
        return RFS_OK;
    rfs_cache_config c;
    rfs_cache_config_default(&c);
    c.max_memory = (uint64_t)f->hints.cache_size;
    c.prefetch = f->hints.prefetch;
    c.prefetch_max = (uint64_t)f->hints.prefetch_max;
    c.threads = f->hints.prefetch_threads;
    c.local_ranks = node_ranks;
    c.rt = f->rt;
    c.stats_name = mp_stats_enabled() || mp_trace_enabled() ? f->name : NULL;
    rfs_io *cache;
    int rc = rfs_cache_wrap(f->io, &c, &cache);
    if (rc == RFS_OK)
        f->io = f->cache = cache;
    return rc;
}

/* The size the OPEN reply reported (manage.c, get_size right after open); nothing when the
 * server does not report versions or the open is deferred. */
static void note_size_at_open(mp_file *f)
{
    rfs_io_version v;
    if (f->io->ops->version(f->io, &v) == RFS_OK) {
        f->size_at_open = v.size;
        f->size_at_open_valid = 1;
    } else {
        rfs_clear_error();
    }
}

/* Stacks ABT on f->io when rfs_abt=enable, then the read cache (no MPI inside). */
static int stack_layers(mp_file *f, int node_ranks)
{
    if (f->hints.abt != MP_ENABLE)
        return stack_cache(f, node_ranks);
    rfs_abt_config c;
    rfs_abt_config_default(&c);
    c.buffer_size = (uint64_t)f->hints.abt_buffer_size;
    c.max_memory = (uint64_t)f->hints.abt_max_memory;
    c.staging_dir = f->hints.staging_dir[0] ? f->hints.staging_dir : NULL;
    c.threads = f->hints.abt_threads;
    c.defer_close = f->hints.defer_close == MP_ENABLE;
    c.background_staging = f->hints.abt_bg_staging == MP_ENABLE;
    c.interval_s = (double)f->hints.abt_interval_ms / 1000.0;
    c.output_bytes = (uint64_t)f->hints.abt_output;
    c.sync_staging = f->hints.abt_sync_staging;
    c.wait_timeout_s = (double)f->hints.abt_wait_timeout_ms / 1000.0;
    c.local_ranks = node_ranks;
    c.rt = f->rt;
    rfs_io *abt;
    int rc = rfs_abt_wrap(f->io, f->name, &c, &abt);
    if (rc == RFS_OK)
        f->io = abt;
    return rc == RFS_OK ? stack_cache(f, node_ranks) : rc;
}

/* The layers a delete of a name goes through (rfs_io_remove): those stack_layers puts over
 * the remote client for these hints, so that each sees the delete (ABT delivers its queued
 * writes of the file first). The lazy barrier and the deferred open only concern an open. */
static void name_layers(const mp_hints *h, const rfs_io_ops *layers[4])
{
    int n = 0;
    if (h->abt == MP_ENABLE)
        layers[n++] = rfs_abt_ops();
    layers[n++] = rfs_manifest_io_ops(); /* a .rfsm name's objects and manifest; others pass */
    layers[n++] = rfs_io_remote_ops();
    layers[n] = NULL;
}

static void log_from_env(void)
{
    /* RFS_MPIIO_LOG=debug|info|warn|error: what the layer tells on stderr. */
    static int done;
    if (done)
        return;
    done = 1;
    const char *e = getenv("RFS_MPIIO_LOG");
    int lvl = e ? rfs_log_parse_level(e) : -1;
    if (lvl >= 0)
        rfs_log_set_level(lvl);
}

/* The name the file is opened by: rfs_transport=ucx makes an rfs: name an rfs+ucx: one (the
 * client library takes the transport from the name, not from rfs_options, whose size is part
 * of its ABI). An rfss: name keeps asking for TLS, so the library refuses the pair (UCX has no
 * TLS). NULL: out of memory. */
static char *name_for_transport(mp_hints *h, const char *name)
{
    if (strcmp(h->transport, "ucx") || strncmp(name, "rfs+ucx:", 8) == 0)
        return strdup(name);
    int tls = strncmp(name, "rfss:", 5) == 0;
    const char *rest = name + (tls ? 5 : 4);
    size_t n = strlen(rest) + sizeof "rfs+ucx:";
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "rfs+ucx:%s", rest);
    h->tls |= tls;
    return out;
}

/* Depot reordering (mpiio-logistical-networking.txt sec. 4, Fig. 14; docs/manifest.md "Where
 * a new file starts"): a file one process opens (file per process) starts on the server its
 * rank in MPI_COMM_WORLD picks, so that N ranks each making a small file load N servers, not
 * all the first. A shared file starts on the first server: its ranks' accesses are spread over
 * the columns by their offsets already. 0: the first server. */
static unsigned depot_slot(const mp_file *f)
{
    int world = 0;
    if (f->hints.depot_fixed || f->size != 1 || PMPI_Comm_rank(MPI_COMM_WORLD, &world) != 0)
        return 0;
    return (unsigned)world + 1;
}

/* The bottom of the file's stack: the remote file, or for a .rfsm name the logical file over
 * its servers (manifest/, opened at once: its layout must be known before any access). */
static int open_bottom(mp_file *f, const char *name, unsigned flags, const rfs_options *opts,
                       int defer)
{
    if (rfs_is_manifest_name(name)) {
        rfs_manifest_params p = {.servers = f->hints.servers[0] ? f->hints.servers : NULL,
                                 .stripe_size = (uint64_t)f->hints.stripe_size,
                                 .stripe_count = f->hints.stripe_count,
                                 .replicas = f->hints.replicas,
                                 .depot_slot = depot_slot(f),
                                 .buffered = f->hints.manifest_buffered == 1,
                                 .log = f->hints.manifest_buffered == 2,
                                 .sieve = f->hints.manifest_sieve,
                                 .buffer_size = (uint64_t)f->hints.manifest_buffer};
        return rfs_manifest_open_in(f->rt, name, flags, f->hints.file_perm, opts, &p, &f->io);
    }
    if (defer)
        return rfs_io_open_deferred_in(f->rt, name, flags, f->hints.file_perm, opts, &f->io);
    return rfs_io_open_remote_in(f->rt, name, flags, f->hints.file_perm, opts, &f->io);
}

typedef struct open_job {
    mp_file *f;
    const char *name;
    unsigned flags;
    const rfs_options *opts;
    int rc;
    rfs_status st; /* its failure's message (thread-local where it happened) */
} open_job;

static void *open_task(void *arg)
{
    open_job *j = arg;
    j->rc = open_bottom(j->f, j->name, j->flags, j->opts, 0);
    if (j->rc != RFS_OK)
        rfs_status_save(&j->st, j->rc);
    return NULL;
}

/* open_bottom; with write-behind wanted, on a worker while this thread (the only one that
 * calls MPI) makes write-behind's node segments, which otherwise cost their time after the
 * server's round trips. The worker touches f->io only; the segments, f->wb only. */
static int open_overlapped(mp_file *f, const char *name, unsigned flags, const rfs_options *opts)
{
    if (!mp_wb_preparable(f))
        return open_bottom(f, name, flags, opts, 0);
    open_job j = {.f = f, .name = name, .flags = flags, .opts = opts};
    rfs_task t;
    int started = rfs_task_start(f->rt, &t, open_task, &j) == 0;
    if (!started)
        open_task(&j); /* no worker: one after the other */
    mp_wb_prepare(f);
    if (started)
        rfs_task_join(&t);
    if (j.rc != RFS_OK)
        rfs_status_raise(&j.st);
    return j.rc;
}

static int open_rfs(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
{
    const char *name = filename;
    log_from_env();
    int inter = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return mp_raise_null(
            mp_error_code(MPI_ERR_COMM, "rfs: %s: open needs an intracommunicator", name));
    MPI_Comm dup;
    int rc = PMPI_Comm_dup(comm, &dup);
    if (rc != MPI_SUCCESS)
        return mp_raise_null(rc);
    int rank, size;
    PMPI_Comm_rank(dup, &rank);
    PMPI_Comm_size(dup, &size);

    int code = check_amode(name, amode);
    int mm[2] = {amode, -amode}, red[2];
    PMPI_Allreduce(mm, red, 2, MPI_INT, MPI_MAX, dup);
    if (code == MPI_SUCCESS && red[0] != -red[1])
        code = mp_error_code(MPI_ERR_NOT_SAME, "rfs: %s: ranks passed different amodes", name);
    code = mp_agree_error(NULL, dup, code);
    if (code != MPI_SUCCESS) {
        PMPI_Comm_free(&dup);
        return mp_raise_null(code);
    }

    mp_file *f = calloc(1, sizeof *f);
    rfs_runtime *rt = rfs_runtime_default();
    char *namecopy = NULL;
    if (f) {
        mp_hints_default(&f->hints);
        mp_hints_apply_env(&f->hints);
        mp_hints_apply_info(&f->hints, info);
        namecopy = name_for_transport(&f->hints, filename);
        if (f->hints.ucx_inline_max >= 0) /* the UCX context's: process-wide */
            rfs_ucx_set_inline_max((size_t)f->hints.ucx_inline_max);
    }
    if (!f || !namecopy || !rt) {
        free(f);
        free(namecopy);
        PMPI_Comm_free(&dup);
        return mp_raise_null(MPI_ERR_NO_MEM);
    }
    name = namecopy;
    f->magic = MP_FILE_MAGIC;
    f->rt = rt;
    f->name = namecopy;
    f->comm = dup;
    f->rank = rank;
    f->size = size;
    f->amode = amode;
    pthread_mutex_init(&f->mu, NULL);
    node_pos np;
    node_shape(dup, &np);
    int local = np.local;
    if (f->hints.cb_nodes <= 0)
        f->hints.cb_nodes = np.nodes;
    if (f->hints.cb_nodes > size)
        f->hints.cb_nodes = size;

    rfs_options opts;
    options_from_hints(&f->hints, &np, &opts);
    unsigned flags = rfs_flags_of(amode);
    int rrc = RFS_OK;
    code = MPI_SUCCESS;
    /* Deferred open cannot honour MPI_MODE_EXCL (the file's existence must be known now). */
    int defer = f->hints.defer_open == MP_ENABLE && !(amode & MPI_MODE_EXCL);
    /* ABT's memory share and lazy barriers (fence.h) need the ranks on this node. */
    int early = f->hints.abt == MP_ENABLE || f->hints.write_window > 0;
    int node_ranks = f->hints.abt == MP_ENABLE || cache_wanted(f) ||
                             (early && f->hints.lazy_barrier == MP_ENABLE && size > 1)
                         ? local
                         : 1;
    if (defer) {
        /* Every rank creates if needed: no ordering between the ranks' first accesses. */
        rrc = open_bottom(f, name, flags, &opts, 1);
        if (rrc != RFS_OK)
            code = mp_io_error(f, rrc, "open", rfs_last_error());
    } else if (!(amode & MPI_MODE_EXCL)) {
        /* Every rank opens at once, with O_CREAT when asked: the server's open(O_CREAT) is
         * atomic, so concurrent creates make one file and each rank gets a handle on it; nobody
         * waits for another rank's round trips (docs/mpiio.md, "Round trips"). */
        rrc = open_overlapped(f, name, flags, &opts);
        if (rrc != RFS_OK)
            code = mp_io_error(f, rrc, "open", rfs_last_error());
    } else {
        /* MPI_MODE_EXCL: exactly one rank may create, so rank 0 opens first and the others open
         * the file it made (or all fail with its error). */
        if (rank == 0) {
            rrc = open_bottom(f, name, flags, &opts, 0);
            if (rrc != RFS_OK)
                code = mp_io_error(f, rrc, "open", rfs_last_error());
        }
        int r0 = code != MPI_SUCCESS;
        PMPI_Bcast(&r0, 1, MPI_INT, 0, dup);
        if (rank != 0 && !r0) {
            rrc = open_bottom(f, name, flags & ~(RFS_O_CREAT | RFS_O_EXCL), &opts, 0);
            if (rrc != RFS_OK)
                code = mp_io_error(f, rrc, "open", rfs_last_error());
        }
    }
    if (code == MPI_SUCCESS && early && f->io) /* (no io: rank 0's exclusive create failed) */
        note_size_at_open(f);
    /* The collaborative cache or write-behind right over the remote client (collective: every
     * rank, whatever its open's outcome), the read cache, when wanted, over it. */
    int ccrc = mp_cc_open(f, code == MPI_SUCCESS);
    if (code == MPI_SUCCESS)
        code = ccrc;
    int wbrc = mp_wb_open(f, code == MPI_SUCCESS);
    if (code == MPI_SUCCESS)
        code = wbrc;
    if (code == MPI_SUCCESS && (rrc = stack_layers(f, node_ranks)) != RFS_OK)
        code = mp_io_error(f, rrc, "open", rfs_last_error());
    code = mp_agree_error(NULL, dup, code);
    if (code == MPI_SUCCESS)
        code = mp_view_default(f);
    if (code == MPI_SUCCESS)
        code = mp_fence_open(f, node_ranks);
    if (code != MPI_SUCCESS) {
        mp_cc_close(f, 1);
        mp_wb_close(f, 1);
        if (f->io)
            f->io->ops->close(f->io);
        if (f->view)
            mp_view_put(f, f->view);
        PMPI_Comm_free(&f->comm);
        pthread_mutex_destroy(&f->mu);
        free(f->name);
        free(f);
        return mp_raise_null(code);
    }
    f->server_views = f->hints.view_mode != MP_VIEW_CLIENT && (f->io->features & RFS_IO_F_VIEWS);
    mp_srv_coll_open(f, info);

    /* Rank 0 draws a fresh shared-pointer key for this open (shared.c) and, with
     * MPI_MODE_APPEND, reads the file size (the only request after the open); one broadcast
     * hands both to every rank. */
    struct {
        uint64_t size;
        uint32_t key;
        int32_t failed;
    } r0 = {0, 0, 0};
    mp_errh_inherit(f);
    mp_files_add(f);
    code = MPI_SUCCESS;
    if (rank == 0) {
        if (getrandom(&r0.key, sizeof r0.key, 0) != (ssize_t)sizeof r0.key)
            r0.key = (uint32_t)rand();
        if ((amode & MPI_MODE_APPEND) && f->size_at_open_valid) {
            r0.size = f->size_at_open;
        } else if (amode & MPI_MODE_APPEND) {
            rrc = f->io->ops->get_size(f->io, &r0.size);
            if (rrc != RFS_OK) {
                code = mp_io_error(f, rrc, "get_size", rfs_last_error());
                r0.failed = 1;
            }
        }
    }
    PMPI_Bcast(&r0, (int)sizeof r0, MPI_BYTE, 0, dup);
    /* Both file pointers start at the end of the file with MPI_MODE_APPEND. */
    f->ind_ptr = (int64_t)r0.size;
    mp_shared_init(f, r0.key, (int64_t)r0.size);
    if (r0.failed) /* everyone knows, so everyone takes part in the agreement */
        code = mp_agree_error(NULL, dup, code);
    *fh = (MPI_File)f;
    return mp_raise(f, code);
}

int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
{
    if (!filename || !rfs_is_name(filename))
        return MP_REAL(PMPI_File_open)(comm, filename, amode, info, fh);
    MP_TRACE_BEGIN("MPI_File_open");
    int rc = open_rfs(comm, filename, amode, info, fh);
    MP_TRACE_END("MPI_File_open");
    return rc;
}
MP_ALIAS(MPI_File_open,
         (MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh))

int mp_close_file(mp_file *f, int collective)
{
    mp_nb_drain(f);
    mp_fence_close(f, collective);
    mp_cc_close(f, collective);
    if (collective)
        mp_wb_close_begin(f);
    else
        mp_wb_close(f, 0);
    mp_files_remove(f);
    mp_fortran_release(f);
    char where[sizeof f->io->server + sizeof f->io->path + 2];
    snprintf(where, sizeof where, "%s:%s", f->io->server, f->io->path);
    int rrc = f->io->ops->close(f->io);
    f->io = NULL;
    f->cache = NULL;
    int code = MPI_SUCCESS;
    if (rrc != RFS_OK) {
        const char *m = rfs_last_error();
        code = mp_error_code(mp_class_of(rrc), "rfs close: %s", m[0] ? m : where);
    }
    if (collective)
        code = mp_wb_closed(f, code);
    if (f->amode & MPI_MODE_DELETE_ON_CLOSE) {
        /* Everyone has closed before rank 0 deletes (at finalize no barrier: a rank that closed
         * properly is no longer waiting on this file). */
        if (collective)
            PMPI_Barrier(f->comm);
        if (f->rank == 0) {
            rfs_options opts;
            options_from_hints(&f->hints, &ONE_PROCESS,
                               &opts); /* a path call: streams do not matter */
            const rfs_io_ops *layers[4];
            name_layers(&f->hints, layers);
            int drc = rfs_io_remove(layers, f->name, &opts);
            if (drc != RFS_OK && drc != RFS_E_NOENT && code == MPI_SUCCESS)
                code = mp_error_code(mp_class_of(drc), "rfs delete-on-close: %s", rfs_last_error());
        }
    }
    mp_view_put(f, f->view);
    f->view = NULL;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        PMPI_Comm_free(&f->comm);
    return code;
}

static void free_file(mp_file *f)
{
    mp_view_slots_free(f);
    mp_errh_release(f);
    pthread_mutex_destroy(&f->mu);
    free(f->name);
    f->magic = 0;
    free(f);
}

int MPI_File_close(MPI_File *fh)
{
    mp_file *f = fh ? mp_file_of(*fh) : NULL;
    if (!f)
        return MP_REAL(PMPI_File_close)(fh);
    MP_TRACE_BEGIN("MPI_File_close");
    int code = mp_close_file(f, 1);
    if (code != MPI_SUCCESS) {
        /* The handle is gone; the error still goes to the file's handler, with the handle the
         * application passed in. */
        mp_raise(f, code);
    }
    free_file(f);
    *fh = MPI_FILE_NULL;
    MP_TRACE_END("MPI_File_close");
    return code;
}
MP_ALIAS(MPI_File_close, (MPI_File * fh))

static int delete_rfs(const char *filename, MPI_Info info);

int MPI_File_delete(const char *filename, MPI_Info info)
{
    if (!filename || !rfs_is_name(filename))
        return MP_REAL(PMPI_File_delete)(filename, info);
    MP_TRACE_BEGIN("MPI_File_delete");
    int code = delete_rfs(filename, info);
    MP_TRACE_END("MPI_File_delete");
    return code;
}
MP_ALIAS(MPI_File_delete, (const char *filename, MPI_Info info))

static int delete_rfs(const char *filename, MPI_Info info)
{
    mp_hints h;
    mp_hints_default(&h);
    mp_hints_apply_env(&h);
    mp_hints_apply_info(&h, info);
    char *name = name_for_transport(&h, filename);
    if (!name)
        return mp_raise_null(MPI_ERR_NO_MEM);
    rfs_options opts;
    options_from_hints(&h, &ONE_PROCESS, &opts); /* a path call: streams do not matter */
    const rfs_io_ops *layers[4];
    name_layers(&h, layers);
    int rrc = rfs_io_remove(layers, name, &opts);
    free(name);
    if (rrc == RFS_OK)
        return MPI_SUCCESS;
    const char *m = rfs_last_error();
    int code =
        m[0] ? mp_error_code(mp_class_of(rrc), "rfs delete: %s", m)
             : mp_error_code(mp_class_of(rrc), "rfs delete: %s: %s", filename, rfs_strerror(rrc));
    return mp_raise_null(code);
}

/* ---- finalize: close what the application forgot ---- */

void mp_finalize_files(void)
{
    size_t n = 0;
    mp_file **all = mp_files_all(&n);
    for (size_t i = 0; i < n; i++) {
        mp_file *f = all[i];
        fprintf(stderr,
                "librfs-mpiio: rank %d: %s was not closed before MPI_Finalize; closing it\n",
                f->rank, f->name);
        int code = mp_close_file(f, 0);
        if (code != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(code, msg, &len);
            fprintf(stderr, "librfs-mpiio: rank %d: closing %s at MPI_Finalize failed: %s\n",
                    f->rank, f->name, msg);
        }
        free_file(f);
    }
    free(all);
}

/* RFS_ABT_STATS=PREFIX: each rank writes PREFIX.RANK.json with what ABT did (benchmarks). */
static void write_abt_stats(int rank)
{
    const char *prefix = getenv("RFS_ABT_STATS");
    if (!prefix || !*prefix)
        return;
    char path[4200];
    snprintf(path, sizeof path, "%s.%d.json", prefix, rank);
    FILE *out = fopen(path, "w");
    if (!out)
        return;
    rfs_abt_stats st;
    rfs_abt_get_stats(&st);
    fprintf(out,
            "{\"rank\": %d, \"bytes_buffered\": %llu, \"bytes_staged_fg\": %llu, "
            "\"bytes_staged_bg\": %llu, \"bytes_sent\": %llu, \"bytes_failed\": %llu, "
            "\"memory_cap\": %llu, \"memory_peak\": %llu, \"remote_bw\": %.0f, "
            "\"staging_bw\": %.0f, \"interval_s\": %.3f, \"output_bytes\": %llu, "
            "\"phases\": %llu, \"enqueue_s\": %.6f, \"thread_cpu_s\": %.6f, "
            "\"bytes_prefaulted\": %llu}\n",
            rank, (unsigned long long)st.bytes_buffered, (unsigned long long)st.bytes_staged_fg,
            (unsigned long long)st.bytes_staged_bg, (unsigned long long)st.bytes_sent,
            (unsigned long long)st.bytes_failed, (unsigned long long)st.memory_cap,
            (unsigned long long)st.memory_peak, st.remote_bw, st.staging_bw, st.interval_s,
            (unsigned long long)st.output_bytes, (unsigned long long)st.phases, st.enqueue_s,
            st.thread_cpu_s, (unsigned long long)st.bytes_prefaulted);
    fclose(out);
}

int MPI_Finalize(void)
{
    mp_finalize_files();
    mp_nb_shutdown();
    /* Deferred closes and background writes complete before MPI_Finalize returns; a failure
     * nobody was told about yet is reported here (rfs-abt.txt sec. 5.2). */
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int arc = rfs_abt_finalize();
    int code = MPI_SUCCESS;
    if (arc != RFS_OK) {
        fprintf(stderr, "librfs-mpiio: rank %d: MPI_Finalize: %s\n", rank, rfs_last_error());
        code = mp_error_code(mp_class_of(arc), "rfs: MPI_Finalize: %s", rfs_last_error());
    }
    write_abt_stats(rank);
    int rc = MP_REAL(PMPI_Finalize)();
    return code != MPI_SUCCESS ? code : rc;
}
int PMPI_Finalize(void) __attribute__((alias("MPI_Finalize")));
