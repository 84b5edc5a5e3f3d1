# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Out of memory in a two-phase collective write or read, on one rank only (tests/mpiio/t_nomem.c
with tests/mpiio/failmalloc.c preloaded): every rank returns MPI_ERR_NO_MEM from the same call
instead of hanging in an exchange or aborting the job, and the call repeated afterwards works:
the right bytes on the server's disk, the right bytes read back."""
import re

import pytest

from mpiio_util import FLAVOURS, mpiexec, program

pytestmark = pytest.mark.mpi

MB, NB, RANKS = 1 << 20, 32, 2
NO_MEM = {"mpich": 34, "openmpi": 39}  # MPI_ERR_NO_MEM in each MPI's mpi.h

CASES = {
    # who fails: (rank, threshold, the allocation it must hit)
    # the aggregator (rank 0, one per node): the round's buffer for all ranks' pieces
    "aggregator": (0, 48 * MB, RANKS * NB * MB),
    # another rank: its buffer for its own pieces (sent for a write, received for a read)
    "other": (1, 16 * MB, NB * MB),
}


def expected(size):
    return bytes((off * 7 + 1) & 0xFF for off in range(size))


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("call", ["write", "read"])
@pytest.mark.parametrize("who", list(CASES))
def test_one_rank_out_of_memory_fails_the_call_on_every_rank(rfsd, flavour, call, who):
    rank, threshold, refused = CASES[who]
    shim = str(FLAVOURS[flavour] / "mpiio-tests" / "libmpiio_failmalloc.so")
    name = f"/nomem-{who}-{call}.dat"
    r = mpiexec(flavour, RANKS, [program(flavour, "t_nomem"), rfsd.url(name), call],
                rfsd.env(), preload_first=[shim],
                extra_env={"RFS_TEST_FAIL_MALLOC_ABOVE": str(threshold),
                           "RFS_TEST_FAIL_MALLOC_RANK": str(rank)})
    out = r.stdout
    assert r.returncode == 0 and "OK" in out.splitlines(), out
    assert f"failmalloc: refused {refused} bytes" in out, out  # the failure we meant happened
    firsts = re.findall(rf"^rank (\d+) first {call}: class (\d+): (.*)$", out, re.M)
    assert sorted(int(x[0]) for x in firsts) == list(range(RANKS)), out
    for _, cls, msg in firsts:
        assert int(cls) == NO_MEM[flavour], out
    failing = [msg for rk, _, msg in firsts if int(rk) == rank][0]
    assert "out of memory for a collective round" in failing, out
    data = (rfsd.root / name.lstrip("/")).read_bytes()
    assert len(data) == RANKS * NB * MB and data == expected(RANKS * NB * MB)
