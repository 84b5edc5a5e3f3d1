# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""The UCX transport (docs/protocol.md "Transports"): rfsd --ucx-listen beside its TCP
listener; rfs+ucx: names, $RFS_TRANSPORT and the rfs_transport hint on the client. Bytes must
come out identical to TCP's and to a local run; a server that dies or does not serve UCX must
give a clean error, not a hang. Every server listens on 127.0.0.1 only. The suite's UCX_TLS
(self,sm, for MPICH) stays in the environment: rfs's own UCX context must work under it."""
import os
import signal
import subprocess
import time

import pytest

import rfswire
from conftest import BUILD, Server, binary
from mpiio_util import FLAVOURS, mpiexec, program, run_both

TIMEOUT = 120  # a hang is a failure, not a wait


def built_with_ucx():
    cache = BUILD / "CMakeCache.txt"
    return cache.exists() and "RFS_WITH_UCX:BOOL=ON" in cache.read_text()


pytestmark = pytest.mark.skipif(not built_with_ucx(), reason="this build has no UCX (libucx-dev)")


class UcxServer(Server):
    """rfsd with both listeners; url() names files over UCX, tcp_url() over TCP."""

    def __init__(self, root, token=None, extra=()):
        super().__init__(root, token=token, extra=["--ucx-listen", "127.0.0.1:0", *extra])
        line = self.proc.stdout.readline()
        assert line.startswith("rfsd listening for UCX on 127.0.0.1:"), line
        self.ucx_port = int(line.split(":")[-1])

    def url(self, path):
        return f"rfs+ucx:{self.host}:{self.ucx_port}:{path}"

    def tcp_url(self, path):
        return f"rfs:{self.host}:{self.port}:{path}"


@pytest.fixture
def srv(tmp_path):
    root = tmp_path / "export"
    root.mkdir()
    s = UcxServer(root, token="ucx-test-token-0123456789abcdef")
    yield s
    s.stop()


def rfs(srv, *args, env=None, timeout=TIMEOUT, check=True):
    p = subprocess.run([binary("rfs"), *map(str, args)], env=env or srv.env(),
                       capture_output=True, timeout=timeout)
    if check:
        assert p.returncode == 0, p.stderr.decode(errors="replace")
    return p


def test_put_get_cat_byte_identical(srv, tmp_path):
    data = os.urandom(24 << 20) + b"tail"
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    rfs(srv, "put", src, srv.url("/b.bin"))
    assert (srv.root / "b.bin").read_bytes() == data
    back = tmp_path / "back.bin"
    rfs(srv, "get", f"rfs+ucx://127.0.0.1:{srv.ucx_port}/b.bin", back)
    assert back.read_bytes() == data
    assert rfs(srv, "cat", srv.url("/b.bin")).stdout == data


