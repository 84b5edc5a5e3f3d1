#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Wire encoding benchmark: compression (rfs_compress / --compress) and frame checksums.

For each link (loopback, and the emulated WAN of bench/wan at each --rates value with
--delay-ms one way), `rfs put` of one file from /dev/shm to an rfsd whose root is in /dev/shm:
  - a smooth field: snapshots of a 3-D Jacobi run written as doubles, as bench/apps/jacobi3d
    writes them (interior starts at 0, the x-low face is held at 1.0, so the field is zero
    ahead of the diffusion front and smooth behind it);
  - random bytes (incompressible).
Modes: none, auto, lz4, zstd, lz4+shuffle, zstd+shuffle for the smooth field; none and auto
for random data. Runs are
interleaved (one of each mode per repetition) and medians reported; ratios are taken against
`none` of the same run set. Each put runs with RFS_TRACE=1, which gives the bytes that went on
the wire (so whether auto compressed), and its CPU time (user+system of the client; rfsd's
from /proc). The link's rate is the configured tbf rate.

Compressed reads: `rfs get` of both files with --compress auto (rfsd then compresses its
replies when its measurements say it pays: --compress-reads auto, the default) against
--compress none (raw replies), per repetition, checked byte for byte.
Checksums: the same put and a get of the random file with RFS_CHECKSUM=off and on.
CRC-32C speed: bench/compress/crcspeed.c on a 4 MiB buffer.
Per put, also rfsd's CPU (`samples_server_cpu_s`) and what writing 64 MiB of new pages into
rfsd's tmpfs cost right before it (`samples_page_probe_s_per_gib`): on this VM the first write
to memory the guest had freed is 5-10x slower, and rfsd's writes into the file it receives
are what varies most between runs (bench/results/notes/compress.md).

Only one benchmark may run at a time on this machine: run it under the lock,
    flock /tmp/rfs-bench.lock /usr/bin/python3 bench/compress/run.py [--build-dir build]
        [--reps 3] [--size-mib 256] [--wan-size-mib 0] [--rates 1000,100] [--delay-ms 25]
        [--tcp-buf-mb 4] [--no-wan] [--no-loopback] [--random-only] [--warm-mib 512]
        [--out bench/results/compress.json]
