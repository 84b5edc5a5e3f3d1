#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""The tools users reach for (issue #15 item 4): `rfs cp` against xrdcp, rsync and the raw link
over the WAN testbed, in one run.

For each host profile (`default`: bench/wan/up --tcp-buf-mb 4, the socket buffer maxima of
many stock hosts; `tuned`: 64) it brings the emulated WAN up under its own name, starts rfsd,
xrootd (bench/anchors/xrootd-ctl) and sshd (bench/anchors/sshd-ctl) in the server namespace,
and measures from the client namespace, interleaved by repetition so load drift hits every
tool alike:
  - the raw link: iperf3 -P 1 and -P 4;
  - a large file (--size-mib, incompressible): `rfs cp` put and get (default streams and
    --streams 4), xrdcp put and get with --streams 1, 4 and 8 (its best is what counts);
  - a tree of --files small files (4..64 KiB, fixed seed, 100 per directory): `rfs cp -r` and
    `rsync -a` over ssh, both directions; `xrdcp -r --parallel 16` put once per profile (it
    costs several round trips per file);
  - third-party copy: two rfsd on the far side, `rfs cp rfs://A/f rfs://B/g` server to server
    against the same copy with --no-tpc (through this client, over the WAN twice).
Rates are bytes / wall time of the command (start-up, open, sync and rename included: what a
user waits for). It prints one JSON document (medians of --reps runs, ratios measured in the
same run) and writes it to --out. Every process started is stopped by PID; the WAN goes down
at the end. Run it under the benchmark lock:

    flock /tmp/rfs-bench.lock /usr/bin/python3 bench/cli/run.py [--profiles default,tuned]
        [--size-mib 2048] [--files 10000] [--reps 3] [--out bench/results/cli_wan.json]
