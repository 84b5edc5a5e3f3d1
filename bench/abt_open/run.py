#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""What an ABT open costs over the WAN testbed: file versions in the OPEN reply (rfsd with
RFS_FEAT_VER) against the STAT after the OPEN that ABT sends to a server without them
(RFS_FILE_VERSIONS=off makes the client act so), measured in the same run.

bench/abt_open/opens.c opens --files files one after the other through ABT (one 64 KiB write
and a close each, like a program writing one checkpoint file per output), on a pooled
connection; each file after the first is timed: its open (open + ABT wrap) and its close
(write + close, which waits for the delivery and the file version noted after it). The two
modes alternate, run by run (--reps each); the report gives per mode the median over runs of
the per-run median, and their ratios. A run with RFS_TRACE=1 per mode counts the OPEN and
STAT requests per file.

    RFS_WAN_NAME=ver bench/abt_open/run.py [--build-dir build] [--files 10] [--reps 5]
        [--loopback]

Needs the WAN named by RFS_WAN_NAME (bench/wan/up first), or --loopback (no WAN: a smoke test
of the driver). Starts its own rfsd inside the server namespace (temporary root and token) and
stops every process it started by PID. Prints JSON and writes bench/results/abt_open.json
(--out to change)."""
import argparse
import datetime
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "bench" / "wan"))
import wanlib  # noqa: E402

MODES = {"versions": "on", "stat": "off"}


def compile_driver(build, out):
    libs = ["abt/librfs_abt.a", "client/librfs_client.a", "transport/librfs_transport.a",
            "proto/librfs_proto.a", "common/librfs_common.a"]
    cmd = [os.environ.get("CC", "cc"), "-O2", "-Wall", "-I", str(REPO / "include"), "-I",
           str(REPO), "-o", str(out), str(HERE / "opens.c")] + [str(build / l) for l in libs] + \
        ["-lssl", "-lcrypto", "-llz4", "-lzstd", "-lpthread"]
    subprocess.run(cmd, check=True, timeout=120)


def run_opens(ns, driver, url_prefix, staging, n, env, timeout=300):
    p = wanlib.run(ns, [str(driver), url_prefix, str(staging), str(n)], timeout=timeout,
                   env=env)
    got = {k: [float(l.split()[2]) for l in p.stdout.splitlines() if l.startswith(k + " ")]
           for k in ("open_ms", "close_ms")}
    assert all(len(v) == n for v in got.values()), p.stdout + p.stderr
    return got, p.stderr


def requests_per_file(trace, n):
    sent = [l.split()[5] for l in trace.splitlines() if " send " in l]
    return {op: round(sent.count(op) / n, 2) for op in ("OPEN", "STAT")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build-dir", default=str(REPO / "build"))
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--loopback", action="store_true")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "abt_open.json"))
    a = ap.parse_args()
    build = Path(a.build_dir).resolve()
    if a.loopback:
        wan = {"RFS_WAN_RTT_MS": "0", "RFS_WAN_RATE_MBIT": "-"}
        cli_ns = srv_ns = None
        addr = "127.0.0.1"
    else:
        wan = wanlib.load_env()
        cli_ns, srv_ns = wan["RFS_WAN_CLIENT_NS"], wan["RFS_WAN_SERVER_NS"]
        addr = wan["RFS_WAN_SERVER_ADDR"]
    tmp = Path(tempfile.mkdtemp(prefix="rfs-abt-open-"))
    srv = None
    try:
        driver = tmp / "opens"
        compile_driver(build, driver)
        root, staging = tmp / "export", tmp / "staging"
        root.mkdir()
        staging.mkdir()
        token = secrets.token_hex(16)
        (tmp / "token").write_text(token)
        (tmp / "token").chmod(0o600)
        srv = wanlib.start(srv_ns, [str(build / "rfsd"), "--root", str(root), "--listen",
                                    f"{addr}:0", "--token-file", str(tmp / "token")],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = srv.stdout.readline()
        assert line.startswith("rfsd listening on "), line
        port = line.split()[-1].rsplit(":", 1)[1]
        env = dict(os.environ, RFS_TOKEN=token, RFS_CONFIG="")
        env.pop("RFS_TOKEN_FILE", None)
        url = f"rfs:{addr}:{port}:/ckpt"
        per_file, runs = {}, {k: {m: [] for m in MODES} for k in ("open_ms", "close_ms")}
        for m, flag in MODES.items():
            _, trace = run_opens(cli_ns, driver, url, staging, 3,
                                 dict(env, RFS_FILE_VERSIONS=flag, RFS_TRACE="1"))
            per_file[m] = requests_per_file(trace, 3)
        for _ in range(a.reps):
            for m, flag in MODES.items():
                got, _ = run_opens(cli_ns, driver, url, staging, a.files,
                                   dict(env, RFS_FILE_VERSIONS=flag))
                for k, ms in got.items():
                    runs[k][m].append(statistics.median(ms[1:]))  # the first also connects
        med = {k: {m: statistics.median(v) for m, v in r.items()} for k, r in runs.items()}
        result = {
            "bench": "abt_open",
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "link": {"rtt_ms": float(wan["RFS_WAN_RTT_MS"]), "rate_mbit": wan["RFS_WAN_RATE_MBIT"],
                     "loopback": a.loopback},
            "files": a.files, "reps": a.reps,
            # OPEN and STAT requests per file (open, one write, close)
            "requests_per_file": per_file,
        }
        for k in ("open_ms", "close_ms"):
            result[k + "_median"] = {m: round(v, 2) for m, v in med[k].items()}
            result[k + "_runs"] = {m: [round(x, 2) for x in v] for m, v in runs[k].items()}
            result[k + "_ratio_versions_over_stat"] = (
                round(med[k]["versions"] / med[k]["stat"], 3) if med[k]["stat"] > 0 else None)
        text = json.dumps(result, indent=1)
        print(text)
        if a.out:
            Path(a.out).write_text(text + "\n")
    finally:
        wanlib.stop(srv)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
