#!/usr/bin/env bash
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
# Builds the libFuzzer targets with clang in BUILD_DIR and fuzzes the frame decoders for
# SECONDS, then the manifest decoder for a third of that, each seeded with a temporary copy of
# its corpus (tests/fuzz/corpus, tests/fuzz/corpus_manifest; the committed ones are never
# modified). Exits non-zero if the fuzzer finds a crash, leak, timeout or broken invariant;
# the reproducer is left in BUILD_DIR/fuzz-artifacts/.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS
# Env: CC (default: clang, else clang-14), RFS_SOURCE_DIR (default: this repository).
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR SECONDS" >&2
    exit 2
fi
build=$1
seconds=$2
here=$(cd "$(dirname "$0")" && pwd)
src=${RFS_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
cc=${CC:-}
if [ -z "$cc" ]; then
    if command -v clang >/dev/null; then cc=clang; else cc=clang-14; fi
fi

mkdir -p "$build"
cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER="$cc" -DRFS_FUZZ=ON -DRFS_WITH_MPI=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/fuzz-configure.log" 2>&1 \
    || { cat "$build/fuzz-configure.log" >&2; exit 1; }
cmake --build "$build" -j2 --target fuzz_frame fuzz_manifest

corpus=$(mktemp -d "${TMPDIR:-/tmp}/rfs-fuzz-corpus.XXXXXX")
trap 'rm -rf "$corpus"' EXIT
cp "$here"/corpus/* "$corpus"/
mkdir -p "$build/fuzz-artifacts"

# -max_len covers a LIST page or a few pipelined frames; -timeout flags a hang per input.
"$build/fuzz_frame" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/" "$corpus"
echo "fuzz_frame: no crash in ${seconds} s"

# The manifest decoder: a third of the time, seeded with tests/fuzz/corpus_manifest.
mcorpus=$(mktemp -d "${TMPDIR:-/tmp}/rfs-fuzz-manifest.XXXXXX")
trap 'rm -rf "$corpus" "$mcorpus"' EXIT
cp "$here"/corpus_manifest/* "$mcorpus"/
mseconds=$(( seconds / 3 > 0 ? seconds / 3 : 1 ))
"$build/fuzz_manifest" -max_total_time="$mseconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/manifest-" "$mcorpus"
echo "fuzz_manifest: no crash in ${mseconds} s"
