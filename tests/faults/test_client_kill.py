# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""A client SIGKILLed while its data is not on the server yet (issue #11): the bytes on the
server afterwards are everything sync acknowledged and, with ABT, everything the journal held,
once `rfs recover` ran; nothing else.

tests/mpiio/t_abtkill.c writes, syncs ("SYNCED"), then the path to the server breaks, then it
writes more and is SIGKILLed (every rank, by pid). With ABT every write is staged
(rfs_abt_max_memory=1: the journal holds a write before the call returns), so every write that
returned must be on the server after `rfs recover`; without ABT a write returns only once the
server acknowledged it, and the first write after the break never returns. Two ways to break
the path: the link goes silent (a blackholed forwarding link, reset after the kill, as a
partition whose connections the server later drops) or rfsd is SIGKILLed (restarted after the
client died)."""
import os
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import Server, binary
from mpiio_util import (FLAVOURS, OutputLines, mpiexec_command, program,
                        wait_journals_released)

pytestmark = pytest.mark.mpi

MIB = 1 << 20
NPROCS = 2
N1, N2 = 4, 6
TOKEN = "client-kill-token-0123456789abcdef"


def pattern(off, n):
    """t_abtkill's bytes for [off, off + n)."""
    return bytes((((o >> 12) * 31 + o * 7 + 1) & 0xFF) for o in range(off, off + n))


def expected(acks):
    """The file the acknowledged writes make (holes read as zeros)."""
    end = max(off + n for _, off, n in acks)
    out = bytearray(end)
    for _, off, n in acks:
        out[off:off + n] = pattern(off, n)
    return bytes(out)


def parse(text):
    acks = [(int(r), int(o), int(n)) for tag, r, o, n in
            (l.split()[:4] for l in text.splitlines() if l.startswith("ACK "))]
    pids = [int(l.split()[2]) for l in text.splitlines() if l.startswith("PID ")]
    return acks, pids


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("abt", [False, True], ids=["direct", "abt"])
@pytest.mark.parametrize("fault", ["link-cut", "server-dead"])
def test_client_killed_with_unsent_data(tmp_path, link, flavour, abt, fault):
    root = tmp_path / "export"
    root.mkdir()
    staging = tmp_path / "staging"
    staging.mkdir()
    go = tmp_path / "go"
    srv = Server(root, token=TOKEN)
    srv2 = None
    port = link.start(srv.host, srv.port)
    url = f"rfs:127.0.0.1:{port}:/ckpt.bin"
    argv = [program(flavour, "t_abtkill"), url, str(MIB), str(N1), str(N2), str(go)]
    # direct: every write waits for its reply (the default write window would let a write
    # return once sent, so only sync would be the point of durability;
    # test_reconnect.py::test_write_window_replays_after_server_restart covers the window).
    extra = {"RFS_STATS": "1", "RFS_HINTS": "rfs_write_window=0"}
    if abt:
        extra["RFS_HINTS"] = f"rfs_abt=enable;rfs_abt_max_memory=1;rfs_staging_dir={staging}"
    cmd, env = mpiexec_command(flavour, NPROCS, argv, srv.env(), extra_env=extra)
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = OutputLines(p)
    try:
        for _ in range(NPROCS):
            out.wait_for(r"^SYNCED ", 120)
        if fault == "link-cut":
            link.blackhole()
        else:
            srv.stop(sig=signal.SIGKILL)
        go.touch()
        # With ABT every write returns (it is in the journal); without, the first write after
        # the break waits for the server: kill once each rank is inside it.
        for _ in range(NPROCS):
            out.wait_for(r"^WROTE " if abt else r"^WRITING ", 120)
        acks, pids = parse("".join(out.seen))
        assert len(pids) == NPROCS
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # MPICH's launcher ended it already, once the first rank was killed
        p.wait(timeout=60)
        text = out.rest(5)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    try:
        if fault == "link-cut":
            # The partition ends: the server's ends of the dead client's connections go away
            # (as its lease would end them), and the path works again for `rfs recover`.
            link.reset()
            link.heal()
        else:
            srv2 = Server(root, token=TOKEN, listen=f"127.0.0.1:{srv.port}")
        synced = [a for a in acks if a[1] < N1 * NPROCS * MIB]
        assert len(synced) == N1 * NPROCS, text
        if abt:
            assert len(acks) == (N1 + N2) * NPROCS, text
            before = (root / "ckpt.bin").read_bytes()
            unsent = [a for a in acks if before[a[1]:a[1] + a[2]] != pattern(a[1], a[2])]
            assert unsent, "every write reached the server before the kill: nothing was staged"
            assert list(staging.glob("*.rfsj")), "no journal left by the killed ranks"
        else:
            assert acks == synced, "a write returned although the server was unreachable"
        # Without --force: every delivery before the break was answered before SYNCED, and its
        # reply's file version was in the journal by then (docs/abt.md "Replay safety");
        # nothing reaches the server after the break (the silent link forwards nothing, the
        # dead server takes nothing). The refusals once tolerated here were the STAT probe
        # after a delivery, skipped when two completions saw each other in flight.
        assert not wait_journals_released(staging), "a killed rank outlived its job"
        rec = subprocess.run([binary("rfs"), "recover", str(staging)], env=srv.env(),
                             capture_output=True, text=True, timeout=120)
        assert rec.returncode == 0, rec.stdout + rec.stderr
        assert list(staging.iterdir()) == []
        # Exactly the acknowledged writes: sync's and (ABT) the journal's, nothing else.
        assert (root / "ckpt.bin").read_bytes() == expected(acks)
    finally:
        if srv2:
            srv2.stop()
        srv.stop()
