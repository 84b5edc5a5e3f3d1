#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Counts the requests and the sequential round trips that each MPI-IO call costs on rfs.

Runs a workload (bench/apps/jacobi3d or examples/demo3d.c) with librfs-mpiio.so preloaded and
RFS_TRACE=1, over loopback or over an emulated WAN (bench/wan, RFS_WAN_NAME), at 1, 2, 4 ranks.
RFS_TRACE=1 makes the client print one line per request sent and per reply received
(client/conn.c) and the MPI-IO layer one line where each MPI_File call on an rfs file begins
and ends (mpiio/trace.c), all on CLOCK_MONOTONIC, which every process of the machine shares; the
launcher tags each line with its rank (MPICH -prepend-rank, Open MPI --tag-output).

For every call instance (the k-th MPI_File_open of every rank is one collective instance):
  requests    requests sent by all ranks inside the call
  rtts        sequential round trips: the longest chain of requests where each one was sent
              only after the previous one's reply had arrived, on any rank (MPI synchronisation
              carries dependencies between ranks). A HELLO opens a new connection, so the TCP
              handshake before it counts as one more round trip (taken to start one RTT before
              the HELLO on the WAN; right before it on loopback).
  ms          wall time from the first rank's begin to the last rank's end
On loopback the chain rule over-counts requests that merely happen to be sent after an
unrelated reply (round trips take microseconds there); on the WAN (50 ms round trips) the
chains are the real critical path and `ms / RTT` cross-checks them.

Usage:
  bench/mpiio/rtt_count.py --label before [--wan] [--mpi mpich] [--ranks 1,2,4]
      [--workload jacobi3d] [--build-dir build-mpiio] [--hints "k=v;..."] [--merge-into FILE]
      [--keep-trace DIR]
  bench/mpiio/rtt_count.py --analyse TRACE... [--rtt-ms 50]    (traces kept with --keep-trace)
