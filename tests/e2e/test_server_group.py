# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""rfsd as an MPI job (rfsd --mpi, docs/design.md "Scaling out: rfsd as an MPI job"): 1, 2 and 4
server processes under MPICH writing into one export directory. The ranks of a client job are
spread round-robin over the processes (PLACE, docs/protocol.md "Server groups") without any
change to the program; MPI-IO programs leave the bytes a local run leaves; locks and shared
file pointers hold across processes; an older client is served where it landed; and when one
process dies its clients get an error while the others go on."""
import shutil
import struct
import subprocess

import pytest

import rfswire as w
from conftest import binary
from mpiio_util import FLAVOURS, mpiexec, program, run_both
from server_group import Group

pytestmark = pytest.mark.mpi

NRANKS = 4
PROGRAMS = ["t_basic", "t_view", "t_shared", "t_coll", "t_nonblock"]
OP_PLACE = 6
FEAT_PLACE = 0x0800


@pytest.fixture
def group_factory(tmp_path):
    started = []

    def make(n, **kw):
        g = Group(tmp_path / f"group{len(started)}", n, **kw)
        started.append(g)
        return g

    yield make
    for g in started:
        g.stop()


def atomic_regions_whole(data, region, nreg):
    """Each region written by t_atomic holds one write's blocks (one rank, one round)."""
    assert len(data) == region * nreg
    for j in range(nreg):
        owners = {struct.unpack_from("<QII", data, j * region + b)[1:]
                  for b in range(0, region, 4096)}
        assert len(owners) == 1, f"region {j} mixes writes of (rank, round) {sorted(owners)}"


@pytest.mark.parametrize("nservers", [1, 2, 4])
def test_mpiio_programs_on_a_group(group_factory, tmp_path, nservers):
    g = group_factory(nservers)
    for name in PROGRAMS:
        local, remote = run_both(g, tmp_path, "mpich", name, NRANKS, name)
        assert local is not None and remote == local, f"{name}: bytes differ from a local run"
    # atomic mode: overlapping writes of every rank, each region bigger than a frame, so one
    # write is several PWRITEs that only the byte-range lock keeps together across processes
    region, nreg = 6 << 20, 2
    r = mpiexec("mpich", NRANKS, [program("mpich", "t_atomic"), g.url("/atomic.dat"),
                                  str(region), str(nreg), "2"], g.env())
    assert r.returncode == 0 and r.stdout.count("DONE") == NRANKS, r.stdout
    atomic_regions_whole((g.root / "atomic.dat").read_bytes(), region, nreg)
    log = g.stop()
    # the job's ranks were spread: rank r on process r mod N, each process opened files
    for i in range(nservers):
        assert g.requests(i, "OPEN") > 0, f"process {i} served nobody:\n{log}"
    if nservers > 1:
        assert "sent to other processes" in log
    # every open file was closed everywhere: no shared state is left behind
    assert list(g.state.iterdir()) == []


@pytest.mark.parametrize("flavour", [f for f in FLAVOURS if f != "mpich"])
def test_open_mpi_ranks_spread_too(group_factory, tmp_path, flavour):
    """Open MPI's ranks find their rank (and a job id) in its own variables."""
    g = group_factory(2)
    for name in ("t_shared", "t_coll"):
        local, remote = run_both(g, tmp_path, flavour, name, NRANKS, name)
        assert local is not None and remote == local, f"{name}: bytes differ from a local run"
    g.stop()
    assert g.requests(0, "OPEN") > 0 and g.requests(1, "OPEN") > 0


def place(conn, rank, job=bytes(16)):
    rep = conn.call(OP_PLACE, job + struct.pack("<I", rank))
    rep.check()
    index, count, n = struct.unpack_from("<IIH", rep.body)
    assert len(rep.body) == 10 + n
    return index, count, rep.body[10:].decode()


