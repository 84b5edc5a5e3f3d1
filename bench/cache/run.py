#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Read cache and prefetch over the emulated WAN (bench/wan): a sequential read of a whole file
and a strided read of a quarter of it (blocks at a fixed step, ranks interleaved), at 1 and 4
ranks, each in the same run through

  RAW        the same file's bytes copied server -> client over one TCP connection
             (bench/wan/tcpprobe.py, into a discarding sink): what the link delivers
  LOCAL      the MPI library's own MPI-IO reading the file on this machine (from the page
             cache: the ceiling, not a network figure)
  PREFETCH   rfs: names through librfs-mpiio.so, default hints (the file is opened
             MPI_MODE_RDONLY, so the read cache and automatic prefetch are on)
  NOPREFETCH the same with rfs_prefetch=disable (every read waits for its own round trip)

Each configuration runs --reps times, interleaved; every rfs run's data (an XOR of its 64-bit
words) must equal LOCAL's. Times are medians, from before MPI_File_open to after
MPI_File_close (between barriers). Goal (issue #16): the sequential 1 GiB read with prefetch
at >= 0.95 of RAW.

    bench/cache/run.py [--rate-mbit 500] [--delay-ms 10] [--size-mib 1024] [--reps 3]
        [--seq-block 4M] [--strided-block 256K] [--strided-stride 1M] [--build-dir build]
        [--out bench/results/cache_read.json]

Brings its own WAN up (RFS_WAN_NAME=ca, RFS_WAN_NET=10.83.0, 4 MiB socket buffer maxima, cubic)
and down again when none of that name is up. Needs root and the MPICH build. Run it under
`flock /tmp/rfs-bench.lock`."""
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

os.environ.setdefault("RFS_WAN_NAME", "ca")
os.environ.setdefault("RFS_WAN_NET", "10.83.0")
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "bench" / "wan"))
import wanlib  # noqa: E402

PORT = 7070
PROBE_PORT = 5311
STATS_RX = re.compile(r"read cache: reads (\d+), served from cache (\d+) \((\d+) bytes\), read on "
                      r"demand (\d+) bytes, prefetched (\d+) bytes, prefetched never read (\d+) "
                      r"bytes, prefetch failures (\d+)")


def log(msg):
    print(f"cache bench: {msg}", file=sys.stderr, flush=True)


def size_arg(s):
    mul = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    return int(s[:-1] if mul > 1 else s) * mul


class Bench:
    def __init__(self, a):
        self.a = a
        self.build = Path(a.build_dir).resolve()
        self.lib = self.build / "librfs-mpiio.so"
        if not self.lib.exists() or not (self.build / "rfsd").exists():
            raise wanlib.WanError(f"{self.build}: librfs-mpiio.so or rfsd not built")
        self.work = Path(tempfile.mkdtemp(prefix="rfs-cache-bench.", dir="/var/tmp"))
        self.work.chmod(0o755)
        self.export = self.work / "export"
        self.export.mkdir()
        self.data = self.export / "data.bin"
        self.prog = self.work / "cache_read"
        self.token = secrets.token_hex(16)
        self.rfsd = None
        self.brought_up = False
        self.env = None

    def up(self):
        try:
            self.env = wanlib.load_env()
            log(f"using the WAN that is up ({os.environ['RFS_WAN_NAME']})")
        except wanlib.WanError:
            log(f"bringing the WAN up: {self.a.rate_mbit} Mbit/s, {self.a.delay_ms} ms each way")
            subprocess.run([str(REPO / "bench/wan/up"), "--rate-mbit", str(self.a.rate_mbit),
                            "--delay-ms", str(self.a.delay_ms), "--tcp-buf-mb", "4", "--cc",
                            "cubic"], check=True, timeout=120)
            self.brought_up = True
            self.env = wanlib.load_env()
        self.cli = self.env["RFS_WAN_CLIENT_NS"]
        self.srv = self.env["RFS_WAN_SERVER_NS"]
        self.addr = self.env["RFS_WAN_SERVER_ADDR"]
        self.cli_addr = self.env["RFS_WAN_CLIENT_ADDR"]

    def prepare(self):
        log(f"writing {self.a.size_mib} MiB of random data")
        with open(self.data, "wb") as f:
            for _ in range(self.a.size_mib):
                f.write(os.urandom(1 << 20))
        self.data.chmod(0o644)
        subprocess.run(["sync"], timeout=300)
        subprocess.run(["mpicc.mpich", "-O2", "-o", str(self.prog), str(HERE / "cache_read.c")],
                       check=True, timeout=120)
        tf = self.work / "token"
        tf.write_text(self.token)
        tf.chmod(0o600)
        self.rfsd = wanlib.start(self.srv, [str(self.build / "rfsd"), "--root", str(self.export),
                                            "--listen", f"{self.addr}:{PORT}", "--token-file",
                                            str(tf)],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        wanlib.wait_line(self.rfsd, "listening", 10)

    def workload_args(self, kind):
        if kind == "seq":
            return ["seq", str(self.a.seq_block)]
        return ["strided", str(self.a.strided_block), str(self.a.strided_stride)]

    def raw(self):
        """The file's bytes server -> client over one TCP connection, delivery confirmed."""
        probe = str(REPO / "bench/wan/tcpprobe.py")
        sink = wanlib.start(self.cli, ["/usr/bin/python3", probe, "serve", "--bind", self.cli_addr,
                                       "--port", str(PROBE_PORT)],
                            stdout=subprocess.PIPE, text=True)
        try:
            wanlib.wait_line(sink, "ready", 10)
            p = wanlib.run(self.srv, ["/usr/bin/python3", probe, "send", "--host", self.cli_addr,
                                      "--port", str(PROBE_PORT), "--file", str(self.data)],
                           timeout=600)
            r = json.loads(p.stdout)
            return {"seconds": r["seconds"], "bytes": self.data.stat().st_size}
        finally:
            wanlib.stop(sink)

    def mpi(self, kind, nprocs, config):
        argv = ["mpiexec.mpich", "-n", str(nprocs), "-genv", "UCX_TLS", "self,sm"]
        if config == "LOCAL":
            target, ns = str(self.data), None
        else:
            target, ns = f"rfs:{self.addr}:{PORT}:/data.bin", self.cli
            hints = "rfs_prefetch=disable" if config == "NOPREFETCH" else ""
            for k, v in (("LD_PRELOAD", str(self.lib)), ("RFS_TOKEN", self.token),
                         ("RFS_STATS", "1"), ("RFS_HINTS", hints)):
                argv += ["-genv", k, v]
        argv += [str(self.prog), target] + self.workload_args(kind)
        p = wanlib.run(ns, argv, timeout=900)
        res = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1])
        st = [list(map(int, m.groups())) for m in STATS_RX.finditer(p.stderr + p.stdout)]
        if st:
            tot = [sum(col) for col in zip(*st)]
            res["cache"] = dict(zip(["reads", "reads_cached", "bytes_cached", "bytes_on_demand",
                                     "bytes_prefetched", "bytes_prefetched_unread",
                                     "prefetch_failures"], tot))
        return res

    def run(self):
        a = self.a
        runs = {}
        configs = [(k, n, c) for k in ("seq", "strided") for n in (1, 4)
                   for c in ("LOCAL", "PREFETCH", "NOPREFETCH")]
        for rep in range(a.reps):
            log(f"rep {rep + 1}/{a.reps}: RAW")
            runs.setdefault("RAW", []).append(self.raw())
            for kind, n, c in configs:
                log(f"rep {rep + 1}/{a.reps}: {kind} {n} rank(s) {c}")
                runs.setdefault(f"{kind}/{n}/{c}", []).append(self.mpi(kind, n, c))
        return runs


