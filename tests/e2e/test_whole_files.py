# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""WRITE_FILE (op 28) and READ_FILE (op 29): a whole file per request (written beside the
target and renamed over it). Raw-protocol checks of the server (rfswire.py), then `rfs cp -r`,
which moves directories of small files that way in both directions, many requests in flight."""
import os
import stat
import struct

from rfswire import rfsd_exits_cleanly  # noqa: F401 (autouse fixture)
from rfswire import E, b_read_file, b_write_file, session
from test_cli import ok, one_line_error, rfs


def leftovers(root):
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if ".rfs-wf-" in f]


def test_write_file_on_the_wire(rfsd):
    (rfsd.root / "d").mkdir()
    with session(rfsd) as c:
        rep = c.call("WRITE_FILE", b_write_file("/d/a", b"hello", flags=2, mode=0o640)).check()
        assert struct.unpack("<Q", rep.body)[0] == 5
        assert (rfsd.root / "d" / "a").read_bytes() == b"hello"
        assert stat.S_IMODE(os.stat(rfsd.root / "d" / "a").st_mode) == 0o640
        # replaced whole by default
        c.call("WRITE_FILE", b_write_file("/d/a", b"bye")).check()
        assert (rfsd.root / "d" / "a").read_bytes() == b"bye"
        # EXCL never replaces
        assert c.call("WRITE_FILE", b_write_file("/d/a", b"x", flags=1)).status == E["EXIST"]
        assert (rfsd.root / "d" / "a").read_bytes() == b"bye"
        # an empty file, set-uid cleared, a missing directory, an escape, unknown flags
        c.call("WRITE_FILE", b_write_file("/d/empty", b"", mode=0o4755)).check()
        assert (rfsd.root / "d" / "empty").read_bytes() == b""
        assert stat.S_IMODE(os.stat(rfsd.root / "d" / "empty").st_mode) == 0o755
        assert c.call("WRITE_FILE", b_write_file("/nodir/x", b"1")).status == E["NOENT"]
        assert c.call("WRITE_FILE", b_write_file("/../x", b"1")).status == E["ACCESS"]
        assert not (rfsd.root.parent / "x").exists()
        assert c.call("WRITE_FILE", b_write_file("/d/b", b"1", flags=8)).status == E["INVAL"]
        # a directory in the way is not replaced
        (rfsd.root / "d" / "sub").mkdir()
        assert c.call("WRITE_FILE", b_write_file("/d/sub", b"1")).status != 0
        assert (rfsd.root / "d" / "sub").is_dir()
        # pipelined: 200 requests before reading a reply
        ids = [c.send("WRITE_FILE", b_write_file(f"/d/p{i}", bytes([i % 256]) * i)) for i in range(200)]
        got = {}
        for _ in ids:
            r = c.recv()
            got[r.req_id] = r.check()
        assert sorted(got) == sorted(ids)
    for i in range(200):
        assert (rfsd.root / "d" / f"p{i}").read_bytes() == bytes([i % 256]) * i
    assert leftovers(rfsd.root) == []


def test_cp_recursive_sends_small_files_batched(rfsd, tmp_path):
    src = tmp_path / "many"
    want = {}
    for i in range(600):
        rel = f"d{i % 7}/sub{i % 3}/f{i}.dat"
        p = src / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        data = os.urandom(i * 13 % 5000)
        p.write_bytes(data)
        os.chmod(p, 0o600 if i % 2 else 0o644)
        want[rel] = data
    big = src / "big.bin"
    big.write_bytes(os.urandom(3 << 20))               # over the batch size: a put
    want["big.bin"] = big.read_bytes()
    r = ok(rfs(rfsd, "--debug", "cp", "-r", src, rfsd.url("/up")))
    assert r.stderr.count("send WRITE_FILE") == 600
    got = {}
    for d, _, fs in os.walk(rfsd.root / "up"):
        for f in fs:
            p = os.path.join(d, f)
            got[os.path.relpath(p, rfsd.root / "up")] = open(p, "rb").read()
    assert got == want
    assert stat.S_IMODE(os.stat(rfsd.root / "up" / "d1" / "sub1" / "f1.dat").st_mode) == 0o600
    assert leftovers(rfsd.root) == []
    # -n: existing files are reported and kept, new ones written
    (src / "d0" / "new.dat").write_bytes(b"new")
    (src / "d0" / "sub0" / "f0.dat").write_bytes(b"changed")
    r = rfs(rfsd, "cp", "-r", "-n", src / "d0", rfsd.url("/up"))
    assert r.returncode == 1 and "f0.dat exists (not overwritten: --no-clobber)" in r.stderr
    assert (rfsd.root / "up" / "d0" / "new.dat").read_bytes() == b"new"
    assert (rfsd.root / "up" / "d0" / "sub0" / "f0.dat").read_bytes() == want["d0/sub0/f0.dat"]
    # into a missing remote directory: one line per failed file, and the status says so
    line = one_line_error(rfs(rfsd, "cp", src / "d0" / "new.dat", rfsd.url("/no/where/x")))
    assert "/no/where" in line


def test_read_file_on_the_wire(rfsd):
    (rfsd.root / "d").mkdir()
    (rfsd.root / "d" / "f").write_bytes(b"0123456789")
    (rfsd.root / "d" / "empty").write_bytes(b"")
    with session(rfsd) as c:
        assert c.call("READ_FILE", b_read_file("/d/f", 10)).check().body == b"0123456789"
        assert c.call("READ_FILE", b_read_file("/d/empty", 0)).check().body == b""
        r = c.call("READ_FILE", b_read_file("/d/f", 9))
        assert r.status == E["TOOBIG"] and "10 bytes" in r.error().msg
        assert c.call("READ_FILE", b_read_file("/d", 100)).status == E["ISDIR"]
        assert c.call("READ_FILE", b_read_file("/d/none", 100)).status == E["NOENT"]
        assert c.call("READ_FILE", b_read_file("/../etc/passwd", 100)).status == E["ACCESS"]
        # more than a frame can carry is refused before any reading
        assert c.call("READ_FILE", b_read_file("/d/f", 1 << 30)).status == E["TOOBIG"]
        ids = [c.send("READ_FILE", b_read_file("/d/f", 100)) for _ in range(100)]
        for _ in ids:
            assert c.recv().check().body == b"0123456789"


def test_cp_recursive_fetches_small_files_batched(rfsd, tmp_path):
    want = {}
    for i in range(500):
        rel = f"r{i % 5}/s{i % 2}/g{i}.bin"
        p = rfsd.root / "run" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        data = os.urandom(i * 17 % 6000)
        p.write_bytes(data)
        want[rel] = data
    (rfsd.root / "run" / "large.bin").write_bytes(os.urandom((1 << 20) + 5))   # a get
    want["large.bin"] = (rfsd.root / "run" / "large.bin").read_bytes()
    dst = tmp_path / "here"
    r = ok(rfs(rfsd, "--debug", "cp", "-r", rfsd.url("/run"), dst))
    assert r.stderr.count("send READ_FILE") == 500
    got = {}
    for d, _, fs in os.walk(dst):
        for f in fs:
            p = os.path.join(d, f)
            got[os.path.relpath(p, dst)] = open(p, "rb").read()
    assert got == want
    # -n keeps local files and says so; the others are fetched
    (dst / "r0" / "s0" / "g0.bin").write_bytes(b"mine")
    os.remove(dst / "r1" / "s1" / "g1.bin")
    r = rfs(rfsd, "cp", "-r", "-n", rfsd.url("/run/r0"), dst)       # into dst/r0: all exist
    assert r.returncode == 1 and "g0.bin exists" in r.stderr
    assert (dst / "r0" / "s0" / "g0.bin").read_bytes() == b"mine"
    r = rfs(rfsd, "cp", "-r", rfsd.url("/run/r1"), dst)
    assert r.returncode == 0 and (dst / "r1" / "s1" / "g1.bin").read_bytes() == want["r1/s1/g1.bin"]
    assert [f for d, _, fs in os.walk(tmp_path) for f in fs if ".rfs-part-" in f] == []


WF_PARENTS = 4


def test_write_file_makes_its_parents_when_asked(rfsd):
    """RFS_WF_PARENTS (HELLO feature 0x0400): the missing directories above the file are made
    as MKDIR with parents makes them, beneath the export only; without the flag a missing
    directory is still NOENT; a file in the way is NOTDIR; nothing escapes through a link."""
    from rfswire import E, Conn, b_write_file
    outside = rfsd.root.parent / "outside"
    outside.mkdir()
    (rfsd.root / "esc").symlink_to(outside)
    (rfsd.root / "afile").write_bytes(b"x")
    with Conn.to(rfsd) as c:
        assert c.handshake(rfsd.token)["features"] & 0x0400
        assert c.call("WRITE_FILE", b_write_file("/a/b/c/f", b"1")).status == E["NOENT"]
        assert not (rfsd.root / "a").exists()
        c.call("WRITE_FILE", b_write_file("/a/b/c/f", b"one", flags=WF_PARENTS)).check()
        assert (rfsd.root / "a" / "b" / "c" / "f").read_bytes() == b"one"
        c.call("WRITE_FILE", b_write_file("/a/b/g", b"two", flags=WF_PARENTS | 2)).check()
        assert (rfsd.root / "a" / "b" / "g").read_bytes() == b"two"
        c.call("WRITE_FILE", b_write_file("/top", b"3", flags=WF_PARENTS)).check()
        assert (rfsd.root / "top").read_bytes() == b"3"
        rep = c.call("WRITE_FILE", b_write_file("/afile/x/f", b"1", flags=WF_PARENTS))
        assert rep.status == E["NOTDIR"], rep.status
        for bad in ("/esc/x/f", "/../up/f", "/a/../../x/f"):
            assert c.call("WRITE_FILE", b_write_file(bad, b"1", flags=WF_PARENTS)).status != 0, bad
        assert list(outside.iterdir()) == []
        assert not (rfsd.root.parent / "up").exists() and not (rfsd.root.parent / "x").exists()
        # many at once into the same new directories, in any order
        ids = [c.send("WRITE_FILE", b_write_file(f"/m/{i % 5}/{i % 3}/f{i}", bytes([i]) * i,
                                                 flags=WF_PARENTS)) for i in range(60)]
        for _ in ids:
            c.recv().check()
    for i in range(60):
        assert (rfsd.root / "m" / str(i % 5) / str(i % 3) / f"f{i}").read_bytes() == bytes([i]) * i
    assert leftovers(rfsd.root) == []
