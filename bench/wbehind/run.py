#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Two-stage write-behind (rfs_write_behind, issue #16 item 4) over the emulated WAN
(bench/wan): the BTIO-, FLASH-IO- and S3D-IO-like workloads of bench/apps at 4 ranks, each in
the same run through

  RAW    the same number of bytes copied client -> server over one TCP connection
         (bench/wan/tcpprobe.py into a discarding sink): what the link delivers
  COLL   rfs: names, collective writes (the workload as written), default hints
  INDEP  rfs: names, the workload's --independent writes, default hints (write window)
  WB     INDEP with rfs_write_behind=enable
  WBAUTO INDEP with rfs_write_behind=auto

Every run reads its files back and checks every word (the workloads' own verification), and
the files must be byte-identical to a LOCAL run's (the MPI library's own MPI-IO on a local
path, same seed). The time is the slowest rank's open + write + close (no computation; "io" in
the workloads' JSON): close includes the flush of whatever write-behind still holds. Until wb4
it was the sum of the three phases' maxima over ranks, which overstated write-behind (a rank
whose writes returned early waits longer in close); each run keeps it as phase_max_sum_s.
Goals (issue #16): WB >= COLL; FLASH-IO-like and S3D-IO-like WB >= 0.8 of RAW.

    bench/wbehind/run.py [--rate-mbit 500] [--delay-ms 10] [--ranks 4] [--reps 3]
        [--compress none] [--build-dir build] [--out bench/results/wbehind.json] [--large]
        [--only flashio] [--configs COLL,WB] [--env RFS_TRACE=1] [--dump-dir DIR]
        [--sample-link FILE]

--large: the same patterns at about 4x the bytes (LARGE below; --out elsewhere, e.g.
bench/results/wbehind_large.json). --configs, --env, --dump-dir and --sample-link are for
diagnosis: a run with only some configurations has no summary ratios. --sample-link samples
the client link device's transmitted bytes and the CPU use every 10 ms for the whole bench
(linksample.py); timeline.py lines them up with a run's RFS_TRACE=1 output from --dump-dir.

Compression is off by default (--compress): the workloads' pattern data compress well, and
RAW sends the bytes as they are.

Brings its own WAN up (RFS_WAN_NAME=wb, RFS_WAN_NET=10.86.0, 4 MiB socket buffer maxima,
cubic) and down again when none of that name is up. Needs root and the MPICH build. Run it
under `flock /tmp/rfs-bench.lock`."""
import argparse
import hashlib
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

os.environ.setdefault("RFS_WAN_NAME", "wb")
os.environ.setdefault("RFS_WAN_NET", "10.86.0")
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "bench" / "wan"))
import wanlib  # noqa: E402

PORT = 7070
PROBE_PORT = 5312
SEED = 23
STATS_RX = re.compile(r"write-behind: writes (\d+) \((\d+) bytes\), posts (\d+), flushes (\d+), "
                      r"direct (\d+) bytes, pages written (\d+) \((\d+) bytes\)")

WORKLOADS = {
    # runs of 32 cells x 5 doubles (1280 B) per rank, 5 dumps of 10.5 MB
    "btio": ["--n", "64", "--dumps", "5"],
    # 40 blocks of 16^3 cells (guard cells not written), 12 variables: 15.7 MB per rank
    "flashio": ["--blocks", "40", "--nxb", "16", "--guard", "4", "--vars", "12",
                "--checkpoints", "1"],
    # 40^3 points per rank, 16 variables: rows of 320 B, 8.2 MB per rank
    "s3dio": ["--local", "40", "--checkpoints", "1"],
}
# --large: the same patterns at about 4x the bytes, so open is a small part of the run and the
# link reaches its steady state: 160 blocks per rank (251 MB), 80^3 points per rank (262 MB),
# a 96^3 grid (rows of 48 cells, 1920 B) x 7 dumps of 35.4 MB (248 MB)
LARGE = {
    "btio": ["--n", "96", "--dumps", "7"],
    "flashio": ["--blocks", "160", "--nxb", "16", "--guard", "4", "--vars", "12",
                "--checkpoints", "1"],
    "s3dio": ["--local", "80", "--checkpoints", "1"],
}
CONFIGS = {
    "COLL": (False, ""),
    "INDEP": (True, ""),
    "WB": (True, "rfs_write_behind=enable"),
    "WBAUTO": (True, "rfs_write_behind=auto"),
}


def log(msg):
    print(f"wbehind bench: {msg}", file=sys.stderr, flush=True)


def digest(files):
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


class Bench:
    def __init__(self, a):
        self.a = a
        self.build = Path(a.build_dir).resolve()
        self.lib = self.build / "librfs-mpiio.so"
        if not self.lib.exists() or not (self.build / "rfsd").exists():
            raise wanlib.WanError(f"{self.build}: librfs-mpiio.so or rfsd not built")
        self.work = Path(tempfile.mkdtemp(prefix="rfs-wb-bench.", dir="/var/tmp"))
        self.work.chmod(0o755)
        self.export = self.work / "export"
        self.export.mkdir()
        self.apps = self.work / "apps"
        self.token = secrets.token_hex(16)
        self.rfsd = None
        self.sampler = None
        self.brought_up = False
        self.env = None
        self.workloads = LARGE if a.large else WORKLOADS
        self.configs = [c for c in CONFIGS if not a.configs or c in a.configs.split(",")]

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

    def prepare(self):
        subprocess.run(["make", "-s", "-C", str(REPO / "bench/apps"), "MPI=mpich",
                        f"BUILD={self.apps}"], check=True, timeout=300)
        tf = self.work / "token"
        tf.write_text(self.token)
        tf.chmod(0o600)
        if self.a.dump_dir:
            Path(self.a.dump_dir).mkdir(parents=True, exist_ok=True)
        if self.a.sample_link:
            self.sampler = wanlib.start(self.cli, ["/usr/bin/python3", str(HERE / "linksample.py"),
                                                   str(Path(self.a.sample_link).resolve()),
                                                   "--dev", self.env.get("RFS_WAN_DEV", "rfsw0")])
        self.rfsd = wanlib.start(self.srv, [str(self.build / "rfsd"), "--root", str(self.export),
                                            "--listen", f"{self.addr}:{PORT}", "--token-file",
                                            str(tf)],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        wanlib.wait_line(self.rfsd, "listening", 10)

    def raw(self, nbytes):
        """nbytes client -> server over one TCP connection, delivery confirmed."""
        probe = str(REPO / "bench/wan/tcpprobe.py")
        sink = wanlib.start(self.srv, ["/usr/bin/python3", probe, "serve", "--bind", self.addr,
                                       "--port", str(PROBE_PORT)],
                            stdout=subprocess.PIPE, text=True)
        try:
            wanlib.wait_line(sink, "ready", 10)
            p = wanlib.run(self.cli, ["/usr/bin/python3", probe, "send", "--host", self.addr,
                                      "--port", str(PROBE_PORT), "--bytes", str(nbytes)],
                           timeout=600)
            return {"seconds": json.loads(p.stdout)["seconds"], "bytes": nbytes}
        finally:
            wanlib.stop(sink)

    def app(self, app, config):
        n = self.a.ranks
        prog = str(self.apps / app)
        args = self.workloads[app] + ["--compute", "0", "--seed", str(SEED)]
        argv = ["mpiexec.mpich", "-n", str(n), "-genv", "UCX_TLS", "self,sm",
                "-genv", "LD_PRELOAD", ":".join(
                    [str(self.apps / "libidle_yield.so")] +
                    ([str(self.lib)] if config != "LOCAL" else []))]
        d = self.work / "local" if config == "LOCAL" else self.export / config.lower()
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        d.chmod(0o777)
        if config == "LOCAL":
            target, ns = str(d / "out"), None
        else:
            indep, hints = CONFIGS[config]
            if indep:
                args.append("--independent")
            target, ns = f"rfs:{self.addr}:{PORT}:/{config.lower()}/out", self.cli
            hints = ";".join(x for x in (f"rfs_compress={self.a.compress}", self.a.hints, hints)
                             if x)
            env = [("RFS_TOKEN", self.token), ("RFS_STATS", "1"), ("RFS_HINTS", hints)]
            env += [tuple(e.split("=", 1)) for e in self.a.env]
            for k, v in env:
                argv += ["-genv", k, v]
        if config == "LOCAL":
            args.append("--independent")
        p = wanlib.run(ns, argv + [prog, target] + args, timeout=900)
        res = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith('{"app"')][-1])
        if res.get("verify_errors") != 0:
            raise wanlib.WanError(f"{app} {config}: verification failed: {res}")
        t = res["time"]
        st = [list(map(int, m.groups())) for m in STATS_RX.finditer(p.stderr + p.stdout)]
        # "io" (bench/apps/common.c): the slowest rank's open + write + close. The sum of the
        # three phases' maxima (before wb4) overstated write-behind, whose ranks split the
        # same time differently between write and close; kept for comparison.
        phase_sum = t["open"] + t["write"] + t["close"]
        out = {"seconds": t.get("io", phase_sum), "phase_max_sum_s": round(phase_sum, 6),
               "bytes": res["bytes_written"],
               "phases": {k: t[k] for k in ("open", "write", "close")},
               "digest": digest(sorted(d.iterdir()))}
        ww = re.findall(r"write window: (\d+) writes returned before their reply", p.stderr + p.stdout)
        if ww:
            out["writes_returned_early"] = sum(map(int, ww))
        if self.a.keep_output:
            out["output"] = (p.stderr + p.stdout)[-4000:]
        if self.a.dump_dir:
            self.dumps = getattr(self, "dumps", 0) + 1
            Path(self.a.dump_dir, f"{self.dumps:03d}-{app}-{config}.txt").write_text(
                p.stderr + p.stdout)
        if st:
            tot = [sum(col) for col in zip(*st)]
            out["wb"] = dict(zip(["writes", "bytes", "posts", "flushes", "direct_bytes",
                                  "pages_written", "page_bytes"], tot))
        return out

    def run(self):
        runs = {}
        apps = [a for a in self.workloads if not self.a.only or a in self.a.only.split(",")]
        for app in apps:
            runs[f"{app}/LOCAL"] = [self.app(app, "LOCAL")]
        for rep in range(self.a.reps):
            for app in apps:
                nbytes = runs[f"{app}/LOCAL"][0]["bytes"]
                log(f"rep {rep + 1}/{self.a.reps}: {app} RAW ({nbytes} bytes)")
                runs.setdefault(f"{app}/RAW", []).append(self.raw(nbytes))
                for c in self.configs:
                    log(f"rep {rep + 1}/{self.a.reps}: {app} {c}")
                    runs.setdefault(f"{app}/{c}", []).append(self.app(app, c))
                    subprocess.run(["sync"], timeout=300)
        return runs


def med(rs):
    return statistics.median(r["seconds"] for r in rs)


def summarize(a, env, runs, workloads):
    out = {"bench": "wbehind",
           "link": {"rate_mbit": float(env["RFS_WAN_RATE_MBIT"]),
                    "delay_ms_one_way": float(env["RFS_WAN_DELAY_MS"]),
                    "rtt_ms": float(env["RFS_WAN_RTT_MS"]), "tcp_buf_max_mib": 4,
                    "congestion_control": "cubic"},
           "ranks": a.ranks, "reps": a.reps, "rfs_compress": a.compress, "workloads": workloads,
           "results": {},
           "goal": {}}
    for app in workloads:
        if f"{app}/LOCAL" not in runs:
            continue
        local = runs[f"{app}/LOCAL"][0]
        raw_s = med(runs[f"{app}/RAW"])
        nbytes = local["bytes"]
        res = {"bytes": nbytes,
               "RAW": {"median_s": round(raw_s, 3),
                       "mbit_s": round(nbytes * 8 / raw_s / 1e6, 1),
                       "runs_s": [r["seconds"] for r in runs[f"{app}/RAW"]]}}
        for c in CONFIGS:
            if f"{app}/{c}" not in runs:
                continue
            rs = runs[f"{app}/{c}"]
            if any(r["digest"] != local["digest"] for r in rs):
                raise wanlib.WanError(f"{app} {c}: files differ from LOCAL")
            m = med(rs)
            ent = {"median_s": round(m, 3), "mbit_s": round(nbytes * 8 / m / 1e6, 1),
                   "ratio_to_raw": round(raw_s / m, 3), "runs_s": [round(r["seconds"], 3) for r in rs],
                   "same_bytes_as_local": True,
                   "phase_max_sum_median_s": round(statistics.median(
                       r.get("phase_max_sum_s", r["seconds"]) for r in rs), 3),
                   "phases_median_run": sorted(rs, key=lambda r: r["seconds"])[len(rs) // 2]["phases"]}
            wb = sorted(rs, key=lambda r: r["seconds"])[len(rs) // 2].get("wb")
            if wb:
                ent["write_behind_median_run"] = wb
            res[c] = ent
        if any(c not in res for c in CONFIGS):
            out["results"][app] = res
            continue
        for c in ("INDEP", "WB", "WBAUTO"):
            res[c]["speedup_vs_coll"] = round(res["COLL"]["median_s"] / res[c]["median_s"], 3)
            res[c]["speedup_vs_indep"] = round(res["INDEP"]["median_s"] / res[c]["median_s"], 3)
        out["results"][app] = res
        out["goal"][f"{app}_wb_ge_coll"] = res["WB"]["median_s"] <= res["COLL"]["median_s"]
        if app != "btio":
            out["goal"][f"{app}_wb_ratio_to_raw"] = res["WB"]["ratio_to_raw"]
            out["goal"][f"{app}_wb_ge_0.8_raw"] = res["WB"]["ratio_to_raw"] >= 0.8
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate-mbit", type=float, default=500)
    ap.add_argument("--delay-ms", type=float, default=10)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--compress", default="none",
                    help="rfs_compress for every rfs run (none: the same bytes as RAW cross the link)")
    ap.add_argument("--keep-output", action="store_true", help="keep each run's output tail")
    ap.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    ap.add_argument("--hints", default="", help="extra RFS_HINTS for every rfs run")
    ap.add_argument("--large", action="store_true",
                    help="the workloads at about 4x the bytes (LARGE: 250-350 MB)")
    ap.add_argument("--env", action="append", default=[],
                    help="K=V for every rfs run (e.g. RFS_TRACE=1 with --dump-dir)")
    ap.add_argument("--configs", default="",
                    help="comma-separated configurations (diagnostics; the summary needs all)")
    ap.add_argument("--dump-dir", default="", help="keep every run's whole output there")
    ap.add_argument("--sample-link", default="",
                    help="write the client link's tx bytes and CPU use every 10 ms there")
    ap.add_argument("--build-dir", default=str(REPO / "build"))
    ap.add_argument("--out", default=str(REPO / "bench/results/wbehind.json"))
    a = ap.parse_args()
    b = Bench(a)
    t0 = time.monotonic()
    load0 = list(os.getloadavg())
    try:
        b.up()
        b.prepare()
        runs = b.run()
        out = summarize(a, b.env, runs, b.workloads)
        out["load_average"] = {"start": load0, "end": list(os.getloadavg())}
        out["bench_wall_s"] = round(time.monotonic() - t0, 1)
        wanlib.emit_json(out, a.out)
        return 0
    finally:
        wanlib.stop(b.rfsd)
        wanlib.stop(b.sampler)
        shutil.rmtree(b.work, ignore_errors=True)
        if b.brought_up:
            subprocess.run([str(REPO / "bench/wan/down")], timeout=60)


if __name__ == "__main__":
    sys.exit(main())
