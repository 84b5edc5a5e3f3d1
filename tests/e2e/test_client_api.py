# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""The client library (librfs) against a real rfsd: drives tests/client/api_e2e.c and checks
the bytes the server wrote to its disk."""
import signal
import socket
import subprocess

import pytest

from conftest import binary

TIMEOUT = 240  # a hang is a failure, not a wait


def no_retry_env(srv):
    """The failure paths with recovery off (a lost connection fails at once); recovery itself
    is tested in tests/faults/test_reconnect.py."""
    return {**srv.env(), "RFS_RETRY_TIMEOUT_MS": "0"}


def run(srv, test, *args, timeout=TIMEOUT, env=None):
    p = subprocess.run([binary("client_api_e2e"), test, srv.url(""), *map(str, args)],
                       env=env or srv.env(), capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"{test}: rc={p.returncode}\n{p.stdout}\n{p.stderr}"
    assert p.stdout.strip().endswith("OK"), p.stdout
    return p.stdout


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("streams", [1, 4])
def test_open_flags(rfsd, streams):
    run(rfsd, "flags", streams)
    assert (rfsd.root / "f1").stat().st_size == 0          # truncated
    assert (rfsd.root / "f2").read_bytes() == b"abcdef"    # appended
    assert (rfsd.root / "f1").stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize("streams,max_frame,window", [(1, 0, 0), (4, 0, 0), (2, 65536, 3)])
def test_big_transfer_matches_disk(rfsd, tmp_path, streams, max_frame, window):
    ref = tmp_path / "ref.bin"
    size = 64 << 20 if max_frame == 0 else 8 << 20
    run(rfsd, "bigrw", ref, size, streams, max_frame, window)
    assert (rfsd.root / "big").read_bytes() == ref.read_bytes()


def test_auto_streams_keep_one_on_a_short_path(rfsd, tmp_path):
    """rfs_streams=auto (-1) on loopback: one connection, and the bytes are right."""
    ref = tmp_path / "ref.bin"
    env = {**rfsd.env(), "RFS_LOG_LEVEL": "debug"}
    p = subprocess.run([binary("client_api_e2e"), "bigrw", rfsd.url(""), str(ref), str(16 << 20),
                        "-1", "0", "0"], env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "streams auto: round trip" in p.stderr and "one stream" in p.stderr, p.stderr
    assert (rfsd.root / "big").read_bytes() == ref.read_bytes()


@pytest.mark.parametrize("max_frame", [0, 65536])
def test_auto_streams_probing_keeps_every_byte(rfsd, tmp_path, max_frame):
    """Probing forced on loopback ($RFS_STREAMS_AUTO_MIN_RTT_US=0): the file opens 8
    connections and its transfers start streams while they run (taking jobs from a shared
    counter); the bytes written and read back must be exact whatever the streams decided."""
    ref = tmp_path / "ref.bin"
    size = (192 << 20) if max_frame == 0 else (24 << 20)
    env = {**rfsd.env(), "RFS_LOG_LEVEL": "info", "RFS_STREAMS_AUTO_MIN_RTT_US": "0"}
    p = subprocess.run([binary("client_api_e2e"), "bigrw", rfsd.url(""), str(ref), str(size),
                        "-1", str(max_frame), "0"], env=env, capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "up to 8 streams" in p.stderr, p.stderr
    assert (rfsd.root / "big").read_bytes() == ref.read_bytes()


@pytest.mark.parametrize("max_frame", [0, 65536])
def test_list_io_matches_disk(rfsd, tmp_path, max_frame):
    ref = tmp_path / "ref.bin"
    run(rfsd, "listio", ref, max_frame)
    assert (rfsd.root / "list").read_bytes() == ref.read_bytes()


def test_eof_semantics(rfsd):
    run(rfsd, "eof")
    assert (rfsd.root / "eof").stat().st_size == 1000


def test_size_preallocate_sync(rfsd):
    run(rfsd, "size")
    assert (rfsd.root / "sz").stat().st_size == 10


def test_path_calls(rfsd):
    run(rfsd, "meta")
    d = rfsd.root / "d"
    assert d.is_dir()
    names = {p.name for p in d.iterdir()}
    assert "f0001" not in names and "renamed" not in names and "renamed2" not in names
    assert "f0000" in names and "f1499" in names and "sub" not in names


def test_errors(rfsd):
    refused = f"rfs:127.0.0.1:{free_port()}:/x"
    run(rfsd, "errors", refused, rfsd.root.parent / "token", env=no_retry_env(rfsd))


def test_threads_disjoint_ranges(rfsd, tmp_path):
    ref = tmp_path / "ref.bin"
    run(rfsd, "threads", ref)
    assert (rfsd.root / "threads").read_bytes() == ref.read_bytes()


def test_services_and_rfs_io(rfsd):
    run(rfsd, "services")
    data = (rfsd.root / "svc").read_bytes()
    assert data[10:13] == b"xyz" and len(data) == 13


@pytest.mark.parametrize("streams", [1, 3])
def test_views_pipelined_and_failing(rfsd, streams):
    run(rfsd, "views", streams)
    d = (rfsd.root / "views").read_bytes()
    # the good view's 16 bytes, at 100 + (0..3, 8..11) + 16k; nothing from the bad views
    assert len(d) == 128 and d[:100] == b"\0" * 100
    for k in range(2):
        t = 100 + 16 * k
        assert d[t:t + 4] == bytes(range(8 * k + 1, 8 * k + 5))
        assert d[t + 8:t + 12] == bytes(range(8 * k + 5, 8 * k + 9))
        assert d[t + 4:t + 8] == b"\0" * 4
    assert d[112:116] == b"\0" * 4  # the hole between the two tiles


@pytest.mark.parametrize("streams", [1, 3])
def test_server_killed_mid_transfer(rfsd, streams):
    p = subprocess.Popen([binary("client_api_e2e"), "kill", rfsd.url(""), str(streams)],
                         env=no_retry_env(rfsd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line.strip() == "STARTED", line + p.stderr.read()
        rfsd.stop(sig=signal.SIGKILL)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, out + err
    assert "ERR -13" in out and out.strip().endswith("OK"), out + err


def test_write_window_order_and_late_errors(rfsd, tmp_path):
    """rfs_options.write_window: 2000 small overlapping writes returned before their replies
    land in the order sent (a read right after sees the last ones, as does the server's
    disk); a windowed write's failure comes back from rfs_flush or rfs_close, once."""
    ref = tmp_path / "ref.bin"
    run(rfsd, "wwin", ref)
    assert (rfsd.root / "wwin").read_bytes() == ref.read_bytes()
