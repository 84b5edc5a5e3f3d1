# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Compressed read replies (docs/protocol.md "Compressed payloads"; rfsd --compress-reads): a
read whose request says it takes a compressed reply (flag ZOK) may come back packed. The bytes
the client gets are the file's for every codec, checksums on and off, the CLI and every MPI-IO
read kind; a client that does not compress never gets a packed reply; a hostile server's packed
replies (bigger than the read, corrupt, unasked for) get a clear error and never land in the
caller's buffer beyond what it asked."""
import ctypes
import os
import socket
import struct
import subprocess
import threading

import pytest

from conftest import binary
from mpiio_util import FLAVOURS, run_both
from rfswire import E, F_REPLY, HDR, MAGIC, OP, O_RDONLY, Conn, b_pread, b_path, frame
from test_wire_compress import (F_PACK, FEAT_SHUFFLE, LZ4, LZ4_SHUF, ZSTD, ZSTD_SHUF, lz4,
                                smooth, unshuffle, zstd)

F_ZOK = 0x20
F_ZSHUF = 0x40
FEAT_ZREAD = 0x100
TIMEOUT = 120

_lz4 = ctypes.CDLL("liblz4.so.1")
_zstd = ctypes.CDLL("libzstd.so.1")
_zstd.ZSTD_decompress.restype = ctypes.c_size_t
_zstd.ZSTD_decompress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                  ctypes.c_size_t]


def unpack(codec, packed, raw_len):
    if codec in (LZ4_SHUF, ZSTD_SHUF):
        return unshuffle(unpack(codec - 2, packed, raw_len))
    out = ctypes.create_string_buffer(raw_len)
    if codec == LZ4:
        n = _lz4.LZ4_decompress_safe(packed, out, len(packed), raw_len)
    else:
        n = _zstd.ZSTD_decompress(out, raw_len, packed, len(packed))
    assert n == raw_len, (codec, n, raw_len)
    return out.raw


def rfs(srv, *args, env=None):
    e = {**srv.env(), "RFS_STATS": "1", **(env or {})}
    return subprocess.run([binary("rfs"), *map(str, args)], env=e, capture_output=True,
                          timeout=TIMEOUT)


# ---- on the wire: what rfsd sends ----

@pytest.mark.parametrize("codec,name", [(LZ4, "lz4"), (ZSTD, "zstd")])
def test_pread_with_zok_comes_back_packed(rfsd_factory, codec, name):
    srv = rfsd_factory(extra=["--compress-reads", name])
    data = smooth(1 << 20)
    (srv.root / "f").write_bytes(data)
    with Conn.to(srv) as c:
        h = c.handshake(srv.token)
        assert h["features"] & FEAT_ZREAD, hex(h["features"])
        fh = c.open("/f", O_RDONLY)
        rep = c.call("PREAD", b_pread(fh, 4096, 200000), flags=F_ZOK)
        assert rep.status == 0, rep.status
        assert rep.flags_seen & F_PACK, hex(rep.flags_seen)
        got_codec, flen, raw_len = struct.unpack_from("<BxxxII", rep.body)
        assert got_codec == codec and flen == 0 and raw_len == 200000
        packed = rep.body[12:]
        assert len(packed) < raw_len // 4
        assert unpack(codec, packed, raw_len) == data[4096:4096 + 200000]
        # without the flag the same read is raw
        rep = c.call("PREAD", b_pread(fh, 4096, 200000))
        assert not rep.flags_seen & F_PACK and rep.body == data[4096:4096 + 200000]
        # the flag on a request whose reply is not a file's bytes is a protocol error
        rep = c.call("STAT", b_path("/f"), flags=F_ZOK)
        assert rep.status == E["PROTO"], rep.status


@pytest.mark.parametrize("codec,name", [(LZ4_SHUF, "lz4+shuffle"), (ZSTD_SHUF, "zstd+shuffle")])
def test_shuffled_replies_only_to_who_takes_them(rfsd_factory, codec, name):
    srv = rfsd_factory(extra=["--compress-reads", name])
    data = smooth(1 << 20)
    (srv.root / "f").write_bytes(data)
    want = data[4096:4096 + 200003]
    with Conn.to(srv) as c:
        h = c.handshake(srv.token)
        assert h["features"] & FEAT_SHUFFLE, hex(h["features"])
        fh = c.open("/f", O_RDONLY)
        rep = c.call("PREAD", b_pread(fh, 4096, len(want)), flags=F_ZOK | F_ZSHUF)
        assert rep.status == 0 and rep.flags_seen & F_PACK, (rep.status, hex(rep.flags_seen))
        got_codec, flen, raw_len = struct.unpack_from("<BxxxII", rep.body)
        assert got_codec == codec and raw_len == len(want)
        assert unpack(codec, rep.body[12:], raw_len) == want
        # a client that does not take the shuffle (an older one) gets the plain codec
        rep = c.call("PREAD", b_pread(fh, 4096, len(want)), flags=F_ZOK)
        got_codec, flen, raw_len = struct.unpack_from("<BxxxII", rep.body)
        assert got_codec == codec - 2
        assert unpack(got_codec, rep.body[12:], raw_len) == want
        # the shuffle offered without compression is a protocol error
        rep = c.call("PREAD", b_pread(fh, 0, 4096), flags=F_ZSHUF)
        assert rep.status == E["PROTO"], rep.status


