#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""A server group's aggregate bandwidth (issue #18): 4 client ranks against 1, 2 and 4 rfsd
processes (rfsd --mpi), each process behind its own rate-limited link; and collective writes
through the MPI-IO backend against the POSIX backend.

The emulated WAN (bench/wan/up, its own namespaces mb-cli/mb-srv on 10.79.20.0/24 so it does
not disturb another WAN) is one delayed path; its tbf is replaced by an HTB on each end with one
class of --link-mbit per server process, chosen by the process's port (7070 + its index), so
each process has a link of its own whatever the others do. The group runs in the server
namespace with its export and state directory on tmpfs (the disk is not what is measured).

1. Links. Per N and repetition, first the reference: one iperf3 flow through each of the N
   links at once (an iperf3 server on port 7070 + i, so its class shapes it), client to server
   and back (-R), summed. Then bench/apps/romio_perf with 4 ranks in the client namespace
   through librfs-mpiio.so, each rank writing and reading its own --size-mib/4 MiB
   (independent MPI-IO): PLACE spreads the ranks round-robin over the processes, so N processes
   use N links. Measured: the durable write rate (romio_perf's write_sync phase: bytes over the
   time of write + MPI_File_sync, max over ranks) and the read rate, against the same run's
   iperf3 rates (and the nominal N x --link-mbit). Goal: >= 0.9 x the links' iperf3 rate.
2. Backends. romio_perf --collective (write_at_all / read_at_all, the ranks interleaved in
   1 MiB blocks, --coll-size-mib in all) against groups of 2 and 4 processes: rfsd --backend
   posix with the client's two-phase (default aggregators: one per node, so one rank's link
   carries everything; and cb_nodes=4, every rank an aggregator), and rfsd --backend mpiio,
   where every rank sends its own part to its process and the group's MPI-IO aggregates.

    flock /tmp/rfs-bench.lock /usr/bin/python3 bench/mpisrv/run.py [--link-mbit 200]
        [--delay-ms 5] [--size-mib 256] [--coll-size-mib 128] [--reps 2] [--servers 1,2,4]
        [--backend-servers 2,4] [--out bench/results/mpisrv_links.json]
        [--out-backends bench/results/mpisrv_backends.json]
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

os.environ.setdefault("RFS_WAN_NAME", "mb")
os.environ.setdefault("RFS_WAN_NET", "10.79.20")
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


