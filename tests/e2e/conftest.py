# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Shared fixtures for end-to-end tests: a real rfsd on 127.0.0.1:0 with a temporary export root."""
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("RFS_BUILD_DIR", REPO / "build")).resolve()
# MPI-IO tests preload librfs-mpiio.so built for each MPI (scripts/test builds both).
MPICH_BUILD = Path(os.environ.get("RFS_BUILD_DIR_MPICH", BUILD)).resolve()
OMPI_BUILD = Path(os.environ.get("RFS_BUILD_DIR_OMPI", REPO / "build-ompi")).resolve()


def binary(name):
    p = BUILD / name
    if not p.exists():
        pytest.fail(f"{p} not built (set RFS_BUILD_DIR or run cmake --build build)")
    return str(p)


class Server:
    def __init__(self, root, token=None, extra=(), listen="127.0.0.1:0", preexec=None):
        self.root = Path(root)
        self.token = token
        args = [binary("rfsd"), "--root", str(self.root), "--listen", listen]
        if token is None:
            args.append("--no-auth")
        else:
            tf = self.root.parent / "token"
            tf.write_text(token)
            tf.chmod(0o600)
            args += ["--token-file", str(tf)]
        args += list(extra)
        # preexec: run in the child before exec (e.g. lower a resource limit for one test)
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=preexec)
        line = self.proc.stdout.readline()
        if not line.startswith("rfsd listening on "):
            self.proc.kill()
            raise RuntimeError(f"rfsd did not start: {line!r} {self.proc.stderr.read()}")
        self.addr = line.split()[-1]
        self.host, port = self.addr.rsplit(":", 1)
        self.port = int(port)

    def url(self, path):
        return f"rfs:{self.host}:{self.port}:{path}"

    def env(self):
        e = dict(os.environ)
        e.pop("RFS_TOKEN_FILE", None)
        e["RFS_CONFIG"] = ""  # a user's ~/.config/rfs/config must not change what tests run
        if self.token is not None:
            e["RFS_TOKEN"] = self.token
        else:
            e.pop("RFS_TOKEN", None)
        return e

    def freeze(self, timeout=20):
        """SIGSTOP, and return only once every thread has stopped. kill() returns before that: the
        group stop begins when one thread takes the signal, and until then the others keep serving."""
        self.proc.send_signal(signal.SIGSTOP)
        tasks = Path(f"/proc/{self.proc.pid}/task")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = []
            for t in tasks.iterdir():
                try:
                    # the state follows the ")" that closes the command name
                    states.append((t / "stat").read_text().rsplit(")", 1)[1].split()[0])
                except (FileNotFoundError, ProcessLookupError):
                    continue
            if states and all(s in "tT" for s in states):
                return
            time.sleep(0.01)  # polling a state, not timing: the loop ends when the kernel is done
        raise RuntimeError(f"rfsd did not stop within {timeout} s")

    def thaw(self):
        self.proc.send_signal(signal.SIGCONT)

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        return self.proc.returncode


def tree_contents(root):
    """{relative path: bytes} of every file under root, and {"dir/": None} for every
    directory (so an empty one counts too): two trees are equal when these are."""
    got = {}
    for d, dirs, fs in os.walk(root):
        for x in dirs:
            got[os.path.relpath(os.path.join(d, x), root) + "/"] = None
        for f in fs:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                got[os.path.relpath(p, root)] = fh.read()
    return got


@pytest.fixture(autouse=True)
def no_reconnect(monkeypatch):
    """End-to-end tests see a lost connection fail at once, as they were written to: several
    kill or freeze their server for good and check the error. Reconnecting (the default, for a
    minute) is tests/faults/test_reconnect.py's subject."""
    monkeypatch.setenv("RFS_RETRY_TIMEOUT_MS", "0")


@pytest.fixture
def rfsd(tmp_path):
    root = tmp_path / "export"
    root.mkdir()
    srv = Server(root, token=secrets.token_hex(16))
    yield srv
    srv.stop()


@pytest.fixture
def rfsd_factory(tmp_path):
    started = []

    def make(token="default", extra=(), root=None, preexec=None):
        r = Path(root) if root else tmp_path / f"export{len(started)}"
        r.mkdir(exist_ok=True)
        tok = secrets.token_hex(16) if token == "default" else token
        s = Server(r, token=tok, extra=extra, preexec=preexec)
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()
