# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""LIST_TREE (docs/protocol.md "LIST_TREE"): a directory's listing and its descendants',
breadth first, whole directories only, within the client's byte budget; never through a
symlink, never outside the export. `rfs cp -r` of a remote tree asks for one and lists only
the directories it did not cover; against a server without the op it lists as before. The
trees come out byte for byte either way."""
import os
import subprocess

import pytest

from conftest import binary, tree_contents
from rfswire import E, RfsError, b_list_tree, parse_list_tree, session
from test_cli_tree_feed import OlderServer

FEAT_LTREE = 0x2000


def make(root, dirs, files, size=50):
    for d in range(dirs):
        for f in range(files):
            p = root / f"d{d:02d}" / f"f{f:03d}.bin"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(os.urandom(size + d * 7 + f))


def test_whole_directories_breadth_first_within_budget(rfsd):
    t = rfsd.root / "t"
    make(t, 6, 20)
    (t / "d00" / "deep" / "deeper").mkdir(parents=True)
    (t / "d00" / "deep" / "deeper" / "x").write_bytes(b"x")
    with session(rfsd) as c:
        blocks = parse_list_tree(c.call("LIST_TREE", b_list_tree("/t")).check().body)
        dirs = [rel for rel, _ in blocks]
        assert dirs[0] == ""  # the listed directory first
        assert sorted(dirs) == sorted([""] + [f"d{d:02d}" for d in range(6)] +
                                      ["d00/deep", "d00/deep/deeper"])
        assert dirs.index("d00/deep") > max(dirs.index(f"d{d:02d}") for d in range(6))
        for rel, entries in blocks:  # every block is its directory's whole listing
            assert sorted(e["name"] for e in entries) == sorted(os.listdir(t / rel))
        # a budget of a few hundred bytes: the top only, or nothing that does not fit
        small = parse_list_tree(c.call("LIST_TREE", b_list_tree("/t", 400)).check().body)
        assert [rel for rel, _ in small] == [""]
        tiny = parse_list_tree(c.call("LIST_TREE", b_list_tree("/t", 40)).check().body)
        assert tiny == []  # not even the top fits: the client lists it itself
        sizes = [len(c.call("LIST_TREE", b_list_tree("/t", b)).check().body)
                 for b in (1000, 3000, 6000)]
        assert all(s <= b for s, b in zip(sizes, (1000, 3000, 6000))) and sizes[0] < sizes[2]


def test_never_through_links_or_outside(rfsd, tmp_path):
    outside = tmp_path / "outside"
    (outside / "secret").mkdir(parents=True)
    (outside / "secret" / "key").write_bytes(b"k")
    t = rfsd.root / "t"
    make(t, 2, 3)
    os.symlink(outside, t / "out")
    os.symlink(t / "d00", t / "loop")
    with session(rfsd) as c:
        blocks = parse_list_tree(c.call("LIST_TREE", b_list_tree("/t")).check().body)
        dirs = [rel for rel, _ in blocks]
        assert sorted(dirs) == ["", "d00", "d01"]  # links are listed, never entered
        top = {e["name"]: e["type"] for e in blocks[0][1]}
        assert top["out"] == 3 and top["loop"] == 3
        for bad, err in (("/t/../..", "ACCESS"), ("/t/d00/f000.bin", "NOTDIR"),
                         ("/nope", "NOENT"), ("/t/out", None)):
            r = c.call("LIST_TREE", b_list_tree(bad))
            assert r.status != 0, bad
            if err:
                assert r.status == E[err], (bad, r.error())


def copy(srv_url_env, *args):
    env = {**srv_url_env, "RFS_TRACE": "1"}
    p = subprocess.run([binary("rfs"), *map(str, args)], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    sent = [ln.split()[5] for ln in p.stderr.splitlines()
            if ln.startswith("rfs trace") and ln.split()[4] == "send"]
    return sent


@pytest.mark.parametrize("dirs,files", [(3, 5), (40, 30)], ids=["fits", "larger"])
def test_tree_get_lists_only_what_the_tree_did_not_cover(rfsd, tmp_path, dirs, files):
    make(rfsd.root / "t", dirs, files)
    (rfsd.root / "t" / "d00" / "empty").mkdir()  # an empty block is a listing too
    sent = copy(rfsd.env(), "cp", "-r", "--quiet", rfsd.url("/t"), tmp_path / "back")
    assert (tmp_path / "back" / "d00" / "empty").is_dir()
    assert tree_contents(tmp_path / "back") == tree_contents(rfsd.root / "t")
    assert sent.count("LIST_TREE") == 1
    if dirs == 3:
        assert sent.count("LIST") == 0  # one request listed the whole tree
    else:  # the first reply held the top and a few directories; the rest were listed once
        assert 0 < sent.count("LIST") < dirs, sent.count("LIST")
    assert sent.count("READ_FILE") == dirs * files


def test_tree_get_of_a_source_longer_than_the_first_reply(rfsd, tmp_path):
    """A source whose own listing does not fit the first reply's budget (600 entries, about
    22 KB against 12 KiB) comes back with no block: it is listed the ordinary way, and every
    file arrives (an empty reply must never read as an empty directory)."""
    t = rfsd.root / "t"
    t.mkdir()
    for i in range(600):
        (t / f"file-{i:05d}.dat").write_bytes(os.urandom(10 + i % 50))
    make(t / "sub", 2, 3)
    sent = copy(rfsd.env(), "cp", "-r", "--quiet", rfsd.url("/t"), tmp_path / "back")
    assert tree_contents(tmp_path / "back") == tree_contents(t)
    assert sent.count("LIST_TREE") == 1 and sent.count("READ_FILE") == 606
    assert sent.count("LIST") >= 1


def test_tree_get_from_a_server_without_the_op(rfsd, tmp_path):
    make(rfsd.root / "t", 4, 6)
    relay = OlderServer(rfsd, hide=FEAT_LTREE)
    try:
        sent = copy(rfsd.env(), "cp", "-r", "--quiet", relay.url("/t"), tmp_path / "back")
    finally:
        relay.close()
    assert relay.hellos >= 1
    assert tree_contents(tmp_path / "back") == tree_contents(rfsd.root / "t")
    assert sent.count("LIST_TREE") == 0 and sent.count("LIST") == 5
