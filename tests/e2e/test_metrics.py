# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""rfsd --metrics-file: the Prometheus text file counts the traffic a test generated (requests
and errors by op, payload bytes, connections, the latency histogram), is replaced atomically,
and is written one last time at exit."""
import os
import re
import subprocess
import time

from conftest import Server, binary

LINE = re.compile(r'^([a-z_]+)(?:\{([a-z]+)="([^"]*)"\})? ([0-9.e+-]+)$')


def scrape(path):
    """{(name, label value or None): value}; checks every line is comment or sample."""
    out = {}
    for ln in path.read_text().splitlines():
        if ln.startswith("# HELP ") or ln.startswith("# TYPE "):
            continue
        m = LINE.match(ln)
        assert m, f"not Prometheus text format: {ln!r}"
        out[(m.group(1), m.group(3))] = float(m.group(4))
    return out


def wait_for(path, pred, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            m = scrape(path)
            if pred(m):
                return m
        time.sleep(0.1)
    raise AssertionError(f"metrics never satisfied the condition: {path.read_text() if path.exists() else 'no file'}")


def test_metrics_count_the_traffic(tmp_path):
    root = tmp_path / "export"
    root.mkdir()
    mfile = tmp_path / "rfsd.prom"
    before = None
    srv = Server(root, token="m" * 32, extra=["--metrics-file", str(mfile),
                                              "--metrics-interval-ms", "100"])
    try:
        env = srv.env()
        data = os.urandom((3 << 20) + 7)
        src = tmp_path / "src"
        src.write_bytes(data)
        rfs = binary("rfs")
        assert subprocess.run([rfs, "put", str(src), srv.url("/f")], env=env).returncode == 0
        assert subprocess.run([rfs, "get", srv.url("/f"), str(tmp_path / "back")], env=env).returncode == 0
        m = wait_for(mfile, lambda m: m.get(("rfsd_sent_bytes_total", None), 0) >= len(data))
        before = m.get(("rfsd_request_errors_total", "STAT"), 0)   # put looked for the target
        for _ in range(3):
            assert subprocess.run([rfs, "stat", srv.url("/missing")], env=env,
                                  capture_output=True).returncode == 1
        m = wait_for(mfile, lambda m: m.get(("rfsd_request_errors_total", "STAT")) == before + 3)
        assert m[("rfsd_requests_total", "STAT")] >= 3
        assert m[("rfsd_received_bytes_total", None)] >= len(data)
        assert m[("rfsd_sent_bytes_total", None)] >= len(data)
        assert m[("rfsd_requests_total", "PWRITE")] >= 1
        assert m[("rfsd_connections_accepted_total", None)] >= 5
        executed = sum(v for (n, _), v in m.items() if n == "rfsd_requests_total")
        assert m[("rfsd_request_duration_seconds_count", None)] == executed
        assert m[("rfsd_request_duration_seconds_bucket", "+Inf")] == executed
        le = {float("inf") if k == "+Inf" else float(k): v for (n, k), v in m.items()
              if n == "rfsd_request_duration_seconds_bucket"}
        buckets = [le[k] for k in sorted(le)]
        assert buckets == sorted(buckets)          # cumulative
        assert not (tmp_path / "rfsd.prom.tmp").exists()
    finally:
        srv.stop()
    # the last write happens at exit, after every connection ended
    final = scrape(mfile)
    assert final[("rfsd_connections", None)] == 0
    assert final[("rfsd_request_errors_total", "STAT")] == before + 3


def test_metrics_options_are_checked(tmp_path):
    r = subprocess.run([binary("rfsd"), "--root", str(tmp_path), "--no-auth",
                        "--metrics-interval-ms", "5"], capture_output=True, text=True)
    assert r.returncode == 2 and "--metrics-interval-ms" in r.stderr
