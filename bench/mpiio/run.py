#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""4 ranks write then read 1 GiB collectively through rfs over loopback, against the same
program on a local file, in the same run (issue: MPI-IO on rfs, item 12).

The program is examples/demo3d.c: a 3-D double array in a BLOCK,BLOCK,BLOCK decomposition,
written with a subarray file view and MPI_File_write_all, closed, reopened and read back with
MPI_File_read_all, every element verified. Its per-phase times (open, transfer, close) are
parsed from its summary. Configurations, interleaved in each repetition:
  LOCAL     the file on this machine's disk (the MPI library's own MPI-IO, no rfs)
  RFS       rfs:127.0.0.1:PORT:/bench.bin through librfs-mpiio.so to an rfsd on loopback
  RFS+ABT   the same with RFS_HINTS=rfs_abt=enable (write returns once buffered; close waits)
Medians of --reps runs; ratios RFS/LOCAL per repetition, then their median.

Usage: bench/mpiio/run.py [--build-dir build] [--mpi mpich|openmpi] [--size 512] [--reps 3]
Writes JSON to stdout and bench/results/mpiio_loopback.json."""
import argparse
import json
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^\s+(write|read)\s+([\d.]+) s\s+([\d.]+) MiB/s\s+\(open ([\d.]+), transfer ([\d.]+), close ([\d.]+)\)")


def log(msg):
    print(f"bench/mpiio: {msg}", file=sys.stderr, flush=True)


def mpirun(mpi, np_, env_extra):
    if mpi == "mpich":
        cmd = ["mpiexec.mpich", "-n", str(np_), "-genv", "UCX_TLS", "self,sm"]
        for k, v in env_extra.items():
            cmd += ["-genv", k, v]
    else:
        cmd = ["mpiexec.openmpi", "--oversubscribe", "--allow-run-as-root", "-n", str(np_)]
        for k, v in env_extra.items():
            cmd += ["-x", f"{k}={v}"]
    return cmd


def run_demo(mpi, exe, target, size, env_extra, env):
    cmd = mpirun(mpi, 4, env_extra) + [str(exe), target, str(size), str(size), str(size)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0 or "verified" not in r.stdout:
        raise RuntimeError(f"demo3d failed on {target}:\n{r.stdout}\n{r.stderr}")
    out = {}
    for line in r.stdout.splitlines():
        m = LINE.match(line)
        if m:
            ph = m.group(1)
            out[ph] = {"seconds": float(m.group(2)), "MiBps": float(m.group(3)),
                       "open_s": float(m.group(4)), "transfer_s": float(m.group(5)),
                       "close_s": float(m.group(6))}
    if set(out) != {"write", "read"}:
        raise RuntimeError(f"cannot parse demo3d output:\n{r.stdout}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=str(REPO / "build"))
    ap.add_argument("--mpi", default="mpich", choices=["mpich", "openmpi"])
    ap.add_argument("--size", type=int, default=512, help="edge of the cube of doubles (512: 1 GiB)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "mpiio_loopback.json"))
    a = ap.parse_args()
    build = Path(a.build_dir).resolve()
    lib = build / "librfs-mpiio.so"
    for p in (lib, build / "rfsd"):
        if not p.exists():
            sys.exit(f"bench/mpiio: {p} missing: build rfs first (cmake --build {build})")
    work = Path(tempfile.mkdtemp(prefix="rfs-bench-mpiio."))
    srv = None
    try:
        exe = work / "demo3d"
        subprocess.run([f"mpicc.{a.mpi}", "-O2", "-std=c11", "-o", str(exe),
                        str(REPO / "examples" / "demo3d.c")], check=True)
        root = work / "export"
        root.mkdir()
        token = secrets.token_hex(16)
        (work / "token").write_text(token)
        srv = subprocess.Popen([str(build / "rfsd"), "--root", str(root), "--listen", "127.0.0.1:0",
                                "--token-file", str(work / "token")], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
        addr = srv.stdout.readline().split()[-1]
        env = dict(os.environ, RFS_TOKEN=token)
        (work / "staging").mkdir()
        configs = {
            "LOCAL": (str(work / "local.bin"), {}),
            "RFS": (f"rfs:{addr}:/bench.bin", {"LD_PRELOAD": str(lib), "RFS_TOKEN": token}),
            "RFS+ABT": (f"rfs:{addr}:/bench-abt.bin", {"LD_PRELOAD": str(lib), "RFS_TOKEN": token,
                        "RFS_HINTS": f"rfs_abt=enable;rfs_staging_dir={work / 'staging'}"}),
        }
        samples = {c: [] for c in configs}
        for rep in range(a.reps):
            for name, (target, extra) in configs.items():
                log(f"rep {rep + 1}/{a.reps}: {name}")
                samples[name].append(run_demo(a.mpi, exe, target, a.size, extra, env))
                for f in (work / "local.bin", root / "bench.bin", root / "bench-abt.bin"):
                    f.unlink(missing_ok=True)  # a fresh file each run, as a checkpoint would be
        med = {c: {ph: {k: statistics.median(s[ph][k] for s in v) for k in v[0][ph]}
                   for ph in ("write", "read")} for c, v in samples.items()}
        ratios = {}
        for c in ("RFS", "RFS+ABT"):
            for ph in ("write", "read"):
                ratios[f"{c}/LOCAL {ph} bandwidth"] = statistics.median(
                    samples[c][i][ph]["MiBps"] / samples["LOCAL"][i][ph]["MiBps"] for i in range(a.reps))
        result = {
            "benchmark": "mpiio_loopback",
            "what": "4 ranks, demo3d: collective write then read of a 3-D double array, subarray view",
            "bytes": a.size ** 3 * 8,
            "mpi": a.mpi,
            "link": "loopback (127.0.0.1)",
            "reps": a.reps,
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "load_avg": os.getloadavg(),
            "median": med,
            "ratios_median": ratios,
            "samples": samples,
        }
        text = json.dumps(result, indent=2)
        print(text)
        Path(a.out).write_text(text + "\n")
    finally:
        if srv:
            srv.terminate()
            srv.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
