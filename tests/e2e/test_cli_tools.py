"""The `rfs` commands beyond put and get: cat and standard input/output, mv, du, --json
listings, -H sizes, -n/--no-clobber, -v/--debug. Every result is checked against the server's
export root (bytes, names) and every failure against its exit status and one-line message."""
import json
import os
import subprocess

import pytest

from conftest import binary
from test_cli import ok, one_line_error, rfs

TIMEOUT = 120


def rfs_bytes(srv, *args, stdin=None):
    """rfs with binary standard input and output."""
    return subprocess.run([binary("rfs"), *map(str, args)], input=stdin, capture_output=True,
                          env=srv.env(), timeout=TIMEOUT)


def test_cat_and_get_to_stdout(rfsd):
    data = os.urandom(9 << 20) + b"end"        # more than one 8 MiB request
    (rfsd.root / "big.bin").write_bytes(data)
    r = rfs_bytes(rfsd, "cat", rfsd.url("/big.bin"))
    assert r.returncode == 0 and r.stdout == data, r.stderr
    r = rfs_bytes(rfsd, "get", "--verify", rfsd.url("/big.bin"), "-")
    assert r.returncode == 0 and r.stdout == data, r.stderr
    assert not os.path.exists("-")
    (rfsd.root / "empty").write_bytes(b"")
    assert rfs_bytes(rfsd, "cat", rfsd.url("/empty")).stdout == b""
    r = rfs_bytes(rfsd, "cat", rfsd.url("/nothing"))
    assert r.returncode == 1 and b"/nothing" in r.stderr
    r = rfs_bytes(rfsd, "get", "--resume", rfsd.url("/big.bin"), "-")
    assert r.returncode == 2 and b"standard output" in r.stderr


