# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""MPI-IO through librfs-mpiio.so against a real rfsd: every test program runs at 1, 2 and 4
ranks, once on a local file (the MPI library's own MPI-IO) and once on an rfs: file; both runs
must pass their own checks and leave identical bytes."""
import re

import pytest

from mpiio_util import FLAVOURS, mpiexec, program, run_both

pytestmark = pytest.mark.mpi

# (program, extra args, extra env) — the same program exercised with several hint settings.
CASES = [
    ("t_basic", (), None),
    ("t_view", (), None),
    ("t_view", (), {"RFS_HINTS": "rfs_view=server"}),        # server views, no fallback
    ("t_view", (), {"RFS_HINTS": "rfs_view=client"}),        # client-side mapping + list I/O
    ("t_view", (), {"RFS_HINTS": "rfs_view=client;rfs_max_extents=3"}),
    ("t_shared", (), None),
    ("t_coll", (), None),
    ("t_coll", (), {"RFS_HINTS": "romio_cb_write=enable;romio_cb_read=enable;cb_buffer_size=4096"}),
    ("t_coll", (), {"RFS_HINTS": "romio_cb_write=disable;romio_cb_read=disable"}),
    ("t_coll", (), {"RFS_HINTS": "romio_cb_write=enable;romio_cb_read=enable;cb_nodes=2;cb_buffer_size=4096;rfs_view=client"}),
    ("t_nonblock", (), None),
    ("t_nonblock", (), {"RFS_HINTS": "rfs_io_threads=1"}),
    ("t_reqfree", (), None),
    ("t_reqfree", (), {"RFS_HINTS": "rfs_io_threads=1;rfs_view=client"}),
    ("t_errors", (), None),
    ("t_finalize", (), None),
    # writes that return early are in the file once the writer passed MPI_Barrier
    ("t_barrier", (), {"RFS_HINTS": "rfs_write_window=16M"}),
    ("t_barrier", (), {"RFS_HINTS": "rfs_abt=enable"}),
    # the same with barriers that wait for the writes (what ranks on several nodes get)
    ("t_barrier", (), {"RFS_HINTS": "rfs_write_window=16M;rfs_lazy_barrier=disable"}),
    ("t_barrier", (), {"RFS_HINTS": "rfs_abt=enable;rfs_lazy_barrier=disable"}),
    # collective writes that return before the aggregator's write is answered (lazy
    # barriers), then the same ranks' reads and writes of those bytes at once
    ("t_collorder", (), None),
    ("t_collorder", (), {"RFS_HINTS": "rfs_lazy_barrier=disable"}),
    ("t_collorder", (), {"RFS_HINTS": "rfs_abt=enable"}),
    # get_size right after open is answered from the OPEN reply when writes return early
    ("t_getsize", (), None),
    ("t_getsize", (), {"RFS_HINTS": "rfs_abt=enable"}),
    ("t_getsize", (), {"RFS_HINTS": "rfs_write_window=0"}),
]


def case_id(c):
    name, _, env = c
    return name + ("" if not env else "[" + env["RFS_HINTS"] + "]")


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [1, 2, 4])
@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_mpiio_program_same_bytes(rfsd, tmp_path, flavour, nprocs, case):
    name, args, env = case
    local, remote = run_both(rfsd, tmp_path, flavour, name, nprocs, name, args, env)
    assert local is not None and remote is not None
    assert len(remote) == len(local)
    assert remote == local


@pytest.mark.parametrize("collective", ["automatic", "two-phase"])
@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [1, 2, 4])
def test_mpiio_view_data_outside_extent(rfsd, tmp_path, flavour, nprocs, collective):
    """t_view_hdf5: filetypes whose data lies outside [0, extent) (lb > 0, explicit lb above
    the first data). Server-side views and client-side mapping must leave identical bytes, and
    the same bytes as Open MPI's OMPIO. ROMIO (MPICH's, and Open MPI's romio321) cannot be the
    reference here: it shifts the data of a filetype resized to an lb above its first data by
    that lb, against the standard's tiling (the program's own placement checks fail there)."""
    prog = program(flavour, "t_view_hdf5")
    hints = "" if collective == "automatic" else \
        "romio_cb_write=enable;romio_cb_read=enable;cb_nodes=2;"
    got = {}
    for mode in ("server", "client"):
        path = f"/hdf5view-{mode}.dat"
        r = mpiexec(flavour, nprocs, [prog, rfsd.url(path)], rfsd.env(),
                    extra_env={"RFS_HINTS": hints + "rfs_view=" + mode})
        assert r.returncode == 0 and "OK" in r.stdout, f"rfs_view={mode} run failed:\n{r.stdout}"
        got[mode] = (rfsd.root / path.lstrip("/")).read_bytes()
    assert got["server"] == got["client"]
    if "openmpi" in FLAVOURS:
        local = tmp_path / "ompio-reference.dat"
        r = mpiexec("openmpi", nprocs, [program("openmpi", "t_view_hdf5"), str(local)],
                    rfsd.env(), preload=False)
        assert r.returncode == 0 and "OK" in r.stdout, f"OMPIO reference failed:\n{r.stdout}"
        assert got["server"] == local.read_bytes()


@pytest.mark.parametrize("flavour", list(FLAVOURS))
@pytest.mark.parametrize("nprocs", [1, 2, 4])
def test_mpiio_local_and_remote_at_once(rfsd, tmp_path, flavour, nprocs):
    """Pass-through: a local file next to the rfs one, requests of both in one Waitall."""
    scratch = tmp_path / "scratch.dat"
    local, remote = run_both(rfsd, tmp_path, flavour, "t_mixed", nprocs, "t_mixed",
                             (str(scratch),))
    assert remote == local
    assert scratch.read_bytes() == local  # the pass-through file holds the same bytes


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_mpiio_two_phase_is_used(rfsd, tmp_path, flavour):
    """With romio_cb_write=enable and small buffers, collective I/O goes through two-phase
    aggregation (several rounds, two aggregators); with disable it does not."""
    hints = "romio_cb_write=enable;romio_cb_read=enable;cb_nodes=2;cb_buffer_size=4096"
    r = mpiexec(flavour, 4, [program(flavour, "t_coll"), rfsd.url("/tp.dat")], rfsd.env(),
                extra_env={"RFS_HINTS": hints, "RFS_MPIIO_LOG": "debug"})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert "collective write: two-phase, 2 aggregator(s), 2 round(s)" in r.stdout
    assert "collective read: two-phase, 2 aggregator(s)" in r.stdout
    r = mpiexec(flavour, 4, [program(flavour, "t_coll"), rfsd.url("/tp2.dat")], rfsd.env(),
                extra_env={"RFS_HINTS": "romio_cb_write=disable;romio_cb_read=disable",
                           "RFS_MPIIO_LOG": "debug"})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert "two-phase" not in r.stdout and "collective write: independent" in r.stdout


def two_phase_aggregators(output):
    """The aggregator ranks of each two-phase collective in a debug log, as strings."""
    return {line.split("aggregator ranks:")[1].strip() for line in output.splitlines()
            if "two-phase" in line and "aggregator ranks:" in line}


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_mpiio_aggregators_one_per_node(rfsd, flavour):
    """Default: one aggregator per node, the node's lowest rank; cb_nodes=N picks N ranks spread
    over the nodes. All ranks here share one machine; MPICH can split them into "cliques" that
    MPI_Comm_split_type(SHARED) reports as separate nodes (odd and even ranks)."""
    prog = program(flavour, "t_coll")
    two_phase = "romio_cb_write=enable;romio_cb_read=enable"
    runs = [({}, "", "0"), ({}, "cb_nodes=2;", "0 1"), ({}, "cb_nodes=9;", "0 1 2 3")]
    if flavour == "mpich":
        cliques = {"MPIR_CVAR_NUM_CLIQUES": "2"}  # nodes {0, 2} and {1, 3}
        runs += [(cliques, "", "0 1"), (cliques, "cb_nodes=3;", "0 1 2"),
                 (cliques, "cb_nodes=1;", "0")]
    for i, (env, hints, expect) in enumerate(runs):
        r = mpiexec(flavour, 4, [prog, rfsd.url(f"/aggr{i}.dat")], rfsd.env(),
                    extra_env={**env, "RFS_HINTS": hints + two_phase, "RFS_MPIIO_LOG": "debug"})
        assert r.returncode == 0 and "OK" in r.stdout, r.stdout
        assert two_phase_aggregators(r.stdout) == {expect}, (env, hints, r.stdout[-3000:])


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_mpiio_finalize_reports_unclosed(rfsd, tmp_path, flavour):
    r = mpiexec(flavour, 2, [program(flavour, "t_finalize"), rfsd.url("/fin.dat")], rfsd.env())
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    assert "was not closed before MPI_Finalize" in r.stdout
    data = (rfsd.root / "fin.dat").read_bytes()
    assert len(data) == 2000


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_collective_writes_return_before_the_aggregators_reply(rfsd, flavour):
    """With lazy barriers the aggregator's list write of each collective call goes through the
    write window and the call returns without waiting for it (RFS_STATS counts the writes that
    returned early); t_collorder's own checks and the byte comparison above say the ranks still
    see those bytes in program order."""
    rounds = 12
    r = mpiexec(flavour, 4, [program(flavour, "t_collorder"), rfsd.url("/stats.dat"), str(rounds)],
                rfsd.env(), extra_env={"RFS_STATS": "1"})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout
    early = [int(m) for m in re.findall(r"write window: (\d+) writes returned before their reply",
                                         r.stdout)]
    # rank 0 sends every round's list write and its own rewrite of its first block
    assert early and max(early) >= 2 * rounds, r.stdout
    # and no rank waits for them at the call's end: it publishes them, as a lazy barrier does
    # (twice a call: the ranks' own writes at its start, the aggregator's at its end)
    lazy = [int(m) for m in re.findall(r"lazy barriers (\d+),", r.stdout)]
    assert len(lazy) == 4 and min(lazy) >= 2 * rounds, r.stdout
