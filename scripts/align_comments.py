#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Re-aligns the continuation lines of trailing /* */ comments after clang-format.

clang-format moves a trailing comment's first line to the aligned column but, with
ReflowComments off, leaves its other lines where they were. This puts a continuation
line that starts with '*' under the '*' of '/*', and any other one under the comment's
text. Usage: align_comments.py [--check] FILE...  (--check: print what would change);
align_comments.py --stdin (a filter).
"""
import sys


def starts_trailing_comment(line):
    k = line.find('/*')
    if k <= 0 or not line[:k].strip() or '*/' in line[k:]:
        return -1
    code = line[:k]
    if code.lstrip().startswith('//') or code.count('"') % 2:
        return -1
    return k


def align(text):
    lines = text.split('\n')
    i = 0
    while i < len(lines):
        col = starts_trailing_comment(lines[i])
        if col < 0:
            i += 1
            continue
        j = i + 1
        while j < len(lines):
            body = lines[j].lstrip()
            if not body:
                break
            pad = col + 1 if body.startswith('*') else col + 3
            lines[j] = ' ' * pad + body
            if '*/' in body:
                break
            j += 1
        i = j + 1
    return '\n'.join(lines)


def main(argv):
    if argv == ['--stdin']:
        sys.stdout.write(align(sys.stdin.read()))
        return 0
    check = bool(argv) and argv[0] == '--check'
    files = argv[1:] if check else argv
    changed = []
    for path in files:
        with open(path, encoding='utf-8') as f:
            old = f.read()
        new = align(old)
        if new != old:
            changed.append(path)
            if not check:
                with open(path, 'w', encoding='utf-8') as f:
                    f.write(new)
    if check:
        for path in changed:
            print(path)
    return 1 if check and changed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