def test_off_on_the_server_is_never_offered(rfsd_factory):
    srv = rfsd_factory(extra=["--compress-reads", "none"])
    (srv.root / "f").write_bytes(smooth(1 << 20))
    with Conn.to(srv) as c:
        assert not c.handshake(srv.token)["features"] & FEAT_ZREAD
        fh = c.open("/f", O_RDONLY)
        rep = c.call("PREAD", b_pread(fh, 0, 100000), flags=F_ZOK)
        assert rep.status == 0 and not rep.flags_seen & F_PACK and len(rep.body) == 100000


def test_bad_mode_is_refused_at_start(tmp_path):
    r = subprocess.run([binary("rfsd"), "--root", str(tmp_path), "--no-auth",
                        "--compress-reads", "brotli"], capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert r.returncode != 0 and "--compress-reads" in r.stderr, r.stderr


# ---- the C library and the CLI ----

@pytest.mark.parametrize("sums", ["on", "off"])
@pytest.mark.parametrize("mode", ["lz4", "zstd", "zstd:6", "lz4+shuffle", "auto"])
def test_get_byte_identical(rfsd_factory, tmp_path, mode, sums):
    srv = rfsd_factory(extra=["--compress-reads", mode])
    if mode == "auto":
        data = os.urandom(24 << 20) + os.urandom(4097)  # incompressible: auto stays raw
    else:
        data = smooth(24 << 20) + bytes(range(256)) * 4097  # ends unaligned
    (srv.root / "s.bin").write_bytes(data)
    env = {"RFS_CHECKSUM": sums}
    out = tmp_path / "back.bin"
    r = rfs(srv, "get", srv.url("/s.bin"), out, env=env)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == data
    err = r.stderr.decode()
    if mode == "auto":
        assert "compressed read replies" not in err, err
    else:
        assert "compressed read replies" in err, err
    # a client that does not compress asks for no compressed replies and gets none
    r = rfs(srv, "get", "-f", srv.url("/s.bin"), out, env={**env, "RFS_COMPRESS": "none"})
    assert r.returncode == 0 and out.read_bytes() == data, r.stderr
    assert "compressed read replies" not in r.stderr.decode()


def test_cat_and_random_reads(rfsd_factory, tmp_path):
    srv = rfsd_factory(extra=["--compress-reads", "zstd"])
    data = smooth(3 << 20)
    (srv.root / "c.bin").write_bytes(data)
    r = rfs(srv, "cat", srv.url("/c.bin"))
    assert r.returncode == 0 and r.stdout == data, r.stderr


# ---- MPI-IO: every read kind through compressed replies ----

KINDS = [
    ("t_basic", ""),
    ("t_view", "rfs_view=server;"),     # VIEW_READ
    ("t_view", "rfs_view=client;"),     # list I/O
    ("t_coll", "romio_cb_read=enable;cb_buffer_size=4096;"),
    ("t_nonblock", ""),
]


@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["lz4", "zstd", "zstd+shuffle"])
@pytest.mark.parametrize("kind", KINDS, ids=[k[0] + "[" + k[1] + "]" for k in KINDS])
def test_mpiio_reads_through_compressed_replies(rfsd_factory, tmp_path, kind, mode):
    """The programs read back and check what they wrote; with every reply compressed their
    checks must pass and the file must match the MPI library's own run."""
    srv = rfsd_factory(extra=["--compress-reads", mode])
    name, hints = kind
    flavour = list(FLAVOURS)[0]
    local, remote = run_both(srv, tmp_path, flavour, name, 2, name, (),
                             {"RFS_HINTS": f"{hints}rfs_compress=lz4"})
    assert local is not None and remote == local


# ---- a hostile server ----

