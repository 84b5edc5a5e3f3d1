/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* One logical file over several servers (docs/manifest.md): striped, optionally replicated,
 * described by a manifest file on its home server. A name whose path ends in ".rfsm"
 * ("rfs://home:7070/run/out.rfsm") names such a file: rfs_io_open_manifest opens the logical
 * file (rfs_open on the same name opens the manifest file itself, as bytes). */
#ifndef RFS_RFS_MANIFEST_H
#define RFS_RFS_MANIFEST_H

#include "rfs/rfs_io.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a new logical file is laid out (an existing one keeps the layout its manifest has).
 * Zeroed: the home server alone, 1 MiB stripes, one replica. */
typedef struct rfs_manifest_params {
    /* Comma-separated rfs names of the data servers ("rfs://a:7070,rfs://b:7070"; paths are
     * ignored); the first column's objects go to the first. NULL or "": the home server. */
    const char *servers;
    uint64_t stripe_size; /* bytes per stripe unit; 0: 1 MiB */
    int stripe_count;     /* columns; 0: every server of `servers` */
    int replicas;         /* copies of each column, each on a server of its own; 0: 1 */
    /* How this open treats small writes and noncontiguous reads (any file, new or not; kept
     * in no manifest): */
    int buffered;         /* 1: coalesce writes in client memory, sent when the buffer is full
                           * and at sync, flush, size changes, locks and close */
    int sieve;            /* 1: read a list of ranges as the spans that cover them */
    uint64_t buffer_size; /* bytes of either buffer; 0: 4 MiB */
    /* 1: log-structured writes (docs/manifest.md "Log-structured writes"): each write, a list
     * of ranges too, is appended as one write to this process's log object, and its ranges
     * are mapped onto it in the manifest at sync, flush and close. Refused on a replicated
     * file. (After the older fields, so that programs built before it keep their layout.) */
    int log;
    /* Depot reordering (docs/manifest.md "Where a new file starts"): 0 puts the first column
     * on the first of `servers`; k > 0 on the ((k - 1) mod n)-th, the others following in
     * turn, so that processes each making a small file do not all load the same server
     * (MPI-IO sets it from the rank, hint rfs_depot_order). Recorded in the manifest.
     * (After the older fields, so that programs built before it keep their layout.) */
    unsigned depot_slot;
} rfs_manifest_params;

/* 1 if name is an rfs name whose path ends in ".rfsm". */
int rfs_is_manifest_name(const char *name);
/* Opens (or with RFS_O_CREAT makes) the logical file of manifest `name`, as an rfs_io: reads
 * and writes of logical byte ranges go to the objects on the data servers (writes to every
 * replica at once, reads to the first live one, failing over to the next). A write that a
 * replica missed is reported by the next sync or by close, and the manifest marks that
 * replica incomplete with the byte ranges it missed (docs/manifest.md "Failures").
 * params: NULL as zeroed. */
int rfs_io_open_manifest(const char *name, unsigned flags, unsigned mode, const rfs_options *opts,
                         const rfs_manifest_params *params, rfs_io **out);
/* Compacts the overlays of log-structured writes (docs/manifest.md "Log-structured writes"):
 * copies their bytes into the stripe objects (read and written through this client), then,
 * under the manifest's update lock, drops them and deletes the log objects no process holds
 * open. *overlays and *logs (may be NULL) get how many overlays and log objects went. */
int rfs_manifest_compact(const char *name, const rfs_options *opts, uint32_t *overlays,
                         uint32_t *logs);
/* Deletes the logical file: its objects on every server, then the manifest, and its log
 * objects. */
int rfs_manifest_delete(const char *name, const rfs_options *opts);

#ifdef __cplusplus
}
#endif
#endif
