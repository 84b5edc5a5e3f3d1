# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""A server group for end-to-end tests: `mpiexec.mpich -n N rfsd --mpi` on loopback, every
process on a free port, one export root and one state directory they share
(docs/design.md "Scaling out: rfsd as an MPI job")."""
import os
import re
import secrets
import signal
import subprocess
import time
from pathlib import Path

from conftest import OMPI_BUILD, binary

START_TIMEOUT = 30


class Group:
    def __init__(self, base, n, token=None, extra=(), launcher="mpich", listen="127.0.0.1:0"):
        """launcher: "mpich" runs the MPICH build's rfsd under Hydra; "openmpi" the Open MPI
        build's under mpirun --enable-recovery, which leaves the other processes running when
        one dies (Hydra 4.0.2 ends them all, -disable-auto-cleanup or not)."""
        base = Path(base)
        base.mkdir(parents=True, exist_ok=True)
        self.root = base / "export"
        self.state = base / "state"
        self.metrics = base / "metrics"
        self.root.mkdir(exist_ok=True)
        self.state.mkdir(exist_ok=True)
        self.token = secrets.token_hex(16) if token is None else token
        tf = base / "token"
        tf.write_text(self.token)
        tf.chmod(0o600)
        if launcher == "mpich":
            start = ["mpiexec.mpich", "-n", str(n), binary("rfsd")]
        else:
            start = ["mpirun.openmpi", "--oversubscribe", "--allow-run-as-root",
                     "--enable-recovery", "-n", str(n), str(OMPI_BUILD / "rfsd")]
        args = [*start, "--mpi",
                "--mpi-state-dir", str(self.state), "--root", str(self.root),
                "--listen", listen, "--token-file", str(tf),
                "--metrics-file", str(self.metrics), *extra]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.addrs, self.pids = [], []
        self.killed = False
        self.log = None
        for _ in range(n + 1):  # the group's table, then the entry's "listening" line
            line = self.proc.stdout.readline()
            m = re.match(r"rfsd group process (\d+) at (\S+) pid (\d+)$", line.strip())
            if m:
                assert int(m.group(1)) == len(self.addrs)
                self.addrs.append(m.group(2))
                self.pids.append(int(m.group(3)))
            elif line.startswith("rfsd listening on "):
                self.addr = line.split()[-1]
            else:
                self.proc.kill()
                raise RuntimeError(f"rfsd group did not start: {line!r} {self.proc.stderr.read()}")
        assert len(self.addrs) == n and self.addr == self.addrs[0]
        self.host, port = self.addr.rsplit(":", 1)
        self.port = int(port)

    def url(self, path):
        return f"rfs:{self.host}:{self.port}:{path}"

    def env(self):
        e = dict(os.environ)
        e.pop("RFS_TOKEN_FILE", None)
        e["RFS_CONFIG"] = ""
        e["RFS_TOKEN"] = self.token
        return e

    def port_of(self, i):
        return int(self.addrs[i].rsplit(":", 1)[1])

    def kill(self, i, timeout=10):
        """SIGKILL process i (no goodbye to its clients); returns once it is dead (a zombie
        or gone), so nothing it had open can still answer."""
        os.kill(self.pids[i], signal.SIGKILL)
        self.killed = True
        stat = Path(f"/proc/{self.pids[i]}/stat")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if stat.read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                    return
            except (FileNotFoundError, ProcessLookupError):
                return
            time.sleep(0.01)  # polling a state, not timing: the loop ends when the kernel is done
        raise RuntimeError(f"process {i} (pid {self.pids[i]}) did not die within {timeout} s")

    def stop(self, timeout=30):
        """SIGTERM to mpiexec, which hands it to every process; returns the server log. Every
        process must end with status 0 unless the test killed one (so a sanitizer report at
        exit fails the test that caused it)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        if self.log is None:
            self.log = self.proc.stderr.read()
            assert self.killed or self.proc.returncode == 0, \
                f"server group ended with status {self.proc.returncode}:\n{self.log}"
        return self.log

    def requests(self, i, op):
        """How many `op` requests process i executed, from its metrics file (after stop)."""
        text = Path(f"{self.metrics}.{i}").read_text()
        m = re.search(r'^rfsd_requests_total\{op="%s"\} (\d+)$' % op, text, re.M)
        return int(m.group(1)) if m else 0
