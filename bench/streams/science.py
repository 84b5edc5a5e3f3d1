#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Science data through MPI-IO on a long fat pipe (issue #12): rfs with its defaults against
sshfs with its defaults, the same application writing the same data.

bench/streams/run.py measures the link with incompressible data (and romio_perf with
compression off), where no tool can beat the link: there rfs's MPI-IO collective write is about
3x sshfs because sshfs reaches a third of a 1 Gbit/s, 50 ms link. This script measures what a
user writing simulation fields gets: bench/apps/jacobi3d (4 MPICH ranks, a 96^3 global grid,
one snapshot every 8 sweeps written collectively through a subarray view: 152 snapshots, 1.07
GB of doubles, the data bench/compress calls the smooth field), to
  - rfs: librfs-mpiio.so with no hints (auto streams, auto compression: what a user gets),
  - rfs-nocompress: the same with rfs_compress=none (what the streams alone give),
  - sshfs: the collective write into an sshfs mount of the same server (its defaults),
  - sshfs-compress: the same with ssh's own compression (-o Compression=yes),
interleaved by repetition, with iperf3 -P 4 through the same link as the link's reference.
Rate = bytes written / (open + write + close) (each the slowest rank's); every rfs run's last
snapshot is read back and checked by jacobi3d itself. Both host profiles (default: 4 MiB
socket buffer maxima; tuned: 64 MiB).

--workload dump measures the checkpoint-dump pattern instead, with no computation between
writes: bench/apps/romio_perf --collective (4 ranks, 1 MiB blocks interleaved, two-phase; the
workload of bench/streams/run.py's "MPI-IO collective write") whose arrays hold the same smooth
field (bench/lib/fields.py, --size-mib in all; romio_perf --data), rfs (defaults and
rfs_compress=none) against sshfs. Rate = bytes / time of romio_perf's write_sync phase (the
same collective write again, then MPI_File_sync: what reached the server), as run.py takes it;
every rfs run's read phase compares the bytes read back with the field (the sshfs runs leave
the read phase out: it is not measured and would double their time).

    flock /tmp/rfs-bench.lock /usr/bin/python3 bench/streams/science.py [--profiles default,tuned]
        [--rate-mbit 1000] [--delay-ms 25] [--reps 3] [--workload jacobi|dump]
        [--size-mib 1024] [--out bench/results/streams_science.json]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as streams  # noqa: E402  (the WAN, rfsd and anchors of bench/streams/run.py)
from run import wanlib, runner, log, med  # noqa: E402
sys.path.insert(0, os.path.join(streams.BENCH, "lib"))
from fields import smooth_field  # noqa: E402

CONFIGS = ["rfs", "rfs-nocompress", "sshfs", "sshfs-compress"]
# sshfs with ssh's compression moved the jacobi3d field at half sshfs's own rate (one zlib
# thread): at 1 GiB it would take minutes per run and add nothing
DUMP_CONFIGS = ["rfs", "rfs-nocompress", "sshfs"]
JACOBI = ["--local", "48", "--iters", "1216", "--every", "8"]


def io_rate(js):
    with open(js) as f:
        r = json.load(f)
    t = r["time"]
    if r.get("verify_errors"):
        raise RuntimeError(f"jacobi3d: {r['verify_errors']} verify errors")
    return r["bytes_written"] / (t["open"] + t["write"] + t["close"]) / 1e6, r["bytes_written"]


def jacobi_argv(bindir, target, js):
    return [os.path.join(bindir, "jacobi3d"), target, "--json", js] + JACOBI


def dump_rate(js, verified=True):
    with open(js) as f:
        r = json.load(f)
    if r.get("verify") != ("ok" if verified else "skipped"):
        raise RuntimeError(f"romio_perf --data: read back {r.get('verify_errors')} wrong words")
    return r["bytes_written"] / r["time"]["write_sync"] / 1e6, r["bytes_written"]


