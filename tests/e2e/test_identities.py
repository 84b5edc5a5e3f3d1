# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Identities and named exports (issue #13 item 3): rights per identity and export, exports
isolated from each other, revocation by SIGHUP, the audit log and hostile configurations."""
import os
import re
import struct

import pytest

from multi_server import MultiServer, start_fails
from rfswire import (E, O_CREAT, O_EXCL, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY, Conn, RfsError,
                     b_list, b_mkdir, b_open, b_path, b_rename, b_write_file, parse_list)

CHMOD_BODY = struct.Struct("<I")


@pytest.fixture
def srv(tmp_path):
    # alice: read-write on a, read-only on b; bob: read-only on a; carol: only b
    s = MultiServer(tmp_path, {"a": None, "b": None},
                    {"alice": "a:rw,b:ro", "bob": "a:ro", "carol": "b:rw"})
    yield s
    assert s.stop() == 0, s.proc.stderr.read()[-3000:]


def snapshot(d):
    """Every entry beneath d: (relative path, mode, content or None for directories)."""
    out = {}
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            out[os.path.relpath(p, d)] = (st.st_mode, None if n in dirs else open(p, "rb").read())
    return out


def test_read_only_identity_cannot_change_anything_but_can_read(srv):
    a = srv.dirs["a"]
    (a / "f.dat").write_bytes(b"original bytes")
    (a / "d").mkdir()
    before = snapshot(a)
    with srv.connect("bob") as c:
        refused = {
            "open for writing": c.call("OPEN", b_open("/a/f.dat", O_WRONLY)),
            "open read-write": c.call("OPEN", b_open("/a/f.dat", O_RDWR)),
            "truncate": c.call("OPEN", b_open("/a/f.dat", O_WRONLY | O_TRUNC)),
            "create": c.call("OPEN", b_open("/a/new.dat", O_WRONLY | O_CREAT)),
            "create read-only": c.call("OPEN", b_open("/a/new2.dat", O_RDONLY | O_CREAT | O_EXCL)),
            "write file": c.call("WRITE_FILE", b_write_file("/a/f.dat", b"evil")),
            "delete": c.call("DELETE", b_path("/a/f.dat")),
            "rename": c.call("RENAME", b_rename("/a/f.dat", "/a/g.dat")),
            "mkdir": c.call("MKDIR", b_mkdir("/a/newdir")),
            "chmod": c.call("CHMOD", CHMOD_BODY.pack(0o777) + b_path("/a/f.dat")),
            "rmdir": c.call("DELETE", b_path("/a/d")),
        }
        for what, rep in refused.items():
            assert rep.status == E["ROFS"], (what, rep.status)
            msg = rep.error().msg
            assert "identity bob" in msg and "export a" in msg and "read-only" in msg, (what, msg)
        # reading works
        fh = c.open("/a/f.dat", O_RDONLY)
        assert c.pread(fh, 0, 100) == b"original bytes"
        c.close_fh(fh)
        names = sorted(e["name"] for e in parse_list(c.call("LIST", b_list("/a")).check().body)[0])
        assert names == ["d", "f.dat"]
        assert c.stat("/a/f.dat")["size"] == 14
    assert snapshot(a) == before


def test_read_write_identity_can(srv):
    a = srv.dirs["a"]
    with srv.connect("alice") as c:
        fh = c.open("/a/new.dat", O_WRONLY | O_CREAT)
        assert c.pwrite(fh, 0, b"hello") == 5
        c.close_fh(fh)
        c.call("MKDIR", b_mkdir("/a/sub")).check()
        c.call("RENAME", b_rename("/a/new.dat", "/a/sub/moved.dat")).check()
        c.call("CHMOD", CHMOD_BODY.pack(0o600) + b_path("/a/sub/moved.dat")).check()
        c.call("WRITE_FILE", b_write_file("/a/whole.dat", b"whole")).check()
        fh = c.open("/a/whole.dat", O_RDWR | O_TRUNC)
        c.close_fh(fh)
        c.call("DELETE", b_path("/a/whole.dat")).check()
    assert (a / "sub" / "moved.dat").read_bytes() == b"hello"
    assert (a / "sub" / "moved.dat").stat().st_mode & 0o777 == 0o600
    assert not (a / "whole.dat").exists() and not (a / "new.dat").exists()


def test_exports_are_isolated(srv):
    a, b = srv.dirs["a"], srv.dirs["b"]
    (b / "secret.dat").write_bytes(b"b's data")
    (a / "abs_link").symlink_to(b)                       # absolute link to the other export
    (a / "rel_link").symlink_to(os.path.relpath(b, a))   # relative link climbing out
    with srv.connect("alice") as c:
        for path in ("/a/../b/secret.dat", "/a/abs_link/secret.dat", "/a/rel_link/secret.dat",
                     "/a/../../exports/b/secret.dat"):
            rep = c.call("OPEN", b_open(path, O_RDONLY))
            assert rep.status == E["ACCESS"], (path, rep.status)
            assert "escapes" in rep.error().msg or "symbolic" in rep.error().msg, rep.error().msg
            rep = c.call("DELETE", b_path(path))
            assert rep.status == E["ACCESS"], (path, rep.status)
        # alice reads b (read-only for her) but cannot write it
        fh = c.open("/b/secret.dat", O_RDONLY)
        assert c.pread(fh, 0, 64) == b"b's data"
        c.close_fh(fh)
        rep = c.call("OPEN", b_open("/b/secret.dat", O_WRONLY))
        assert rep.status == E["ROFS"] and "export b is read-only for identity alice" in \
            rep.error().msg
        # a rename between exports is refused even where both sides are writable for carol
        (a / "mine.dat").write_bytes(b"mine")
        rep = c.call("RENAME", b_rename("/a/mine.dat", "/b/mine.dat"))
        assert rep.status in (E["ROFS"], E["ACCESS"])
        # unknown export, and the top level cannot be written
        rep = c.call("OPEN", b_open("/nosuch/x", O_RDONLY))
        assert rep.status == E["NOENT"] and "no export named 'nosuch'" in rep.error().msg
        rep = c.call("MKDIR", b_mkdir("/newexport"))
        assert rep.status == E["NOENT"]
        assert c.call("DELETE", b_path("/a")).status != 0 and a.exists()
        # "/" lists the exports alice may use
        names = sorted(e["name"] for e in parse_list(c.call("LIST", b_list("/")).check().body)[0])
        assert names == ["a", "b"]
        assert c.stat("/")["type"] == 2
    with srv.connect("carol") as c:
        rep = c.call("OPEN", b_open("/a/mine.dat", O_RDONLY))
        assert rep.status == E["ACCESS"]
        assert "identity carol has no access to export a" in rep.error().msg
        names = [e["name"] for e in parse_list(c.call("LIST", b_list("/")).check().body)[0]]
        assert names == ["b"]
        (b / "c.dat").write_bytes(b"c")
        rep = c.call("RENAME", b_rename("/b/c.dat", "/a/c.dat"))
        assert rep.status == E["ACCESS"]
    with srv.connect("alice") as c:
        (b / "x.dat").write_bytes(b"x")
        # alice may write a and read b: moving a's file into b needs b writable (ROFS); b's file
        # into a is a rename across exports (ACCESS), naming both
        rep = c.call("RENAME", b_rename("/a/mine.dat", "/b/x2.dat"))
        assert rep.status == E["ROFS"]
    assert (a / "mine.dat").read_bytes() == b"mine" and (b / "c.dat").read_bytes() == b"c"
    assert (b / "secret.dat").read_bytes() == b"b's data"


def test_rename_across_writable_exports_is_refused(tmp_path):
    s = MultiServer(tmp_path, {"a": None, "b": None}, {"root": "*:rw"})
    try:
        (s.dirs["a"] / "f").write_bytes(b"data")
        with s.connect("root") as c:
            rep = c.call("RENAME", b_rename("/a/f", "/b/f"))
            assert rep.status == E["ACCESS"], rep.status
            assert "different exports (a, b)" in rep.error().msg
            c.call("RENAME", b_rename("/a/f", "/a/g")).check()
        assert (s.dirs["a"] / "g").read_bytes() == b"data" and not (s.dirs["b"] / "f").exists()
    finally:
        assert s.stop() == 0


def test_revocation_by_sighup_while_another_identity_keeps_writing(srv):
    a = srv.dirs["a"]
    chunk = os.urandom(1 << 20)
    with srv.connect("alice") as writer, srv.connect("bob") as reader:
        fh = writer.open("/a/long.dat", O_WRONLY | O_CREAT)
        for i in range(4):
            assert writer.pwrite(fh, i * len(chunk), chunk) == len(chunk)
        assert reader.stat("/a/long.dat")["size"] == 4 << 20
        # bob is removed from the configuration
        del srv.identities["bob"]
        srv.write_config()
        line = srv.reload_lines()[-1]
        assert "1 connection(s) of removed or changed identities closed" in line, line
        assert reader.peer_closed()
        # bob's token is refused from now on
        with Conn(srv.host, srv.port) as again:
            h = again.hello()
            with pytest.raises(RfsError) as ei:
                again.auth(srv.tokens["bob"], h["nonce"])
            assert ei.value.status == E["AUTH"]
        # alice's connection and handle carry on across the reload
        for i in range(4, 8):
            assert writer.pwrite(fh, i * len(chunk), chunk) == len(chunk)
        writer.close_fh(fh)
    assert (a / "long.dat").read_bytes() == chunk * 8
    assert srv.rfs("alice", "ls", srv.url("/a")).returncode == 0
    # a changed token (rotation) closes that identity's connections too; others stay
    with srv.connect("alice") as old_alice, srv.connect("carol") as c:
        srv.tokens["alice"] = os.urandom(16).hex()
        srv.write_config()
        line = srv.reload_lines()[-1]
        assert "1 connection(s)" in line, line
        assert old_alice.peer_closed()
        assert c.call("PING", b"still here").check().body == b"still here"
        assert srv.rfs("alice", "ls", srv.url("/a")).returncode == 0


def test_reload_with_a_broken_configuration_changes_nothing(srv):
    with srv.connect("bob") as c:
        srv.conf.write_text(srv.conf.read_text() + "identity bob2 token-file=/nonexistent\n")
        lines = srv.reload_lines()
        assert "previous identities stay in force" in lines[-1], lines
        assert c.call("PING", b"x").check().body == b"x"
        assert srv.rfs("bob", "ls", srv.url("/a")).returncode == 0
        # a token file that went away revokes that identity alone
        srv.write_config()
        srv.token_file("carol").unlink()
        lines = srv.reload_lines()
        assert any("identity carol" in ln and "left out" in ln for ln in lines), lines
        assert "2 identities loaded" in lines[-1], lines
        assert c.call("PING", b"y").check().body == b"y"
    r = srv.rfs("carol", "ls", srv.url("/b"))
    assert r.returncode != 0 and "token" in r.stderr, r.stderr


def test_audit_log(srv):
    with srv.connect("alice") as c:
        fh = c.open("/a/audited.dat", O_WRONLY | O_CREAT)
        c.pwrite(fh, 0, b"x" * 1000)
        c.close_fh(fh)
        c.call("RENAME", b_rename("/a/audited.dat", "/a/renamed.dat")).check()
        c.call("DELETE", b_path("/a/renamed.dat")).check()
        c.call("MKDIR", b_mkdir("/a/d")).check()
        port = c.sock.getsockname()[1]
    with srv.connect("bob") as c:
        assert c.call("DELETE", b_path("/a/d")).status == E["ROFS"]
        evil = "/a/x\"\nforged identity=root"
        c.call("OPEN", b_open(evil, O_RDONLY))
    with Conn(srv.host, srv.port) as bad:
        h = bad.hello()
        with pytest.raises(RfsError):
            bad.auth("not-a-known-token-0123456789", h["nonce"])
    lines = srv.audit_lines()
    iso = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"
    peer = f"127.0.0.1:{port}"
    want = [
        rf"^{iso} identity=alice peer={peer} op=AUTH result=ok$",
        rf"^{iso} identity=alice peer={peer} op=OPEN flags=w,create path=\"/a/audited.dat\" "
        r"result=ok$",
        rf"^{iso} identity=alice peer={peer} op=RENAME path=\"/a/audited.dat\" "
        r"to=\"/a/renamed.dat\" result=ok$",
        rf"^{iso} identity=alice peer={peer} op=DELETE path=\"/a/renamed.dat\" result=ok$",
        rf"^{iso} identity=alice peer={peer} op=MKDIR path=\"/a/d\" result=ok$",
        rf"^{iso} identity=bob peer=\S+ op=DELETE path=\"/a/d\" result=ROFS msg=\".*read-only"
        r".*\"$",
        rf"^{iso} identity=bob peer=\S+ op=OPEN flags=r path=\"/a/x\\\"\\x0aforged "
        r"identity=root\" result=NOENT msg=",
        rf"^{iso} identity=- peer=\S+ op=AUTH result=AUTH$",
    ]
    for w in want:
        assert any(re.search(w, ln) for ln in lines), (w, lines)
    assert not any(ln.startswith("forged") for ln in lines)
    assert not any("PWRITE" in ln or "CLOSE" in ln for ln in lines)  # data ops are not logged


def test_cli_with_exports(srv, tmp_path):
    src = tmp_path / "in.dat"
    src.write_bytes(os.urandom(300000))
    r = srv.rfs("alice", "put", str(src), srv.url("/a/out.dat"))
    assert r.returncode == 0, r.stderr
    assert (srv.dirs["a"] / "out.dat").read_bytes() == src.read_bytes()
    r = srv.rfs("alice", "ls", srv.url("/"))
    assert r.returncode == 0, r.stderr
    assert sorted(ln.split()[-1] for ln in r.stdout.splitlines()) == ["a", "b"], r.stdout
    r = srv.rfs("bob", "put", str(src), srv.url("/a/bob.dat"))
    assert r.returncode != 0 and "read-only for identity bob" in r.stderr, r.stderr
    assert not (srv.dirs["a"] / "bob.dat").exists()
    r = srv.rfs("bob", "get", srv.url("/a/out.dat"), str(tmp_path / "back.dat"))
    assert r.returncode == 0 and (tmp_path / "back.dat").read_bytes() == src.read_bytes()


@pytest.mark.parametrize("lines,words", [
    (["export a {d}", "identity x token-file={t} exports=a:rw colour=blue"], "colour=blue"),
    (["export a {d}", "export a {d}", "identity x token-file={t} exports=a:rw"],
     "two exports are named 'a'"),
    (["export a {d}", "identity x token-file={t} exports=a:rw",
      "identity x token-file={t2} exports=a:ro"], "same name"),
    (["export a {d}", "identity x token-file={t} exports=a:rw",
      "identity y token-file={t} exports=a:ro"], "same token"),
    (["export a {d}", "identity x token-file={missing} exports=a:rw"], "No such file"),
    (["export a {d}/nonexistent", "identity x token-file={t} exports=a:rw"], "export a:"),
    (["export a {d}", "identity x token-file={t} exports=b:rw"], "no export named 'b'"),
    (["export a {d}", "identity x token-file={t} exports=a:rx"], "expected EXPORT:rw"),
    (["export a {d}", "identity x token-file={t}"], "needs token-file=FILE and exports"),
    (["export a/b {d}", "identity x token-file={t} exports=*:rw"], "expected 'NAME DIR"),
    (["export a {d} quota=lots", "identity x token-file={t} exports=a:rw"], "quota=lots"),
    (["root = {d}", "export a {d}", "identity x token-file={t} exports=a:rw"],
     "--root and --export exclude"),
    (["export a {d}", "token-file = {t}", "identity x token-file={t2} exports=a:rw"],
     "exclude each other"),
    (["export a {d}", "identity x token-file={short} exports=a:rw"], "at least 16"),
    (["export a {d}", "colour = blue"], "unknown or incomplete option"),
])
def test_hostile_configuration_is_refused_at_start(tmp_path, lines, words):
    d = tmp_path / "dir"
    d.mkdir()
    t, t2, short = tmp_path / "t", tmp_path / "t2", tmp_path / "short"
    t.write_text("a" * 32)
    t2.write_text("b" * 32)
    short.write_text("tiny")
    for f in (t, t2, short):
        f.chmod(0o600)
    subst = dict(d=d, t=t, t2=t2, short=short, missing=tmp_path / "missing")
    err = start_fails(tmp_path, [ln.format(**subst) for ln in lines])
    assert words in err, err


def test_single_token_setup_is_unchanged(rfsd):
    """No --export or --identity: paths are beneath --root, and the one identity may do all."""
    (rfsd.root / "x").write_bytes(b"x")
    from rfswire import session
    with session(rfsd) as c:
        names = [e["name"] for e in parse_list(c.call("LIST", b_list("/")).check().body)[0]]
        assert names == ["x"]
        c.call("DELETE", b_path("/x")).check()
    assert not (rfsd.root / "x").exists()
