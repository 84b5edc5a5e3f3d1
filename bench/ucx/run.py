#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""TCP against UCX on loopback: `rfs put` and `rfs get` of one file (1 GiB by default) and the
4-byte rfs_pread latency loop (bench/roundtrip/lat.c), against one rfsd serving both
(--listen and --ucx-listen), side by side in the same run. Each repetition runs TCP then UCX
(the order alternating between repetitions); the report gives the medians and the median of the
per-repetition ucx/tcp ratios.

Loopback only: UCX here has no RDMA device and runs over tcp (rfs's UCX context excludes shared
memory, docs/protocol.md "Transports"), so this measures the transport's overhead over the same
kernel path, not what UCX gains on a fabric.

Usage: bench/ucx/run.py [--build-dir build] [--size-mib 1024] [--reps 5] [--lat-n 2000]
                        [--out bench/results/ucx_loopback.json]
Wrap runs in `flock /tmp/rfs-bench.lock`."""
import argparse
import json
import os
import platform
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def log(msg):
    print(f"bench/ucx: {msg}", file=sys.stderr, flush=True)


def timed(argv, env):
    t0 = time.monotonic()
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed: {p.stderr.strip()}")
    return time.monotonic() - t0, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=str(REPO / "build"))
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--lat-n", type=int, default=2000)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "ucx_loopback.json"))
    a = ap.parse_args()
    build = Path(a.build_dir).resolve()

    with tempfile.TemporaryDirectory(prefix="rfs-bench-ucx-") as w:
        work = Path(w)
        tok = work / "token"
        tok.write_text(secrets.token_hex(16))
        tok.chmod(0o600)
        root = work / "export"
        root.mkdir()
        lat = work / "lat"
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-Wall", "-I", str(REPO / "include"),
                        "-o", str(lat), str(REPO / "bench" / "roundtrip" / "lat.c"), "-L",
                        str(build), "-lrfs", f"-Wl,-rpath,{build}"], check=True)
        src = work / "src.bin"
        with open(src, "wb") as f:
            for _ in range(a.size_mib):
                f.write(os.urandom(1 << 20))
        rfsd = subprocess.Popen([str(build / "rfsd"), "--root", str(root), "--listen",
                                 "127.0.0.1:0", "--ucx-listen", "127.0.0.1:0", "--token-file",
                                 str(tok), "--log-level", "warn"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            tcp = rfsd.stdout.readline().split()[-1]
            ucx = rfsd.stdout.readline().split()[-1]
            env = {**os.environ, "RFS_TOKEN": tok.read_text(), "RFS_CONFIG": ""}
            names = {"tcp": f"rfs://{tcp}", "ucx": f"rfs+ucx://{ucx}"}
            res = {m: {"put_s": [], "get_s": [], "lat_us": []} for m in names}
            for rep in range(a.reps):
                order = ["tcp", "ucx"] if rep % 2 == 0 else ["ucx", "tcp"]
                for m in order:
                    base = names[m]
                    s, _ = timed([str(build / "rfs"), "put", str(src), f"{base}/f.bin"], env)
                    res[m]["put_s"].append(s)
                    back = work / "back.bin"
                    s, _ = timed([str(build / "rfs"), "get", f"{base}/f.bin", str(back)], env)
                    res[m]["get_s"].append(s)
                    if back.stat().st_size != src.stat().st_size:
                        raise RuntimeError(f"{m}: get returned {back.stat().st_size} bytes")
                    back.unlink()
                    _, out = timed([str(lat), f"{base}/f.bin", str(a.lat_n)], env)
                    res[m]["lat_us"].append(json.loads(out)["median_us"])
                    log(f"rep {rep} {m}: put {res[m]['put_s'][-1]:.2f} s, get "
                        f"{res[m]['get_s'][-1]:.2f} s, lat {res[m]['lat_us'][-1]:.1f} us")
        finally:
            rfsd.terminate()
            rfsd.wait(timeout=30)

    mib = a.size_mib
    report = {"where": "loopback", "host": platform.node(), "size_mib": mib, "reps": a.reps,
              "lat_n": a.lat_n, "ucx_tls": os.environ.get("RFS_UCX_TLS", "^sm (default)"),
              "note": "loopback only; UCX runs over tcp here (no RDMA device)"}
    for m in res:
        report[m] = {
            "put_mib_s": mib / statistics.median(res[m]["put_s"]),
            "get_mib_s": mib / statistics.median(res[m]["get_s"]),
            "lat_median_us": statistics.median(res[m]["lat_us"]),
            "runs": res[m],
        }
    ratio = {}
    for k, key in (("put", "put_s"), ("get", "get_s")):
        # throughput ratio ucx/tcp per repetition: time_tcp / time_ucx
        ratio[f"{k}_throughput_ucx_over_tcp"] = statistics.median(
            t / u for t, u in zip(res["tcp"][key], res["ucx"][key]))
    ratio["lat_ucx_over_tcp"] = statistics.median(
        u / t for t, u in zip(res["tcp"]["lat_us"], res["ucx"]["lat_us"]))
    report["ratios"] = ratio
    Path(a.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