The committed run uses --size-mib 1024 (steady state at 1 Gbit/s). The JSON ends with the
issue's goals per WAN link ("goals").
The WAN is built as RFS_WAN_NAME=wire (10.79.0.0/24) so another WAN may stay up; it is
removed at the end. Every process started is stopped by its PID.
"""
import argparse
import json
import mmap
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
os.environ.setdefault("RFS_WAN_NAME", "wire")
os.environ.setdefault("RFS_WAN_NET", "10.79.0")
sys.path.insert(0, os.path.join(REPO, "bench", "wan"))
sys.path.insert(0, os.path.join(REPO, "bench", "lib"))
import wanlib  # noqa: E402
from fields import random_file, smooth_field  # noqa: E402

PORT = 7171
WARM_MIB = 512


def median(xs):
    return wanlib.median([x for x in xs if x is not None])


# ---- processes ----

class Rfsd:
    def __init__(self, build, root, ns=None, addr="127.0.0.1"):
        self.addr = addr
        self.root = root
        argv = [os.path.join(build, "rfsd"), "--root", root, "--listen", f"{addr}:{PORT}",
                "--no-auth"]
        self.proc = wanlib.start(ns, argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 text=True)
        wanlib.wait_line(self.proc, "listening", 10)

    def cpu(self):
        return wanlib.cpu_seconds(self.proc.pid)

    def stop(self):
        wanlib.stop(self.proc)


def warm(mib):
    """Touch and free mib MiB of anonymous memory (untimed) before a transfer: this VM hands
    memory freed for a few seconds back to the hypervisor, and first touches of such pages make
    a transfer into /dev/shm 2-4x slower at random (bench/roundtrip/run.py has the story)."""
    if mib <= 0:
        return
    buf = mmap.mmap(-1, mib << 20)
    for i in range(0, mib << 20, 4096):
        buf[i] = 1
    buf.close()


PROBE_MIB = 64


def page_probe(root):
    """Seconds per GiB that writing PROBE_MIB MiB of new pages into the server's tmpfs takes
    right before a run (the file is removed again). On this VM the host takes back memory the
    guest freed, and the first write to such a page costs 5-10x a warm one (0.36 against 2.5
    s/GiB measured with dd); rfsd's writes into the file it receives pay the same, so this
    tells how much of a run's server CPU was the VM's and not rfs's."""
    path = os.path.join(root, ".page-probe")
    block = b"\1" * (4 << 20)
    t0 = time.monotonic()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for _ in range(PROBE_MIB // 4):
            os.write(fd, block)
    finally:
        os.close(fd)
    t = time.monotonic() - t0
    os.unlink(path)
    return t * 1024 / PROBE_MIB


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def transfer(build, ns, srv, verb, local, remote, env_extra, compress=None, timeout=900):
    """One rfs put/get; returns seconds, client CPU seconds, rfsd CPU seconds, wire bytes."""
    env = dict(os.environ, RFS_TRACE="1", RFS_CONFIG="", **env_extra)
    env.pop("RFS_TOKEN", None)
    env.pop("RFS_TOKEN_FILE", None)
    url = f"rfs:{srv.addr}:{PORT}:{remote}"
    argv = [os.path.join(build, "rfs"), verb, "-f", "--no-progress"]
    if compress:
        argv += ["--compress", compress]
    argv += [local, url] if verb == "put" else [url, local]
    subprocess.run(["sync"], check=False)
    warm(WARM_MIB)
    probe = page_probe(srv.root)
    c0, s0, t0 = children_cpu(), srv.cpu(), time.monotonic()
    p = subprocess.run(wanlib.in_ns(ns, argv) if ns else argv, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=timeout)
    t = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {p.stderr[-2000:]}")
    op = "PWRITE" if verb == "put" else "PREAD"
    mark = " send PWRITE " if verb == "put" else " reply PREAD "
    wire = sum(int(line.split()[-1]) for line in p.stderr.splitlines() if mark in line)
    return dict(seconds=t, client_cpu=children_cpu() - c0, server_cpu=srv.cpu() - s0,
                wire_bytes=wire, op=op, page_probe_s_per_gib=probe)


def summarize(samples, size):
    out = {}
    for k in ("seconds", "client_cpu", "server_cpu", "wire_bytes", "page_probe_s_per_gib"):
        out[k] = median([s[k] for s in samples])
    out["mb_per_s"] = size / out["seconds"] / 1e6
    out["wire_ratio"] = size / out["wire_bytes"] if out["wire_bytes"] else None
    out["runs"] = len(samples)
    return out


def suite(build, data_dir, root, ns, srv, reps, size, link_mbit, random_only=False):
    """Compression modes on both files and checksums on/off: medians and same-run ratios.
    random_only: just the random file's puts, none against auto (the off-switch's cost)."""
    cases = ([] if random_only else
             [("smooth", m) for m in ("none", "auto", "lz4", "zstd", "lz4+shuffle",
                                      "zstd+shuffle")]) + \
        [("random", m) for m in ("none", "auto")]
    raw = {c: [] for c in cases}
    # reads: rfsd compresses its replies (--compress-reads auto, its default) for a client
    # that takes them (any --compress but none); `none` is the same get with raw replies
    reads = {} if random_only else \
        {(d, m): [] for d in ("smooth", "random") for m in ("none", "auto")}
    sums = {} if random_only else \
        {("put", "on"): [], ("put", "off"): [], ("get", "on"): [], ("get", "off"): []}
    for rep in range(reps):
        # the order of the modes turns with the repetition, so none and auto take turns being
        # first after the previous case (a drift of the machine's load then favours neither)
        for data, mode in cases[rep % len(cases):] + cases[:rep % len(cases)]:
            raw[(data, mode)].append(transfer(build, ns, srv, "put",
                                              os.path.join(data_dir, data + ".bin"),
                                              f"/{data}.{mode}", {}, compress=mode))
            got = os.path.getsize(os.path.join(root, f"{data}.{mode}"))
            assert got == size, f"{data}.{mode}: {got} bytes on the server, expected {size}"
        for data, mode in reads:
            local = os.path.join(data_dir, "got.bin")
            reads[(data, mode)].append(transfer(build, ns, srv, "get", local, f"/{data}.none",
                                                {}, compress=mode))
            subprocess.run(["cmp", os.path.join(data_dir, data + ".bin"), local], check=True)
            os.unlink(local)
        for verb, on in sums:
            env = {} if on == "on" else {"RFS_CHECKSUM": "off"}
            local = os.path.join(data_dir, "random.bin") if verb == "put" else \
                os.path.join(data_dir, "got.bin")
            sums[(verb, on)].append(transfer(build, ns, srv, verb, local, "/random.sum",
                                             env, compress="none"))
            if verb == "get":
                os.unlink(local)
        print(f"  rep {rep + 1}/{reps} done", file=sys.stderr, flush=True)
    # byte-identical on the server (once, after the timed runs)
    for data, mode in cases:
        subprocess.run(["cmp", os.path.join(data_dir, data + ".bin"),
                        os.path.join(root, f"{data}.{mode}")], check=True)
    res = {"size_bytes": size, "link_mbit": link_mbit, "compress": {}, "checksum": {}}
    for (data, mode), s in raw.items():
        res["compress"].setdefault(data, {})[mode] = summarize(s, size)
        m = res["compress"][data][mode]
        m["samples_s"] = [round(x["seconds"], 3) for x in s]
        # per run, to tell rfs's cost from the VM's (page_probe)
        m["samples_server_cpu_s"] = [round(x["server_cpu"], 2) for x in s]
        m["samples_page_probe_s_per_gib"] = [round(x["page_probe_s_per_gib"], 2) for x in s]
    for data in res["compress"]:
        d = res["compress"][data]
        none = d["none"]
        for mode, m in d.items():
            m["speedup_vs_none"] = none["seconds"] / m["seconds"]
            if link_mbit:
                m["x_link_rate"] = m["mb_per_s"] / (link_mbit / 8.0)
            m["client_cpu_extra_vs_none_pct_of_wall"] = \
                100.0 * (m["client_cpu"] - none["client_cpu"]) / m["seconds"]
    res["compressed_reads"] = {}
    for (data, mode), s in reads.items():
        res["compressed_reads"].setdefault(data, {})[mode] = summarize(s, size)
    for data in res["compressed_reads"]:
        d = res["compressed_reads"][data]
        for mode, m in d.items():
            m["speedup_vs_none"] = d["none"]["seconds"] / m["seconds"]
            if link_mbit:
                m["x_link_rate"] = m["mb_per_s"] / (link_mbit / 8.0)
            m["server_cpu_extra_vs_none_pct_of_wall"] = \
                100.0 * (m["server_cpu"] - d["none"]["server_cpu"]) / m["seconds"]
    for (verb, on), s in sums.items():
        res["checksum"].setdefault(verb, {})[on] = summarize(s, size)
    for verb in res["checksum"]:
        c = res["checksum"][verb]
        c["on"]["time_vs_off"] = c["on"]["seconds"] / c["off"]["seconds"]
        c["on"]["cpu_vs_off"] = ((c["on"]["client_cpu"] + c["on"]["server_cpu"]) /
                                 (c["off"]["client_cpu"] + c["off"]["server_cpu"]))
    return res


def crc_speed(build, tmp):
    exe = os.path.join(tmp, "crcspeed")
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-Wall", "-I", REPO, "-I",
                    os.path.join(REPO, "include"), "-o", exe, os.path.join(HERE, "crcspeed.c"),
                    os.path.join(build, "common", "librfs_common.a"), "-lpthread"], check=True)
    return json.loads(subprocess.run([exe], check=True, stdout=subprocess.PIPE,
                                     text=True).stdout)


