# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""A small, independent Python implementation of the rfs wire protocol (proto/proto.h,
docs/protocol.md), for black-box tests of rfsd with raw sockets. It shares no code with the C
codec, so a bug in one shows up as a disagreement with the other.

Frame header (24 bytes, little-endian): magic u32, version u16, op u16, flags u16, reserved u16,
req_id u32, status u32, body_len u32. Error replies: u16 msg_len + msg."""
import hashlib
import hmac
import os
import socket
import struct

import pytest

MAGIC = 0x31534652
VERSION = 1
HDR = struct.Struct("<IHHHHIII")
F_REPLY = 1
F_SUM = 2          # the body starts with a u32 CRC-32C of the rest of the frame
F_PACK = 4         # the payload is compressed; a pack header leads the body
FEAT_VIEWS, FEAT_SUM = 1, 2
FRAME_MIN = 64 * 1024
FRAME_DEFAULT = 4 * 1024 * 1024
PRE_HELLO_MAX = 4096

OP = dict(HELLO=1, AUTH=2, PING=3, SESSION=4, OPEN=10, CLOSE=11, PREAD=12, PWRITE=13, PREADV=14, PWRITEV=15,
          SYNC=16, GET_SIZE=17, SET_SIZE=18, PREALLOCATE=19, STAT=20, DELETE=21, RENAME=22,
          MKDIR=23, LIST=24, CHECKSUM=25, CHMOD=26, STATFS=27, WRITE_FILE=28, READ_FILE=29, COUNTER=30, LOCK=31, UNLOCK=32, LIST_TREE=33, SET_VIEW=40, VIEW_READ=41,
          VIEW_WRITE=42, TPC_AUTH=5, TPC_GRANT=50, TPC_PULL=51, TPC_STATUS=52)
FEAT_TPC_SRC, FEAT_TPC_DST = 0x20, 0x40
FEAT_XSTREAM = 0x80
F_EXTRA = 0x10     # HELLO only: an additional stream of a client that already has a connection
TPC_EXCL, TPC_VERIFY, TPC_TLS, TPC_SYNC = 1, 2, 4, 8
TPC_RUNNING, TPC_DONE = 1, 2

# rfs_err values travel as positive numbers
E = dict(NOENT=1, EXIST=2, ACCESS=3, AUTH=4, ROFS=5, INVAL=6, NOSPC=7, ISDIR=8, NOTDIR=9,
         NOTEMPTY=10, IO=11, PROTO=12, CONN=13, TIMEOUT=14, TOOBIG=15, NOMEM=16, BADF=17,
         UNSUPPORTED=18, BUSY=19, NAME=20, VERSION=21, FBIG=22, DQUOT=23)

O_RDONLY, O_WRONLY, O_RDWR = 1, 2, 3
O_CREAT, O_EXCL, O_TRUNC, O_APPEND = 4, 8, 16, 32
LOCK_SHARED, LOCK_EXCL = 1, 2
TYPE_FILE, TYPE_DIR, TYPE_OTHER = 1, 2, 3


class RfsError(Exception):
    def __init__(self, status, msg, op=None):
        name = next((k for k, v in E.items() if v == status), str(status))
        super().__init__(f"{name}: {msg}")
        self.status = status
        self.name = name
        self.msg = msg
        self.op = op


def header(op, req_id, body_len, flags=0, status=0, magic=MAGIC, version=VERSION, reserved=0):
    return HDR.pack(magic, version, op, flags, reserved, req_id, status, body_len)


def frame(op, req_id, body=b"", **kw):
    return header(op, req_id, len(body), **kw) + body


def _crc_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC = _crc_table()


def crc32c(data, crc=0):
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _CRC[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def sealed_frame(op, req_id, body=b"", flags=0, **kw):
    """A frame with F_SUM: the CRC-32C of the header and the body follows the header."""
    h = header(op, req_id, len(body) + 4, flags=flags | F_SUM, **kw)
    return h + struct.pack("<I", crc32c(body, crc32c(h))) + body


def unseal(hdr_bytes, body):
    """(sum_ok, body without the field) of a frame with F_SUM."""
    (carried,) = struct.unpack_from("<I", body)
    return carried == crc32c(body[4:], crc32c(hdr_bytes)), body[4:]


def wpath(p):
    b = p.encode() if isinstance(p, str) else p
    return struct.pack("<H", len(b)) + b


# ---- request bodies ----
def b_hello(min_v=1, max_v=1, max_frame=FRAME_DEFAULT):
    return struct.pack("<HHI", min_v, max_v, max_frame)


def b_auth(client_nonce, mac):
    return client_nonce + mac


def b_open(path, flags, mode=0o644):
    return struct.pack("<II", flags, mode) + wpath(path)


def b_fh(fh):
    return struct.pack("<I", fh)


def b_pread(fh, off, length):
    return struct.pack("<IQI", fh, off, length)


def b_pwrite(fh, off, data):
    return struct.pack("<IQ", fh, off) + data


def b_iov(fh, extents, data=b""):
    return struct.pack("<II", fh, len(extents)) + b"".join(
        struct.pack("<QQ", o, n) for o, n in extents) + data


def b_size(fh, size):
    return struct.pack("<IQ", fh, size)


def b_path(p):
    return wpath(p)


def b_rename(a, b):
    return wpath(a) + wpath(b)


def b_mkdir(p, mode=0o755):
    return struct.pack("<I", mode) + wpath(p)


def b_write_file(p, data, flags=0, mode=0o644):
    """WRITE_FILE: u32 flags (1 EXCL, 2 SYNC), u32 mode, path, data."""
    return struct.pack("<II", flags, mode) + wpath(p) + data


def b_read_file(p, max_len):
    """READ_FILE: u32 max, path."""
    return struct.pack("<I", max_len) + wpath(p)


def b_list(p, start=0):
    return struct.pack("<I", start) + wpath(p)


def b_counter(fh, key, delta, set_=0):
    return struct.pack("<IIIq", fh, key, set_, delta)


def b_lock(fh, off, length, mode, wait_ms):
    return struct.pack("<IQQII", fh, off, length, mode, wait_ms)


def b_unlock(fh, off, length):
    return struct.pack("<IQQ", fh, off, length)


def b_set_view(fh, view_id, disp, enc):
    return struct.pack("<IIQ", fh, view_id, disp) + enc


def b_view_read(fh, view_id, pos, length):
    return struct.pack("<IIQI", fh, view_id, pos, length)


def b_view_write(fh, view_id, pos, data):
    return struct.pack("<IIQ", fh, view_id, pos) + data


def b_tpc_grant(p, uses=1):
    return struct.pack("<I", uses) + wpath(p)


def b_tpc_auth(grant_id, client_nonce, mac):
    return grant_id + client_nonce + mac


def b_tpc_pull(host, port, src, dst, grant_id, key, flags=0, mode=0o644, streams=1,
               pin=bytes(32)):
    return (struct.pack("<IIII", flags, mode, port, streams) + grant_id + key + pin +
            wpath(host) + wpath(src) + wpath(dst))


def b_tpc_status(job):
    return struct.pack("<I", job)


def client_mac(secret, server_nonce, client_nonce):
    return hmac.new(secret, b"rfs-auth-client-v1" + server_nonce + client_nonce,
                    hashlib.sha256).digest()


def server_mac(secret, server_nonce, client_nonce):
    return hmac.new(secret, b"rfs-auth-server-v1" + client_nonce + server_nonce,
                    hashlib.sha256).digest()


class Reply:
    def __init__(self, hdr, body):
        (self.magic, self.version, self.op, self.flags, self.reserved, self.req_id, self.status,
         self.body_len) = hdr
        self.body = body

    def error(self):
        n = struct.unpack_from("<H", self.body)[0]
        return RfsError(self.status, self.body[2:2 + n].decode(errors="replace"), self.op)

    def check(self):
        if self.status:
            raise self.error()
        return self

    def u64(self):
        return struct.unpack("<Q", self.check().body)[0]

    def i64(self):
        return struct.unpack("<q", self.check().body)[0]


def parse_list(body):
    count, nxt = struct.unpack_from("<II", body)
    p, out = 8, []
    for _ in range(count):
        typ, mode, size, mtime, nlen = struct.unpack_from("<IIQqH", body, p)
        p += 26
        out.append(dict(name=body[p:p + nlen].decode(), type=typ, mode=mode, size=size,
                        mtime_ns=mtime))
        p += nlen
    assert p == len(body), "LIST reply has trailing bytes"
    return out, nxt


def b_list_tree(p, max_bytes=0):
    return struct.pack("<I", max_bytes) + wpath(p)


def parse_list_tree(data):
    """A LIST_TREE reply's blocks: [(directory below the listed one, [entry dicts])]."""
    p, out = 0, []
    while p < len(data):
        (rl,) = struct.unpack_from("<H", data, p)
        rel = data[p + 2:p + 2 + rl].decode()
        (count,) = struct.unpack_from("<I", data, p + 2 + rl)
        p += 6 + rl
        entries = []
        for _ in range(count):
            typ, mode, size, mtime, nlen = struct.unpack_from("<IIQqH", data, p)
            p += 26
            entries.append(dict(name=data[p:p + nlen].decode(), type=typ, size=size))
            p += nlen
        out.append((rel, entries))
    assert p == len(data), "LIST_TREE reply has trailing bytes"
    return out