Prints JSON; --merge-into adds the result under results[label] of that JSON file."""
import argparse
import json
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "wan"))

TAG = re.compile(r"^\[(?:\d+,)?(\d+)\](?:<std(?:out|err)>:)?\s?(.*)$")
REQ = re.compile(r"^rfs trace ([\d.]+) (\S+) (send|reply) (\S+) #(\d+) (\d+)$")
MARK = re.compile(r"^rfs trace ([\d.]+) mpi (begin|end) (\S+)$")

WORKLOADS = {
    # name: (how to build, argv after the target)
    "jacobi3d": ("apps", ["--local", "48", "--iters", "10", "--every", "2"]),
    "jacobi3d-small": ("apps", ["--local", "16", "--iters", "4", "--every", "2"]),
    "demo3d": ("demo", ["64", "64", "64"]),
}


def log(msg):
    print(f"rtt_count: {msg}", file=sys.stderr, flush=True)


def build_workload(name, mpi, cache):
    kind = WORKLOADS[name][0]
    out = cache / mpi
    out.mkdir(parents=True, exist_ok=True)
    if kind == "apps":
        exe = out / "jacobi3d"
        subprocess.run(["make", "-s", "-C", str(REPO / "bench" / "apps"), f"MPI={mpi}",
                        f"BUILD={out}", str(exe)], check=True)
        return exe
    exe = out / "demo3d"
    if not exe.exists() or exe.stat().st_mtime < (REPO / "examples" / "demo3d.c").stat().st_mtime:
        subprocess.run([f"mpicc.{mpi}", "-O2", "-o", str(exe), str(REPO / "examples" / "demo3d.c")],
                       check=True)
    return exe


def launcher(mpi, nprocs, env):
    if mpi == "mpich":
        cmd = ["mpiexec.mpich", "-n", str(nprocs), "-prepend-rank", "-genv", "UCX_TLS", "self,sm"]
        for k, v in env.items():
            cmd += ["-genv", k, v]
    else:
        cmd = ["mpiexec.openmpi", "--oversubscribe", "--allow-run-as-root", "--tag-output",
               "-n", str(nprocs)]
        for k, v in env.items():
            cmd += ["-x", f"{k}={v}"]
    return cmd


def parse(text):
    """Per rank: requests [{send, reply, op}] and marks [(t, begin?, call)]."""
    reqs = defaultdict(dict)      # rank -> (server, id, op) -> {send, reply}
    marks = defaultdict(list)
    done = defaultdict(list)      # rank -> finished requests
    for line in text.splitlines():
        m = TAG.match(line)
        if not m:
            continue
        rank, rest = int(m.group(1)), m.group(2).strip()
        r = REQ.match(rest)
        if r:
            t, server, what, op, rid = float(r.group(1)), r.group(2), r.group(3), r.group(4), r.group(5)
            key = (server, rid)
            if what == "send":
                # ids are reused by a connection once answered: close the previous one
                reqs[rank][key] = {"send": t, "reply": None, "op": op}
            else:
                q = reqs[rank].pop(key, None)
                if q:
                    q["reply"] = t
                    done[rank].append(q)
            continue
        k = MARK.match(rest)
        if k:
            marks[rank].append((float(k.group(1)), k.group(2) == "begin", k.group(3)))
    for rank, left in reqs.items():
        for q in left.values():
            done[rank].append(q)  # never answered (failure): still a request
    return done, marks


def call_instances(marks):
    """(call, occurrence) -> {rank: (begin, end)}"""
    inst = defaultdict(dict)
    for rank, ms in marks.items():
        seen = defaultdict(int)
        open_at = {}
        for t, begin, call in sorted(ms):
            if begin:
                open_at[call] = t
            elif call in open_at:
                k = seen[call]
                seen[call] += 1
                inst[(call, k)][rank] = (open_at.pop(call), t)
    return inst


def chain_depth(reqs, rtt_ms=0.0):
    """Longest chain of requests each sent after the previous one's reply arrived. A HELLO
    opens a connection: the TCP handshake before it is one more round trip, which began about
    one RTT before the HELLO was sent (when the RTT is known)."""
    items = []
    for q in reqs:
        if q["op"] == "HELLO":
            t = q["send"] - rtt_ms / 1e3
            items.append({"send": t, "reply": q["send"], "op": "TCP"})
        items.append(q)
    items.sort(key=lambda q: q["send"])
    depth = []
    for i, q in enumerate(items):
        best = 0
        for j in range(i):
            p = items[j]
            if p["reply"] is not None and p["reply"] <= q["send"]:
                best = max(best, depth[j])
        depth.append(best + 1)
    return max(depth) if depth else 0


def analyse(text, rtt_ms):
    done, marks = parse(text)
    inst = call_instances(marks)
    calls = defaultdict(list)
    for (call, k), spans in sorted(inst.items(), key=lambda x: min(b for b, _ in x[1].values())):
        reqs, per_rank = [], {}
        for rank, (b, e) in spans.items():
            mine = [q for q in done.get(rank, []) if b <= q["send"] <= e]
            reqs += mine
            per_rank[rank] = len(mine)
        t0 = min(b for b, _ in spans.values())
        t1 = max(e for _, e in spans.values())
        ops = defaultdict(int)
        for q in reqs:
            ops[q["op"]] += 1
        entry = {"requests": len(reqs), "rtts": chain_depth(reqs, rtt_ms), "ms": round((t1 - t0) * 1e3, 2),
                 "ops": dict(sorted(ops.items()))}
        if rtt_ms:
            entry["ms_over_rtt"] = round((t1 - t0) * 1e3 / rtt_ms, 2)
        calls[call].append(entry)
    return calls


def summarise(calls):
    """Per call name: instances, and the median (and max) over instances."""
    out = {}
    for call, lst in calls.items():
        out[call] = {
            "instances": len(lst),
            "requests_median": statistics.median(e["requests"] for e in lst),
            "rtts_median": statistics.median(e["rtts"] for e in lst),
            "rtts_max": max(e["rtts"] for e in lst),
            "ms_median": round(statistics.median(e["ms"] for e in lst), 2),
            "each": lst,
        }
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=str(REPO / "build"))
    ap.add_argument("--mpi", default="mpich", choices=["mpich", "openmpi"])
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--workload", default="jacobi3d", choices=sorted(WORKLOADS))
    ap.add_argument("--wan", action="store_true", help="run over the WAN named by RFS_WAN_NAME")
    ap.add_argument("--hints", default="", help="RFS_HINTS for the runs")
    ap.add_argument("--label", default="run")
    ap.add_argument("--cache", default="/tmp/rfs-rtt-count-apps")
    ap.add_argument("--merge-into", default="")
    ap.add_argument("--keep-trace", default="", help="directory to keep the raw traces in")
    ap.add_argument("--analyse", nargs="+", default=[], metavar="TRACE",
                    help="only analyse traces kept earlier (--keep-trace); --rtt-ms gives the RTT")
    ap.add_argument("--rtt-ms", type=float, default=0.0)
    a = ap.parse_args()
    if a.analyse:
        out = {p: summarise(analyse(Path(p).read_text(), a.rtt_ms)) for p in a.analyse}
        print(json.dumps(out, indent=1))
        return
    build = Path(a.build_dir).resolve()
    lib, rfsd = build / "librfs-mpiio.so", build / "rfsd"
    for p in (lib, rfsd):
        if not p.exists():
            sys.exit(f"rtt_count: {p} missing: build rfs first")
    exe = build_workload(a.workload, a.mpi, Path(a.cache))

    cli_ns = srv_ns = None
    host, rtt_ms = "127.0.0.1", 0.0
    wan = {}
    if a.wan:
        import wanlib
        wan = wanlib.load_env()
        cli_ns, srv_ns = wan["RFS_WAN_CLIENT_NS"], wan["RFS_WAN_SERVER_NS"]
        host, rtt_ms = wan["RFS_WAN_SERVER_ADDR"], float(wan["RFS_WAN_RTT_MS"])

    work = Path(tempfile.mkdtemp(prefix="rfs-rtt."))
    root = work / "root"
    root.mkdir()
    tok = work / "token"
    tok.write_text(secrets.token_hex(16))
    tok.chmod(0o600)
    cmd = [str(rfsd), "--root", str(root), "--listen", f"{host}:0", "--token-file", str(tok)]
    if srv_ns:
        cmd = ["ip", "netns", "exec", srv_ns] + cmd
    srv = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    result = {}
    try:
        line = srv.stdout.readline()
        if not line.startswith("rfsd listening on "):
            raise RuntimeError(f"rfsd did not start: {line!r}")
        addr = line.split()[-1]
        env = {"LD_PRELOAD": str(lib), "RFS_TRACE": "1", "RFS_TOKEN_FILE": str(tok)}
        if a.hints:
            env["RFS_HINTS"] = a.hints
        for n in [int(x) for x in a.ranks.split(",")]:
            target = f"rfs:{addr}:/{a.workload}-{n}.dat"
            argv = launcher(a.mpi, n, env) + [str(exe), target] + WORKLOADS[a.workload][1]
            if cli_ns:
                argv = ["ip", "netns", "exec", cli_ns] + argv
            t = time.monotonic()
            r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=900)
            if r.returncode != 0:
                raise RuntimeError(f"{a.workload} at {n} ranks failed:\n{r.stdout[-3000:]}")
            if a.keep_trace:
                Path(a.keep_trace).mkdir(parents=True, exist_ok=True)
                (Path(a.keep_trace) / f"{a.label}-{a.workload}-{a.mpi}-{n}.txt").write_text(r.stdout)
            calls = summarise(analyse(r.stdout, rtt_ms))
            result[str(n)] = {"wall_s": round(time.monotonic() - t, 2), "calls": calls}
            brief = ", ".join(f"{c.removeprefix('MPI_File_')} {v['rtts_median']}"
                              for c, v in calls.items())
            log(f"{a.label} {a.workload} {n} rank(s): rtts per call (median): {brief}")
    finally:
        srv.terminate()
        try:
            srv.wait(timeout=20)
        except subprocess.TimeoutExpired:
            srv.kill()
        shutil.rmtree(work, ignore_errors=True)

    doc = {"label": a.label, "workload": a.workload, "args": WORKLOADS[a.workload][1],
           "mpi": a.mpi, "link": f"WAN {wan.get('RFS_WAN_RATE_MBIT')} Mbit/s, RTT {rtt_ms:g} ms"
           if a.wan else "loopback", "hints": a.hints, "ranks": result}
    print(json.dumps(doc, indent=1))
    if a.merge_into:
        p = Path(a.merge_into)
        allr = json.loads(p.read_text()) if p.exists() else {}
        allr.setdefault("results", {})[a.label] = doc
        p.write_text(json.dumps(allr, indent=1) + "\n")


if __name__ == "__main__":
    main()
