"""WRITE_FILE (op 28): a whole file per request, written beside the target and renamed over
it. Raw-protocol checks of the server (rfswire.py), then `rfs cp -r`, which sends directories
of small files that way, many requests in flight."""
import os
import stat
import struct

from rfswire import rfsd_exits_cleanly  # noqa: F401 (autouse fixture)
from rfswire import E, b_write_file, session
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
        assert c.call("WRITE_FILE", b_write_file("/d/b", b"1", flags=4)).status == E["INVAL"]
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
