# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""rfsd never reads, writes, creates or deletes anything outside its export root: `..`, absolute
symlinks, symlinks to a parent and symlink chains are refused with RFS_E_ACCESS, and the files
outside are checked byte for byte afterwards. Messages never reveal the real root path."""
import os

import pytest

from rfswire import rfsd_exits_cleanly  # noqa: F401 (autouse fixture)
from rfswire import (E, O_CREAT, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY, b_list, b_mkdir, b_open,
                     b_path, b_rename, session)

SECRET = b"outside-the-export: do not touch\n"


@pytest.fixture
def jail(rfsd):
    outside = rfsd.root.parent / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(SECRET)
    r = rfsd.root
    (r / "inside").write_bytes(b"in")
    (r / "sub").mkdir()
    os.symlink(str(outside / "secret"), r / "abs")                # absolute symlink
    os.symlink("../outside", r / "up")                             # relative, climbs out
    os.symlink("..", r / "sub" / "parent")                         # to a parent (stays inside)
    os.symlink("..", r / "parent")                                 # to the root's parent
    os.symlink("chain2", r / "chain1")                             # chain ending outside
    os.symlink("sub/chain3", r / "chain2")
    os.symlink("../up/secret", r / "sub" / "chain3")
    os.symlink(str(r / "inside"), r / "abs_in")                    # absolute, even if it lands inside
    os.symlink("/proc/self/root/etc/passwd", r / "magic")
    before = {p: p.stat() for p in outside.iterdir()}
    yield rfsd, outside
    assert sorted(outside.iterdir()) == sorted(before), "entries appeared or vanished outside"
    assert (outside / "secret").read_bytes() == SECRET
    assert (outside / "secret").stat().st_mtime_ns == before[outside / "secret"].st_mtime_ns


ESCAPES = ["../outside/secret", "/../outside/secret", "sub/../../outside/secret", "abs",
           "up/secret", "parent/outside/secret", "sub/parent/parent/outside/secret", "chain1",
           "abs_in", "magic", "sub/chain3"]


def assert_refused(rep, root):
    assert rep.status == E["ACCESS"], (rep.status, rep.body)
    msg = rep.error().msg
    assert str(root) not in msg and str(root.parent) not in msg
    assert "escape" in msg or "link" in msg


@pytest.mark.parametrize("path", ESCAPES)
def test_open_escapes_refused(jail, path):
    srv, outside = jail
    with session(srv) as c:
        for flags in (O_RDONLY, O_RDWR, O_WRONLY | O_CREAT | O_TRUNC):
            assert_refused(c.call("OPEN", b_open(path, flags)), srv.root)
        assert_refused(c.call("STAT", b_path(path)), srv.root)


def test_create_through_escaping_dir_refused(jail):
    srv, outside = jail
    with session(srv) as c:
        for p in ["up/new", "../outside/new", "parent/outside/new", "/../new"]:
            assert_refused(c.call("OPEN", b_open(p, O_RDWR | O_CREAT)), srv.root)
            assert_refused(c.call("MKDIR", b_mkdir(p)), srv.root)
    assert not (srv.root.parent / "new").exists()


def test_namespace_escapes_refused(jail):
    srv, outside = jail
    with session(srv) as c:
        assert_refused(c.call("DELETE", b_path("up/secret")), srv.root)
        assert_refused(c.call("DELETE", b_path("../outside/secret")), srv.root)
        assert_refused(c.call("RENAME", b_rename("up/secret", "stolen")), srv.root)
        assert_refused(c.call("RENAME", b_rename("inside", "up/planted")), srv.root)
        assert_refused(c.call("RENAME", b_rename("inside", "../planted")), srv.root)
        assert_refused(c.call("LIST", b_list("up")), srv.root)
        assert_refused(c.call("LIST", b_list("parent")), srv.root)
        assert_refused(c.call("LIST", b_list("..")), srv.root)
    assert (srv.root / "inside").read_bytes() == b"in"
    assert not (srv.root / "stolen").exists()


def test_symlinks_themselves_are_names_inside(jail):
    """unlink/rename act on the link, never on its target."""
    srv, outside = jail
    with session(srv) as c:
        c.call("RENAME", b_rename("abs", "abs2")).check()
        c.call("DELETE", b_path("abs2")).check()
        c.call("DELETE", b_path("up")).check()
    assert not os.path.lexists(srv.root / "abs2")
    assert not os.path.lexists(srv.root / "up")


def test_dotdot_that_stays_inside_is_fine(jail):
    srv, outside = jail
    with session(srv) as c:
        fh = c.open("sub/../inside", O_RDONLY)
        assert c.pread(fh, 0, 10) == b"in"
        fh = c.open("sub/parent/inside", O_RDONLY)   # relative symlink to a parent inside
        assert c.pread(fh, 0, 10) == b"in"


def test_listing_shows_links_without_following(jail):
    srv, outside = jail
    from rfswire import TYPE_OTHER, parse_list
    with session(srv) as c:
        entries, nxt = parse_list(c.call("LIST", b_list("/")).check().body)
        by = {e["name"]: e for e in entries}
        assert by["abs"]["type"] == TYPE_OTHER
        assert nxt == 0
