# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""A logical file's optional modes through MPI-IO (docs/manifest.md "Small writes and
noncontiguous reads"): rfs_manifest_mode=buffered (small writes coalesced in client memory)
and rfs_manifest_read=sieve (noncontiguous reads as covering spans) against 4 loopback rfsd.
Each program's logical file must hold exactly the bytes the MPI library's own MPI-IO leaves in
a local file, its objects exactly their stripes, and the manifest the right size. t_barrier
checks that buffered writes are seen by the other ranks right after MPI_Barrier (no sync), as
MPI's rules ask; a buffer of 8 KiB makes t_basic's writes fill it and pass it by."""
import pytest

from mpiio_util import FLAVOURS, mpiexec, program
from test_manifest import (expected_objects, four, objects_on_disk, reference,  # noqa: F401
                           show, tool)

BUF = "rfs_manifest_mode=buffered"
SIEVE = "rfs_manifest_read=sieve"
CASES = [
    # (flavour, program, ranks, stripe count, replicas, hints)
    ("mpich", "t_barrier", 2, 2, 2, BUF),
    ("mpich", "t_basic", 2, 4, 1, BUF + ";rfs_manifest_buffer=8K"),
    ("mpich", "t_view", 2, 4, 1, SIEVE + ";rfs_manifest_buffer=8K"),
    ("mpich", "t_coll", 4, 2, 2, BUF + ";" + SIEVE),
    ("openmpi", "t_barrier", 2, 2, 2, BUF),
    ("openmpi", "t_view", 2, 2, 2, BUF + ";" + SIEVE),
]


def case_id(c):
    return f"{c[0]}-{c[1]}-{c[2]}ranks-{c[3]}x{c[4]}-" + c[5].replace("rfs_manifest_", "")


@pytest.mark.mpi
@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_mode_same_bytes(four, tmp_path, case):  # noqa: F811
    flavour, prog, nprocs, count, replicas, more = case
    if flavour not in FLAVOURS:
        pytest.skip(f"{flavour} build not found")
    ss = 4096
    path = f"/modes-{case_id(case).replace(';', '-').replace('=', '-')}.rfsm"
    hints = f"rfs_servers={four.servers_hint()};rfs_stripe_size={ss};" \
            f"rfs_stripe_count={count};rfs_replicas={replicas};{more}"
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
