#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""One logical file over several servers on the emulated WAN (issue #17, docs/manifest.md).

Four independent rfsd (exports on tmpfs), each behind a link of its own, 4 client ranks.
--links ns (the default, issue #17 item 6): every rfsd in a network namespace of its own
(mw0-srv .. mw3-srv, link i on 10.79.4i.0/24, port 7070), joined to the one client namespace
(mwc) by its own delayd link (--delay-ms each way) with a tbf of --link-mbit on both ends:
bench/wan/up once per link, joining the client namespace (RFS_WAN_JOIN_CLIENT_NS). --links
htb (the first setup): one WAN (bench/wan/up, namespaces mw-cli/mw-srv on 10.79.30.0/24)
whose link bench/mpisrv's shaping divides into an HTB class of --link-mbit per server port
(7070..7073) on both ends, every rfsd in the one server namespace. Parts (--parts):

stripe    Per repetition, the reference first: one iperf3 flow through each of the first N
          links at once (N = 1, 2, 4), to the servers and back. Then romio_perf (4 ranks in the
          client namespace through librfs-mpiio.so, each writing and reading its own
          --size-mib/4 MiB with independent MPI-IO) on: a plain rfs file on server 0 (the
          reference: one server), and logical files (.rfsm, 1 MiB units) striped over 1, 2 and 4
          servers. Measured: the durable write rate (write + MPI_File_sync) and the read rate.
          Goal: 4 servers >= 3.5 x the plain file on one server, in the same run.
failover  A logical file over the 4 servers with 2 replicas (4 columns x 2) written by
          romio_perf; then bench/apps/chunkread (4 ranks, 4 MiB pieces, every word checked)
          reads it twice per repetition: undisturbed, and with server 1's rfsd killed (SIGKILL)
          at --kill-at of the undisturbed run's duration. Reported: bytes read and checked,
          the longest wait for one piece (the stall while the layer fails over) against the
          undisturbed run's, and the total read times. Server 1 is restarted after each.
small     bench/apps/synthetic on a logical file over the 4 servers (1 MiB units). Fig. 9:
          --small-ranks ranks each writing --small-size pieces (1 KiB) one after another,
          direct mode (--small-count-direct writes: each waits for its reply, so few keep the
          run short) against rfs_manifest_mode=buffered (--small-count writes); the timed phase
          is the writes and MPI_File_sync, which sends the buffered ones. Fig. 11: 4 ranks
          reading --strided-total bytes each in --strided-regions regions (a vector view, each
          region followed by a hole of its size), direct against rfs_manifest_read=sieve.
stripe512 stripe at 512 MiB (whatever --size-mib says).
depot     Fig. 14: depot reordering (docs/manifest.md "Where a new file starts"): 4 ranks
          writing --depot-mib MiB in all, rfs_depot_order=fixed against rotate, file per
          process (one stripe unit per file) and a shared file written collectively; with
          --links ns also with one link at a quarter of the rate (server 0, then server 3).
          Reference: iperf3 through 1 and 4 links in the same run.
sizes     Figs. 7 and 8: writes (no sync) and reads of --sizes-mib MiB in all, to the plain
          file, to a logical file over the 4 servers and to one with 2 replicas.
sweep     Fig. 6: one rank writing --sweep-calls pieces of each size 1 B .. 1 MiB (x4),
          direct against buffered (writes and MPI_File_sync timed together). Fig. 13: a
          --tile x --tile array of doubles in 2 x 2 tiles, 4 ranks, collective and
          independent, direct against buffered writes with sieved reads.
noncontig Fig. 10: 4 ranks, one strided write of n = --noncontig-regions regions each
          (--noncontig-total bytes per rank, hole = region) + MPI_File_sync, and the read back:
          rfs_manifest_mode=log against direct list writes and a request per region
          (rfs_max_extents=1). Run it into bench/results/manifest_wan_noncontig.json.

Everything started is stopped by PID; the links and namespaces are taken down at the end, also
on failure.

    make -C bench/apps
    flock /tmp/rfs-bench.lock /usr/bin/python3 bench/manifest/wan.py [--parts stripe,failover,small]
        [--links ns|htb] [--stripe-configs plain,1x1,2x1,4x1] [--depot-mib 64]
        [--sizes-mib 4,16,64] [--link-mbit 200] [--delay-ms 10] [--size-mib 256] [--reps 3]
        [--out bench/results/manifest_wan.json]
"""
import argparse
import importlib.util
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

os.environ["RFS_WAN_NAME"] = os.environ.get("RFS_MW_WAN_NAME", "mw")
os.environ["RFS_WAN_NET"] = os.environ.get("RFS_MW_WAN_NET", "10.79.30")
HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
REPO = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(BENCH, "wan"))
sys.path.insert(0, os.path.join(BENCH, "lib"))
import wanlib  # noqa: E402
import runner  # noqa: E402

_spec = importlib.util.spec_from_file_location("mpisrv_run", os.path.join(BENCH, "mpisrv",
                                                                          "run.py"))
mpisrv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mpisrv)
BASE_PORT, NSERVERS = mpisrv.BASE_PORT, mpisrv.MAX_SERVERS


def log(msg):
    print(f"[manifest/wan {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class HtbNet:
    """--links htb: one WAN (bench/wan/up, namespaces mw-cli/mw-srv) whose link is divided by
    bench/mpisrv's per-port HTB classes, one per server port; every rfsd in one namespace."""

    kind = "htb"

    def __init__(self, a):
        self.a = a

    def bring_up(self):
        a = self.a
        subprocess.run([os.path.join(BENCH, "wan", "up"), "--rate-mbit", str(a.link_mbit * 4),
                        "--delay-ms", str(a.delay_ms)], check=True, timeout=120,
                       stdout=subprocess.DEVNULL)
        self.env = wanlib.load_env()
        mpisrv.shape(self.env, a.link_mbit)
        self.client_ns = self.env["RFS_WAN_CLIENT_NS"]

    def server_ns(self, i):
        return self.env["RFS_WAN_SERVER_NS"]

    def host(self, i):
        return self.env["RFS_WAN_SERVER_ADDR"]

    def port(self, i):
        return BASE_PORT + i

    def iperf(self, n, secs, reverse):
        return mpisrv.iperf3_links(self.env, n, secs, reverse)

    def down(self):
        subprocess.run([os.path.join(BENCH, "wan", "down")], timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class NsNet:
    """--links ns (issue #17 item 6): every rfsd in a network namespace of its own (mw0-srv ..
    mw3-srv), each joined to the one client namespace (mwc) by a link of its own: a delayd
    pair of TUN devices (rfsw0 .. rfsw3, --delay-ms each way) with a tbf of --link-mbit on
    both ends (bench/wan/up, RFS_WAN_JOIN_CLIENT_NS/RFS_WAN_LINK_DEV). Link i is the /24
    NET.(BASE+i) (client .1, server .2). set_rate() changes one link's tbf on both ends."""

    kind = "ns"
    CLIENT_NS = "mwc"

    def __init__(self, a):
        self.a, self.up, self.made_client = a, [], False
        base = [int(x) for x in a.ns_net.split(".")]
        self.nets = [f"{base[0]}.{base[1]}.{base[2] + i}" for i in range(NSERVERS)]

    def bring_up(self):
        a = self.a
        subprocess.run(["ip", "netns", "add", self.CLIENT_NS], check=True, timeout=30)
        self.made_client = True
        subprocess.run(["ip", "-n", self.CLIENT_NS, "link", "set", "lo", "up"], check=True,
                       timeout=30)
        self.cfg = []
        for i in range(NSERVERS):
            e = dict(os.environ, RFS_WAN_NAME=self.name(i), RFS_WAN_NET=self.nets[i],
                     RFS_WAN_JOIN_CLIENT_NS=self.CLIENT_NS, RFS_WAN_LINK_DEV=f"rfsw{i}")
            e.pop("RFS_WAN_STATE_DIR", None)
            self.up.append(i)  # down() also undoes a half-made link
            subprocess.run([os.path.join(BENCH, "wan", "up"), "--rate-mbit", str(a.link_mbit),
                            "--delay-ms", str(a.delay_ms)], check=True, timeout=120, env=e,
                           stdout=subprocess.DEVNULL)
            self.cfg.append(self.read_cfg(i))
        self.client_ns = self.CLIENT_NS
        self.env = {"RFS_WAN_CLIENT_NS": self.CLIENT_NS}
        self.rates = [a.link_mbit] * NSERVERS

    @staticmethod
    def name(i):
        return f"mw{i}"

    def read_cfg(self, i):
        out = {}
        with open(f"/run/{self.name(i)}-wan/config.env") as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                if k:
                    out[k] = v
        return out

    def server_ns(self, i):
        return self.cfg[i]["RFS_WAN_SERVER_NS"]

    def host(self, i):
        return self.cfg[i]["RFS_WAN_SERVER_ADDR"]

    def port(self, i):
        return BASE_PORT

    def set_rate(self, i, mbit):
        """Link i's tbf at mbit on both ends (bucket and queue as bench/wan/up made them)."""
        c = self.cfg[i]
        for ns in (self.CLIENT_NS, c["RFS_WAN_SERVER_NS"]):
            subprocess.run(["tc", "-n", ns, "qdisc", "replace", "dev", c["RFS_WAN_DEV"], "root",
                            "tbf", "rate", f"{int(mbit * 1e6)}bit", "burst",
                            c["RFS_WAN_TBF_BURST"], "limit", c["RFS_WAN_TBF_LIMIT"]],
                           check=True, timeout=30)
        self.rates[i] = mbit

    def iperf(self, n, secs, reverse):
        """One iperf3 flow through each of the first n links at once, summed, in MB/s."""
        servers = [wanlib.start(self.server_ns(i), ["iperf3", "-s", "-1", "-B", self.host(i),
                                                    "-p", "5201"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                   for i in range(n)]
        try:
            for i in range(n):
                wanlib.wait_listen(self.server_ns(i), 5201, 30)
            clients = [wanlib.start(self.CLIENT_NS, ["iperf3", "-c", self.host(i), "-p", "5201",
                                                     "-t", str(secs), "-J"] +
                                    (["-R"] if reverse else []),
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

    def down(self):
        for i in reversed(self.up):
            e = dict(os.environ, RFS_WAN_NAME=self.name(i))
            e.pop("RFS_WAN_STATE_DIR", None)
            subprocess.run([os.path.join(BENCH, "wan", "down")], timeout=60, env=e,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if self.made_client:
            left = subprocess.run(["ip", "netns", "pids", self.CLIENT_NS], capture_output=True,
                                  text=True, timeout=30).stdout.split()
            if left:
                log(f"processes still in {self.CLIENT_NS}: {' '.join(left)}")
            subprocess.run(["ip", "netns", "del", self.CLIENT_NS], timeout=30)


class Servers:
    """NSERVERS independent rfsd, server i in net.server_ns(i) at net.host(i):net.port(i)."""

    def __init__(self, net, work, token):
        self.net, self.work, self.token = net, work, token
        self.tf = os.path.join(work, "token")
        with open(self.tf, "w") as f:
            f.write(token)
        os.chmod(self.tf, 0o600)
        self.procs = [None] * NSERVERS
        for i in range(NSERVERS):
            os.makedirs(self.root(i))
            self.start(i)

    def root(self, i):
        return os.path.join(self.work, f"srv{i}")

    def addr(self, i):
        return f"{self.net.host(i)}:{self.net.port(i)}"

    def start(self, i):
        ns = self.net.server_ns(i)
        self.procs[i] = wanlib.start(ns, [runner.rfs_daemon(), "--root", self.root(i), "--listen",
                                          self.addr(i), "--token-file", self.tf],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wanlib.wait_listen(ns, self.net.port(i), 30)

    def kill(self, i):
        p = self.procs[i]
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)

    def stop_all(self):
        for p in self.procs:
            wanlib.stop(p, grace=10)

    def start_all(self):
        for i in range(NSERVERS):
            self.start(i)


def mpi_env(token, hints, lib=None):
    return {"RFS_TOKEN": token, "RFS_CONFIG": "", "RFS_HINTS": hints,
            "LD_PRELOAD": ":".join(p for p in (runner.mpich_preload(BINDIR),
                                               lib or runner.rfs_lib()) if p)}


def layout_hints(srv, count, replicas, extra=""):
    servers = ",".join(f"rfs://{srv.addr(i)}" for i in range(count))
    return (f"rfs_compress=none;rfs_servers={servers};rfs_stripe_size=1M;"
            f"rfs_stripe_count={count};rfs_replicas={replicas}" + extra)


def target(srv, name):
    return f"rfs://{srv.addr(0)}/{name}"


def run_app(env, ranks, menv, argv, timeout=900):
    cmd = wanlib.in_ns(env["RFS_WAN_CLIENT_NS"],
                       runner.mpiexec_argv("mpich", ranks, menv, True) + argv)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    line = next((x for x in p.stdout.splitlines() if x.startswith("{")), None)
    if p.returncode or not line:
        raise RuntimeError(f"{argv[0]}: rc {p.returncode}: {p.stdout[-400:]} "
                           f"{p.stderr.strip()[-800:]}")
    return json.loads(line)


def romio(env, srv, name, hints, size, sync=True, verify=True, lib=None, extra=()):
    argv = [os.path.join(BINDIR, "romio_perf"), target(srv, name), "--size", str(size // 4)]
    argv += list(extra)
    if not sync:
        argv.append("--no-sync")
    if not verify:
        argv.append("--no-verify")
    r = run_app(env, 4, mpi_env(srv.token, hints, lib), argv)
    if verify and r.get("verify") != "ok":
        raise RuntimeError(f"{name}: romio_perf read wrong data: {r}")
    return r


STRIPE_CONFIGS = (("plain", 1, 1), ("1x1", 1, 1), ("2x1", 2, 1), ("4x1", 4, 1))


def part_stripe(a, env, srv):
    size = a.size_mib << 20
    configs = [c for c in STRIPE_CONFIGS if c[0] in a.stripe_configs.split(",")]
    counts = sorted({c[1] for c in configs} | {1})
    runs = {c[0]: {"write_sync_MBps": [], "read_MBps": [], "write_MBps": [], "sync_s": []}
            for c in configs}
    iperf = {n: {"fwd_MBps": [], "rev_MBps": []} for n in counts}
    for rep in range(a.reps):
        srv.stop_all()  # iperf3's servers take the rfsd ports (their HTB classes shape them)
        for n in counts:
            iperf[n]["fwd_MBps"].append(srv.net.iperf(n, a.iperf_secs, False))
            iperf[n]["rev_MBps"].append(srv.net.iperf(n, a.iperf_secs, True))
        srv.start_all()
        for name, count, replicas in configs:
            if name == "plain":
                r = romio(env, srv, "plain.dat", "rfs_compress=none", size)
            else:
                r = romio(env, srv, f"s{name}.rfsm", layout_hints(srv, count, replicas), size)
            w = r["bytes_written"] / r["time"]["write_sync"] / 1e6
            rd = r["bytes_read"] / r["time"]["read"] / 1e6
            runs[name]["write_sync_MBps"].append(w)
            runs[name]["read_MBps"].append(rd)
            # the write phase alone (no sync), and what the sync added to the durable one
            runs[name]["write_MBps"].append(r["bytes_written"] / r["time"]["write"] / 1e6)
            runs[name]["sync_s"].append(r["time"]["write_sync"] - r["time"]["write"])
            log(f"stripe rep {rep} {name}: write+sync {w:.1f} MB/s, read {rd:.1f} MB/s, "
                f"write alone {runs[name]['write_MBps'][-1]:.1f} MB/s, sync ~"
                f"{runs[name]['sync_s'][-1]:.2f} s")
        log(f"stripe rep {rep} iperf3: " + ", ".join(
            f"{n}: {iperf[n]['fwd_MBps'][-1]:.1f}/{iperf[n]['rev_MBps'][-1]:.1f}"
            for n in counts))
    med = statistics.median
    ref_w = med(runs["plain"]["write_sync_MBps"])
    ref_r = med(runs["plain"]["read_MBps"])
    summary = {}
    for name, count, _ in configs:
        w, r = med(runs[name]["write_sync_MBps"]), med(runs[name]["read_MBps"])
        n = count
        summary[name] = {"servers": count, "write_sync_MBps": w, "read_MBps": r,
                         "write_MBps": med(runs[name]["write_MBps"]),
                         "sync_s": med(runs[name]["sync_s"]),
                         "write_vs_one_server": w / ref_w, "read_vs_one_server": r / ref_r,
                         "links_iperf3_fwd_MBps": med(iperf[n]["fwd_MBps"]),
                         "links_iperf3_rev_MBps": med(iperf[n]["rev_MBps"]),
                         "write_vs_iperf3": w / med(iperf[n]["fwd_MBps"]),
                         "read_vs_iperf3": r / med(iperf[n]["rev_MBps"])}
    return {"workload": f"romio_perf independent, 4 ranks, {a.size_mib} MiB in all, "
                        "1 MiB stripe units, tmpfs exports", "size_mib": a.size_mib,
            "links": srv.net.kind,
            "reference": "plain: an ordinary rfs file on server 0 (one server, one link)",
            "goal": "4x1 >= 3.5 x plain (write and read), same run",
            "runs": runs, "iperf3": {str(n): v for n, v in iperf.items()}, "summary": summary}


DEPOT_PATTERNS = ("file_per_process", "shared_collective")


def part_depot(a, env, srv):
    """Fig. 14: depot reordering. 4 ranks write --depot-mib MiB in all over the 4 servers,
    with rfs_depot_order=fixed against rotate (the default), in the same run:
    file_per_process: each rank its own logical file (romio_perf --file-per-process), of one
      stripe unit (rfs_stripe_size = the file's size, 4 columns): all of a file's bytes in its
      column 0, which `fixed` puts on server 0 for every file and `rotate` on server rank;
    shared_collective: one shared file, MPI_File_write_at_all (romio_perf --collective, 1 MiB
      units): a shared file starts on server 0 either way, so the two should match.
    Variants: every link at --link-mbit, and with --depot-slow (links only) one link at a
    quarter of the rate (the paper's slow depots): server 0 (where `fixed` puts every file)
    and server 3. fixed and rotate alternate in which runs first. Timed: the write phase (--no-sync: each write returns when every object has
    replied) and the read phase; the reference is iperf3 through 1 and 4 links in the run."""
    total = a.depot_mib << 20
    per = total // 4
    variants = [("even", None)]
    if a.depot_slow and hasattr(srv.net, "set_rate"):
        variants += [("slow0", 0), ("slow3", 3)]
    runs = {v: {p: {o: {"write_MBps": [], "read_MBps": []} for o in ("fixed", "rotate")}
                for p in DEPOT_PATTERNS if v == "even" or p == "file_per_process"}
            for v, _ in variants}
    iperf = {n: [] for n in (1, 4)}
    servers = ",".join(f"rfs://{srv.addr(i)}" for i in range(NSERVERS))
    for rep in range(a.reps):
        srv.stop_all()
        for n in (1, 4):
            iperf[n].append(srv.net.iperf(n, a.iperf_secs, False))
        srv.start_all()
        for v, slow in variants:
            if slow is not None:
                srv.net.set_rate(slow, a.link_mbit / 4)
            try:
                for pat in runs[v]:
                    # which goes first alternates by repetition: a drift within a repetition
                    # must not look like an effect of the order
                    for order in ("fixed", "rotate") if rep % 2 == 0 else ("rotate", "fixed"):
                        if pat == "file_per_process":
                            hints = (f"rfs_compress=none;rfs_servers={servers};"
                                     f"rfs_stripe_size={per};rfs_stripe_count=4;"
                                     f"rfs_depot_order={order}")
                            extra = ["--file-per-process"]
                        else:
                            hints = (f"rfs_compress=none;rfs_servers={servers};"
                                     f"rfs_stripe_size=1M;rfs_stripe_count=4;"
                                     f"rfs_depot_order={order}")
                            extra = ["--collective"]
                        r = romio(env, srv, f"depot_{v}_{pat}_{order}.rfsm", hints, total,
                                  sync=False, extra=extra)
                        x = runs[v][pat][order]
                        x["write_MBps"].append(r["bytes_written"] / r["time"]["write"] / 1e6)
                        x["read_MBps"].append(r["bytes_read"] / r["time"]["read"] / 1e6)
                        log(f"depot rep {rep} {v} {pat} {order}: write "
                            f"{x['write_MBps'][-1]:.1f} MB/s, read {x['read_MBps'][-1]:.1f} MB/s")
            finally:
                if slow is not None:
                    srv.net.set_rate(slow, a.link_mbit)
    med = statistics.median
    summary = {}
    for v in runs:
        summary[v] = {}
        for pat in runs[v]:
            m = {o: {q: med(x) for q, x in runs[v][pat][o].items()} for o in runs[v][pat]}
            summary[v][pat] = {"median": m,
                               "write_rotate_vs_fixed": m["rotate"]["write_MBps"] /
                               m["fixed"]["write_MBps"],
                               "read_rotate_vs_fixed": m["rotate"]["read_MBps"] /
                               m["fixed"]["read_MBps"]}
    return {"workload": f"romio_perf, 4 ranks, {a.depot_mib} MiB in all over 4 servers",
            "links": srv.net.kind, "slow_link_mbit": a.link_mbit / 4,
            "iperf3_fwd_MBps": {str(n): med(v) for n, v in iperf.items()},
            "iperf3_runs": {str(n): v for n, v in iperf.items()},
            "runs": runs, "summary": summary}


SIZES_CONFIGS = (("plain", 1, 1), ("4x1", 4, 1), ("4x2", 4, 2))


def part_sizes(a, env, srv):
    """Fig. 7 (large contiguous writes by size) and Fig. 8 (what replication costs): romio_perf,
    4 ranks, each writing its share of --sizes-mib MiB (write phase, --no-sync, then read
    back and checked), to the plain file on server 0 (the reference, in the same run), to a
    logical file over the 4 servers, and to one with 2 replicas of every column (twice the
    bytes over the same 4 links)."""
    runs = {c[0]: {str(m): {"write_MBps": [], "read_MBps": []} for m in a.sizes_mib}
            for c in SIZES_CONFIGS}
    for rep in range(a.reps):
        for mib in a.sizes_mib:
            for name, count, replicas in SIZES_CONFIGS:
                if name == "plain":
                    r = romio(env, srv, "sz_plain.dat", "rfs_compress=none", mib << 20,
                              sync=False)
                else:
                    r = romio(env, srv, f"sz_{name}.rfsm", layout_hints(srv, count, replicas),
                              mib << 20, sync=False)
                x = runs[name][str(mib)]
                x["write_MBps"].append(r["bytes_written"] / r["time"]["write"] / 1e6)
                x["read_MBps"].append(r["bytes_read"] / r["time"]["read"] / 1e6)
                log(f"sizes rep {rep} {mib} MiB {name}: write {x['write_MBps'][-1]:.1f} MB/s, "
                    f"read {x['read_MBps'][-1]:.1f} MB/s")
    med = statistics.median
    m = {n: {k: {q: med(v) for q, v in x.items()} for k, x in runs[n].items()} for n in runs}
    ratios = {k: {"4x1_vs_plain_write": m["4x1"][k]["write_MBps"] / m["plain"][k]["write_MBps"],
                  "4x2_vs_4x1_write": m["4x2"][k]["write_MBps"] / m["4x1"][k]["write_MBps"],
                  "4x1_vs_plain_read": m["4x1"][k]["read_MBps"] / m["plain"][k]["read_MBps"],
                  "4x2_vs_4x1_read": m["4x2"][k]["read_MBps"] / m["4x1"][k]["read_MBps"]}
              for k in m["plain"]}
    return {"workload": "romio_perf independent, 4 ranks, write phase (no sync) and read, "
                        "1 MiB units; MiB in all per size",
            "reference": "plain: an ordinary rfs file on server 0", "runs": runs,
            "median": m, "ratios": ratios}


def part_ab(a, env, srv):
    """The 4-server striped write + sync with librfs-mpiio.so of --ab-build (an older build)
    and of this build, alternately: what a change of the layer did, in the same run."""
    size = a.size_mib << 20
    libs = (("other", os.path.join(os.path.abspath(a.ab_build), "librfs-mpiio.so")),
            ("this", runner.rfs_lib()))
    runs = {k: {"write_sync_MBps": [], "write_MBps": [], "read_MBps": []} for k, _ in libs}
    for rep in range(a.reps):
        for k, lib in libs:
            r = romio(env, srv, "ab.rfsm", layout_hints(srv, NSERVERS, 1), size, lib=lib)
            runs[k]["write_sync_MBps"].append(r["bytes_written"] / r["time"]["write_sync"] / 1e6)
            runs[k]["write_MBps"].append(r["bytes_written"] / r["time"]["write"] / 1e6)
            runs[k]["read_MBps"].append(r["bytes_read"] / r["time"]["read"] / 1e6)
            log(f"ab rep {rep} {k}: write+sync {runs[k]['write_sync_MBps'][-1]:.1f} MB/s, "
                f"write {runs[k]['write_MBps'][-1]:.1f} MB/s")
    med = statistics.median
    m = {k: {q: med(v) for q, v in runs[k].items()} for k in runs}
    return {"workload": f"romio_perf, 4 ranks, {a.size_mib} MiB in all, logical file over the 4 "
                        "servers (1 MiB units)", "other_build": os.path.abspath(a.ab_build),
            "runs": runs, "median": m,
            "write_sync_this_vs_other": m["this"]["write_sync_MBps"] /
            m["other"]["write_sync_MBps"]}


def chunkread(env, srv, name, size, hints, kill=None):
    """chunkread on 4 ranks; kill = (server, seconds after the reads started) or None."""
    argv = wanlib.in_ns(env["RFS_WAN_CLIENT_NS"], runner.mpiexec_argv(
        "mpich", 4, mpi_env(srv.token, hints), True) + [
        os.path.join(BINDIR, "chunkread"), target(srv, name), "--size", str(size // 4),
        "--chunk", str(4 << 20)])
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed_at = None
    try:
        wanlib.wait_line(p, "reading", 120)
        t0 = time.monotonic()
        if kill:
            time.sleep(kill[1])
            srv.kill(kill[0])
            killed_at = time.monotonic() - t0
        out, err = p.communicate(timeout=600)
    finally:
        if p.poll() is None:
            wanlib.stop(p)
    # wait_line read the first line itself; the JSON line is among the rest
    line = next((x for x in out.decode().splitlines() if x.startswith("{")), None)
    if not line:
        raise RuntimeError(f"chunkread: rc {p.returncode}: {err.decode()[-800:]}")
    r = json.loads(line)
    r["rc"] = p.returncode
    r["killed_at_s"] = killed_at
    return r


def read_stats(r):
    gaps = []
    for ts in r["times"]:
        prev = 0.0
        for t in ts:
            gaps.append(t - prev)
            prev = t
    k = r["killed_at_s"]
    # after a kill: when every rank had received a piece again (its first piece after the kill
    # was in flight across it), the time to recover as the readers see it
    back = (max(next((t for t in ts if t > k), ts[-1]) for ts in r["times"]) - k
            if k is not None else None)
    return {"total_s": max(ts[-1] for ts in r["times"]), "max_wait_s": max(gaps),
            "every_rank_progressed_after_kill_s": back,
            "median_wait_s": statistics.median(gaps), "bytes_read": r["bytes_read"],
            "errors": r["errors"], "rc": r["rc"], "killed_at_s": r["killed_at_s"]}


def part_failover(a, env, srv):
    size = a.size_mib << 20
    hints = layout_hints(srv, NSERVERS, 2)
    romio(env, srv, "fo.rfsm", hints, size, sync=False, verify=False)
    runs = []
    for rep in range(a.reps):
        clean = chunkread(env, srv, "fo.rfsm", size, "rfs_compress=none")
        cs = read_stats(clean)
        when = a.kill_at * cs["total_s"]
        fault = chunkread(env, srv, "fo.rfsm", size, "rfs_compress=none", kill=(1, when))
        fs = read_stats(fault)
        srv.start(1)
        runs.append({"clean": cs, "faulted": fs, "clean_times": clean["times"],
                     "faulted_times": fault["times"]})
        log(f"failover rep {rep}: clean {cs['total_s']:.2f} s (longest piece "
            f"{cs['max_wait_s']:.2f} s), killed at {fs['killed_at_s']:.2f} s: "
            f"{fs['total_s']:.2f} s (longest {fs['max_wait_s']:.2f} s), "
            f"{fs['bytes_read']} bytes, {fs['errors']} wrong words, rc {fs['rc']}")
    med = statistics.median
    return {"workload": f"4x2 logical file (4 columns, 2 replicas, 1 MiB units), "
                        f"{a.size_mib} MiB written by romio_perf; chunkread 4 ranks, 4 MiB "
                        f"pieces, every word checked; server 1's rfsd SIGKILLed at "
                        f"{a.kill_at} of the undisturbed read's duration",
            "runs": runs,
            "summary": {"clean_total_s": med(r["clean"]["total_s"] for r in runs),
                        "faulted_total_s": med(r["faulted"]["total_s"] for r in runs),
                        "clean_max_wait_s": med(r["clean"]["max_wait_s"] for r in runs),
                        "faulted_max_wait_s": med(r["faulted"]["max_wait_s"] for r in runs),
                        "stall_s": med(r["faulted"]["max_wait_s"] - r["clean"]["median_wait_s"]
                                       for r in runs),
                        "every_rank_progressed_after_kill_s": med(
                            r["faulted"]["every_rank_progressed_after_kill_s"] for r in runs),
                        "clean_median_wait_s": med(r["clean"]["median_wait_s"] for r in runs),
                        "all_bytes_correct": all(r["faulted"]["errors"] == 0 and
                                                 r["faulted"]["rc"] == 0 and
                                                 r["faulted"]["bytes_read"] == size
                                                 for r in runs),
                        "bytes_per_run": size}}


def synthetic(env, srv, name, hints, args, ranks):
    argv = [os.path.join(BINDIR, "synthetic"), target(srv, name)] + args
    return run_app(env, ranks, mpi_env(srv.token, hints), argv)


def part_small(a, env, srv):
    """Fig. 9 (small contiguous writes: direct vs buffered) and Fig. 11 (strided reads: direct
    vs data sieving) on a 4-server logical file."""
    out = {"small": {}, "strided": {}}
    s = a.small_size
    modes = (("direct", ""), ("buffered", ";rfs_manifest_mode=buffered"))
    rmodes = (("direct", ""), ("sieve", ";rfs_manifest_read=sieve"),
              # what the paper's direct mode did: a request per region (no list I/O)
              ("per_region", ";rfs_max_extents=1"))
    runs = {m: [] for m, _ in modes}
    sruns = {n: {m: [] for m, _ in rmodes if m != "per_region" or n <= a.per_region_max}
             for n in a.strided_regions}
    for rep in range(a.reps):
        for m, extra in modes:
            count = a.small_count_direct if m == "direct" else a.small_count
            r = synthetic(env, srv, f"small_{m}.rfsm", layout_hints(srv, NSERVERS, 1, extra),
                          ["--only", "small", "--timed-sync", "--bulk-read", "--small-min", str(s),
                           "--small-max", str(s), "--max-calls", str(count),
                           "--small-budget", str(count * s)],
                          a.small_ranks)
            c = r["cases"][0]
            if c["errors"]:
                raise RuntimeError(f"small {m}: {c['errors']} wrong bytes read back")
            runs[m].append({"calls_per_rank": count, "bytes": c["bytes"],
                            "write_s": c["write_sec"], "read_s": c["read_sec"],
                            "errors": c["errors"],
                            "write_MBps": c["bytes"] / c["write_sec"] / 1e6})
            log(f"small rep {rep} {m}: {count} x {s} B per rank, "
                f"{runs[m][-1]['write_MBps']:.3f} MB/s")
        for regions in a.strided_regions:
            for m, extra in rmodes:
                if m == "per_region" and regions > a.per_region_max:
                    continue  # a round trip per region: too long to wait for
                r = synthetic(env, srv, f"strided_{m}.rfsm",
                              layout_hints(srv, NSERVERS, 1, extra),
                              ["--only", "strided", "--strided-total", str(a.strided_total),
                               "--min-regions", str(regions), "--max-regions", str(regions)],
                              4)
                c = r["cases"][0]
                sruns[regions][m].append({"bytes": c["bytes"], "write_s": c["write_sec"],
                                          "read_s": c["read_sec"], "errors": c["errors"],
                                          "read_MBps": c["bytes"] / c["read_sec"] / 1e6})
                log(f"strided rep {rep} {regions} regions {m}: read "
                    f"{sruns[regions][m][-1]['read_MBps']:.2f} MB/s")
    med = statistics.median
    bw = {m: med(x["write_MBps"] for x in runs[m]) for m in runs}
    out["small"] = {"write_size": s, "ranks": a.small_ranks, "runs": runs,
                    "write_MBps": bw, "buffered_vs_direct": bw["buffered"] / bw["direct"],
                    "goal": "buffered >= 150 x direct for 1 KiB writes",
                    "note": "bandwidth of the write phase (the calls, then MPI_File_sync: the "
                            "buffered mode's flush is inside the timed phase); direct makes "
                            "fewer calls (each a round trip) to keep the run short"}
    cases = {}
    for n in a.strided_regions:
        rbw = {m: med(x["read_MBps"] for x in sruns[n][m]) for m in sruns[n]}
        assert all(x["errors"] == 0 for m in sruns[n] for x in sruns[n][m])
        cases[str(n)] = {"region_bytes": a.strided_total // n, "runs": sruns[n],
                         "read_MBps": rbw, "sieve_vs_direct": rbw["sieve"] / rbw["direct"]}
        if "per_region" in rbw:
            cases[str(n)]["sieve_vs_per_region"] = rbw["sieve"] / rbw["per_region"]
    out["strided"] = {"bytes_per_rank": a.strided_total, "ranks": 4, "cases": cases}
    return out


def part_sweep(a, env, srv):
    """Fig. 6 (contiguous writes of 1 B .. 1 MiB, one rank, direct vs buffered) and Fig. 13
    (2-D tiles, 4 ranks, collective and independent, direct vs buffered writes with sieved
    reads) on a 4-server logical file."""
    modes = (("direct", ""), ("buffered", ";rfs_manifest_mode=buffered"))
    tmodes = (("direct", ""),
              ("buffered_sieve", ";rfs_manifest_mode=buffered;rfs_manifest_read=sieve"))
    sizes, tiles = {m: {} for m, _ in modes}, {m: {} for m, _ in tmodes}
    for rep in range(a.reps):
        for m, extra in modes:
            r = synthetic(env, srv, f"sweep_{m}.rfsm", layout_hints(srv, NSERVERS, 1, extra),
                          ["--only", "small", "--timed-sync", "--bulk-read", "--small-min", "1",
                           "--small-max", str(1 << 20), "--max-calls", str(a.sweep_calls),
                           "--small-budget", str(a.sweep_calls << 20)], 1)
            for c in r["cases"]:
                if c["errors"]:
                    raise RuntimeError(f"sweep {m} {c['name']}: {c['errors']} wrong bytes")
                sizes[m].setdefault(str(c["size"]), []).append(c["bytes"] / c["write_sec"] / 1e6)
            log(f"sweep rep {rep} {m}: " + ", ".join(
                f"{k}: {v[-1]:.3g}" for k, v in sizes[m].items()))
        for m, extra in tmodes:
            r = synthetic(env, srv, f"tile_{m}.rfsm", layout_hints(srv, NSERVERS, 1, extra),
                          ["--only", "tile", "--timed-sync", "--tile", str(a.tile)], 4)
            for c in r["cases"]:
                if c["errors"]:
                    raise RuntimeError(f"tile {m} {c['name']}: {c['errors']} wrong values")
                t = tiles[m].setdefault(c["name"], {"write_MBps": [], "read_MBps": []})
                t["write_MBps"].append(c["bytes"] / c["write_sec"] / 1e6)
                t["read_MBps"].append(c["bytes"] / c["read_sec"] / 1e6)
            log(f"tile rep {rep} {m}: " + ", ".join(
                f"{k} w {v['write_MBps'][-1]:.3g} r {v['read_MBps'][-1]:.3g}"
                for k, v in tiles[m].items()))
    med = statistics.median
    return {"sizes": {"ranks": 1, "calls_per_size": a.sweep_calls,
                      "write_MBps": {m: {k: med(v) for k, v in sizes[m].items()} for m in sizes},
                      "runs": sizes,
                      "note": "write + MPI_File_sync timed together, one rank"},
            "tiles": {"ranks": 4, "side": a.tile,
                      "median": {m: {k: {q: med(x) for q, x in v.items()}
                                     for k, v in tiles[m].items()} for m in tiles},
                      "runs": tiles,
                      "note": "subarray views; the write phase is the write and "
                              "MPI_File_sync, timed together"}}


def part_noncontig(a, env, srv):
    """Fig. 10 (log-structured noncontiguous writes) and Fig. 11(b) (reading a log-written file
    back): 4 ranks each write --noncontig-total bytes in ONE strided write of n regions (a
    vector view, each region followed by a hole of its size), then MPI_File_sync (timed with
    the write), then read them back the same way; rfs_manifest_mode=log against direct list
    writes (rfs's default: one list request per stripe object) and against a request per region
    (rfs_max_extents=1, the paper's "naive" direct mode), on a logical file over the 4
    servers (1 MiB units). Each mode writes a file of its own."""
    modes = (("log", ";rfs_manifest_mode=log"), ("direct_list", ""),
             ("direct_per_region", ";rfs_max_extents=1"))
    def skip(m, n):  # a round trip per region: too long to wait for
        return m == "direct_per_region" and n > a.noncontig_per_region_max

    runs = {str(n): {m: [] for m, _ in modes if not skip(m, n)} for n in a.noncontig_regions}
    for rep in range(a.reps):
        for n in a.noncontig_regions:
            for m, extra in modes:
                if skip(m, n):
                    continue
                r = synthetic(env, srv, f"noncontig_{m}_{n}_{rep}.rfsm",
                              layout_hints(srv, NSERVERS, 1, extra),
                              ["--only", "strided"] +
                              ([] if a.noncontig_untimed_sync else ["--timed-sync"]) +
                              ["--strided-total", str(a.noncontig_total), "--min-regions", str(n),
                               "--max-regions", str(n)], 4)
                c = r["cases"][0]
                if c["errors"]:
                    raise RuntimeError(f"noncontig {m} {n}: {c['errors']} wrong bytes read back")
                runs[str(n)][m].append({"bytes": c["bytes"], "write_s": c["write_sec"],
                                        "read_s": c["read_sec"], "errors": c["errors"],
                                        "write_MBps": c["bytes"] / c["write_sec"] / 1e6,
                                        "read_MBps": c["bytes"] / c["read_sec"] / 1e6})
                log(f"noncontig rep {rep} {n} regions {m}: write+sync "
                    f"{runs[str(n)][m][-1]['write_MBps']:.2f} MB/s, read "
                    f"{runs[str(n)][m][-1]['read_MBps']:.2f} MB/s")
    med = statistics.median
    cases = {}
    for n, byn in runs.items():
        w = {m: med(x["write_MBps"] for x in byn[m]) for m in byn}
        rd = {m: med(x["read_MBps"] for x in byn[m]) for m in byn}
        cases[n] = {"region_bytes": a.noncontig_total // int(n), "runs": byn,
                    "write_MBps": w, "read_MBps": rd,
                    "log_vs_direct_list_write": w["log"] / w["direct_list"],
                    "log_written_read_vs_direct": rd["log"] / rd["direct_list"]}
        if "direct_per_region" in w:
            cases[n]["log_vs_per_region_write"] = w["log"] / w["direct_per_region"]
    sync = ("the write alone (MPI_File_sync after it, untimed)" if a.noncontig_untimed_sync
            else "then MPI_File_sync, timed together")
    return {"bytes_per_rank": a.noncontig_total, "ranks": 4, "cases": cases,
            "sync_timed": not a.noncontig_untimed_sync,
            "note": f"one strided write per rank of n regions (hole = region), {sync}; read "
                    "back in one strided read each; MB/s of all ranks' bytes over the phase"}


BINDIR = None
PARTS = ("stripe", "stripe512", "depot", "sizes", "failover", "small", "sweep", "noncontig")


def main():
    global BINDIR
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="stripe,failover,small,sweep")
    ap.add_argument("--sweep-calls", type=int, default=16)
    ap.add_argument("--tile", type=int, default=1024)
    ap.add_argument("--ab-build", help="part ab: the build directory to compare with")
    ap.add_argument("--links", choices=("ns", "htb"), default="ns",
                    help="ns: a namespace and a shaped link per server; htb: one namespace, "
                         "one link divided per port")
    ap.add_argument("--ns-net", default="10.79.40",
                    help="--links ns: link i's /24 is the third octet + i")
    ap.add_argument("--stripe-configs", default="plain,1x1,2x1,4x1")
    ap.add_argument("--depot-mib", type=int, default=64)
    ap.add_argument("--depot-slow", type=int, default=1)
    ap.add_argument("--sizes-mib", type=lambda v: [int(x) for x in v.split(",")],
                    default=[4, 16, 64])
    ap.add_argument("--link-mbit", type=float, default=200)
    ap.add_argument("--delay-ms", type=float, default=10)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--iperf-secs", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--kill-at", type=float, default=0.4)
    ap.add_argument("--small-size", type=int, default=1024)
    ap.add_argument("--small-count", type=int, default=16384)
    ap.add_argument("--small-count-direct", type=int, default=256)
    ap.add_argument("--small-ranks", type=int, default=1)
    ap.add_argument("--strided-total", type=int, default=4 << 20)
    ap.add_argument("--per-region-max", type=int, default=1024)
    ap.add_argument("--strided-regions", type=lambda v: [int(x) for x in v.split(",")],
                    default=[1024, 65536])
    ap.add_argument("--noncontig-total", type=int, default=4 << 20)
    ap.add_argument("--noncontig-regions", type=lambda v: [int(x) for x in v.split(",")],
                    default=[1, 16, 64, 256, 4096])
    ap.add_argument("--noncontig-per-region-max", type=int, default=256)
    ap.add_argument("--noncontig-untimed-sync", action="store_true",
                    help="noncontig: time the write without MPI_File_sync (where the time goes)")
    ap.add_argument("--out", default=os.path.join(BENCH, "results", "manifest_wan.json"))
    a = ap.parse_args()
    parts = [p for p in a.parts.split(",") if p]
    BINDIR = runner.build_apps("mpich")
    t0 = time.time()
    load = [os.getloadavg()[0]]
    net = NsNet(a) if a.links == "ns" else HtbNet(a)
    work = tempfile.mkdtemp(prefix="rfs-manifest-wan-", dir="/dev/shm")
    srv = None
    links = ("a network namespace per server, each with its own delayd link and tbf "
             "(bench/wan/up joined to one client namespace)" if a.links == "ns" else
             "bench/mpisrv's per-port HTB classes: one link per server")
    doc = {"benchmark": "manifest_wan", "issue": 17,
           "params": {"link_mbit": a.link_mbit, "delay_ms_each_way": a.delay_ms,
                      "servers": NSERVERS, "reps": a.reps, "size_mib": a.size_mib,
                      "links": links, "links_kind": a.links}}
    try:
        net.bring_up()
        env = net.env
        srv = Servers(net, work, secrets.token_hex(16))
        parts_fn = {"stripe": part_stripe, "depot": part_depot, "sizes": part_sizes,
                    "failover": part_failover, "noncontig": part_noncontig,
                    "small": part_small, "sweep": part_sweep, "ab": part_ab,
                    "stripe512": lambda a, e, s: part_stripe(
                        argparse.Namespace(**dict(vars(a), size_mib=512)), e, s)}
        for part in parts:
            log(f"part {part}")
            doc[part] = parts_fn[part](a, env, srv)
            load.append(os.getloadavg()[0])
    finally:
        if srv:
            srv.stop_all()
        shutil.rmtree(work, ignore_errors=True)
        net.down()
    doc["duration_s"] = round(time.time() - t0, 1)
    doc["loadavg_1min_seen"] = load
    doc["started"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t0))
    if os.path.exists(a.out) and set(parts) != set(PARTS):
        # a run of some parts keeps the other parts' last results
        with open(a.out) as f:
            old = json.load(f)
        for k in PARTS:
            if k not in doc and k in old:
                doc[k] = old[k]
    wanlib.emit_json(doc, a.out)
    sys.path.insert(0, HERE)
    import plots  # noqa: E402
    import report  # noqa: E402
    plots.plot_all(a.out, os.path.dirname(a.out))
    if os.path.dirname(os.path.abspath(a.out)) == os.path.join(BENCH, "results"):
        report.write_report(os.path.join(BENCH, "results"))


if __name__ == "__main__":
    main()
