# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Frame checksums (docs/protocol.md, "Frame checksums"): a byte flipped on the wire inside a
data frame is detected and reported, never written or returned. A relay between the client and
rfsd flips one byte of a write's payload or of a read reply's payload; the call fails with the
checksum error, the server's file never holds the flipped byte, and the connection goes on
serving. Clients that do not ask for checksums (raw-protocol clients, older builds) still work."""
import os
import random
import socket
import struct
import subprocess
import sys
import threading

import pytest

from conftest import BUILD, REPO, binary
from rfswire import (E, F_REPLY, F_SUM, FEAT_SUM, HDR, O_CREAT, O_RDWR, OP, Conn, b_fh,
                     b_open, b_pread, b_pwrite, crc32c, header, session)

sys.path.insert(0, str(REPO / "python"))
os.environ.setdefault("RFS_LIBRARY", str(BUILD / "librfs.so"))

TIMEOUT = 60


def exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


class Relay:
    """Forwards whole frames between clients and rfsd. The first frame that `up` (client to
    server) or `down` (server to client) selects, called with (op, flags, status, body_len),
    gets the byte in the middle of its body flipped; `flipped` counts them."""

    def __init__(self, srv, up=None, down=None):
        self.srv, self.up, self.down = srv, up, down
        self.flipped = 0
        self.flipped_ops = []
        self.lock = threading.Lock()
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.socks = []
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path):
        return f"rfs://127.0.0.1:{self.port}{path}"

    def cli_url(self, path):
        return f"rfs:127.0.0.1:{self.port}:{path}"

    def _accept(self):
        while True:
            try:
                a, _ = self.lsock.accept()
            except OSError:
                return
            b = socket.create_connection((self.srv.host, self.srv.port))
            self.socks += [a, b]
            threading.Thread(target=self._pump, args=(a, b, "up"), daemon=True).start()
            threading.Thread(target=self._pump, args=(b, a, "down"), daemon=True).start()

    def _pump(self, src, dst, way):
        pick = self.up if way == "up" else self.down
        try:
            while True:
                hdr = exact(src, HDR.size)
                if hdr is None:
                    break
                _, _, op, flags, _, _, status, n = HDR.unpack(hdr)
                body = exact(src, n) if n else b""
                if body is None:
                    break
                with self.lock:
                    hit = pick is not None and not self.flipped and pick(op, flags, status, n)
                    if hit:
                        self.flipped += 1
                        self.flipped_ops.append(op)
                if hit:
                    i = len(body) // 2
                    body = body[:i] + bytes([body[i] ^ 0x5A]) + body[i + 1:]
                dst.sendall(hdr + body)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.lsock.close()
        for s in self.socks:
            try:
                s.close()
            except OSError:
                pass


def big(op):
    return lambda o, flags, status, n: o == OP[op] and status == 0 and n > 4096


@pytest.fixture
def rfs():
    return pytest.importorskip("rfs")


# ---- raw protocol ----

def test_server_offers_checksums_and_old_clients_still_work(rfsd):
    """A client that never sets F_SUM gets plain frames back: the feature is opt-in per frame."""
    with Conn.to(rfsd) as c:
        h = c.handshake(rfsd.token)
        assert h["features"] & FEAT_SUM
        fh = c.open("/old", O_RDWR | O_CREAT)
        assert c.pwrite(fh, 0, b"plain frames") == 12
        assert c.pread(fh, 0, 12) == b"plain frames"   # recv() asserts flags == F_REPLY
    assert (rfsd.root / "old").read_bytes() == b"plain frames"


def test_raw_sealed_frames_and_a_corrupt_one(rfsd):
    (rfsd.root / "f").write_bytes(b"A" * 65536)
    with Conn.to(rfsd) as c:
        h = c.hello()
        c.sums = True                     # AUTH and everything after it sealed
        c.auth(rfsd.token, h["nonce"])
        c.max_frame = h["max_frame"]
        fh = c.open("/f", O_RDWR)
        body = b_pwrite(fh, 0, b"B" * 65536)
        rid = c.next_id
        c.next_id += 1
        h = header(OP["PWRITE"], rid, len(body) + 4, flags=F_SUM)
        good = h + struct.pack("<I", crc32c(body, crc32c(h))) + body
        bad = bytearray(good)
        bad[len(bad) // 2] ^= 1
        c.send_raw(bytes(bad))
        rep = c.recv()
        assert rep.req_id == rid and rep.status == E["IO"]
        msg = rep.error().msg
        assert "checksum mismatch" in msg and "nothing of it was applied" in msg, msg
        assert (rfsd.root / "f").read_bytes() == b"A" * 65536
        # the field itself damaged: the same
        bad = bytearray(good)
        bad[25] ^= 0x80
        c.send_raw(bytes(bad))
        assert c.recv().status == E["IO"]
        assert (rfsd.root / "f").read_bytes() == b"A" * 65536
        # the connection is still in step: the intact frame is applied and reads come sealed
        c.send_raw(good)
        assert c.recv().u64() == 65536
        assert c.pread(fh, 100, 5) == b"BBBBB"
    assert (rfsd.root / "f").read_bytes() == b"B" * 65536


# ---- the C client through a corrupting relay ----

@pytest.mark.nosan  # the Python package loads librfs.so into an uninstrumented interpreter
def test_corrupt_write_is_refused_and_nothing_written(rfsd, rfs):
    size = 3 << 20
    (rfsd.root / "w").write_bytes(b"A" * size)
    relay = Relay(rfsd, up=big("PWRITE"))
    try:
        # Uncompressed: automatic compression would shrink the frame below what the relay
        # corrupts whenever it samples the link as slow (a loaded machine), and nothing fails.
        with rfs.RemoteFile(relay.url("/w"), "r+b", token=rfsd.token, compress="none") as f:
            with pytest.raises(OSError) as ei:
                f.pwrite(b"B" * size, 0)
            assert "checksum mismatch" in str(ei.value), str(ei.value)
            assert getattr(ei.value, "rfs_code", None) == -E["IO"]
            assert relay.flipped == 1
            disk = (rfsd.root / "w").read_bytes()
            assert set(disk) <= {ord("A"), ord("B")}   # no flipped byte reached the file
            assert disk == b"A" * size                 # one frame: nothing of it written
            # the same handle and connection go on working
            assert f.pwrite(b"C" * size, 0) == size
        assert (rfsd.root / "w").read_bytes() == b"C" * size
    finally:
        relay.close()


@pytest.mark.nosan  # the Python package loads librfs.so into an uninstrumented interpreter
def test_corrupt_read_reply_is_an_error_not_data(rfsd, rfs):
    size = 3 << 20
    (rfsd.root / "r").write_bytes(b"D" * size)
    relay = Relay(rfsd, down=big("PREAD"))
    try:
        # Raw replies: rfsd may compress a reply of such bytes (compressed reads) below what
        # the relay flips; test_corrupt_packed_read_reply covers packed ones.
        with rfs.RemoteFile(relay.url("/r"), "rb", token=rfsd.token, compress="none") as f:
            with pytest.raises(OSError) as ei:
                f.pread(size, 0)
            assert "checksum mismatch" in str(ei.value), str(ei.value)
            assert "reply corrupted in transit" in str(ei.value)
            assert relay.flipped == 1
            assert f.pread(size, 0) == b"D" * size
    finally:
        relay.close()


def test_cli_get_and_put_report_corruption(rfsd, tmp_path):
    """rfs get hands data to its output file as they arrive (a sink): the mismatch still fails
    the get. rfs put: the corrupted frame is refused, the remote file holds no flipped byte."""
    data = os.urandom(2 << 20)
    (rfsd.root / "g").write_bytes(data)
    relay = Relay(rfsd, down=big("PREAD"))
    try:
        p = subprocess.run([binary("rfs"), "get", relay.cli_url("/g"), str(tmp_path / "out")],
                           env=rfsd.env(), capture_output=True, text=True, timeout=TIMEOUT)
        assert p.returncode != 0
        assert "checksum mismatch" in p.stderr, p.stderr
        assert relay.flipped == 1
    finally:
        relay.close()
    src = tmp_path / "src"
    src.write_bytes(data)
    relay = Relay(rfsd, up=big("PWRITE"))
    try:
        p = subprocess.run([binary("rfs"), "put", str(src), relay.cli_url("/p")],
                           env=rfsd.env(), capture_output=True, text=True, timeout=TIMEOUT)
        assert p.returncode != 0
        assert "checksum mismatch" in p.stderr, p.stderr
        assert relay.flipped == 1
        for f in rfsd.root.iterdir():   # the put's file (or its temporary) holds only good bytes
            if f.is_file() and f.name != "g":
                got = f.read_bytes()
                assert got == data[:len(got)] or got.count(0) == len(got)
    finally:
        relay.close()


@pytest.mark.nosan  # the Python package loads librfs.so into an uninstrumented interpreter
def test_checksums_can_be_turned_off_on_the_client(rfsd, rfs, monkeypatch, tmp_path):
    """RFS_CHECKSUM=off: plain frames (what the benchmark compares against); the relay's flip
    then goes unnoticed, which is what the checksums are for."""
    (rfsd.root / "o").write_bytes(b"E" * (1 << 20))
    relay = Relay(rfsd, down=big("PREAD"))
    try:
        code = (f"import sys; sys.path.insert(0, {str(REPO / 'python')!r}); import rfs\n"
                f"f = rfs.RemoteFile({relay.url('/o')!r}, 'rb', token={rfsd.token!r})\n"
                "d = f.pread(1 << 20, 0); f.close()\n"
                "print(sum(1 for b in d if b != 0x45))\n")
        # raw replies (see test_corrupt_read_reply_is_an_error_not_data)
        env = {**rfsd.env(), "RFS_CHECKSUM": "off", "RFS_COMPRESS": "none",
               "RFS_LIBRARY": str(BUILD / "librfs.so")}
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=TIMEOUT)
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == "1"     # one wrong byte returned: no checksum to catch it
        assert relay.flipped == 1
    finally:
        relay.close()


@pytest.mark.nosan  # the Python package loads librfs.so into an uninstrumented interpreter
def test_corrupt_packed_read_reply_is_an_error_not_data(rfsd_factory, rfs, tmp_path):
    """A compressed read reply (rfsd --compress-reads lz4) is checksummed as sent: a bit flipped
    in its compressed payload is a checksum mismatch, never data or a decompression accident."""
    srv = rfsd_factory(extra=["--compress-reads", "lz4"])
    rnd = random.Random(5)  # short runs of few values: lz4 packs 1 MiB to about half
    data = b"".join(bytes([rnd.randrange(8)]) * rnd.randrange(1, 6) for _ in range(400000))
    data = data[:1 << 20]
    (srv.root / "z").write_bytes(data)
    relay = Relay(srv, down=big("PREAD"))
    try:
        with rfs.RemoteFile(relay.url("/z"), "rb", token=srv.token) as f:
            with pytest.raises(OSError) as ei:
                f.pread(len(data), 0)
            assert "checksum mismatch" in str(ei.value), str(ei.value)
            assert relay.flipped == 1
            assert f.pread(len(data), 0) == data
    finally:
        relay.close()
    # and the replies were packed (the same read through the CLI counts them)
    p = subprocess.run([binary("rfs"), "get", "-f", srv.url("/z"), str(tmp_path / "z")],
                       env={**srv.env(), "RFS_STATS": "1"}, capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert p.returncode == 0 and "compressed read replies" in p.stderr, p.stderr