def dump_argv(bindir, target, js, data, size, read=True):
    return [os.path.join(bindir, "romio_perf"), target, "--size", str(size // 4), "--collective",
            "--data", data, "--json", js] + ([] if read else ["--no-read"])


def fresh_json(work, name):
    js = os.path.join(work, name)
    if os.path.exists(js):
        os.unlink(js)
    return js


def app_on_rfs(env, token, port, bindir, hints, argv_for, what, js, timeout):
    """4 MPICH ranks of argv_for(target) through librfs-mpiio.so with hints ("" = none)."""
    preload = [p for p in (runner.mpich_preload(bindir), runner.rfs_lib()) if p]
    menv = {"RFS_TOKEN": token, "LD_PRELOAD": ":".join(preload)}
    if hints:
        menv["RFS_HINTS"] = hints
    argv = wanlib.in_ns(env["RFS_WAN_CLIENT_NS"], runner.mpiexec_argv("mpich", 4, menv, True) +
                        argv_for(f"rfs:{env['RFS_WAN_SERVER_ADDR']}:{port}:"))
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if p.returncode or not os.path.exists(js):
        raise RuntimeError(f"{what} on rfs ({hints or 'defaults'}): rc {p.returncode}: "
                           f"{p.stderr.strip()[-400:]}")


def app_on_sshfs(bindir, xexp, argv_for, what, js, timeout, env=None):
    """4 MPICH ranks of argv_for(target) in an sshfs mount of the server's export."""
    preload = runner.mpich_preload(bindir)
    menv = {"LD_PRELOAD": preload} if preload else {}
    inner = " ".join(runner.mpiexec_argv("mpich", 4, menv, True) +
                     argv_for("$RFS_SSHFS_MOUNT"))
    p = subprocess.run([os.path.join(streams.BENCH, "anchors", "sshfs-run"), xexp, "bash", "-c",
                        inner], capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode or not os.path.exists(js):
        raise RuntimeError(f"{what} on sshfs: rc {p.returncode}: {p.stderr.strip()[-400:]}")


def dump_on_rfs(env, token, port, bindir, work, hints, data, size, timeout):
    js = fresh_json(work, "dump.json")
    app_on_rfs(env, token, port, bindir, hints,
               lambda at: dump_argv(bindir, at + "/dump.dat", js, data, size), "romio_perf", js,
               timeout)
    return dump_rate(js)


def dump_on_sshfs(bindir, xexp, work, data, size, timeout):
    js = fresh_json(work, "dump-sshfs.json")
    app_on_sshfs(bindir, xexp, lambda at: dump_argv(bindir, at + "/dump.dat", js, data, size,
                                                     False), "romio_perf", js, timeout)
    return dump_rate(js, verified=False)


def on_rfs(env, token, port, bindir, work, hints, timeout):
    js = fresh_json(work, "jacobi.json")
    app_on_rfs(env, token, port, bindir, hints, lambda at: jacobi_argv(bindir, at + "/jac.dat", js),
               "jacobi3d", js, timeout)
    return io_rate(js)


def on_sshfs(bindir, xexp, work, compress, timeout):
    js = fresh_json(work, "jacobi-sshfs.json")
    env = dict(os.environ)
    if compress:
        env["RFS_SSHFS_OPTS"] = "Compression=yes"
    app_on_sshfs(bindir, xexp, lambda at: jacobi_argv(bindir, at + "/jac.dat", js), "jacobi3d",
                 js, timeout, env)
    return io_rate(js)


def one_profile(name, buf_mb, a, bindir):
    env = streams.wan_up(a.rate_mbit, a.delay_ms, buf_mb)
    work = tempfile.mkdtemp(prefix="rfs-science-",
                            dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    srv = xrd_url = None
    configs = DUMP_CONFIGS if a.workload == "dump" else CONFIGS
    res = {"profile": name, "tcp_buf_max_mb": buf_mb, "tcp_cc": env.get("RFS_WAN_TCP_CC"),
           "iperf3_P4_MBps": [], "MBps": {c: [] for c in configs}, "bytes": None,
           "errors": []}
    try:
        srv, root, token, port = streams.start_rfsd(env, work)
        xrd_url, xexp = streams.anchors_up(work)
        data = a.data
        for rep in range(a.reps):
            log(f"science {name}: repetition {rep + 1}/{a.reps}")
            res["iperf3_P4_MBps"].append(wanlib.iperf3(env, 4, a.iperf_seconds, 2)["mbit_s"] / 8)
            # the configurations take turns going first
            order = configs[rep % len(configs):] + configs[:rep % len(configs)]
            for c in order:
                try:
                    if a.workload == "dump":
                        rate, nbytes = dump_one(c, env, token, port, bindir, work, root, xexp,
                                                data, a)
                    elif c.startswith("rfs"):
                        hints = "rfs_compress=none" if c == "rfs-nocompress" else ""
                        rate, nbytes = on_rfs(env, token, port, bindir, work, hints, a.timeout)
                        os.unlink(os.path.join(root, "jac.dat"))
                    else:
                        rate, nbytes = on_sshfs(bindir, xexp, work, c == "sshfs-compress",
                                                a.timeout)
                        os.unlink(os.path.join(xexp, "jac.dat"))
                    res["MBps"][c].append(rate)
                    res["bytes"] = nbytes
                    log(f"  {c}: {rate:.1f} MB/s")
                except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
                    res["errors"].append(str(e)[-300:])
    finally:
        if xrd_url:
            streams.anchors_down()
        if srv:
            wanlib.stop(srv)
        shutil.rmtree(work, ignore_errors=True)
        streams.wan_down()
    link = med(res["iperf3_P4_MBps"])
    m = {"iperf3_P4_MBps": link, "MBps": {c: med(v) for c, v in res["MBps"].items()}}
    ssh = m["MBps"]["sshfs"]
    m["vs_sshfs"] = {c: round(v / ssh, 2) if v and ssh else None for c, v in m["MBps"].items()}
    m["vs_link"] = {c: round(v / link, 2) if v and link else None for c, v in m["MBps"].items()}
    r = m["vs_sshfs"]["rfs"]
    what = "jacobi3d" if a.workload == "jacobi" else "romio_perf --collective, smooth field"
    m["goals"] = {f"MPI-IO collective write (rfs defaults) >= 3.5 x sshfs (defaults), {what}":
                  {"ratio": r, "met": r is not None and r >= 3.5}}
    res["median"] = m
    return res


def dump_one(c, env, token, port, bindir, work, root, xexp, data, a):
    size = a.size_mib << 20
    if c.startswith("rfs"):
        hints = "rfs_compress=none" if c == "rfs-nocompress" else ""
        r = dump_on_rfs(env, token, port, bindir, work, hints, data, size, a.timeout)
        os.unlink(os.path.join(root, "dump.dat"))
    else:
        r = dump_on_sshfs(bindir, xexp, work, data, size, a.timeout)
        os.unlink(os.path.join(xexp, "dump.dat"))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profiles", default="default,tuned")
    ap.add_argument("--rate-mbit", type=float, default=1000)
    ap.add_argument("--delay-ms", type=float, default=25)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iperf-seconds", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--workload", choices=("jacobi", "dump"), default="jacobi")
    ap.add_argument("--size-mib", type=int, default=1024, help="dump: bytes written per run")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.out is None:
        a.out = os.path.join(streams.BENCH, "results", "streams_science.json"
                             if a.workload == "jacobi" else "streams_science_dump.json")
    if a.workload == "dump" and (a.size_mib < 4 or a.size_mib % 4):
        raise SystemExit("--size-mib must be a multiple of 4 (four ranks, 1 MiB blocks)")
    if os.geteuid() != 0:
        raise SystemExit("bench/streams/science.py needs root (network namespaces)")
    if os.path.exists(os.path.join(wanlib.STATE, "config.env")):
        raise SystemExit("a WAN is already up (bench/wan/down first): this benchmark sets its own")
    bindir = runner.build_apps("mpich")
    data_dir = tempfile.mkdtemp(prefix="rfs-science-data-", dir="/dev/shm"
                                if os.path.isdir("/dev/shm") else None)
    a.data = os.path.join(data_dir, "smooth.bin")
    if a.workload == "dump":
        log(f"writing {a.size_mib} MiB of the smooth field")
        smooth_field(a.data, a.size_mib << 20)
    doc = {"benchmark": "streams_science", "rate_mbit": a.rate_mbit,
           "delay_ms_one_way": a.delay_ms, "reps": a.reps, "workload": a.workload,
           "app": ("jacobi3d " + " ".join(JACOBI) if a.workload == "jacobi" else
                   f"romio_perf --collective --data <smooth field> --size {a.size_mib}MiB/4"),
           "ranks": 4, "cpus": os.cpu_count(), "loadavg_1m_start": os.getloadavg()[0],
           "profiles": {}}
    try:
        for name in a.profiles.split(","):
            doc["profiles"][name] = one_profile(name, streams.PROFILES[name], a, bindir)
            print(json.dumps(doc["profiles"][name]["median"]), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    doc["load_avg_at_end"] = os.getloadavg()
    wanlib.emit_json(doc, a.out)


if __name__ == "__main__":
    main()