def wan_up(rate, delay, tcp_buf_mb):
    subprocess.run([os.path.join(REPO, "bench", "wan", "up"), "--rate-mbit", str(rate),
                    "--delay-ms", str(delay), "--tcp-buf-mb", str(tcp_buf_mb)], check=True,
                   stdout=subprocess.DEVNULL)


def goals(links, random_only=False):
    """Issue #12's goals for compression, from the runs above: auto on the smooth field at least
    2x the link's rate, auto on random data at least 0.98 of uncompressed, and auto's CPU cost
    on random data (where it stays off) at most 2% of the transfer's time."""
    out = {}
    for name, r in links.items():
        if not r["link_mbit"]:
            continue
        rnd = r["compress"]["random"]
        out[name] = {} if random_only else {
            "smooth_auto_x_link_rate": {
                "value": round(r["compress"]["smooth"]["auto"]["x_link_rate"], 3),
                "goal": ">= 2", "met": r["compress"]["smooth"]["auto"]["x_link_rate"] >= 2}}
        x = r["compress"].get("smooth", {}).get("auto", {}).get("x_iperf3_P4")
        if x is not None:
            out[name]["smooth_auto_x_iperf3_P4 (the same against raw TCP's payload rate)"] = {
                "value": round(x, 3), "goal": ">= 2", "met": x >= 2}
        out[name].update({
            "random_auto_vs_none": {"value": round(rnd["auto"]["speedup_vs_none"], 3),
                                    "goal": ">= 0.98",
                                    "met": rnd["auto"]["speedup_vs_none"] >= 0.98},
            "random_auto_cpu_pct": {
                "value": round(rnd["auto"]["client_cpu_extra_vs_none_pct_of_wall"], 2),
                "goal": "<= 2", "met": rnd["auto"]["client_cpu_extra_vs_none_pct_of_wall"] <= 2},
        })
    return out


