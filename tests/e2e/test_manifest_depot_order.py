# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""Depot reordering (docs/manifest.md "Where a new file starts"; mpiio-logistical-networking
Fig. 14) against 4 loopback rfsd: 4 ranks each make their own small logical file through
MPI_COMM_SELF (tests/mpiio/t_fpp.c, 3000 bytes: less than one stripe unit, so all of a file's
bytes are in its column 0). With rotation (the default) rank r's file starts on server r, so
the four files' bytes sit on four different servers; with rfs_depot_order=fixed all on the
first. Every rank reads every rank's file back (the program checks each byte), and each
logical file holds exactly what the MPI library's own MPI-IO leaves in a local file. No
manifest field is added: the placement is the objects' server indices, which every reader
already follows, so a manifest made before reordering (column 0 on the first server, as
`fixed` makes it) reads as before, and reopening a file keeps its layout whatever the hint."""
import pytest

from mpiio_util import FLAVOURS, mpiexec, program
from test_manifest import four, objects_on_disk, show, tool  # noqa: F401

RANKS = 4
FILE_BYTES = 3000


def local_files(flavour, tmp_path, env):
    """{rank: bytes} t_fpp leaves in local files under the MPI library's own MPI-IO."""
    prefix = tmp_path / "local-fpp"
    r = mpiexec(flavour, RANKS, [program(flavour, "t_fpp"), str(prefix)], env, preload=False,
                reference=True)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    return {k: (tmp_path / f"local-fpp-{k}.rfsm").read_bytes() for k in range(RANKS)}


def run_fpp(g, flavour, prefix, order=None):
    hints = f"rfs_servers={g.servers_hint()}"
    if order:
        hints += f";rfs_depot_order={order}"
    r = mpiexec(flavour, RANKS, [program(flavour, "t_fpp"), g.url(prefix)], g.env(),
                extra_env={"RFS_HINTS": hints})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout


def data_servers(g, prefix):
    """{rank: the servers whose disks hold bytes of rank's file}; the manifest must name the
    same server for column 0 (readers go where it says)."""
    out = {}
    for k in range(RANKS):
        path = f"{prefix}-{k}.rfsm"
        m = show(g, path)
        assert m["size"] == FILE_BYTES, m
        held = {srv for (srv, _), b in objects_on_disk(g, path).items() if b}
        col0 = m["objects"][m["extents"][0]["columns"][0][0]]
        assert {m["servers"][col0["server"]]} == {g.server(s) for s in held}, m
        out[k] = held
    return out


def same_as_local(g, prefix, want, tmp_path):
    for k in range(RANKS):
        out = tmp_path / f"got-{k}.bin"
        r = tool(g.env(), "get", g.url(f"{prefix}-{k}.rfsm"), out)
        assert r.returncode == 0, r.stdout + r.stderr
        assert out.read_bytes() == want[k], f"rank {k}'s file differs"


@pytest.mark.mpi
@pytest.mark.parametrize("flavour", ["mpich", "openmpi"])
def test_rotation_spreads_file_per_process(four, tmp_path, flavour):  # noqa: F811
    if flavour not in FLAVOURS:
        pytest.skip(f"{flavour} build not found")
    prefix = f"/fpp-rotate-{flavour}/out"
    run_fpp(four, flavour, prefix)
    assert data_servers(four, prefix) == {k: {k} for k in range(RANKS)}
    same_as_local(four, prefix, local_files(flavour, tmp_path, four.env()), tmp_path)


@pytest.mark.mpi
def test_fixed_order_piles_on_the_first_and_keeps_its_layout(four, tmp_path):  # noqa: F811
    flavour = "mpich" if "mpich" in FLAVOURS else "openmpi"
    prefix = "/fpp-fixed/out"
    run_fpp(four, flavour, prefix, "fixed")
    assert data_servers(four, prefix) == {k: {0} for k in range(RANKS)}
    want = local_files(flavour, tmp_path, four.env())
    same_as_local(four, prefix, want, tmp_path)
    # The same files opened again with rotation (the default): a file made without it, as
    # every manifest before reordering was, keeps its layout and reads right from every rank.
    run_fpp(four, flavour, prefix, "rotate")
    assert data_servers(four, prefix) == {k: {0} for k in range(RANKS)}
    same_as_local(four, prefix, want, tmp_path)


@pytest.mark.mpi
def test_bad_depot_order_hint_is_ignored_like_other_bad_hints(four, tmp_path):  # noqa: F811
    """An unknown value keeps the default (rotation), as every malformed rfs_* hint does."""
    flavour = "mpich" if "mpich" in FLAVOURS else "openmpi"
    prefix = "/fpp-badhint/out"
    run_fpp(four, flavour, prefix, "sideways")
    assert data_servers(four, prefix) == {k: {k} for k in range(RANKS)}
