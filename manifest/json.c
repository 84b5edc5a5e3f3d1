/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The manifest's JSON form (docs/manifest.md "JSON form"): the same content as the binary
 * form, for `rfs manifest show --json` and for tests and tools. */
#include "manifest/manifest.h"

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

void rfsm_write_json(FILE *out, const rfsm *m)
{
    fprintf(out, "{\"version\": %u, \"size\": %llu, \"generation\": %llu, \"servers\": [",
            RFSM_VERSION, (unsigned long long)m->size, (unsigned long long)m->generation);
    for (uint32_t i = 0; i < m->nservers; i++) {
        fputs(i ? ", " : "", out);
        json_str(out, m->servers[i]);
    }
    fputs("], \"objects\": [", out);
    for (uint32_t i = 0; i < m->nobjects; i++) {
        const rfsm_object *o = &m->objects[i];
        fprintf(out, "%s{\"server\": %u, \"path\": ", i ? ", " : "", o->server);
        json_str(out, o->path);
        fprintf(out, ", \"complete\": %s}", (o->flags & RFSM_OBJ_STALE) ? "false" : "true");
    }
    fputs("], \"extents\": [", out);
    for (uint32_t i = 0; i < m->nextents; i++) {
        const rfsm_extent *e = &m->extents[i];
        fprintf(out,
                "%s{\"offset\": %llu, \"length\": %llu, \"object_offset\": %llu, "
                "\"stripe_size\": %llu, \"stripe_count\": %u, \"replicas\": %u, \"columns\": [",
                i ? ", " : "", (unsigned long long)e->off, (unsigned long long)e->len,
                (unsigned long long)e->obj_off, (unsigned long long)e->stripe_size, e->stripe_count,
                e->replicas);
        for (uint32_t c = 0; c < e->stripe_count; c++) {
            fputs(c ? ", [" : "[", out);
            for (uint32_t r = 0; r < e->replicas; r++)
                fprintf(out, "%s%u", r ? ", " : "", rfsm_object_of(e, c, r));
            fputc(']', out);
        }
        fputs("]}", out);
    }
    fputs("]}\n", out);
}
