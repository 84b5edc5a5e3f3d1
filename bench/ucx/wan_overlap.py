#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Overlap of a compute loop with nonblocking writes where the I/O is the network's: bench/ucx/
overlap.c (MPICH, one rank, librfs-mpiio preloaded) in the client namespace of the emulated WAN
(bench/wan/up: a tbf rate limit and a packet delay stage), rfsd in the server namespace serving
TCP and UCX. Paths compared, in the same run, order rotating between repetitions:

  tcp-threads   rfs://      MPI_File_iwrite_at on librfs-mpiio's I/O threads (the TCP default)
  ucx-threads   rfs+ucx://  the same threads over UCX (rfs_nb_native=disable)
  ucx-native    rfs+ucx://  native nonblocking: no I/O thread (rfs_nb_native=auto, the default)
  tcp-native    rfs://      the native path forced onto TCP (rfs_nb_native=enable)

Each run measures I/O alone, then per compute/I-O ratio (--ratios) compute alone (calibrated
to that ratio of the I/O phase's time) and both, with --depth writes in flight (2: the
double-buffered loop); the reference is semplar's max(compute, I/O), so "of_max" = speedup /
((c + io) / max(c, io)). By default one untimed write precedes each "both" phase (TCP restarts
its congestion window after the idle compute-alone phase; --cold leaves that in, as the first
session did). --env sets UCX/rfs variables for rfsd and the client. Rows (mode, depth, ratio,
warm/cold, env) are added to --out after every repetition, with every iteration's post,
compute and wait times and the machine's load (bench/results/notes/ucx.md).
Every mode runs with --common-hints (default rfs_write_window=0): with the write window a
write of one frame returns once it is in the socket buffer (64 MiB on this WAN), so the I/O
threads' "I/O" phase would time copies into the kernel, not the link, and the native path
(whose request completes on the server's reply) would be compared with something else.

UCX over TCP between the namespaces: rfs's own UCX context uses its default transports (^sm:
tcp here, there is no RDMA device) on the WAN device only (RFS_UCX_NET_DEVICES=rfsw0, both
sides); MPICH's own UCX gets UCX_TLS=self,sm (it cannot init inside a namespace otherwise).

Usage: RFS_WAN_NAME=u4 RFS_WAN_NET=10.79.11 bench/wan/up --rate-mbit 100 --delay-ms 25
       flock /tmp/rfs-bench.lock bench/ucx/wan_overlap.py [--reps 5] [--chunk-mib 4]
           [--iters 12] [--modes tcp-threads,ucx-threads,ucx-native,tcp-native]
           [--ratios 0.5,1,2] [--depth 1|2] [--cold] [--env NAME=VALUE]... [--trace-dir DIR]
           [--replace] [--out bench/results/ucx_overlap_wan.json]