class HostileServer:
    """Answers HELLO (offering compressed reads, no authentication), refuses SESSION (as a
    server without sessions does), opens any file as 1 MiB, and answers every PREAD with
    reply(req_id, len) - the case under test."""

    def __init__(self, reply):
        self.reply = reply
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.preads = []
        self.t = threading.Thread(target=self.serve, daemon=True)
        self.t.start()

    def serve(self):
        # every connection the client makes (the rfs command dials its streams ahead)
        while True:
            try:
                s, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve_one, args=(s,), daemon=True).start()

    def serve_one(self, s):
        s.settimeout(30)
        try:
            while True:
                h = HDR.unpack(self._exact(s, HDR.size))
                body = self._exact(s, h[7]) if h[7] else b""
                op, rid, flags = h[2], h[5], h[3]
                if op == OP["HELLO"]:
                    out = frame(op, rid, struct.pack("<HHII", 1, FEAT_ZREAD | 0xC, 4 << 20, 0) +
                                bytes(32), flags=F_REPLY)
                elif op == OP["OPEN"]:
                    out = frame(op, rid, struct.pack("<IQ", 1, 1 << 20), flags=F_REPLY)
                elif op in (OP["STAT"],):
                    out = frame(op, rid, struct.pack("<IIQq", 1, 0o644, 1 << 20, 0), flags=F_REPLY)
                elif op == OP["GET_SIZE"]:
                    out = frame(op, rid, struct.pack("<Q", 1 << 20), flags=F_REPLY)
                elif op == OP["PREAD"]:
                    fh, off, n = struct.unpack("<IQI", body[:16])
                    self.preads.append(flags)
                    out = self.reply(rid, n)
                elif op == OP["CLOSE"]:
                    out = frame(op, rid, b"", flags=F_REPLY)
                else:
                    msg = b"not here"
                    out = frame(op, rid, struct.pack("<H", len(msg)) + msg, flags=F_REPLY,
                                status=E["INVAL"])
                s.sendall(out)
        except (OSError, EOFError, struct.error):
            pass
        finally:
            s.close()

    @staticmethod
    def _exact(s, n):
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def url(self, path):
        return f"rfs:127.0.0.1:{self.port}:{path}"

    def close(self):
        self.sock.close()


def packed_reply(rid, codec, raw_len, packed):
    body = struct.pack("<BxxxII", codec, 0, raw_len) + packed
    return frame(OP["PREAD"], rid, body, flags=F_REPLY | F_PACK)


def hostile_get(tmp_path, reply, env=None):
    srv = HostileServer(reply)
    try:
        e = {"RFS_RETRY_TIMEOUT_MS": "0", "RFS_CONFIG": "", "RFS_STREAMS_AUTO_MIN_RTT_US":
             "100000000", **(env or {})}
        full = {**os.environ, **e}
        full.pop("RFS_TOKEN", None)
        full.pop("RFS_TOKEN_FILE", None)
        out = tmp_path / "got.bin"
        r = subprocess.run([binary("rfs"), "get", "-f", srv.url("/x"), out], env=full,
                           capture_output=True, text=True, timeout=TIMEOUT)
        return r, srv.preads
    finally:
        srv.close()


def test_hostile_bigger_than_the_read(tmp_path):
    """A packed reply that would decompress past the read: refused before decompressing."""
    r, preads = hostile_get(tmp_path, lambda rid, n: packed_reply(rid, ZSTD, n + 4096,
                                                                  zstd(bytes(n + 4096))))
    assert preads and preads[0] & F_ZOK
    assert r.returncode != 0 and "compressed PREAD reply" in r.stderr, r.stderr


def test_hostile_corrupt_stream(tmp_path):
    r, _ = hostile_get(tmp_path, lambda rid, n: packed_reply(rid, LZ4, n, b"\xff" * 300))
    assert r.returncode != 0 and "lz4" in r.stderr, r.stderr


def test_hostile_stream_shorter_than_declared(tmp_path):
    r, _ = hostile_get(tmp_path, lambda rid, n: packed_reply(rid, ZSTD, n, zstd(bytes(n // 2))))
    assert r.returncode != 0 and "zstd" in r.stderr, r.stderr


def test_hostile_unasked_packed_reply(tmp_path):
    """A client that does not compress never set ZOK: a packed reply is a protocol error."""
    r, preads = hostile_get(tmp_path, lambda rid, n: packed_reply(rid, LZ4, n, lz4(bytes(n))),
                            env={"RFS_COMPRESS": "none"})
    assert preads and not preads[0] & F_ZOK
    assert r.returncode != 0 and "did not accept one" in r.stderr, r.stderr
