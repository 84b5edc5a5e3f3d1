#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Anchor (c): sshfs over the emulated WAN.

  bench/anchors/sshfs.py [--size-mib 256] [--mpi-mib-per-rank 32]

Starts sshd in the server namespace (bench/anchors/sshd-ctl: throwaway keys) and, inside one
`ip netns exec` in the client namespace with the mount present (bench/anchors/sshfs-run),
measures with default sshfs options:
  - sequential write of the file into the mount (dd bs=1M; ends when close() returns),
  - sequential read of a server-side file that the client never saw (no cache hit),
  - MPI-IO: 2 MPICH ranks writing one shared file in the mount with collective writes.
Data checked by SHA-256 (size for the MPI file). Prints JSON."""

import argparse
import os
import subprocess
import sys

import anchorlib as al

# Runs inside the client namespace with the mount at $RFS_SSHFS_MOUNT; prints timings.
INNER = r'''
set -eu
m=$RFS_SSHFS_MOUNT src=$1 dst=$2 prog=$3 mib=$4
ns() { date +%s%N; }
t0=$(ns); dd if="$src" of="$m/put.bin" bs=1M status=none; t1=$(ns)
dd if="$m/serverside.bin" of="$dst" bs=1M status=none; t2=$(ns)
echo "write_ns=$((t1 - t0))"
echo "read_ns=$((t2 - t1))"
mpi=$(timeout -k 5 120 mpiexec.mpich -n 2 -genv UCX_TLS self,sm "$prog" "$m/mpi.bin" "$mib" 2>&1) \
    && echo "mpi=$mpi" || echo "mpi_error=$(echo "$mpi" | tail -c 300 | tr '\n' ' ')"
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--mpi-mib-per-rank", type=int, default=32)
    a = ap.parse_args()
    size = a.size_mib << 20
    env = al.wanlib.load_env()
    out = {"anchor": "sshfs", "link": al.header(env, size)}
    limit = 300 + size * 8 / (float(env["RFS_WAN_RATE_MBIT"]) * 1e6) * 10
    work = al.workdir("sshfs")
    export = os.path.join(work, "export")
    os.mkdir(export)
    try:
        ver = subprocess.run(["sshfs", "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=10).stdout
        out["sshfs_version"] = next((l.strip() for l in ver.splitlines() if "SSHFS" in l), None)
        prog = os.path.join(al.BUILD, "mpi_write")
        if not os.path.exists(prog):
            os.makedirs(al.BUILD, exist_ok=True)
            subprocess.run(["mpicc.mpich", "-O2", "-o", prog, os.path.join(al.HERE, "mpi_write.c")],
                           check=True, timeout=120)
        al.ctl("sshd-ctl", "start")
        src = os.path.join(work, "src.bin")
        dst = os.path.join(work, "got.bin")
        al.make_file(src, size)
        al.make_file(os.path.join(export, "serverside.bin"), size)
        al.sync()
        al.log("sshfs", "write, read, MPI-IO inside the mount")
        p = subprocess.run([os.path.join(al.HERE, "sshfs-run"), export, "bash", "-c", INNER, "_",
                            src, dst, prog, str(a.mpi_mib_per_rank)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=limit)
        if p.returncode != 0:
            raise al.wanlib.WanError("sshfs-run failed (%d): %s" % (p.returncode, p.stderr[-400:]))
        kv = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
        out["write"] = al.rate(size, int(kv["write_ns"]) / 1e9)
        al.check_same(src, os.path.join(export, "put.bin"), "sshfs write")
        out["read"] = al.rate(size, int(kv["read_ns"]) / 1e9)
        al.check_same(os.path.join(export, "serverside.bin"), dst, "sshfs read")
        if "mpi" in kv:
            res = al.json.loads(kv["mpi"].strip().splitlines()[-1])
            want = 2 * (a.mpi_mib_per_rank << 20)
            res["verified_size"] = os.path.getsize(os.path.join(export, "mpi.bin")) == want
            out["mpiio_in_mount"] = res
        else:
            out["mpiio_in_mount"] = {"usable": False, "reason": kv.get("mpi_error")}
        out["ratio_write_to_rate"] = round(out["write"]["mbit_s"] / float(env["RFS_WAN_RATE_MBIT"]), 3)
    except (al.wanlib.WanError, subprocess.TimeoutExpired, subprocess.CalledProcessError,
            ValueError, KeyError) as e:
        out["error"] = str(e)
    finally:
        try:
            al.ctl("sshd-ctl", "stop")
        finally:
            al.remove(work)
    al.emit(out)
    return 1 if "error" in out else 0


if __name__ == "__main__":
    sys.exit(al.guard(main))
