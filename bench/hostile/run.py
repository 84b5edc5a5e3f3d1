#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Honest-client latency with and without hostile clients (issue #21 items 2 and 7).

One rfsd on 127.0.0.1:0 (temporary root in /dev/shm when it has room, fresh token). In each
run an honest client (one authenticated raw connection, tests/e2e/rfswire.py) does --ops
round trips, alternating a 4 KiB PWRITE and a 4 KiB PREAD of one file, first alone, then while
24 hostile clients attack (all authenticated, well-formed frames, each in its own connection,
driven from three separate processes so that their Python work does not share the honest
client's interpreter lock):

  - 8 non-readers: each pipelines 256 PREADs of 4 MiB and never reads a reply (the issue's
    attack: it used to hold every worker in a blocked send for 60 s);
  - 8 floods: each keeps 64 small requests in flight (STAT, 64 KiB PREAD, OPEN+CLOSE),
    reading replies as fast as it can;
  - 8 expensive views: each keeps 16 VIEW_READs of 64 KiB in flight through a view of
    one-byte runs (a pread per byte, tens of ms of a worker each).

Also measured, as a second series: OPEN+CLOSE pairs (each request needs a worker, whereas a
small PREAD/PWRITE on an otherwise idle connection runs on its reader thread).

Each run reports p50/p99 of the honest round trips alone and under attack; the result is the
median of the runs' values and the ratio p99_hostile / p99_alone (and p50). Every process
started is stopped by PID; nothing global is touched.

    flock /tmp/rfs-bench.lock /usr/bin/python3 bench/hostile/run.py [--build-dir build]
        [--runs 3] [--ops 600] [--rfsd PATH] [--out bench/results/hostile_latency.json]

--rfsd runs another rfsd binary (e.g. one built from an older commit) with the same driver;
--op-timeout bounds one honest round trip (a run where one exceeds it is reported as stalled).
"""
import argparse
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from rfswire import (O_CREAT, O_RDWR, OP, Conn, b_fh, b_open, b_path, b_pread,  # noqa: E402
                     b_pwrite, b_set_view, b_view_read, frame)

NONREADERS, FLOODS, VIEWS = 8, 8, 8
BIG = 4 << 20


# ---- datatype encoding of a view of one-byte runs (docs/datatypes.md) ----
def view_of_byte_runs(runs):
    byte = bytes([1]) + struct.pack("<qqqIqq", 1, 0, 1, 1, 0, 1)          # NAMED byte
    tree = bytes([5]) + struct.pack("<qqq", runs, 1, 2) + byte              # HVECTOR
    return b"RFDT" + bytes([1, 0, 0, 0]) + struct.pack("<Q", 16 + len(tree)) + tree


def connect(port, token, max_frame=BIG + 4096):
    c = Conn("127.0.0.1", port, timeout=120)
    c.handshake(token, max_frame=max_frame)
    return c


# ---- hostile side (runs in child processes: `run.py --attack KIND --port P --token T`) ----
def attack_nonreader(port, token, stop):
    c = connect(port, token)
    fh = c.open("/big.bin", O_RDWR)
    c.send_raw(b"".join(frame(OP["PREAD"], 1000 + i, b_pread(fh, 0, BIG)) for i in range(256)))
    stop.wait()
    c.close()


def pipelined_loop(c, make, depth, stop):
    """Keeps `depth` requests in flight: sends one more for each reply read."""
    for _ in range(depth):
        c.send_raw(make())
    while not stop.is_set():
        c.recv()
        c.send_raw(make())


def attack_flood(port, token, stop):
    c = connect(port, token)
    fh = c.open("/big.bin", O_RDWR)
    seq = [0]

    def make():
        seq[0] += 1
        k = seq[0] % 3
        if k == 0:
            return frame(OP["STAT"], seq[0], b_path("/big.bin"))
        if k == 1:
            return frame(OP["PREAD"], seq[0], b_pread(fh, (seq[0] % 64) << 16, 1 << 16))
        return frame(OP["OPEN"], seq[0], b_open("/big.bin", O_RDWR))

    # OPEN replies leave handles open: close each one as its reply arrives
    def loop():
        for _ in range(64):
            c.send_raw(make())
        opened = 0
        while not stop.is_set():
            rep = c.recv()
            if rep.op == OP["OPEN"] and rep.status == 0:
                c.send_raw(frame(OP["CLOSE"], 0x7FFFFFF0 + (opened % 8), b_fh(
                    struct.unpack_from("<I", rep.body)[0])))
                opened += 1
                continue
            c.send_raw(make())  # a CLOSE's reply ends an OPEN's turn
    try:
        loop()
    except (OSError, EOFError):
        pass
    c.close()


def attack_view(port, token, stop):
    c = connect(port, token)
    fh = c.open("/big.bin", O_RDWR)
    c.call("SET_VIEW", b_set_view(fh, 0, 0, view_of_byte_runs(1 << 16))).check()
    seq = [0]

    def make():
        seq[0] += 1
        return frame(OP["VIEW_READ"], seq[0], b_view_read(fh, 0, 0, 1 << 16))
    try:
        pipelined_loop(c, make, 16, stop)
    except (OSError, EOFError):
        pass
    c.close()


def attack_main(kind, port, token, n):
    """Child process: n connections of one kind until stdin closes."""
    # The attackers would be other hosts: on this 2-core machine their own Python work must not
    # take the CPU from the honest client's process, so they run at a lower priority (rfsd's
    # work for them still runs at rfsd's priority).
    os.nice(10)
    fn = dict(nonreader=attack_nonreader, flood=attack_flood, view=attack_view)[kind]
    stop = threading.Event()
    threads = [threading.Thread(target=fn, args=(port, token, stop), daemon=True)
               for _ in range(n)]
    for t in threads:
        t.start()
    print("ready", flush=True)
    sys.stdin.read()  # the driver closes our stdin to stop us
    stop.set()
    for t in threads:
        t.join(timeout=10)


# ---- driver ----
class Server:
    def __init__(self, rfsd, root, token_file):
        self.proc = subprocess.Popen(
            [str(rfsd), "--root", str(root), "--listen", "127.0.0.1:0", "--token-file",
             str(token_file), "--log-level", "error"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("rfsd listening on "):
            self.proc.kill()
            raise SystemExit(f"rfsd did not start: {line!r}")
        self.port = int(line.split()[-1].rsplit(":", 1)[1])

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def cpu_seconds(pid):
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def honest_series(port, token, ops, op_timeout):
    """Latencies (s) of `ops` small round trips and of ops/4 OPEN+CLOSE pairs."""
    c = Conn("127.0.0.1", port, timeout=op_timeout)
    data = os.urandom(4096)
    small, worker = [], []
    try:
        c.handshake(token)
        fh = c.open("/honest.bin", O_RDWR | O_CREAT)
        for i in range(ops):
            t = time.perf_counter()
            if i % 2 == 0:
                c.call("PWRITE", b_pwrite(fh, (i % 256) * 4096, data)).check()
            else:
                c.call("PREAD", b_pread(fh, ((i - 1) % 256) * 4096, 4096)).check()
            small.append(time.perf_counter() - t)
        for i in range(ops // 4):
            t = time.perf_counter()
            h = c.open("/honest.bin", O_RDWR)
            c.close_fh(h)
            worker.append(time.perf_counter() - t)
    except socket.timeout:
        return None
    finally:
        c.close()
    return small, worker


def summary(xs):
    return {"p50_us": round(percentile(xs, 50) * 1e6, 1), "p99_us": round(percentile(xs, 99) * 1e6, 1),
            "max_us": round(max(xs) * 1e6, 1), "n": len(xs)}


def one_run(args, rfsd, tmp):
    root = tmp / "export"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    with open(root / "big.bin", "wb") as f:
        f.truncate(BIG)
    token = secrets.token_hex(16)
    tf = tmp / "token"
    tf.write_text(token)
    tf.chmod(0o600)
    srv = Server(rfsd, root, tf)
    attackers = []
    try:
        alone = honest_series(srv.port, token, args.ops, args.op_timeout)
        for kind, n in (("nonreader", NONREADERS), ("flood", FLOODS), ("view", VIEWS)):
            p = subprocess.Popen([sys.executable, __file__, "--attack", kind, "--port",
                                  str(srv.port), "--token", token, "--conns", str(n)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            attackers.append(p)
            if p.stdout.readline().strip() != "ready":
                raise SystemExit(f"attacker {kind} did not start")
        time.sleep(args.warmup)  # let the attack build up before measuring (not a timing check)
        cpu0, t0 = cpu_seconds(srv.proc.pid), time.monotonic()
        hostile = honest_series(srv.port, token, args.ops, args.op_timeout)
        # how busy the attack kept rfsd while the honest client ran (2.0 = both cores)
        load = (cpu_seconds(srv.proc.pid) - cpu0) / (time.monotonic() - t0)
    finally:
        for p in attackers:
            p.stdin.close()
        for p in attackers:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        srv.stop()
    if alone is None or hostile is None:
        return {"stalled": True, "op_timeout_s": args.op_timeout}
    return {"alone": {"small": summary(alone[0]), "open_close": summary(alone[1])},
            "hostile": {"small": summary(hostile[0]), "open_close": summary(hostile[1]),
                        "rfsd_cpus_busy": round(load, 2)}}


def median_of(runs, cond, series, key):
    return statistics.median(r[cond][series][key] for r in runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attack", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--token", help=argparse.SUPPRESS)
    ap.add_argument("--conns", type=int, default=8, help=argparse.SUPPRESS)
    ap.add_argument("--build-dir", default=str(REPO / "build"))
    ap.add_argument("--rfsd", help="rfsd binary (default: BUILD_DIR/rfsd)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ops", type=int, default=600)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--op-timeout", type=float, default=30.0)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "hostile_latency.json"))
    args = ap.parse_args()
    if args.attack:
        attack_main(args.attack, args.port, args.token, args.conns)
        return
    rfsd = Path(args.rfsd or Path(args.build_dir) / "rfsd").resolve()
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and shutil.disk_usage(shm).free > (256 << 20) else None
    tmp = Path(tempfile.mkdtemp(prefix="rfs-hostile-", dir=base))
    runs = []
    try:
        for i in range(args.runs):
            r = one_run(args, rfsd, tmp)
            runs.append(r)
            print(f"run {i + 1}/{args.runs}: {json.dumps(r)}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ok = [r for r in runs if not r.get("stalled")]
    result = {
        "benchmark": "hostile_latency",
        "rfsd": str(rfsd),
        "host": platform.node(), "cpus": os.cpu_count(),
        "load_avg_at_end": os.getloadavg(),
        "hostile_clients": {"nonreading_pipelined_preads": NONREADERS, "request_floods": FLOODS,
                            "expensive_view_reads": VIEWS},
        "ops_per_run": args.ops, "runs": runs, "stalled_runs": len(runs) - len(ok),
    }
    if ok:
        for series in ("small", "open_close"):
            s = {}
            for cond in ("alone", "hostile"):
                for key in ("p50_us", "p99_us"):
                    s[f"{key}_{cond}"] = median_of(ok, cond, series, key)
            s["ratio_p99_hostile_vs_alone"] = round(s["p99_us_hostile"] / s["p99_us_alone"], 2)
            s["ratio_p50_hostile_vs_alone"] = round(s["p50_us_hostile"] / s["p50_us_alone"], 2)
            result[series] = s
        result["rfsd_cpus_busy_under_attack"] = statistics.median(
            r["hostile"]["rfsd_cpus_busy"] for r in ok)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
