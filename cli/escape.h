/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* Terminal-safe text from the server (names in listings, error messages), as `ls -b` shows
 * names: a hostile server or a file created by another client must not be able to send
 * escape sequences to the user's terminal or forge extra output lines. */
#ifndef RFS_CLI_ESCAPE_H
#define RFS_CLI_ESCAPE_H

#include <stddef.h>

/* Copies s into out (always NUL-terminated, truncated to cap): printable ASCII and valid UTF-8
 * stay as they are; a backslash becomes "\\"; \a \b \t \n \v \f \r and ESC become C escapes
 * (\e for ESC); every other control byte, C1 control (U+0080..U+009F), bidirectional override
 * (U+202A..U+202E, U+2066..U+2069) and byte of invalid UTF-8 becomes \ooo (octal). */
void cli_escape(const char *s, char *out, size_t cap);

#endif
