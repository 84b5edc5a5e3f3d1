# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""MPI_Request_free on an rfs request returns at once, even while the server cannot answer; the
I/O completes in the background and MPI_File_close waits for it (tests/mpiio/t_reqfree.c)."""
import os
import subprocess

import pytest

from mpiio_util import FLAVOURS, OutputLines, program

pytestmark = pytest.mark.mpi

TIMEOUT = 120
# How long FREED may take while the server is stopped: generous, and far below the client's I/O
# timeout set below, so a Request_free that waited for the I/O fails here.
FREED_WITHIN = 60


def popen(flavour, argv, env):
    """One rank, stdin/stdout piped (rank 0 gets stdin)."""
    lib = str(FLAVOURS[flavour] / "librfs-mpiio.so")
    if os.environ.get("RFS_PRELOAD_FIRST"):  # see mpiio_util.mpiexec
        lib = os.environ["RFS_PRELOAD_FIRST"] + ":" + lib
    if flavour == "mpich":
        cmd = ["mpiexec.mpich", "-n", "1", "-genv", "UCX_TLS", "self,sm", "-genv", "LD_PRELOAD", lib]
    else:
        cmd = ["mpiexec.openmpi", "--oversubscribe", "--allow-run-as-root", "-n", "1",
               "-x", f"LD_PRELOAD={lib}"]
        for k in ("RFS_TOKEN", "RFS_HINTS"):
            if k in env:
                cmd += ["-x", k]
    e = dict(env)
    e.pop("LD_PRELOAD", None)
    return subprocess.Popen(cmd + list(argv), env=e, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)



@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_request_free_does_not_wait_for_the_io(rfsd, flavour):
    env = dict(rfsd.env(), RFS_HINTS="rfs_io_timeout_ms=600000")
    p = popen(flavour, [program(flavour, "t_reqfree"), rfsd.url("/stopped.dat"), "stopped"], env)
    lines = OutputLines(p)
    stopped = False
    try:
        lines.wait_for(r"^READY$", TIMEOUT)
        rfsd.freeze()  # the write cannot complete from here on
        stopped = True
        p.stdin.write("go\n")
        p.stdin.flush()
        # FREED comes only if MPI_Request_free returned without the server's reply.
        lines.wait_for(r"^FREED$", FREED_WITHIN)
        assert (rfsd.root / "stopped.dat").stat().st_size == 0  # the write is still in flight
        rfsd.thaw()
        stopped = False
        p.stdin.close()
        p.wait(timeout=TIMEOUT)
        out = lines.rest(TIMEOUT)
    finally:
        if stopped:
            rfsd.thaw()
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0 and "OK" in out, out
    assert (rfsd.root / "stopped.dat").stat().st_size == 4 * 8192
