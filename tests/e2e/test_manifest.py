# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""One logical file over several rfsd (manifest/, docs/manifest.md): striped and replicated
through the C API (tests/manifest/manifest_e2e.c) and through MPI-IO, checked against the
bytes each server holds on its disk; a server killed during a read (replicas 2: the data come
from the other replica, no error) and during a write (the failure is reported at sync, the
manifest marks the replica incomplete, the data still read back right); hostile manifests
refused with a clear error, the data left alone."""
import json
import os
import secrets
import signal
import struct
import subprocess

import pytest

from conftest import Server, binary
from mpiio_util import FLAVOURS, mpiexec, mpiexec_command, program, run_with_pause

TIMEOUT = 120  # a hang is a failure, not a wait
TOKEN = secrets.token_hex(16)


class Group:
    """n rfsd on loopback sharing one token (a logical file's objects are opened with the
    token of its name)."""

    def __init__(self, base, n):
        self.servers = []
        for i in range(n):
            root = base / f"srv{i}" / "export"
            root.mkdir(parents=True)
            self.servers.append(Server(root, token=TOKEN))

    def server(self, i):
        s = self.servers[i]
        return f"rfs://{s.host}:{s.port}"

    def url(self, path, i=0):
        return self.server(i) + path

    def servers_hint(self, n=None):
        return ",".join(self.server(i) for i in range(n or len(self.servers)))

    def root(self, i):
        return self.servers[i].root

    def env(self):
        return self.servers[0].env()

    def stop(self):
        for s in self.servers:
            s.stop()


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    g = Group(tmp_path_factory.mktemp("four"), 4)
    yield g
    g.stop()


@pytest.fixture
def two(tmp_path):
    g = Group(tmp_path, 2)
    yield g
    for s in g.servers:
        if s.proc.poll() is None:
            s.stop()


def tool(env, *args):
    return subprocess.run([binary("manifest_e2e"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)


def cli(env, *args):
    return subprocess.run([binary("rfs"), *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)


def show(g, path):
    r = cli(g.env(), "manifest", "show", "--json", g.url(path))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def expected_objects(data, path, ss, count, replicas, nservers):
    """{(server index, object path): bytes} the striped layout puts on the servers' disks."""
    cols = [bytearray() for _ in range(count)]
    for u in range((len(data) + ss - 1) // ss):
        cols[u % count] += data[u * ss:(u + 1) * ss]
    return {((c + r) % nservers, f"{path}.c{c}.r{r}"): bytes(cols[c])
            for c in range(count) for r in range(replicas)}


def objects_on_disk(g, path):
    """{(server index, object path): bytes} of every object of `path` the servers hold."""
    d, base = os.path.split(path)
    got = {}
    for i in range(len(g.servers)):
        folder = g.root(i) / d.lstrip("/")
        if folder.is_dir():
            for f in folder.iterdir():
                if f.name.startswith(base + ".c"):
                    got[(i, os.path.join(d, f.name))] = f.read_bytes()
    return got


def put(g, path, local, ss, count, replicas, nservers=None, pause_at=None):
    args = ["put", g.url(path), local, g.servers_hint(nservers), ss, count, replicas]
    if pause_at is not None:
        args.append(pause_at)
    return args


LAYOUTS = [(1, 1), (2, 1), (4, 1), (1, 2), (2, 2), (4, 2)]


@pytest.mark.parametrize("count,replicas", LAYOUTS, ids=[f"{c}x{r}" for c, r in LAYOUTS])
def test_c_api_stripes_on_disk(four, tmp_path, count, replicas):
    ss = 256 << 10
    data = os.urandom(3 * (1 << 20) + 12345)
    local = tmp_path / "in.bin"
    local.write_bytes(data)
    path = f"/c{count}r{replicas}/data.rfsm"
    r = tool(four.env(), *put(four, path, local, ss, count, replicas))
    assert r.returncode == 0, r.stdout + r.stderr
    assert objects_on_disk(four, path) == expected_objects(data, path, ss, count, replicas, 4)
    out = tmp_path / "out.bin"
    r = tool(four.env(), "get", four.url(path), out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert out.read_bytes() == data
    m = show(four, path)
    assert m["size"] == len(data)
    assert m["servers"] == [four.server(i) for i in range(4)]
    assert all(o["complete"] for o in m["objects"]) and len(m["objects"]) == count * replicas
    assert m["extents"][0]["stripe_size"] == ss
    listed = cli(four.env(), "manifest", "ls", four.url(os.path.dirname(path)))
    assert listed.returncode == 0 and "data.rfsm" in listed.stdout
    assert listed.stdout.split()[0] == str(len(data))
    # delete: every object and the manifest
    r = tool(four.env(), "delete", four.url(path))
    assert r.returncode == 0, r.stdout
    assert objects_on_disk(four, path) == {}
    assert not (four.root(0) / path.lstrip("/")).exists()


def test_cli_cp_to_and_from_a_logical_file(four, tmp_path):
    """rfs cp lays a new .rfsm out as its options say and copies back byte for byte, to a
    local file and to a plain remote one."""
    data = os.urandom(5 * (1 << 20) + 777)
    local = tmp_path / "in.bin"
    local.write_bytes(data)
    path = "/cp/x.rfsm"
    r = cli(four.env(), "cp", "--servers", four.servers_hint(3), "--stripe-size", "512K",
            "--replicas", "2", local, four.url(path))
    assert r.returncode == 0, r.stderr
    m = show(four, path)
    assert m["size"] == len(data) and m["extents"][0]["stripe_count"] == 3
    assert objects_on_disk(four, path) == expected_objects(data, path, 512 << 10, 3, 2, 3)
    back = tmp_path / "back.bin"
    r = cli(four.env(), "cp", four.url(path), back)
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == data
    r = cli(four.env(), "cp", four.url(path), four.url("/plain.bin", 3))
    assert r.returncode == 0, r.stderr
    assert (four.root(3) / "plain.bin").read_bytes() == data
    # a layout the servers cannot hold is refused before anything is made
    r = cli(four.env(), "cp", "--servers", four.servers_hint(2), "--replicas", "3", local,
            four.url("/cp/bad.rfsm"))
    assert r.returncode == 1 and "rfs_replicas 3" in r.stderr, r.stderr
    assert not (four.root(0) / "cp" / "bad.rfsm").exists()


def test_read_fails_over_when_a_server_dies(two, tmp_path):
    """Replicas 2 over 2 servers: column 1 is read from server 1 until it is killed, then from
    its replica on server 0; the caller sees no error and every byte is right."""
    ss = 64 << 10
    data = os.urandom(4 << 20)
    local = tmp_path / "in.bin"
    local.write_bytes(data)
    r = tool(two.env(), *put(two, "/f.rfsm", local, ss, 2, 2))
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "out.bin"
    p = subprocess.Popen([binary("manifest_e2e"), "get", two.url("/f.rfsm"), str(out),
                          str(1 << 20)], env=two.env(), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert p.stdout.readline().startswith("open rc=0")
    assert p.stdout.readline().startswith("size rc=0")
    assert p.stdout.readline().strip() == "paused"
    two.servers[1].stop(signal.SIGKILL)
    rest, _ = p.communicate("go\n", timeout=TIMEOUT)
    assert p.returncode == 0, rest
    assert "close rc=0" in rest
    assert out.read_bytes() == data


def test_write_to_dead_replica_reported_at_sync(two, tmp_path):
    """A server killed during a write with replicas 2: the writes go on to the other replica,
    sync reports the failure, the manifest marks server 1's objects incomplete, and the file
    reads back whole from server 0 (server 1 still down)."""
    ss = 64 << 10
    data = os.urandom(4 << 20)
    local = tmp_path / "in.bin"
    local.write_bytes(data)
    p = subprocess.Popen([binary("manifest_e2e"),
                          *map(str, put(two, "/w.rfsm", local, ss, 2, 2, pause_at=1 << 20))],
                         env=two.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    assert p.stdout.readline().startswith("open rc=0")
    assert p.stdout.readline().strip() == "paused"
    two.servers[1].stop(signal.SIGKILL)
    rest, _ = p.communicate("go\n", timeout=TIMEOUT)
    assert p.returncode == 1, rest
    sync = next(x for x in rest.splitlines() if x.startswith("sync"))
    assert "rc=0" not in sync and "incomplete" in sync and two.server(1) in sync, rest
    assert "close rc=0" in rest  # reported once, at sync
    m = show(two, "/w.rfsm")
    assert m["size"] == len(data)
    for o in m["objects"]:
        assert o["complete"] == (o["server"] == 0), m
    # server 0 holds column 0's replica 0 and column 1's replica 1, complete
    want = expected_objects(data, "/w.rfsm", ss, 2, 2, 2)
    got = objects_on_disk(two, "/w.rfsm")
    for key in [(0, "/w.rfsm.c0.r0"), (0, "/w.rfsm.c1.r1")]:
        assert got[key] == want[key]
    out = tmp_path / "out.bin"
    r = tool(two.env(), "get", two.url("/w.rfsm"), out)
    assert r.returncode == 0, r.stdout
    assert out.read_bytes() == data


def test_write_without_replicas_fails_at_once(two, tmp_path):
    """One replica: a column whose server dies cannot take the write, so the write itself
    fails, and nothing is marked incomplete (there is no complete copy to prefer)."""
    data = os.urandom(4 << 20)
    local = tmp_path / "in.bin"
    local.write_bytes(data)
    p = subprocess.Popen([binary("manifest_e2e"),
                          *map(str, put(two, "/one.rfsm", local, 65536, 2, 1, pause_at=1 << 20))],
                         env=two.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    assert p.stdout.readline().startswith("open rc=0")
    assert p.stdout.readline().strip() == "paused"
    two.servers[1].stop(signal.SIGKILL)
    rest, _ = p.communicate("go\n", timeout=TIMEOUT)
    assert p.returncode == 1, rest
    write = next(x for x in rest.splitlines() if x.startswith("write"))
    assert "rc=0" not in write and "one.rfsm.c1.r0" in write, rest
    assert all(o["complete"] for o in show(two, "/one.rfsm")["objects"])


def crc32c(b):
    crc = 0xFFFFFFFF
    for x in b:
        crc ^= x
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def reseal(b):
    return b[:-4] + struct.pack("<I", crc32c(b[:-4]))


def spoil_version(b):
    return reseal(b[:4] + struct.pack("<H", 9) + b[6:])


def spoil_count(b):
    return reseal(b[:16] + struct.pack("<I", 0xFFFFFFF0) + b[20:])


def spoil_length(b):
    # the extent's length (after header, servers, objects) made to wrap around
    return reseal(b[:-4 - 8 - 40 + 8] + struct.pack("<Q", 2**64 - 10) + b[-4 - 8 - 40 + 16:])


HOSTILE = {
    "bad checksum": lambda b: b[:50] + bytes([b[50] ^ 0xFF]) + b[51:],
    "truncated": lambda b: b[:len(b) // 2],
    "version 9": spoil_version,
    "counts out of range": spoil_count,
    "beyond the largest logical offset": spoil_length,
}


@pytest.mark.parametrize("what", list(HOSTILE))
def test_hostile_manifest_refused(two, tmp_path, what):
    data = os.urandom(300000)
    local = tmp_path / "in.bin"
    local.write_bytes(data)
    # one column over two replicas: 4 + 8 + 40 bytes end the file (2 object indices, CRC)
    r = tool(two.env(), *put(two, "/h.rfsm", local, 65536, 1, 2))
    assert r.returncode == 0, r.stdout
    mpath = two.root(0) / "h.rfsm"
    good = mpath.read_bytes()
    assert crc32c(good[:-4]) == struct.unpack("<I", good[-4:])[0]
    before = objects_on_disk(two, "/h.rfsm")
    mpath.write_bytes(HOSTILE[what](good))
    r = tool(two.env(), "get", two.url("/h.rfsm"), tmp_path / "out.bin")
    assert r.returncode == 1 and what in r.stdout, r.stdout
    c = cli(two.env(), "manifest", "show", two.url("/h.rfsm"))
    assert c.returncode == 1 and what in c.stderr, c.stderr
    # a writer is refused too, and nothing was touched
    r = tool(two.env(), *put(two, "/h.rfsm", local, 65536, 1, 2))
    assert r.returncode == 1 and what in r.stdout, r.stdout
    assert objects_on_disk(two, "/h.rfsm") == before
    assert mpath.read_bytes() == HOSTILE[what](good)


# ---- MPI-IO ----

MPI_CASES = [
    # (flavour, program, ranks, stripe count, replicas, more hints)
    *[("mpich", p, n, c, r, "") for p in ("t_basic", "t_coll", "t_view")
      for n, c, r in ((2, 4, 1), (4, 2, 2))],
    *[("openmpi", p, 2, 2, 2, "") for p in ("t_basic", "t_coll", "t_view")],
    # writes seen by other ranks after MPI_Barrier (the manifest merged at the barrier's flush)
    ("mpich", "t_barrier", 2, 2, 2, ""),
    # the layers above stack over the logical file unchanged
    ("mpich", "t_coll", 2, 2, 2, "rfs_abt=enable"),
    # MPI_File_delete of the logical file, exclusive create, append, shared file pointers
    # (the manifest file's counters)
    ("mpich", "t_open", 2, 2, 2, ""),
]


def case_id(c):
    return f"{c[0]}-{c[1]}-{c[2]}ranks-{c[3]}x{c[4]}" + (f"-{c[5]}" if c[5] else "")


_references = {}


def reference(flavour, prog, nprocs, env, tmp_path):
    """The bytes the program leaves in a local file under the MPI library's own MPI-IO."""
    key = (flavour, prog, nprocs)
    if key not in _references:
        local = tmp_path / f"local-{prog}.dat"
        r = mpiexec(flavour, nprocs, [program(flavour, prog), str(local)], env, preload=False,
                    reference=True)
        assert r.returncode == 0 and "OK" in r.stdout, r.stdout
        _references[key] = local.read_bytes()
    return _references[key]


@pytest.mark.mpi
@pytest.mark.parametrize("case", MPI_CASES, ids=[case_id(c) for c in MPI_CASES])
def test_mpiio_logical_file_same_bytes(four, tmp_path, case):
    flavour, prog, nprocs, count, replicas, more = case
    if flavour not in FLAVOURS:
        pytest.skip(f"{flavour} build not found")
    ss = 4096  # the programs' files are a few KiB: several units per rank
    path = f"/mpi-{case_id(case)}.rfsm"
    hints = f"rfs_servers={four.servers_hint()};rfs_stripe_size={ss};" \
            f"rfs_stripe_count={count};rfs_replicas={replicas}" + (f";{more}" if more else "")
    r = mpiexec(flavour, nprocs, [program(flavour, prog), four.url(path)], four.env(),
                extra_env={"RFS_HINTS": hints})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    want = reference(flavour, prog, nprocs, four.env(), tmp_path)
    out = tmp_path / "logical.bin"
    g = tool(four.env(), "get", four.url(path), out)
    assert g.returncode == 0, g.stdout
    assert out.read_bytes() == want
    assert objects_on_disk(four, path) == expected_objects(want, path, ss, count, replicas, 4)
    assert show(four, path)["size"] == len(want)


def restart_pattern(length):
    """The bytes tests/mpiio/t_restart.c writes at [0, length) (its fill()): 4 KiB block k
    holds k as 8 little-endian bytes, then (7 + k) & 0xff."""
    out = bytearray()
    for k in range((length + 4095) // 4096):
        out += k.to_bytes(8, "little") + bytes([(7 + k) & 0xFF]) * (4096 - 8)
    return bytes(out[:length])


@pytest.mark.mpi
@pytest.mark.parametrize("flavour", ["mpich", "openmpi"])
def test_mpiio_write_to_dead_replica_fails_sync(two, tmp_path, flavour):
    """t_restart's collective checkpoint loop on a 2x2 logical file, server 1 killed while it is
    paused: the writes after it go to server 0's replicas, MPI_File_sync fails naming the
    incomplete replica, the manifest marks server 1's objects incomplete, and the logical file
    holds every byte the program wrote."""
    if flavour not in FLAVOURS:
        pytest.skip(f"{flavour} build not found")
    steps, block = 8, 256 << 10
    hints = f"rfs_servers={two.servers_hint()};rfs_stripe_size=65536;rfs_replicas=2"
    cmd, env = mpiexec_command(flavour, 2, [program(flavour, "t_restart"), two.url("/ck.rfsm"),
                                            str(steps), str(block), "3"], two.env(),
                               extra_env={"RFS_HINTS": hints})
    rc, text = run_with_pause(cmd, env, lambda: two.servers[1].stop(signal.SIGKILL), TIMEOUT)
    assert rc != 0, text
    assert "error sync" in text and "incomplete" in text and "done" not in text, text
    m = show(two, "/ck.rfsm")
    assert m["size"] == steps * 2 * block
    for o in m["objects"]:
        assert o["complete"] == (o["server"] == 0), m
    got = tmp_path / "ck.bin"
    r = tool(two.env(), "get", two.url("/ck.rfsm"), got)
    assert r.returncode == 0, r.stdout
    assert got.read_bytes() == restart_pattern(steps * 2 * block)
