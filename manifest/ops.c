/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The manifest as augment and trim use it (ops_internal.h). */
#include "manifest/ops_internal.h"

#include <stdio.h>

#include "common/err.h"
#include "manifest/store.h"
#include "rfs/rfs_manifest.h"

int mf_ops_object_name(const rfsm *m, uint32_t i, char *out, size_t cap)
{
    int w = snprintf(out, cap, "%s%s", m->servers[m->objects[i].server], m->objects[i].path);
    return w > 0 && (size_t)w < cap ? RFS_OK : rfs_fail(RFS_E_NAME, "object name too long");
}

int mf_ops_load(const char *name, const rfs_options *opts, rfs_io **home, rfsm **m)
{
    *home = NULL;
    *m = NULL;
    if (!rfs_is_manifest_name(name))
        return rfs_fail(RFS_E_NAME, "%s: not a manifest name (rfs://HOST:PORT/PATH.rfsm)", name);
    int rc = rfs_io_open_remote(name, RFS_O_RDWR, 0, opts, home);
    if (rc == RFS_OK && (rc = rfsm_store_load(*home, m)) != RFS_OK) {
        rfs_status st;
        rfs_status_save(&st, rc);
        (*home)->ops->close(*home);
        *home = NULL;
        rc = rfs_status_raise(&st);
    }
    return rc;
}

void mf_ops_unload(rfs_io *home, rfsm *m)
{
    rfs_status st;
    rfs_status_save(&st, RFS_OK);
    if (home)
        home->ops->close(home);
    rfsm_free(m);
    rfs_status_raise(&st);
}
