# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""rfs put, get and cat of a .rfsm name go through the manifest layer as rfs cp does
(docs/manifest.md): a 2x2 striped file over 2 rfsd put, got and catted back byte for byte,
its objects on both servers' disks; --raw copies the manifest file itself; options only plain
files have are refused with a clear error, nothing made."""
import os
import subprocess

from conftest import binary
from test_manifest import TIMEOUT, cli, expected_objects, objects_on_disk, show, two  # noqa: F401


def out_bytes(g, *args):
    """rfs with its standard output as bytes (random data is no text)."""
    return subprocess.run([binary("rfs"), *map(str, args)], env=g.env(), capture_output=True,
                          timeout=TIMEOUT)


def test_put_get_cat_through_the_layer(two, tmp_path):
    ss = 64 << 10
    data = os.urandom(5 * ss * 2 + 1234)  # 10 units and a bit: both columns, both servers
    local = tmp_path / "in.bin"
    local.write_bytes(data)
    path = "/d/f.rfsm"
    r = cli(two.env(), "put", "--servers", two.servers_hint(), "--stripe-size", "64K",
            "--stripe-count", "2", "--replicas", "2", local, two.url(path))
    assert r.returncode == 0, r.stderr
    m = show(two, path)
    assert m["size"] == len(data) and m["extents"][0]["stripe_count"] == 2
    assert all(o["complete"] for o in m["objects"]) and len(m["objects"]) == 4
    on_disk = objects_on_disk(two, path)
    assert on_disk == expected_objects(data, path, ss, 2, 2, 2)
    assert {server for server, _ in on_disk} == {0, 1}

    back = tmp_path / "back.bin"
    r = cli(two.env(), "get", two.url(path), back)
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == data
    into = tmp_path / "dir"
    into.mkdir()
    r = cli(two.env(), "get", two.url(path), into)  # a directory: the remote name inside
    assert r.returncode == 0, r.stderr
    assert (into / "f.rfsm").read_bytes() == data

    c = out_bytes(two, "cat", two.url(path))
    assert c.returncode == 0, c.stderr
    assert c.stdout == data
    g = out_bytes(two, "get", two.url(path), "-")
    assert g.returncode == 0, g.stderr
    assert g.stdout == data

    # --raw: the manifest file's own bytes, as the home server holds them
    manifest_bytes = (two.root(0) / "d" / "f.rfsm").read_bytes()
    c = out_bytes(two, "cat", "--raw", two.url(path))
    assert c.returncode == 0 and c.stdout == manifest_bytes, c.stderr
    raw = tmp_path / "raw.rfsm"
    r = cli(two.env(), "get", "--raw", two.url(path), raw)
    assert r.returncode == 0, r.stderr
    assert raw.read_bytes() == manifest_bytes
    r = cli(two.env(), "put", "--raw", raw, two.url("/copy.rfsm"))
    assert r.returncode == 0, r.stderr
    assert (two.root(0) / "copy.rfsm").read_bytes() == manifest_bytes
    # the copy names the original's objects: deleting either would delete both's data
    assert "share them" in r.stderr and "/d/f.rfsm.c" in r.stderr, r.stderr
    r = cli(two.env(), "put", "--raw", raw, two.url(path))  # back under its own name: no warning
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    junk = tmp_path / "junk.rfsm"
    junk.write_bytes(b"not a manifest")
    r = cli(two.env(), "put", "--raw", junk, two.url("/junk.rfsm"))
    assert r.returncode == 0 and "not a manifest" in r.stderr, r.stderr
    r = cli(two.env(), "get", two.url("/copy.rfsm"), tmp_path / "via-copy.bin")
    assert r.returncode == 0, r.stderr  # the same objects, named by the copied manifest
    assert (tmp_path / "via-copy.bin").read_bytes() == data


def test_plain_only_options_refused(two, tmp_path):
    local = tmp_path / "in.bin"
    local.write_bytes(b"x" * 1000)
    for args in (["get", "--resume", two.url("/n.rfsm"), tmp_path / "o"],
                 ["get", "--verify", two.url("/n.rfsm"), tmp_path / "o"],
                 ["put", "--resume", local, two.url("/n.rfsm")],
                 ["cat", "--verify", two.url("/n.rfsm")],
                 ["put", "-", two.url("/n.rfsm")]):
        r = cli(two.env(), *args)
        assert r.returncode == 2, (args, r.stderr)
        assert ".rfsm" in r.stderr and "--raw" in r.stderr, r.stderr
    assert not (two.root(0) / "n.rfsm").exists() and not (tmp_path / "o").exists()


def test_tree_copies_take_logical_files_through_the_layer(two, tmp_path):
    """rfs cp -r: a .rfsm in the tree is copied as the logical file it names (its bytes, new
    objects at the destination), and the objects beside it are not copied as plain files
    (a stripe copied over the new object would corrupt it)."""
    ss = 64 << 10
    data = os.urandom(6 * ss + 77)
    local = tmp_path / "in.bin"
    local.write_bytes(data)
    r = cli(two.env(), "put", "--servers", two.servers_hint(), "--stripe-size", "64K",
            "--stripe-count", "2", local, two.url("/t/a.rfsm"))
    assert r.returncode == 0, r.stderr
    (two.root(0) / "t" / "plain.bin").write_bytes(b"plain")
    assert (two.root(0) / "t" / "a.rfsm.c0.r0").exists()   # home holds column 0 beside it

    got = tmp_path / "got"
    r = cli(two.env(), "cp", "-r", "-v", two.url("/t"), got)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in got.iterdir()) == ["a.rfsm", "plain.bin"]
    assert (got / "a.rfsm").read_bytes() == data and (got / "plain.bin").read_bytes() == b"plain"
    assert "left out" in r.stderr, r.stderr

    # back up to the server from a local tree that also holds a stray object file
    (got / "a.rfsm.c0.r0").write_bytes(b"stale stripe")
    r = cli(two.env(), "cp", "-r", got, two.url("/u"))
    assert r.returncode == 0, r.stderr
    m = show(two, "/u/a.rfsm")
    assert m["size"] == len(data)
    assert objects_on_disk(two, "/u/a.rfsm") == {(0, "/u/a.rfsm.c0.r0"): data}  # whole, not stale
    back = tmp_path / "back.bin"
    assert cli(two.env(), "get", two.url("/u/a.rfsm"), back).returncode == 0
    assert back.read_bytes() == data

    # server to server: an independent logical file, not a second manifest of t's objects
    r = cli(two.env(), "cp", "-r", two.url("/t"), two.url("/v", 1))
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (two.root(1) / "v").iterdir()) == [
        "a.rfsm", "a.rfsm.c0.r0", "plain.bin"]
    before = objects_on_disk(two, "/t/a.rfsm")
    r = cli(two.env(), "manifest", "show", "--json", two.url("/v/a.rfsm", 1))
    assert r.returncode == 0, r.stderr
    r = cli(two.env(), "get", two.url("/v/a.rfsm", 1), back)
    assert r.returncode == 0 and back.read_bytes() == data, r.stderr
    assert objects_on_disk(two, "/t/a.rfsm") == before
