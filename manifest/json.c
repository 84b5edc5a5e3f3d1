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
            rfsm_has_logs(m) ? RFSM_VERSION_3 : RFSM_VERSION, (unsigned long long)m->size,
            (unsigned long long)m->generation);
    for (uint32_t i = 0; i < m->nservers; i++) {
        fputs(i ? ", " : "", out);
        json_str(out, m->servers[i]);
    }
    fputs("], \"objects\": [", out);
    for (uint32_t i = 0; i < m->nobjects; i++) {
        const rfsm_object *o = &m->objects[i];
        fprintf(out, "%s{\"server\": %u, \"path\": ", i ? ", " : "", o->server);
        json_str(out, o->path);
        /* The bytes it misses, in object offsets; a wholly suspect one misses [0, 2^62). */
        fprintf(out, ", \"complete\": %s, \"missing\": [",
                (o->flags & RFSM_OBJ_STALE) ? "false" : "true");
        if ((o->flags & RFSM_OBJ_STALE) && o->nmissing == 0)
            fprintf(out, "[0, %llu]", (unsigned long long)RFSM_MAX_SIZE);
        for (uint32_t k = 0; k < o->nmissing; k++)
            fprintf(out, "%s[%llu, %llu]", k ? ", " : "", (unsigned long long)o->missing[k].off,
                    (unsigned long long)o->missing[k].len);
        fputs("]}", out);
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
            for (uint32_t r = 0; r < e->replicas; r++) {
                uint32_t oi = rfsm_object_of(e, c, r);
                fputs(r ? ", " : "", out);
                if (oi == RFSM_NO_OBJECT)
                    fputs("null", out); /* an empty slot */
                else
                    fprintf(out, "%u", oi);
            }
            fputc(']', out);
        }
        fputs("]}", out);
    }
    /* Version 3 only: the log objects and the overlays over the stripes (docs/manifest.md
     * "Log-structured writes"). */
    if (rfsm_has_logs(m)) {
        fputs("], \"logs\": [", out);
        for (uint32_t i = 0; i < m->nlogs; i++) {
            fprintf(out, "%s{\"server\": %u, \"path\": ", i ? ", " : "", m->logs[i].server);
            json_str(out, m->logs[i].path);
            fprintf(out, ", \"length\": %llu}", (unsigned long long)m->logs[i].len);
        }
        fputs("], \"overlays\": [", out);
        for (uint32_t i = 0; i < m->noverlays; i++) {
            const rfsm_overlay *o = &m->overlays[i];
            fprintf(out,
                    "%s{\"offset\": %llu, \"length\": %llu, \"log\": %u, \"log_offset\": %llu}",
                    i ? ", " : "", (unsigned long long)o->off, (unsigned long long)o->len, o->log,
                    (unsigned long long)o->log_off);
        }
    }
    fputs("]}\n", out);
}
