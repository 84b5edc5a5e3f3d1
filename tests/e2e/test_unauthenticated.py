# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Connections that never authenticate: a legitimate client is served while 1000 idle ones are
held open (from several addresses, as the per-address limit would stop one), the connection
table full of them makes room for real clients by closing the oldest, and the handshake
timeout closes them by itself."""
import os
import resource
import socket
import subprocess
import time

import pytest

from conftest import Server, binary

SOURCES = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"]


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < n:
        pytest.skip(f"needs {n} descriptors, hard limit {hard}")
    if soft == resource.RLIM_INFINITY or soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, hard))


def idle(srv, count):
    socks = []
    for i in range(count):
        s = socket.socket()
        s.bind((SOURCES[i % len(SOURCES)], 0))
        s.settimeout(10)
        s.connect((srv.host, srv.port))
        socks.append(s)
    return socks


def served(srv, tmp_path, name):
    """A put and a get by a real client, each within 15 s."""
    src = tmp_path / f"{name}.src"
    src.write_bytes(os.urandom(1 << 20))
    t0 = time.monotonic()
    r = subprocess.run([binary("rfs"), "put", str(src), srv.url(f"/{name}")], env=srv.env(),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([binary("rfs"), "get", srv.url(f"/{name}"), str(tmp_path / f"{name}.back")],
                       env=srv.env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / f"{name}.back").read_bytes() == src.read_bytes()
    return time.monotonic() - t0


@pytest.mark.nosan  # 2000 server threads under the sanitizers take minutes, not the point there
def test_thousand_idle_unauthenticated_connections(tmp_path):
    raise_nofile(4096)
    root = tmp_path / "export"
    root.mkdir()
    srv = Server(root, token="u" * 32, extra=["--handshake-timeout-ms", "600000"])
    socks = []
    try:
        socks = idle(srv, 1000)
        assert served(srv, tmp_path, "a") < 15
        # Past the connection table's 1024: the oldest idle ones make room, real clients
        # still get in (each served call needs a few connections of its own).
        socks += idle(srv, 40)
        assert served(srv, tmp_path, "b") < 15
        closed = 0
        for s in socks[:100]:
            s.settimeout(0.2)
            try:
                if s.recv(1) == b"":
                    closed += 1
            except (ConnectionResetError, socket.timeout, OSError):
                pass
        assert closed >= 1, "no idle connection was closed to make room"
    finally:
        for s in socks:
            s.close()
        srv.stop()


def test_handshake_timeout_closes_silent_peers(tmp_path):
    root = tmp_path / "export"
    root.mkdir()
    srv = Server(root, token="h" * 32, extra=["--handshake-timeout-ms", "500"])
    try:
        s = socket.create_connection((srv.host, srv.port), timeout=10)
        t0 = time.monotonic()
        s.sendall(b"R")                       # a byte now and then does not extend it
        time.sleep(0.3)
        s.sendall(b"F")
        assert s.recv(1) == b""               # closed by the server
        assert time.monotonic() - t0 < 5
        s.close()
        assert served(srv, tmp_path, "c") < 15   # authenticated clients are not affected
    finally:
        srv.stop()