def median_of(rs, key="seconds"):
    return statistics.median(r[key] for r in rs)


def summarize(a, env, runs):
    raw_s = median_of(runs["RAW"])
    raw_bytes = runs["RAW"][0]["bytes"]
    raw_mbit = raw_bytes * 8 / raw_s / 1e6
    out = {"bench": "cache_read",
           "link": {"rate_mbit": float(env["RFS_WAN_RATE_MBIT"]),
                    "delay_ms_one_way": float(env["RFS_WAN_DELAY_MS"]),
                    "rtt_ms": float(env["RFS_WAN_RTT_MS"]), "tcp_buf_max_mib": 4,
                    "congestion_control": "cubic"},
           "file_bytes": raw_bytes, "reps": a.reps,
           "seq_block": a.seq_block, "strided_block": a.strided_block,
           "strided_stride": a.strided_stride,
           "raw": {"median_s": round(raw_s, 3), "mbit_s": round(raw_mbit, 1),
                   "runs_s": [r["seconds"] for r in runs["RAW"]]},
           "results": {}, "goal": {}}
    for key, rs in runs.items():
        if key == "RAW":
            continue
        kind, n, c = key.split("/")
        local = runs[f"{kind}/{n}/LOCAL"]
        xor = local[0]["xor"]
        if any(r["xor"] != xor or r["bytes"] != local[0]["bytes"] for r in rs):
            raise wanlib.WanError(f"{key}: data differ from LOCAL")
        med = median_of(rs)
        nbytes = rs[0]["bytes"]
        mbit = nbytes * 8 / med / 1e6
        ent = {"median_s": round(med, 3), "bytes": nbytes, "mbit_s": round(mbit, 1),
               "runs_s": [r["seconds"] for r in rs], "same_bytes_as_local": True}
        if c != "LOCAL":
            ent["ratio_to_raw"] = round(mbit / raw_mbit, 3)
            ent["time_vs_local"] = round(med / median_of(local), 2)
            if "cache" in rs[0]:
                ent["cache_median_run"] = sorted(rs, key=lambda r: r["seconds"])[len(rs) // 2]["cache"]
        out["results"].setdefault(kind, {}).setdefault(f"{n}_ranks", {})[c] = ent
    for n in (1, 4):
        r = out["results"]["seq"][f"{n}_ranks"]["PREFETCH"]["ratio_to_raw"]
        out["goal"][f"seq_{n}_ranks_prefetch_ratio_to_raw"] = r
        out["goal"][f"seq_{n}_ranks_met"] = r >= 0.95
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate-mbit", type=float, default=500)
    ap.add_argument("--delay-ms", type=float, default=10)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seq-block", type=size_arg, default=4 << 20)
    ap.add_argument("--strided-block", type=size_arg, default=256 << 10)
    ap.add_argument("--strided-stride", type=size_arg, default=1 << 20)
    ap.add_argument("--build-dir", default=str(REPO / "build"))
    ap.add_argument("--out", default=str(REPO / "bench/results/cache_read.json"))
    a = ap.parse_args()
    b = Bench(a)
    t0 = time.monotonic()
    try:
        b.up()
        b.prepare()
        runs = b.run()
        out = summarize(a, b.env, runs)
        out["bench_wall_s"] = round(time.monotonic() - t0, 1)
        wanlib.emit_json(out, a.out)
        return 0
    finally:
        wanlib.stop(b.rfsd)
        shutil.rmtree(b.work, ignore_errors=True)
        if b.brought_up:
            subprocess.run([str(REPO / "bench/wan/down")], timeout=60)


if __name__ == "__main__":
    sys.exit(main())
