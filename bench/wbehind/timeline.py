#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""One rfs run's timeline: the client link's rate and the CPU use per --step seconds (from
linksample.py's samples), beside the RFS_TRACE marks and requests of that interval (from a
run's output kept by run.py --dump-dir), from the first MPI_File_open to the first file's last
MPI_File_close. Both use CLOCK_MONOTONIC, so they line up.

    timeline.py DUMP SAMPLES [--step 0.05] [--all]

--all also lists the per-call marks of writes and reads (long)."""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("samples")
    ap.add_argument("--step", type=float, default=0.05)
    ap.add_argument("--all", action="store_true")
    a = ap.parse_args()
    with open(a.dump) as f:
        tr = [ln.split() for ln in f if ln.startswith("rfs trace ")]
    opens = [float(t[2]) for t in tr if t[3:6] == ["mpi", "begin", "MPI_File_open"]]
    if not opens:
        print("no RFS_TRACE marks in the dump (run with --env RFS_TRACE=1)", file=sys.stderr)
        return 1
    t0 = min(opens)
    closes = sorted(float(t[2]) for t in tr if t[3:6] == ["mpi", "end", "MPI_File_close"])
    # the first file's closes: as many as its opens began together
    nranks = sum(1 for x in opens if x - t0 < 1.0)
    tend = closes[min(nranks, len(closes)) - 1] if closes else t0 + 10
    print(f"first open {t0:.6f}; the first file's last close {tend - t0:.3f} s later")
    ev = sorted((float(t[2]) - t0, " ".join(t[3:8])) for t in tr if t0 <= float(t[2]) <= tend)
    with open(a.samples) as f:
        rows = [tuple(map(float, ln.split())) for ln in f if ln.strip()]
    rows = [r for r in rows if t0 - a.step <= r[0] <= tend + a.step]
    i = ei = 0
    while i < len(rows) - 1:
        j = i
        while j < len(rows) - 1 and rows[j][0] - rows[i][0] < a.step:
            j += 1
        dt = rows[j][0] - rows[i][0]
        mbit = (rows[j][1] - rows[i][1]) * 8 / dt / 1e6
        dtot = rows[j][3] - rows[i][3]
        busy = 1 - (rows[j][2] - rows[i][2]) / dtot if dtot > 0 else 0
        end = rows[j][0] - t0
        marks = []
        while ei < len(ev) and ev[ei][0] < end:
            if a.all or not any(k in ev[ei][1] for k in ("write_at", "read_at", "PREAD")):
                marks.append(f"{ev[ei][0]:.3f} {ev[ei][1]}")
            ei += 1
        print(f"{rows[i][0] - t0:7.3f} {mbit:5.0f} Mbit/s cpu {busy:4.2f} | " + "; ".join(marks))
        i = j
    return 0


if __name__ == "__main__":
    sys.exit(main())