def test_place_and_shared_state_on_the_wire(group_factory):
    g = group_factory(2)
    a = w.Conn(g.host, g.port_of(0))
    h = a.hello()
    assert h["features"] & FEAT_PLACE
    # PLACE needs authentication, like every op after the handshake
    rep = a.call(OP_PLACE, bytes(16) + struct.pack("<I", 1))
    assert rep.status == w.E["AUTH"]
    a.auth(g.token, h["nonce"])
    assert place(a, 0) == (0, 2, "")            # rank 0 stays on the entry process
    assert place(a, 1) == (1, 2, g.addrs[1])    # rank 1 goes to process 1
    assert place(a, 5) == (1, 2, g.addrs[1])    # round-robin
    # a job id moves where its round-robin starts; the same id always the same way
    job = bytes(range(16))
    first = place(a, 0, job)[0]
    assert place(a, 1, job)[0] == (first + 1) % 2 and place(a, 0, job)[0] == first
    # a malformed PLACE (body too short) is an error reply; the connection stays
    assert a.call(OP_PLACE, bytes(8)).status == w.E["PROTO"]

    b = w.Conn(g.host, g.port_of(1))
    b.handshake(g.token)
    fa = a.open("/shared.dat", w.O_RDWR | w.O_CREAT)
    fb = b.open("/shared.dat", w.O_RDWR)
    # byte-range locks exclude each other across processes ...
    a.call("LOCK", w.b_lock(fa, 0, 100, w.LOCK_EXCL, 0)).check()
    assert b.call("LOCK", w.b_lock(fb, 50, 10, w.LOCK_EXCL, 0)).status == w.E["BUSY"]
    assert b.call("LOCK", w.b_lock(fb, 50, 10, w.LOCK_SHARED, 0)).status == w.E["BUSY"]
    b.call("LOCK", w.b_lock(fb, 100, 10, w.LOCK_EXCL, 0)).check()   # disjoint: fine
    a.call("UNLOCK", w.b_unlock(fa, 0, 100)).check()
    b.call("LOCK", w.b_lock(fb, 50, 10, w.LOCK_EXCL, 0)).check()
    # ... and so does a lock held by a process that waits for it
    rid = a.send("LOCK", w.b_lock(fa, 0, 0, w.LOCK_EXCL, 20000))
    b.call("UNLOCK", w.b_unlock(fb, 0, 0)).check()
    rep = a.recv()
    assert rep.req_id == rid and rep.status == 0
    # counters (shared file pointers) are one counter whichever process is asked
    assert a.call("COUNTER", w.b_counter(fa, 7, 10)).check().u64() == 0
    assert b.call("COUNTER", w.b_counter(fb, 7, 5)).check().u64() == 10
    assert a.call("COUNTER", w.b_counter(fa, 7, 0)).check().u64() == 15
    assert len(list(g.state.iterdir())) == 1
    a.close_fh(fa)
    b.close_fh(fb)
    assert list(g.state.iterdir()) == []        # the last handle anywhere removed it
    fb = b.open("/shared.dat", w.O_RDWR)
    assert b.call("COUNTER", w.b_counter(fb, 7, 0)).check().u64() == 0  # a new life: 0
    b.close_fh(fb)
    a.close()
    b.close()


def rfs_put(g, tmp_path, name, rank, extra_env=None, scheme="rfs"):
    """`rfs put` as rank `rank` of a job (RFS_RANK), into the group's entry."""
    src = tmp_path / f"{name}.src"
    src.write_bytes(name.encode() * 1000)
    env = g.env()
    env["RFS_RANK"] = str(rank)
    env.update(extra_env or {})
    r = subprocess.run([binary("rfs"), "put", str(src), f"{scheme}://{g.addr}/{name}"], env=env,
                       capture_output=True, text=True, timeout=60)
    return r, src.read_bytes()


@pytest.mark.parametrize("how", ["ipv6", "tls"])
def test_redirect_keeps_the_address_family_and_tls(group_factory, tmp_path, how):
    """A rank sent to another process dials it as it dialled the entry: an IPv6 address in
    brackets, and TLS verified against the same CA (the certificate names 127.0.0.1)."""
    extra, env, scheme, listen = (), {}, "rfs", "[::1]:0"
    if how == "tls":
        if shutil.which("openssl") is None:
            pytest.skip("needs the openssl command")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        "k.pem", "-out", "c.pem", "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=IP:127.0.0.1"], cwd=tmp_path, check=True,
                       capture_output=True)
        extra = ("--tls-cert", str(tmp_path / "c.pem"), "--tls-key", str(tmp_path / "k.pem"))
        env, scheme, listen = {"RFS_TLS_CA": str(tmp_path / "c.pem")}, "rfss", "127.0.0.1:0"
    g = group_factory(2, extra=extra, listen=listen)
    assert g.addrs[1].startswith("[::1]:" if how == "ipv6" else "127.0.0.1:")
    r, data = rfs_put(g, tmp_path, "moved", 1, env, scheme)
    assert r.returncode == 0, r.stderr
    assert (g.root / "moved").read_bytes() == data
    g.stop()
    assert g.requests(1, "OPEN") == 1 and g.requests(0, "OPEN") == 0


def test_older_client_is_served_where_it_landed(group_factory, tmp_path):
    g = group_factory(2)
    # a client that never sends PLACE (RFS_PLACE=off acts as an older one) stays on process 0
    r, data = rfs_put(g, tmp_path, "old", 1, {"RFS_PLACE": "off"})
    assert r.returncode == 0, r.stderr
    assert (g.root / "old").read_bytes() == data
    g.stop()
    assert g.requests(0, "OPEN") == 1 and g.requests(1, "OPEN") == 0


@pytest.mark.skipif("openmpi" not in FLAVOURS, reason="needs the Open MPI build (build-ompi)")
def test_dead_process_fails_its_clients_only(group_factory, tmp_path):
    # under Open MPI's launcher: MPICH's Hydra ends every process of the job when one dies
    g = group_factory(2, launcher="openmpi")
    # a client connected to process 1 when it dies: its next call fails, the connection ends
    c = w.Conn(g.host, g.port_of(1))
    c.handshake(g.token)
    fh = c.open("/held.dat", w.O_RDWR | w.O_CREAT)
    g.kill(1)
    with pytest.raises((EOFError, ConnectionResetError)):
        c.pwrite(fh, 0, b"x")
    c.close()
    # ranks placed on the dead process get an error naming it and the group that sent them
    r, _ = rfs_put(g, tmp_path, "lost", 1)
    assert r.returncode != 0
    assert g.addrs[1] in r.stderr and "placed this client on" in r.stderr, r.stderr
    assert not (g.root / "lost").exists()
    # the others go on, on the surviving process
    for rank in (0, 2):
        r, data = rfs_put(g, tmp_path, f"kept{rank}", rank)
        assert r.returncode == 0, r.stderr
        assert (g.root / f"kept{rank}").read_bytes() == data
