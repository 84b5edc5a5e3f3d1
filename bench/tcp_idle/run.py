#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Checkpoints after a pause on a long link: how TCP's restart after idle slows them, and what
each remedy gives back (docs/tuning.md).

An application writes a snapshot, computes, writes the next. With a loss-based congestion
control (cubic, Linux's default) and net.ipv4.tcp_slow_start_after_idle=1 (also the default),
the sender's congestion window falls back to the initial window after any pause longer than
the retransmission timeout, so every snapshot starts in slow start again. For writes the client
is the sender, for reads rfsd is.

Runs on the WAN testbed (bench/wan/up; RFS_WAN_NAME selects the link). One rfsd per congestion
control in the server namespace; bench/tcp_idle/snapio.c (compiled here against librfs) does
COUNT calls of SIZE on one connection with PAUSE_MS between them. Configurations, interleaved in
every repetition, for writes (client sends) and reads (rfsd sends):
  cubic          RFS_TCP_CONGESTION=cubic / rfsd --tcp-congestion cubic, sysctl at 1
  cubic+noidle   the same with net.ipv4.tcp_slow_start_after_idle=0 in the sender's namespace
  bbr            RFS_TCP_CONGESTION=bbr / rfsd --tcp-congestion bbr, sysctl at 1
  steady         cubic without pauses: the window stays open (the reference)
The first call of each run (a fresh connection's slow start) is reported apart; the others are
"after a pause". The sysctl is changed only inside the testbed's namespaces and restored.

Usage: bench/tcp_idle/run.py [--build-dir build] [--sizes-kib 4096,16384] [--count 5]
                             [--pause-ms 1000] [--reps 3]
Prints JSON and writes bench/results/tcp_idle.json."""
import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "wan"))
import wanlib  # noqa: E402

SYSCTL = "net.ipv4.tcp_slow_start_after_idle"
CONFIGS = ("cubic", "cubic+noidle", "bbr", "steady")


def log(msg):
    print(f"bench/tcp_idle: {msg}", file=sys.stderr, flush=True)


def get_sysctl(ns):
    return subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-n", SYSCTL], check=True,
                          capture_output=True, text=True).stdout.strip()


def set_sysctl(ns, value):
    subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"{SYSCTL}={value}"], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=str(REPO / "build"))
    ap.add_argument("--sizes-kib", default="4096,16384")
    ap.add_argument("--count", type=int, default=5)
    ap.add_argument("--pause-ms", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "tcp_idle.json"))
    a = ap.parse_args()
    build = Path(a.build_dir).resolve()
    env_w = wanlib.load_env()
    cli_ns, srv_ns = env_w["RFS_WAN_CLIENT_NS"], env_w["RFS_WAN_SERVER_NS"]
    addr = env_w["RFS_WAN_SERVER_ADDR"]
    sizes = [int(x) for x in a.sizes_kib.split(",")]
    work = Path(tempfile.mkdtemp(prefix="rfs-tcp-idle.", dir="/dev/shm"))
    saved = {cli_ns: get_sysctl(cli_ns), srv_ns: get_sysctl(srv_ns)}
    servers = {}
    try:
        exe = work / "snapio"
        subprocess.run(["cc", "-O2", "-std=c11", "-I", str(REPO / "include"), "-o", str(exe),
                        str(Path(__file__).with_name("snapio.c")), "-L", str(build), "-lrfs",
                        f"-Wl,-rpath,{build}"], check=True)
        root = work / "export"
        root.mkdir()
        token = secrets.token_hex(16)
        (work / "token").write_text(token)
        (work / "token").chmod(0o600)
        for i, cc in enumerate(("cubic", "bbr")):
            port = 7170 + i
            p = wanlib.start(srv_ns, [str(build / "rfsd"), "--root", str(root), "--listen",
                                      f"{addr}:{port}", "--token-file", str(work / "token"),
                                      "--tcp-congestion", cc, "--log-level", "warn"],
                             stdout=subprocess.PIPE, text=True)
            wanlib.wait_line(p, "rfsd listening on", 20)
            servers[cc] = (p, port)
        env = dict(os.environ, RFS_TOKEN=token)
        env.pop("RFS_TOKEN_FILE", None)

        def snapio(direction, cc, size, pause):
            port = servers[cc][1]
            e = dict(env, RFS_TCP_CONGESTION=cc)
            r = subprocess.run(["ip", "netns", "exec", cli_ns, str(exe),
                                f"rfs:{addr}:{port}:/snap-{size}.bin", direction, str(size),
                                str(a.count), str(pause)], env=e, capture_output=True, text=True,
                               timeout=600)
            if r.returncode != 0:
                raise RuntimeError(f"snapio failed: {r.stderr}")
            return json.loads(r.stdout)["ms"]

        samples = {d: {s: {c: {"first": [], "after_pause": []} for c in CONFIGS} for s in sizes}
                   for d in ("write", "read")}
        for rep in range(a.reps):
            for size in sizes:
                # The files the reads need, written once per size without pauses.
                for cc in servers:
                    snapio("write", cc, size, 0)
                for d in ("write", "read"):
                    sender_ns = cli_ns if d == "write" else srv_ns
                    for c in CONFIGS:
                        set_sysctl(sender_ns, "0" if c == "cubic+noidle" else "1")
                        cc = "bbr" if c == "bbr" else "cubic"
                        ms = snapio(d, cc, size, 0 if c == "steady" else a.pause_ms)
                        set_sysctl(sender_ns, saved[sender_ns])
                        samples[d][size][c]["first"].append(ms[0])
                        samples[d][size][c]["after_pause"] += ms[1:]
                        log(f"rep {rep + 1}/{a.reps} {d} {size} KiB {c}: first {ms[0]:.0f} ms, "
                            f"then " + " ".join(f"{x:.0f}" for x in ms[1:]))
        med = {d: {str(s): {c: {k: statistics.median(v) for k, v in x.items()}
                            for c, x in by_c.items()} for s, by_c in by_s.items()}
               for d, by_s in samples.items()}
        ratios = {}
        for d in med:
            for s, m in med[d].items():
                base = m["steady"]["after_pause"]
                ratios[f"{d} {s} KiB"] = {
                    f"{c} / steady": round(m[c]["after_pause"] / base, 3) for c in CONFIGS if c != "steady"}
        result = {
            "benchmark": "tcp_idle",
            "what": "one connection, COUNT calls of SIZE with a pause between them; medians in ms",
            "link": {k: env_w.get(k) for k in ("RFS_WAN_RATE_MBIT", "RFS_WAN_RTT_MS", "RFS_WAN_MTU")},
            "count": a.count,
            "pause_ms": a.pause_ms,
            "reps": a.reps,
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "load_avg": os.getloadavg(),
            "median_ms": med,
            "ratios_after_pause": ratios,
            "samples_ms": {d: {str(s): v for s, v in by_s.items()} for d, by_s in samples.items()},
        }
        text = json.dumps(result, indent=2)
        print(text)
        Path(a.out).write_text(text + "\n")
    finally:
        for ns, v in saved.items():
            set_sysctl(ns, v)
        for p, _ in servers.values():
            wanlib.stop(p)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
