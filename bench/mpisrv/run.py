#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""A server group's aggregate bandwidth (issue #18): 4 client ranks against 1, 2 and 4 rfsd
processes (rfsd --mpi), each process behind its own rate-limited link.

The emulated WAN (bench/wan/up, its own namespaces mps-cli/mps-srv on 10.79.0.0/24 so it does
not disturb another WAN) is one delayed path; its tbf is replaced by an HTB on each end with one
class of --link-mbit per server process, chosen by the process's port (7070 + its index), so
each process has a link of its own whatever the others do. The group runs in the server
namespace with its export and state directory on tmpfs (the disk is not what is measured).
bench/apps/romio_perf then runs with 4 ranks in the client namespace through librfs-mpiio.so,
each rank writing and reading its own --size-mib/4 MiB (independent MPI-IO): PLACE spreads the
ranks round-robin over the processes, so with N processes the 4 ranks use N links.
Measured per N (medians of --reps): the durable write rate (romio_perf's write_sync phase:
bytes over the time of write + MPI_File_sync, max over ranks) and the read rate, against the
links' nominal capacity (N x --link-mbit, the HTB classes' rate; not yet an iperf3 run through
each class in the same run). Goal: >= 0.9 x the links' capacity for N = 1, 2, 4.

    flock /tmp/rfs-bench.lock /usr/bin/python3 bench/mpisrv/run.py [--link-mbit 200]
        [--delay-ms 5] [--size-mib 256] [--reps 2] [--servers 1,2,4]
        [--out bench/results/mpisrv_links.json]
