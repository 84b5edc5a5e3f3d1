# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Checks files written by the pattern-based workloads in bench/apps, independently of MPI.

The 8-byte word at file offset 8*w holds the double  w + seed * 2**40  (see bench/apps/common.h).
romio_perf, btio, flashio (each .chkN), s3dio (each .N) and blast (each .wN) files are entirely
made of that pattern, so a whole-file check proves every rank's data landed where it belongs.
"""
import array
import sys

CHUNK_WORDS = 1 << 20


def check_file(path, seed, expect_bytes=None):
    """Returns (words_checked, mismatches, first_bad_word or None)."""
    bad = 0
    first_bad = None
    w = 0
    base = float(seed) * 2.0 ** 40
    with open(path, "rb") as f:
        while True:
            raw = f.read(CHUNK_WORDS * 8)
            if not raw:
                break
            if len(raw) % 8:
                raise ValueError(f"{path}: size is not a multiple of 8")
            a = array.array("d")
            a.frombytes(raw)
            if sys.byteorder != "little":
                a.byteswap()
            for i, v in enumerate(a):
                if v != w + i + base:
                    bad += 1
                    if first_bad is None:
                        first_bad = w + i
            w += len(a)
    if expect_bytes is not None and w * 8 != expect_bytes:
        bad += 1
        if first_bad is None:
            first_bad = w
    return w, bad, first_bad


def files_for(app, target, params, ranks):
    """The files a run of `app` on local path `target` left, or [] if it has none to check."""
    if app in ("romio_perf", "btio"):
        return [target]
    if app == "flashio":
        return [f"{target}.chk{c}" for c in range(int(params["checkpoints"]))]
    if app == "s3dio":
        return [f"{target}.{c}" for c in range(int(params["checkpoints"]))]
    if app == "blast":
        workers = ranks - 1 if ranks > 1 else 1
        return [f"{target}.w{w}" for w in range(workers)]
    return []


def expected_bytes(app, params, ranks):
    """Total size of one file, where the workload defines it exactly (None: not checked)."""
    if app == "romio_perf":
        return int(params["size"]) * ranks
    if app == "btio":
        return int(params["array_bytes"]) * int(params["dumps"])
    if app == "flashio":
        return int(params["checkpoint_bytes"])
    if app == "s3dio":
        return int(params["checkpoint_bytes"])
    return None


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: pattern.py FILE SEED")
    n, bad, first = check_file(sys.argv[1], int(sys.argv[2]))
    print(f"{sys.argv[1]}: {n} words, {bad} mismatches" + (f", first at word {first}" if bad else ""))
    sys.exit(1 if bad else 0)
