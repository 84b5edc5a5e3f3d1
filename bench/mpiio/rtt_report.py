#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Builds bench/results/mpiio_rtt.json from traces kept by rtt_count.py --keep-trace.

Trace files are named LABEL-WORKLOAD-MPI-RANKS.txt. Every trace is analysed again with
rtt_count.py's rules (so old and new runs are counted the same way); the output holds, per
label, MPI and rank count, each MPI_File call's instances, and a before/after table of the calls
of a snapshot workload (first open, later open, set_view, first and later write_all, close).

Usage: bench/mpiio/rtt_report.py --traces DIR --rtt-ms 50 --link "..." [--before before]
           [--after after] [--pair A B ...] [--note TEXT ...] [--out bench/results/mpiio_rtt.json]"""
import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rtt_count import REPO, analyse, summarise  # noqa: E402

NAME = re.compile(r"^(?P<label>.+?)-(?P<workload>[a-z0-9]+(?:-small)?)-(?P<mpi>mpich|openmpi)-(?P<n>\d+)\.txt$")


def load(traces, rtt_ms):
    runs = {}
    for p in sorted(Path(traces).glob("*.txt")):
        m = NAME.match(p.name)
        if not m:
            continue
        calls = summarise(analyse(p.read_text(), rtt_ms))
        runs.setdefault(m["label"], {}).setdefault(m["mpi"], {})[m["n"]] = {
            "workload": m["workload"], "calls": calls}
    return runs


def pick(calls, name, which):
    """rtts, requests and ms of a call: its first instance ("first"), the median over the later
    ones ("rest"), or the median over all ("all")."""
    lst = calls.get(name, {}).get("each", [])
    if not lst:
        return None
    sel = lst[:1] if which == "first" else (lst[1:] or lst) if which == "rest" else lst
    return {"rtts": statistics.median(e["rtts"] for e in sel),
            "requests": statistics.median(e["requests"] for e in sel),
            "ms": round(statistics.median(e["ms"] for e in sel), 1)}


ROWS = [("MPI_File_open", "first", "open (first: new connections on ranks > 0)"),
        ("MPI_File_open", "rest", "open (again: pooled connections)"),
        ("MPI_File_set_view", "all", "set_view"),
        ("MPI_File_write_all", "first", "write_all (first after the view)"),
        ("MPI_File_write_all", "rest", "write_all (later)"),
        ("MPI_File_close", "all", "close")]


def table(runs, before, after):
    out = []
    for mpi in sorted(set(runs.get(before, {})) & set(runs.get(after, {}))):
        for n in sorted(set(runs[before][mpi]) & set(runs[after][mpi]), key=int):
            b, a = runs[before][mpi][n]["calls"], runs[after][mpi][n]["calls"]
            for call, which, label in ROWS:
                pb, pa = pick(b, call, which), pick(a, call, which)
                if pb is None or pa is None:
                    continue
                out.append({"mpi": mpi, "ranks": int(n), "call": label,
                            "rtts_before": pb["rtts"], "rtts_after": pa["rtts"],
                            "requests_before": pb["requests"], "requests_after": pa["requests"],
                            "ms_before": pb["ms"], "ms_after": pa["ms"]})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", required=True)
    ap.add_argument("--rtt-ms", type=float, default=50.0)
    ap.add_argument("--link", default="")
    ap.add_argument("--before", default="before")
    ap.add_argument("--after", default="after")
    ap.add_argument("--note", action="append", default=[])
    ap.add_argument("--pair", nargs=2, action="append", default=[], metavar=("A", "B"),
                    help="one more table: label A (as before) against label B (as after)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "mpiio_rtt.json"))
    a = ap.parse_args()
    runs = load(a.traces, a.rtt_ms)
    doc = {"what": "sequential WAN round trips (rtts) and requests per MPI-IO call on rfs, counted "
                   "from RFS_TRACE=1 by bench/mpiio/rtt_count.py; ms = wall time of the call "
                   "(first rank in to last rank out)",
           "link": a.link, "rtt_ms": a.rtt_ms, "notes": a.note,
           "before_after": table(runs, a.before, a.after),
           "compare": {f"{x} vs {y}": table(runs, x, y) for x, y in a.pair},
           "runs": runs}
    Path(a.out).write_text(json.dumps(doc, indent=1) + "\n")
    for r in doc["before_after"]:
        print(f"{r['mpi']:8} {r['ranks']} {r['call']:42} rtts {r['rtts_before']} -> {r['rtts_after']}"
              f"   ms {r['ms_before']} -> {r['ms_after']}")


if __name__ == "__main__":
    main()
