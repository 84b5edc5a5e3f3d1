# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""rfs put and rfs get pay only the round trips they need (docs/client.md "Opening several
streams"). With --streams auto on a long link (forced on loopback with
RFS_STREAMS_AUTO_MIN_RTT_US=0) the streams are decided from the first connection's TCP round
trip, so no PING is sent; a put of a new file sends no SET_SIZE (the OPEN reply said the
temporary file was empty); a get takes the size from the OPEN reply (no GET_SIZE). Against a
server that reports no sizes in its replies (RFS_FILE_VERSIONS=off makes the client act as
with one) both still ask. The bytes are compared every time; the requests are read from the
client's trace (RFS_TRACE=1)."""
import os
import subprocess
from collections import Counter

import pytest

from conftest import binary

SIZE = 5 * 1024 * 1024 + 12345


def run(rfsd, *args, versions=True):
    env = {**rfsd.env(), "RFS_TRACE": "1", "RFS_STREAMS_AUTO_MIN_RTT_US": "0"}
    if not versions:
        env["RFS_FILE_VERSIONS"] = "off"
    p = subprocess.run([binary("rfs"), *map(str, args)], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stderr


def sent(trace):
    """Requests sent, by op ("rfs trace TS SERVER send OP #ID LEN")."""
    ops = Counter()
    for line in trace.splitlines():
        f = line.split()
        if len(f) >= 6 and f[:2] == ["rfs", "trace"] and f[4] == "send":
            ops[f[5]] += 1
    return ops


@pytest.mark.parametrize("versions", [True, False], ids=["sizes-in-replies", "no-sizes"])
def test_put_new_file(rfsd, tmp_path, versions):
    src = tmp_path / "src.bin"
    data = os.urandom(SIZE)
    src.write_bytes(data)
    ops = sent(run(rfsd, "put", "--no-progress", src, rfsd.url("/put.bin"), versions=versions))
    assert (rfsd.root / "put.bin").read_bytes() == data
    assert ops["PING"] == 0, ops
    assert ops["OPEN"] == 4, ops  # the temporary file on each of the 4 streams
    assert ops["RENAME"] == 1 and ops["SYNC"] >= 1, ops
    assert ops["SET_SIZE"] == (0 if versions else 1), ops
    assert not [p for p in os.listdir(rfsd.root) if p != "put.bin"]  # no temporary left


def test_put_replaces_a_longer_file(rfsd, tmp_path):
    (rfsd.root / "long.bin").write_bytes(os.urandom(3 * SIZE))
    src = tmp_path / "src.bin"
    data = os.urandom(SIZE)
    src.write_bytes(data)
    run(rfsd, "put", "-f", "--no-progress", src, rfsd.url("/long.bin"))
    assert (rfsd.root / "long.bin").read_bytes() == data


@pytest.mark.parametrize("versions", [True, False], ids=["sizes-in-replies", "no-sizes"])
def test_get(rfsd, tmp_path, versions):
    data = os.urandom(SIZE)
    (rfsd.root / "get.bin").write_bytes(data)
    dst = tmp_path / "got.bin"
    ops = sent(run(rfsd, "get", "--no-progress", rfsd.url("/get.bin"), dst, versions=versions))
    assert dst.read_bytes() == data
    assert ops["PING"] == 0, ops
    assert ops["OPEN"] == 4, ops  # opened once, on the 4 streams
    assert ops["GET_SIZE"] == (0 if versions else 1), ops


def test_get_empty_file(rfsd, tmp_path):
    (rfsd.root / "empty.bin").write_bytes(b"")
    dst = tmp_path / "empty.bin"
    run(rfsd, "get", "--no-progress", rfsd.url("/empty.bin"), dst)
    assert dst.read_bytes() == b""


def test_cp_put_asks_once_whether_the_destination_is_a_directory(rfsd, tmp_path):
    """rfs cp FILE URL: cp's own STAT of the destination (a directory? then the file goes
    inside) is the only one; the put it hands the file to does not ask again. Into a
    directory, the file still lands inside it."""
    src = tmp_path / "src.bin"
    data = os.urandom(SIZE)
    src.write_bytes(data)
    ops = sent(run(rfsd, "cp", "--no-progress", src, rfsd.url("/cp.bin")))
    assert (rfsd.root / "cp.bin").read_bytes() == data
    assert ops["STAT"] == 1, ops
    (rfsd.root / "dir").mkdir()
    run(rfsd, "cp", "--no-progress", src, rfsd.url("/dir"))
    assert (rfsd.root / "dir" / "src.bin").read_bytes() == data
