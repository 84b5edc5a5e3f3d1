# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Helpers shared by bench/wan/selftest and bench/anchors/*: read the running WAN's settings,
start processes inside its namespaces, and stop them again by PID (never by name)."""

import json
import os
import select
import signal
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STATE = os.environ.get("RFS_WAN_STATE_DIR", f"/run/{os.environ.get('RFS_WAN_NAME', 'rfs')}-wan")


class WanError(RuntimeError):
    pass


def load_env():
    """Settings written by bench/wan/up, as a dict of strings."""
    path = os.path.join(STATE, "config.env")
    if not os.path.exists(path):
        raise WanError("no WAN is up: run bench/wan/up first")
    env = {}
    with open(path) as f:
        for line in f:
            key, _, val = line.strip().partition("=")
            if key:
                env[key] = val
    return env


def in_ns(ns, argv):
    # `ip netns exec` execs the command itself, so the Popen pid is the command's pid
    return ["ip", "netns", "exec", ns] + list(argv)


def run(ns, argv, timeout, check=True, **kw):
    """Run argv inside namespace ns (or the root namespace if ns is None), bounded in time."""
    cmd = in_ns(ns, argv) if ns else list(argv)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise WanError("%s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-800:]))
    return p


def start(ns, argv, **kw):
    """Start a long-running process inside ns; stop it with stop()."""
    kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.Popen(in_ns(ns, argv) if ns else list(argv), **kw)


def wait_line(proc, expect, timeout):
    """Wait (bounded) until proc prints a stdout line containing `expect`. Reads the pipe's fd
    itself: readline() on the text stream could take two lines into Python's buffer at once,
    and select() would then not wake for the second."""
    deadline = time.monotonic() + timeout
    fd = proc.stdout.fileno()
    buf = b""
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            chunk = os.read(fd, 65536)
            buf += chunk
            if expect.encode() in buf:
                return
            if chunk:
                continue
        if proc.poll() is not None:
            raise WanError("process exited with %s before it was ready (said: %r)"
                           % (proc.returncode, buf[-300:].decode(errors="replace")))
    raise WanError("not ready after %ss (said: %r)" % (timeout, buf[-300:].decode(errors="replace")))


def wait_listen(ns, port, timeout):
    """Wait (bounded) until something listens on TCP `port` inside ns."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = run(ns, ["ss", "-Hltn", "sport = :%d" % port], timeout=10, check=False).stdout
        if out.strip():
            return
        time.sleep(0.1)
    raise WanError("nothing listens on port %d in %s after %ss" % (port, ns, timeout))


def stop(proc, grace=5.0):
    """Stop a process we started, by its PID: SIGTERM, then SIGKILL after `grace` seconds."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=grace)
    except ProcessLookupError:
        pass


def stop_pidfile(path, grace=5.0):
    """Stop a daemon that wrote its PID to `path` (e.g. xrootd, sshd)."""
    try:
        with open(path) as f:
            pid = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        # PID 1 here does not reap orphans: a zombie counts as stopped
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return
        except OSError:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def delayd_pid():
    with open(os.path.join(STATE, "delayd.pid")) as f:
        return int(f.read().strip())


def cpu_seconds(pid):
    """User+system CPU time consumed so far by pid (all threads)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def delayd_stats():
    """Ask delayd for its counters (SIGUSR1 makes it write the stats file) and read them."""
    path = os.path.join(STATE, "delayd.stats.json")
    before = os.stat(path).st_mtime_ns if os.path.exists(path) else 0
    os.kill(delayd_pid(), signal.SIGUSR1)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        if os.path.exists(path) and os.stat(path).st_mtime_ns != before:
            break
        time.sleep(0.02)
    with open(path) as f:
        return json.load(f)


def median(xs):
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return None
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def iperf3(env, streams, seconds, omit, port=5201, timeout_extra=30):
    """One iperf3 run client -> server through the WAN. Returns receiver-side Mbit/s and
    sender retransmits. The server runs for this one test only (-1)."""
    srv = start(env["RFS_WAN_SERVER_NS"],
                ["iperf3", "-s", "-1", "-B", env["RFS_WAN_SERVER_ADDR"], "-p", str(port)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listen(env["RFS_WAN_SERVER_NS"], port, 10)
        p = run(env["RFS_WAN_CLIENT_NS"],
                ["iperf3", "-c", env["RFS_WAN_SERVER_ADDR"], "-p", str(port), "-J",
                 "-t", str(seconds), "-O", str(omit), "-P", str(streams)],
                timeout=seconds + omit + timeout_extra)
        res = json.loads(p.stdout)
        end = res["end"]
        return {
            "streams": streams,
            "mbit_s": round(end["sum_received"]["bits_per_second"] / 1e6, 1),
            "retransmits": end["sum_sent"].get("retransmits"),
            "seconds": seconds,
            "omitted_s": omit,
        }
    finally:
        stop(srv)


def iperf3_bytes(env, streams, nbytes, port=5201, timeout=300):
    """iperf3 moving nbytes client -> server from a cold start (-n, nothing omitted): MB/s over
    the wall time of the client command (its control connection and TCP's slow start included),
    the way a copy tool's rate is measured."""
    srv = start(env["RFS_WAN_SERVER_NS"],
                ["iperf3", "-s", "-1", "-B", env["RFS_WAN_SERVER_ADDR"], "-p", str(port)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listen(env["RFS_WAN_SERVER_NS"], port, 10)
        t0 = time.monotonic()
        run(env["RFS_WAN_CLIENT_NS"],
            ["iperf3", "-c", env["RFS_WAN_SERVER_ADDR"], "-p", str(port), "-J",
             "-n", str(nbytes), "-P", str(streams)], timeout=timeout)
        return nbytes / (time.monotonic() - t0) / 1e6
    finally:
        stop(srv)


def emit_json(doc, out=None):
    """A benchmark's result: printed on stdout, and written to out when given."""
    text = json.dumps(doc, indent=1)
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
