# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""The rfs command's copies dial every connection a long path would get at once, beside the
first (docs/client.md "Opening several streams"). On a short path the speculative ones close
after their TCP connect, before any HELLO; on a long one (forced on loopback with
RFS_STREAMS_AUTO_MIN_RTT_US=0) they all go on. The server's metrics count what it accepted and
what is still open, the client's trace what was said; the bytes are compared every time."""
import os
import re
import subprocess
import time

import pytest

from conftest import Server, binary, tree_contents


def metrics(path):
    """(connections open, connections accepted) from one snapshot of the metrics file."""
    text = path.read_text() if path.exists() else ""
    vals = [re.search(rf"^{n} ([0-9.e+]+)$", text, re.M)
            for n in ("rfsd_connections", "rfsd_connections_accepted_total")]
    return tuple(float(m.group(1)) for m in vals) if all(vals) else None


def settled(path, accepted_at_least, timeout=20):
    """The first snapshot with no connection open and at least that many accepted (the server
    may accept a connection its client already closed, a little after the client exited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = metrics(path)
        if m and m[0] == 0 and m[1] >= accepted_at_least:
            return m[1]
        time.sleep(0.05)
    raise AssertionError(f"rfsd never settled with {accepted_at_least} accepted: "
                         f"{path.read_text() if path.exists() else 'no metrics file'}")


@pytest.fixture
def srv(tmp_path):
    root = tmp_path / "export"
    root.mkdir()
    mfile = tmp_path / "rfsd.prom"
    s = Server(root, token="s" * 32, extra=["--metrics-file", str(mfile),
                                            "--metrics-interval-ms", "100"])
    s.mfile = mfile
    yield s
    s.stop()


def make_tree(src, n=60):
    for i in range(n):
        p = src / f"d{i % 3}" / f"f{i}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(os.urandom(100 + i * 97))


def copy(srv, *args, long_path, dialled):
    """Runs the copy; returns the HELLOs it sent and the connections the server accepted."""
    env = {**srv.env(), "RFS_TRACE": "1"}
    if long_path:
        env["RFS_STREAMS_AUTO_MIN_RTT_US"] = "0"
    before = settled(srv.mfile, 0)
    p = subprocess.run([binary("rfs"), *map(str, args)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    hellos = sum(1 for ln in p.stderr.splitlines() if " send HELLO " in ln)
    # the command has exited: nothing it dialled may stay open on the server
    return hellos, settled(srv.mfile, before + dialled) - before


@pytest.mark.parametrize("long_path", [False, True], ids=["short-path", "long-path"])
def test_tree_copies_dial_eight_at_once(srv, tmp_path, long_path):
    src = tmp_path / "src"
    make_tree(src)
    hellos, accepted = copy(srv, "cp", "-r", "--quiet", src, srv.url("/up"), long_path=long_path,
                            dialled=8)
    assert tree_contents(srv.root / "up") == tree_contents(src)
    # every stream a long path gets was dialled, but only the wanted ones spoke (the name check
    # may take a connection of its own before the pool has one: hellos counts it)
    assert accepted - hellos == (0 if long_path else 7), (accepted, hellos)
    assert hellos >= (8 if long_path else 1)
    back = tmp_path / "back"
    hellos, accepted = copy(srv, "cp", "-r", "--quiet", srv.url("/up"), back, long_path=long_path,
                            dialled=8)
    assert tree_contents(back) == tree_contents(src)
    assert accepted - hellos == (0 if long_path else 7), (accepted, hellos)
    assert hellos >= (8 if long_path else 1)


@pytest.mark.parametrize("long_path", [False, True], ids=["short-path", "long-path"])
def test_file_copies_dial_four_at_once(srv, tmp_path, long_path):
    src = tmp_path / "src.bin"
    data = os.urandom((3 << 20) + 11)
    src.write_bytes(data)
    hellos, accepted = copy(srv, "cp", "--quiet", src, srv.url("/f.bin"), long_path=long_path,
                            dialled=4)
    assert (srv.root / "f.bin").read_bytes() == data
    assert accepted - hellos == (0 if long_path else 3), (accepted, hellos)
    assert hellos >= (4 if long_path else 1)


def test_explicit_streams_dial_no_more(srv, tmp_path):
    """--streams N decides nothing, so nothing is dialled speculatively."""
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(1 << 20))
    hellos, accepted = copy(srv, "cp", "--quiet", "--streams", "2", src, srv.url("/g.bin"),
                            long_path=False, dialled=1)
    assert accepted == hellos, (accepted, hellos)
