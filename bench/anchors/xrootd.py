#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Anchor (b): XRootD over the emulated WAN.

  bench/anchors/xrootd.py [--size-mib 256] [--mpi-mib-per-rank 8] [--mpi-timeout 45] [--mpi-runs 5]
                          [--no-stage]

Starts xrootd (as the xrootd user, inside the server namespace, export with `nolock`) and
measures from the client namespace:
  - xrdcp put (client file -> server) and get (server file -> client), default options, and
    put with --streams 4 (what a user tuning for a WAN would try);
  - stage: write the file locally, then xrdcp it (the "write then copy" workflow; --no-stage
    leaves it to stage_copy.py, which measures the same workflow with every copy tool);
  - MPI-IO straight to XRootD through libXrdPosixPreload.so with the name
    ufs:root://host:port//path (2 MPICH ranks, collective writes), --mpi-runs attempts each
    bounded by a timeout; "usable" only if every attempt completes, else the reason.
Every transfer is checked by SHA-256 (or size for the MPI file). Prints JSON."""

import argparse
import os
import subprocess
import sys
import time

import anchorlib as al

PRELOAD = "/usr/lib/x86_64-linux-gnu/libXrdPosixPreload.so"


def xrdcp(cli, args, timeout):
    return al.timed(cli, ["xrdcp", "--nopbar", "-f"] + args, timeout)[0]


def mpi_once(cli, prog, name, target, mib, timeout):
    # UCX's shared-memory transport cannot allocate its FIFO under the XrdPosix preload
    # (it intercepts the shm file calls), so the ranks talk over TCP on loopback instead.
    cmd = ["timeout", "-k", "5", str(timeout), "mpiexec.mpich", "-n", "2",
           "-genv", "UCX_TLS", "self,tcp", "-genv", "UCX_NET_DEVICES", "lo",
           "-genv", "LD_PRELOAD", PRELOAD, prog, name, str(mib)]
    if os.path.exists(target):
        os.unlink(target)
    t0 = time.monotonic()
    p = al.wanlib.run(cli, cmd, timeout=timeout + 30, check=False)
    run = {"seconds_until_exit": round(time.monotonic() - t0, 3), "exit_code": p.returncode}
    if p.returncode in (124, 137):
        run["ok"] = False
        run["reason"] = "hung: no exit within %ds (killed by timeout)" % timeout
    elif p.returncode != 0:
        run["ok"] = False
        run["reason"] = "failed (exit %d): %s" % (p.returncode, (p.stderr or p.stdout).strip()[-300:])
    else:
        want = 2 * (mib << 20)
        got = os.path.getsize(target) if os.path.exists(target) else -1
        run["ok"] = got == want
        if got != want:
            run["reason"] = "exited 0 but the server file has %d of %d bytes" % (got, want)
        else:
            run.update(al.json.loads(p.stdout.strip().splitlines()[-1]))
    return run


def mpi_via_preload(cli, url_base, export, mib, timeout, runs):
    """Several bounded attempts: it is usable only if every attempt completes."""
    res = {"name_form": "ufs:root://host:port//path", "ranks": 2, "mib_per_rank": mib,
           "timeout_s": timeout, "ucx": "UCX_TLS=self,tcp UCX_NET_DEVICES=lo"}
    prog = os.path.join(al.BUILD, "mpi_write")
    src = os.path.join(al.HERE, "mpi_write.c")
    if not os.path.exists(prog) or os.path.getmtime(src) > os.path.getmtime(prog):
        os.makedirs(al.BUILD, exist_ok=True)
        subprocess.run(["mpicc.mpich", "-O2", "-o", prog, src], check=True, timeout=120)
    target = os.path.join(export, "mpi.bin")
    name = "ufs:" + url_base + "/" + target
    res["runs"] = [mpi_once(cli, prog, name, target, mib, timeout) for _ in range(runs)]
    ok = sum(1 for r in res["runs"] if r["ok"])
    res["runs_ok"] = "%d/%d" % (ok, runs)
    res["usable"] = ok == runs
    if ok != runs:
        res["reason"] = "not usable: %d of %d runs did not complete; first: %s" % (
            runs - ok, runs, next(r["reason"] for r in res["runs"] if not r["ok"]))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--mpi-mib-per-rank", type=int, default=8)
    ap.add_argument("--mpi-timeout", type=int, default=45)
    ap.add_argument("--mpi-runs", type=int, default=5)
    ap.add_argument("--no-stage", action="store_true")
    a = ap.parse_args()
    size = a.size_mib << 20
    env = al.wanlib.load_env()
    cli = env["RFS_WAN_CLIENT_NS"]
    out = {"anchor": "xrootd", "link": al.header(env, size)}
    limit = 60 + size * 8 / (float(env["RFS_WAN_RATE_MBIT"]) * 1e6) * 5
    work = al.workdir("xrootd")
    export = os.path.join(work, "export")
    try:
        ver = subprocess.run(["xrootd", "-v"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=10).stdout.strip()
        out["xrootd_version"] = ver
        xrd = al.ctl("xrootd-ctl", "start", export)
        url = xrd["XRD_URL"].rstrip("/")  # root://addr:port
        src = os.path.join(work, "src.bin")
        al.make_file(src, size)
        al.sync()

        al.log("xrootd", "xrdcp put")
        secs = xrdcp(cli, [src, "%s/%s/put.bin" % (url, export)], limit)
        out["xrdcp_put"] = al.rate(size, secs)
        al.check_same(src, os.path.join(export, "put.bin"), "xrdcp put")
        al.sync()

        al.log("xrootd", "xrdcp put --streams 4")
        secs = xrdcp(cli, ["--streams", "4", src, "%s/%s/put4.bin" % (url, export)], limit)
        out["xrdcp_put_streams4"] = al.rate(size, secs)
        al.check_same(src, os.path.join(export, "put4.bin"), "xrdcp put --streams 4")
        al.sync()

        al.log("xrootd", "xrdcp get")
        got = os.path.join(work, "got.bin")
        secs = xrdcp(cli, ["%s/%s/put.bin" % (url, export), got], limit)
        out["xrdcp_get"] = al.rate(size, secs)
        al.check_same(src, got, "xrdcp get")
        os.unlink(got)
        al.sync()

        if not a.no_stage:
            al.log("xrootd", "stage: write locally, then xrdcp")
            local = os.path.join(work, "staged.bin")
            t0 = time.monotonic()
            al.make_file(local, size)
            t_write = time.monotonic() - t0
            t_copy = xrdcp(cli, [local, "%s/%s/staged.bin" % (url, export)], limit)
            out["stage_write_then_xrdcp"] = dict(al.rate(size, t_write + t_copy),
                                                 local_write_s=round(t_write, 3),
                                                 copy_s=round(t_copy, 3))
            al.check_same(local, os.path.join(export, "staged.bin"), "stage xrdcp")
            al.sync()

        al.log("xrootd", "MPI-IO through libXrdPosixPreload (timeout %ds)" % a.mpi_timeout)
        out["mpiio_xrdposix_preload"] = mpi_via_preload(cli, url, export, a.mpi_mib_per_rank,
                                                        a.mpi_timeout, a.mpi_runs)
        out["ratio_put_to_rate"] = round(out["xrdcp_put"]["mbit_s"] / float(env["RFS_WAN_RATE_MBIT"]), 3)
    except (al.wanlib.WanError, subprocess.TimeoutExpired, subprocess.CalledProcessError,
            ValueError, KeyError) as e:
        out["error"] = str(e)
    finally:
        try:
            al.ctl("xrootd-ctl", "stop")
        finally:
            al.remove(work)
    al.emit(out)
    return 1 if "error" in out else 0


if __name__ == "__main__":
    sys.exit(al.guard(main))
