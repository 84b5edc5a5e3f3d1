#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""TCP against UCX on loopback: `rfs put` and `rfs get` of one file (1 GiB by default), the
4-byte rfs_pread latency loop (bench/roundtrip/lat.c) and the bandwidth of single rfs_pwrite /
rfs_pread calls from 4 KiB to 64 MiB (bench/ucx/bw.c), against one rfsd serving both (--listen
and --ucx-listen), side by side in the same run. Each repetition runs TCP then UCX (the order
alternating between repetitions); the report gives the medians and the median of the
per-repetition ucx/tcp ratios. --rndv-sweep adds UCX alone with messages going by rendezvous
from 32 KiB, 128 KiB (the default) or never ($RFS_UCX_RNDV_MIN, for client and server), at
sizes around those. --inline-sweep adds UCX writes alone with payloads going direct (from the
caller's buffer) from 0 (all, frame headers too), 16, 32 (the default), 64 or 256 KiB or never
($RFS_UCX_INLINE_MAX, the client's), at sizes around those. --overlap adds bench/ucx/overlap.c
(MPICH, one rank, librfs-mpiio preloaded): a compute loop against MPI_File_iwrite_at of 4 MiB
as the fraction of the largest speedup a perfect overlap gives (max(compute, I/O), semplar's
reference), for TCP on librfs-mpiio's I/O threads, UCX on the I/O threads (rfs_nb_native=
disable) and UCX native (no I/O thread, the default). On loopback the "I/O" is memcpy and
protocol work on this machine's 2 cores, competing with the compute loop and rfsd: the figure
is labelled CPU-bound; bench/ucx/wan_overlap.py measures overlap where the network is the
bottleneck.

Loopback only: UCX here has no RDMA device and runs over tcp on the loopback interface (rfs's
UCX context excludes shared memory and, for a loopback peer, other devices: docs/protocol.md
"Transports"), so this measures the transport's overhead over the same kernel path, not what
UCX gains on a fabric.

Usage: bench/ucx/run.py [--build-dir build] [--size-mib 1024] [--reps 5] [--lat-n 2000]
                        [--rndv-sweep] [--inline-sweep] [--overlap] [--no-main]
                        [--tmp /dev/shm] [--out bench/results/ucx_loopback.json]
The files (source, export root, copies) live in --tmp, memory by default.
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


BW_SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
SWEEP_SIZES = [16 << 10, 64 << 10, 256 << 10, 1 << 20]
SWEEP_MINS = {"32k": "32768", "128k": "131072", "never": str((1 << 20) + 1)}
INLINE_SIZES = [8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20, 4 << 20]
INLINE_MAXES = {"all-direct": "0", "16k": "16384", "32k": "32768", "64k": "65536",
                "256k": "262144", "never-direct": str(1 << 40)}
OVERLAP_CHUNK, OVERLAP_ITERS = 4 << 20, 128


def start_rfsd(build, root, tok, env):
    p = subprocess.Popen([str(build / "rfsd"), "--root", str(root), "--listen", "127.0.0.1:0",
                          "--ucx-listen", "127.0.0.1:0", "--token-file", str(tok),
                          "--log-level", "warn"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    tcp = p.stdout.readline().split()[-1]
    ucx = p.stdout.readline().split()[-1]
    return p, tcp, ucx


def bw(tool, url, size, op, env):
    _, out = timed([str(tool), url, str(size), op], env)
    return json.loads(out)["mib_s"]


def loadavg():
    return os.getloadavg()[0]


def inline_sweep(a, bwt, url, env, loads):
    """UCX writes of INLINE_SIZES with payloads direct from each of INLINE_MAXES."""
    runs = {k: {str(sz): [] for sz in INLINE_SIZES} for k in INLINE_MAXES}
    for rep in range(a.reps):
        keys = list(INLINE_MAXES) if rep % 2 == 0 else list(reversed(INLINE_MAXES))
        for k in keys:
            e = {**env, "RFS_UCX_INLINE_MAX": INLINE_MAXES[k]}
            for sz in INLINE_SIZES:
                runs[k][str(sz)].append(bw(bwt, f"{url}/inl.bin", sz, "write", e))
        log(f"inline sweep rep {rep} done")
        loads.append(loadavg())
    med = {k: {sz: statistics.median(v) for sz, v in runs[k].items()} for k in runs}
    # per size, the setting whose median is highest, and each over copying everything
    best = {sz: max(med, key=lambda k: med[k][sz]) for sz in med["32k"]}
    over_inline = {k: {sz: statistics.median(d / i for d, i in
                                             zip(runs[k][sz], runs["never-direct"][sz]))
                       for sz in runs[k]} for k in runs}
    return {"direct_from": INLINE_MAXES, "op": "write (rfs_pwrite, one call at a time)",
            "median_mib_s": med, "best_per_size": best,
            "median_ratio_over_never_direct": over_inline, "runs": runs}


OVERLAP_MODES = {"tcp-threads": ("tcp", "rfs_nb_native=disable"),
                 "ucx-threads": ("ucx", "rfs_nb_native=disable"),
                 "ucx-native": ("ucx", "")}
# Every mode: a write of one frame would otherwise return from the I/O threads once it is in the
# socket buffer (the write window), while a native request completes on the server's reply.
OVERLAP_COMMON_HINTS = "rfs_write_window=0;rfs_compress=none"


def overlap_runs(a, build, ovl, urls, env, loads):
    """bench/ucx/overlap.c for each of OVERLAP_MODES, a.reps times, order alternating."""
    lib = build / "librfs-mpiio.so"
    names = list(OVERLAP_MODES)
    runs = {m: [] for m in names}
    for rep in range(a.reps):
        for m in (names if rep % 2 == 0 else list(reversed(names))):
            transport, hints = OVERLAP_MODES[m]
            name = f"{urls[transport]}/ovl-{m}.bin"
            cmd = ["mpiexec.mpich", "-n", "1", "-genv", "UCX_TLS", "self,sm",
                   "-genv", "LD_PRELOAD", str(lib), "-genv", "RFS_TOKEN", env["RFS_TOKEN"],
                   "-genv", "RFS_HINTS", ";".join(x for x in (OVERLAP_COMMON_HINTS, hints) if x),
                   str(ovl), name, str(OVERLAP_CHUNK), str(OVERLAP_ITERS)]
            _, out = timed(cmd, env)
            o = json.loads(out.strip().splitlines()[-1])
            runs[m].append({**o, **o["ratios"][0]})  # overlap.c's one ratio (1) by default
        log(f"overlap rep {rep}: " + ", ".join(f"{m} {runs[m][-1]['of_max']:.3f} of max"
                                               for m in names))
        loads.append(loadavg())
    return {"program": "bench/ucx/overlap.c (MPICH, 1 rank)", "chunk": OVERLAP_CHUNK,
            "iters": OVERLAP_ITERS,
            "reference": "max(compute, I/O): max speedup (compute + I/O) / max(...)",
            "bound_by": "CPU (loopback: memcpy and protocol work on 2 shared cores)",
            "common_hints": OVERLAP_COMMON_HINTS,
            "modes": {m: {"transport": t, "hints": h} for m, (t, h) in OVERLAP_MODES.items()},
            "median": {m: {k: statistics.median(r[k] for r in runs[m])
                           for k in ("io_s", "compute_s", "both_s", "speedup", "max_speedup",
                                     "of_max")} for m in runs},
            "runs": runs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=str(REPO / "build"))
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--lat-n", type=int, default=2000)
    ap.add_argument("--rndv-sweep", action="store_true")
    ap.add_argument("--inline-sweep", action="store_true")
    ap.add_argument("--overlap", action="store_true")
    ap.add_argument("--no-main", action="store_true", help="only the sweeps / overlap asked for")
    # files in memory by default: the transports are measured, not the disk
    ap.add_argument("--tmp", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "ucx_loopback.json"))
    a = ap.parse_args()
    build = Path(a.build_dir).resolve()

    with tempfile.TemporaryDirectory(prefix="rfs-bench-ucx-", dir=a.tmp) as w:
        work = Path(w)
        tok = work / "token"
        tok.write_text(secrets.token_hex(16))
        tok.chmod(0o600)
        root = work / "export"
        root.mkdir()
        lat = work / "lat"
        bwt = work / "bw"
        for exe, src_c in ((lat, REPO / "bench" / "roundtrip" / "lat.c"),
                           (bwt, REPO / "bench" / "ucx" / "bw.c")):
            subprocess.run([os.environ.get("CC", "cc"), "-O2", "-Wall", "-I",
                            str(REPO / "include"), "-o", str(exe), str(src_c), "-L", str(build),
                            "-lrfs", f"-Wl,-rpath,{build}"], check=True)
        ovl = work / "overlap"
        if a.overlap:
            subprocess.run(["mpicc.mpich", "-O2", "-Wall", "-o", str(ovl),
                            str(REPO / "bench" / "ucx" / "overlap.c")], check=True)
        src = work / "src.bin"
        with open(src, "wb") as f:
            for _ in range(a.size_mib):
                f.write(os.urandom(1 << 20))
        env = {**os.environ, "RFS_TOKEN": tok.read_text(), "RFS_CONFIG": ""}
        env.pop("RFS_UCX_RNDV_MIN", None)
        env.pop("RFS_UCX_INLINE_MAX", None)
        rfsd, tcp, ucx = start_rfsd(build, root, tok, env)
        loads = [loadavg()]
        res = {}
        inline, overlap = {}, {}
        try:
            names = {"tcp": f"rfs://{tcp}", "ucx": f"rfs+ucx://{ucx}"}
            res = {m: {"put_s": [], "get_s": [], "lat_us": [],
                       "bw": {f"{op}_{sz}": [] for op in ("write", "read") for sz in BW_SIZES}}
                   for m in names}
            if a.inline_sweep:
                inline = inline_sweep(a, bwt, names["ucx"], env, loads)
            if a.overlap:
                overlap = overlap_runs(a, build, ovl, names, env, loads)
            for rep in range(0 if a.no_main else a.reps):
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
                    for sz in BW_SIZES:
                        for op in ("write", "read"):
                            res[m]["bw"][f"{op}_{sz}"].append(
                                bw(bwt, f"{base}/bw.bin", sz, op, env))
                    log(f"rep {rep} {m}: put {res[m]['put_s'][-1]:.2f} s, get "
                        f"{res[m]['get_s'][-1]:.2f} s, lat {res[m]['lat_us'][-1]:.1f} us, "
                        f"64 MiB write/read {res[m]['bw'][f'write_{64 << 20}'][-1]:.0f}/"
                        f"{res[m]['bw'][f'read_{64 << 20}'][-1]:.0f} MiB/s")
                    loads.append(loadavg())
        finally:
            rfsd.terminate()
            rfsd.wait(timeout=30)

        sweep = {}
        if a.rndv_sweep:
            runs = {k: {f"{op}_{sz}": [] for op in ("write", "read") for sz in SWEEP_SIZES}
                    for k in SWEEP_MINS}
            for rep in range(a.reps):
                keys = list(SWEEP_MINS) if rep % 2 == 0 else list(reversed(SWEEP_MINS))
                for k in keys:
                    e = {**env, "RFS_UCX_RNDV_MIN": SWEEP_MINS[k]}
                    p, _, u = start_rfsd(build, root, tok, e)
                    try:
                        for sz in SWEEP_SIZES:
                            for op in ("write", "read"):
                                runs[k][f"{op}_{sz}"].append(
                                    bw(bwt, f"rfs+ucx://{u}/sw.bin", sz, op, e))
                    finally:
                        p.terminate()
                        p.wait(timeout=30)
                    log(f"sweep rep {rep} rendezvous from {k} done")
                    loads.append(loadavg())
            sweep = {"rendezvous_from": SWEEP_MINS,
                     "median_mib_s": {k: {c: statistics.median(v) for c, v in runs[k].items()}
                                      for k in runs},
                     "runs": runs}

    mib = a.size_mib
    report = {"where": "loopback", "host": platform.node(), "size_mib": mib, "reps": a.reps,
              "lat_n": a.lat_n, "ucx_tls": os.environ.get("RFS_UCX_TLS", "^sm (default)"),
              "files_in": a.tmp or tempfile.gettempdir(),
              "note": "loopback only; UCX runs over tcp here (no RDMA device)",
              "loadavg_1min": {"min": min(loads), "median": statistics.median(loads),
                               "max": max(loads)}}
    for m in (res if not a.no_main else ()):
        report[m] = {
            "put_mib_s": mib / statistics.median(res[m]["put_s"]),
            "get_mib_s": mib / statistics.median(res[m]["get_s"]),
            "lat_median_us": statistics.median(res[m]["lat_us"]),
            "bw_median_mib_s": {k: statistics.median(v) for k, v in res[m]["bw"].items()},
            "runs": res[m],
        }
    ratio = {}
    for k, key in (("put", "put_s"), ("get", "get_s")) if not a.no_main else ():
        # throughput ratio ucx/tcp per repetition: time_tcp / time_ucx
        ratio[f"{k}_throughput_ucx_over_tcp"] = statistics.median(
            t / u for t, u in zip(res["tcp"][key], res["ucx"][key]))
    if not a.no_main:
        ratio["lat_ucx_over_tcp"] = statistics.median(
            u / t for t, u in zip(res["tcp"]["lat_us"], res["ucx"]["lat_us"]))
        ratio["bw_ucx_over_tcp"] = {
            k: statistics.median(u / t for t, u in zip(res["tcp"]["bw"][k], res["ucx"]["bw"][k]))
            for k in res["tcp"]["bw"]}
        report["ratios"] = ratio
    if inline:
        report["inline_sweep"] = inline
    if overlap:
        report["overlap"] = overlap
    if sweep:
        report["rndv_sweep"] = sweep
    Path(a.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
