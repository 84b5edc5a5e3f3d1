# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
"""rfsd --mpi --backend mpiio (docs/design.md "The MPI-IO backend"): the processes of a server
group turn the clients' collective calls into MPI-IO collective calls on the shared file system.
MPI-IO programs on both MPIs leave the bytes a local run leaves, a client's hint reaches the
group's MPI_File_open, and a build or a start without what the backend needs refuses it."""
import re
import subprocess

import pytest

from conftest import binary
from mpiio_util import FLAVOURS, mpiexec, program, run_both
from server_group import Group

pytestmark = pytest.mark.mpi

NRANKS = 4
PROGRAMS = ["t_coll", "t_view", "t_basic", "t_nonblock", "t_shared"]
OPENED = re.compile(r"mpiio: process (\d+) opened (\S+) with (\d+) processes; hints in effect:(.*)")


@pytest.fixture
def group_factory(tmp_path):
    started = []

    def make(n, **kw):
        g = Group(tmp_path / f"group{len(started)}", n,
                  extra=("--backend", "mpiio", *kw.pop("extra", ())), **kw)
        started.append(g)
        return g

    yield make
    for g in started:
        g.stop()


def opened(log):
    """(process, path, processes, hints) of every MPI_File_open the group made."""
    return [(int(m[1]), m[2], int(m[3]), m[4].strip()) for m in OPENED.finditer(log)]


@pytest.mark.parametrize("nservers", [2, 4])
def test_mpiio_programs_on_an_mpiio_group(group_factory, tmp_path, nservers):
    g = group_factory(nservers)
    for name in PROGRAMS:
        local, remote = run_both(g, tmp_path, "mpich", name, NRANKS, name)
        assert local is not None and remote == local, f"{name}: bytes differ from a local run"
    region, nreg = 1 << 20, 2  # atomic mode stays independent (locked writes), on POSIX
    r = mpiexec("mpich", NRANKS, [program("mpich", "t_atomic"), g.url("/atomic.dat"),
                                  str(region), str(nreg), "2"], g.env())
    assert r.returncode == 0 and r.stdout.count("DONE") == NRANKS, r.stdout
    log = g.stop()
    # the collective calls went through MPI-IO: every process of the group opened t_coll's file
    files = opened(log)
    coll = [o for o in files if o[1].endswith("/t_coll-mpich-4.dat")]
    assert sorted(o[0] for o in coll) == list(range(nservers)), log
    assert all(o[2] == nservers for o in coll)


@pytest.mark.parametrize("flavour", [f for f in FLAVOURS if f != "mpich"])
def test_open_mpi_clients_on_an_mpiio_group(group_factory, tmp_path, flavour):
    g = group_factory(2)
    for name in ("t_coll", "t_view"):
        local, remote = run_both(g, tmp_path, flavour, name, NRANKS, name)
        assert local is not None and remote == local, f"{name}: bytes differ from a local run"
    log = g.stop()
    assert any(o[1].endswith(f"/t_coll-{flavour}-4.dat") for o in opened(log)), log


def test_client_hint_reaches_the_groups_open(group_factory, tmp_path):
    """cb_nodes and a romio_ key from the client: MPI_File_get_info on every server process
    shows them in effect (ROMIO keeps cb_nodes as given when it is not above the group)."""
    g = group_factory(2)
    local, remote = run_both(g, tmp_path, "mpich", "t_coll", NRANKS, "t_coll",
                             extra_env={"RFS_HINTS": "cb_nodes=1;romio_cb_write=enable"})
    assert local is not None and remote == local
    log = g.stop()
    coll = [o for o in opened(log) if o[1].endswith("/t_coll-mpich-4.dat")]
    assert len(coll) == 2, log
    for _, _, _, hints in coll:
        assert "cb_nodes=1" in hints.split() and "romio_cb_write=enable" in hints.split(), hints


def test_backend_needs_a_group(tmp_path):
    r = subprocess.run([binary("rfsd"), "--root", str(tmp_path), "--no-auth",
                        "--listen", "127.0.0.1:0", "--backend", "mpiio"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--backend mpiio goes with --mpi" in r.stderr
    r = subprocess.run([binary("rfsd"), "--root", str(tmp_path), "--no-auth",
                        "--listen", "127.0.0.1:0", "--backend", "lustre"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--backend takes posix or mpiio" in r.stderr
