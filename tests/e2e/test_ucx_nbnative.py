# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Native nonblocking I/O over UCX (docs/mpiio.md "Nonblocking", hint rfs_nb_native): contiguous
MPI_File_i* requests go on the wire from the calling thread and are completed from the
connection's receiver, with no I/O thread (tests/mpiio/t_nbnative.c). Bytes must equal the MPI
library's own MPI-IO; many requests in flight, every wait/test kind and MPI_Request_free must
work; a server killed with requests in flight must give errors at the waits, not a hang."""
import signal

import pytest

from mpiio_util import FLAVOURS, OutputLines, mpiexec, program, run_both
from test_mpiio_reqfree import popen
from test_ucx import MPIS, UcxServer, built_with_ucx

pytestmark = [pytest.mark.mpi,
              pytest.mark.skipif(not built_with_ucx(), reason="this build has no UCX")]

TIMEOUT = 120


@pytest.fixture
def srv(tmp_path):
    root = tmp_path / "export"
    root.mkdir()
    s = UcxServer(root, token="ucx-nb-token-0123456789abcdef0")
    yield s
    s.stop()


def threads_gained(out):
    for line in out.splitlines():
        if line.startswith("NBTHREADS "):
            return int(line.split()[1])
    raise AssertionError(f"no NBTHREADS line:\n{out}")


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("inline_max", ["1G", "default", "0"])
def test_native_same_bytes_as_mpi_and_no_threads(srv, tmp_path, mpi, inline_max):
    """Default hints over UCX: the native path (no thread gained while 28 requests per rank
    are in flight), bytes identical to the MPI library's own MPI-IO; payloads all copied
    (inline), split at the default 32 KiB, and everything direct (0: frame headers too, which
    must then stay alive until UCX has sent them)."""
    # Compression off: under rfs_compress=auto the writes it samples take the I/O threads.
    hints = ["rfs_compress=none"] + ([] if inline_max == "default"
                                     else [f"rfs_ucx_inline_max={inline_max}"])
    env = {"RFS_HINTS": ";".join(hints)}
    local, remote = run_both(srv, tmp_path, mpi, "t_nbnative", 2, "t_nbnative", extra_env=env)
    assert local is not None and remote == local
    r = mpiexec(mpi, 2, [program(mpi, "t_nbnative"), srv.url("/again.dat")], srv.env(),
                extra_env=env)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert threads_gained(r.stdout) == 0, r.stdout
    assert (srv.root / "again.dat").read_bytes() == local


@pytest.mark.parametrize("mpi", MPIS)
def test_thread_pool_when_disabled_and_over_tcp(srv, tmp_path, mpi):
    """rfs_nb_native=disable (and a TCP file by default) takes the I/O threads: the same
    bytes, and the thread count shows which path ran (so the test above can fail)."""
    prog = program(mpi, "t_nbnative")
    want = None
    for name, hints in ((srv.url("/off.dat"), "rfs_nb_native=disable"),
                        (srv.tcp_url("/tcp.dat"), ""),
                        (srv.tcp_url("/tcpnative.dat"), "rfs_nb_native=enable")):
        r = mpiexec(mpi, 2, [prog, name], srv.env(),
                    extra_env={"RFS_HINTS": ";".join(["rfs_compress=none", hints])})
        assert r.returncode == 0 and "OK" in r.stdout, r.stdout
        gained = threads_gained(r.stdout)
        assert (gained == 0) == (hints == "rfs_nb_native=enable"), (name, hints, r.stdout)
        data = (srv.root / name.rsplit(":", 1)[1].lstrip("/")).read_bytes()
        want = want or data
        assert data == want


@pytest.mark.parametrize("mpi", MPIS)
def test_server_killed_with_requests_in_flight(srv, mpi):
    """Writes and reads posted while the server is stopped are not complete (MPI_Test); once
    it is killed, MPI_Wait and MPI_Waitall return I/O errors naming the lost connection."""
    env = dict(srv.env(), RFS_HINTS="rfs_io_timeout_ms=600000;rfs_compress=none")
    p = popen(mpi, [program(mpi, "t_nbnative"), srv.url("/kill.dat"), "kill"], env)
    lines = OutputLines(p)
    stopped = False
    try:
        lines.wait_for(r"^READY$", TIMEOUT)
        srv.freeze()
        stopped = True
        p.stdin.write("go\n")
        p.stdin.flush()
        lines.wait_for(r"^POSTED$", TIMEOUT)
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait()
        stopped = False
        p.stdin.write("go\n")
        p.stdin.flush()
        err = lines.wait_for(r"^WAITERR ", TIMEOUT)
        p.stdin.close()
        p.wait(timeout=TIMEOUT)
        out = lines.rest(TIMEOUT)
    finally:
        if stopped:
            srv.thaw()
        if p.poll() is None:
            p.kill()
            p.wait()
    assert "connection" in err.lower(), out
    assert out.count("WAITALLERR class") == 5, out
    assert p.returncode == 0 and "OK" in out, out