"""
import argparse
import json
import os
import random
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
# our own WAN: other engineers' testbeds keep theirs
os.environ.setdefault("RFS_WAN_NAME", "clibench")
os.environ.setdefault("RFS_WAN_NET", "10.79.0")
sys.path.insert(0, os.path.join(BENCH, "wan"))
sys.path.insert(0, os.path.join(BENCH, "lib"))
sys.path.insert(0, os.path.join(BENCH, "anchors"))
import wanlib  # noqa: E402
import runner  # noqa: E402
import anchorlib  # noqa: E402

PROFILES = {"default": 4, "tuned": 64}
XRD_STREAMS = (1, 4, 8)
RFS_STREAMS = ("auto", "4")


def log(msg):
    print(f"[cli_wan] {msg}", file=sys.stderr, flush=True)


def wan_up(rate, delay, buf_mb):
    r = subprocess.run([os.path.join(BENCH, "wan", "up"), "--rate-mbit", str(rate), "--delay-ms",
                        str(delay), "--tcp-buf-mb", str(buf_mb)], capture_output=True, text=True,
                       timeout=180)
    if r.returncode:
        raise SystemExit(f"bench/wan/up failed: {r.stderr.strip()[-400:]}")
    return wanlib.load_env()


def wan_down():
    subprocess.run([os.path.join(BENCH, "wan", "down")], capture_output=True, timeout=120)


def start_rfsd(env, root, token_file, extra=()):
    os.makedirs(root, exist_ok=True)
    proc = wanlib.start(env["RFS_WAN_SERVER_NS"],
                        [runner.rfs_daemon(), "--root", root, "--listen",
                         env["RFS_WAN_SERVER_ADDR"] + ":0", "--token-file", token_file, *extra],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if not line.startswith("rfsd listening on "):
        wanlib.stop(proc)
        raise SystemExit(f"rfsd did not start: {line!r}")
    return proc, int(line.split()[-1].rsplit(":", 1)[1])


def timed(env, argv, timeout, extra_env=None):
    e = dict(os.environ, RFS_CONFIG="", **(extra_env or {}))
    t0 = time.monotonic()
    p = subprocess.run(wanlib.in_ns(env["RFS_WAN_CLIENT_NS"], argv), capture_output=True,
                       text=True, timeout=timeout, env=e)
    secs = time.monotonic() - t0
    if p.returncode:
        raise RuntimeError(f"{' '.join(argv[:6])}...: exit {p.returncode}: "
                           f"{(p.stderr or p.stdout).strip()[-300:]}")
    return secs, p


def make_tree(root, files, seed):
    """files small files of 4..64 KiB (random bytes, fixed seed), 100 per directory."""
    rnd = random.Random(seed)
    total = 0
    for i in range(files):
        d = os.path.join(root, "d%03d" % (i // 100))
        if i % 100 == 0:
            os.makedirs(d, exist_ok=True)
        n = rnd.randint(4 << 10, 64 << 10)
        with open(os.path.join(d, "f%05d.bin" % i), "wb") as f:
            f.write(rnd.randbytes(n))
        total += n
    return total


def same_tree(a, b):
    r = subprocess.run(["diff", "-rq", a, b], capture_output=True, text=True, timeout=600)
    return r.returncode == 0


def rm(path):
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.exists(path):
        os.unlink(path)


def med(xs):
    return round(statistics.median(xs), 2) if xs else None


def mbps(nbytes, secs):
    return nbytes / secs / 1e6


def one_profile(name, buf_mb, a):
    env = wan_up(a.rate_mbit, a.delay_ms, buf_mb)
    cli, addr = env["RFS_WAN_CLIENT_NS"], env["RFS_WAN_SERVER_ADDR"]
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    work = tempfile.mkdtemp(prefix="rfs-cliwan-", dir=base)
    os.chmod(work, 0o755)
    size = a.size_mib << 20
    limit = 120 + size * 8 / (a.rate_mbit * 1e6) * 6
    procs = []
    # what the measured connections use: the namespaces' setting (bench/wan/up --cc), not
    # this host's default
    ns_cc = subprocess.run(wanlib.in_ns(cli, ["cat", "/proc/sys/net/ipv4/tcp_congestion_control"]),
                           capture_output=True, text=True).stdout.strip()
    res = {"profile": name, "tcp_buf_max_mb": buf_mb, "congestion": ns_cc, "samples": {},
           "errors": []}
    S = res["samples"]

    def add(key, value):
        S.setdefault(key, []).append(round(value, 2))

    def attempt(key, fn):
        try:
            fn()
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
            res["errors"].append(f"{key}: {str(e)[-300:]}")
            log(f"{name}: {key} failed: {str(e)[-200:]}")

    try:
        token = secrets.token_hex(16)
        tf = os.path.join(work, "token")
        with open(tf, "w") as f:
            f.write(token)
        os.chmod(tf, 0o600)
        rfs_env = {"RFS_TOKEN": token}
        rfs = os.path.join(runner.rfs_build_dir(), "rfs")
        srv_root = os.path.join(work, "rfs-export")
        b_root = os.path.join(work, "rfs-export-b")
        srv, port = start_rfsd(env, srv_root, tf, ("--tpc", "on"))
        procs.append(srv)
        srv_b, port_b = start_rfsd(env, b_root, tf, ("--tpc", "on"))
        procs.append(srv_b)
        url = lambda p: f"rfs:{addr}:{port}:{p}"  # noqa: E731
        url_b = lambda p: f"rfs:{addr}:{port_b}:{p}"  # noqa: E731
        xrd_export = os.path.join(work, "xrd-export")
        xrd = anchorlib.ctl("xrootd-ctl", "start", xrd_export)["XRD_URL"].rstrip("/")
        ssh = anchorlib.ctl("sshd-ctl", "start")
        ssh_cmd = "ssh " + " ".join(anchorlib.ssh_opts())
        ssh_target = ssh["SSH_TARGET"]
        for cmd in (["xrdcp", "--version"], ["rsync", "--version"], ["iperf3", "--version"]):
            v = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            res.setdefault("versions", {})[cmd[0]] = (v.stdout or v.stderr).strip().splitlines()[0]

        src = os.path.join(work, "src.bin")
        anchorlib.make_file(src, size if {"large", "tpc"} & set(a.parts) else 0)
        tree = os.path.join(work, "tree")
        tree_bytes = make_tree(tree, a.files, 15)
        res["tree"] = {"files": a.files, "bytes": tree_bytes, "seed": 15,
                       "sizes": "uniform 4..64 KiB", "per_directory": 100}
        back = os.path.join(work, "back.bin")
        back_tree = os.path.join(work, "back-tree")

        for rep in range(a.reps):
            log(f"{name}: repetition {rep + 1}/{a.reps}")
            first = rep == 0
            for p in (4, 1):
                attempt(f"iperf3 -P {p}", lambda: add(
                    f"iperf3_P{p}", wanlib.iperf3(env, p, a.iperf_seconds, 2)["mbit_s"] / 8))
            # ---- large file ----
            for s in (RFS_STREAMS if "large" in a.parts else ()):
                sarg = [] if s == "auto" else ["--streams", s]

                def rfs_put_get():
                    t, _ = timed(env, [rfs, "cp", "--quiet", *sarg, src, url("/big.bin")], limit,
                                 rfs_env)
                    add(f"rfs_put_{s}", mbps(size, t))
                    t, _ = timed(env, [rfs, "cp", "--quiet", *sarg, url("/big.bin"), back], limit,
                                 rfs_env)
                    add(f"rfs_get_{s}", mbps(size, t))
                    if first and not anchorlib.sha256(back) == anchorlib.sha256(src):
                        res["errors"].append(f"rfs get streams {s}: bytes differ")
                attempt(f"rfs cp streams {s}", rfs_put_get)
                rm(back)
                rm(os.path.join(srv_root, "big.bin"))
            for s in (XRD_STREAMS if "large" in a.parts else ()):
                target = f"{xrd}/{xrd_export}/big.bin"

                def xrd_put_get():
                    t, _ = timed(env, ["xrdcp", "--nopbar", "-f", "--streams", str(s), src,
                                       target], limit)
                    add(f"xrdcp_put_S{s}", mbps(size, t))
                    t, _ = timed(env, ["xrdcp", "--nopbar", "-f", "--streams", str(s), target,
                                       back], limit)
                    add(f"xrdcp_get_S{s}", mbps(size, t))
                    if first and not anchorlib.sha256(back) == anchorlib.sha256(src):
                        res["errors"].append(f"xrdcp get -S {s}: bytes differ")
                attempt(f"xrdcp streams {s}", xrd_put_get)
                rm(back)
                rm(os.path.join(xrd_export, "big.bin"))
            # ---- small files ----
            def rfs_tree():
                t, _ = timed(env, [rfs, "cp", "--quiet", "-r", tree, url("/tree")], limit, rfs_env)
                add("rfs_tree_put", t)
                if first and not same_tree(tree, os.path.join(srv_root, "tree")):
                    res["errors"].append("rfs cp -r put: trees differ")
                t, _ = timed(env, [rfs, "cp", "--quiet", "-r", url("/tree"), back_tree], limit,
                             rfs_env)
                add("rfs_tree_get", t)
                if first and not same_tree(tree, back_tree):
                    res["errors"].append("rfs cp -r get: trees differ")
            if "small" in a.parts:
                attempt("rfs cp -r", rfs_tree)
            rm(os.path.join(srv_root, "tree"))
            rm(back_tree)
            rs_dst = os.path.join(work, "rsync-dst")

            def rsync_tree():
                t, _ = timed(env, ["rsync", "-a", "-e", ssh_cmd, tree + "/",
                                   f"{ssh_target}:{rs_dst}/"], limit)
                add("rsync_tree_put", t)
                if first and not same_tree(tree, rs_dst):
                    res["errors"].append("rsync put: trees differ")
                t, _ = timed(env, ["rsync", "-a", "-e", ssh_cmd, f"{ssh_target}:{rs_dst}/",
                                   back_tree + "/"], limit)
                add("rsync_tree_get", t)
            if "small" in a.parts:
                attempt("rsync -a", rsync_tree)
            rm(rs_dst)
            rm(back_tree)
            if first and a.xrdcp_tree and "small" in a.parts:
                def xrd_tree():
                    t, _ = timed(env, ["xrdcp", "--nopbar", "-f", "-r", "--parallel", "16", tree,
                                       f"{xrd}/{xrd_export}/"], limit * 4)
                    add("xrdcp_tree_put_parallel16", t)
                    if not same_tree(tree, os.path.join(xrd_export, "tree")):
                        res["errors"].append("xrdcp -r: trees differ")
                attempt("xrdcp -r", xrd_tree)
                rm(os.path.join(xrd_export, "tree"))
            # ---- third-party copy, both servers on the far side ----
            shutil.copyfile(src, os.path.join(srv_root, "tpc.bin"))

            def tpc():
                t, p = timed(env, [rfs, "cp", "--quiet", "--streams", "4", url("/tpc.bin"),
                                   url_b("/tpc.bin")], limit, dict(rfs_env, RFS_STATS="1"))
                add("tpc_server_to_server", mbps(size, t))
                if first:
                    res["tpc_client_wire"] = p.stderr.strip().splitlines()[-1]
                    if anchorlib.sha256(os.path.join(b_root, "tpc.bin")) != anchorlib.sha256(src):
                        res["errors"].append("tpc: bytes differ")
                rm(os.path.join(b_root, "tpc.bin"))
                t, p = timed(env, [rfs, "cp", "--quiet", "--no-tpc", "--streams", "4",
                                   url("/tpc.bin"), url_b("/tpc.bin")], limit,
                             dict(rfs_env, RFS_STATS="1"))
                add("tpc_through_client", mbps(size, t))
                if first:
                    res["no_tpc_client_wire"] = p.stderr.strip().splitlines()[-1]
            if "tpc" in a.parts:
                attempt("tpc", tpc)
            rm(os.path.join(b_root, "tpc.bin"))
            rm(os.path.join(srv_root, "tpc.bin"))
    finally:
        for p in procs:
            wanlib.stop(p)
        for script in ("xrootd-ctl", "sshd-ctl"):
            try:
                anchorlib.ctl(script, "stop")
            except (wanlib.WanError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(work, ignore_errors=True)
        wan_down()
    m = {k: med(v) for k, v in S.items()}
    best_xput = max((m.get(f"xrdcp_put_S{s}") or 0, s) for s in XRD_STREAMS)
    best_xget = max((m.get(f"xrdcp_get_S{s}") or 0, s) for s in XRD_STREAMS)
    best_rput = max((m.get(f"rfs_put_{s}") or 0, s) for s in RFS_STREAMS)
    best_rget = max((m.get(f"rfs_get_{s}") or 0, s) for s in RFS_STREAMS)

    def ratio(x, y):
        return round(x / y, 3) if x and y else None
    iperf = m.get("iperf3_P4")
    summary = {
        "medians": m,
        "xrdcp_best": {"put": {"MBps": best_xput[0], "streams": best_xput[1]},
                       "get": {"MBps": best_xget[0], "streams": best_xget[1]}},
        "rfs_best": {"put": {"MBps": best_rput[0], "streams": best_rput[1]},
                     "get": {"MBps": best_rget[0], "streams": best_rget[1]}},
        "ratios": {
            "rfs_put_default_vs_xrdcp_best_put": ratio(m.get("rfs_put_auto"), best_xput[0]),
            "rfs_get_default_vs_xrdcp_best_get": ratio(m.get("rfs_get_auto"), best_xget[0]),
            "rfs_put_best_vs_xrdcp_best_put": ratio(best_rput[0], best_xput[0]),
            "rfs_get_best_vs_xrdcp_best_get": ratio(best_rget[0], best_xget[0]),
            "rfs_put_default_vs_iperf3_P4": ratio(m.get("rfs_put_auto"), iperf),
            "rfs_get_default_vs_iperf3_P4": ratio(m.get("rfs_get_auto"), iperf),
            "xrdcp_best_put_vs_iperf3_P4": ratio(best_xput[0], iperf),
            # small files: times, so rsync / rfs is rfs's speed-up
            "small_put_rsync_time_over_rfs": ratio(m.get("rsync_tree_put"), m.get("rfs_tree_put")),
            "small_get_rsync_time_over_rfs": ratio(m.get("rsync_tree_get"), m.get("rfs_tree_get")),
            "small_put_xrdcp_time_over_rfs": ratio(m.get("xrdcp_tree_put_parallel16"),
                                                   m.get("rfs_tree_put")),
            "tpc_vs_through_client": ratio(m.get("tpc_server_to_server"),
                                           m.get("tpc_through_client")),
        },
    }
    r = summary["ratios"]
    summary["goals"] = {
        "large file: rfs cp >= 1.0x xrdcp (best streams), put": {
            "ratio": r["rfs_put_default_vs_xrdcp_best_put"],
            "met": (r["rfs_put_default_vs_xrdcp_best_put"] or 0) >= 1.0},
        "large file: rfs cp >= 1.0x xrdcp (best streams), get": {
            "ratio": r["rfs_get_default_vs_xrdcp_best_get"],
            "met": (r["rfs_get_default_vs_xrdcp_best_get"] or 0) >= 1.0},
        "small files: rfs cp -r >= 3x rsync -a, put": {
            "ratio": r["small_put_rsync_time_over_rfs"],
            "met": (r["small_put_rsync_time_over_rfs"] or 0) >= 3.0},
        "small files: rfs cp -r >= 3x rsync -a, get": {
            "ratio": r["small_get_rsync_time_over_rfs"],
            "met": (r["small_get_rsync_time_over_rfs"] or 0) >= 3.0},
    }
    res["summary"] = summary
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profiles", default="default")
    ap.add_argument("--rate-mbit", type=float, default=1000)
    ap.add_argument("--delay-ms", type=float, default=25)
    ap.add_argument("--size-mib", type=int, default=2048)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iperf-seconds", type=int, default=8)
    ap.add_argument("--parts", default="large,small,tpc",
                    help="what to measure: large, small, tpc (comma-separated)")
    ap.add_argument("--no-xrdcp-tree", dest="xrdcp_tree", action="store_false")
    ap.add_argument("--out", default=os.path.join(BENCH, "results", "cli_wan.json"))
    a = ap.parse_args()
    a.parts = a.parts.split(",")
    if os.geteuid() != 0:
        raise SystemExit("bench/cli/run.py needs root (network namespaces)")
    if os.path.exists(os.path.join(wanlib.STATE, "config.env")):
        raise SystemExit(f"WAN {os.environ['RFS_WAN_NAME']} is already up (bench/wan/down first)")
    doc = {"benchmark": "cli_wan", "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
           "rate_mbit": a.rate_mbit, "delay_ms_one_way": a.delay_ms, "size_mib": a.size_mib,
           "files": a.files, "reps": a.reps, "cpus": os.cpu_count(),
           "loadavg_at_start": os.getloadavg(),
           "host_congestion": open("/proc/sys/net/ipv4/tcp_congestion_control").read().strip(),
           "profiles": {}}
    for name in a.profiles.split(","):
        doc["profiles"][name] = one_profile(name, PROFILES[name], a)
        print(json.dumps(doc["profiles"][name]["summary"]), file=sys.stderr, flush=True)
        if a.out:  # written after each profile: a later failure keeps what was measured
            with open(a.out, "w") as f:
                f.write(json.dumps(doc, indent=1) + "\n")
    doc["loadavg_at_end"] = os.getloadavg()
    wanlib.emit_json(doc, a.out)


if __name__ == "__main__":
    main()
