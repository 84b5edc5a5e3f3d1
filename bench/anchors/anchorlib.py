# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Shared pieces of the anchor benchmarks (bench/anchors/*.py): test files, timing, the
server daemons (through xrootd-ctl / sshd-ctl) and cleanup. Every step is bounded by a
timeout; daemons are stopped by PID by their ctl scripts."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "wan"))
import wanlib  # noqa: E402,F401  (re-exported for the anchors)

BUILD = os.path.join(HERE, ".build")


def log(name, msg):
    print("%s: %s" % (name, msg), file=sys.stderr, flush=True)


def workdir(name):
    """Scratch directory on disk (not tmpfs), readable by the xrootd user."""
    d = tempfile.mkdtemp(prefix="rfs-anchor-%s." % name, dir="/var/tmp")
    os.chmod(d, 0o755)
    return d


def remove(path):
    shutil.rmtree(path, ignore_errors=True)


def make_file(path, size):
    """Incompressible test data, so no tool gains from compression."""
    chunk = 4 << 20
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(chunk, left)
            f.write(os.urandom(n))
            left -= n
    os.chmod(path, 0o644)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(4 << 20)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def sync():
    """Flush dirty pages so the next timed step does not pay for the previous one."""
    subprocess.run(["sync"], timeout=120)


def timed(ns, argv, timeout, env=None):
    """Run argv in namespace ns; return (seconds, CompletedProcess). Raises on failure."""
    t0 = time.monotonic()
    p = wanlib.run(ns, argv, timeout=timeout, env=env)
    return time.monotonic() - t0, p


def rate(size, secs):
    return {"seconds": round(secs, 3), "mbit_s": round(size * 8 / secs / 1e6, 1)}


def ctl(script, *args, timeout=60):
    """Run an anchors ctl script; parse the KEY=VALUE lines it prints."""
    p = subprocess.run([os.path.join(HERE, script)] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout)
    if p.returncode != 0:
        raise wanlib.WanError("%s %s failed: %s" % (script, " ".join(args), p.stderr.strip()[-800:]))
    out = {}
    for line in p.stdout.splitlines():
        k, _, v = line.partition("=")
        if k:
            out[k] = v
    return out


def ssh_opts():
    p = subprocess.run([os.path.join(HERE, "ssh-opts")], stdout=subprocess.PIPE, text=True,
                       timeout=10, check=True)
    return p.stdout.split()


def header(env, size):
    return {"rate_mbit": float(env["RFS_WAN_RATE_MBIT"]),
            "delay_ms_one_way": float(env["RFS_WAN_DELAY_MS"]),
            "rtt_ms": float(env["RFS_WAN_RTT_MS"]), "file_bytes": size,
            "loadavg_1m": os.getloadavg()[0]}


def emit(obj):
    print(json.dumps(obj, indent=1), flush=True)


def check_same(src, dst, what):
    if sha256(src) != sha256(dst):
        raise wanlib.WanError("%s: data differs after transfer (%s vs %s)" % (what, src, dst))


def guard(main):
    """Run an anchor's main(); a missing WAN or similar setup error becomes JSON, not a trace."""
    try:
        return main()
    except wanlib.WanError as e:
        emit({"error": str(e)})
        return 1
