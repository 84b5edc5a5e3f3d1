#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Filling a long fat pipe (issue #12): rfs with 1, 2, 4 streams and auto against iperf3.

For each host profile it brings the emulated WAN up (bench/wan/up --rate-mbit R --delay-ms D
--tcp-buf-mb B; `default` is B=4, the socket buffer maxima of many stock hosts, `tuned` is 64),
starts rfsd in the server namespace, then in the client namespace measures, interleaved by
repetition so load drift hits every configuration alike:
  - iperf3 -P 4 and -P 1 (the link's reference: steady state, the first 2 s left out), and
    iperf3 -P 4 moving the same --size-mib from a cold start (-n; MB/s over the wall time of
    the client command, as rfs put's rate is taken: what raw TCP gives the same transfer);
  - rfs put and rfs get of --size-mib (streams 1, 2, 4, auto), rate = bytes / wall time of
    the command (includes open, sync and rename: what a user waits for);
  - MPI-IO: bench/apps/romio_perf with 4 ranks, each writing size/4 through librfs-mpiio.so
    with rfs_streams = 1, 2, 4, auto (bytes over the time of its write-then-MPI_File_sync
    phase: what reached the server's disk), with
    independent writes (mpiio_write) and with collective writes whose 1 MiB blocks interleave
    (romio_perf --collective: two-phase, the node's aggregator moves all the data;
    mpiio_coll_write);
  - the tools users would pick instead, in the same repetitions: xrdcp put and get of the same
    file to an XRootD server in the server namespace, and the collective romio_perf in an
    sshfs mount of the server (unless --no-anchors).
It prints one JSON document (medians of --reps runs, ratios to iperf3 -P 4 measured in the
same run) and writes it to --out. Every process started is stopped by PID; the WAN is taken
down at the end.

    flock /tmp/rfs-bench.lock /usr/bin/python3 bench/streams/run.py [--profiles default,tuned]
        [--rate-mbit 1000] [--delay-ms 25] [--size-mib 1024] [--reps 3] [--no-anchors]
        [--streams 1,2,4,auto] [--kinds put,get,mpiio]
        [--out bench/results/streams.json]
--kinds leaves out whole workloads (the steady-state run, bench/results/streams_large.json, is
put and get of 4 GiB with auto streams: `--size-mib 4096 --streams auto --kinds put,get
--no-anchors`).
Goals (issue #12): auto >= 0.95 of iperf3 -P 4 for put, get and the MPI-IO collective write on
both profiles; the MPI-IO collective write >= 3.5x the same workload on sshfs.
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
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
REPO = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(BENCH, "wan"))
sys.path.insert(0, os.path.join(BENCH, "lib"))
sys.path.insert(0, os.path.join(BENCH, "anchors"))
import wanlib  # noqa: E402
import runner  # noqa: E402
import anchorlib as al  # noqa: E402

PROFILES = {"default": 4, "tuned": 64}
STREAMS = ["1", "2", "4", "auto"]


def log(msg):
    print(f"[streams] {msg}", file=sys.stderr, flush=True)


def wan_up(rate, delay, buf_mb):
    up = os.path.join(BENCH, "wan", "up")
    r = subprocess.run([up, "--rate-mbit", str(rate), "--delay-ms", str(delay), "--tcp-buf-mb",
                        str(buf_mb)], capture_output=True, text=True, timeout=180)
    if r.returncode:
        raise SystemExit(f"bench/wan/up failed: {r.stderr.strip()[-400:]}")
    return wanlib.load_env()


def wan_down():
    subprocess.run([os.path.join(BENCH, "wan", "down")], capture_output=True, timeout=120)


def start_rfsd(env, work):
    root = os.path.join(work, "export")
    os.makedirs(root, exist_ok=True)
    token = secrets.token_hex(16)
    tf = os.path.join(work, "token")
    with open(tf, "w") as f:
        f.write(token)
    os.chmod(tf, 0o600)
    proc = wanlib.start(env["RFS_WAN_SERVER_NS"],
                        [runner.rfs_daemon(), "--root", root, "--listen",
                         env["RFS_WAN_SERVER_ADDR"] + ":0", "--token-file", tf],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if not line.startswith("rfsd listening on "):
        wanlib.stop(proc)
        raise SystemExit(f"rfsd did not start: {line!r}")
    port = int(line.split()[-1].rsplit(":", 1)[1])
    return proc, root, token, port


def cli(env, token, args, timeout):
    rfs = os.path.join(runner.rfs_build_dir(), "rfs")
    e = dict(os.environ, RFS_TOKEN=token, RFS_CONFIG="")
    t0 = time.monotonic()
    p = subprocess.run(wanlib.in_ns(env["RFS_WAN_CLIENT_NS"], [rfs, args[0], "--quiet", *args[1:]]),
                       capture_output=True, text=True, timeout=timeout, env=e)
    if p.returncode:
        raise RuntimeError(f"rfs {' '.join(args)}: {p.stderr.strip()[-300:]}")
    return time.monotonic() - t0


def romio_argv(bindir, target, size, js, collective):
    return [os.path.join(bindir, "romio_perf"), target, "--size", str(size // 4), "--no-verify",
            "--json", js] + (["--collective"] if collective else [])


def read_bw(js):
    """The durable write rate: the bytes of the write_sync phase (the same writes again, then
    MPI_File_sync) over its time. The plain write phase returns once the write window or
    ABT has the bytes, so on small files it can exceed the link."""
    with open(js) as f:
        r = json.load(f)
    return r["bytes_written"] / r["time"]["write_sync"] / 1e6


def mpiio(env, token, port, bindir, streams, size, work, timeout, collective=False):
    """romio_perf, 4 ranks, durable write bandwidth in MB/s (read_bw)."""
    js = os.path.join(work, "romio.json")
    if os.path.exists(js):
        os.unlink(js)
    preload = [p for p in (runner.mpich_preload(bindir), runner.rfs_lib()) if p]
    # romio_perf's pattern compresses: compression off, so that the link is what is measured
    menv = {"RFS_TOKEN": token, "RFS_HINTS": f"rfs_streams={streams};rfs_compress=none",
            "LD_PRELOAD": ":".join(preload)}
    argv = wanlib.in_ns(env["RFS_WAN_CLIENT_NS"],
                        runner.mpiexec_argv("mpich", 4, menv, True) +
                        romio_argv(bindir, f"rfs:{env['RFS_WAN_SERVER_ADDR']}:{port}:/romio.dat",
                                   size, js, collective))
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if p.returncode or not os.path.exists(js):
        raise RuntimeError(f"romio_perf rfs_streams={streams}: rc {p.returncode}: "
                           f"{p.stderr.strip()[-400:]}")
    return read_bw(js)


def anchors_up(work):
    xexp = os.path.join(work, "anchors")
    os.chmod(work, 0o711)   # xrootd runs as its own user and must reach its export
    os.makedirs(xexp)
    os.chmod(xexp, 0o777)
    xrd = al.ctl("xrootd-ctl", "start", xexp)
    al.ctl("sshd-ctl", "start")
    return xrd["XRD_URL"].rstrip("/") + "/" + xexp, xexp  # root://host:port//abs/dir


def anchors_down():
    for script in ("xrootd-ctl", "sshd-ctl"):
        subprocess.run([os.path.join(BENCH, "anchors", script), "stop"], timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def xrdcp(env, xrd_url, src, dst, size, timeout):
    """Put then get of src with xrdcp; MB/s of each (wall time of the command)."""
    ns = env["RFS_WAN_CLIENT_NS"]
    put, _ = al.timed(ns, ["xrdcp", "--nopbar", "-f", src, f"{xrd_url}/xput.bin"], timeout)
    get, _ = al.timed(ns, ["xrdcp", "--nopbar", "-f", f"{xrd_url}/xput.bin", dst], timeout)
    return size / put / 1e6, size / get / 1e6


def sshfs_mpiio(bindir, xexp, size, work, timeout):
    """The collective romio_perf in an sshfs mount of the server (MB/s)."""
    js = os.path.join(work, "romio-sshfs.json")
    if os.path.exists(js):
        os.unlink(js)
    preload = runner.mpich_preload(bindir)
    menv = {"LD_PRELOAD": preload} if preload else {}
    inner = " ".join(runner.mpiexec_argv("mpich", 4, menv, True) +
                     romio_argv(bindir, "$RFS_SSHFS_MOUNT/romio.dat", size, js, True))
    p = subprocess.run([os.path.join(BENCH, "anchors", "sshfs-run"), xexp, "bash", "-c", inner],
                       capture_output=True, text=True, timeout=timeout)
    if p.returncode or not os.path.exists(js):
        raise RuntimeError(f"romio_perf on sshfs: rc {p.returncode}: {p.stderr.strip()[-400:]}")
    return read_bw(js)


def med(xs):
    return round(statistics.median(xs), 1) if xs else None


def one_profile(name, buf_mb, a, bindir):
    env = wan_up(a.rate_mbit, a.delay_ms, buf_mb)
    work = tempfile.mkdtemp(prefix="rfs-streams-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    srv = None
    size = a.size_mib << 20
    res = {"profile": name, "tcp_buf_max_mb": buf_mb, "tcp_cc": env.get("RFS_WAN_TCP_CC"),
           "iperf3_P4_MBps": [], "iperf3_P1_MBps": [], "iperf3_P4_same_bytes_MBps": [],
           "streams_measured": a.streams,
           "put_MBps": {s: [] for s in a.streams}, "get_MBps": {s: [] for s in a.streams},
           "mpiio_write_MBps": {s: [] for s in a.streams},
           "mpiio_coll_write_MBps": {s: [] for s in a.streams},
           "xrdcp_put_MBps": [], "xrdcp_get_MBps": [], "sshfs_mpiio_coll_write_MBps": [],
           "errors": []}
    xrd_url = xexp = None
    try:
        srv, root, token, port = start_rfsd(env, work)
        if not a.no_anchors:
            xrd_url, xexp = anchors_up(work)
        src = os.path.join(work, "src.bin")
        with open(src, "wb") as f:   # incompressible, so no future codec flatters the figure
            for _ in range(a.size_mib):
                f.write(os.urandom(1 << 20))
        url = f"rfs:{env['RFS_WAN_SERVER_ADDR']}:{port}:/put.bin"
        for rep in range(a.reps):
            log(f"{name}: repetition {rep + 1}/{a.reps}")
            for p in (4, 1):
                r = wanlib.iperf3(env, p, a.iperf_seconds, 2)
                res[f"iperf3_P{p}_MBps"].append(r["mbit_s"] / 8)
            res["iperf3_P4_same_bytes_MBps"].append(wanlib.iperf3_bytes(env, 4, size))
            for s in a.streams:
                if "put" in a.kinds:
                    try:
                        t = cli(env, token, ["put", "-f", "--streams", s, src, url], a.timeout)
                        res["put_MBps"][s].append(size / t / 1e6)
                        dst = os.path.join(work, "back.bin")
                        t = cli(env, token, ["get", "-f", "--streams", s, url, dst], a.timeout)
                        res["get_MBps"][s].append(size / t / 1e6)
                        if rep == 0 and not filecmp(src, dst):
                            res["errors"].append(f"get --streams {s}: bytes differ")
                        os.unlink(dst)
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        res["errors"].append(str(e)[-300:])
                if "mpiio" in a.kinds:
                    try:
                        res["mpiio_write_MBps"][s].append(
                            mpiio(env, token, port, bindir, s, size, work, a.timeout))
                        res["mpiio_coll_write_MBps"][s].append(
                            mpiio(env, token, port, bindir, s, size, work, a.timeout, True))
                    except (RuntimeError, subprocess.TimeoutExpired, KeyError) as e:
                        res["errors"].append(str(e)[-300:])
                romio = os.path.join(root, "romio.dat")
                if os.path.exists(romio):
                    os.unlink(romio)
            if xrd_url:
                try:
                    dst = os.path.join(work, "xback.bin")
                    put, get = xrdcp(env, xrd_url, src, dst, size, a.timeout)
                    res["xrdcp_put_MBps"].append(put)
                    res["xrdcp_get_MBps"].append(get)
                    os.unlink(dst)
                    os.unlink(os.path.join(xexp, "xput.bin"))
                    res["sshfs_mpiio_coll_write_MBps"].append(
                        sshfs_mpiio(bindir, xexp, size, work, a.timeout))
                    os.unlink(os.path.join(xexp, "romio.dat"))
                except (RuntimeError, subprocess.TimeoutExpired, wanlib.WanError, OSError) as e:
                    res["errors"].append(str(e)[-300:])
    finally:
        if xrd_url:
            anchors_down()
        if srv:
            wanlib.stop(srv)
        shutil.rmtree(work, ignore_errors=True)
        wan_down()
    ref = med(res["iperf3_P4_MBps"])
    same = med(res["iperf3_P4_same_bytes_MBps"])
    summary = {"iperf3_P4_MBps": ref, "iperf3_P1_MBps": med(res["iperf3_P1_MBps"]),
               "iperf3_P4_same_bytes_MBps": same}
    for kind in ("put_MBps", "get_MBps", "mpiio_write_MBps", "mpiio_coll_write_MBps"):
        summary[kind] = {s: med(v) for s, v in res[kind].items()}
        summary[kind.replace("_MBps", "_vs_iperf3_P4")] = {
            s: round(med(v) / ref, 3) if v and ref else None for s, v in res[kind].items()}
        summary[kind.replace("_MBps", "_vs_iperf3_P4_same_bytes")] = {
            s: round(med(v) / same, 3) if v and same else None for s, v in res[kind].items()}
    for kind in ("xrdcp_put_MBps", "xrdcp_get_MBps", "sshfs_mpiio_coll_write_MBps"):
        summary[kind] = med(res[kind])
    summary["goals"] = goals(summary, a.kinds)
    res["median"] = summary
    return res


def goals(m, kinds):
    """Issue #12's goals for one profile, from the medians (of the workloads run)."""
    out = {}
    for kind in ("put", "get", "mpiio_coll_write"):
        if kind.split("_")[0] not in kinds:
            continue
        r = m[f"{kind}_vs_iperf3_P4"].get("auto")
        out[f"{kind} auto >= 0.95 x iperf3 -P 4"] = {"ratio": r, "met": r is not None and r >= 0.95}
        r = m[f"{kind}_vs_iperf3_P4_same_bytes"].get("auto")
        out[f"{kind} auto / iperf3 -P 4 moving the same bytes from a cold start (no goal)"] = {
            "ratio": r}
    coll, ssh = m["mpiio_coll_write_MBps"].get("auto"), m["sshfs_mpiio_coll_write_MBps"]
    r = round(coll / ssh, 2) if coll and ssh else None
    if "mpiio" in kinds:
        out["MPI-IO collective write auto >= 3.5 x sshfs"] = {"ratio": r,
                                                               "met": r is not None and r >= 3.5}
    for tool in ("put", "get"):
        x = m[f"xrdcp_{tool}_MBps"]
        v = m[f"{tool}_MBps"].get("auto")
        out[f"rfs {tool} auto / xrdcp {tool} (no goal: for comparison)"] = {
            "ratio": round(v / x, 3) if v and x else None}
    return out


def filecmp(a, b):
    import filecmp as fc
    return fc.cmp(a, b, shallow=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profiles", default="default,tuned")
    ap.add_argument("--rate-mbit", type=float, default=1000)
    ap.add_argument("--delay-ms", type=float, default=25)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iperf-seconds", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--no-anchors", action="store_true", help="leave out xrdcp and sshfs")
    ap.add_argument("--streams", default=",".join(STREAMS),
                    help="stream settings to measure (a subset of 1,2,4,auto; the goals use auto)")
    ap.add_argument("--kinds", default="put,get,mpiio",
                    help="workloads to run: put and get (always together), mpiio")
    ap.add_argument("--out", default=os.path.join(BENCH, "results", "streams.json"))
    a = ap.parse_args()
    a.kinds = set(x for x in a.kinds.split(",") if x)
    if not a.kinds or a.kinds - {"put", "get", "mpiio"} or ("put" in a.kinds) != ("get" in a.kinds):
        raise SystemExit("bench/streams/run.py: --kinds takes put,get (together) and/or mpiio")
    a.streams = [x for x in a.streams.split(",") if x]
    if not a.streams or any(x not in STREAMS for x in a.streams):
        raise SystemExit(f"bench/streams/run.py: --streams takes a subset of {','.join(STREAMS)}")
    if os.geteuid() != 0:
        raise SystemExit("bench/streams/run.py needs root (network namespaces)")
    if wanlib.os.path.exists(os.path.join(wanlib.STATE, "config.env")):
        raise SystemExit("a WAN is already up (bench/wan/down first): this benchmark sets its own")
    bindir = runner.build_apps("mpich")
    doc = {"benchmark": "streams", "rate_mbit": a.rate_mbit, "delay_ms_one_way": a.delay_ms,
           "size_mib": a.size_mib, "reps": a.reps, "kinds": sorted(a.kinds),
           "cpus": os.cpu_count(),
           "loadavg_1m_start": os.getloadavg()[0],
           "profiles": {}}
    for name in a.profiles.split(","):
        doc["profiles"][name] = one_profile(name, PROFILES[name], a, bindir)
        doc["congestion"] = doc["profiles"][name]["tcp_cc"]
        print(json.dumps(doc["profiles"][name]["median"]), file=sys.stderr, flush=True)
    doc["load_avg_at_end"] = os.getloadavg()
    wanlib.emit_json(doc, a.out)


if __name__ == "__main__":
    main()
