#!/usr/bin/python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Cut the emulated WAN link under running rfs clients and report what they saw (issue #11).

  flock /tmp/rfs-bench.lock bench/wan/linkcut.py [--build DIR] [--rate-mbit 100] [--delay-ms 25]
        [--short-cut-s 10] [--long-cut-s 180] [--runs short,long-survive,long-fail]
        [--out bench/results/wan_linkcut.json]
  bench/wan/linkcut.py --rows RESULT.json   (the rows for docs/reliability.md's table)

Needs root. Builds its own WAN (namespaces lcut-cli/lcut-srv, 10.79.0.0/24, so that it does not
disturb an `rfs` WAN someone else has up) with the host's own TCP profile: the root namespace's
tcp_rmem/tcp_wmem maxima and cubic. It removes the WAN at the end (bench/wan/down).

The cut is made by delayd (SIGRTMIN / SIGRTMIN+1): every packet in either direction, queued or
new, is dropped without a word, so TCP at both ends sees silence, never an RST or a local error.
The kernel here has no netfilter and no tc drop action; bringing a device down would give the
sender local errors at once, which is not what a broken long path looks like.

Each run starts three clients at once, in the client namespace, against one rfsd in the server
namespace, cuts the link once they all have data on the server, and heals it after the cut:
  - mpi-direct: tests/mpiio/t_restart (MPICH, 2 ranks), a checkpoint loop of collective writes,
    then MPI_File_sync and MPI_File_close;
  - mpi-abt: the same program with active buffering (rfs_abt=enable, a staging directory);
  - put: `rfs put` of a random local file.
Runs:
  - short: a --short-cut-s cut with the default timeouts (io 120 s, retry 60 s): everything must
    survive;
  - long-survive: a --long-cut-s cut with rfs_retry_timeout=300 s and rfs_io_timeout_ms=30000;
    everything must survive;
  - long-fail: the same cut with rfs_retry_timeout=60 s: each client must fail at a defined
    call within io timeout + retry timeout + one connect timeout (docs/reliability.md), and
    every byte acknowledged before must be on the server (ABT: after `rfs recover` of its
    staging directory; put: the destination untouched, then `rfs put --resume` completes).

Output: JSON on stdout (and --out): per run and client the outcome (survived / error), the
error text, when it came, the time from heal to the first new byte on the server and to the
end, bytes checked and bytes lost (must be 0).
"""

import argparse
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# Our own WAN, beside any `rfs` one (bench/wan/up reads these).
os.environ.setdefault("RFS_WAN_NAME", "lcut")
os.environ.setdefault("RFS_WAN_NET", "10.79.0")
sys.path.insert(0, HERE)
import wanlib  # noqa: E402

TOKEN = "linkcut-token-0123456789abcdef"
PORT = 7070
BLOCK = 4096
CONNECT_TIMEOUT_S = 10  # the client's default connect timeout (client/options.c)


def log(msg):
    print("linkcut: " + msg, file=sys.stderr, flush=True)


def pattern(off, length, seed=7):
    """The bytes t_restart writes at [off, off+length) (seed 7)."""
    out = bytearray()
    k0, k1 = off // BLOCK, (off + length + BLOCK - 1) // BLOCK
    for k in range(k0, k1):
        out += k.to_bytes(8, "little") + bytes([(seed + k) & 0xFF]) * (BLOCK - 8)
    start = off - k0 * BLOCK
    return bytes(out[start:start + length])


def delayd(sig):
    """Cut (SIGRTMIN) or heal (SIGRTMIN+1) and wait until delayd's stats say it took effect."""
    want = 1 if sig == signal.SIGRTMIN else 0
    path = os.path.join(wanlib.STATE, "delayd.stats.json")
    os.kill(wanlib.delayd_pid(), sig)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                st = json.load(f)
            if st.get("cut") == want:
                return st
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    raise wanlib.WanError("delayd did not %s the link" % ("cut" if want else "heal"))


class Client:
    """One client process and what it printed, read by threads (bounded waits elsewhere)."""

    def __init__(self, name, argv, env, watch):
        self.name = name
        self.watch = watch        # server-side path (glob) whose size shows progress
        self.out, self.err = [], []
        self.t_exit = None
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        for stream, sink in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._pump, args=(stream, sink), daemon=True).start()
        threading.Thread(target=self._reap, daemon=True).start()

    def _pump(self, stream, sink):
        for line in stream:
            sink.append(line.rstrip("\n"))

    def _reap(self):
        self.proc.wait()
        self.t_exit = time.monotonic()

    def server_bytes(self):
        sizes = [os.stat(p).st_size for p in glob.glob(self.watch) if os.path.exists(p)]
        return max(sizes) if sizes else 0


