/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The manifest decoder's invariants (manifest_check.h). */
#include "manifest_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest/manifest.h"
#include "rfs/rfs.h"

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "manifest_check: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                   \
        }                                                                              \
    } while (0)

typedef struct walk {
    const rfsm *m;
    uint64_t next; /* the logical offset the next piece must start at (or after) */
    uint64_t bytes;
} walk;

static int piece_ok(void *ctx, const rfsm_piece *p)
{
    walk *w = ctx;
    CHECK(p->extent < w->m->nextents);
    const rfsm_extent *e = &w->m->extents[p->extent];
    CHECK(p->column < e->stripe_count);
    CHECK(p->len > 0 && p->len <= e->stripe_size);
    CHECK(p->log_off >= e->off && p->log_off - e->off < e->len);
    CHECK(p->len <= e->len - (p->log_off - e->off));
    CHECK(p->log_off >= w->next);
    CHECK(p->obj_off >= e->obj_off && p->obj_off < RFSM_MAX_SIZE);
    w->next = p->log_off + p->len;
    w->bytes += p->len;
    return 0;
}

int rfsm_check_bytes(const uint8_t *data, size_t size)
{
    rfsm *m = (rfsm *)&m; /* must come back NULL when refused */
    int rc = rfsm_decode(data, size, "fuzz", &m);
    if (rc != RFS_OK) {
        CHECK(m == NULL);
        CHECK(rc == RFS_E_PROTO || rc == RFS_E_VERSION || rc == RFS_E_TOOBIG || rc == RFS_E_NOMEM);
        CHECK(rfs_last_error()[0] != '\0');
        return 0;
    }
    uint8_t *again = NULL;
    size_t len = 0;
    CHECK(rfsm_encode(m, "fuzz", &again, &len) == RFS_OK);
    if (data[4] == RFSM_VERSION || (data[4] == RFSM_VERSION_3 && rfsm_has_logs(m))) {
        CHECK(len == size && memcmp(again, data, size) == 0);
    } else {
        /* A version 1 manifest, or a version 3 one without logs, is written back as version 2:
         * the same content, which then encodes to the same bytes again. */
        CHECK((data[4] == RFSM_VERSION_1 || data[4] == RFSM_VERSION_3) && again[4] == RFSM_VERSION);
        rfsm *m2 = NULL;
        CHECK(rfsm_decode(again, len, "fuzz", &m2) == RFS_OK);
        CHECK(m2->size == m->size && m2->nobjects == m->nobjects && m2->nextents == m->nextents);
        uint8_t *third = NULL;
        size_t len3 = 0;
        CHECK(rfsm_encode(m2, "fuzz", &third, &len3) == RFS_OK);
        CHECK(len3 == len && memcmp(third, again, len) == 0);
        free(third);
        rfsm_free(m2);
    }
    free(again);
    /* An incomplete object's missing ranges answer as they say. */
    for (uint32_t i = 0; i < m->nobjects; i++) {
        const rfsm_object *o = &m->objects[i];
        for (uint32_t k = 0; k < o->nmissing; k++) {
            CHECK(rfsm_object_misses(o, o->missing[k].off, 1));
            CHECK(o->missing[k].off == 0 || !rfsm_object_misses(o, o->missing[k].off - 1, 1));
        }
        CHECK(rfsm_object_misses(o, 0, RFSM_MAX_SIZE) == ((o->flags & RFSM_OBJ_STALE) != 0));
    }
    /* Ranges at the start, around the size and at the far end map inside their extents. */
    uint64_t starts[3] = {0, m->size > 100 ? m->size - 100 : 0, RFSM_MAX_SIZE - 4096};
    for (int i = 0; i < 3; i++) {
        walk w = {m, starts[i], 0};
        CHECK(rfsm_map(m, starts[i], 1 << 16, piece_ok, &w) == 0);
        CHECK(w.bytes <= 1 << 16);
    }
    for (uint32_t x = 0; x < m->nextents; x++)
        for (uint32_t c = 0; c < m->extents[x].stripe_count; c++)
            CHECK(rfsm_column_bytes(&m->extents[x], c, m->size) <= m->size);
    /* Overlays: the whole file resolves into pieces in buffer order, each log piece inside
     * its log's recorded bytes. */
    if (m->noverlays) {
        rfs_extent all = {0, m->size};
        rfsm_resolved *r = NULL;
        size_t nr = 0;
        CHECK(rfsm_resolve(m->overlays, m->noverlays, &all, 1, &r, &nr) == RFS_OK);
        uint64_t pos = 0;
        for (size_t k = 0; k < nr; k++) {
            CHECK(r[k].pos == pos && r[k].len > 0);
            if (r[k].log != RFSM_NO_OBJECT)
                CHECK(r[k].log < m->nlogs && r[k].src + r[k].len <= m->logs[r[k].log].len);
            pos += r[k].len;
        }
        CHECK(pos == m->size);
        free(r);
    }
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        rfsm_write_json(null, m);
        fclose(null);
    }
    rfsm_free(m);
    return 1;
}
