#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Anchor (a): raw capacity of the emulated WAN, client -> server.

  bench/anchors/raw_link.py [--size-mib 256] [--seconds 8]

iperf3 with 1 and 4 streams, then a raw TCP copy (bench/wan/tcpprobe.py, one stream) of N
bytes of memory to a discarding sink and of an N-byte file to a file on the server's disk
(checked by SHA-256). Times include connection setup and end when the server confirms it has
every byte. Prints JSON."""

import argparse
import os
import subprocess
import sys

import anchorlib as al

PORT = 5302


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--omit", type=int, default=2)
    ap.add_argument("--no-memory-copy", action="store_true")
    a = ap.parse_args()
    size = a.size_mib << 20
    env = al.wanlib.load_env()
    cli, srv, addr = env["RFS_WAN_CLIENT_NS"], env["RFS_WAN_SERVER_NS"], env["RFS_WAN_SERVER_ADDR"]
    out = {"anchor": "raw_link", "link": al.header(env, size)}
    work = al.workdir("raw")
    server = None
    try:
        for streams in (1, 4):
            al.log("raw_link", "iperf3 -P %d" % streams)
            out["iperf3_%d" % streams] = al.wanlib.iperf3(env, streams, a.seconds, a.omit)
        src = os.path.join(work, "src.bin")
        os.mkdir(os.path.join(work, "srv"))
        al.make_file(src, size)
        al.sync()
        probe = os.path.join(al.HERE, "..", "wan", "tcpprobe.py")
        server = al.wanlib.start(srv, ["/usr/bin/python3", probe, "serve", "--bind", addr,
                                       "--port", str(PORT), "--out", os.path.join(work, "srv")],
                                 stdout=subprocess.PIPE, text=True)
        al.wanlib.wait_line(server, "ready", 10)
        limit = 60 + size * 8 / (float(env["RFS_WAN_RATE_MBIT"]) * 1e6) * 5
        if not a.no_memory_copy:
            al.log("raw_link", "tcp copy memory -> sink")
            p = al.wanlib.run(cli, ["/usr/bin/python3", probe, "send", "--host", addr, "--port",
                                    str(PORT), "--bytes", str(size)], timeout=limit)
            out["tcp_copy_memory"] = al.json.loads(p.stdout)
        al.log("raw_link", "tcp copy file -> file")
        p = al.wanlib.run(cli, ["/usr/bin/python3", probe, "send", "--host", addr, "--port",
                                str(PORT), "--file", src, "--name", "dst.bin"], timeout=limit)
        out["tcp_copy_file"] = al.json.loads(p.stdout)
        al.check_same(src, os.path.join(work, "srv", "dst.bin"), "tcp_copy_file")
        out["tcp_copy_file"]["verified"] = True
        copy = out.get("tcp_copy_memory") or out["tcp_copy_file"]
        out["ratio_tcp_copy_to_rate"] = round(copy["mbit_s"] / float(env["RFS_WAN_RATE_MBIT"]), 3)
    except (al.wanlib.WanError, subprocess.TimeoutExpired, ValueError) as e:
        out["error"] = str(e)
    finally:
        al.wanlib.stop(server)
        al.remove(work)
    al.emit(out)
    return 1 if "error" in out else 0


if __name__ == "__main__":
    sys.exit(al.guard(main))