def wan_down():
    subprocess.run([os.path.join(REPO, "bench", "wan", "down")], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def add_iperf3(link, iperf):
    """Each put's rate also as a multiple of iperf3 -P 4's steady payload rate on the link."""
    link["iperf3_P4_MBps"] = iperf
    if not iperf:
        return
    for modes in link.get("compress", {}).values():
        for m in modes.values():
            m["x_iperf3_P4"] = m["mb_per_s"] / iperf


def main():
    global WARM_MIB
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--wan-size-mib", type=int, default=0,
                    help="file size on the WAN links (0: --size-mib at 1000 Mbit/s, scaled "
                         "down with the rate, at least 32)")
    ap.add_argument("--rates", default="1000,100")
    ap.add_argument("--delay-ms", type=float, default=25)
    ap.add_argument("--tcp-buf-mb", type=int, default=4,
                    help="socket buffer maxima of both hosts (4: a default host; 64: tuned)")
    ap.add_argument("--no-wan", action="store_true")
    ap.add_argument("--no-loopback", action="store_true")
    ap.add_argument("--random-only", action="store_true",
                    help="only the random file's puts, none against auto (the goal that auto "
                         "costs nothing where it stays off)")
    ap.add_argument("--warm-mib", type=int, default=512)
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results", "compress.json"))
    a = ap.parse_args()
    WARM_MIB = a.warm_mib
    build = os.path.abspath(a.build_dir)
    size = a.size_mib << 20
    tmp = tempfile.mkdtemp(prefix="rfs-compress-", dir="/dev/shm")
    srv = None
    result = {"bench": "compress", "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "reps": a.reps, "delay_ms_one_way": a.delay_ms, "tcp_buf_mb": a.tcp_buf_mb,
              "loadavg_1m_start": os.getloadavg()[0], "warm_mib": a.warm_mib}
    try:
        result["crc32c"] = crc_speed(build, tmp)
        data_dir = os.path.join(tmp, "data")
        os.makedirs(data_dir)
        links = ([] if a.no_loopback else [("loopback", 0)]) + ([] if a.no_wan else
                                     [(f"wan_{r}mbit", int(r)) for r in a.rates.split(",")])
        result["links"] = {}
        for name, rate in links:
            sz = size if rate in (0, 1000) else (a.wan_size_mib << 20 if a.wan_size_mib else
                                                  max(32 << 20, size * rate // 1000))
            if not a.random_only:
                smooth_field(os.path.join(data_dir, "smooth.bin"), sz)
            random_file(os.path.join(data_dir, "random.bin"), sz)
            root = os.path.join(tmp, "root-" + name)
            os.makedirs(root)
            print(f"{name}: {sz >> 20} MiB", file=sys.stderr, flush=True)
            if rate:
                wan_up(rate, a.delay_ms, a.tcp_buf_mb)
                env = wanlib.load_env()
                srv = Rfsd(build, root, env["RFS_WAN_SERVER_NS"], env["RFS_WAN_SERVER_ADDR"])
                ns = env["RFS_WAN_CLIENT_NS"]
            else:
                srv = Rfsd(build, root)
                ns = None
            try:
                # the payload rate raw TCP gets through this link (the nominal rate counts the
                # packet headers too), as the other WAN benchmarks' reference
                iperf = wanlib.iperf3(env, 4, 8, 2)["mbit_s"] / 8 if rate else None
                result["links"][name] = suite(build, data_dir, root, ns, srv, a.reps, sz, rate,
                                              a.random_only)
                add_iperf3(result["links"][name], iperf)
            finally:
                srv.stop()
                srv = None
                if rate:
                    wan_down()
            shutil.rmtree(root)
    finally:
        if srv:
            srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    result["loadavg_1m_end"] = os.getloadavg()[0]
    result["goals"] = goals(result.get("links", {}), a.random_only)
    text = json.dumps(result, indent=1)
    print(text)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
