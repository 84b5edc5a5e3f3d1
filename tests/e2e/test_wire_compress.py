# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Compressed write payloads (docs/protocol.md, "Compressed payloads"; docs/hints.md
rfs_compress): the server's file holds the original bytes for every codec, stream count and
MPI-IO access kind; hostile compressed frames (bombs, corrupt streams, lies about sizes) get a
clear error, leave the file untouched and the connection serving; clients that never compress
are served as before."""
import ctypes
import os
import re
import struct
import subprocess
import sys

import pytest

from conftest import BUILD, REPO, binary
from mpiio_util import FLAVOURS, run_both
from rfswire import (E, F_SUM, HDR, O_CREAT, O_RDWR, OP, Conn, b_pread, b_pwrite, crc32c,
                     header)

sys.path.insert(0, str(REPO / "python"))
os.environ.setdefault("RFS_LIBRARY", str(BUILD / "librfs.so"))

F_PACK = 4
FEAT_LZ4, FEAT_ZSTD = 4, 8
FEAT_SHUFFLE = 0x200
LZ4, ZSTD = 1, 2
LZ4_SHUF, ZSTD_SHUF = 3, 4
TIMEOUT = 120

_lz4 = ctypes.CDLL("liblz4.so.1")
_zstd = ctypes.CDLL("libzstd.so.1")
_zstd.ZSTD_compress.restype = ctypes.c_size_t
_zstd.ZSTD_compress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                ctypes.c_size_t, ctypes.c_int]
_zstd.ZSTD_compressBound.restype = ctypes.c_size_t
_zstd.ZSTD_compressBound.argtypes = [ctypes.c_size_t]


def lz4(data):
    cap = len(data) + len(data) // 255 + 64
    out = ctypes.create_string_buffer(cap)
    n = _lz4.LZ4_compress_default(data, out, len(data), cap)
    assert n > 0
    return out.raw[:n]


def zstd(data, level=1):
    cap = _zstd.ZSTD_compressBound(len(data))
    out = ctypes.create_string_buffer(cap)
    n = _zstd.ZSTD_compress(out, cap, data, len(data), level)
    assert n < cap
    return out.raw[:n]


def shuffle(data):
    """The byte planes of 8-byte elements (common/shuffle.h); the tail stays."""
    m = len(data) // 8
    return b"".join(data[b:8 * m:8] for b in range(8)) + data[8 * m:]


def unshuffle(data):
    m = len(data) // 8
    out = bytearray(len(data))
    for b in range(8):
        out[b:8 * m:8] = data[b * m:(b + 1) * m]
    out[8 * m:] = data[8 * m:]
    return bytes(out)


def pack_with(codec, data):
    """data compressed as codec (ids 1-4) says."""
    if codec in (LZ4_SHUF, ZSTD_SHUF):
        data = shuffle(data)
    return (lz4 if codec in (LZ4, LZ4_SHUF) else zstd)(data)


def packed_body(fields, codec, raw_len, packed):
    return struct.pack("<BxxxII", codec, len(fields), raw_len) + fields + packed


def smooth(n):
    """Doubles like a Jacobi field a few sweeps after a boundary was set: mostly zeros."""
    vals = [0.0] * (n // 8)
    for i in range(0, len(vals), 997):
        vals[i] = 1.0 / (1 + i % 13)
    return struct.pack(f"<{len(vals)}d", *vals)


# ---- raw protocol: the server's side ----

@pytest.fixture
def conn(rfsd):
    (rfsd.root / "f").write_bytes(b"A" * 65536)
    c = Conn.to(rfsd)
    h = c.handshake(rfsd.token)
    assert h["features"] & FEAT_LZ4 and h["features"] & FEAT_ZSTD and h["features"] & FEAT_SHUFFLE
    fh = c.open("/f", O_RDWR)
    yield c, fh
    c.close()


def send_packed(c, op, body, sums=False):
    rid = c.next_id
    c.next_id += 1
    if sums:
        h = header(OP[op], rid, len(body) + 4, flags=F_PACK | F_SUM)
        c.send_raw(h + struct.pack("<I", crc32c(body, crc32c(h))) + body)
        c.sums = True     # from now on rfsd seals its replies on this connection
    else:
        c.send_raw(header(OP[op], rid, len(body), flags=F_PACK) + body)
    rep = c.recv()
    assert rep.req_id == rid
    return rep


@pytest.mark.parametrize("codec", [LZ4, ZSTD, LZ4_SHUF, ZSTD_SHUF])
def test_packed_writes_land_as_original_bytes(rfsd, conn, codec):
    c, fh = conn
    data = smooth(60000) + b"tail"
    comp = pack_with(codec, data)
    assert len(comp) < len(data) // 4
    fields = struct.pack("<IQ", fh, 100)
    rep = send_packed(c, "PWRITE", packed_body(fields, codec, len(data), comp))
    assert rep.u64() == len(data)
    # and a WRITE_FILE, checksummed as the C client sends it
    path = b"/whole"
    wf = struct.pack("<IIH", 0, 0o644, len(path)) + path
    rep = send_packed(c, "WRITE_FILE", packed_body(wf, codec, len(data), comp), sums=True)
    assert rep.status == 0
    disk = (rfsd.root / "f").read_bytes()
    assert disk[:100] == b"A" * 100 and disk[100:100 + len(data)] == data
    assert (rfsd.root / "whole").read_bytes() == data


def hostile_cases(fh):
    fields = struct.pack("<IQ", fh, 0)
    zeros = bytes(1 << 20)
    yield "declared over the frame limit", \
        packed_body(fields, ZSTD, 64 << 20, zstd(bytes(4096))), E["TOOBIG"], "frame limit"
    yield "bomb: stream bigger than declared", \
        packed_body(fields, ZSTD, 4096, zstd(zeros)), E["PROTO"], "zstd"
    yield "lz4 bomb: stream bigger than declared", \
        packed_body(fields, LZ4, 4096, lz4(zeros)), E["PROTO"], "lz4"
    yield "stream shorter than declared", \
        packed_body(fields, LZ4, 8192, lz4(bytes(4096))), E["PROTO"], "lz4"
    yield "lz4 garbage", packed_body(fields, LZ4, 4096, os.urandom(300)), E["PROTO"], "lz4"
    yield "zstd garbage", packed_body(fields, ZSTD, 4096, os.urandom(300)), E["PROTO"], "zstd"
    yield "zstd truncated", packed_body(fields, ZSTD, 1 << 20, zstd(os.urandom(1 << 20))[:-50]), \
        E["PROTO"], "zstd"
    yield "unknown codec", packed_body(fields, 9, 4096, b"x" * 100), E["INVAL"], "codec"
    yield "codec 5 (after the shuffled ones)", packed_body(fields, 5, 4096, b"x" * 100), \
        E["INVAL"], "codec"
    yield "shuffled zstd bomb: more than declared", \
        packed_body(fields, ZSTD_SHUF, 4096, zstd(bytes(64 << 10))), E["PROTO"], "zstd"
    yield "shuffled lz4 garbage", packed_body(fields, LZ4_SHUF, 4096, os.urandom(300)), \
        E["PROTO"], "lz4"
    yield "fields past the body", \
        struct.pack("<BxxxII", LZ4, 5000, 10) + fields, E["PROTO"], "field bytes"
    yield "reserved bytes", \
        struct.pack("<BBxxII", LZ4, 1, len(fields), 4096) + fields + lz4(bytes(4096)), \
        E["PROTO"], "reserved"
    yield "payload missing", packed_body(fields, LZ4, 4096, b""), E["PROTO"], "none sent"
    yield "short pack header", b"\x01\x00", E["PROTO"], "too short"


def test_hostile_packed_frames_are_refused(rfsd, conn):
    c, fh = conn
    for name, body, status, words in hostile_cases(fh):
        rep = send_packed(c, "PWRITE", body)
        assert rep.status == status, name
        assert words in rep.error().msg, (name, rep.error().msg)
        assert (rfsd.root / "f").read_bytes() == b"A" * 65536, name
    # a packed read request is not a thing
    rep = send_packed(c, "PREAD", b_pread(fh, 0, 16))
    assert rep.status == E["PROTO"]
    # still serving, and rfsd still alive for the next client
    assert c.pwrite(fh, 0, b"ok") == 2
    with Conn.to(rfsd) as c2:
        c2.handshake(rfsd.token)
        assert c2.pread(c2.open("/f", O_RDWR), 0, 2) == b"ok"


def test_old_client_without_compression(rfsd):
    """No F_PACK ever: plain frames as before (the raw client is an older client)."""
    with Conn.to(rfsd) as c:
        c.handshake(rfsd.token)
        fh = c.open("/o", O_RDWR | O_CREAT)
        data = smooth(200000)
        assert c.pwrite(fh, 0, data) == len(data)
    assert (rfsd.root / "o").read_bytes() == data


# ---- the C client ----

def put(rfsd, src, dst, mode, streams=1, trace=False, stats=False):
    env = {**rfsd.env(), **({"RFS_TRACE": "1"} if trace else {}),
           **({"RFS_STATS": "1"} if stats else {})}
    p = subprocess.run([binary("rfs"), "put", "-f", "--no-progress", "--compress", mode,
                        "--streams", str(streams), str(src), rfsd.url(dst)], env=env,
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr
    return p.stderr


def sent_pwrite_bytes(trace):
    return sum(int(line.split()[-1]) for line in trace.splitlines()
               if " send PWRITE " in line)


@pytest.mark.parametrize("streams", [1, 3])
@pytest.mark.parametrize("mode", ["none", "lz4", "zstd", "zstd:5", "lz4+shuffle",
                                  "zstd:3+shuffle", "auto"])
def test_put_byte_identical(rfsd, tmp_path, mode, streams):
    data = smooth(9 << 20) + os.urandom(3 << 20) + b"end"
    src = tmp_path / "src"
    src.write_bytes(data)
    trace = put(rfsd, src, "/p", mode, streams, trace=True)
    assert (rfsd.root / "p").read_bytes() == data
    wire = sent_pwrite_bytes(trace)
    if mode not in ("none", "auto"):
        assert wire < len(data) * 0.5, wire       # the smooth part went compressed
    if mode == "none":
        assert wire >= len(data)


@pytest.mark.parametrize("mode", ["zstd", "none"])
def test_stats_report_what_compression_did(rfsd, tmp_path, mode):
    data = smooth(8 << 20)
    src = tmp_path / "src"
    src.write_bytes(data)
    err = put(rfsd, src, "/st", mode, 1, trace=True, stats=True)
    assert (rfsd.root / "st").read_bytes() == data
    lines = [x for x in err.splitlines() if "compression:" in x]
    if mode == "none":
        assert not lines, err       # nothing packed, nothing reported
        return
    assert len(lines) == 1, err
    m = re.search(r"compression: (\d+) frames packed \((\d+) -> (\d+) bytes, ([0-9.]+)x\), "
                  r"(\d+) raw", lines[0])
    assert m, lines[0]
    packed, raw_bytes, wire_bytes, raw_frames = (int(m.group(i)) for i in (1, 2, 3, 5))
    assert packed >= 2 and raw_bytes == len(data) and raw_frames == 0, lines[0]
    # the wire bytes it reports are the payload bytes the trace saw leave (less the headers)
    assert wire_bytes <= sent_pwrite_bytes(err) and wire_bytes < len(data) // 2, lines[0]


def test_cli_rejects_a_bad_mode(rfsd, tmp_path):
    src = tmp_path / "s"
    src.write_bytes(b"x")
    for bad in ("zstd:99", "lz4+shufle", "auto+shuffle"):
        p = subprocess.run([binary("rfs"), "put", "--compress", bad, str(src), rfsd.url("/x")],
                           env=rfsd.env(), capture_output=True, text=True, timeout=TIMEOUT)
        assert p.returncode == 2 and "--compress" in p.stderr, (bad, p.stderr)
    p = subprocess.run([binary("rfs"), "put", str(src), rfsd.url("/x")],
                       env={**rfsd.env(), "RFS_COMPRESS": "gzip"}, capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert p.returncode == 1 and "RFS_COMPRESS" in p.stderr


@pytest.mark.nosan  # the Python package loads librfs.so into an uninstrumented interpreter
def test_python_writes_and_small_files(rfsd, tmp_path):
    rfs = pytest.importorskip("rfs")
    data = smooth(5 << 20)
    for mode in ("lz4", "zstd:3"):
        with rfs.RemoteFile(f"rfs://{rfsd.host}:{rfsd.port}/py-{mode}", "wb",
                            token=rfsd.token, compress=mode, streams=2) as f:
            f.pwrite(data, 0)
            f.pwrite(b"B" * 5000, 77)       # a small write in the middle
        assert (rfsd.root / f"py-{mode}").read_bytes() == data[:77] + b"B" * 5000 + data[5077:]
    # many small files in one batch (WRITE_FILE) via rfs cp -r
    d = tmp_path / "tree"
    d.mkdir()
    files = {f"f{i}": smooth(20000 + i * 1000) for i in range(20)}
    for k, v in files.items():
        (d / k).write_bytes(v)
    p = subprocess.run([binary("rfs"), "cp", "-r", "--compress", "lz4", str(d), rfsd.url("/tree")],
                       env=rfsd.env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr
    for k, v in files.items():
        assert (rfsd.root / "tree" / k).read_bytes() == v


# ---- MPI-IO: every access kind, codec and stream count ----

KINDS = [
    ("t_basic", ""),                                   # independent, explicit offsets
    ("t_view", "rfs_view=server;"),                    # views mapped by the server
    ("t_view", "rfs_view=client;"),                    # views mapped here: list I/O
    ("t_coll", "romio_cb_write=enable;cb_buffer_size=4096;"),   # two-phase collective
    ("t_nonblock", ""),                                # nonblocking
    ("t_barrier", "rfs_abt=enable;"),                  # ABT delivery
    ("t_barrier", "rfs_abt=disable;rfs_write_window=16M;"),     # the write window
]


@pytest.mark.mpi
@pytest.mark.parametrize("streams", [1, 2])
@pytest.mark.parametrize("codec", ["lz4", "zstd:3", "zstd+shuffle", "auto"])
@pytest.mark.parametrize("kind", KINDS, ids=[k[0] + "[" + k[1] + "]" for k in KINDS])
def test_mpiio_same_bytes(rfsd, tmp_path, kind, codec, streams):
    name, hints = kind
    flavour = list(FLAVOURS)[0]
    env = {"RFS_HINTS": f"{hints}rfs_compress={codec};rfs_streams={streams}"}
    local, remote = run_both(rfsd, tmp_path, flavour, name, 2, name, (), env)
    assert local is not None and remote is not None
    assert remote == local
