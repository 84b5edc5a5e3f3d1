#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Striped write bandwidth over 1, 2 and 4 loopback rfsd (issue #17, docs/manifest.md).

romio_perf (bench/apps) with --ranks processes, each writing --size-mib to a shared file
through librfs-mpiio.so, in these configurations, interleaved by repetition so load drift
hits every one alike:
  - plain:  an ordinary rfs file on server 0 (the reference; ratios are to it, same run);
  - 1x1:    a logical file (.rfsm) on server 0 alone: the manifest layer's own cost;
  - 2x1, 4x1: striped over 2 and 4 servers (--stripe-size units), one replica;
  - 2x2, 4x2: the same with 2 replicas (every byte written twice).
Reported per configuration (medians of --reps): write (MPI_File_write_at, what the application
waits for), write_sync (write + MPI_File_sync: on the servers' disks) and read bandwidths, as
romio_perf measures them (max time over ranks). All servers share this machine's cores and
disk: on loopback, striping shows the layer's cost and its parallelism, not the gain of
independent servers' links and disks. Every process started is stopped by PID.

    make -C bench/apps
    flock /tmp/rfs-bench.lock /usr/bin/python3 bench/manifest/run.py [--ranks 4]
        [--size-mib 32] [--reps 3] [--stripe-size 1M] [--out bench/results/manifest_loopback.json]
"""
import argparse
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def start_rfsd(build, root, token_file):
    p = subprocess.Popen([os.path.join(build, "rfsd"), "--root", root, "--listen", "127.0.0.1:0",
                          "--token-file", token_file], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    if not line.startswith("rfsd listening on "):
        p.kill()
        raise RuntimeError(f"rfsd did not start: {line!r}")
    return p, line.split()[-1]


def run_config(args, servers, name, count, replicas, env):
    lib = os.path.join(args.build, "librfs-mpiio.so")
    app = os.path.join(REPO, "bench", ".build", "mpich", "romio_perf")
    if name == "plain":
        target = f"rfs://{servers[0]}/plain.dat"
        hints = ""
    else:
        target = f"rfs://{servers[0]}/{name}.rfsm"
        hints = (f"rfs_servers={','.join('rfs://' + s for s in servers[:count])};"
                 f"rfs_stripe_size={args.stripe_size};rfs_stripe_count={count};"
                 f"rfs_replicas={replicas}")
    cmd = ["mpiexec.mpich", "-n", str(args.ranks), "-genv", "UCX_TLS", "self,sm",
           "-genv", "LD_PRELOAD", lib, "-genv", "RFS_HINTS", hints,
           app, target, "--size", str(args.size_mib << 20)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    line = next((x for x in r.stdout.splitlines() if x.startswith("{")), None)
    if r.returncode != 0 or not line:
        raise RuntimeError(f"{name}: romio_perf failed:\n{r.stdout}\n{r.stderr}")
    out = json.loads(line)
    if out.get("verify") != "ok":
        raise RuntimeError(f"{name}: data did not verify: {line}")
    total = out["bytes_written"]
    return {"write_MBps": out["write_bw_MBps"],
            "write_sync_MBps": total / out["time"]["write_sync"] / 1e6,
            "read_MBps": out["read_bw_MBps"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--size-mib", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--stripe-size", default="1M")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results",
                                                  "manifest_loopback.json"))
    args = ap.parse_args()
    configs = [("plain", 1, 1), ("1x1", 1, 1), ("2x1", 2, 1), ("4x1", 4, 1), ("2x2", 2, 2),
               ("4x2", 4, 2)]
    base = tempfile.mkdtemp(prefix="rfs-bench-manifest.")
    procs = []
    try:
        token = secrets.token_hex(16)
        tf = os.path.join(base, "token")
        with open(tf, "w") as f:
            f.write(token)
        os.chmod(tf, 0o600)
        servers = []
        for i in range(4):
            root = os.path.join(base, f"srv{i}")
            os.mkdir(root)
            p, addr = start_rfsd(args.build, root, tf)
            procs.append(p)
            servers.append(addr)
        env = dict(os.environ, RFS_TOKEN=token, RFS_CONFIG="")
        env.pop("RFS_TOKEN_FILE", None)
        runs = {c[0]: [] for c in configs}
        t0 = time.time()
        for _ in range(args.reps):
            for name, count, replicas in configs:
                runs[name].append(run_config(args, servers, name, count, replicas, env))
        result = {"suite": "manifest_loopback", "started": time.strftime("%Y-%m-%dT%H:%M:%S",
                                                                         time.localtime(t0)),
                  "duration_s": round(time.time() - t0, 1),
                  "host": {"cores": os.cpu_count(), "loadavg_end": os.getloadavg()},
                  "params": {"ranks": args.ranks, "size_per_rank_mib": args.size_mib,
                             "reps": args.reps, "stripe_size": args.stripe_size,
                             "servers": 4, "app": "romio_perf (independent writes)"},
                  "configs": {}}
        ref = {k: statistics.median(r[k] for r in runs["plain"]) for k in runs["plain"][0]}
        for name, count, replicas in configs:
            med = {k: statistics.median(r[k] for r in runs[name]) for k in runs[name][0]}
            result["configs"][name] = {
                "stripe_count": count if name != "plain" else None,
                "replicas": replicas if name != "plain" else None,
                "median": {k: round(v, 1) for k, v in med.items()},
                "runs": runs[name],
                "ratio_to_plain": {k: round(med[k] / ref[k], 3) for k in med}}
        text = json.dumps(result, indent=1)
        print(text)
        with open(args.out, "w") as f:
            f.write(text + "\n")
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
