# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Congestion control choice (RFS_TCP_CONGESTION for clients, rfsd --tcp-congestion) and what
`rfs ping` reports about the connection (docs/tuning.md). Every expectation is read back from the
kernel: the client's view through getsockopt, the server's through ss(8)."""
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import Server, binary
from test_cli import ok, rfs

SYSCTL = Path("/proc/sys/net/ipv4")


def sysctl(name):
    return (SYSCTL / name).read_text().strip()


def other_than_default():
    """An algorithm every kernel has that is not the system default, so the test can tell."""
    return "cubic" if sysctl("tcp_congestion_control") == "reno" else "reno"


def test_ping_reports_the_congestion_control_it_was_asked_for(rfsd):
    cc = other_than_default()
    env = dict(rfsd.env(), RFS_TCP_CONGESTION=cc)
    out = ok(rfs(rfsd, "ping", rfsd.url("/"), "--count", "1", env=env)).stdout
    ssai = {"1": "on", "0": "off"}.get(sysctl("tcp_slow_start_after_idle"), "unknown")
    assert f"tcp: congestion control {cc}, slow start after idle {ssai}," in out, out
    # reno and cubic are loss-based: with the sysctl on, a write after a pause restarts.
    advice = "starts again from the initial window" in out
    assert advice == (ssai != "off"), out


def test_unusable_congestion_control_warns_and_uses_the_default(rfsd):
    for bad, why in (("nosuchcc", '"nosuchcc" is not available on this kernel'),
                     ("bbr;rm", "bad TCP congestion control name")):
        env = dict(rfsd.env(), RFS_TCP_CONGESTION=bad)
        r = ok(rfs(rfsd, "ping", rfsd.url("/"), "--count", "2", env=env))
        warnings = [ln for ln in r.stderr.splitlines() if "RFS_TCP_CONGESTION" in ln]
        assert len(warnings) == 1, r.stderr  # once per process, not per connection
        assert why in warnings[0] and "using the system's default" in warnings[0], r.stderr
        default = sysctl("tcp_congestion_control")
        assert f"tcp: congestion control {default}," in r.stdout, r.stdout


def test_rfsd_refuses_to_start_with_an_unusable_congestion_control(tmp_path):
    root = tmp_path / "export"
    root.mkdir()
    for bad, why in (("nosuchcc", "is not available on this kernel"),
                     ("", "bad TCP congestion control name")):
        r = subprocess.run([binary("rfsd"), "--root", str(root), "--listen", "127.0.0.1:0",
                            "--no-auth", "--tcp-congestion", bad], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 2, r
        assert "listening" not in r.stdout
        assert r.stderr.startswith("rfsd: --tcp-congestion: ") and why in r.stderr, r.stderr


def test_rfsd_sets_its_congestion_control_on_client_connections(tmp_path):
    cc = other_than_default()
    root = tmp_path / "export"
    root.mkdir()
    srv = Server(root, extra=("--tcp-congestion", cc))
    try:
        with socket.create_connection((srv.host, srv.port), timeout=10):
            # Poll the kernel's socket table (bounded) until rfsd has accepted the connection.
            deadline = time.monotonic() + 20
            info = ""
            while time.monotonic() < deadline:
                r = subprocess.run(["ss", "-Htin", "state", "established",
                                    f"( sport = :{srv.port} )"], capture_output=True, text=True,
                                   timeout=10)
                info = r.stdout
                if f" {cc} " in info:  # ss -i: "\t reno wscale:..."
                    break
                time.sleep(0.01)
            else:
                pytest.fail(f"rfsd's end of the connection does not use {cc}: {info!r}")
    finally:
        assert srv.stop() == 0
