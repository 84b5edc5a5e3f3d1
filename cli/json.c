/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* JSON output of listings and stats (--json): one document on stdout that scripts parse
 * instead of the human columns. Names are bytes from the server: valid UTF-8 is kept,
 * controls are \u escapes, and a byte of invalid UTF-8 becomes \udcXX (the convention of
 * Python's "surrogateescape", so json.loads(...).encode("utf-8", "surrogateescape") gives the
 * exact bytes back). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

/* Length of the valid UTF-8 sequence at s, or 0. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    size_t n = c < 0x80             ? 1
               : (c & 0xE0) == 0xC0 ? 2
               : (c & 0xF0) == 0xE0 ? 3
               : (c & 0xF8) == 0xF0 ? 4
                                    : 0;
    if (n == 0 || (n == 2 && c < 0xC2) || (n == 4 && c > 0xF4))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if (n == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0)))
        return 0; /* overlong, or a surrogate */
    if (n == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90)))
        return 0;
    return n;
}

void cli_json_string(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', out);
    while (*p) {
        if (*p == '"' || *p == '\\') {
            fprintf(out, "\\%c", *p++);
        } else if (*p < 0x20 || *p == 0x7F) {
            fprintf(out, "\\u%04x", *p++);
        } else {
            size_t n = utf8_len(p);
            if (n == 0) {
                fprintf(out, "\\udc%02x", *p++);
            } else {
                fwrite(p, 1, n, out);
                p += n;
            }
        }
    }
    fputc('"', out);
}

static const char *kind(uint32_t type)
{
    return type == RFS_TYPE_DIR ? "directory" : type == RFS_TYPE_FILE ? "file" : "other";
}

void cli_json_fields(FILE *out, const rfs_stat_info *st)
{
    fprintf(out, "\"type\": \"%s\", \"size\": %" PRIu64 ", \"mode\": %u, \"mtime_ns\": %" PRId64,
            kind(st->type), st->size, (unsigned)(st->mode & 07777), st->mtime_ns);
}

void cli_json_entry(FILE *out, const char *name, const rfs_stat_info *st)
{
    fputs("{\"name\": ", out);
    cli_json_string(out, name);
    fputs(", ", out);
    cli_json_fields(out, st);
    fputc('}', out);
}

void cli_human_size(uint64_t bytes, char *out, size_t cap)
{
    static const char units[] = "KMGTPE";
    if (bytes < 1024) {
        snprintf(out, cap, "%" PRIu64, bytes);
        return;
    }
    double v = (double)bytes;
    int u = -1;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    snprintf(out, cap, v < 10 ? "%.1f%c" : "%.0f%c", v, units[u]);
}
