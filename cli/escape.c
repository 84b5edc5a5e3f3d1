/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* cli_escape: see escape.h. */
#include "cli/escape.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (2..4) and its code point, or 0. */
static size_t utf8_seq(const unsigned char *s, uint32_t *cp)
{
    size_t n;
    uint32_t c;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        n = 2;
        c = s[0] & 0x1f;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        n = 3;
        c = s[0] & 0x0f;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        n = 4;
        c = s[0] & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0; /* also stops at the terminating NUL */
        c = c << 6 | (s[i] & 0x3f);
    }
    /* overlong forms, surrogates and values past U+10FFFF are not valid UTF-8 */
    if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
        (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return n;
}

static int unsafe_cp(uint32_t c)
{
    return (c >= 0x80 && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

void cli_escape(const char *str, char *out, size_t cap)
{
    static const char named[] = "\a\b\t\n\v\f\r\033";
    static const char letter[] = "abtnvfre";
    const unsigned char *s = (const unsigned char *)str;
    size_t j = 0;
    if (cap == 0)
        return;
    while (*s) {
        char piece[16];
        size_t n = 1, plen;
        uint32_t cp;
        const char *hit = *s ? strchr(named, *s) : NULL;
        if (*s == '\\') {
            plen = (size_t)snprintf(piece, sizeof piece, "\\\\");
        } else if (hit) {
            plen = (size_t)snprintf(piece, sizeof piece, "\\%c", letter[hit - named]);
        } else if (*s >= 0x20 && *s < 0x7f) {
            piece[0] = (char)*s;
            plen = 1;
        } else if (*s >= 0x80 && (n = utf8_seq(s, &cp)) > 0 && !unsafe_cp(cp)) {
            memcpy(piece, s, n);
            plen = n;
        } else {
            /* a control byte, or one byte of an unsafe or invalid sequence */
            n = 1;
            plen = (size_t)snprintf(piece, sizeof piece, "\\%03o", *s);
        }
        if (j + plen >= cap)
            break; /* never cut an escape or a character in half */
        memcpy(out + j, piece, plen);
        j += plen;
        s += n;
    }
    out[j] = '\0';
}
