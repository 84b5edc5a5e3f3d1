#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Anchor (d): stage by copy -- write the output locally, then copy it to the server with the
fastest tool available.

  bench/anchors/stage_copy.py [--size-mib 256] [--tools xrdcp,scp,rsync]

Measures in the same run, client -> server, each checked by SHA-256: xrdcp (xrootd as in
xrootd.py), scp and rsync over ssh (sshd as in sshfs.py); --tools picks a subset (rsync
--whole-file and scp ride the same ssh cipher and measure alike). The staged figure is local
write time plus the fastest copy ("best_tool"). Prints JSON."""

import argparse
import os
import subprocess
import sys
import time

import anchorlib as al


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--tools", default="xrdcp,scp,rsync")
    a = ap.parse_args()
    wanted = [t for t in a.tools.split(",") if t]
    size = a.size_mib << 20
    env = al.wanlib.load_env()
    cli = env["RFS_WAN_CLIENT_NS"]
    out = {"anchor": "stage_copy", "link": al.header(env, size), "copy": {}}
    limit = 120 + size * 8 / (float(env["RFS_WAN_RATE_MBIT"]) * 1e6) * 10
    work = al.workdir("stage")
    export = os.path.join(work, "export")
    try:
        xrd = al.ctl("xrootd-ctl", "start", export)
        ssh = al.ctl("sshd-ctl", "start")
        opts = al.ssh_opts()
        url = xrd["XRD_URL"].rstrip("/")
        target = ssh["SSH_TARGET"]

        local = os.path.join(work, "local.bin")
        al.sync()
        t0 = time.monotonic()
        al.make_file(local, size)
        t_write = time.monotonic() - t0
        out["local_write"] = al.rate(size, t_write)
        al.sync()

        tools = {
            "xrdcp": ["xrdcp", "--nopbar", "-f", local, "%s/%s/xrdcp.bin" % (url, export)],
            "scp": ["scp", "-q"] + opts + [local, "%s:%s/scp.bin" % (target, export)],
            "rsync": ["rsync", "-a", "--whole-file", "-e", "ssh " + " ".join(opts), local,
                      "%s:%s/rsync.bin" % (target, export)],
        }
        unknown = [t for t in wanted if t not in tools]
        if unknown or not wanted:
            raise al.wanlib.WanError("--tools: unknown or empty: %s" % ",".join(unknown))
        tools = {k: v for k, v in tools.items() if k in wanted}
        for name, argv in tools.items():
            al.log("stage_copy", name)
            try:
                secs = al.timed(cli, argv, limit)[0]
                al.check_same(local, os.path.join(export, name + ".bin"), name)
                out["copy"][name] = dict(al.rate(size, secs), verified=True)
            except (al.wanlib.WanError, subprocess.TimeoutExpired) as e:
                out["copy"][name] = {"error": str(e)[-400:]}
            al.sync()
        ok = {k: v for k, v in out["copy"].items() if "seconds" in v}
        if not ok:
            raise al.wanlib.WanError("no copy tool worked")
        best = min(ok, key=lambda k: ok[k]["seconds"])
        out["best_tool"] = best
        out["staged_total"] = dict(al.rate(size, t_write + ok[best]["seconds"]),
                                   local_write_s=round(t_write, 3),
                                   copy_s=ok[best]["seconds"])
        out["ratio_best_copy_to_rate"] = round(ok[best]["mbit_s"] / float(env["RFS_WAN_RATE_MBIT"]), 3)
    except (al.wanlib.WanError, subprocess.TimeoutExpired, ValueError, KeyError) as e:
        out["error"] = str(e)
    finally:
        for script in ("xrootd-ctl", "sshd-ctl"):
            try:
                al.ctl(script, "stop")
            except (al.wanlib.WanError, subprocess.TimeoutExpired) as e:
                out.setdefault("cleanup_errors", []).append(str(e))
        al.remove(work)
    al.emit(out)
    return 1 if "error" in out else 0


if __name__ == "__main__":
    sys.exit(al.guard(main))
