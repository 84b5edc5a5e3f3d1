# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""rfsd --mpi --backend mpiio (docs/design.md "The MPI-IO backend"): the processes of a server
group turn the clients' collective calls into MPI-IO collective calls on the shared file system.
MPI-IO programs on both MPIs leave the bytes a local run leaves, a client's hint reaches the
group's MPI_File_open, and a build or a start without what the backend needs refuses it."""
import os
import re
import secrets
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import rfswire as w
from conftest import binary
from mpiio_util import FLAVOURS, mpiexec, program, run_both
from server_group import Group

pytestmark = pytest.mark.mpi

NRANKS = 4
PROGRAMS = ["t_coll", "t_view", "t_basic", "t_nonblock", "t_shared"]
OPENED = re.compile(r"mpiio: process (\d+) opened (\S+) with (\d+) processes; hints in effect:(.*)")


@pytest.fixture
def group_factory(tmp_path):
    started = []

    def make(n, **kw):
        g = Group(tmp_path / f"group{len(started)}", n,
                  extra=("--backend", "mpiio", *kw.pop("extra", ())), **kw)
        started.append(g)
        return g

    yield make
    for g in started:
        g.stop()


def opened(log):
    """(process, path, processes, hints) of every MPI_File_open the group made."""
    return [(int(m[1]), m[2], int(m[3]), m[4].strip()) for m in OPENED.finditer(log)]


@pytest.mark.parametrize("nservers", [2, 4])
def test_mpiio_programs_on_an_mpiio_group(group_factory, tmp_path, nservers):
    g = group_factory(nservers)
    for name in PROGRAMS:
        local, remote = run_both(g, tmp_path, "mpich", name, NRANKS, name)
        assert local is not None and remote == local, f"{name}: bytes differ from a local run"
    region, nreg = 1 << 20, 2  # atomic mode stays independent (locked writes), on POSIX
    r = mpiexec("mpich", NRANKS, [program("mpich", "t_atomic"), g.url("/atomic.dat"),
                                  str(region), str(nreg), "2"], g.env())
    assert r.returncode == 0 and r.stdout.count("DONE") == NRANKS, r.stdout
    log = g.stop()
    # the collective calls went through MPI-IO: every process of the group opened t_coll's file
    files = opened(log)
    coll = [o for o in files if o[1].endswith("/t_coll-mpich-4.dat")]
    assert sorted(o[0] for o in coll) == list(range(nservers)), log
    assert all(o[2] == nservers for o in coll)


@pytest.mark.parametrize("flavour", [f for f in FLAVOURS if f != "mpich"])
def test_open_mpi_clients_on_an_mpiio_group(group_factory, tmp_path, flavour):
    g = group_factory(2)
    for name in ("t_coll", "t_view"):
        local, remote = run_both(g, tmp_path, flavour, name, NRANKS, name)
        assert local is not None and remote == local, f"{name}: bytes differ from a local run"
    log = g.stop()
    assert any(o[1].endswith(f"/t_coll-{flavour}-4.dat") for o in opened(log)), log


def test_client_hint_reaches_the_groups_open(group_factory, tmp_path):
    """cb_nodes and a romio_ key from the client: MPI_File_get_info on every server process
    shows them in effect (ROMIO keeps cb_nodes as given when it is not above the group)."""
    g = group_factory(2)
    local, remote = run_both(g, tmp_path, "mpich", "t_coll", NRANKS, "t_coll",
                             extra_env={"RFS_HINTS": "cb_nodes=1;romio_cb_write=enable"})
    assert local is not None and remote == local
    log = g.stop()
    coll = [o for o in opened(log) if o[1].endswith("/t_coll-mpich-4.dat")]
    assert len(coll) == 2, log
    for _, _, _, hints in coll:
        assert "cb_nodes=1" in hints.split() and "romio_cb_write=enable" in hints.split(), hints