class Conn:
    """One connection. send() pipelines; recv() returns replies in the server's order."""
    sums = False   # seal every frame sent; replies must come sealed (and are checked)

    def __init__(self, host, port, timeout=15, source=None):
        """source: local address to connect from (e.g. "127.0.0.2"), for per-address limits."""
        self.sock = socket.create_connection((host, port), timeout=timeout,
                                             source_address=(source, 0) if source else None)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.next_id = 1
        self.max_frame = PRE_HELLO_MAX

    @classmethod
    def to(cls, srv, **kw):
        return cls(srv.host, srv.port, **kw)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, op, body=b"", **kw):
        rid = self.next_id
        self.next_id += 1
        code = OP[op] if isinstance(op, str) else op
        self.sock.sendall(sealed_frame(code, rid, body, **kw) if self.sums else
                          frame(code, rid, body, **kw))
        return rid

    def _exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise EOFError(f"connection closed after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def recv(self):
        raw = self._exact(HDR.size)
        h = HDR.unpack(raw)
        body = self._exact(h[7]) if h[7] else b""
        packed = h[3] & F_PACK  # a read reply the request let come compressed
        if self.sums:
            assert h[3] & ~F_PACK == F_REPLY | F_SUM, \
                f"reply flags {h[3]:#x} on a checksummed connection"
            ok, body = unseal(raw, body)
            assert ok, "reply checksum mismatch"
            h = h[:3] + (F_REPLY | packed,) + h[4:7] + (len(body),)
        rep = Reply(h, body)
        rep.flags_seen = h[3]
        assert rep.magic == MAGIC and rep.flags & ~F_PACK == F_REPLY and rep.reserved == 0
        return rep

    def call(self, op, body=b"", **kw):
        rid = self.send(op, body, **kw)
        rep = self.recv()
        assert rep.req_id == rid, (rep.req_id, rid)
        return rep

    def peer_closed(self):
        """True when the server closed the connection (EOF), waiting at most the socket timeout."""
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    # ---- session ----
    def hello(self, max_frame=FRAME_DEFAULT, min_v=1, max_v=1):
        rep = self.call("HELLO", b_hello(min_v, max_v, max_frame)).check()
        version, features, mf, auth_req = struct.unpack_from("<HHII", rep.body)
        nonce = rep.body[12:44]
        assert len(rep.body) == 44
        return dict(version=version, features=features, max_frame=mf, auth_required=auth_req,
                    nonce=nonce)

    def auth(self, token, server_nonce):
        secret = token.encode() if isinstance(token, str) else token
        cn = os.urandom(32)
        rep = self.call("AUTH", b_auth(cn, client_mac(secret, server_nonce, cn))).check()
        assert hmac.compare_digest(rep.body, server_mac(secret, server_nonce, cn)), \
            "server proved no knowledge of the secret"
        return rep

    def handshake(self, token=None, max_frame=FRAME_DEFAULT):
        h = self.hello(max_frame)
        if h["auth_required"]:
            self.auth(token, h["nonce"])
        self.max_frame = h["max_frame"]
        return h

    def tpc_auth(self, grant_id, key, server_nonce):
        """TPC_AUTH with a third-party copy grant; returns the reply (check it)."""
        cn = os.urandom(32)
        rep = self.call("TPC_AUTH", b_tpc_auth(grant_id, cn, client_mac(key, server_nonce, cn)))
        if not rep.status:
            assert hmac.compare_digest(rep.body, server_mac(key, server_nonce, cn))
        return rep

    def tpc_grant(self, path, uses=1):
        rep = self.call("TPC_GRANT", b_tpc_grant(path, uses)).check()
        assert len(rep.body) == 60
        ttl, size = struct.unpack_from("<IQ", rep.body, 48)
        return dict(id=rep.body[:16], key=rep.body[16:48], ttl_ms=ttl, size=size)

    # ---- convenience (sequential) ----
    def open(self, path, flags, mode=0o644):
        rep = self.call("OPEN", b_open(path, flags, mode)).check()
        fh, size = struct.unpack("<IQ", rep.body)
        return fh

    def close_fh(self, fh):
        self.call("CLOSE", b_fh(fh)).check()

    def pwrite(self, fh, off, data):
        return self.call("PWRITE", b_pwrite(fh, off, data)).u64()

    def pread(self, fh, off, n):
        return self.call("PREAD", b_pread(fh, off, n)).check().body

    def stat(self, path):
        rep = self.call("STAT", b_path(path)).check()
        typ, mode, size, mtime = struct.unpack("<IIQq", rep.body)
        return dict(type=typ, mode=mode, size=size, mtime_ns=mtime)


def session(srv, **kw):
    """A connected, authenticated Conn to a conftest Server."""
    c = Conn.to(srv, **kw)
    c.handshake(srv.token)
    return c


@pytest.fixture(autouse=True)
def rfsd_exits_cleanly(request):
    """After each test that used the `rfsd` fixture: SIGTERM must end the server with status 0
    (so a sanitizer report or a leak found at exit fails the test that caused it)."""
    yield
    srv = request.node.funcargs.get("rfsd")
    if srv is not None:
        rc = srv.stop()
        assert rc == 0, f"rfsd exited with status {rc}: {srv.proc.stderr.read()[-4000:]}"
