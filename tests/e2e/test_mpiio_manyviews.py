# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Views without a lifetime limit (tests/mpiio/t_manyviews.c): one handle, up to 100 000
set_view calls, each followed by an access, mixed plain and strided views, some recurring and
some seen once. The file must hold the same bytes as the MPI library's own run, the client must
have found recurring views already on the server instead of sending them again, and rfsd's
memory must stay flat (it keeps a fixed number of decoded views per handle).

Sizes: 100 000 calls at 1 rank on both MPIs and at 4 ranks on Open MPI. MPICH polls while it
waits, so 4 ranks on this 2-core machine spend most of each collective set_view spinning
(3000 calls take about a minute, with or without rfs): 1000 calls there."""
import re

import pytest

from mpiio_util import FLAVOURS, mpiexec, program

pytestmark = pytest.mark.mpi

CASES = [("mpich", 1, 100000), ("openmpi", 1, 100000), ("openmpi", 4, 100000),
         ("mpich", 4, 1000)]
STATS = re.compile(r"rfs stats \S+: views sent (\d+), found already on the server (\d+)")


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.parametrize("flavour,nprocs,calls", CASES,
                         ids=[f"{f}-{n}ranks-{c}" for f, n, c in CASES])
def test_set_view_any_number_of_times(rfsd, tmp_path, flavour, nprocs, calls):
    if flavour not in FLAVOURS:
        pytest.skip(f"{flavour} build not present")
    prog = program(flavour, "t_manyviews")
    local = tmp_path / "local.dat"
    r = mpiexec(flavour, nprocs, [prog, str(local), str(calls)], rfsd.env(), preload=False,
                reference=True)
    assert r.returncode == 0 and "OK" in r.stdout, f"local run failed:\n{r.stdout[-3000:]}"
    rss_before = rss_kib(rfsd.proc.pid)
    # Server views: lazy barriers (on with the default write window when all ranks share a
    # node) map views on the client instead, and this test counts the server's view slots.
    r = mpiexec(flavour, nprocs, [prog, rfsd.url("/manyviews.dat"), str(calls)], rfsd.env(),
                extra_env={"RFS_STATS": "1", "RFS_HINTS": "rfs_lazy_barrier=disable"})
    assert r.returncode == 0 and "OK" in r.stdout, f"rfs run failed:\n{r.stdout[-3000:]}"
    assert f"{calls} set_view calls" in r.stdout
    remote = (rfsd.root / "manyviews.dat").read_bytes()
    assert remote == local.read_bytes()

    stats = [tuple(map(int, m.groups())) for m in STATS.finditer(r.stdout)]
    assert len(stats) == nprocs, r.stdout[-2000:]
    for sent, found in stats:
        # Three in four calls set a strided view; most of those recur (t_manyviews.c).
        assert sent + found >= calls * 0.6
        assert found > 3 * sent, f"views sent {sent}, found on the server {found}"
    # 16 decoded views per handle: memory does not grow with the number of calls.
    assert rss_kib(rfsd.proc.pid) - rss_before < 64 * 1024
