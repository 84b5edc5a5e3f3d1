# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""`rfs cp -r` over several connections (what --streams auto chooses on a long link; forced here
with --streams 4 on loopback): the whole-file batches are shared by the connections, the remote
tree's directories are made in one pipelined MKDIR batch, and a level of remote subdirectories
is listed in one pipelined LIST batch. The bytes, modes and the tree's shape must come out as
with one connection."""
import os
import stat
import subprocess

from conftest import binary, tree_contents as tree


def rfs(srv, *args):
    return subprocess.run([binary("rfs"), *map(str, args)], env=srv.env(), capture_output=True,
                          text=True, timeout=120)


def make(src, n=700):
    for i in range(n):
        p = src / f"d{i % 9}" / f"s{i % 4}" / f"t{i % 2}" / f"f{i}.dat"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(os.urandom(i * 37 % 9000))
        os.chmod(p, 0o600 if i % 3 == 0 else 0o644)
    (src / "empty-dir" / "deeper").mkdir(parents=True)


def test_put_and_get_tree_over_four_connections(rfsd, tmp_path):
    src = tmp_path / "src"
    make(src)
    r = rfs(rfsd, "--debug", "cp", "-r", "--streams", "4", src, rfsd.url("/up"))
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("send WRITE_FILE") == 700
    # one MKDIR per directory, none twice: the top, 9 d*, 36 (d, s) and 36 (d, s, t) pairs (i
    # mod 36 fixes all three), empty-dir and its child
    dirs = [k for k in tree(src) if k.endswith("/")]
    assert len(dirs) == 9 + 36 + 36 + 2
    assert r.stderr.count("send MKDIR") == len(dirs) + 1
    assert tree(rfsd.root / "up") == tree(src)
    assert stat.S_IMODE(os.stat(rfsd.root / "up" / "d0" / "s0" / "t0" / "f0.dat").st_mode) == 0o600
    back = tmp_path / "back"
    r = rfs(rfsd, "--debug", "cp", "-r", "--streams", "4", rfsd.url("/up"), back)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("send READ_FILE") == 700
    assert tree(back) == tree(src)
    assert not [p for p in os.listdir(rfsd.root / "up") if ".rfs-" in p]


def test_put_into_read_only_spot_reports_every_file(rfsd, tmp_path):
    """A level of MKDIRs that fails leaves the rest to the ordinary walk, which reports it."""
    src = tmp_path / "src"
    make(src, n=80)
    (rfsd.root / "up").write_bytes(b"a file where the tree should go")
    r = rfs(rfsd, "cp", "-r", "--streams", "4", src, rfsd.url("/up"))
    assert r.returncode == 1
    assert "up" in r.stderr
    assert (rfsd.root / "up").read_bytes() == b"a file where the tree should go"


def test_tree_of_several_batches(rfsd, tmp_path):
    """9000 small files through one fed batch (cli/tree_feed.c): read while earlier ones are on
    the wire (put), installed as they arrive (get). Every file arrives once, whole."""
    src = tmp_path / "src"
    for i in range(9000):
        p = src / f"d{i % 30}" / f"f{i}.dat"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(i.to_bytes(4, "little") * (1 + i % 50))
    r = rfs(rfsd, "--debug", "cp", "-r", "--streams", "2", src, rfsd.url("/many"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.count("send WRITE_FILE") == 9000
    assert tree(rfsd.root / "many") == tree(src)
    back = tmp_path / "back"
    r = rfs(rfsd, "--debug", "cp", "-r", "--streams", "2", rfsd.url("/many"), back)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.count("send READ_FILE") == 9000
    assert tree(back) == tree(src)
    assert not [p for p in os.listdir(back / "d0") if ".rfs-" in p]


MKDIR_PARENTS = 0x10000


def test_mkdir_with_parents_on_the_wire(rfsd):
    """MKDIR with RFS_MKDIR_PARENTS makes the missing ancestors (an existing one is fine), any
    order of such requests works, the last component existing is still EXIST, and it climbs out
    of the export no more than a plain MKDIR: a symlink to outside and `..` are refused; a file
    in the way is NOTDIR; the flag means nothing to CHMOD (INVAL)."""
    from rfswire import E, b_mkdir, session
    outside = rfsd.root.parent / "outside"
    outside.mkdir()
    (rfsd.root / "esc").symlink_to(outside)
    (rfsd.root / "afile").write_bytes(b"x")
    with session(rfsd) as c:
        rep = c.call("MKDIR", b_mkdir("/p/q/r/s", 0o750 | MKDIR_PARENTS))
        assert rep.status == 0, rep.error()
        assert (rfsd.root / "p" / "q" / "r" / "s").is_dir()
        rep = c.call("MKDIR", b_mkdir("/p/q/other", 0o755 | MKDIR_PARENTS))
        assert rep.status == 0 and (rfsd.root / "p" / "q" / "other").is_dir()
        assert c.call("MKDIR", b_mkdir("/p/q", 0o755 | MKDIR_PARENTS)).status == E["EXIST"]
        for bad in ("/esc/x/y", "/../up/x", "/p/../../x"):
            rep = c.call("MKDIR", b_mkdir(bad, 0o755 | MKDIR_PARENTS))
            assert rep.status != 0, bad
        assert list(outside.iterdir()) == []
        assert not (rfsd.root.parent / "up").exists() and not (rfsd.root.parent / "x").exists()
        rep = c.call("MKDIR", b_mkdir("/afile/x/y", 0o755 | MKDIR_PARENTS))
        assert rep.status == E["NOTDIR"], rep.status
        rep = c.call("CHMOD", b_mkdir("/p", 0o755 | MKDIR_PARENTS))
        assert rep.status == E["INVAL"], rep.status
    # pipelined, deepest first: each request makes what it needs
    with session(rfsd) as c:
        ids = [c.send("MKDIR", b_mkdir(f"/deep/{'/'.join('l%d' % k for k in range(d))}",
                                       0o755 | MKDIR_PARENTS)) for d in range(12, 0, -1)]
        got = {}
        for _ in ids:
            rep = c.recv()
            got[rep.req_id] = rep.status
        assert all(got[i] in (0, E["EXIST"]) for i in ids), got
        assert (rfsd.root / "deep").joinpath(*[f"l{k}" for k in range(12)]).is_dir()