(RFS_WAN_NAME selects the WAN, as for bench/wan/env.)"""
import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TCP_PORT, UCX_PORT = 7070, 7071
MODES = {
    "tcp-threads": ("tcp", "rfs_nb_native=disable"),
    "ucx-threads": ("ucx", "rfs_nb_native=disable"),
    "ucx-native": ("ucx", ""),
    "tcp-native": ("tcp", "rfs_nb_native=enable"),
}


def log(msg):
    print(f"bench/ucx/wan: {msg}", file=sys.stderr, flush=True)


def wan_config():
    state = os.environ.get("RFS_WAN_STATE_DIR") or f"/run/{os.environ.get('RFS_WAN_NAME', 'rfs')}-wan"
    conf = Path(state) / "config.env"
    if not conf.exists():
        sys.exit(f"no WAN is up at {state} (bench/wan/up; RFS_WAN_NAME)")
    cfg = {}
    for line in conf.read_text().splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            cfg[k] = v
    return cfg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=str(REPO / "build"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--chunk-mib", type=float, default=4)
    ap.add_argument("--iters", type=int, default=12)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--common-hints", default="rfs_write_window=0;rfs_compress=none")
    ap.add_argument("--ratios", default="1", help="compute/I-O ratios, comma-separated")
    ap.add_argument("--depth", type=int, default=1, choices=(1, 2),
                    help="writes in flight: 1 iwrite-compute-wait, 2 double-buffered")
    ap.add_argument("--cold", action="store_true",
                    help="no untimed write before each 'both' phase (see overlap.c WARM)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="set in rfsd's and the client's environment (UCX_*, RFS_UCX_*, "
                         "RFS_TCP_CONGESTION); recorded in the rows")
    ap.add_argument("--trace-dir", help="RFS_TRACE=1 and keep each run's stderr here")
    ap.add_argument("--replace", action="store_true",
                    help="start --out afresh instead of adding these rows to it")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "ucx_overlap_wan.json"))
    a = ap.parse_args()
    ratios = [float(x) for x in a.ratios.split(",")]
    extra_env = dict(x.split("=", 1) for x in a.env)
    build = Path(a.build_dir).resolve()
    modes = a.modes.split(",")
    for m in modes:
        if m not in MODES:
            sys.exit(f"unknown mode {m}")
    cfg = wan_config()
    cli = ["ip", "netns", "exec", cfg["RFS_WAN_CLIENT_NS"]]
    srv = ["ip", "netns", "exec", cfg["RFS_WAN_SERVER_NS"]]
    addr, dev = cfg["RFS_WAN_SERVER_ADDR"], cfg["RFS_WAN_DEV"]
    chunk = int(a.chunk_mib * (1 << 20))

    with tempfile.TemporaryDirectory(prefix="rfs-bench-ucxwan-") as w:
        work = Path(w)
        ovl = work / "overlap"
        subprocess.run(["mpicc.mpich", "-O2", "-Wall", "-o", str(ovl),
                        str(REPO / "bench" / "ucx" / "overlap.c")], check=True)
        root = work / "export"
        root.mkdir()
        tok = work / "token"
        tok.write_text(secrets.token_hex(16))
        tok.chmod(0o600)
        env = {**os.environ, "RFS_CONFIG": "", "RFS_UCX_NET_DEVICES": dev}
        for k in ("RFS_UCX_TLS", "RFS_UCX_INLINE_MAX", "RFS_UCX_RNDV_MIN", "RFS_HINTS",
                  "RFS_TCP_CONGESTION"):
            env.pop(k, None)
        env.update(extra_env)
        genv = [x for k, v in extra_env.items() for x in ("-genv", k, v)]
        rfsd = subprocess.Popen(srv + [str(build / "rfsd"), "--root", str(root), "--listen",
                                       f"{addr}:{TCP_PORT}", "--ucx-listen", f"{addr}:{UCX_PORT}",
                                       "--token-file", str(tok), "--log-level", "warn"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                env=env)
        try:
            for _ in range(2):  # both listeners up
                line = rfsd.stdout.readline()
                if not line.startswith("rfsd listening"):
                    sys.exit(f"rfsd did not start: {line!r}")
            urls = {"tcp": f"rfs://{addr}:{TCP_PORT}", "ucx": f"rfs+ucx://{addr}:{UCX_PORT}"}
            runs = {m: [] for m in modes}
            for rep in range(a.reps):
                order = modes[rep % len(modes):] + modes[:rep % len(modes)]
                for m in order:
                    transport, hints = MODES[m]
                    cmd = cli + ["mpiexec.mpich", "-n", "1", "-genv", "UCX_TLS", "self,sm",
                                 "-genv", "RFS_UCX_NET_DEVICES", dev,
                                 "-genv", "RFS_TOKEN", tok.read_text(), "-genv", "RFS_CONFIG", "",
                                 "-genv", "RFS_HINTS",
                                 ";".join(h for h in (a.common_hints, hints) if h),
                                 "-genv", "RFS_TRACE", "1" if a.trace_dir else "0", *genv,
                                 "-genv", "LD_PRELOAD", str(build / "librfs-mpiio.so"),
                                 str(ovl), f"{urls[transport]}/ovl-{m}.bin", str(chunk),
                                 str(a.iters), a.ratios, str(a.depth), "0" if a.cold else "1"]
                    load0 = os.getloadavg()[0]
                    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
                    if p.returncode != 0:
                        raise RuntimeError(f"{m}: overlap failed:\n{p.stdout}\n{p.stderr}")
                    if a.trace_dir:
                        Path(a.trace_dir, f"{m}-d{a.depth}-rep{rep}.trace").write_text(p.stderr)
                    runs[m].append(json.loads(p.stdout.strip().splitlines()[-1]))
                    # other users of this 2-core machine: the 1-minute load around the run
                    runs[m][-1]["loadavg_1min"] = [load0, os.getloadavg()[0]]
                    (root / f"ovl-{m}.bin").unlink(missing_ok=True)
                save(a, cfg, dev, chunk, ratios, extra_env, modes, runs)
                log(f"rep {rep}: " + ", ".join(
                    f"{m} " + "/".join(f"{x['of_max']:.3f}" for x in runs[m][-1]["ratios"])
                    for m in modes))
        finally:
            rfsd.terminate()
            rfsd.wait(timeout=30)

    rows = save(a, cfg, dev, chunk, ratios, extra_env, modes, runs)
    for r in rows:
        md = r["median"]
        env = " ".join(f"{k}={v}" for k, v in r["env"].items())
        print(f"{r['mode']:12} {env} depth {r['depth']} ratio {r['ratio']:<4} io {md['io_s']:.3f} "
              f"c {md['compute_s']:.3f} both {md['both_s']:.3f} of_max {md['of_max']:.3f} "
              f"(runs {min(r['of_max_runs']):.3f}-{max(r['of_max_runs']):.3f}) "
              f"stretch {md['compute_stretch_s']:.3f} wait {md['wait_s']:.3f} "
              f"io_cpu {md['io_cpu_s']:.3f}")


def save(a, cfg, dev, chunk, ratios, extra_env, modes, runs):
    """Adds (or replaces) this invocation's rows in --out; called after every repetition, so a
    run cut short keeps what it measured."""
    rows = [row(m, a.depth, k, not a.cold, extra_env, runs[m])
            for m in modes for k in range(len(ratios))]
    out = Path(a.out)
    report = json.loads(out.read_text()) if out.exists() and not a.replace else {}
    if "rows" not in report:  # a fresh file, or one in the layout before rows
        report = {"rows": []}
    report.update({
        "where": "emulated WAN (bench/wan): tbf rate limit + packet delay, namespaces",
        "link": {k: cfg.get(k) for k in ("RFS_WAN_RATE_MBIT", "RFS_WAN_DELAY_MS", "RFS_WAN_RTT_MS",
                                         "RFS_WAN_MTU", "RFS_WAN_TCP_CC")},
        "program": "bench/ucx/overlap.c (MPICH, 1 rank): depth 1: iwrite i, compute, wait i; "
                   "depth 2 (double-buffered): iwrite i, compute, wait i-1",
        "chunk": chunk, "iters": a.iters, "reps": a.reps,
        "reference": "semplar: max(compute, I/O), the I/O phase measured alone with the same "
                     "depth; of_max = speedup / ((c + io) / max(c, io))",
        "ucx": {"rfs_ucx_tls": "^sm (default: tcp here)", "RFS_UCX_NET_DEVICES": dev,
                "mpich_UCX_TLS": "self,sm"},
        "common_hints": a.common_hints,
        "modes": {m: {"transport": MODES[m][0], "hints": MODES[m][1]} for m in MODES},
    })
    new_keys = {row_key(r) for r in rows}
    report["rows"] = [r for r in report["rows"] if row_key(r) not in new_keys] + rows
    out.write_text(json.dumps(report, indent=1) + "\n")
    return rows


def row_key(r):
    return (r["mode"], r["depth"], r["ratio"], r["warm"], tuple(sorted(r["env"].items())))


def row(mode, depth, k, warm, extra_env, runs):
    """One configuration's runs (ratio index k of each) as a row with medians."""
    flat = []
    for o in runs:
        r = o["ratios"][k]
        both_c = sum(r["both_compute_ms"]) / 1e3
        flat.append({
            "io_s": o["io_s"], "compute_s": r["compute_s"], "both_s": r["both_s"],
            "speedup": r["speedup"], "max_speedup": r["max_speedup"], "of_max": r["of_max"],
            # where "both" lost time against max(compute, I/O): the compute loop running
            # longer than alone (CPU taken by the I/O), the waits, the posts
            "loss_s": r["both_s"] - max(o["io_s"], r["compute_s"]),
            "compute_stretch_s": both_c - r["compute_s"],
            "wait_s": sum(r["both_wait_ms"]) / 1e3, "post_s": sum(r["both_post_ms"]) / 1e3,
            # the client process's CPU beyond the compute loop: the I/O's own cost
            "io_cpu_s": o["io_cpu_s"], "both_extra_cpu_s": r["both_cpu_s"] - both_c,
            "io_iter_ms": o["io_iter_ms"], "compute_iter_ms": r["compute_iter_ms"],
            "both_post_ms": r["both_post_ms"], "both_compute_ms": r["both_compute_ms"],
            "both_wait_ms": r["both_wait_ms"], "loadavg_1min": o["loadavg_1min"],
        })
    keys = ("io_s", "compute_s", "both_s", "speedup", "max_speedup", "of_max", "loss_s",
            "compute_stretch_s", "wait_s", "post_s", "io_cpu_s", "both_extra_cpu_s")
    return {"mode": mode, "depth": depth, "ratio": runs[0]["ratios"][k]["ratio"], "warm": warm,
            "env": extra_env,
            "median": {key: round(statistics.median(f[key] for f in flat), 4) for key in keys},
            "of_max_runs": [f["of_max"] for f in flat], "runs": flat,
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


if __name__ == "__main__":
    main()