def steps_done(lines):
    return [int(l.split()[1]) for l in lines if re.fullmatch(r"step \d+", l)]


def check_ckpt(path, steps, nprocs, block):
    """Bytes of the acknowledged steps that are wrong or missing on the server."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        data = b""
    lost = 0
    for k in steps:
        for r in range(nprocs):
            off = (k * nprocs + r) * block
            want = pattern(off, block)
            have = data[off:off + block]
            if have != want:
                lost += sum(1 for i in range(block) if i >= len(have) or have[i] != want[i])
    return lost


def check_file(path, want):
    try:
        with open(path, "rb") as f:
            have = f.read()
    except FileNotFoundError:
        have = b""
    if have == want:
        return 0
    n = min(len(have), len(want))
    return sum(1 for i in range(n) if have[i] != want[i]) + max(0, len(want) - len(have))


def one_run(a, env, build, name, cut_s, retry_s, io_ms):
    cli_ns, srv_ns = env["RFS_WAN_CLIENT_NS"], env["RFS_WAN_SERVER_NS"]
    addr = env["RFS_WAN_SERVER_ADDR"]
    work = tempfile.mkdtemp(prefix="rfs-linkcut-")
    root = os.path.join(work, "export")
    os.mkdir(root)
    tokf = os.path.join(work, "token")
    with open(tokf, "w") as f:
        f.write(TOKEN)
    os.chmod(tokf, 0o600)
    staging = os.path.join(work, "staging")
    os.mkdir(staging)
    src = os.path.join(work, "put.src")
    put_data = random.Random(11).randbytes(a.put_mib << 20)
    with open(src, "wb") as f:
        f.write(put_data)
    srv = wanlib.start(srv_ns, [os.path.join(build, "rfsd"), "--root", root, "--listen",
                                "%s:%d" % (addr, PORT), "--token-file", tokf,
                                "--tcp-congestion", "cubic"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    clients = []
    res = {"cut_s": cut_s, "rfs_retry_timeout_s": retry_s, "rfs_io_timeout_ms": io_ms or 120000,
           "clients": {}}
    try:
        wanlib.wait_line(srv, "rfsd listening", 20)
        base = dict(os.environ, RFS_TOKEN=TOKEN, RFS_TCP_CONGESTION="cubic")
        hints = []
        if retry_s is not None:
            hints.append("rfs_retry_timeout=%d" % retry_s)
        if io_ms:
            hints.append("rfs_io_timeout_ms=%d" % io_ms)
        prog = os.path.join(build, "mpiio-tests", "mpiio_t_restart")
        for kind in ("direct", "abt"):
            h = list(hints)
            if kind == "abt":
                h += ["rfs_abt=enable", "rfs_staging_dir=" + staging]
            argv = ["mpiexec.mpich", "-n", str(a.nprocs), "-genv", "UCX_TLS", "self,sm",
                    "-genv", "LD_PRELOAD", os.path.join(build, "librfs-mpiio.so"),
                    "-genv", "RFS_TOKEN", TOKEN, "-genv", "RFS_STATS", "1",
                    "-genv", "RFS_TCP_CONGESTION", "cubic"]
            if h:
                argv += ["-genv", "RFS_HINTS", ";".join(h)]
            argv += [prog, "rfs:%s:%d:/ckpt-%s.bin" % (addr, PORT, kind), str(a.steps),
                     str(a.block)]
            clients.append(Client("mpi-" + kind, wanlib.in_ns(cli_ns, argv), base,
                                  os.path.join(root, "ckpt-%s.bin" % kind)))
        penv = dict(base)
        if retry_s is not None:
            penv["RFS_RETRY_TIMEOUT_MS"] = str(retry_s * 1000)
        if io_ms:
            penv["RFS_IO_TIMEOUT_MS"] = str(io_ms)
        put_argv = [os.path.join(build, "rfs"), "put", "--no-progress", src,
                    "rfs:%s:%d:/put.bin" % (addr, PORT)]
        clients.append(Client("put", wanlib.in_ns(cli_ns, put_argv), penv,
                              os.path.join(root, ".put.bin.rfs-part-*")))

        # Cut once every client has data on the server and none has finished.
        need = 4 << 20
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if all(c.server_bytes() >= need for c in clients):
                break
            if any(c.proc.poll() is not None for c in clients):
                break
            time.sleep(0.1)
        for c in clients:
            if c.proc.poll() is not None:
                raise wanlib.WanError("%s ended before the cut: %s" % (c.name, c.err[-5:]))
        at_cut = {c.name: c.server_bytes() for c in clients}
        steps_at_cut = {c.name: len(steps_done(c.out)) for c in clients if c.name != "put"}
        st = delayd(signal.SIGRTMIN)
        t_cut = time.monotonic()
        drops0 = st["a_to_b"]["drops_cut"] + st["b_to_a"]["drops_cut"]
        log("%s: link cut for %d s (server bytes %s)" % (name, cut_s, at_cut))
        while time.monotonic() < t_cut + cut_s:
            time.sleep(0.2)
        before_heal = {c.name: c.server_bytes() for c in clients}
        st = delayd(signal.SIGRTMIN + 1)
        t_heal = time.monotonic()
        res["packets_dropped_during_cut"] = st["a_to_b"]["drops_cut"] + \
            st["b_to_a"]["drops_cut"] - drops0
        log("%s: link healed" % name)

        first_progress = {}
        deadline = t_heal + a.after_heal_s
        while time.monotonic() < deadline:
            now = time.monotonic()
            for c in clients:
                if c.name not in first_progress and c.server_bytes() > before_heal[c.name]:
                    first_progress[c.name] = now
            if all(c.proc.poll() is not None for c in clients):
                break
            time.sleep(0.1)
        for c in clients:
            if c.proc.poll() is None:
                wanlib.stop(c.proc)
                c.err.append("linkcut: still running %d s after the heal: stopped" % a.after_heal_s)
        time.sleep(0.5)  # let the reader threads take the last lines

        for c in clients:
            r = {"server_bytes_at_cut": at_cut[c.name], "exit_status": c.proc.returncode}
            if c.name in steps_at_cut:
                r["steps_done_at_cut"] = steps_at_cut[c.name]
            ok = c.proc.returncode == 0
            r["outcome"] = "survived" if ok else "error"
            if c.t_exit is not None:
                r["exited_after_cut_s"] = round(c.t_exit - t_cut, 1)
                r["exited_before_heal"] = c.t_exit < t_heal
            if ok:
                r["end_after_heal_s"] = round(c.t_exit - t_heal, 1)
            if c.name in first_progress:
                r["first_new_byte_after_heal_s"] = round(first_progress[c.name] - t_heal, 1)
            if not ok:
                errs = [l for l in c.out if l.startswith("error ")] + \
                       [l for l in c.err if l.startswith("rfs put:")] + \
                       [l for l in c.err if "MPI_Abort" in l or "rfs" in l]
                r["error"] = (errs or c.err[-1:] or ["(no message)"])[0][:600]
            if c.name.startswith("mpi-"):
                steps = sorted(set(steps_done(c.out)))
                path = os.path.join(root, "ckpt-%s.bin" % c.name[4:])
                if c.name == "mpi-abt" and not ok:
                    # Whatever ABT kept in its journal goes to the server now.
                    rec = wanlib.run(cli_ns, [os.path.join(build, "rfs"), "recover", staging],
                                     timeout=600, check=False, env=base)
                    r["recover"] = {"exit_status": rec.returncode,
                                    "output": (rec.stdout + rec.stderr).strip()[-600:]}
                    if rec.returncode != 0 and "changed on the server since" in rec.stderr:
                        # The documented safe side (docs/abt.md, "Replay safety"): the cut
                        # came mid-burst, after deliveries the journal's file version does not
                        # know; nobody else writes this file, so --force is the answer.
                        rec = wanlib.run(cli_ns, [os.path.join(build, "rfs"), "recover",
                                                  "--force", staging],
                                         timeout=600, check=False, env=base)
                        r["recover_force"] = {"exit_status": rec.returncode,
                                              "output": (rec.stdout + rec.stderr).strip()[-600:]}
                    r["journals_left"] = len(os.listdir(staging))
                if ok:
                    steps = list(range(a.steps))  # sync and close succeeded: all of it
                    r["durable"] = "sync and close returned success"
                else:
                    r["durable"] = "none (the failing run never synced); checked: every step " \
                                   "whose write call returned"
                r["steps_acknowledged"] = len(steps)
                r["bytes_checked"] = len(steps) * a.nprocs * a.block
                r["bytes_lost"] = check_ckpt(path, steps, a.nprocs, a.block)
            else:
                dest = os.path.join(root, "put.bin")
                if ok:
                    r["bytes_checked"] = len(put_data)
                    r["bytes_lost"] = check_file(dest, put_data)
                else:
                    r["destination_untouched"] = not os.path.exists(dest)
                    res_put = wanlib.run(cli_ns, put_argv[:2] + ["--resume"] + put_argv[2:],
                                         timeout=600, check=False, env=penv)
                    r["resume"] = {"exit_status": res_put.returncode,
                                   "output": (res_put.stdout + res_put.stderr).strip()[-400:]}
                    r["bytes_checked"] = len(put_data)
                    r["bytes_lost"] = check_file(dest, put_data)
            # documented bound for a failure: io timeout + retry timeout + one connect timeout
            if not ok and "exited_after_cut_s" in r:
                bound = (io_ms or 120000) / 1000 + (retry_s if retry_s is not None else 60) \
                    + CONNECT_TIMEOUT_S
                r["failure_bound_s"] = bound
                # a few seconds for the failure to travel up (MPI agreement, abort, exit)
                r["within_bound"] = r["exited_after_cut_s"] <= bound + 5
            r["stats_lines"] = [l for l in c.err if "connection restored" in l or "recovery" in l][:4]
            res["clients"][c.name] = r
    finally:
        for c in clients:
            wanlib.stop(c.proc)
        wanlib.stop(srv)
        # never leave the link cut for whoever comes next
        try:
            delayd(signal.SIGRTMIN + 1)
        except (wanlib.WanError, OSError):
            pass
        shutil.rmtree(work, ignore_errors=True)
    return res


RUN_TEXT = {
    "short": "cut of {cut_s} s, default timeouts (io 120 s, retry 60 s)",
    "long-survive": "cut of {cut_s} s, rfs_retry_timeout=300, io timeout 30 s",
    "long-fail": "cut of {cut_s} s, rfs_retry_timeout=60, io timeout 30 s",
}
CLIENT_TEXT = {"mpi-direct": ("no", "MPICH"), "mpi-abt": ("yes", "MPICH"), "put": ("—", "—")}


def doc_rows(path):
    """The rows of docs/reliability.md's outcome table for a result file
    (tests/faults/test_matrix_doc.py checks that the table matches the committed result)."""
    with open(path) as f:
        res = json.load(f)
    rows = []
    for name, run in res["runs"].items():
        for client, r in run.get("clients", {}).items():
            abt, mpi = CLIENT_TEXT[client]
            fault = "WAN link cut `%s` (%s), `%s`" % (
                name, RUN_TEXT[name].format(cut_s=run["cut_s"]), client)
            if r["outcome"] == "survived":
                seen = "survived: every call succeeded, exit 0; first new byte on the server " \
                       "%s s after the heal, done %s s after it" % (
                           r.get("first_new_byte_after_heal_s", "—"), r["end_after_heal_s"])
            else:
                err = r.get("error", "")
                call = err.split(":")[0] if err.startswith("error ") else "exit status 1"
                if client == "put":
                    call = "`rfs put` exit 1"
                seen = "error: %s, %s s after the cut (bound %s s); %s" % (
                    call.replace("error ", "MPI error at "), r.get("exited_after_cut_s", r.get("failed_after_cut_s", "—")),
                    r.get("failure_bound_s"),
                    ("after the heal `rfs recover` exit %s" % r["recover"]["exit_status"] +
                     (" (file changed since the journal's last known version: the cut came "
                      "mid-burst), `rfs recover --force` exit %s" %
                      r["recover_force"]["exit_status"] if "recover_force" in r else ""))
                    if "recover" in r else
                    "destination untouched, `--resume` exit %s" % r["resume"]["exit_status"]
                    if "resume" in r else "acknowledged steps checked")
            rows.append("| %s | %s | %s | %s | %d of %d | bench/wan/linkcut.py |" % (
                fault, abt, mpi, seen, r["bytes_lost"], r["bytes_checked"]))
    return rows


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--rows":
        print("\n".join(doc_rows(sys.argv[2])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--rate-mbit", type=float, default=100)
    ap.add_argument("--delay-ms", type=float, default=25)
    ap.add_argument("--short-cut-s", type=int, default=10)
    ap.add_argument("--long-cut-s", type=int, default=180)
    ap.add_argument("--runs", default="short,long-survive,long-fail")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--block", type=int, default=1 << 20)
    ap.add_argument("--nprocs", type=int, default=2)
    ap.add_argument("--put-mib", type=int, default=96)
    ap.add_argument("--after-heal-s", type=int, default=300)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("linkcut: needs root")
    build = os.path.abspath(a.build)

    def sysctl(path):
        with open("/proc/sys/" + path.replace(".", "/")) as f:
            return " ".join(f.read().split())

    # Congestion control is set per socket (RFS_TCP_CONGESTION, rfsd --tcp-congestion): a
    # namespace's default may only name an algorithm in tcp_allowed_congestion_control, and
    # cubic is not in it here.
    profile = {"net.ipv4.tcp_rmem": sysctl("net.ipv4.tcp_rmem"),
               "net.ipv4.tcp_wmem": sysctl("net.ipv4.tcp_wmem")}
    subprocess.run([os.path.join(HERE, "up"), "--rate-mbit", str(a.rate_mbit), "--delay-ms",
                    str(a.delay_ms)], check=True, stdout=sys.stderr, timeout=120)
    out = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "testbed": {}, "runs": {}}
    try:
        env = wanlib.load_env()
        # The host's own TCP profile, not the testbed's raised maxima: what a job gets by default.
        for ns in (env["RFS_WAN_CLIENT_NS"], env["RFS_WAN_SERVER_NS"]):
            for k, v in profile.items():
                wanlib.run(ns, ["sysctl", "-q", "-w", "%s=%s" % (k, v)], timeout=10)
        out["testbed"] = {"rate_mbit": a.rate_mbit, "delay_ms_one_way": a.delay_ms,
                          "rtt_ms": 2 * a.delay_ms, "tcp_profile": profile,
                          "tcp_congestion": "cubic (per socket, client and rfsd)",
                          "cut": "delayd drops every packet both ways (SIGRTMIN/SIGRTMIN+1)",
                          "mpi": "MPICH %d ranks, t_restart %d steps x %d bytes per rank" %
                                 (a.nprocs, a.steps, a.block),
                          "put_bytes": a.put_mib << 20, "kernel": os.uname().release,
                          "loadavg_1m_at_start": os.getloadavg()[0]}
        plan = {"short": (a.short_cut_s, None, None),
                "long-survive": (a.long_cut_s, 300, 30000),
                "long-fail": (a.long_cut_s, 60, 30000)}
        for name in a.runs.split(","):
            cut_s, retry_s, io_ms = plan[name]
            log("run %s" % name)
            try:
                out["runs"][name] = one_run(a, env, build, name, cut_s, retry_s, io_ms)
            except (wanlib.WanError, subprocess.TimeoutExpired) as e:
                out["runs"][name] = {"error": str(e)}
        lost = [r.get("bytes_lost") for run in out["runs"].values()
                for r in run.get("clients", {}).values()]
        out["summary"] = {"bytes_lost_total": sum(x or 0 for x in lost),
                          "every_case_checked": all(x is not None for x in lost) and bool(lost)}
    finally:
        subprocess.run([os.path.join(HERE, "down")], stdout=sys.stderr, timeout=60)
    wanlib.emit_json(out, a.out)


if __name__ == "__main__":
    main()
