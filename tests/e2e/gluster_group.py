# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Run by test_server_mpiio.py inside `unshare -n -m` (a network and a mount namespace of its
own): a one-brick GlusterFS volume (Debian's glusterfs-server) on a private address, mounted
with FUSE as the export of an rfsd --mpi --backend mpiio group, and MPI-IO programs through it.
Nothing leaves the namespaces: glusterd's state, run and log directories are bind mounts of
directories under BASE, and its ports are in the private network namespace.
Usage: gluster_group.py BASE NSERVERS PROGRAM... ; exit 0 when every program's bytes equal a
local run's (one line "SAME program" each), 77 when GlusterFS cannot run here (reason on
stderr)."""
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mpiio_util import run_both  # noqa: E402
from server_group import Group  # noqa: E402

ADDR = "10.79.29.1"  # a private network namespace: only this process tree sees it


def sh(*args, check=True):
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stdout}{r.stderr}")
    return r


def cannot(reason):
    print(reason, file=sys.stderr)
    sys.exit(77)


def gluster(*args, check=True):
    return sh("gluster", "--mode=script", *args, check=check)


def main():
    base, nservers, programs = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    gl = base / "gluster"
    for d in ("lib", "run", "log", "brick"):
        (gl / d).mkdir(parents=True, exist_ok=True)
    export = base / "group" / "export"
    export.mkdir(parents=True, exist_ok=True)
    # glusterd refuses bricks on loopback addresses: one end of a veth pair carries ADDR
    sh("ip", "link", "set", "lo", "up")
    if sh("ip", "link", "add", "gl0", "type", "veth", "peer", "name", "gl1",
          check=False).returncode:
        cannot("cannot create a veth pair in the test's network namespace")
    sh("ip", "addr", "add", f"{ADDR}/24", "dev", "gl0")
    sh("ip", "link", "set", "gl0", "up")
    sh("ip", "link", "set", "gl1", "up")
    for sub, where in (("lib", "/var/lib/glusterd"), ("run", "/var/run/gluster"),
                       ("log", "/var/log/glusterfs")):
        Path(where).mkdir(parents=True, exist_ok=True)
        sh("mount", "--bind", str(gl / sub), where)
    pidfile = gl / "run" / "glusterd.pid"
    sh("glusterd", "-p", str(pidfile))
    pid = None
    try:
        for _ in range(100):  # glusterd answers its CLI once it is up: bounded polling
            if gluster("volume", "info", check=False).returncode == 0:
                break
            time.sleep(0.1)
        pid = int(pidfile.read_text())
        gluster("volume", "create", "gv0", f"{ADDR}:{gl / 'brick' / 'b'}", "force")
        gluster("volume", "start", "gv0")
        if sh("mount", "-t", "glusterfs", f"{ADDR}:/gv0", str(export), check=False).returncode:
            cannot("the FUSE mount of the GlusterFS volume failed")
        try:
            fs = sh("stat", "-f", "-c", "%T", str(export)).stdout.strip()
            print(f"export file system: {fs}")
            g = Group(base / "group", nservers, extra=("--backend", "mpiio"))
            try:
                for name in programs:
                    local, remote = run_both(g, base, "mpich", name, 4, name)
                    if local is None or remote != local:
                        print(f"DIFFER {name}")
                        return 1
                    print(f"SAME {name}")
            finally:
                log = g.stop()
            opened = log.count(f"opened {export}/")
            print(f"group MPI_File_open calls on the volume: {opened}")
            return 0 if opened > 0 else 1
        finally:
            sh("umount", str(export), check=False)
    finally:
        gluster("volume", "stop", "gv0", check=False)
        if pid:
            subprocess.run(["kill", str(pid)], check=False)


if __name__ == "__main__":
    sys.exit(main())
