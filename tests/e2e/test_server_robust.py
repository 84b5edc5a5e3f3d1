# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""rfsd against malformed input: oversized lengths, truncated frames, wrong magic/version,
garbage, unknown ops, clients that vanish mid-frame. Each case asserts the documented reaction
(error reply, or close for unframeable input) and that the server still serves others."""
import os
import socket
import struct

import pytest

from rfswire import rfsd_exits_cleanly  # noqa: F401 (autouse fixture)
from rfswire import (E, HDR, MAGIC, OP, O_CREAT, O_RDWR, PRE_HELLO_MAX, Conn, b_fh, b_iov,
                     b_open, b_path, b_pread, b_pwrite, frame, header, session)


def still_serving(srv):
    assert srv.proc.poll() is None, "rfsd died"
    with session(srv) as c:
        payload = os.urandom(64)
        assert c.call("PING", payload).check().body == payload
        fh = c.open("/alive", O_RDWR | O_CREAT)
        c.pwrite(fh, 0, b"ok")
        c.close_fh(fh)
    assert (srv.root / "alive").read_bytes() == b"ok"


def test_wrong_magic_error_then_close(rfsd):
    with Conn.to(rfsd) as c:
        c.send_raw(header(OP["PING"], 7, 0, magic=0xDEADBEEF))
        rep = c.recv()
        assert rep.status == E["PROTO"] and rep.req_id == 7
        assert c.peer_closed()
    still_serving(rfsd)


def test_wrong_version_error_then_close(rfsd):
    with Conn.to(rfsd) as c:
        c.send_raw(header(OP["HELLO"], 3, 8, version=99) + struct.pack("<HHI", 99, 99, 1 << 20))
        rep = c.recv()
        assert rep.status == E["VERSION"] and rep.req_id == 3
        assert c.peer_closed()
    still_serving(rfsd)


def test_hello_without_common_version(rfsd):
    with Conn.to(rfsd) as c:
        rep = c.call("HELLO", struct.pack("<HHI", 2, 5, 1 << 20))
        assert rep.status == E["VERSION"]
        assert c.peer_closed()


@pytest.mark.parametrize("seed", range(5))
def test_garbage_bytes_closed(rfsd, seed):
    import random
    rnd = random.Random(seed)
    junk = bytes(rnd.randrange(256) for _ in range(3000))
    with Conn.to(rfsd) as c:
        c.send_raw(junk)
        try:
            while True:       # whatever comes back must be well-formed frames, then EOF
                rep = c.recv()
                assert rep.status != 0
        except (EOFError, ConnectionResetError):
            pass
    still_serving(rfsd)


def test_unknown_op_error_connection_survives(rfsd):
    with session(rfsd) as c:
        rid = c.send(999, b"abcdef")
        rep = c.recv()
        assert rep.req_id == rid and rep.status == E["PROTO"]
        assert c.call("PING", b"after").check().body == b"after"
        # reserved bits and a reply flag on a request are refused the same way
        rep = c.call("PING", b"r", reserved=5)
        assert rep.status == E["PROTO"]
        rep = c.call("PING", b"f", flags=1)
        assert rep.status == E["PROTO"]
        assert c.call("PING", b"again").check().body == b"again"


def test_oversized_frame_after_auth(rfsd):
    with session(rfsd) as c:
        c.send_raw(header(OP["PWRITE"], 9, 0xFFFFFFF0))
        rep = c.recv()
        assert rep.status == E["TOOBIG"] and rep.req_id == 9
        assert c.peer_closed()
    still_serving(rfsd)


def test_oversized_frame_before_auth(rfsd):
    with Conn.to(rfsd) as c:
        c.send_raw(header(OP["HELLO"], 1, PRE_HELLO_MAX))
        assert c.recv().status == E["TOOBIG"]
        assert c.peer_closed()
    still_serving(rfsd)


def test_oversized_lengths_inside_bodies(rfsd):
    with session(rfsd) as c:
        fh = c.open("/big", O_RDWR | O_CREAT)
        # a read whose reply cannot fit in the negotiated frame
        assert c.call("PREAD", b_pread(fh, 0, 5 * 1024 * 1024)).status == E["TOOBIG"]
        assert c.call("PREAD", b_pread(fh, 2 ** 63, 1)).status == E["FBIG"]
        assert c.call("PREADV", b_iov(fh, [(0, 3 * 1024 * 1024)] * 2)).status == E["TOOBIG"]
        # extent count claims more extents than the body holds
        assert c.call("PREADV", struct.pack("<II", fh, 70000)).status in (E["TOOBIG"], E["PROTO"])
        assert c.call("PREADV", struct.pack("<II", fh, 1000)).status == E["PROTO"]
        # path length over the limit, and a path length running past the body
        assert c.call("STAT", struct.pack("<H", 5000) + b"a" * 5000).status == E["TOOBIG"]
        assert c.call("STAT", struct.pack("<H", 100) + b"abc").status == E["PROTO"]
        assert c.call("STAT", b_path("a\0b")).status == E["INVAL"]
        assert c.call("PING", b"fine").check().body == b"fine"


def test_truncated_bodies_get_error_replies(rfsd):
    with session(rfsd) as c:
        for op in ["OPEN", "PREAD", "PWRITE", "CLOSE", "LOCK", "COUNTER", "RENAME", "LIST",
                   "SET_SIZE", "UNLOCK", "VIEW_READ"]:
            rep = c.call(op, b"\x01\x02")
            assert rep.status == E["PROTO"], op
        assert c.call("PING", b"x").check().body == b"x"


def test_disconnect_mid_header_and_mid_body(rfsd):
    with Conn.to(rfsd) as c:
        c.send_raw(frame(OP["PING"], 1, b"x")[:10])
    with session(rfsd) as c:
        fh = c.open("/mid", O_RDWR | O_CREAT)
        c.send_raw(header(OP["PWRITE"], 50, 12 + 100000) + struct.pack("<IQ", fh, 0) + b"y" * 500)
    still_serving(rfsd)
    assert (rfsd.root / "mid").read_bytes() == b""  # the partial write was never applied


def test_bad_handles(rfsd):
    with session(rfsd) as c:
        for fh in (0, 1, 0xFFFFFFFF, 4096):
            assert c.call("PREAD", b_pread(fh, 0, 1)).status == E["BADF"]
            assert c.call("SYNC", b_fh(fh)).status == E["BADF"]


def test_many_bad_clients_then_good(rfsd):
    for i in range(20):
        with Conn.to(rfsd) as c:
            c.send_raw(os.urandom(i * 37 + 1))
    still_serving(rfsd)


# ---- large PWRITEs, which the reader writes piece by piece as they arrive (server/conn.c) ----

BIG = 3 * 1024 * 1024 + 7  # over the streaming threshold, pieces of 1 MiB plus a tail


def test_streamed_pwrite_lands_byte_exact(rfsd):
    data = os.urandom(BIG)
    with session(rfsd) as c:
        fh = c.open("/big", O_RDWR | O_CREAT)
        assert c.pwrite(fh, 5, data) == len(data)
        assert c.pread(fh, 5, 1 << 20) == data[:1 << 20]
        c.close_fh(fh)
    assert (rfsd.root / "big").read_bytes() == b"\0" * 5 + data


def test_streamed_pwrite_refused_then_drained(rfsd):
    """A large write the server must refuse (read-only handle, unknown handle, a range past the
    largest offset) gets an error reply; its payload is read and dropped, so the next request
    on the same connection is understood and the file is untouched."""
    (rfsd.root / "ro").write_bytes(b"keep")
    data = os.urandom(BIG)
    with session(rfsd) as c:
        rep = c.call("OPEN", b_open("/ro", 1)).check()  # RDONLY
        fh = struct.unpack_from("<I", rep.body)[0]
        assert c.call("PWRITE", b_pwrite(fh, 0, data)).status == E["ROFS"]
        assert c.call("PWRITE", b_pwrite(fh + 1000, 0, data)).status == E["BADF"]
        assert c.call("PWRITE", b_pwrite(fh, (1 << 63) - 10, data)).status in (E["FBIG"],
                                                                                 E["INVAL"])
        assert c.call("PING", b"next").check().body == b"next"
    assert (rfsd.root / "ro").read_bytes() == b"keep"
    still_serving(rfsd)


def test_client_vanishes_inside_streamed_pwrite(rfsd):
    """The client sends half of a large write's payload and disconnects: rfsd drops the
    connection, keeps serving others, and what reached the file is a prefix of the data."""
    data = os.urandom(BIG)
    with session(rfsd) as c:
        fh = c.open("/half", O_RDWR | O_CREAT)
        body = b_pwrite(fh, 0, data)
        c.send_raw(header(OP["PWRITE"], 99, len(body)) + body[:len(body) // 2])
    still_serving(rfsd)
    got = (rfsd.root / "half").read_bytes()
    assert len(got) < len(data) and got == data[:len(got)]