def test_backend_needs_a_group(tmp_path):
    r = subprocess.run([binary("rfsd"), "--root", str(tmp_path), "--no-auth",
                        "--listen", "127.0.0.1:0", "--backend", "mpiio"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--backend mpiio goes with --mpi" in r.stderr
    r = subprocess.run([binary("rfsd"), "--root", str(tmp_path), "--no-auth",
                        "--listen", "127.0.0.1:0", "--backend", "lustre"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--backend takes posix or mpiio" in r.stderr


OP_COLL_JOIN = 7
F_COLL = 0x0080
FEAT_COLL = 0x1000


def join(conn, fh, cid, nranks, hints=b""):
    return conn.call(OP_COLL_JOIN, struct.pack("<I", fh) + cid +
                     struct.pack("<IH", nranks, len(hints)) + hints)


def part(conn, op, fh, extents, data=b""):
    """Sends one rank's part of a collective call (flag COLL); returns the request id."""
    return conn.send(op, w.b_iov(fh, extents, data), flags=F_COLL)


def reply_to(conn, rid):
    rep = conn.recv()
    assert rep.req_id == rid
    return rep


def test_collective_calls_on_the_wire(group_factory):
    """Two client ranks on two processes: their parts make one collective call, whatever the
    order they arrive in; a call missing a part fails after --coll-timeout-ms; the marker is
    refused where it does not belong."""
    g = group_factory(2, extra=("--coll-timeout-ms", "2000"))
    a, b = w.Conn(g.host, g.port_of(0)), w.Conn(g.host, g.port_of(1))
    assert a.hello()["features"] & FEAT_COLL
    a.close()
    a = w.Conn(g.host, g.port_of(0))
    a.handshake(g.token)
    b.handshake(g.token)
    fa = a.open("/c.dat", w.O_RDWR | w.O_CREAT)
    fb = b.open("/c.dat", w.O_RDWR)
    # a part on a handle that did not join, and the marker on an op that cannot carry it
    assert reply_to(a, part(a, "PWRITEV", fa, [(0, 1)], b"x")).status == w.E["INVAL"]
    assert a.call("PREAD", w.b_pread(fa, 0, 1), flags=F_COLL).status == w.E["PROTO"]
    cid = secrets.token_bytes(16)
    join(a, fa, cid, 2, b"cb_nodes=1").check()
    join(b, fb, cid, 2, b"cb_nodes=1").check()
    assert join(a, fa, cid, 3).status == w.E["INVAL"]        # another open's membership
    assert join(a, fa, cid, 2, b"bad\x01").status == w.E["INVAL"]
    # a noncontiguous collective write: the ranks' runs interleave
    ra = part(a, "PWRITEV", fa, [(0, 4), (8, 4)], b"AAAABBBB")
    rb = part(b, "PWRITEV", fb, [(4, 4), (12, 4)], b"CCCCDDDD")
    assert reply_to(a, ra).u64() == 8 and reply_to(b, rb).u64() == 8
    assert (g.root / "c.dat").read_bytes() == b"AAAACCCCBBBBDDDD"
    # a collective read: b's second run is past the end of file, so b gets 4 bytes
    rb = part(b, "PREADV", fb, [(4, 4), (100, 4)])
    ra = part(a, "PREADV", fa, [(0, 16)])
    assert reply_to(a, ra).check().body == b"AAAACCCCBBBBDDDD"
    assert reply_to(b, rb).check().body == b"CCCC"
    # only one rank's part: the call fails on it after the timeout, and the file is intact
    rep = reply_to(a, part(a, "PWRITEV", fa, [(0, 4)], b"ZZZZ"))
    assert rep.status == w.E["TIMEOUT"] and "client ranks within 2000 ms" in str(rep.error())
    assert (g.root / "c.dat").read_bytes() == b"AAAACCCCBBBBDDDD"
    a.close_fh(fa)
    b.close_fh(fb)
    a.close()
    b.close()
    log = g.stop()
    assert len([o for o in opened(log) if o[1].endswith("/c.dat")]) == 2, log


def test_posix_group_refuses_coll_join(tmp_path):
    g = Group(tmp_path / "posix", 1)
    try:
        c = w.Conn(g.host, g.port)
        assert not c.hello()["features"] & FEAT_COLL
        c.close()
        c = w.Conn(g.host, g.port)
        c.handshake(g.token)
        fh = c.open("/p.dat", w.O_RDWR | w.O_CREAT)
        assert join(c, fh, bytes(16), 2).status == w.E["UNSUPPORTED"]
        c.close()
    finally:
        g.stop()


def test_dead_process_fails_collective_calls_at_a_defined_point(group_factory):
    """Under Open MPI's launcher (Hydra ends the whole group): after process 1 dies, its
    client's next call fails, the survivor's independent I/O goes on, and its next collective
    call fails with RFS_E_TIMEOUT instead of hanging."""
    g = group_factory(2, launcher="openmpi", extra=("--coll-timeout-ms", "2000"))
    a, b = w.Conn(g.host, g.port_of(0)), w.Conn(g.host, g.port_of(1))
    a.handshake(g.token)
    b.handshake(g.token)
    fa = a.open("/d.dat", w.O_RDWR | w.O_CREAT)
    fb = b.open("/d.dat", w.O_RDWR)
    cid = secrets.token_bytes(16)
    join(a, fa, cid, 2).check()
    join(b, fb, cid, 2).check()
    ra = part(a, "PWRITEV", fa, [(0, 4)], b"AAAA")
    rb = part(b, "PWRITEV", fb, [(4, 4)], b"BBBB")
    assert reply_to(a, ra).u64() == 4 and reply_to(b, rb).u64() == 4
    g.kill(1)
    with pytest.raises((EOFError, ConnectionResetError)):
        b.pwrite(fb, 8, b"x")
    a.pwrite(fa, 8, b"CCCC")
    assert (g.root / "d.dat").read_bytes() == b"AAAABBBBCCCC"
    rep = reply_to(a, part(a, "PWRITEV", fa, [(0, 4)], b"ZZZZ"))
    assert rep.status == w.E["TIMEOUT"], rep.error()
    assert (g.root / "d.dat").read_bytes() == b"AAAABBBBCCCC"
    a.close()


def test_mpiio_group_on_glusterfs(tmp_path):
    """Item 3's distributed file system: a GlusterFS volume (Debian's glusterfs-server, one
    brick, FUSE) as the group's export, inside a network and mount namespace of the test's own
    (docs/design.md "The MPI-IO backend")."""
    if not shutil.which("glusterd") or not shutil.which("unshare"):
        pytest.skip("glusterfs-server (glusterd) is not installed: apt-get install glusterfs-server")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse: the volume cannot be mounted")
    helper = Path(__file__).resolve().parent / "gluster_group.py"
    r = subprocess.run(["unshare", "-n", "-m", sys.executable, str(helper), str(tmp_path), "4",
                        *PROGRAMS],
                       capture_output=True, text=True, timeout=170)
    if r.returncode == 77 or (r.returncode and "unshare failed" in r.stderr):
        pytest.skip(f"GlusterFS cannot run here: {r.stderr.strip()[-300:]}")
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    assert "export file system: fuseblk" in r.stdout or "export file system: fuse" in r.stdout
    for name in PROGRAMS:
        assert f"SAME {name}" in r.stdout, r.stdout


CHUNKED = """
import sys
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD
r, n = c.rank, c.size
B, NB = 16384, 24
ft = MPI.BYTE.Create_vector(NB, B, B * n).Commit()
f = MPI.File.Open(c, sys.argv[1], MPI.MODE_CREATE | MPI.MODE_RDWR)
f.Set_view(r * B, MPI.BYTE, ft)
data = np.frombuffer(np.random.default_rng(r).bytes(B * NB), dtype=np.uint8)
f.Write_at_all(0, data)
back = np.zeros_like(data)
f.Read_at_all(0, back)
assert (back == data).all(), "read back differs"
f.Close()
print("OK")
"""


@pytest.mark.skipif("openmpi" not in FLAVOURS, reason="needs the Open MPI build (mpi4py)")
def test_collective_calls_larger_than_a_frame(group_factory, tmp_path):
    """With 64 KiB frames each rank's 384 KiB part travels as a dozen requests, one per
    collective call of the group; the interleaved bytes land where a local run puts them."""
    np = pytest.importorskip("numpy")
    g = group_factory(2, extra=("--max-frame", "65536"))
    script = tmp_path / "chunked.py"
    script.write_text(CHUNKED)
    r = mpiexec("openmpi", NRANKS, ["/usr/bin/python3", str(script), g.url("/chunked.dat")],
                g.env())
    assert r.returncode == 0 and r.stdout.count("OK") == NRANKS, r.stdout
    B, NB = 16384, 24
    want = bytearray(B * NB * NRANKS)
    for rank in range(NRANKS):
        data = np.random.default_rng(rank).bytes(B * NB)
        for i in range(NB):
            o = (i * NRANKS + rank) * B
            want[o:o + B] = data[i * B:(i + 1) * B]
    assert (g.root / "chunked.dat").read_bytes() == bytes(want)
    log = g.stop()
    assert any(o[1].endswith("/chunked.dat") for o in opened(log)), log


def test_stop_answers_a_waiting_part(group_factory):
    """A part waiting for a call that cannot complete does not hold up the group's shutdown
    (the default 60 s timeout is not what ends it): its client gets an error reply or EOF."""
    g = group_factory(2)
    a = w.Conn(g.host, g.port_of(0))
    a.handshake(g.token)
    fa = a.open("/s.dat", w.O_RDWR | w.O_CREAT)
    join(a, fa, secrets.token_bytes(16), 2).check()
    rid = part(a, "PWRITEV", fa, [(0, 4)], b"AAAA")
    a.call("PING", b"x").check()        # the part is in: its reply stays out
    g.stop(timeout=20)                  # raises if the group does not end in time
    try:
        rep = reply_to(a, rid)
        assert rep.status == w.E["IO"] and "stopping" in str(rep.error())
    except (EOFError, ConnectionResetError):
        pass
    a.close()
