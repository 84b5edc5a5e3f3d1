#!/usr/bin/env python3
# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Writes the seed corpus for fuzz_frame: valid and invalid rfs frames.

The frames are built here from docs/protocol.md alone (not from the C encoder), so the
corpus test (tests/proto/test_corpus.c) also cross-checks the C codec against the spec.

File names say what each frame is:
  ok-req-*  one valid request        ok-rep-*  one valid reply
  ok-stream-*  several valid frames back to back
  bad-*     must be refused by the header or body decoder
Run: python3 tests/fuzz/make_corpus.py [OUT_DIR]   (default: tests/fuzz/corpus next to it)
"""
import os
import struct
import sys

MAGIC = 0x31534652
VERSION = 1
F_REPLY = 1
F_SUM = 2
F_PACK = 4
F_VER = 8

OP = dict(HELLO=1, AUTH=2, PING=3, OPEN=10, CLOSE=11, PREAD=12, PWRITE=13, PREADV=14,
          PWRITEV=15, SYNC=16, GET_SIZE=17, SET_SIZE=18, PREALLOCATE=19, STAT=20, DELETE=21,
          RENAME=22, MKDIR=23, LIST=24, CHECKSUM=25, COUNTER=30, LOCK=31, UNLOCK=32, SET_VIEW=40,
          VIEW_READ=41, VIEW_WRITE=42, TPC_AUTH=5, PLACE=6, TPC_GRANT=50, TPC_PULL=51, TPC_STATUS=52,
          CAP_AUTH=8, CAP_ISSUE=53, CAP_REVOKE=54, OBJ_LEASE=55)
O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_TRUNC = 1, 2, 3, 4, 0x10


def hdr(op, body, req_id=1, flags=0, status=0, version=VERSION, reserved=0, magic=MAGIC,
        body_len=None):
    n = len(body) if body_len is None else body_len
    return struct.pack("<IHHHHIII", magic, version, op, flags, reserved, req_id, status, n) + body


def crc32c(data, crc=0):
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c ^ 0xFFFFFFFF


def sealed(frame):
    """The frame with flag bit 1 (checksum): body_len + 4, then the CRC-32C of the header and
    of the rest of the frame right after the header (docs/protocol.md, Frame checksums)."""
    magic, version, op, flags, reserved, rid, status, n = struct.unpack_from("<IHHHHIII", frame)
    h = struct.pack("<IHHHHIII", magic, version, op, flags | F_SUM, reserved, rid, status, n + 4)
    return h + struct.pack("<I", crc32c(frame[24:], crc32c(h))) + frame[24:]


def packed(op, fields, codec, raw, comp, **kw):
    """A compressed write request: flag bit 2 and a pack header {u8 codec, 3 zero bytes,
    u32 fields_len, u32 raw_len} before the fixed fields (docs/protocol.md, Compressed payloads)."""
    body = struct.pack("<BxxxII", codec, len(fields), raw) + fields + comp
    return hdr(OP[op], body, flags=F_PACK, **kw)


# Compressed streams written out by hand so the corpus needs no compression library: an LZ4
# block of 64 zero bytes (one sequence: token 0x0F literal... kept literal-only for clarity) and
# a Zstandard frame holding 12 raw bytes.
LZ4_LITERALS = bytes([0xC0]) + b"hello, world"      # 12 literals, last sequence
ZSTD_RAW12 = (b"\x28\xb5\x2f\xfd"                 # magic
              + bytes([0x20, 12])                     # single segment, 1-byte content size 12
              + bytes([(12 << 3) | 0x01, 0, 0])       # last raw block of 12 bytes
              + b"hello, world")


def req(op, body, **kw):
    return hdr(OP[op], body, **kw)


def rep(op, body, status=0, flags=F_REPLY, **kw):
    return hdr(OP[op], body, flags=flags, status=status, **kw)


def path(p):
    b = p.encode()
    return struct.pack("<H", len(b)) + b


def extents(pairs):
    return b"".join(struct.pack("<QQ", o, n) for o, n in pairs)


def entry(name, typ=1, mode=0o644, size=0, mtime=0):
    b = name.encode()
    return struct.pack("<IIQqH", typ, mode, size, mtime, len(b)) + b


def err(op, code, msg):
    m = msg.encode()
    return rep(op, struct.pack("<H", len(m)) + m, status=code)


def frames():
    ext = [(0, 4), (100, 8), (1 << 33, 3)]
    data15 = bytes(range(15))
    yield "ok-req-hello", req("HELLO", struct.pack("<HHI", 1, 1, 4 << 20))
    yield "ok-req-auth", req("AUTH", bytes(range(32)) + bytes(range(100, 132)))
    yield "ok-req-ping", req("PING", b"ping payload")
    yield "ok-req-ping-empty", req("PING", b"")
    yield "ok-req-open", req("OPEN", struct.pack("<II", O_RDWR | O_CREAT | O_TRUNC, 0o644) + path("/run42/out.h5"))
    yield "ok-req-close", req("CLOSE", struct.pack("<I", 3))
    yield "ok-req-sync", req("SYNC", struct.pack("<I", 3))
    yield "ok-req-get-size", req("GET_SIZE", struct.pack("<I", 3))
    yield "ok-req-pread", req("PREAD", struct.pack("<IQI", 3, 4096, 65536))
    yield "ok-req-pwrite", req("PWRITE", struct.pack("<IQ", 3, 10) + b"written bytes")
    yield "ok-req-preadv", req("PREADV", struct.pack("<II", 3, len(ext)) + extents(ext))
    yield "ok-req-pwritev", req("PWRITEV", struct.pack("<II", 3, len(ext)) + extents(ext) + data15)
    yield "ok-req-set-size", req("SET_SIZE", struct.pack("<IQ", 3, 1 << 30))
    yield "ok-req-preallocate", req("PREALLOCATE", struct.pack("<IQ", 3, 1 << 20))
    yield "ok-req-stat", req("STAT", path("/a/b"))
    yield "ok-req-delete", req("DELETE", path("/a/b"))
    yield "ok-req-rename", req("RENAME", path("/a/b") + path("/a/c"))
    yield "ok-req-mkdir", req("MKDIR", struct.pack("<I", 0o755) + path("/d"))
    yield "ok-req-list", req("LIST", struct.pack("<I", 0) + path("/"))
    yield "ok-req-checksum", req("CHECKSUM", struct.pack("<IIQQQ", 3, 1, 4096, 1 << 30, 0xE3069283))
    yield "ok-req-counter", req("COUNTER", struct.pack("<IIIq", 3, 0, 0, -8))
    yield "ok-req-lock", req("LOCK", struct.pack("<IQQII", 3, 0, 4096, 2, 100))
    yield "ok-req-unlock", req("UNLOCK", struct.pack("<IQQ", 3, 0, 4096))
    yield "ok-req-set-view", req("SET_VIEW", struct.pack("<IIQ", 3, 1, 0) + b"\x01\x02\x03\x04")
    yield "ok-req-view-read", req("VIEW_READ", struct.pack("<IIQI", 3, 1, 0, 1024))
    yield "ok-req-view-write", req("VIEW_WRITE", struct.pack("<IIQ", 3, 1, 8) + b"view data")
    yield "ok-req-tpc-auth", req("TPC_AUTH", bytes(range(16)) + bytes(range(32)) + bytes(range(64, 96)))
    yield "ok-req-tpc-grant", req("TPC_GRANT", struct.pack("<I", 4) + path("/run42/out.h5"))
    tpc_pull = (struct.pack("<IIII", 1 | 2 | 8, 0o644, 7070, 4) + bytes(16) + bytes(range(32))
                + bytes(32) + path("src.example.org") + path("/a/src") + path("/b/dst"))
    yield "ok-req-tpc-pull", req("TPC_PULL", tpc_pull)
    yield "ok-req-tpc-status", req("TPC_STATUS", struct.pack("<I", 7))
    yield "bad-req-tpc-pull-host", req("TPC_PULL", struct.pack("<IIII", 0, 0o644, 7070, 4) + bytes(112)
                                       + path("a host") + path("/a") + path("/b"))
    yield "bad-req-tpc-grant-uses", req("TPC_GRANT", struct.pack("<I", 17) + path("/a"))
    # capabilities: the string as a u16-prefixed printable token; CAP_ISSUE right, flags, expiry
    cap = b"rfscap1." + b"AQEBAA" * 20
    yield "ok-req-cap-auth", req("CAP_AUTH", struct.pack("<H", len(cap)) + cap)
    yield "ok-req-cap-revoke", req("CAP_REVOKE", struct.pack("<H", len(cap)) + cap)
    yield "ok-req-cap-issue", req("CAP_ISSUE", struct.pack("<IIQ", 3, 0, 1800000000) + path("/p/f.rfsm"))
    yield "ok-req-cap-issue-lease", req("CAP_ISSUE", struct.pack("<IIQ", 1, 1, 0) + path("/p/f.rfsm"))
    yield "bad-req-cap-issue-right", req("CAP_ISSUE", struct.pack("<IIQ", 4, 0, 1) + path("/a"))
    yield "bad-req-cap-issue-flags", req("CAP_ISSUE", struct.pack("<IIQ", 1, 2, 1) + path("/a"))
    yield "bad-req-cap-auth-space", req("CAP_AUTH", struct.pack("<H", 5) + b"rfs c")
    yield "bad-req-cap-auth-empty", req("CAP_AUTH", struct.pack("<H", 0))
    yield "ok-req-obj-lease", req("OBJ_LEASE", struct.pack("<Q", 1800000000) + path("/p/f.rfsm.c0.r0"))

    yield "ok-rep-hello", rep("HELLO", struct.pack("<HHII", 1, 0, 4 << 20, 1) + bytes(range(7, 39)))
    yield "ok-rep-auth", rep("AUTH", bytes(range(200, 232)))
    yield "ok-rep-ping", rep("PING", b"ping payload")
    yield "ok-rep-open", rep("OPEN", struct.pack("<IQ", 3, 12345))
    yield "ok-rep-close", rep("CLOSE", b"")
    yield "ok-rep-pread", rep("PREAD", b"some file bytes")
    yield "ok-rep-pwrite", rep("PWRITE", struct.pack("<Q", 13))
    yield "ok-rep-preadv", rep("PREADV", data15)
    yield "ok-rep-get-size", rep("GET_SIZE", struct.pack("<Q", 1 << 40))
    yield "ok-rep-stat", rep("STAT", struct.pack("<IIQq", 1, 0o644, 99, 1700000000 * 10**9))
    yield "ok-rep-list", rep("LIST", struct.pack("<II", 3, 3) + entry("a.txt", 1, size=10)
                             + entry("sub", 2, 0o755) + entry("sock", 3))
    yield "ok-rep-list-empty", rep("LIST", struct.pack("<II", 0, 0))
    yield "ok-rep-checksum", rep("CHECKSUM", struct.pack("<IQQ", 1, 1 << 20, 0xE3069283))
    yield "ok-rep-counter", rep("COUNTER", struct.pack("<q", -5))
    yield "ok-rep-view-read", rep("VIEW_READ", b"view bytes")
    yield "ok-rep-tpc-auth", rep("TPC_AUTH", bytes(range(200, 232)))
    yield "ok-rep-tpc-grant", rep("TPC_GRANT", bytes(range(48)) + struct.pack("<IQ", 60000, 1 << 31))
    yield "ok-rep-tpc-pull", rep("TPC_PULL", struct.pack("<I", 7))
    yield "ok-rep-cap-auth", rep("CAP_AUTH", struct.pack("<IQ", 2, 1800000000))
    yield "ok-rep-cap-issue", rep("CAP_ISSUE", struct.pack("<H", len(cap)) + cap)
    yield "ok-rep-cap-revoke", rep("CAP_REVOKE", b"")
    yield "ok-rep-obj-lease", rep("OBJ_LEASE", struct.pack("<Q", 1800000000))
    yield "bad-rep-cap-auth-right", rep("CAP_AUTH", struct.pack("<IQ", 0, 1))
    yield "ok-rep-tpc-status", rep("TPC_STATUS", struct.pack("<IIQQ", 1, 0, 5, 10))
    yield "bad-rep-tpc-status-done-over-total", rep("TPC_STATUS", struct.pack("<IIQQ", 1, 0, 11, 10))
    yield "ok-rep-error", err("OPEN", 1, "/a/b: no such file or directory")
    yield "ok-rep-error-empty", err("PWRITEV", 7, "")
    yield "ok-req-pwrite-sealed", sealed(req("PWRITE", struct.pack("<IQ", 3, 10) + b"written bytes"))
    yield "ok-req-stat-sealed", sealed(req("STAT", path("/a/b")))
    yield "ok-rep-pread-sealed", sealed(rep("PREAD", b"some file bytes"))
    yield "ok-rep-error-sealed", sealed(err("PWRITE", 11, "checksum mismatch"))
    # File versions: a request asks with flag 8; the reply's body starts with u64 size, i64 mtime
    ver = struct.pack("<Qq", 4096, 1764115200123456789)
    yield "ok-req-pwrite-ver", req("PWRITE", struct.pack("<IQ", 3, 10) + b"data", flags=F_VER)
    yield "ok-req-open-ver", req("OPEN", struct.pack("<II", O_RDWR, 0o644) + path("/v"), flags=F_VER)
    yield "ok-rep-pwrite-ver", rep("PWRITE", ver + struct.pack("<Q", 4), flags=F_REPLY | F_VER)
    yield "ok-rep-open-ver", rep("OPEN", ver + struct.pack("<IQ", 7, 4096), flags=F_REPLY | F_VER)
    yield "ok-rep-set-size-ver", rep("SET_SIZE", ver, flags=F_REPLY | F_VER)
    yield "ok-rep-error-ver", rep("PWRITE", ver + struct.pack("<H", 4) + b"full", status=7,
                                  flags=F_REPLY | F_VER)
    yield "ok-rep-pwrite-ver-sealed", sealed(rep("PWRITE", ver + struct.pack("<Q", 4),
                                                 flags=F_REPLY | F_VER))
    yield "bad-ver-on-stat", req("STAT", path("/a"), flags=F_VER)
    yield "bad-ver-reply-short", rep("SET_SIZE", ver[:15], flags=F_REPLY | F_VER)
    yield "bad-ver-reply-stat", rep("STAT", ver + struct.pack("<IIQq", 1, 0, 0, 0),
                                    flags=F_REPLY | F_VER)
    pw = struct.pack("<IQ", 3, 10)
    yield "ok-packed-pwrite-lz4", packed("PWRITE", pw, 1, 12, LZ4_LITERALS)
    yield "ok-packed-pwrite-zstd", packed("PWRITE", pw, 2, 12, ZSTD_RAW12)
    yield "ok-packed-pwrite-zstd-sealed", sealed(packed("PWRITE", pw, 2, 12, ZSTD_RAW12))
    yield "bad-packed-bomb-declared", packed("PWRITE", pw, 2, 1 << 30, ZSTD_RAW12)
    yield "bad-packed-size-lie", packed("PWRITE", pw, 2, 11, ZSTD_RAW12)
    yield "bad-packed-lz4-overrun", packed("PWRITE", pw, 1, 5, LZ4_LITERALS)
    yield "bad-packed-codec", packed("PWRITE", pw, 7, 12, LZ4_LITERALS)
    yield "bad-packed-fields-past-end", packed("PWRITE", pw, 1, 12, b"")[:-4]
    yield "bad-packed-on-read", packed("PREAD", struct.pack("<IQI", 3, 0, 16), 1, 12, LZ4_LITERALS)
    yield "ok-stream-pipelined", (req("PING", b"x", req_id=1) + req("STAT", path("/a"), req_id=2)
                                  + req("PREAD", struct.pack("<IQI", 1, 0, 10), req_id=3))

    good = req("PREAD", struct.pack("<IQI", 3, 0, 16))
    yield "bad-magic", b"XFS1" + good[4:]
    yield "bad-version", req("PREAD", struct.pack("<IQI", 3, 0, 16), version=2)
    yield "bad-reserved", req("PREAD", struct.pack("<IQI", 3, 0, 16), reserved=1)
    yield "bad-flags", hdr(OP["PREAD"], struct.pack("<IQI", 3, 0, 16), flags=0x8000)
    yield "bad-op", hdr(99, b"")
    yield "bad-header-truncated", good[:20]
    yield "bad-body-truncated", good[:-3]
    yield "bad-body-len-huge", req("PING", b"", body_len=0xFFFFFFFF)
    yield "bad-trailing", req("CLOSE", struct.pack("<I", 3) + b"\x00")
    yield "bad-path-empty", req("STAT", path(""))
    yield "bad-path-nul", req("STAT", struct.pack("<H", 3) + b"a\x00b")
    yield "bad-path-long", req("STAT", path("p" * 4096))
    yield "bad-path-overrun", req("STAT", struct.pack("<H", 50) + b"/short")
    yield "bad-extent-count", req("PREADV", struct.pack("<II", 3, 65537) + extents(ext))
    yield "bad-extent-short", req("PREADV", struct.pack("<II", 3, 4) + extents(ext))
    yield "bad-extent-offset", req("PREADV", struct.pack("<II", 3, 1) + extents([(1 << 63, 1)]))
    big = (1 << 63) - 1
    yield "bad-extent-sum-overflow", req("PWRITEV", struct.pack("<II", 3, 3) + extents([(0, big)] * 3))
    yield "bad-pwritev-short-data", req("PWRITEV", struct.pack("<II", 3, len(ext)) + extents(ext) + data15[:-1])
    yield "bad-pwritev-long-data", req("PWRITEV", struct.pack("<II", 3, len(ext)) + extents(ext) + data15 + b"!")
    yield "bad-hello-frame", req("HELLO", struct.pack("<HHI", 1, 1, 1000))
    yield "bad-open-flags", req("OPEN", struct.pack("<II", 0x80, 0o644) + path("/x"))
    yield "bad-lock-mode", req("LOCK", struct.pack("<IQQII", 3, 0, 1, 7, 0))
    # A CLOSE request body with the reply flag: neither a valid request nor a valid reply.
    yield "bad-reply-flag-on-request", hdr(OP["CLOSE"], struct.pack("<I", 3), flags=F_REPLY)
    yield "bad-error-msg-long", err("STAT", 11, "m" * 1025)
    yield "bad-error-msg-nul", rep("STAT", struct.pack("<H", 3) + b"a\x00b", status=11)
    yield "bad-list-dotdot", rep("LIST", struct.pack("<II", 1, 0) + entry(".."))
    yield "bad-list-slash", rep("LIST", struct.pack("<II", 1, 0) + entry("a/b"))
    yield "bad-list-count", rep("LIST", struct.pack("<II", 2, 0) + entry("a"))
    yield "bad-stat-type", rep("STAT", struct.pack("<IIQq", 9, 0, 0, 0))
    yield "bad-checksum-len", req("CHECKSUM", struct.pack("<IIQQQ", 3, 1, 0, (1 << 30) + 1, 0))
    yield "bad-checksum-algo", req("CHECKSUM", struct.pack("<IIQQQ", 3, 9, 0, 16, 0))
    yield "bad-checksum-seed", req("CHECKSUM", struct.pack("<IIQQQ", 3, 1, 0, 16, 1 << 32))
    yield "bad-checksum-range", req("CHECKSUM", struct.pack("<IIQQQ", 3, 1, (1 << 63) - 1, 2, 0))
    yield "bad-checksum-value", rep("CHECKSUM", struct.pack("<IQQ", 1, 16, 1 << 32))
    flipped = bytearray(sealed(req("PWRITE", struct.pack("<IQ", 3, 10) + b"written bytes")))
    flipped[-3] ^= 0x20
    yield "bad-sealed-payload-flipped", bytes(flipped)
    yield "bad-sealed-short", hdr(OP["SYNC"], b"\x00\x00\x00", flags=F_SUM)
    yield "bad-sealed-field-missing", hdr(OP["CLOSE"], struct.pack("<I", 3), flags=F_SUM)
    yield "bad-garbage", bytes((i * 73 + 41) & 0xFF for i in range(200))
    # server groups (PLACE): rank 5 of a job; process 1 of 4 at an address, or here
    yield "ok-req-place", req("PLACE", bytes(range(16)) + struct.pack("<I", 5))
    yield "ok-rep-place", rep("PLACE", struct.pack("<II", 1, 4) + path("dtn02.example:7070"))
    yield "ok-rep-place-here", rep("PLACE", struct.pack("<IIH", 0, 1, 0))
    yield "bad-rep-place-index", rep("PLACE", struct.pack("<II", 4, 4) + path("h:1"))
    yield "bad-rep-place-addr", rep("PLACE", struct.pack("<II", 1, 4) + path("h 1:7070"))
    yield "bad-req-place-short", req("PLACE", bytes(16))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    n = 0
    for name, data in frames():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        n += 1
    print(f"wrote {n} frames to {out}")


if __name__ == "__main__":
    main()