"""
import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile

os.environ.setdefault("RFS_WAN_NAME", "mps")
os.environ.setdefault("RFS_WAN_NET", "10.79.0")
HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
REPO = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(BENCH, "wan"))
sys.path.insert(0, os.path.join(BENCH, "lib"))
import wanlib  # noqa: E402
import runner  # noqa: E402

BASE_PORT = 7070
MAX_SERVERS = 4


def tc(ns, *args):
    wanlib.run(ns, ["tc", *args], timeout=30)


def shape(env, link_mbit):
    """One HTB class of link_mbit per server port on both ends of the link (replacing tbf)."""
    dev = env["RFS_WAN_DEV"]
    burst = "140000"  # a whole TSO super packet and more, as bench/wan/up's tbf bucket
    for ns, match in ((env["RFS_WAN_CLIENT_NS"], "dport"), (env["RFS_WAN_SERVER_NS"], "sport")):
        tc(ns, "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "99")
        tc(ns, "class", "add", "dev", dev, "parent", "1:", "classid", "1:99", "htb", "rate",
           "10gbit", "burst", burst)
        for i in range(MAX_SERVERS):
            cls = f"1:{10 + i}"
            tc(ns, "class", "add", "dev", dev, "parent", "1:", "classid", cls, "htb", "rate",
               f"{link_mbit}mbit", "ceil", f"{link_mbit}mbit", "burst", burst, "cburst", burst)
            tc(ns, "qdisc", "add", "dev", dev, "parent", cls, "pfifo", "limit", "1000")
            tc(ns, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1",
               "u32", "match", "ip", match, str(BASE_PORT + i), "0xffff", "flowid", cls)


def start_group(env, n, work, token):
    root, state = os.path.join(work, "export"), os.path.join(work, "state")
    os.makedirs(root)
    os.makedirs(state)
    tf = os.path.join(work, "token")
    with open(tf, "w") as f:
        f.write(token)
    os.chmod(tf, 0o600)
    argv = runner.mpiexec_argv("mpich", n, {}, True) + [
        runner.rfs_daemon(), "--mpi", "--mpi-state-dir", state, "--root", root, "--listen",
        f"{env['RFS_WAN_SERVER_ADDR']}:{BASE_PORT}", "--token-file", tf]
    p = wanlib.start(env["RFS_WAN_SERVER_NS"], argv, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    # every process listens before the group exchanges addresses; a client that connects
    # before the accept loops run waits in the backlog
    try:
        for i in range(n):
            wanlib.wait_listen(env["RFS_WAN_SERVER_NS"], BASE_PORT + i, 60)
    except BaseException:
        wanlib.stop(p, grace=15)  # a group that did not come up is not left behind
        raise
    return p


def romio(env, bindir, token, size, work):
    """romio_perf, 4 ranks: (durable write MB/s, read MB/s)."""
    js = os.path.join(work, "romio.json")
    if os.path.exists(js):
        os.unlink(js)
    preload = [p for p in (runner.mpich_preload(bindir), runner.rfs_lib()) if p]
    menv = {"RFS_TOKEN": token, "RFS_HINTS": "rfs_compress=none", "RFS_CONFIG": "",
            "LD_PRELOAD": ":".join(preload)}
    target = f"rfs:{env['RFS_WAN_SERVER_ADDR']}:{BASE_PORT}:/perf.dat"
    argv = wanlib.in_ns(env["RFS_WAN_CLIENT_NS"], runner.mpiexec_argv("mpich", 4, menv, True) + [
        os.path.join(bindir, "romio_perf"), target, "--size", str(size // 4), "--no-verify",
        "--json", js])
    p = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    if p.returncode or not os.path.exists(js):
        raise RuntimeError(f"romio_perf: rc {p.returncode}: {p.stderr.strip()[-400:]}")
    with open(js) as f:
        r = json.load(f)
    return (r["bytes_written"] / r["time"]["write_sync"] / 1e6,
            r["bytes_read"] / r["time"]["read"] / 1e6)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--link-mbit", type=float, default=200)
    ap.add_argument("--delay-ms", type=float, default=5)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--servers", default="1,2,4")
    ap.add_argument("--out", default=os.path.join(BENCH, "results", "mpisrv_links.json"))
    a = ap.parse_args()
    servers = [int(x) for x in a.servers.split(",")]
    assert all(1 <= n <= MAX_SERVERS for n in servers)
    size = a.size_mib << 20
    bindir = runner.build_apps("mpich")
    # the tbf of `up` is replaced by the per-link HTB: its rate only has to be valid
    subprocess.run([os.path.join(BENCH, "wan", "up"), "--rate-mbit", str(a.link_mbit * 4),
                    "--delay-ms", str(a.delay_ms)], check=True, timeout=120,
                   stdout=subprocess.DEVNULL)
    res = {n: {"write_MBps": [], "read_MBps": []} for n in servers}
    try:
        env = wanlib.load_env()
        shape(env, a.link_mbit)
        for rep in range(a.reps):
            for n in servers:  # interleaved by repetition: drift hits every N alike
                work = tempfile.mkdtemp(prefix="rfs-mpisrv-", dir="/dev/shm")
                token = secrets.token_hex(16)
                group = None
                try:
                    group = start_group(env, n, work, token)
                    w, r = romio(env, bindir, token, size, work)
                finally:
                    wanlib.stop(group, grace=15)
                    shutil.rmtree(work, ignore_errors=True)
                res[n]["write_MBps"].append(w)
                res[n]["read_MBps"].append(r)
                print(f"rep {rep} N={n}: write {w:.1f} MB/s, read {r:.1f} MB/s", file=sys.stderr)
    finally:
        subprocess.run([os.path.join(BENCH, "wan", "down")], timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    summary = {}
    for n in servers:
        cap = n * a.link_mbit / 8
        w, r = statistics.median(res[n]["write_MBps"]), statistics.median(res[n]["read_MBps"])
        summary[str(n)] = {"links_capacity_MBps": cap, "write_MBps": w, "read_MBps": r,
                           "write_vs_links": w / cap, "read_vs_links": r / cap}
    wanlib.emit_json({"benchmark": "mpisrv_links", "issue": 18,
                      "params": {"link_mbit": a.link_mbit, "delay_ms": a.delay_ms,
                                 "size_mib": a.size_mib, "reps": a.reps, "client_ranks": 4,
                                 "workload": "romio_perf independent, 4 ranks, tmpfs export"},
                      "runs": {str(n): res[n] for n in servers}, "summary": summary,
                      "goal": "write and read >= 0.9 x links_capacity"}, a.out)


if __name__ == "__main__":
    main()