def test_cat_into_closed_pipe_is_not_an_error(rfsd):
    (rfsd.root / "big.bin").write_bytes(os.urandom(20 << 20))
    cat = subprocess.Popen([binary("rfs"), "cat", rfsd.url("/big.bin")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=rfsd.env())
    head = cat.stdout.read(1000)
    cat.stdout.close()
    assert cat.wait(timeout=TIMEOUT) == 0 and len(head) == 1000
    assert cat.stderr.read() == b""


def test_put_from_stdin_is_atomic_and_verified(rfsd):
    data = os.urandom((8 << 20) + 12345)
    ok_ = rfs_bytes(rfsd, "put", "--verify", "-", rfsd.url("/in.bin"), stdin=data)
    assert ok_.returncode == 0, ok_.stderr
    assert (rfsd.root / "in.bin").read_bytes() == data
    assert [p for p in os.listdir(rfsd.root) if ".rfs-part-" in p] == []
    # Replacing it: the old content stays until the new one is complete.
    assert rfs_bytes(rfsd, "put", "-", rfsd.url("/in.bin"), stdin=b"short").returncode == 0
    assert (rfsd.root / "in.bin").read_bytes() == b"short"
    # Standard input has no name: a directory destination is refused.
    (rfsd.root / "dir").mkdir()
    r = rfs_bytes(rfsd, "put", "-", rfsd.url("/dir"), stdin=b"x")
    assert r.returncode == 2 and b"directory" in r.stderr
    r = rfs_bytes(rfsd, "put", "--resume", "-", rfsd.url("/x"), stdin=b"x")
    assert r.returncode == 2 and b"--resume" in r.stderr
    # A failed put from stdin (the directory it goes to is missing) leaves nothing behind.
    r = rfs_bytes(rfsd, "put", "-", rfsd.url("/missing/x"), stdin=b"x")
    assert r.returncode == 1 and b"/missing" in r.stderr
    assert sorted(os.listdir(rfsd.root)) == ["dir", "in.bin"]


def test_no_clobber_and_force(rfsd, tmp_path):
    (rfsd.root / "there").write_bytes(b"remote")
    src = tmp_path / "src"
    src.write_bytes(b"local")
    line = one_line_error(rfs(rfsd, "put", "-n", src, rfsd.url("/there")))
    assert "exists" in line and "--no-clobber" in line
    assert (rfsd.root / "there").read_bytes() == b"remote"
    ok(rfs(rfsd, "put", "-n", "-f", src, rfsd.url("/there")))          # the last one counts
    assert (rfsd.root / "there").read_bytes() == b"local"
    ok(rfs(rfsd, "put", "--no-clobber", src, rfsd.url("/new")))       # absent: copied
    assert (rfsd.root / "new").read_bytes() == b"local"
    dst = tmp_path / "dst"
    dst.write_bytes(b"mine")
    line = one_line_error(rfs(rfsd, "get", "-n", rfsd.url("/there"), dst))
    assert "exists" in line
    assert dst.read_bytes() == b"mine"
    ok(rfs(rfsd, "get", rfsd.url("/there"), dst))
    assert dst.read_bytes() == b"local"
    r = rfs_bytes(rfsd, "put", "-n", "-", rfsd.url("/there"), stdin=b"stdin")
    assert r.returncode == 1 and (rfsd.root / "there").read_bytes() == b"local"


def test_mv(rfsd):
    (rfsd.root / "a.txt").write_bytes(b"A")
    (rfsd.root / "d").mkdir()
    ok(rfs(rfsd, "mv", rfsd.url("/a.txt"), "/b.txt"))
    assert not (rfsd.root / "a.txt").exists() and (rfsd.root / "b.txt").read_bytes() == b"A"
    ok(rfs(rfsd, "mv", rfsd.url("/b.txt"), rfsd.url("/d")))          # into a directory
    assert (rfsd.root / "d" / "b.txt").read_bytes() == b"A"
    (rfsd.root / "c.txt").write_bytes(b"C")
    line = one_line_error(rfs(rfsd, "mv", "-n", rfsd.url("/c.txt"), "/d/b.txt"))
    assert "exists" in line and (rfsd.root / "c.txt").exists()
    ok(rfs(rfsd, "mv", rfsd.url("/c.txt"), "/d/b.txt"))               # replaces, like mv
    assert (rfsd.root / "d" / "b.txt").read_bytes() == b"C"
    line = one_line_error(rfs(rfsd, "mv", rfsd.url("/d/b.txt"), "rfs:127.0.0.1:1:/x"), status=2)
    assert "another server" in line
    line = one_line_error(rfs(rfsd, "mv", rfsd.url("/d/b.txt"), "relative"), status=2)
    assert "absolute" in line
    line = one_line_error(rfs(rfsd, "mv", rfsd.url("/none"), "/x"))
    assert "/none" in line


def test_du_counts_and_formats(rfsd):
    for d, sizes in {"": [10], "a": [100, 200], "a/b": [4000], "c": []}.items():
        (rfsd.root / d).mkdir(exist_ok=True, parents=True)
        for i, s in enumerate(sizes):
            (rfsd.root / d / f"f{i}").write_bytes(b"x" * s)
    out = ok(rfs(rfsd, "du", rfsd.url("/"))).stdout.splitlines()
    assert out == ["4000\t/a/b", "4300\t/a", "0\t/c", "4310\t/"]
    assert ok(rfs(rfsd, "du", "-s", "-H", rfsd.url("/a"))).stdout == "4.2K\t/a\n"
    doc = json.loads(ok(rfs(rfsd, "du", "--json", rfsd.url("/"))).stdout)
    total = doc["entries"][-1]
    assert total == {"path": "/", "bytes": 4310, "files": 4, "directories": 3}
    assert ok(rfs(rfsd, "du", rfsd.url("/a/f1"))).stdout == "200\t/a/f1\n"   # a file
    line = one_line_error(rfs(rfsd, "du", rfsd.url("/nope")))
    assert "/nope" in line


def test_ls_and_stat_json_and_human(rfsd):
    (rfsd.root / "big").write_bytes(b"x" * (3 << 20))
    (rfsd.root / "sub").mkdir()
    weird = b"bad\xffname\x1b[31m"
    (rfsd.root / os.fsdecode(weird)).write_bytes(b"12")
    doc = json.loads(ok(rfs(rfsd, "ls", "--json", rfsd.url("/"))).stdout)
    assert doc["path"] == "/" and doc["server"] == f"{rfsd.host}:{rfsd.port}"
    by = {e["name"]: e for e in doc["entries"]}
    assert by["big"]["size"] == 3 << 20 and by["big"]["type"] == "file"
    assert by["sub"]["type"] == "directory"
    # The invalid byte survives as surrogateescape; the escape character is \u001b, not raw.
    names = [n.encode("utf-8", "surrogateescape") for n in by]
    assert weird in names
    st = json.loads(ok(rfs(rfsd, "stat", "--json", rfsd.url("/big"))).stdout)
    assert st["size"] == 3 << 20 and st["type"] == "file" and st["path"] == "/big"
    assert st["mtime_ns"] == os.stat(rfsd.root / "big").st_mtime_ns
    human = ok(rfs(rfsd, "ls", "-l", "-H", rfsd.url("/"))).stdout
    assert any(line.startswith("-   3.0M") and line.endswith(" big") for line in human.splitlines())
    assert "\x1b" not in human


def test_verbose_and_debug(rfsd):
    (rfsd.root / "f").write_bytes(b"1")
    r = ok(rfs(rfsd, "--debug", "stat", rfsd.url("/f")))
    assert "rfs trace" in r.stderr and "STAT" in r.stderr
    r = ok(rfs(rfsd, "stat", "-v", rfsd.url("/f")))
    assert "rfs trace" not in r.stderr
    assert ok(rfs(rfsd, "stat", rfsd.url("/f"))).stderr == ""