def iperf3_links(env, n, secs, reverse):
    """The links' measured capacity in MB/s: one iperf3 flow through each of the first n links
    at once (server i on port BASE_PORT + i, so its HTB class shapes it), summed. reverse:
    server to client, as reads go."""
    sns, cns, addr = env["RFS_WAN_SERVER_NS"], env["RFS_WAN_CLIENT_NS"], env["RFS_WAN_SERVER_ADDR"]
    servers = [wanlib.start(sns, ["iperf3", "-s", "-1", "-B", addr, "-p", str(BASE_PORT + i)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for i in range(n)]
    try:
        for i in range(n):
            wanlib.wait_listen(sns, BASE_PORT + i, 30)
        clients = [wanlib.start(cns, ["iperf3", "-c", addr, "-p", str(BASE_PORT + i), "-t",
                                      str(secs), "-J"] + (["-R"] if reverse else []),
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                   for i in range(n)]
        total = 0.0
        for c in clients:
            out, _ = c.communicate(timeout=secs + 60)
            total += json.loads(out)["end"]["sum_received"]["bits_per_second"] / 8e6
        return total
    finally:
        for p in servers:
            wanlib.stop(p)


def start_group(env, n, work, token, backend="posix"):
    root, state = os.path.join(work, "export"), os.path.join(work, "state")
    os.makedirs(root)
    os.makedirs(state)
    tf = os.path.join(work, "token")
    with open(tf, "w") as f:
        f.write(token)
    os.chmod(tf, 0o600)
    argv = runner.mpiexec_argv("mpich", n, {}, True) + [
        runner.rfs_daemon(), "--mpi", "--mpi-state-dir", state, "--root", root, "--listen",
        f"{env['RFS_WAN_SERVER_ADDR']}:{BASE_PORT}", "--token-file", tf, "--backend", backend]
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


def romio(env, bindir, token, size, work, collective=False, hints=""):
    """romio_perf, 4 ranks: (durable write MB/s, read MB/s). collective: write_at_all and
    read_at_all through a view interleaving the ranks in 1 MiB blocks."""
    js = os.path.join(work, "romio.json")
    if os.path.exists(js):
        os.unlink(js)
    preload = [p for p in (runner.mpich_preload(bindir), runner.rfs_lib()) if p]
    menv = {"RFS_TOKEN": token, "RFS_HINTS": "rfs_compress=none" + hints, "RFS_CONFIG": "",
            "LD_PRELOAD": ":".join(preload)}
    target = f"rfs:{env['RFS_WAN_SERVER_ADDR']}:{BASE_PORT}:/perf.dat"
    argv = wanlib.in_ns(env["RFS_WAN_CLIENT_NS"], runner.mpiexec_argv("mpich", 4, menv, True) + [
        os.path.join(bindir, "romio_perf"), target, "--size", str(size // 4), "--no-verify",
        "--json", js] + (["--collective"] if collective else []))
    p = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    if p.returncode or not os.path.exists(js):
        raise RuntimeError(f"romio_perf: rc {p.returncode}: {p.stderr.strip()[-400:]}")
    with open(js) as f:
        r = json.load(f)
    return (r["bytes_written"] / r["time"]["write_sync"] / 1e6,
            r["bytes_read"] / r["time"]["read"] / 1e6)


BACKENDS = (("posix", ""), ("posix_cb4", ";cb_nodes=4"), ("mpiio", ""))


def one_run(env, n, bindir, size, backend, collective=False, hints=""):
    work = tempfile.mkdtemp(prefix="rfs-mpisrv-", dir="/dev/shm")
    token = secrets.token_hex(16)
    group = None
    try:
        group = start_group(env, n, work, token, backend)
        return romio(env, bindir, token, size, work, collective, hints)
    finally:
        wanlib.stop(group, grace=15)
        shutil.rmtree(work, ignore_errors=True)


def med(xs):
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--link-mbit", type=float, default=200)
    ap.add_argument("--delay-ms", type=float, default=5)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--coll-size-mib", type=int, default=128)
    ap.add_argument("--iperf-secs", type=int, default=4)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--servers", default="1,2,4")
    ap.add_argument("--backend-servers", default="2,4")
    ap.add_argument("--out", default=os.path.join(BENCH, "results", "mpisrv_links.json"))
    ap.add_argument("--out-backends",
                    default=os.path.join(BENCH, "results", "mpisrv_backends.json"))
    a = ap.parse_args()
    servers = [int(x) for x in a.servers.split(",") if x]  # "": only the backends
    bservers = [int(x) for x in a.backend_servers.split(",") if x]
    assert all(1 <= n <= MAX_SERVERS for n in servers + bservers)
    size, csize = a.size_mib << 20, a.coll_size_mib << 20
    bindir = runner.build_apps("mpich")
    # the tbf of `up` is replaced by the per-link HTB: its rate only has to be valid
    subprocess.run([os.path.join(BENCH, "wan", "up"), "--rate-mbit", str(a.link_mbit * 4),
                    "--delay-ms", str(a.delay_ms)], check=True, timeout=120,
                   stdout=subprocess.DEVNULL)
    res = {n: {"write_MBps": [], "read_MBps": [], "iperf_fwd_MBps": [], "iperf_rev_MBps": []}
           for n in servers}
    bres = {n: {b: {"write_MBps": [], "read_MBps": []} for b, _ in BACKENDS} for n in bservers}
    try:
        env = wanlib.load_env()
        shape(env, a.link_mbit)
        for rep in range(a.reps):
            for n in servers:  # interleaved by repetition: drift hits every N alike
                fwd = iperf3_links(env, n, a.iperf_secs, False)
                rev = iperf3_links(env, n, a.iperf_secs, True)
                w, r = one_run(env, n, bindir, size, "posix")
                for k, v in (("write_MBps", w), ("read_MBps", r), ("iperf_fwd_MBps", fwd),
                             ("iperf_rev_MBps", rev)):
                    res[n][k].append(v)
                print(f"rep {rep} N={n}: iperf3 {fwd:.1f}/{rev:.1f} MB/s, write {w:.1f} MB/s, "
                      f"read {r:.1f} MB/s", file=sys.stderr)
            for n in bservers:
                for b, hints in BACKENDS:
                    w, r = one_run(env, n, bindir, csize, b.split("_")[0], True, hints)
                    bres[n][b]["write_MBps"].append(w)
                    bres[n][b]["read_MBps"].append(r)
                    print(f"rep {rep} N={n} collective {b}: write {w:.1f} MB/s, read {r:.1f} MB/s",
                          file=sys.stderr)
    finally:
        subprocess.run([os.path.join(BENCH, "wan", "down")], timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    summary = {}
    for n in servers:
        cap = n * a.link_mbit / 8
        w, r = med(res[n]["write_MBps"]), med(res[n]["read_MBps"])
        fwd, rev = med(res[n]["iperf_fwd_MBps"]), med(res[n]["iperf_rev_MBps"])
        summary[str(n)] = {"links_nominal_MBps": cap, "links_iperf3_fwd_MBps": fwd,
                           "links_iperf3_rev_MBps": rev, "write_MBps": w, "read_MBps": r,
                           "write_vs_iperf3": w / fwd, "read_vs_iperf3": r / rev,
                           "write_vs_nominal": w / cap, "read_vs_nominal": r / cap}
    params = {"link_mbit": a.link_mbit, "delay_ms": a.delay_ms, "reps": a.reps,
              "client_ranks": 4, "iperf_secs": a.iperf_secs, "wan": os.environ["RFS_WAN_NAME"]}
    if servers:
        wanlib.emit_json({"benchmark": "mpisrv_links", "issue": 18,
                          "params": dict(params, size_mib=a.size_mib,
                                         workload="romio_perf independent, 4 ranks, tmpfs "
                                                  "export"),
                          "runs": {str(n): res[n] for n in servers}, "summary": summary,
                          "goal": "write and read >= 0.9 x the links' iperf3 rate in the same "
                                  "run"},
                         a.out)
    bsum = {}
    for n in bservers:
        cap = n * a.link_mbit / 8
        row = {b: {"write_MBps": med(bres[n][b]["write_MBps"]),
                   "read_MBps": med(bres[n][b]["read_MBps"])} for b, _ in BACKENDS}
        for b, _ in BACKENDS:
            row[b]["write_vs_nominal"] = row[b]["write_MBps"] / cap
        row["mpiio_vs_posix_write"] = row["mpiio"]["write_MBps"] / row["posix"]["write_MBps"]
        row["mpiio_vs_posix_cb4_write"] = (row["mpiio"]["write_MBps"] /
                                           row["posix_cb4"]["write_MBps"])
        row["links_nominal_MBps"] = cap
        bsum[str(n)] = row
    if bservers:
        wanlib.emit_json({"benchmark": "mpisrv_backends", "issue": 18,
                          "params": dict(params, size_mib=a.coll_size_mib,
                                         workload="romio_perf --collective (write_at_all, "
                                                  "read_at_all, ranks interleaved in 1 MiB "
                                                  "blocks), 4 ranks, tmpfs export"),
                          "configs": {"posix": "rfsd --backend posix, client two-phase with "
                                               "its default aggregators (one per node: 1)",
                                      "posix_cb4": "rfsd --backend posix, client two-phase "
                                                   "with cb_nodes=4 (every rank aggregates)",
                                      "mpiio": "rfsd --backend mpiio: each rank sends its own "
                                               "part, the group's MPI-IO aggregates"},
                          "runs": {str(n): bres[n] for n in bservers}, "summary": bsum},
                         a.out_backends)


if __name__ == "__main__":
    main()