def test_api_bigrw_several_streams(srv, tmp_path):
    """tests/client/api_e2e.c bigrw over UCX with 4 streams (one UCX connection each)."""
    ref = tmp_path / "ref.bin"
    p = subprocess.run([binary("client_api_e2e"), "bigrw", srv.url(""), str(ref), str(64 << 20),
                        "4", "0", "0"], env=srv.env(), capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (srv.root / "big").read_bytes() == ref.read_bytes()


def flavour(name):
    return pytest.param(name, marks=pytest.mark.skipif(name not in FLAVOURS,
                                                       reason=f"no {name} build of librfs-mpiio"))


MPIS = [flavour("mpich"), flavour("openmpi")]


# Every MPI-IO access kind (independent, views served or mapped on the client with list I/O,
# shared file pointers, collective two-phase and not, nonblocking, requests freed early, early
# returning writes), each with payloads inline (copied into messages: rfs_ucx_inline_max above
# every payload) and direct (sent from the caller's buffer: 0).
ACCESS_KINDS = [
    ("t_basic", 2, ""),
    ("t_view", 4, ""),
    ("t_view", 4, "rfs_view=server"),
    ("t_view", 4, "rfs_view=client;rfs_max_extents=3"),
    ("t_shared", 4, ""),
    ("t_coll", 4, ""),
    ("t_coll", 4, "romio_cb_write=enable;romio_cb_read=enable;cb_nodes=2;cb_buffer_size=4096"),
    ("t_coll", 4, "romio_cb_write=disable;romio_cb_read=disable"),
    ("t_nonblock", 2, ""),
    ("t_nonblock", 2, "rfs_io_threads=1"),
    ("t_reqfree", 2, "rfs_view=client"),
    ("t_barrier", 2, "rfs_write_window=16M"),
    ("t_barrier", 2, "rfs_abt=enable"),
]


@pytest.mark.mpi
@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("inline", ["inline", "direct"])
@pytest.mark.parametrize("name,nprocs,hints", ACCESS_KINDS,
                         ids=[f"{n}[{h}]" if h else n for n, _, h in ACCESS_KINDS])
def test_mpiio_program_same_bytes_as_local(srv, tmp_path, mpi, inline, name, nprocs, hints):
    bound = "rfs_ucx_inline_max=1G" if inline == "inline" else "rfs_ucx_inline_max=0"
    env = {"RFS_HINTS": ";".join(h for h in (hints, bound) if h)}
    local, remote = run_both(srv, tmp_path, mpi, name, nprocs, name, extra_env=env)
    assert local is not None and remote == local


def test_inline_max_env_checked(srv, tmp_path):
    """A bad $RFS_UCX_INLINE_MAX fails the connection with a message naming it; 0 (every
    payload direct) moves the same bytes."""
    src = tmp_path / "s.bin"
    src.write_bytes(os.urandom((5 << 20) + 17))
    p = rfs(srv, "put", src, srv.url("/bad.bin"), env={**srv.env(), "RFS_UCX_INLINE_MAX": "64x"},
            check=False)
    assert p.returncode != 0 and b"RFS_UCX_INLINE_MAX" in p.stderr, p.stderr
    rfs(srv, "put", src, srv.url("/direct.bin"), env={**srv.env(), "RFS_UCX_INLINE_MAX": "0"})
    assert (srv.root / "direct.bin").read_bytes() == src.read_bytes()


@pytest.mark.mpi
@pytest.mark.parametrize("mpi", MPIS)
def test_mpiio_hint_selects_ucx(srv, tmp_path, mpi):
    """rfs_transport=ucx on a plain rfs: name of the UCX port: only UCX can succeed there."""
    prog = program(mpi, "t_basic")
    name = f"rfs:127.0.0.1:{srv.ucx_port}:/hinted.dat"
    r = mpiexec(mpi, 2, [prog, name], srv.env(), extra_env={"RFS_HINTS": "rfs_transport=ucx"})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    local = tmp_path / "local.dat"
    r = mpiexec(mpi, 2, [prog, str(local)], srv.env(), preload=False, reference=True)
    assert r.returncode == 0, r.stdout
    assert (srv.root / "hinted.dat").read_bytes() == local.read_bytes()


@pytest.mark.mpi
@pytest.mark.skipif("mpich" not in FLAVOURS, reason="no MPICH build of librfs-mpiio")
def test_mpiio_hint_ucx_with_tls_name_refused(srv):
    """rfs_transport=ucx on an rfss: name: UCX has no TLS, so the open fails and says why."""
    prog = program("mpich", "t_basic")
    name = f"rfss:127.0.0.1:{srv.ucx_port}:/tls.dat"
    r = mpiexec("mpich", 2, [prog, name], srv.env(), extra_env={"RFS_HINTS": "rfs_transport=ucx"})
    assert r.returncode != 0 and "UCX has no TLS" in r.stdout, r.stdout
    assert not (srv.root / "tls.dat").exists()


def test_env_selects_transport(srv, tmp_path):
    src = tmp_path / "s.bin"
    src.write_bytes(os.urandom(3 << 20))
    env = {**srv.env(), "RFS_TRANSPORT": "ucx"}
    rfs(srv, "put", src, f"rfs:127.0.0.1:{srv.ucx_port}:/env.bin", env=env)
    assert (srv.root / "env.bin").read_bytes() == src.read_bytes()
    p = rfs(srv, "ls", srv.tcp_url("/"), env={**srv.env(), "RFS_TRANSPORT": "udp"}, check=False)
    assert p.returncode != 0 and b"expected tcp or ucx" in p.stderr


def test_tcp_and_ucx_clients_at_once(srv, tmp_path):
    a, b = os.urandom(32 << 20), os.urandom(32 << 20)
    (tmp_path / "a").write_bytes(a)
    (tmp_path / "b").write_bytes(b)
    env = srv.env()
    procs = [subprocess.Popen([binary("rfs"), "put", str(tmp_path / "a"), srv.tcp_url("/a")],
                              env=env, stderr=subprocess.PIPE),
             subprocess.Popen([binary("rfs"), "put", str(tmp_path / "b"), srv.url("/b")],
                              env=env, stderr=subprocess.PIPE)]
    for p in procs:
        _, err = p.communicate(timeout=TIMEOUT)
        assert p.returncode == 0, err
    assert (srv.root / "a").read_bytes() == a
    assert (srv.root / "b").read_bytes() == b


def test_server_killed_mid_transfer_fails_cleanly(srv, tmp_path):
    """SIGKILL while a 1 GiB put runs over UCX: the client ends with a lost-connection error
    (recovery off, as in every e2e test) instead of waiting."""
    src = tmp_path / "big.bin"
    with open(src, "wb") as f:
        f.truncate(1 << 30)  # sparse: reads as zeros, costs no disk
    p = subprocess.Popen([binary("rfs"), "put", str(src), srv.url("/big.bin")], env=srv.env(),
                         stderr=subprocess.PIPE)
    def arrived():  # rfs put writes a temporary file, renamed at the end
        return sum(f.stat().st_size for f in srv.root.iterdir() if f.is_file())
    deadline = time.monotonic() + 60
    while p.poll() is None and arrived() <= (8 << 20):
        assert time.monotonic() < deadline, "no data reached the server"
        time.sleep(0.01)  # polling a state, not timing: ends when the data is there
    assert p.poll() is None, p.stderr.read()  # still transferring when the server dies
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait()
    _, err = p.communicate(timeout=60)
    assert p.returncode != 0
    assert b"connection" in err.lower(), err


def test_ucx_name_for_a_tcp_only_server_fails_clearly(rfsd):
    """rfs+ucx: at rfsd's TCP port (no --ucx-listen): one clear message, quickly."""
    p = subprocess.run([binary("rfs"), "ls", f"rfs+ucx://127.0.0.1:{rfsd.port}/"],
                       env=rfsd.env(), capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert "does not speak UCX on this port" in p.stderr, p.stderr


def test_limits_apply_to_ucx(tmp_path):
    """--max-conns-per-addr counts TCP and UCX connections together; the refused UCX client
    hears why."""
    root = tmp_path / "export"
    root.mkdir()
    s = UcxServer(root, token=None, extra=["--max-conns-per-addr", "1"])
    try:
        # the address's one connection, answered once so rfsd has surely counted it
        hold = rfswire.Conn("127.0.0.1", s.port)
        assert hold.call("HELLO", rfswire.b_hello()).status == 0
        p = subprocess.run([binary("rfs"), "ls", s.url("/")], env=s.env(), capture_output=True,
                           text=True, timeout=60)
        hold.close()
        assert p.returncode != 0
        assert "server busy" in p.stderr and "--max-conns-per-addr" in p.stderr, p.stderr
    finally:
        s.stop()


def test_config_file_key_and_tls_exclusion(tmp_path):
    root = tmp_path / "export"
    root.mkdir()
    conf = tmp_path / "rfsd.conf"
    conf.write_text(f"root = {root}\nlisten = 127.0.0.1:0\nucx-listen = 127.0.0.1:0\nno-auth\n")
    p = subprocess.Popen([binary("rfsd"), "--config", str(conf)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().startswith("rfsd listening on 127.0.0.1:")
        assert p.stdout.readline().startswith("rfsd listening for UCX on 127.0.0.1:")
    finally:
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
    assert "UCX on 127.0.0.1:" in err  # the info line naming the transports
    q = subprocess.run([binary("rfsd"), "--root", str(root), "--listen", "127.0.0.1:0",
                        "--ucx-listen", "127.0.0.1:0", "--tls-cert", str(conf), "--tls-key",
                        str(conf)], capture_output=True, text=True, timeout=30)
    assert q.returncode != 0 and "UCX has no TLS" in q.stderr
