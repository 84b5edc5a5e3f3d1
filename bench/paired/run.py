#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Before/after comparison of two builds of rfs with the existing benchmarks, in alternation
(before, after, after, before, before, after, ...: which goes first changes every pair, so that
neither side always runs on a machine the other just warmed or loaded), and the state of this
shared machine drifts over both alike. For each pair the ratio after/before of each figure is
taken; the result is the median of those ratios (1.0: no change; bandwidths > 1 and latencies
< 1 are better), with their spread (the noise to judge it by).

  bench/mpiio/run.py      4 ranks, demo3d collective write+read through librfs-mpiio.so, RFS
                          and RFS+ABT, with LOCAL (the MPI library's own I/O) in the same run;
                          the RFS/LOCAL ratios of a run are compared too (they cancel most of
                          the machine's state)
  bench/roundtrip/run.py  4-byte rfs_pread latency, rfs put/get of one file (one stream)

Run it holding the benchmark lock (one benchmark at a time on the machine):
  flock /tmp/rfs-bench.lock /usr/bin/python3 bench/paired/run.py --before B --after A \\
      [--pairs 3] [--mpiio-size 384] [--roundtrip-mib 256] [--out bench/results/NAME.json]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def log(msg):
    print(f"bench/paired: {msg}", file=sys.stderr, flush=True)


def mpiio(build, size, out):
    subprocess.run([sys.executable, str(REPO / "bench" / "mpiio" / "run.py"), "--build-dir", build,
                    "--size", str(size), "--reps", "1", "--out", out], check=True,
                   stdout=subprocess.DEVNULL)
    d = json.loads(Path(out).read_text())
    m = d["median"]
    fig = {}
    for c in ("RFS", "RFS+ABT"):
        for ph in ("write", "read"):
            fig[f"{c} {ph} MiB/s"] = m[c][ph]["MiBps"]
            fig[f"{c}/LOCAL {ph}"] = d["ratios_median"][f"{c}/LOCAL {ph} bandwidth"]
    return fig


def roundtrip(build, mib, out):
    subprocess.run([sys.executable, str(REPO / "bench" / "roundtrip" / "run.py"), "--build-dir",
                    build, "--size-mib", str(mib), "--reps", "3", "--streams", "1",
                    "--warm-mib", "512", "--out", out], check=True, stdout=subprocess.DEVNULL)
    d = json.loads(Path(out).read_text())
    return {"rfs_pread 4 B latency us": d["latency_us"]["rfs_pread4"],
            "rfs put MiB/s": d["throughput_MiBps"]["rfs_put_streams1"],
            "rfs get MiB/s": d["throughput_MiBps"]["rfs_get_streams1"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="build directory of the old code")
    ap.add_argument("--after", required=True, help="build directory of the new code")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--mpiio-size", type=int, default=384, help="demo3d cube edge (384: 432 MiB)")
    ap.add_argument("--roundtrip-mib", type=int, default=256)
    ap.add_argument("--what", default="", help="what changed between the builds (for the JSON)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "paired.json"))
    a = ap.parse_args()
    builds = {"before": str(Path(a.before).resolve()), "after": str(Path(a.after).resolve())}
    samples = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="rfs-paired.") as tmp:
        for p in range(a.pairs):
            for side in (("before", "after") if p % 2 == 0 else ("after", "before")):
                log(f"pair {p + 1}/{a.pairs}: {side}")
                fig = mpiio(builds[side], a.mpiio_size, os.path.join(tmp, "m.json"))
                fig.update(roundtrip(builds[side], a.roundtrip_mib, os.path.join(tmp, "r.json")))
                samples[side].append(fig)
    keys = list(samples["before"][0])
    ratios = {k: [samples["after"][i][k] / samples["before"][i][k] for i in range(a.pairs)]
              for k in keys}
    result = {
        "benchmark": "paired before/after",
        "what": a.what,
        "builds": builds,
        "pairs": a.pairs,
        "order": "before first in even pairs (0, 2, ...), after first in odd ones",
        "mpiio": {"ranks": 4, "bytes": a.mpiio_size ** 3 * 8, "mpi": "mpich", "link": "loopback"},
        "roundtrip": {"file_mib": a.roundtrip_mib, "streams": 1, "reps_per_run": 3},
        "statistic": "median over pairs of after/before (1.0: unchanged)",
        "ratio_after_over_before": {k: statistics.median(v) for k, v in ratios.items()},
        "ratio_range_over_pairs": {k: [min(v), max(v)] for k, v in ratios.items()},
        "ratios_per_pair": ratios,
        "samples": samples,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "load_avg": os.getloadavg(),
    }
    text = json.dumps(result, indent=2)
    print(text)
    Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
