/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Striped layouts: making one, and mapping logical byte ranges onto its objects. */
#include "manifest/manifest.h"

#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "rfs/rfs.h"

int rfsm_server_of_name(const char *name, char *out, size_t cap)
{
    rfs_name n;
    int rc = rfs_parse_name(name, &n);
    if (rc != RFS_OK) {
        /* A server alone ("rfs://host:port") is a name without its path. */
        char with_root[RFSM_MAX_URL + 2];
        if (snprintf(with_root, sizeof with_root, "%s/", name) >= (int)sizeof with_root ||
            rfs_parse_name(with_root, &n) != RFS_OK)
            return rc;
        rfs_clear_error();
    }
    const char *scheme = n.tls ? "rfss" : n.ucx ? "rfs+ucx" : "rfs";
    int v6 = strchr(n.host, ':') != NULL;
    int w = snprintf(out, cap, "%s://%s%s%s:%u", scheme, v6 ? "[" : "", n.host, v6 ? "]" : "",
                     (unsigned)n.port);
    if (w < 0 || (size_t)w >= cap)
        return rfs_fail(RFS_E_NAME, "%s: server name too long", name);
    return RFS_OK;
}

uint32_t rfsm_first_server(unsigned depot_slot, uint32_t nservers)
{
    return depot_slot > 0 && nservers > 0 ? (uint32_t)((depot_slot - 1) % nservers) : 0;
}

int rfsm_make_striped(const rfsm_layout *l, const char *base, rfsm **out)
{
    return rfsm_make_striped_at(l, 0, base, out);
}

int rfsm_make_striped_at(const rfsm_layout *l, uint32_t first_server, const char *base, rfsm **out)
{
    *out = NULL;
    if (l->nservers == 0 || l->nservers > RFSM_MAX_SERVERS)
        return rfs_fail(RFS_E_INVAL, "%s: rfs_servers lists %u servers (1 .. %u)", base,
                        l->nservers, RFSM_MAX_SERVERS);
    if (l->stripe_count == 0 || l->stripe_count > l->nservers)
        return rfs_fail(RFS_E_INVAL,
                        "%s: rfs_stripe_count %u needs as many servers (rfs_servers has %u)", base,
                        l->stripe_count, l->nservers);
    if (l->replicas == 0 || l->replicas > l->nservers || l->replicas > RFSM_MAX_REPLICAS)
        return rfs_fail(RFS_E_INVAL,
                        "%s: rfs_replicas %u: each replica of a stripe needs a server of its "
                        "own (rfs_servers has %u; at most %u)",
                        base, l->replicas, l->nservers, RFSM_MAX_REPLICAS);
    if (l->stripe_size == 0 || l->stripe_size > RFSM_MAX_STRIPE_SIZE)
        return rfs_fail(RFS_E_INVAL, "%s: rfs_stripe_size %llu (1 B .. 1 GiB)", base,
                        (unsigned long long)l->stripe_size);
    size_t blen = strlen(base);
    if (blen + 32 > RFSM_MAX_PATH)
        return rfs_fail(RFS_E_NAME, "%s: path too long for the object names", base);
    rfsm *m = calloc(1, sizeof *m);
    if (!m)
        return rfs_fail(RFS_E_NOMEM, "%s: out of memory", base);
    uint32_t nobj = l->stripe_count * l->replicas;
    m->servers = calloc(l->nservers, sizeof *m->servers);
    m->objects = calloc(nobj, sizeof *m->objects);
    m->extents = calloc(1, sizeof *m->extents);
    uint32_t *idx = malloc(nobj * sizeof *idx);
    if (!m->servers || !m->objects || !m->extents || !idx)
        goto nomem;
    for (; m->nservers < l->nservers; m->nservers++)
        if (!(m->servers[m->nservers] = strdup(l->servers[m->nservers])))
            goto nomem;
    for (uint32_t c = 0; c < l->stripe_count; c++) {
        for (uint32_t r = 0; r < l->replicas; r++) {
            rfsm_object *o = &m->objects[m->nobjects];
            o->server = (first_server % l->nservers + c + r) % l->nservers;
            if (!(o->path = malloc(blen + 32)))
                goto nomem;
            snprintf(o->path, blen + 32, "%s.c%u.r%u", base, c, r);
            idx[c * l->replicas + r] = m->nobjects++;
        }
    }
    m->extents[0] = (rfsm_extent){.off = 0,
                                  .len = RFSM_MAX_SIZE,
                                  .obj_off = 0,
                                  .stripe_size = l->stripe_size,
                                  .stripe_count = l->stripe_count,
                                  .replicas = l->replicas,
                                  .objects = idx};
    m->nextents = 1;
    m->generation = 1;
    int rc = rfsm_validate(m, base);
    if (rc != RFS_OK) {
        rfsm_free(m);
        return rc;
    }
    *out = m;
    return RFS_OK;
nomem:
    free(idx);
    rfsm_free(m);
    return rfs_fail(RFS_E_NOMEM, "%s: out of memory", base);
}

int rfsm_map(const rfsm *m, uint64_t off, uint64_t len, rfsm_piece_fn fn, void *ctx)
{
    uint64_t end = off + len < off ? UINT64_MAX : off + len;
    for (uint32_t i = 0; i < m->nextents && off < end; i++) {
        const rfsm_extent *e = &m->extents[i];
        uint64_t eend = e->off + e->len;
        if (eend <= off)
            continue;
        if (e->off >= end)
            break;
        uint64_t x = off > e->off ? off : e->off;
        uint64_t stop = end < eend ? end : eend;
        while (x < stop) {
            uint64_t rel = x - e->off;
            uint64_t unit = rel / e->stripe_size, in = rel % e->stripe_size;
            uint64_t n = e->stripe_size - in;
            if (n > stop - x)
                n = stop - x;
            rfsm_piece p = {.log_off = x,
                            .obj_off = e->obj_off + (unit / e->stripe_count) * e->stripe_size + in,
                            .len = n,
                            .extent = i,
                            .column = (uint32_t)(unit % e->stripe_count)};
            int rc = fn(ctx, &p);
            if (rc != 0)
                return rc;
            x += n;
        }
        off = stop;
    }
    return 0;
}

uint64_t rfsm_column_bytes(const rfsm_extent *e, uint32_t column, uint64_t end)
{
    if (end <= e->off)
        return 0;
    uint64_t rel = end - e->off;
    if (rel > e->len)
        rel = e->len;
    uint64_t row_bytes = e->stripe_size * e->stripe_count;
    uint64_t rows = rel / row_bytes, rem = rel % row_bytes;
    uint64_t start = (uint64_t)column * e->stripe_size;
    uint64_t tail = rem > start ? rem - start : 0;
    if (tail > e->stripe_size)
        tail = e->stripe_size;
    return rows * e->stripe_size + tail;
}
