# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Changing a logical file's replicas and the ranges an incomplete one misses (manifest/augment.c,
trim.c, ranges.c, docs/manifest.md "Augment and trim", "Consistency"): `rfs manifest augment`
adds a replica by a server-to-server copy and the file survives losing the original; it repairs
an incomplete replica whose recorded missing ranges are exactly what the writes after the
server's death covered; `trim` removes replicas and their objects, and refuses to remove the
last complete one; 4 MPI ranks writing interleaved ranges while a replica dies merge into one
manifest whose missing ranges are exactly right."""
import os
import signal
import struct
import subprocess

import pytest

from conftest import Server, binary
from mpiio_util import FLAVOURS, mpiexec_command, program, run_with_pause
from test_manifest import (TIMEOUT, TOKEN, cli, expected_objects, objects_on_disk, put, reseal,
                           show, tool)

MAX = 1 << 62  # a wholly suspect replica misses [0, 2^62)


class TpcGroup:
    """n rfsd on loopback sharing one token, each able to pull third-party copies (augment
    has the new replica's server copy from a complete one); a server can be killed and
    started again on its port and root."""

    def __init__(self, base, n):
        self.roots, self.servers = [], []
        for i in range(n):
            root = base / f"srv{i}" / "export"
            root.mkdir(parents=True)
            self.roots.append(root)
            self.servers.append(Server(root, token=TOKEN, extra=("--tpc", "on")))

    def server(self, i):
        s = self.servers[i]
        return f"rfs://{s.host}:{s.port}"

    def url(self, path, i=0):
        return self.server(i) + path

    def servers_hint(self, n=None):
        return ",".join(self.server(i) for i in range(n or len(self.servers)))

    def root(self, i):
        return self.roots[i]

    def env(self):
        return self.servers[0].env()

    def restart(self, i):
        old = self.servers[i]
        self.servers[i] = Server(self.roots[i], token=TOKEN, extra=("--tpc", "on"),
                                 listen=f"127.0.0.1:{old.port}")

    def stop(self):
        for s in self.servers:
            if s.proc.poll() is None:
                s.stop()


@pytest.fixture
def three(tmp_path):
    g = TpcGroup(tmp_path, 3)
    yield g
    g.stop()


@pytest.fixture
def two(tmp_path):
    g = TpcGroup(tmp_path, 2)
    yield g
    g.stop()


def manifest(g, *args):
    return cli(g.env(), "manifest", *map(str, args))


def write(g, path, data, tmp_path, ss, count, replicas, nservers=None):
    local = tmp_path / "in.bin"
    local.write_bytes(data)
    r = tool(g.env(), *put(g, path, local, ss, count, replicas, nservers))
    assert r.returncode == 0, r.stdout + r.stderr


def read_back(g, path, tmp_path):
    out = tmp_path / "out.bin"
    r = tool(g.env(), "get", g.url(path), out)
    assert r.returncode == 0, r.stdout + r.stderr
    return out.read_bytes()


def by_path(m):
    return {o["path"]: o for o in m["objects"]}


def test_augment_then_lose_the_original(three, tmp_path):
    """2 columns on servers 0 and 1, one replica each; augment on server 2 copies both there
    (server to server), the manifest names them; then server 1 is killed and the whole file
    still reads back, column 1 from its new replica."""
    ss = 64 << 10
    data = os.urandom(3 * (1 << 20) + 777)
    write(three, "/a/f.rfsm", data, tmp_path, ss, 2, 1, nservers=2)
    r = manifest(three, "augment", three.url("/a/f.rfsm"), "--server", three.server(2))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("new replica") == 2, r.stdout
    m = show(three, "/a/f.rfsm")
    assert m["extents"][0]["replicas"] == 2
    objs = by_path(m)
    assert set(objs) == {"/a/f.rfsm.c0.r0", "/a/f.rfsm.c1.r0", "/a/f.rfsm.c0.r1",
                         "/a/f.rfsm.c1.r1"}
    assert all(o["complete"] and o["missing"] == [] for o in m["objects"])
    assert m["servers"][objs["/a/f.rfsm.c1.r1"]["server"]] == three.server(2)
    # the new objects on server 2's disk are byte for byte the originals
    want = expected_objects(data, "/a/f.rfsm", ss, 2, 1, 2)
    for c in range(2):
        assert (three.root(2) / f"a/f.rfsm.c{c}.r1").read_bytes() == \
            want[(c, f"/a/f.rfsm.c{c}.r0")]
    three.servers[1].stop(signal.SIGKILL)
    assert read_back(three, "/a/f.rfsm", tmp_path) == data
    # a second augment on the same server has nothing to do: a clear error, nothing changed
    r = manifest(three, "augment", three.url("/a/f.rfsm"), "--server", three.server(2),
                 "--column", 1)
    assert r.returncode == 1 and "already holds a complete replica of column 1" in r.stderr
    assert show(three, "/a/f.rfsm")["generation"] == m["generation"]
    # column 1 a third time, on server 0: its first replica's server is dead, so the copy
    # comes from the next complete one (server 2); then server 2 dies too
    r = manifest(three, "augment", three.url("/a/f.rfsm"), "--server", three.server(0),
                 "--column", 1)
    assert r.returncode == 0 and three.server(2) in r.stdout, r.stdout + r.stderr
    m = show(three, "/a/f.rfsm")
    assert m["extents"][0]["columns"] == [[0, 2, None], [1, 3, 4]]
    assert (three.root(0) / "a/f.rfsm.c1.r2").read_bytes() == want[(1, "/a/f.rfsm.c1.r0")]
    three.servers[2].stop(signal.SIGKILL)
    assert read_back(three, "/a/f.rfsm", tmp_path) == data
    # the dead servers' replicas trimmed: the manifest lets go of them at once, and the
    # objects it cannot delete are named in the error
    r = manifest(three, "trim", three.url("/a/f.rfsm"), "--server", three.server(1))
    assert r.returncode == 1 and "trimmed from the manifest, but its object could not be " \
        "deleted" in r.stderr and "/a/f.rfsm.c1.r0" in r.stderr, r.stderr
    m = show(three, "/a/f.rfsm")
    assert all(m["servers"][o["server"]] != three.server(1) for o in m["objects"])
    assert read_back(three, "/a/f.rfsm", tmp_path) == data


def test_augment_while_a_writer_has_the_file_open(three, tmp_path):
    """A writer pauses mid-file; augment adds replicas on server 2 meanwhile (copied from what
    the file holds then). The writer, which opened before, never writes to them: its sync
    merges its written ranges (its dirty mapping) as missing on the replicas it did not know,
    so they are incomplete, never read stale; augment then repairs them, and the file survives
    losing server 1."""
    ss = 64 << 10
    data = os.urandom(3 << 20)
    local = tmp_path / "in.bin"
    local.write_bytes(data)
    p = subprocess.Popen([binary("manifest_e2e"),
                          *map(str, put(three, "/w.rfsm", local, ss, 2, 1, nservers=2,
                                        pause_at=1152 << 10))],
                         env=three.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    assert p.stdout.readline().startswith("open rc=0")
    assert p.stdout.readline().strip() == "paused"
    r = manifest(three, "augment", three.url("/w.rfsm"), "--server", three.server(2))
    assert r.returncode == 0, r.stderr
    rest, _ = p.communicate("go\n", timeout=TIMEOUT)
    assert p.returncode == 0, rest
    m = show(three, "/w.rfsm")
    objs = by_path(m)
    for c in range(2):
        # everything the writer wrote to the column since it last merged (here: all of it)
        assert objs[f"/w.rfsm.c{c}.r1"]["missing"] == [[0, len(data) // 2]], m
        assert objs[f"/w.rfsm.c{c}.r0"]["complete"]
    r = manifest(three, "augment", three.url("/w.rfsm"), "--server", three.server(2))
    assert r.returncode == 0 and r.stdout.count("repaired") == 2, r.stdout + r.stderr
    three.servers[1].stop(signal.SIGKILL)
    assert read_back(three, "/w.rfsm", tmp_path) == data


def test_augment_without_tpc_leaves_manifest_unchanged(three, tmp_path):
    """The copy fails (the target server does not pull copies): the error says so, the
    manifest and the servers' objects stay as they were."""
    ss = 64 << 10
    data = os.urandom(300000)
    write(three, "/n.rfsm", data, tmp_path, ss, 1, 1, nservers=1)
    three.servers[2].stop()
    three.servers[2] = Server(three.root(2), token=TOKEN,
                              listen=f"127.0.0.1:{three.servers[2].port}")  # --tpc off
    before = show(three, "/n.rfsm")
    r = manifest(three, "augment", three.url("/n.rfsm"), "--server", three.server(2))
    assert r.returncode == 1 and "does not pull third-party copies" in r.stderr, r.stderr
    assert show(three, "/n.rfsm") == before
    assert not (three.root(2) / "n.rfsm.c0.r0").exists()


def test_trim_removes_replicas_and_objects(two, tmp_path):
    """2x2 over 2 servers: trim --server 1 leaves one replica per column (on server 0), deletes
    server 1's objects, and the file reads back whole with server 1 gone; trimming server 0
    then would leave columns without a replica: refused, nothing changed."""
    ss = 64 << 10
    data = os.urandom(2 * (1 << 20) + 5)
    write(two, "/t.rfsm", data, tmp_path, ss, 2, 2)
    r = manifest(two, "trim", two.url("/t.rfsm"), "--server", two.server(1))
    assert r.returncode == 0 and "trimmed 2 replica objects" in r.stdout, r.stdout + r.stderr
    m = show(two, "/t.rfsm")
    assert m["extents"][0]["replicas"] == 1
    assert sorted(o["path"] for o in m["objects"]) == ["/t.rfsm.c0.r0", "/t.rfsm.c1.r1"]
    assert all(m["servers"][o["server"]] == two.server(0) for o in m["objects"])
    assert set(objects_on_disk(two, "/t.rfsm")) == {(0, "/t.rfsm.c0.r0"), (0, "/t.rfsm.c1.r1")}
    assert read_back(two, "/t.rfsm", tmp_path) == data
    # column 0 alone gets a replica on server 1 again: column 1's new slot stays empty
    r = manifest(two, "augment", two.url("/t.rfsm"), "--server", two.server(1), "--column", 0)
    assert r.returncode == 0, r.stderr
    m = show(two, "/t.rfsm")
    objs = by_path(m)
    assert m["extents"][0]["columns"] == [[0, 2], [1, None]]
    assert m["servers"][objs["/t.rfsm.c0.r1"]["server"]] == two.server(1)
    on_disk = objects_on_disk(two, "/t.rfsm")
    want = expected_objects(data, "/t.rfsm", ss, 2, 1, 1)
    assert on_disk[(1, "/t.rfsm.c0.r1")] == want[(0, "/t.rfsm.c0.r0")]
    # trimming server 0 would leave column 1 without a replica: refused, even with --force
    r = manifest(two, "trim", two.url("/t.rfsm"), "--server", two.server(0), "--force")
    assert r.returncode == 1 and "column 1 would have no replica left" in r.stderr, r.stderr
    assert show(two, "/t.rfsm") == m
    assert objects_on_disk(two, "/t.rfsm") == on_disk
    # --replica 1 takes column 0's new one (column 1 has none there); the slot goes
    r = manifest(two, "trim", two.url("/t.rfsm"), "--replica", 1)
    assert r.returncode == 0 and "trimmed 1 replica object" in r.stdout, r.stdout + r.stderr
    assert show(two, "/t.rfsm")["extents"][0]["columns"] == [[0], [1]]
    assert set(objects_on_disk(two, "/t.rfsm")) == {(0, "/t.rfsm.c0.r0"), (0, "/t.rfsm.c1.r1")}
    two.servers[1].stop(signal.SIGKILL)
    assert read_back(two, "/t.rfsm", tmp_path) == data


def kill_during_put(g, path, data, tmp_path, ss, pause_at):
    """put of data into a 2x2 file over 2 servers, server 1 killed at pause_at."""
    local = tmp_path / "in.bin"
    local.write_bytes(data)
    p = subprocess.Popen([binary("manifest_e2e"),
                          *map(str, put(g, path, local, ss, 2, 2, pause_at=pause_at))],
                         env=g.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    assert p.stdout.readline().startswith("open rc=0")
    assert p.stdout.readline().strip() == "paused"
    g.servers[1].stop(signal.SIGKILL)
    rest, _ = p.communicate("go\n", timeout=TIMEOUT)
    assert p.returncode == 1 and "incomplete" in rest, rest


def test_repair_of_incomplete_replica(two, tmp_path):
    """Server 1 killed mid-write: its two objects are recorded as missing exactly the column
    bytes written after the kill; server 1 restarted, augment --server 1 re-copies them from
    server 0's replicas; then every replica is complete with the right bytes."""
    ss = 64 << 10
    data = os.urandom(4 << 20)
    # paused before the write at 1152 KiB (put writes 192 KiB at a time)
    kill_during_put(two, "/r.rfsm", data, tmp_path, ss, 1152 << 10)
    m = show(two, "/r.rfsm")
    objs = by_path(m)
    # logical [1152 KiB, 4 MiB) is, in each column's objects, [576 KiB, 2 MiB)
    for p in ("/r.rfsm.c0.r1", "/r.rfsm.c1.r0"):
        assert not objs[p]["complete"] and objs[p]["missing"] == [[576 << 10, 1472 << 10]], m
    for p in ("/r.rfsm.c0.r0", "/r.rfsm.c1.r1"):
        assert objs[p]["complete"] and objs[p]["missing"] == []
    text = manifest(two, "show", two.url("/r.rfsm"))
    assert "missing 1507328 bytes in 1 ranges: 589824+1507328" in text.stdout, text.stdout
    # no complete source for server 0's columns while server 1's are incomplete: trim refused
    r = manifest(two, "trim", two.url("/r.rfsm"), "--server", two.server(0), "--column", 0)
    assert r.returncode == 1 and "last complete replica of column 0" in r.stderr, r.stderr
    assert show(two, "/r.rfsm") == m
    two.restart(1)
    r = manifest(two, "augment", two.url("/r.rfsm"), "--server", two.server(1))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("repaired") == 2 and "the whole object re-copied" in r.stdout, r.stdout
    assert "missed 1507328" in r.stdout
    m2 = show(two, "/r.rfsm")
    assert all(o["complete"] and o["missing"] == [] for o in m2["objects"]), m2
    assert m2["generation"] == m["generation"] + 1
    assert objects_on_disk(two, "/r.rfsm") == expected_objects(data, "/r.rfsm", ss, 2, 2, 2)
    assert read_back(two, "/r.rfsm", tmp_path) == data


def test_truncating_rewrite_makes_incomplete_replicas_complete(two, tmp_path):
    """Server 1 killed mid-write, then back: a rewrite of the file (an O_TRUNC open, as rfs cp
    and manifest_e2e put do) empties its incomplete replicas too, writes them again, and the
    manifest records them complete; every object holds the new bytes."""
    ss = 64 << 10
    kill_during_put(two, "/t.rfsm", os.urandom(2 << 20), tmp_path, ss, 576 << 10)
    assert not all(o["complete"] for o in show(two, "/t.rfsm")["objects"])
    two.restart(1)
    data = os.urandom((1 << 20) + 99)
    write(two, "/t.rfsm", data, tmp_path, ss, 2, 2)
    m = show(two, "/t.rfsm")
    assert all(o["complete"] and o["missing"] == [] for o in m["objects"]), m
    assert objects_on_disk(two, "/t.rfsm") == expected_objects(data, "/t.rfsm", ss, 2, 2, 2)
    # server 1 down at a rewrite's open: its replicas stay incomplete, whole (emptied or not,
    # nothing tells), and the rewrite's bytes read back from server 0
    two.servers[1].stop(signal.SIGKILL)
    data2 = os.urandom(300000)
    local = tmp_path / "in2.bin"
    local.write_bytes(data2)
    r = tool(two.env(), *put(two, "/t.rfsm", local, ss, 2, 2))
    assert r.returncode == 1 and "incomplete" in r.stdout, r.stdout
    m = show(two, "/t.rfsm")
    for o in m["objects"]:
        on_1 = m["servers"][o["server"]] == two.server(1)
        assert o["complete"] == (not on_1), m
        assert o["missing"] == ([[0, MAX]] if on_1 else []), m
    assert read_back(two, "/t.rfsm", tmp_path) == data2


def test_reader_uses_incomplete_replica_outside_its_missing_ranges(two, tmp_path):
    """Server 1's replica of column 1 misses [576 KiB, 2 MiB) of its object. With column 1's
    complete replica trimmed (--force: the last complete one), the bytes before the missing
    range read from the incomplete replica, and a read touching it fails with a clear error
    (never the stale bytes)."""
    ss = 64 << 10
    data = os.urandom(4 << 20)
    kill_during_put(two, "/p.rfsm", data, tmp_path, ss, 1152 << 10)
    two.restart(1)
    r = manifest(two, "trim", two.url("/p.rfsm"), "--server", two.server(0), "--column", 1,
                 "--force")
    assert r.returncode == 0, r.stderr
    assert not (two.root(0) / "p.rfsm.c1.r1").exists()
    out = tmp_path / "out.bin"
    # the first 1 MiB (written before the kill) reads whole, column 1 from server 1
    g = tool(two.env(), "get", two.url("/p.rfsm"), out)
    assert g.returncode == 1 and "no replica of stripe column 1 holds" in g.stdout, g.stdout
    assert out.read_bytes()[:1 << 20] == data[:1 << 20]
    # nothing complete to repair column 1 from: a clear error, the manifest unchanged
    m = show(two, "/p.rfsm")
    r = manifest(two, "augment", two.url("/p.rfsm"), "--server", two.server(0), "--column", 1)
    assert r.returncode == 1 and "column 1 has no complete replica to copy from" in r.stderr
    assert show(two, "/p.rfsm") == m


def sparse_missing(steps, nprocs, block, stride, pause, ss, count):
    """{column: [[off, len], ...]} the object ranges t_sparse's writes after step `pause`
    cover in each column (coalesced as the manifest keeps them)."""
    cols = {c: [] for c in range(count)}
    for k in range(pause + 1, steps):
        for r in range(nprocs):
            off = (k * nprocs + r) * stride * block
            x, end = off, off + block
            while x < end:
                unit, within = divmod(x, ss)
                n = min(ss - within, end - x)
                cols[unit % count].append(((unit // count) * ss + within, n))
                x += n
    out = {}
    for c, runs in cols.items():
        merged = []
        for o, n in sorted(runs):
            if merged and o <= merged[-1][0] + merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], o + n - merged[-1][0])
            else:
                merged.append([o, n])
        out[c] = merged
    return out


@pytest.mark.mpi
@pytest.mark.parametrize("flavour", ["mpich", "openmpi"])
def test_mpi_ranks_merge_exact_missing_ranges(two, tmp_path, flavour):
    """4 ranks write interleaved blocks with gaps (t_sparse) to a 2x2 file over 2 servers;
    server 1 is killed after step 2: each rank records the ranges its later writes missed on
    server 1's replicas, merges them at sync/close, and the one manifest holds exactly their
    union; server 0's replicas stay complete."""
    if flavour not in FLAVOURS:
        pytest.skip(f"{flavour} build not found")
    steps, nprocs, block, stride, pause, ss = 6, 4, 48 << 10, 3, 2, 32 << 10
    hints = f"rfs_servers={two.servers_hint()};rfs_stripe_size={ss};rfs_replicas=2"
    cmd, env = mpiexec_command(flavour, nprocs,
                               [program(flavour, "t_sparse"), two.url("/s.rfsm"), str(steps),
                                str(block), str(stride), str(pause)], two.env(),
                               extra_env={"RFS_HINTS": hints})
    rc, text = run_with_pause(cmd, env, lambda: two.servers[1].stop(signal.SIGKILL), TIMEOUT)
    assert "done" in text and "error sync" in text and "incomplete" in text, text
    m = show(two, "/s.rfsm")
    assert m["size"] == ((steps - 1) * nprocs + nprocs - 1) * stride * block + block
    want = sparse_missing(steps, nprocs, block, stride, pause, ss, 2)
    assert all(len(v) > 1 for v in want.values())  # the ranks' ranges leave gaps
    objs = by_path(m)
    for c in range(2):
        for r in range(2):
            o = objs[f"/s.rfsm.c{c}.r{r}"]
            on_server_1 = m["servers"][o["server"]] == two.server(1)
            assert o["complete"] == (not on_server_1), m
            assert o["missing"] == (want[c] if on_server_1 else []), (c, r, o)


def parse_objects(b):
    """[(offset of the object's entry, offset of its missing-range count)] of a version 2
    manifest's object table."""
    nservers, nobjects = struct.unpack_from("<II", b, 12)
    at = 40
    for _ in range(nservers):
        at += 2 + struct.unpack_from("<H", b, at)[0]
    out = []
    for _ in range(nobjects):
        entry = at
        at += 10 + struct.unpack_from("<H", b, at + 8)[0]
        n = struct.unpack_from("<I", b, at)[0]
        out.append((entry, at))
        at += 4 + 16 * n
    return out


def test_version_1_read_and_hostile_ranges(two, tmp_path):
    """A manifest written by the version 1 format (no missing ranges) still opens and reads;
    the next merge writes it back as version 2. A stored manifest whose missing ranges are
    hostile is refused with a message naming what is wrong, and nothing is touched."""
    ss = 64 << 10
    data = os.urandom(1 << 20)
    write(two, "/v.rfsm", data, tmp_path, ss, 2, 2)
    mpath = two.root(0) / "v.rfsm"
    v2 = mpath.read_bytes()
    assert struct.unpack_from("<H", v2, 4)[0] == 2
    # version 1: every object entry without its range count (all are 0 here)
    v1 = bytearray(v2[:-4])
    for _, count in reversed(parse_objects(v2)):
        del v1[count:count + 4]
    struct.pack_into("<HHI", v1, 4, 1, 0, len(v1) + 4)
    mpath.write_bytes(reseal(bytes(v1) + b"\0\0\0\0"))
    assert show(two, "/v.rfsm")["size"] == len(data)
    assert read_back(two, "/v.rfsm", tmp_path) == data
    r = manifest(two, "trim", two.url("/v.rfsm"), "--replica", 1)  # a merge: written as v2
    assert r.returncode == 0, r.stderr
    assert struct.unpack_from("<H", mpath.read_bytes(), 4)[0] == 2
    assert read_back(two, "/v.rfsm", tmp_path) == data
    # hostile: object 0 claims 2^32 - 1 missing ranges; then one range that passes 2^62
    good = mpath.read_bytes()
    before = objects_on_disk(two, "/v.rfsm")
    entry, count = parse_objects(good)[0]
    for spoil, words in [
            (lambda b: b[:count] + struct.pack("<I", 0xFFFFFFFF) + b[count + 4:],
             "missing ranges (limit 1024)"),
            (lambda b: b[:entry + 4] + struct.pack("<I", 1) + b[entry + 8:count] +
             struct.pack("<IQQ", 1, 10, 2**64 - 5) + b[count + 4:],
             "missing range 0 is empty or passes 2^62")]:
        bad = bytearray(spoil(good))
        struct.pack_into("<I", bad, 8, len(bad))
        mpath.write_bytes(reseal(bytes(bad)))
        for args in (["show", two.url("/v.rfsm")],
                     ["augment", two.url("/v.rfsm"), "--server", two.server(1)]):
            r = manifest(two, *args)
            assert r.returncode == 1 and words in r.stderr, (args, r.stderr)
        g = tool(two.env(), "get", two.url("/v.rfsm"), tmp_path / "x.bin")
        assert g.returncode == 1 and words in g.stdout, g.stdout
        assert objects_on_disk(two, "/v.rfsm") == before


def with_missing(b, missing):
    """Manifest bytes b with objects {index: [(off, len), ...]} marked incomplete, missing
    exactly those ranges (version 2), resealed."""
    out = bytearray(b[:-4])
    for k, (entry, count) in reversed(list(enumerate(parse_objects(b)))):
        if k not in missing:
            continue
        struct.pack_into("<I", out, entry + 4, 1)  # flags: incomplete
        ranges = b"".join(struct.pack("<QQ", o, n) for o, n in missing[k])
        had = struct.unpack_from("<I", b, count)[0]
        out[count:count + 4 + 16 * had] = struct.pack("<I", len(missing[k])) + ranges
    struct.pack_into("<I", out, 8, len(out) + 4)
    return reseal(bytes(out) + b"\0\0\0\0")


def test_reader_combines_incomplete_replicas(tmp_path):
    """One column, 3 replicas on servers 1-3 (the manifest on server 0). Replicas 1 and 2 miss
    different ranges, whose bytes on their disks are spoiled; replica 0 (complete) is trimmed.
    A read spanning both ranges takes each run from the replica that holds it, and every byte
    is right (a spoiled byte read would show); bytes both miss fail with a clear error."""
    g = TpcGroup(tmp_path, 4)
    try:
        ss = 64 << 10
        data = os.urandom(6 * ss)
        local = tmp_path / "in.bin"
        local.write_bytes(data)
        servers = ",".join(g.server(i) for i in (1, 2, 3))
        r = tool(g.env(), "put", g.url("/c.rfsm"), local, servers, ss, 1, 3)
        assert r.returncode == 0, r.stdout
        mpath = g.root(0) / "c.rfsm"
        mpath.write_bytes(with_missing(mpath.read_bytes(), {1: [(0, ss)], 2: [(ss, ss)]}))
        for srv, off in ((2, 0), (3, ss)):  # replica 1 on server 2, replica 2 on server 3
            obj = g.root(srv) / "c.rfsm.c0.r" f"{srv - 1}"
            b = bytearray(obj.read_bytes())
            b[off:off + ss] = b"\xee" * ss
            obj.write_bytes(bytes(b))
        r = manifest(g, "trim", g.url("/c.rfsm"), "--replica", 0, "--force")
        assert r.returncode == 0, r.stderr
        assert read_back(g, "/c.rfsm", tmp_path) == data
        # both incomplete replicas miss [2 units, 3 units): nothing can serve it
        mpath.write_bytes(with_missing(mpath.read_bytes(), {0: [(0, ss), (2 * ss, ss)],
                                                            1: [(ss, 2 * ss)]}))
        out = tmp_path / "none.bin"
        r = tool(g.env(), "get", g.url("/c.rfsm"), out)
        assert r.returncode == 1 and "no replica of stripe column 0 holds object bytes " \
            f"[{2 * ss}, +{ss})" in r.stdout, r.stdout
    finally:
        g.stop()
