# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Atomic mode across a lost connection (issue #11): several ranks write the same regions
concurrently with MPI_File_set_atomicity(true) while rfsd is SIGKILLed and restarted, or every
connection through the link is reset. Every call succeeds (the client reconnects, takes its
byte-range locks again and repeats the write), and each region ends holding one write's
complete data, never a mix of two: what MPI's sequential consistency in atomic mode asks of
concurrent overlapping writes (MPI 4.1 sec. 14.6.1), whatever the server forgot (its locks die
with it) or the network dropped.

tests/mpiio/t_atomic.c is the program; a region is 5 MiB, more than one frame (4 MiB), so a
write reaches the server in pieces and a mix would show."""
import signal
import struct
import subprocess

import pytest

from conftest import Server
from mpiio_util import FLAVOURS, OutputLines, mpiexec_command, program

pytestmark = pytest.mark.mpi

NPROCS = 3
REGION = 5 << 20
NREG = 3
ROUNDS = 4
BLK = 4096
TOKEN = "atomic-fault-token-0123456789abcdef"


def region_bytes(j, rank, rnd):
    """t_atomic's bytes for region j written by rank in round rnd."""
    out = bytearray()
    for k in range(REGION // BLK):
        blk = (j * REGION) // BLK + k
        tail = bytes(((blk * 13 + rank * 101 + rnd * 7 + i) & 0xFF) for i in range(16, BLK))
        out += struct.pack("<QII", blk, rank, rnd) + tail
    return bytes(out)


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("abt", [False, True], ids=["direct", "abt"])
@pytest.mark.parametrize("fault", ["restart", "reset"])
def test_atomic_overlapping_writers_survive(tmp_path, link, flavour, abt, fault):
    root = tmp_path / "export"
    root.mkdir()
    srv = Server(root, token=TOKEN)
    srv2 = None
    port = link.start(srv.host, srv.port)
    argv = [program(flavour, "t_atomic"), f"rfs:127.0.0.1:{port}:/atomic.bin", str(REGION),
            str(NREG), str(ROUNDS)]
    extra = {"RFS_STATS": "1"}
    if abt:
        (tmp_path / "staging").mkdir()
        extra["RFS_HINTS"] = f"rfs_abt=enable;rfs_staging_dir={tmp_path / 'staging'}"
    cmd, env = mpiexec_command(flavour, NPROCS, argv, srv.env(), extra_env=extra)
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = OutputLines(p)
    total = NPROCS * NREG * ROUNDS
    try:
        # Strike after about a quarter of the writes, while every rank is still writing.
        for _ in range(total // 4):
            out.wait_for(r"^ACK ", 120)
        if fault == "restart":
            srv.stop(sig=signal.SIGKILL)
            srv2 = Server(root, token=TOKEN, listen=f"127.0.0.1:{srv.port}")
        else:
            link.reset()
        text = out.rest(120)
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    try:
        acks = [l for l in text.splitlines() if l.startswith("ACK ")]
        assert p.returncode == 0 and text.count("DONE ") == NPROCS, text[-3000:]
        assert len(acks) == total, text[-3000:]
        # The fault hit while the ranks were writing: someone had to recover.
        assert "connection restored" in text, text[-3000:]
        data = (root / "atomic.bin").read_bytes()
        assert len(data) == NREG * REGION
        for j in range(NREG):
            got = data[j * REGION:(j + 1) * REGION]
            blk, rank, rnd = struct.unpack_from("<QII", got, 0)
            assert rank < NPROCS and rnd < ROUNDS, f"region {j}: no write's data ({rank}, {rnd})"
            # Every block from that one write: the rank and round of each block, then all bytes.
            mixed = {struct.unpack_from("<QII", got, k * BLK)[1:] for k in range(REGION // BLK)}
            assert mixed == {(rank, rnd)}, f"region {j} mixes writes {sorted(mixed)}"
            assert got == region_bytes(j, rank, rnd), f"region {j}: bytes of ({rank}, {rnd}) damaged"
    finally:
        if srv2:
            srv2.stop()
        srv.stop()
