# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""File versions in replies (docs/protocol.md "File versions"), black-box against rfsd with the
independent codec of rfswire.py: a request with flag RFS_F_VER (8) gets a reply with the same
flag whose body starts with the file's size and mtime (ns) as that request left it, compared
here with what the server's disk says; requests without the flag get the replies they always
got, and the flag on an op that has no version is refused without closing the connection."""
import os
import struct
import threading

from rfswire import (E, F_REPLY, HDR, O_CREAT, O_RDONLY, O_RDWR, OP, Conn, b_fh, b_iov,
                     b_open, b_path, b_pwrite, b_size, session)

F_VER = 8
FEAT_VER = 0x10
VER = struct.Struct("<Qq")


def call_raw(c, op, body, flags=0):
    """One request; the reply's (flags, status, body) as they came."""
    rid = c.send(op, body, flags=flags)
    h = HDR.unpack(c._exact(HDR.size))
    body = c._exact(h[7]) if h[7] else b""
    assert h[5] == rid and h[2] == OP[op]
    return h[3], h[6], body


def disk_version(path):
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def test_hello_offers_versions(rfsd):
    with Conn.to(rfsd) as raw:
        assert raw.hello()["features"] & FEAT_VER


def test_open_write_size_change_carry_the_version(rfsd):
    path = rfsd.root / "v.bin"
    path.write_bytes(b"a" * 1000)
    c = session(rfsd)
    flags, status, body = call_raw(c, "OPEN", b_open("/v.bin", O_RDWR), F_VER)
    assert (flags, status) == (F_REPLY | F_VER, 0)
    assert len(body) == 16 + 12
    assert VER.unpack_from(body) == disk_version(path)
    fh, size = struct.unpack_from("<IQ", body, 16)
    assert size == 1000

    flags, status, body = call_raw(c, "PWRITE", b_pwrite(fh, 5000, b"xyz" * 100), F_VER)
    assert (flags, status, len(body)) == (F_REPLY | F_VER, 0, 24)
    assert VER.unpack_from(body) == disk_version(path)
    assert VER.unpack_from(body)[0] == 5300
    assert struct.unpack_from("<Q", body, 16)[0] == 300
    assert path.read_bytes()[5000:5300] == b"xyz" * 100

    flags, status, body = call_raw(c, "PWRITEV", b_iov(fh, [(9000, 4), (10, 2)], b"WXYZkk"), F_VER)
    assert (flags, status) == (F_REPLY | F_VER, 0)
    assert VER.unpack_from(body) == disk_version(path) and VER.unpack_from(body)[0] == 9004

    flags, status, body = call_raw(c, "SET_SIZE", b_size(fh, 100), F_VER)
    assert (flags, status, len(body)) == (F_REPLY | F_VER, 0, 16)
    assert VER.unpack_from(body) == disk_version(path) and VER.unpack_from(body)[0] == 100

    # a large PWRITE is written piece by piece as it arrives: the version is the whole write's
    big = bytes(range(256)) * (12 * 1024)
    flags, status, body = call_raw(c, "PWRITE", b_pwrite(fh, 100, big), F_VER)
    assert (flags, status) == (F_REPLY | F_VER, 0)
    assert VER.unpack_from(body) == disk_version(path) == (100 + len(big), path.stat().st_mtime_ns)
    flags, status, body = call_raw(c, "SET_SIZE", b_size(fh, 100), F_VER)
    assert VER.unpack_from(body) == disk_version(path)

    # without the flag: the replies of before, no block
    flags, status, body = call_raw(c, "PWRITE", b_pwrite(fh, 0, b"q"))
    assert (flags, status, body) == (F_REPLY, 0, struct.pack("<Q", 1))
    flags, status, body = call_raw(c, "SET_SIZE", b_size(fh, 50))
    assert (flags, status, body) == (F_REPLY, 0, b"")
    assert path.read_bytes() == b"q" + b"a" * 9 + b"kk" + b"a" * 38


def test_flag_on_an_op_without_a_version_is_refused(rfsd):
    (rfsd.root / "s.bin").write_bytes(b"s")
    c = session(rfsd)
    for op, body in (("STAT", b_path("/s.bin")), ("GET_SIZE", b_fh(1))):
        flags, status, rbody = call_raw(c, op, body, F_VER)
        assert (flags, status) == (F_REPLY, E["PROTO"])
        assert b"version" in rbody
    # the connection still serves
    flags, status, body = call_raw(c, "OPEN", b_open("/s.bin", O_RDONLY))
    assert (flags, status) == (F_REPLY, 0)


def test_refused_write_leaves_the_file_and_says_so(rfsd):
    path = rfsd.root / "r.bin"
    path.write_bytes(b"r" * 10)
    before = disk_version(path)
    c = session(rfsd)
    fh = c.open("/r.bin", O_RDONLY)
    flags, status, body = call_raw(c, "PWRITE", b_pwrite(fh, 0, b"zz"), F_VER)
    assert status == E["ROFS"]
    # refused before anything was written: no version block (the file is as the client last
    # knew it), and the file is untouched
    assert flags == F_REPLY
    assert disk_version(path) == before and path.read_bytes() == b"r" * 10


def test_concurrent_writers_each_get_their_own_version(rfsd):
    """Two connections extend one file side by side. A version is the file after the write:
    its size is the end of the furthest write applied up to and including it (at least the
    write's own end, and the end of some write), later writes of one connection report later
    versions, and the newest is the file on disk."""
    path = rfsd.root / "c.bin"
    conns = [session(rfsd) for _ in range(2)]
    fhs = [c.open("/c.bin", O_RDWR | O_CREAT) for c in conns]
    n, piece = 200, 1000
    results = [[] for _ in conns]

    def writer(k):
        c, fh = conns[k], fhs[k]
        for i in range(n):
            off = (2 * i + k) * piece
            flags, status, body = call_raw(c, "PWRITE", b_pwrite(fh, off, bytes([k + 1]) * piece),
                                           F_VER)
            assert (flags, status) == (F_REPLY | F_VER, 0)
            results[k].append((off + piece,) + VER.unpack_from(body))

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(len(r) == n for r in results)
    every = results[0] + results[1]
    ends = {end for end, _, _ in every}
    assert all(size >= end and size in ends for end, size, _ in every)
    for r in results:
        assert [(s, m) for _, s, m in r] == sorted((s, m) for _, s, m in r)
    assert max((size, mtime) for _, size, mtime in every) == disk_version(path)
    assert path.stat().st_size == 2 * n * piece
