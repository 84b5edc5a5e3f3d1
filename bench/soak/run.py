#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Soak (issue #11 item 7): many clients against one rfsd for a long time, the server
restarted twice during the run (SIGKILL, then SIGTERM), checking that no acknowledged byte is
lost, every failure is reported, and rfsd's memory and descriptors stay flat.

Clients (each a loop until the deadline, each on its own file, so what a client was told can be
checked against the server's disk right after it was told):
  - C API writers (tests/faults/rfs_writer): write + sync + close a file of --size bytes with a
    fresh pattern, then the bytes on the server's disk must equal that pattern;
  - `rfs put` of a local file: exit 0, then the server's copy must equal the local file;
  - MPI-IO jobs (tests/mpiio/t_restart under MPICH, 2 ranks): a checkpoint loop with
    MPI_File_write_at_all, sync and close; "done" then the file must hold every step.
A run that fails (exit status != 0) must say why on its output: it counts as a reported
failure; a run that succeeded but whose bytes differ counts as lost acknowledged bytes.

usage: bench/soak/run.py [--seconds 600] [--writers 40] [--puts 16] [--mpi-jobs 4]
                         [--size BYTES] [--out bench/results/soak.json]
Prints progress to stderr and the JSON result to stdout (and --out)."""
import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BLOCK = 4096


def pattern(length, seed):
    out = bytearray()
    for k in range((length + BLOCK - 1) // BLOCK):
        out += k.to_bytes(8, "little") + bytes([(seed + k) & 0xFF]) * (BLOCK - 8)
    return bytes(out[:length])


class Server:
    def __init__(self, build, root, token_file, port=0):
        args = [str(build / "rfsd"), "--root", str(root), "--listen", f"127.0.0.1:{port}",
                "--token-file", str(token_file), "--log-level", "warn"]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("rfsd listening on "):
            raise SystemExit(f"rfsd did not start: {line!r}")
        self.port = int(line.split()[-1].rsplit(":", 1)[1])
        self.samples = []

    def sample(self, t):
        pid = self.proc.pid
        try:
            rss = 0
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
            fds = len(os.listdir(f"/proc/{pid}/fd"))
            threads = len(os.listdir(f"/proc/{pid}/task"))
        except (FileNotFoundError, ProcessLookupError):
            return
        self.samples.append({"t": round(t, 1), "rss": rss, "fds": fds, "threads": threads})


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.runs = {}
        self.ok = {}
        self.acked_bytes = 0
        self.lost = []
        self.reported = []
        self.unreported = []

    def add(self, kind, ok, acked=0, lost=None, reported=None, unreported=None):
        with self.lock:
            self.runs[kind] = self.runs.get(kind, 0) + 1
            if ok:
                self.ok[kind] = self.ok.get(kind, 0) + 1
                self.acked_bytes += acked
            if lost:
                self.lost.append(lost)
            if reported:
                self.reported.append(reported)
            if unreported:
                self.unreported.append(unreported)


def run_once(cmd, env, timeout=300):
    try:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(cmd, 124, e.stdout or "", "timed out (hang)")


def writer_loop(i, a, ctx, tally):
    seed = i * 1000
    name = f"/soak/w{i}.bin"
    while time.monotonic() < ctx["deadline"]:
        seed += 1
        p = run_once([str(a.build / "rfs_writer"), f"rfs:127.0.0.1:{ctx['port']}:{name}",
                      str(a.size), str(seed & 0xFF)], ctx["env"])
        ok = p.returncode == 0 and p.stdout.rstrip().endswith("closed")
        if ok:
            data = (ctx["root"] / name.lstrip("/")).read_bytes()
            lost = None if data == pattern(a.size, seed & 0xFF) else f"{name} seed {seed}"
            tally.add("writer", True, a.size, lost=lost)
        elif "error" in p.stdout or p.stderr.strip():
            tally.add("writer", False, reported=(p.stdout + p.stderr).strip()[-300:])
        else:
            tally.add("writer", False, unreported=f"{name}: exit {p.returncode} without a message")


def put_loop(i, a, ctx, tally):
    src = ctx["tmp"] / f"put{i}.src"
    name = f"/soak/p{i}.bin"
    n = 0
    while time.monotonic() < ctx["deadline"]:
        n += 1
        src.write_bytes(pattern(a.size, (i * 7 + n) & 0xFF))
        p = run_once([str(a.build / "rfs"), "put", "--no-progress", str(src),
                      f"rfs:127.0.0.1:{ctx['port']}:{name}"], ctx["env"])
        if p.returncode == 0:
            data = (ctx["root"] / name.lstrip("/")).read_bytes()
            lost = None if data == src.read_bytes() else f"{name} round {n}"
            tally.add("put", True, a.size, lost=lost)
        elif p.stderr.strip():
            tally.add("put", False, reported=p.stderr.strip()[-300:])
        else:
            tally.add("put", False, unreported=f"{name}: exit {p.returncode} without a message")


def mpi_loop(i, a, ctx, tally):
    prog = a.build / "mpiio-tests" / "mpiio_t_restart"
    lib = a.build / "librfs-mpiio.so"
    name = f"/soak/m{i}.bin"
    steps, block, nprocs = 8, a.size // 8, 2
    while time.monotonic() < ctx["deadline"]:
        cmd = ["mpiexec.mpich", "-n", str(nprocs), "-genv", "UCX_TLS", "self,sm",
               "-genv", "LD_PRELOAD", str(lib), str(prog),
               f"rfs:127.0.0.1:{ctx['port']}:{name}", str(steps), str(block)]
        p = run_once(cmd, ctx["env"])
        if p.returncode == 0 and p.stdout.rstrip().endswith("done"):
            size = steps * nprocs * block
            data = (ctx["root"] / name.lstrip("/")).read_bytes()[:size]
            want = bytearray()
            for k in range(size // BLOCK):
                want += k.to_bytes(8, "little") + bytes([(7 + k) & 0xFF]) * (BLOCK - 8)
            lost = None if data == bytes(want) else f"{name}"
            tally.add("mpiio", True, size, lost=lost)
        elif "error" in p.stdout or p.stderr.strip():
            tally.add("mpiio", False, reported=(p.stdout + p.stderr).strip()[-300:])
        else:
            tally.add("mpiio", False, unreported=f"{name}: exit {p.returncode} without a message")


def flatness(samples):
    """RSS and descriptors late in a server's life against early (after warm-up)."""
    if len(samples) < 4:
        return None
    q = len(samples) // 4
    early, late = samples[q], samples[-1]
    return {"rss_early": early["rss"], "rss_late": late["rss"],
            "rss_ratio": round(late["rss"] / max(early["rss"], 1), 3),
            "fds_early": early["fds"], "fds_late": late["fds"],
            "fds_max": max(s["fds"] for s in samples),
            "threads_early": early["threads"], "threads_late": late["threads"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--writers", type=int, default=40)
    ap.add_argument("--puts", type=int, default=16)
    ap.add_argument("--mpi-jobs", type=int, default=4)
    ap.add_argument("--size", type=int, default=2 << 20)
    ap.add_argument("--build", type=Path, default=REPO / "build")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    a.build = a.build.resolve()

    tmp = Path(tempfile.mkdtemp(prefix="rfs-soak."))
    root = tmp / "export"
    (root / "soak").mkdir(parents=True)
    token = secrets.token_hex(16)
    tf = tmp / "token"
    tf.write_text(token)
    tf.chmod(0o600)
    env = dict(os.environ, RFS_TOKEN=token, UCX_TLS="self,sm")
    servers = [Server(a.build, root, tf)]
    ctx = {"port": servers[0].port, "root": root, "tmp": tmp, "env": env}
    t0 = time.monotonic()
    ctx["deadline"] = t0 + a.seconds
    tally = Tally()
    threads = []
    for i in range(a.writers):
        threads.append(threading.Thread(target=writer_loop, args=(i, a, ctx, tally)))
    for i in range(a.puts):
        threads.append(threading.Thread(target=put_loop, args=(i, a, ctx, tally)))
    for i in range(a.mpi_jobs):
        threads.append(threading.Thread(target=mpi_loop, args=(i, a, ctx, tally)))
    for t in threads:
        t.start()
    restarts = [(a.seconds / 3, signal.SIGKILL), (2 * a.seconds / 3, signal.SIGTERM)]
    events = []
    while time.monotonic() < ctx["deadline"]:
        now = time.monotonic() - t0
        servers[-1].sample(now)
        if restarts and now >= restarts[0][0]:
            _, sig = restarts.pop(0)
            old = servers[-1]
            old.proc.send_signal(sig)
            t_stop = time.monotonic()
            old.proc.wait(timeout=120)
            stopped = time.monotonic() - t_stop
            servers.append(Server(a.build, root, tf, port=ctx["port"]))
            events.append({"t": round(now, 1), "signal": signal.Signals(sig).name,
                           "stop_seconds": round(stopped, 2)})
            print(f"soak: {now:.0f} s: rfsd {signal.Signals(sig).name} and restarted "
                  f"(stopped in {stopped:.1f} s)", file=sys.stderr)
        with tally.lock:
            done = sum(tally.runs.values())
        print(f"soak: {now:.0f}/{a.seconds:.0f} s, {done} client runs", file=sys.stderr)
        time.sleep(min(5, max(0.1, ctx["deadline"] - time.monotonic())))
    for t in threads:
        t.join()
    servers[-1].sample(time.monotonic() - t0)
    servers[-1].proc.send_signal(signal.SIGTERM)
    servers[-1].proc.wait(timeout=60)

    result = {
        "benchmark": "soak",
        "seconds": a.seconds,
        "clients": {"c_api_writers": a.writers, "rfs_put": a.puts, "mpiio_jobs_of_2_ranks": a.mpi_jobs,
                    "processes": a.writers + a.puts + 2 * a.mpi_jobs},
        "bytes_per_run": a.size,
        "server_restarts": events,
        "runs": tally.runs,
        "runs_ok": tally.ok,
        "acknowledged_bytes_checked": tally.acked_bytes,
        "acknowledged_runs_with_lost_bytes": len(tally.lost),
        "lost_examples": tally.lost[:5],
        "failures_reported": len(tally.reported),
        "failure_examples": tally.reported[:5],
        "failures_unreported": len(tally.unreported),
        "server_lives": [flatness(s.samples) for s in servers],
        "samples": [s.samples for s in servers],
    }
    text = json.dumps(result, indent=1)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")
    shutil.rmtree(tmp, ignore_errors=True)
    ok = not tally.lost and not tally.unreported
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
