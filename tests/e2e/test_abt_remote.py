# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""ABT over the real client and server: bytes on the server's disk after buffered and staged
writes, and delivery of staged data by recovery after the server died mid-run."""
import subprocess

import pytest

from conftest import Server, binary


def pattern(size, seed):
    out = bytearray(size)
    for x in range(size):
        out[x] = (((x * 2654435761) & 0xFFFFFFFFFFFFFFFF) >> 13 ^ seed ^ (x >> 20)) & 0xFF
    return bytes(out)


def run_writer(srv, name, staging, cap, size, seed, wait=False, env=None, **kw):
    args = [binary("abt_remote"), "write", srv.url(name), str(staging), str(cap), str(size), str(seed)]
    if wait:
        args.append("--wait")
    return subprocess.Popen(args, env=env or srv.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def parse(out):
    first = [l for l in out.splitlines() if l.startswith("sync=")][0]
    return {k: int(v) for k, v in (p.split("=") for p in first.split())}


@pytest.mark.parametrize("cap", [64 << 20, 1], ids=["buffered", "all-staged"])
def test_bytes_on_server_match(rfsd, tmp_path, cap):
    staging = tmp_path / "staging"
    staging.mkdir()
    size = 3_000_000 + 17
    p = run_writer(rfsd, "/abt.bin", staging, cap, size, 7)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, out + err
    r = parse(out)
    assert r["sync"] == 0 and r["close"] == 0 and r["finalize"] == 0, out
    if cap == 1:
        assert r["staged_fg"] == size
    assert (rfsd.root / "abt.bin").read_bytes() == pattern(size, 7)
    assert list(staging.iterdir()) == []  # nothing left after a clean run


@pytest.mark.parametrize("versions", ["on", "off"])
def test_abt_open_round_trips(rfsd, tmp_path, versions):
    """An ABT open is one OPEN: its reply carries the file version the journal needs. Against
    a server without versions (RFS_FILE_VERSIONS=off makes the client act as with one) ABT
    asks with a STAT after the OPEN, a second round trip per file opened."""
    staging = tmp_path / "staging"
    staging.mkdir()
    (rfsd.root / "v.bin").write_bytes(b"x" * 1000)
    p = run_writer(rfsd, "/v.bin", staging, 64 << 20, 300_000, 4, wait=True,
                   env={**rfsd.env(), "RFS_TRACE": "1", "RFS_FILE_VERSIONS": versions})
    assert p.stdout.readline().strip() == "opened"
    out, err = p.communicate("go\n", timeout=120)
    assert p.returncode == 0 and parse(out)["finalize"] == 0, out + err
    sent = [l.split()[5] for l in err.splitlines() if " send " in l]
    opening = sent[:sent.index("PWRITE")]
    after_hello = ["AUTH", "SESSION", "OPEN"] + ([] if versions == "on" else ["STAT"])
    assert opening == ["HELLO"] + after_hello, err
    assert (rfsd.root / "v.bin").read_bytes() == pattern(300_000, 4)


def test_server_killed_then_recover(tmp_path):
    root = tmp_path / "export"
    root.mkdir()
    staging = tmp_path / "staging"
    staging.mkdir()
    srv = Server(root, token="s3cret-token-0123456789")
    size = 2_000_000
    # The server stays dead: with recovery off the failure comes at once (a server that comes
    # back within the retry timeout is tests/faults/test_reconnect.py).
    p = run_writer(srv, "/killed.bin", staging, 1, size, 3, wait=True,
                   env={**srv.env(), "RFS_RETRY_TIMEOUT_MS": "0"})
    assert p.stdout.readline().strip() == "opened"
    port = srv.port
    srv.stop(sig=9)
    out, err = p.communicate("go\n", timeout=120)
    assert p.returncode == 0, out + err
    r = parse(out)
    # The failure is reported at sync (once), and finalize says data is waiting for recovery.
    assert r["sync"] != 0, out
    assert r["finalize"] != 0, out
    assert "rfs recover" in out
    assert "killed.bin" in out
    journals = list(staging.iterdir())
    assert len(journals) == 1
    assert not (root / "killed.bin").exists() or (root / "killed.bin").stat().st_size < size

    # Restart on the same port so the names recorded in the journal resolve.
    srv2 = Server(root, token="s3cret-token-0123456789", listen=f"127.0.0.1:{port}")
    try:
        # A journal held by no process is what `rfs recover` replays.
        rec = subprocess.run([binary("rfs"), "recover", str(staging)], env=srv2.env(),
                             capture_output=True, text=True, timeout=120)
        assert rec.returncode == 0, rec.stdout + rec.stderr
        assert f"{size} bytes delivered" in rec.stdout
        assert (root / "killed.bin").read_bytes() == pattern(size, 3)
        assert list(staging.iterdir()) == []
        # Nothing left: a second recovery has nothing to do.
        again = subprocess.run([binary("rfs"), "recover", str(staging)], env=srv2.env(),
                               capture_output=True, text=True, timeout=60)
        assert again.returncode == 0 and "0 records, 0 bytes" in again.stdout
    finally:
        srv2.stop()


def test_recover_errors(tmp_path):
    missing = tmp_path / "nope"
    r = subprocess.run([binary("rfs"), "recover", str(missing)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 1
    assert "nope" in r.stderr and "no such file" in r.stderr.lower()
