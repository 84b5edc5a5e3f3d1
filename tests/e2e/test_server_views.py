# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""File views on the server (SET_VIEW / VIEW_READ / VIEW_WRITE): the filetype travels once as a
portable datatype encoding (docs/datatypes.md, built here by hand, independently of the C
encoder); the server maps stream ranges to file runs and does the list I/O."""
import struct

from rfswire import rfsd_exits_cleanly  # noqa: F401 (autouse fixture)
from rfswire import E, O_CREAT, O_RDONLY, O_RDWR, session

NAMED, VECTOR, RESIZED = 1, 4, 13


def named(size):
    return struct.pack("<BqqqI", NAMED, size, 0, size, 1) + struct.pack("<qq", 0, size)


def vector(count, blocklen, stride, child):
    return struct.pack("<Bqqq", VECTOR, count, blocklen, stride) + child


def resized(lb, extent, child):
    return struct.pack("<Bqq", RESIZED, lb, extent) + child


def encoding(tree):
    return b"RFDT" + struct.pack("<BBHQ", 1, 0, 0, 16 + len(tree)) + tree


# two 4-byte ints out of every 16 bytes: runs [0,4) and [8,12) of each tile
STRIDED = encoding(resized(0, 16, vector(2, 1, 2, named(4))))


def set_view(c, fh, view_id, disp, enc):
    return c.call("SET_VIEW", struct.pack("<IIQ", fh, view_id, disp) + enc)


def test_view_write_and_read(rfsd):
    data = bytes(range(1, 17))
    with session(rfsd) as c:
        fh = c.open("/view.bin", O_RDWR | O_CREAT)
        set_view(c, fh, 3, 100, STRIDED).check()
        rep = c.call("VIEW_WRITE", struct.pack("<IIQ", fh, 3, 0) + data)
        assert rep.u64() == 16
        rep = c.call("VIEW_READ", struct.pack("<IIQI", fh, 3, 4, 8)).check()
        assert rep.body == data[4:12]
        # reading past the end of the file is short
        rep = c.call("VIEW_READ", struct.pack("<IIQI", fh, 3, 12, 100)).check()
        assert rep.body == data[12:16]
        c.close_fh(fh)
    d = (rfsd.root / "view.bin").read_bytes()
    assert len(d) == 128
    for k in range(2):
        t = 100 + 16 * k
        assert d[t:t + 4] == data[8 * k:8 * k + 4]
        assert d[t + 8:t + 12] == data[8 * k + 4:8 * k + 8]
        assert d[t + 4:t + 8] == b"\0" * 4
    assert d[:100] == b"\0" * 100


def test_view_errors(rfsd):
    with session(rfsd) as c:
        fh = c.open("/verr", O_RDWR | O_CREAT)
        assert c.call("VIEW_READ", struct.pack("<IIQI", fh, 0, 0, 4)).status == E["INVAL"]
        assert set_view(c, fh, 16, 0, STRIDED).status == E["INVAL"]
        assert set_view(c, fh, 0, 0, b"RFDT" + b"\0" * 20).status == E["INVAL"]
        assert set_view(c, fh, 0, 0, STRIDED[:-3]).status == E["INVAL"]
        assert set_view(c, fh, 0, 0, b"").status == E["INVAL"]
        assert c.call("PING", b"ok").check().body == b"ok"
        ro = c.open("/verr", O_RDONLY)
        set_view(c, ro, 0, 0, STRIDED).check()
        assert c.call("VIEW_WRITE", struct.pack("<IIQ", ro, 0, 0) + b"x").status == E["ROFS"]


def test_failed_set_view_unsets_the_view(rfsd):
    """Clients may send VIEW_WRITE right behind SET_VIEW without waiting for its reply: when the
    SET_VIEW fails, the write must fail too, not land through the view the slot held before."""
    with session(rfsd) as c:
        fh = c.open("/vstale", O_RDWR | O_CREAT)
        set_view(c, fh, 2, 0, STRIDED).check()
        assert set_view(c, fh, 2, 0, STRIDED[:-3]).status == E["INVAL"]
        assert c.call("VIEW_WRITE", struct.pack("<IIQ", fh, 2, 0) + b"abcd").status == E["INVAL"]
        assert c.call("VIEW_READ", struct.pack("<IIQI", fh, 2, 0, 4)).status == E["INVAL"]
        c.close_fh(fh)
    assert (rfsd.root / "vstale").read_bytes() == b""
